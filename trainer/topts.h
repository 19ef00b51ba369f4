/*
** topts.h -- rasp-train's options, as main.c parses them (its option table
** says what each means and `rasp-train --help` prints it) and as every
** trainer module reads them: the task, the model, the protocols and the
** schedule.  compare's arms (--arm) are options of their own, parsed from
** the command line with the arm's settings on top, so an arm differs from
** the run only in how it trains.
**
** Every trainer module returns as librasp does (rerror.h): 1, or 0 with
** the rasp_error set; a count, or -1; a pointer, or NULL; a function that
** returns anything else (an answer, main.c's exit statuses) says so where
** it is declared.
*/
#ifndef RASP_TOPTS_H
#define RASP_TOPTS_H

#include <stdint.h>

#include "rmodel.h"
#include "rtask.h"

typedef enum { TRAIN_OBJ_TF, TRAIN_OBJ_IAR, TRAIN_OBJ_NAR } train_objective;

#define TRAIN_MAX_ARMS 16
/* an arm's starting point: the compiled model (--init), random weights of
** its architecture, or the standard pre-LN model of the command line */
enum { TRAIN_ARM_COMPILED, TRAIN_ARM_RANDOM, TRAIN_ARM_STANDARD };

typedef struct train_opts train_opts;

typedef struct train_arm_spec {
  char name[33];
  int base;        /* TRAIN_ARM_* */
  train_opts *o;   /* the arm's options (raspM_alloc'd) */
  char *words;     /* the spec's words, which o points into */
  char **argv;
} train_arm_spec;

struct train_opts {
  rasp_task_opts task;
  int obj; /* train_objective */
  int encoder;
  rasp_model_config arch;
  float dropout, lr, wd, stop_loss, init_noise;
  /* protocols (doc/training-small.md): optimiser, per-tensor learning rates,
  ** frozen compiled weights, widening, mixing with a random init */
  int sgd, lr_rms, freeze, widen, mix_given;
  float momentum, init_mix, widen_scale;
  /* the recipe: warm-up, decay to a floor, gradient-norm clipping
  ** (tnet.h's train_sched and train_clip_grad); decay_steps 0: the run's
  ** length (--max-steps, else --epochs of the training set) */
  long warmup, decay_steps;
  int decay;
  float lr_floor, clip;
  int batch, micro, epochs, trials, ntrain, ntest, eval_every, threads;
  /* compare's arms (--arm "NAME BASE [OPTION VALUE]..."); none: random,
  ** compiled */
  int narms;
  const char *arm_spec[TRAIN_MAX_ARMS];
  train_arm_spec arms[TRAIN_MAX_ARMS];
  long max_steps;
  /* compare: every arm's model is also kept at each evaluation whose step
  ** is a multiple of keep_every (0: only the final one; tloop.c) */
  long keep_every;
  uint64_t seed, train_seed, test_seed;
  const char *out, *init, *reinit;
  const char *config;  /* --config FILE (read before the parse) */
  /* the compiled program as a teacher (tteach.h): its model, the loss's
  ** weight, the step it is annealed to 0 at (0: never) */
  const char *teacher;
  float teacher_weight;
  long teacher_until;
  float teacher_attn; /* the attention patterns' weight (0: not compared) */
  /* every option of the run as the parser reads it back, one "--name
  ** value" line each ("compare" first for compare): config.txt's body and
  ** what --config replays (main.c; raspM_alloc'd) */
  char *cmdline;
  int resume, compare;
  int progress, quiet; /* --progress STEPS, --quiet (tloop.c) */
};

#endif
