/*
** tarm.h -- one model being trained (an "arm": a trial has one, compare
** several on the same batches): its set-up from random or --init weights
** and the protocols, one optimiser step over an encoded batch, and
** evaluation.
**
** A model given to --init is either one of ours (same ids: vocab_size >=
** V+8, V+9 for encoder objectives, and n_out >= V+8) or a compiled one
** (rcompile.h: bos_token >= 0 and a layout in STEM.json).  A compiled model
** gets the model's BOS in front of every sequence, the task's ids must be
** its input ids and its readout is rebuilt over token ids
** (train_adapt_compiled, tinit.h); ids it never outputs get weight 0 and a
** bias below the compiled logits seen on a few training sequences (as
** evaluation encodes them).  Then, in this order: --widen (train_widen),
** --init-mix with the random init of the same architecture and seed as
** compare's random arm (so --init-mix 1 is that arm, bit for bit),
** --reinit-layers, --init-noise; the optimiser gets --optim, --momentum,
** --lr-scale rms (each tensor's RMS at the compiled point) and --freeze
** compiled (scale 0 on the compiled entries and on --widen's wires, the
** zeros that would let added capacity into the compiled dimensions: so
** the compiled circuit computes exactly what it did at step 0, and added
** capacity reaches the output through the readout alone).
**
** "Still the program": the compiled model's attention heads named in its
** layout (categorical units of kind "head") are read off the residual
** stream after their layer's attention, as the argmax over the unit's
** dimensions, at every position but BOS, in the trained model and in the
** model at the compiled point (the interpreter's values wherever `rasp
** compile --check` passes).  prog_acc is the share of (sequence, position,
** head) that agree.  The compiled point does not move, so its argmaxes are
** computed once per test set (train_arm_probe), not at every evaluation.
**
** Under mpirun (tmpi.h) every rank holds the same arm: train_arm_step
** shares each batch's micro-batches out and every rank takes the same step
** (tarm.c says how), and train_arm_share starts them all from rank 0's
** state.
*/
#ifndef RASP_TARM_H
#define RASP_TARM_H

#include "tdata.h"
#include "tnet.h"
#include "topts.h"
#include "tteach.h"

typedef struct train_metrics {
  double loss, seq_acc, tok_acc, lead_acc;
  double pos_acc[64];
  double prog_acc; /* "still the program", NAN without a probe */
} train_metrics;

typedef struct train_probe {
  int on;
  rasp_layout_unit *u;      /* the head units */
  int n;
  const train_dataset *d;   /* the set and the samples (0..cnt-1) ... */
  int cnt;
  int *ref;                 /* ... whose argmaxes at the compiled point these
                            ** are: [sample][position][unit] */
} train_probe;

typedef struct train_arm {
  const train_opts *o;
  rasp_model m;
  int exact_ln;        /* a pre-LN compiled --init model (tnet.h, exact_ln) */
  train_net net;
  train_adamw opt;
  train_sched sched;   /* --warmup, --decay: opt.lr at each step */
  double gnorm;        /* the last step's gradient norm, before --clip */
  struct train_arm *teacher; /* --teacher: the compiled model, or NULL */
  train_opts *teacher_o;     /* its options (owned) */
  double teach_loss;   /* the last step's teacher loss (tteach.h) */
  float *teach_w;      /* its per-dimension weights (2L x D) */
  train_teach_map *teach_map; /* another architecture's map, or NULL */
  int *teach_in;       /* the teacher's input (a BOS the student lacks) */
  train_batch batch;   /* one batch (--batch samples), encoded */
  int prefix;          /* BOS id prepended (compiled architectures), or -1 */
  int T;               /* model positions */
  uint64_t init_fnv;   /* the --init model's parameters' FNV-1a (0: random) */
  unsigned char *mask; /* entries from the --init model, or NULL */
  float *ref;          /* the compiled point (widened), or NULL */
  rasp_layout_unit *units; /* the compiled layout's head units, or NULL */
  int nunits;
  train_probe probe;
  /* the step's gradient sum, and (ranks other than 0) its micro-batches'
  ** gradients and losses kept until the sum before them arrives */
  float *gsum, *keep;
  double *keep_loss;
  int nkeep;
  const char *diverged; /* what a step found not finite ("loss",
                        ** "gradient", "weights"), NULL while all is */
  long stopped;         /* the step (from 1) at which the loop stopped the
                        ** arm for it; 0 while it trains */
} train_arm;

