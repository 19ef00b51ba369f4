/*
** rverify.h -- checking path-star programs against generated graphs.
**
** A program file declares, in the language itself, what it assumes and how
** its output is judged:
**
**     task = dict(order='edge', q='start', markers=1, st_names=True,
**                 bos=False, eos=False, answer='none', min_M=3,
**                 symbols=['j'] + ['a' + str(i) for i in range(arm_len)])
**     def main(seq): ...                     # traced once per (D, M)
**     def check(output, lead, target): ...   # called per graph
**
** `check` receives the program's output with vocabulary ids turned back
** into their symbols (other values as they are), the leading node l_t and
** the target t as symbols ('t' under st_names).  The verifier special-cases
** no program: everything it needs comes from `task` and `check`.
**
** While the file runs, these globals describe the layout: arm_len (M),
** degree (D), num_symbols (|V|), seq_len (n), g_start, q_start, ans_start
** (positions of G, of "/", of the first answer token), q_before_g, markers,
** edge_width (tokens per edge).  The vocabulary is the task's: node
** symbols "1".."|V|" (ids 1..|V|), then | / = BOS EOS s t, then the file's
** extra symbols, so `d` and `reverse_d` are as the paper uses them.  With
** task['symbols_first'] = True the extra symbols come first instead (ids
** 1..k, so e.g. 'j' sorts before every node, as Listing 4 assumes) and the
** task's tokens follow.  A trace may also number the whole vocabulary in a
** random order (raspK_trace_ids); token ids from the generator are then
** mapped through tr->tok_map before the program sees them.
**
** Order invariance (rorder.h): raspK_order decides whether the verdict can
** depend on which id each symbol got.  Only then is an exhaustive run a
** proof for every labelled graph and every vocabulary order.
*/
#ifndef RASP_RVERIFY_H
#define RASP_RVERIFY_H

#include <stdint.h>
#include <stdio.h>

#include "rasp.h"
#include "rorder.h"
#include "rtask.h"

typedef struct rasp_program {
  char *path;
  char *name;            /* file name without directory and .rasp */
  rasp_task_opts base;   /* the file's settings; D, M, V set per run */
  int min_M, min_D;
  int causal;            /* task['causal']: every select must be causal */
  int expect_fail;       /* task['expect'] == 'fail': a known-wrong listing */
  int symbols_first;     /* task['symbols_first']: extra symbols get the lowest ids */
  int sweep_M;           /* task['sweep_M']: the largest M of a --sweep (0: the default, 10) */
  char entry[64], check[64];
  const char *stdlib;    /* NULL: the default */
  int interpret_check;   /* 1: never stage check() (rstage.h), always interpret it */
  rasp_access access;    /* what the program may reach; its strings are borrowed */
  const char *text;      /* the program as read once (borrowed), run under path's
                            name; NULL: each context reads path */
} rasp_program;

/* One trace of a program for one (D, M): the context, its IR and layers. */
typedef struct rasp_ptrace {
  rasp_ctx *ctx;
  rasp_task_opts opts;
  int n;
  int output;            /* the output node */
  char check[64];        /* the check function's name */
  int64_t *vocab_sym;    /* token id -> symbol id, for check() */
  int nvocab;
  rasp_layers layers;
  struct rasp_staged *staged; /* check() staged (rstage.h), or NULL: interpreted */
  const char *unstaged;  /* why check() was not staged, when it was not */
  int probe_causal;      /* task['causal']: the dynamic prefix check (below) runs */
  int64_t *tok_map;      /* task token id -> the program's id; NULL: the same */
  int ntask_ids;         /* task ids 1..ntask_ids (raspT_vocab_size - 1) */
  int order_done;        /* raspK_order has run: */
  rasp_idorder order;     /*   its result */
} rasp_ptrace;

typedef struct rasp_vresult {
  uint64_t total, passed;
  int64_t first_fail;    /* index of the first failing input, or -1 */
  uint64_t mixed;        /* exhaustive, order analysed: inputs on which an aggregate
                            averaged different ids (the order proof then fails) */
  uint64_t changed;      /* shuffled: graphs whose verdict differs from the fixed order's */
  rasp_error error;      /* set when evaluation or check() raised an error */
  /* The dynamic causality check (probe_causal): some inputs of every batch
  ** get their tokens after a position q replaced by another input's, and
  ** outputs 0..q must not change. */
  uint64_t probes, leaks;
  int64_t first_leak;    /* sample index of the first input that leaked, or -1 */
  int leak_q;            /* its q */
} rasp_vresult;

