/*
** tloop.h -- rasp-train's experiments: trials (each one model, evaluated
** and checkpointed after every epoch) and compare (several arms on the same
** batches, evaluated every --eval-every steps).  Both run the one training
** loop of tloop.c.
**
** Every run evaluates once before its first step (the CSV row of epoch or
** step 0): for a compiled init, the leading-node accuracy there is what
** `rasp compile --check` measured.  Every evaluation of a model started
** from --init logs its L2 distance from the compiled point and, for a
** compiled one, the probe's "still the program" share (tarm.h).
**
** A model whose loss, gradient or weights stop being finite is stopped,
** not stepped on: a trial ends there (its row's `stopped` field is the
** step, the summary line says so, and its last checkpoint stays the last
** finite epoch, so --resume replays the same stop); a compare arm takes no
** more steps, its rows carry the step in `stopped` from then on, and the
** summary compare prints on the standard output, one line per arm, says
** so.  The exit status stays 0: a diverged arm is a result.
*/
#ifndef RASP_TLOOP_H
#define RASP_TLOOP_H

#include "tdata.h"
#include "topts.h"

/* Runs o->trials trials and prints a line for each and a summary on the
** standard output (progress on the standard error); with o->out, logs and
** checkpoints every trial (tresume.h).  1, or 0 with err. */
int train_trials(const train_opts *o, const train_dataset *tr,
                 const train_dataset *te, rasp_error *err);
/* rasp-train compare: the arms of o (without --arm: random, the compiled
** architecture with random weights, and compiled) on the same batches in
** the same order; with --out every arm saved after every evaluation and
** --resume going on from the last save (tresume.h), and each arm's final
** weights as DIR/arm_NAME.ckpt; compare.csv, compare.gp and (when gnuplot runs)
** compare.png in o->out or ".".  1, or 0 with err (a plot that gnuplot
** cannot make is not a failure: the message says where the curves are). */
int train_compare(const train_opts *o, const train_dataset *tr,
                  const train_dataset *te, rasp_error *err);

#endif
