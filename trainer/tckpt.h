/*
** tckpt.h -- trainer checkpoints (one atomic unit: a generation of files
** committed by a manifest), the run directory's housekeeping, and the
** comparison of configurations that resuming checks.
**
** A checkpoint of the run STEM (rasp-train: DIR/trialK) is
**     STEM.gNNNNNN.safetensors, STEM.gNNNNNN.json   the model (rmodel.h)
**     STEM.gNNNNNN.opt                              Adam's moments
**     STEM.ckpt                                     the manifest
** Generation N's files are each written atomically (rerror.h: temporary
** file, fsync, rename, fsync of the directory); then the manifest, a small
** text file naming generation N with the progress, the checksums of the
** parameters and of the moments, and the run's configuration, is written
** the same way; its rename is the commit.  Only then are the files of
** other generations removed.  A kill or a full disk at any moment leaves
** the manifest naming a complete generation (the previous one or the new
** one), and resuming reads only what the manifest names, checking both
** checksums.
*/
#ifndef RASP_TCKPT_H
#define RASP_TCKPT_H

#include "rmodel.h"
#include "tnet.h"

typedef struct train_ckpt_state {
  int epoch;       /* epochs completed */
  long step;       /* optimiser steps taken */
  double best_val; /* lowest validation loss seen */
  int done;        /* 1: the run finished (early stop or last epoch) */
  long generation; /* last committed generation (0: none); the next save
                   ** writes generation + 1 and sets it */
} train_ckpt_state;

/* Writes generation st->generation + 1 of the checkpoint and commits it;
** config is the run's configuration ("--name value" lines, see
** train_config_diff), stored verbatim.  1 (st->generation advanced), or 0
** with err; either way the previously committed checkpoint stays intact. */
int train_ckpt_save(const char *stem, const rasp_model *m, const train_adamw *o,
                    train_ckpt_state *st, const char *config, rasp_error *err);
/* The committed generation of STEM.ckpt: > 0; 0 when there is no manifest;
** -1 (err set) when there is one that cannot be read. */
long train_ckpt_generation(const char *stem, rasp_error *err);
/* Loads the committed checkpoint: model, optimiser, state and (if config is
** not NULL) the stored configuration (*config, raspM_free it).  m and o are
** initialised here.  1, or 0 with err naming the file and the problem. */
int train_ckpt_load(const char *stem, rasp_model *m, train_adamw *o,
                    train_ckpt_state *st, char **config, rasp_error *err);
/* Of the two generations STEM.pending names (the one a save was writing
** and the one it replaces), removes the one the manifest does not commit,
** then STEM.pending: what a run killed during a save left (the new
** generation before the commit, the old one after it), and nothing else
** (a file that merely looks like a generation is not touched).  Nothing
** when the manifest cannot be read (kept for repair by hand).  Returns
** how many files it removed. */
int train_ckpt_clean(const char *stem);
/* Removes the temporaries of killed writes in dir, the run's own
** temporary directory: regular files named "*.tmp.XXXXXX" (rerror.h's
** raspR_atomic_open; X alphanumeric).  Returns how many it removed. */
int train_clean_tmp(const char *dir);

/* Compares two configurations, each "--name value" lines.  Returns the
** number of options that differ (missing on one side counts) and writes
** into msg (size bytes) "--name NOW (checkpoint: SAVED)" for each, joined
** by ", ". */
int train_config_diff(const char *saved, const char *now, char *msg,
                      size_t size);

#endif
