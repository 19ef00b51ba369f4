/*
** tteach.h -- the compiled program as a teacher (--teacher STEM): an
** auxiliary loss that pulls a model's residual stream toward the compiled
** model's on the same batch.
**
** After every sublayer (the residual after the attention and after the
** MLP of every layer) the student's state s and the teacher's h on the
** same input rows are compared; the loss is
**
**     lambda / (b T D 2L) * sum over states k, positions, dims d of w_kd (s - h)^2
**
** for a batch of b sequences of T positions, D residual dimensions and L
** layers, with w_kd = 1 / (1 + the teacher's mean square of dimension d
** of state k): the mean squared distance per state entry, each dimension
** in units of its own size, times lambda.  (A compiled residual holds
** one-hot dimensions next to numbers near 2^23; unweighted, those few
** would be the whole loss.)  w is measured once, on training samples
** 0..B-1 (train_teach_weights), so a resumed run uses the same.  lambda
** is --teacher-weight, annealed linearly to 0 at step --teacher-until
** (0: constant), so what is left at the end is learned, not imposed.  The
** student must have the teacher's architecture (a random arm of the
** compiled architecture: the same layers, width and BOS position); the
** teacher runs without dropout and never trains.  The gradient goes into
** the student's backward pass through train_net's aux_mid and aux_out.
*/
#ifndef RASP_TTEACH_H
#define RASP_TTEACH_H

#include "tnet.h"

/* The loss above for one micro-batch: s and t after their forwards over
** the same rows (same b, t and width), w the weights; scale = lambda / (B
** T D 2L) for the whole batch's B sequences.  With want_grad, s->aux_mid
** and s->aux_out (allocated here, once) get scale * 2 w (s - h) and
** s->aux_on is set, so
** the next train_backward adds them; else s->aux_on is cleared.  Returns
** the micro-batch's part of the loss. */
double train_teach_loss(train_net *s, const train_net *t, const float *w, double scale,
                        int want_grad);
/* w (2L * D floats: state 2l is layer l's after the attention, 2l+1 after
** its MLP) from the teacher's states after a forward over some rows: 1 /
** (1 + the mean square of each dimension over those rows). */
void train_teach_weights(const train_net *t, float *w);
/* lambda at step `step` (from 1): weight, falling linearly to 0 at until
** (until 0: weight throughout). */
double train_teach_weight(double weight, long until, long step);
/* Frees what train_teach_loss allocated in s. */
void train_teach_free(train_net *s);

#endif
