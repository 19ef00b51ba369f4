/*
** ttrain.h -- trainer checkpoints: the model (STEM.safetensors, STEM.json)
** plus the optimiser state and progress (STEM.opt), all written atomically,
** so that a run killed at any moment resumes from its last checkpoint.
*/
#ifndef RASP_TTRAIN_H
#define RASP_TTRAIN_H

#include "rmodel.h"
#include "tnet.h"

typedef struct train_ckpt_state {
  int epoch;       /* epochs completed */
  long step;       /* optimiser steps taken */
  double best_val; /* lowest validation loss seen */
  int done;        /* 1: the run finished (early stop or last epoch) */
} train_ckpt_state;

int train_ckpt_save(const char *stem, const rasp_model *m, const train_adamw *o,
                    const train_ckpt_state *st, rasp_error *err);
/* Loads model, optimiser and state; m and o are initialised here. */
int train_ckpt_load(const char *stem, rasp_model *m, train_adamw *o,
                    train_ckpt_state *st, rasp_error *err);

#endif