/* Reads the file's settings (runs it once with D, M, V as given). */
int raspK_load(const char *path, const char *stdlib, int D, int M, int V, rasp_program *prog,
               rasp_error *err);
/* The same with what the program may reach (rasp_access in rasp.h; NULL: nothing,
** as raspK_load).  access's strings must outlive prog. */
int raspK_load_with(const char *path, const char *stdlib, const rasp_access *access, int D,
                    int M, int V, rasp_program *prog, rasp_error *err);
/* raspK_load_with for a program already read (text, borrowed until
** raspK_program_free): every context runs that text, named path, so what
** was checked when it was read is what runs (the REPL's :load). */
int raspK_load_text(const char *path, const char *text, const char *stdlib,
                    const rasp_access *access, int D, int M, int V, rasp_program *prog,
                    rasp_error *err);
void raspK_program_free(rasp_program *prog);

/* Traces the program for D, M, V (task settings from the file). */
int raspK_trace(const rasp_program *prog, int D, int M, int V, rasp_ptrace *tr, rasp_error *err);
/* The same with the vocabulary's ids in a random order (all of them,
** specials and extra symbols included), drawn from stream `index` of
** `seed`: the same permutation on every machine.  shuffled = 0 is
** raspK_trace. */
int raspK_trace_ids(const rasp_program *prog, int D, int M, int V, int shuffled, uint64_t seed,
                    uint64_t index, rasp_ptrace *tr, rasp_error *err);
/* Runs the order-invariance analysis on tr (retracing under two other id
** orders) into tr->order.  A program whose probe traces fail is not
** invariant (the reason says so); returns 0 only when memory or the
** declared trace itself is at fault. */
int raspK_order(const rasp_program *prog, rasp_ptrace *tr);
void raspK_trace_free(rasp_ptrace *tr);

/* Checks one batch of inputs (B token arrays of length tr->n) with an
** evaluator made for tr; pass[b] gets 1 or 0.  lead/target: node symbols'
** token ids of l_t and t for each input.  Returns 0 and sets err when
** evaluation or check() fails with an error. */
int raspK_check_batch(rasp_ptrace *tr, rasp_eval *ev, int B, const int64_t *tokens,
                      const int64_t *lead, const int64_t *target, unsigned char *pass,
                      rasp_error *err);

/* Runs `graphs` random inputs (sample indices 0..graphs-1 of seed) on
** `jobs` threads. */
int raspK_verify_random(rasp_ptrace *tr, uint64_t graphs, uint64_t seed, int jobs,
                        rasp_vresult *res);
/* The same, calling progress(user, done, total) about fifty times a second
** from the calling thread while the workers run. */
typedef void (*raspK_progress)(void *user, uint64_t done, uint64_t total);
int raspK_verify_random_progress(rasp_ptrace *tr, uint64_t graphs, uint64_t seed, int jobs,
                                 rasp_vresult *res, raspK_progress progress, void *user);
/* Sample indices first .. first + graphs - 1 only (progress's total is
** graphs): how a run is split among MPI ranks (rwork.h).  Which inputs the
** causal probes take depends on their index alone, so the parts of a split
** run add up to the whole run's counts. */
int raspK_verify_random_range(rasp_ptrace *tr, uint64_t first, uint64_t graphs, uint64_t seed,
                              int jobs, rasp_vresult *res, raspK_progress progress, void *user);
/* `graphs` random inputs as raspK_verify_random draws them, each judged by
** a trace whose vocabulary ids are shuffled for that graph alone (stream
** `index` of seed, raspK_trace_ids).  tr gives the sizes.  A program whose
** verdicts here differ from the fixed order's sees the order of the ids. */
int raspK_verify_shuffled(const rasp_program *prog, rasp_ptrace *tr, uint64_t graphs,
                          uint64_t seed, int jobs, rasp_vresult *res);
/* Every edge (or arm) order and every target of one graph.  Fails with err
** when that is more than cap inputs.  When raspK_order has run and found
** aggregates to watch, each input is also checked for them (res->mixed). */
int raspK_verify_exhaustive(rasp_ptrace *tr, uint64_t cap, rasp_vresult *res, rasp_error *err);
/* The same, calling progress(user, done, total) after every batch of inputs. */
int raspK_verify_exhaustive_progress(rasp_ptrace *tr, uint64_t cap, rasp_vresult *res,
                                     rasp_error *err, raspK_progress progress, void *user);

