/*
** rwork.h -- a verification run split into ranges of inputs: who checks
** which, what is done, checkpoints to resume from.
**
** A (program, D, M) cell of `rasp verify` checks inputs 0..total-1: sample
** indices of the seeded generator (random mode) or positions in the
** exhaustive enumeration (raspT_enumerate_range reaches any of them
** directly).  Every input's verdict depends on its index alone, so the cell
** can be cut into ranges checked in any order, anywhere, and the counts add
** up to a single run's: passed, mixed, probes and leaks are sums, the first
** failing input and the first leak are minima.
**
** The ledger (one per cell, on rank 0) hands out ranges of `chunk` inputs
** in order, skipping ranges already done, and records each range's result,
** merging neighbours, so it stays a short list however long the run.  It
** is the checkpoint too: with a checkpoint file the ledger is written out
** (atomically, raspR_atomic_*) when a range is done and `every` seconds
** have passed since the last write, and at the end of a cell, and `--resume` reads it back, so a run that is killed or preempted
** loses only the ranges that were in flight.  The file names each cell by
** a key (program name, FNV-1a of its text, D, M, V, mode, seed or graph
** count) and lists its done ranges with their counts:
**
**     rasp-verify-checkpoint 1
**     cell listing1_back_target fnv=5c1b... D=2 M=6 V=100 exhaustive total=7257600
**     done 0 917504 passed=917504 mixed=0 probes=0 leaks=0 first_fail=-1 first_leak=-1 leak_q=0
**
** Spreading the work.  Without a transport (the default, and always in a
** build without MPI) one process takes every range itself.  With one
** (rmpi.h installs it under mpirun), rank 0 keeps the ledger and takes
** ranges too; the other ranks ask it for one range at a time, sending the
** last one's result with the request, and rank 0 answers between its own
** batches of inputs (its progress callback), so a slow rank holds only the
** range it has.  At the end rank 0 sends the merged result to every rank,
** so all of them print (rank 0) or skip (the others) the same table and
** return the same status.
*/
#ifndef RASP_RWORK_H
#define RASP_RWORK_H

#include <stdint.h>

#include "rverify.h"

/* One range's result: what goes between ranks and into the checkpoint. */
typedef struct raspW_part {
  uint64_t first, count;  /* count = 0: no result (a first request) */
  uint64_t passed, mixed, probes, leaks;
  int64_t first_fail, first_leak;
  int32_t leak_q;
  int32_t failed;         /* evaluation or check() raised an error: */
  rasp_error error;       /*   this one (pos.src is then only a flag) */
} raspW_part;

/* The ranges of one cell. */
typedef struct raspW_ledger {
  uint64_t total, chunk;
  uint64_t next;          /* below it, every input is done or handed out */
  raspW_part *done;       /* sorted by first, neighbours merged */
  int ndone, cap;
  int stop;               /* a range raised an error: hand out no more */
  raspW_part failed;      /* the lowest range that raised one (failed = 1) */
  int retired;            /* ranks told that nothing is left */
  struct raspW_checkpoint *ckpt; /* NULL: none */
  int cell;               /* this cell's index in ckpt */
} raspW_ledger;

/* The next range to check (*count <= chunk); 0 when none is left. */
int raspW_take(raspW_ledger *L, uint64_t *first, uint64_t *count);
/* Records a range's result (and writes the checkpoint when it is due).
** 1, or 0 with err when the checkpoint could not be written; that stops
** the run (L->failed gets err) as a range's error does. */
int raspW_record(raspW_ledger *L, const raspW_part *p, rasp_error *err);

/* How ranks reach each other (rmpi.h); NULL: one process. */
typedef struct raspW_transport {
  int rank, size;
  /* every rank, before each cell (key) and after the last (key NULL):
  ** stops the run when the ranks are not at the same point */
  void (*agree)(const char *key);
  /* rank 0: answers the requests that have come (wait: at least one) */
  void (*serve)(raspW_ledger *L, int wait);
  /* another rank: sends done (count 0 at first), gets the next range; 0:
  ** nothing is left */
  int (*request)(const raspW_part *done, uint64_t *first, uint64_t *count);
  /* rank 0's part to every rank */
  void (*share)(raspW_part *all);
} raspW_transport;
void raspW_set_transport(const raspW_transport *t);
const raspW_transport *raspW_get_transport(void);

/* A checkpoint file, written at most every `every` seconds (0: after
** every range): read at open when resume is set and the file exists;
** without resume an existing file is refused (it would be overwritten).
** NULL with err for a file that cannot be read or is not a checkpoint
** ("file:line: ..."). */
typedef struct raspW_checkpoint raspW_checkpoint;
raspW_checkpoint *raspW_checkpoint_open(const char *path, int resume, double every,
                                        rasp_error *err);
void raspW_checkpoint_free(raspW_checkpoint *c);

typedef struct raspW_opts {
  raspW_checkpoint *ckpt;  /* NULL: none (only rank 0's is used) */
  raspK_progress progress; /* rank 0: inputs done of the cell, resumed ones included */
  void *user;
} raspW_opts;

/* raspK_verify_exhaustive split into ranges (see above), each on `jobs`
** threads.  *resumed gets the inputs the checkpoint already had.  1, or 0
** with err (an evaluation error, the cap, an unwritable checkpoint). */
int raspW_exhaustive(const rasp_program *prog, rasp_ptrace *tr, uint64_t cap, int jobs,
                     const raspW_opts *o, rasp_vresult *res, uint64_t *resumed, rasp_error *err);
/* raspK_verify_random split into ranges of sample indices (a checkpoint is
** not kept for random runs). */
int raspW_random(const rasp_program *prog, rasp_ptrace *tr, uint64_t graphs, uint64_t seed,
                 int jobs, const raspW_opts *o, rasp_vresult *res);

/* --plan: checks the first inputs of tr's enumeration for about `seconds`
** (at least 4096 of them, or all); *total gets the enumeration's size,
** *rate the inputs checked per second on this one core.  1, or 0 with err. */
int raspW_calibrate(rasp_ptrace *tr, double seconds, uint64_t *total, uint64_t *timed,
                    double *rate, rasp_error *err);

#endif