/* How the ranks of a data-parallel run reach each other (tmpi.h installs
** one under mpirun; NULL, the default and always in a build without MPI:
** one process).  Messages are raw bytes between ranks of one build. */
typedef struct train_transport {
  int rank, size;
  void (*send)(int to, const void *buf, size_t bytes);
  void (*recv)(int from, void *buf, size_t bytes);
  void (*bcast)(int root, void *buf, size_t bytes); /* root's buf to every rank */
  /* stops the run, saying what, unless every rank passes the same v */
  void (*agree)(uint64_t v, const char *what);
} train_transport;
void train_set_transport(const train_transport *t);
const train_transport *train_get_transport(void);

/* Sets up a: random weights (random_init; of architecture *like when not
** NULL: compare's random arm) or o->init, with the protocols; trial picks
** the seeds; d is the training set (a compiled readout's floor).  The
** dropout stream is seeded per epoch by the loop.  1, or 0 with err. */
int train_arm_init(train_arm *a, const train_opts *o, int trial, int random_init,
                   const rasp_model_config *like, const train_dataset *d,
                   rasp_error *err);
void train_arm_free(train_arm *a);
/* The learning-rate schedule o asks for; its length is --decay-steps, else
** --max-steps, else --epochs passes over the training set. */
train_sched train_sched_of(const train_opts *o);
/* Optimiser steps in one pass over the training set (structured variants
** included): ceil(sequences / --batch). */
long train_steps_per_epoch(const train_opts *o);
/* Sets up a's probe of the n head units u (copied) against the model at
** a->ref, over samples 0..cnt-1 of d as evaluation encodes them; without
** units or ref there is nothing to probe (a->probe stays off).  1, or 0
** with err. */
int train_arm_probe(train_arm *a, const rasp_layout_unit *u, int n,
                    const train_dataset *d, int cnt, rasp_error *err);
/* Encodes samples idx[0..b) of d for epoch e into a->batch. */
void train_arm_encode(train_arm *a, const train_dataset *d, const int *idx,
                      int b, int e);
/* One optimiser step over the b encoded samples; returns the mean loss per
** answer token.  The step's learning rate is --lr times the schedule's
** factor at it (a->sched; the optimiser's step count, so a resumed run
** goes on where it stopped), its gradient clipped to --clip.  The batch is cut into micro-batches of --micro samples;
** under a transport, rank r of K computes micro-batches ceil(n r / K) up to
** ceil(n (r + 1) / K) of the n, and every rank takes the same step (see
** tarm.c).  A loss or gradient that is not finite would turn every
** weight to NaN: the step is not taken (the weights stay the last finite
** ones) and a->diverged says which; weights that the step made non-finite
** set it to "weights".  The loop stops such an arm (tloop.h). */
double train_arm_step(train_arm *a, int b);
/* Under a transport: rank 0's parameters, optimiser state and the `bytes`
** of state to every rank (a trial's start: what rank 0 resumed). */
void train_arm_share(train_arm *a, void *state, size_t bytes);
/* Evaluates a on samples 0..limit-1 of d, permuted for epoch `epoch` (-1:
** as written); prog_acc where a's probe covers exactly those samples. */
void train_arm_eval(train_arm *a, const train_dataset *d, int limit, int epoch,
                    train_metrics *mt);
/* CSV text: the L2 distance of a's weights from a->ref, and mt's prog_acc;
** empty without. */
const char *train_dist_text(const train_arm *a, char *buf, size_t size);
const char *train_prog_text(const train_metrics *mt, char *buf, size_t size);

#endif