/* Inputs first .. first + count - 1 of raspK_verify_exhaustive's
** enumeration, with no cap (progress's total is count); res->first_fail is
** an index into the whole enumeration. */
int raspK_verify_exhaustive_range(rasp_ptrace *tr, uint64_t first, uint64_t count,
                                  rasp_vresult *res, rasp_error *err, raspK_progress progress,
                                  void *user);
/* The same on `jobs` threads (fewer when the range is small), with the
** same result (first_fail the smallest failing index). */
int raspK_verify_exhaustive_jobs(rasp_ptrace *tr, uint64_t first, uint64_t count, int jobs,
                                 rasp_vresult *res, rasp_error *err, raspK_progress progress,
                                 void *user);

/* The token ids of sample `index` and its l_t and t (as token ids). */
int raspK_sample_tokens(const rasp_ptrace *tr, uint64_t seed, uint64_t index, int64_t *tokens,
                        int64_t *lead, int64_t *target, rasp_error *err);

/* Prints the leak that the dynamic causality check found (res->first_leak of
** seed): the input, the one with its tokens after q changed, and the first
** output position <= q whose value changed. */
void raspK_print_leak(rasp_ptrace *tr, uint64_t seed, const rasp_vresult *res, FILE *out);

/* Finds a small failing input, starting from sample `index` of seed for
** (D, M): tries smaller D and M first, then sorts the edge (or arm) order
** as far as it still fails.  Prints the input, output, expected answer and
** the labelled intermediate values. */
void raspK_counterexample(const rasp_program *prog, int D, int M, int V, uint64_t seed,
                          uint64_t index, FILE *out);
/* The same for input `index` of raspK_verify_exhaustive on tr (its
** res->first_fail): the input's order sorted as far as it still fails, then
** printed like raspK_counterexample's. */
void raspK_counterexample_exhaustive(const rasp_program *prog, rasp_ptrace *tr, uint64_t index,
                                     FILE *out);
/* The program's check(output, lead, target) on an output computed
** elsewhere (a compiled model's: tr->n elements, token ids as the task
** numbers them, l_t and t as ids).  1 with *pass set, or 0 with err. */
int raspK_check_output(rasp_ptrace *tr, const rasp_elem *output, int64_t lead, int64_t target,
                       int *pass, rasp_error *err);
/* The failing input `index` itself (res->first_fail of a random run of
** seed, or of the exhaustive enumeration), unshrunk: its tokens (tr->n)
** and l_t, t.  1, or 0 with err. */
int raspK_failing_input(const rasp_ptrace *tr, int exhaustive, uint64_t seed, uint64_t index,
                        int64_t *tokens, int64_t *lead, int64_t *target, rasp_error *err);

/* Reads text as one input (rtask.h: rasp_input) of prog's task with node
** symbols 1..V (raspT_parse_input on its settings): every
** token must be the task's, in the layout the task settings give (BOS, Q,
** G, answer, EOS; markers; edge or arm order; st_names), G must be a
** path-star graph (D arms of M nodes from the s of Q, every node on one
** arm), t the end of an arm, and a written answer the right one.  1, or 0
** with err (RASP_E_USAGE) naming the first thing that is not so (and the token's position,
** counting from 0). */
int raspK_parse_input(const rasp_program *prog, int V, const char *text, rasp_input *in,
                      rasp_error *err);
void raspK_input_free(rasp_input *in);
/* Sample `index` of seed for (D, M, V) of prog's task as one input: the
** graph raspK_verify_random draws there (`rasp run PROGRAM --D --M --seed`).
** 1, or 0 with err set (sizes the task refuses, or below its min_D and
** min_M). */
int raspK_sample_input(const rasp_program *prog, int D, int M, int V, uint64_t seed,
                       uint64_t index, rasp_input *in, rasp_error *err);
/* Traces prog for the input's D and M, runs it on the input and judges the
** output with check(); prints the input, the output, what check() was
** asked for, the verdict and the labelled intermediate values, as a
** counterexample is printed.  1: check() passed, 0: it failed, -1: running
** or check() raised an error (printed to out in its place), -2: tracing
** failed (err, not printed). */
int raspK_run_input(const rasp_program *prog, int V, const rasp_input *in, FILE *out,
                    rasp_error *err);

#endif
