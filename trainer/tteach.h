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
** teacher runs without dropout and never trains.  The gradient goes into
** the student's backward pass through train_net's aux_mid and aux_out.
**
** A student of the teacher's architecture (a random arm of the compiled
** one: the same layers, width and BOS position) is compared entry by
** entry.  A student of any other architecture (the standard pre-LN
** transformer, say) is compared through a linear map: its state k (of
** 2Ls: after each of its sublayers) against the teacher's state j(k) at
** the same depth, j = round((k + 1) 2Lt / 2Ls) - 1, so its last state
** meets the teacher's last, and the map is the best one on the
** micro-batch's rows -- ridge least squares, refitted at every step:
**
**     A_k = argmin_A  sum_d w_jd ( |S_k a_d - H_jd|^2 + mu_k |a_d|^2 )
**     mu_k = rho (tr(S_k' S_k) / Ds + 1e-8),  rho = 1e-3
**
** with S_k the student's rows (R x Ds) and H_j the teacher's on the same
** positions (R x Dt; a teacher with a BOS position the student lacks is
** read one position on).  The loss is that minimum, times
** lambda / (b T Dt 2Ls).  Fitting the map in closed form rather than
** learning it keeps nothing between steps (a resumed run and K ranks see
** what one run sees), and its gradient is the fixed-map one (the envelope
** theorem: the loss is stationary in A at its minimum), plus the ridge's
** dependence on S_k through mu_k.  A student can lower the loss only by
** holding the teacher's values linearly in its own state: a map of a
** constant state fits nothing but the teacher's mean.
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
/* The linear-map comparison (above): the pairing, the row shift and the
** scratch of its fit, sized at the first use. */
typedef struct train_teach_map {
  int Ls, Lt;  /* student and teacher layers */
  int *pair;   /* 2 Ls: the teacher state student state k is held to */
  int shift;   /* teacher position of student position p: p + shift */
  double rho;  /* the relative ridge */
  int Ds, Dt;
  size_t cap;  /* rows the scratch holds */
  float *H, *P, *G, *C, *X; /* R x Dt, R x Dt, Ds x Ds, Ds x Dt, Ds x Dt */
  double *Gd, *Xd;          /* Ds x Ds, Ds x Dt */
} train_teach_map;
/* Pairs the 2 Ls student states with the teacher's 2 Lt (j(k) above). */
void train_teach_map_init(train_teach_map *mp, int Ls, int Lt, int Ds, int Dt, int shift);
void train_teach_map_free(train_teach_map *mp);
/* The loss above for one micro-batch, s and t after their forwards over
** the same sequences (t's positions shifted by mp->shift), w the teacher's
** weights (train_teach_weights), scale = lambda / (B T Dt 2Ls); with
** want_grad, s->aux_mid and s->aux_out get its gradient, as
** train_teach_loss's. */
double train_teach_map_loss(train_net *s, const train_net *t, train_teach_map *mp,
                            const float *w, double scale, int want_grad);
/* --teacher-attn: every head's attention pattern against the teacher's
** head of the same layer and number (the teacher's architecture only): the
** loss is
**
**     lambda_a / (b T H L) * sum over sequences, heads, query rows of
**     KL(teacher's row || student's row)
**
** (coef = lambda_a / (B T H L) for the whole batch); with want_grad, s's
** next backward adds its gradient (train_net's att_target, att_coef),
** else s->att_coef is cleared.  A row's KL counts the teacher's zeros as
** 0 and the student's probabilities no lower than 1e-30.  Returns the
** micro-batch's part. */
double train_teach_attn_loss(train_net *s, const train_net *t, double coef, int want_grad);
/* Frees what train_teach_loss allocated in s. */
void train_teach_free(train_net *s);

#endif
