/*
** rverify_int.h -- the verifier's insides, shared by its files (not
** installed; nothing here is part of librasp's API).
**
**   rverify.c         programs loaded and traced per (D, M) and vocabulary
**                     order, check() on batches, the order analysis's
**                     retraces, random (threaded) and exhaustive runs, one
**                     input run
**   rverify_probe.c   the dynamic probes behind the static proofs: causal
**                     prefixes (on a share of a random run's batches) and
**                     shuffled id orders, and a leak's report
**   rverify_shrink.c  counterexamples: found small, their order shrunk,
**                     printed with the intermediate values
**
** (rtask_input.c, which reads one written-out input, is rtask's.)
*/
#ifndef RASP_RVERIFY_INT_H
#define RASP_RVERIFY_INT_H

#include <pthread.h>

#include "rverify.h"

/* Functions one verifier file defines for another: not exported from the
** shared library. */
#define RASPK_INTERNAL __attribute__((visibility("hidden")))

/* How a context numbers its vocabulary: as the file declares, in a random
** order (--vocab-order shuffled), or one of the two fixed reorderings of
** the declared ids that the order analysis retraces under (rorder.h). */
enum { IDS_DECLARED, IDS_SHUFFLED, IDS_PROBE_ROTATE, IDS_PROBE_REVERSE };

/* Inputs per evaluator run (random and exhaustive). */
#define VERIFY_BATCH 64

/* 16 inputs of every fourth batch of 64: 64 of 1000 graphs, a few percent
** more time for the causal programs (README.md).  Probing 8 inputs of every
** batch cost them half as much again: a run's cost hardly shrinks with its
** batch. */
#define VERIFY_PROBES 16
#define PROBE_EVERY 4

/* raspK_trace with the vocabulary numbered as kind says (seed and index
** for IDS_SHUFFLED); analyse = 0: no layers and no staging (a probe for
** the order analysis, or a shuffled graph's own trace). */
RASPK_INTERNAL int raspK_trace_kind(const rasp_program *prog, int D, int M, int V, int kind,
                                    uint64_t seed, uint64_t index, int analyse, rasp_ptrace *tr,
                                    rasp_error *err);
/* raspK_sample_tokens with scratch: a sample whose buffers are reused from
** call to call, or NULL. */
RASPK_INTERNAL int raspK_sample_into(const rasp_ptrace *tr, uint64_t seed, uint64_t index,
                                     int64_t *tokens, int64_t *lead, int64_t *target,
                                     rasp_sample *scratch, rasp_error *err);
/* Task token ids as the program numbers them (tr->tok_map); NULL when they
** are the same.  Ids outside the task's vocabulary are left alone. */
RASPK_INTERNAL int64_t *raspK_map_ids(const rasp_ptrace *tr, const int64_t *ids, size_t count);
/* Starts n workers fn(jobs + j * size).  A worker that cannot be started
** (no memory for its stack, a thread limit) is run on this thread instead,
** after the others have started: fewer threads, the same result.  (An
** unchecked pthread_create left a wait for its finish hanging, or joined a
** thread that never was.)  Returns the flags (free with raspM_free): 1 for a
** worker that ran here and must not be joined. */
RASPK_INTERNAL int *raspK_start_workers(void *(*fn)(void *), void *jobs, size_t size, int n,
                                        pthread_t *th, pthread_attr_t *attr);

/* ---- the causal probes (rverify_probe.c) */

/* What one worker's probes found. */
typedef struct raspK_probes {
  uint64_t probes, leaks;
  int64_t first_leak; /* the first input whose prefix changed, or -1 */
  int leak_q;         /*   the position after which its tokens were changed */
} raspK_probes;

/* Probes the first P inputs of a batch that ev has just run (indices first,
** first + 1, ... of seed; their tokens in tokens), counting into pr. */
RASPK_INTERNAL void raspK_probe_batch(rasp_ptrace *tr, uint64_t seed, rasp_eval *ev,
                                      uint64_t first, int P, const int64_t *tokens,
                                      rasp_sample *scratch, raspK_probes *pr);

/* ---- printing inputs and values (rverify_shrink.c) */

/* An input's tokens as the task writes them, on one line. */
RASPK_INTERNAL void raspK_print_tokens(const rasp_ptrace *tr, const int64_t *tokens, FILE *out);
/* Node node's values for input b of ev's last run, on one line. */
RASPK_INTERNAL void raspK_print_row(rasp_ptrace *tr, rasp_eval *ev, int node, int b, FILE *out);
/* Prints one input of tr: the tokens, the output (or the error), what
** check() was asked for, the verdict when `verdict` is set, and every
** labelled node the output depends on.  1: check() passed, 0: it failed,
** -1: evaluation or check() raised an error (err). */
RASPK_INTERNAL int raspK_show_input(const rasp_program *prog, rasp_ptrace *tr, rasp_eval *ev,
                                    const int64_t *tokens, int64_t lead, int64_t target,
                                    const char *title, int verdict, FILE *out, rasp_error *err);

#endif
