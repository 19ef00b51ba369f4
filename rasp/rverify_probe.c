/*
** rverify_probe.c -- the verifier's dynamic probes, which back its static
** proofs with runs.
**
** Causal prefixes.  A program that declares task['causal'] is proven not
** to look ahead by the causality analysis (rcausal.h); a random run also
** probes it: on VERIFY_PROBES inputs of every PROBE_EVERY-th batch, input
** `index` keeps its tokens 0..q and takes the rest from a donor, an
** independent graph of the same layout (so the changed input is still a
** well-formed one); its output at positions 0..q must not change.  q and
** the donor depend only on seed and index, so which inputs are probed, and
** how, does not depend on how the run was split among threads or ranks,
** and raspK_print_leak can replay the first leak.
**
** Shuffled ids (--vocab-order shuffled).  Each graph gets its own random
** numbering of the vocabulary, so its own trace, and its verdict is
** compared with the declared numbering's on the same graph: the cost is
** one trace per graph, which is why this is a separate mode.  The order
** analysis (rorder.h, raspK_order) proves the same for every order at
** once where it can.
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rmem.h"
#include "rverify_int.h"

/* ---------------------------------------------------- causal prefixes */

#define PROBE_SALT 0xd1b54a32d192ed03ULL

static int probe_q(const rasp_ptrace *tr, uint64_t seed, uint64_t index) {
  rasp_rng rng;
  raspT_rng_seed(&rng, seed ^ PROBE_SALT, ~index); /* not the donor's stream */
  return tr->n > 1 ? (int)raspT_rng_below(&rng, (uint64_t)(tr->n - 1)) : 0;
}

/* Input index with its tokens after q from the donor. */
static int probe_input(const rasp_ptrace *tr, uint64_t seed, uint64_t index, const int64_t *tokens,
                       int64_t *out, int *q, rasp_sample *scratch, rasp_error *err) {
  int64_t lead, target;
  if (!raspK_sample_into(tr, seed ^ PROBE_SALT, index, out, &lead, &target, scratch, err)) return 0;
  *q = probe_q(tr, seed, index);
  memcpy(out, tokens, sizeof(int64_t) * (size_t)(*q + 1));
  return 1;
}

/* The first position <= q where two outputs differ, or -1. */
static int prefix_change(const rasp_elem *a, const rasp_elem *b, int q) {
  for (int p = 0; p <= q; p++)
    if (a[p].num != b[p].num || a[p].den != b[p].den) return p;
  return -1;
}

/* Changed inputs that the program cannot evaluate (it raises an error on
** them) are not counted as probes. */
void raspK_probe_batch(rasp_ptrace *tr, uint64_t seed, rasp_eval *ev, uint64_t first, int P,
                       const int64_t *tokens, rasp_sample *scratch, raspK_probes *pr) {
  int n = tr->n;
  rasp_elem *orig = raspM_alloc(sizeof(rasp_elem) * (size_t)n * (size_t)P);
  int64_t *changed = raspM_alloc(sizeof(int64_t) * (size_t)n * (size_t)P);
  int q[VERIFY_PROBES];
  rasp_error err = {0};
  int ok = 1;
  for (int b = 0; b < P && ok; b++) {
    memcpy(orig + (size_t)b * n, raspE_value(ev, tr->output, b), sizeof(rasp_elem) * (size_t)n);
    ok = probe_input(tr, seed, first + (uint64_t)b, tokens + (size_t)b * n,
                     changed + (size_t)b * n, &q[b], scratch, &err);
  }
  /* the batch ran on the program's own ids (raspK_check_batch maps them) */
  int64_t *mapped = ok ? raspK_map_ids(tr, changed, (size_t)n * (size_t)P) : NULL;
  if (ok && raspE_run(ev, P, mapped ? mapped : changed, &err)) {
    pr->probes += (uint64_t)P;
    for (int b = 0; b < P; b++)
      if (prefix_change(orig + (size_t)b * n, raspE_value(ev, tr->output, b), q[b]) >= 0) {
        pr->leaks++;
        if (pr->first_leak < 0) {
          pr->first_leak = (int64_t)(first + (uint64_t)b);
          pr->leak_q = q[b];
        }
      }
  }
  raspM_free(mapped);
  raspM_free(orig);
  raspM_free(changed);
}

/* ------------------------------------------------------- a leak's report */

void raspK_print_leak(rasp_ptrace *tr, uint64_t seed, const rasp_vresult *res, FILE *out) {
  if (res->first_leak < 0) return;
  int n = tr->n;
  uint64_t index = (uint64_t)res->first_leak;
  int64_t *tokens = raspM_alloc(sizeof(int64_t) * (size_t)n * 2), lead, target;
  rasp_error err = {0};
  rasp_eval *ev = raspE_new(rasp_ctx_ir(tr->ctx));
  int q = 0;
  int64_t *mapped = NULL; /* the program's own ids, when they differ */
  if (!raspK_sample_into(tr, seed, index, tokens, &lead, &target, NULL, &err) ||
      !probe_input(tr, seed, index, tokens, tokens + n, &q, NULL, &err) ||
      !raspE_run(ev, 2, (mapped = raspK_map_ids(tr, tokens, 2 * (size_t)n)) ? mapped : tokens, &err)) {
    raspR_print(&err, out);
  } else {
    /* the batch's two rows: the input and the changed one */
    int p = prefix_change(raspE_value(ev, tr->output, 0), raspE_value(ev, tr->output, 1), q);
    fprintf(out, "  causal leak (graph %llu of seed %llu, n=%d): output position %d changed when "
                 "only the tokens after position %d did\n    input:    ",
            (unsigned long long)index, (unsigned long long)seed, n, p, q);
    raspK_print_tokens(tr, tokens, out);
    fprintf(out, "    changed:  ");
    raspK_print_tokens(tr, tokens + n, out);
    fprintf(out, "    output:   ");
    raspK_print_row(tr, ev, tr->output, 0, out);
    fprintf(out, "    now:      ");
    raspK_print_row(tr, ev, tr->output, 1, out);
  }
  raspE_free(ev);
  raspM_free(mapped);
  raspM_free(tokens);
}

/* ------------------------------------------------------- shuffled ids */

typedef struct sjob {
  const rasp_program *prog;
  rasp_ptrace *tr;
  uint64_t begin, end, seed;
  uint64_t passed, changed;
  int64_t first_fail;
  rasp_error err;
  int failed_error;
} sjob;

/* Each graph gets its own vocabulary order, so its own trace: the cost is
** one trace per graph, which is why this is a separate mode. */
static void *shuffled_worker(void *arg) {
  sjob *job = arg;
  rasp_ptrace *base = job->tr;
  int n = base->n;
  int64_t *tokens = raspM_alloc(sizeof(int64_t) * (size_t)n);
  rasp_eval *fixed = raspE_new(rasp_ctx_ir(base->ctx)); /* the same graph, ids as declared */
  raspE_set_keep_intermediates(fixed, 0);
  job->first_fail = -1;
  for (uint64_t i = job->begin; i < job->end && !job->failed_error; i++) {
    rasp_ptrace tr;
    int64_t lead, target;
    unsigned char pass = 0;
    if (!raspK_trace_kind(job->prog, base->opts.D, base->opts.M, base->opts.V, IDS_SHUFFLED, job->seed,
                    i, 0, &tr, &job->err)) {
      job->failed_error = 1;
      break;
    }
    rasp_eval *ev = raspE_new(rasp_ctx_ir(tr.ctx));
    raspE_set_keep_intermediates(ev, 0);
    if (!raspK_sample_into(&tr, job->seed, i, tokens, &lead, &target, NULL, &job->err) ||
        !raspK_check_batch(&tr, ev, 1, tokens, &lead, &target, &pass, &job->err)) {
      job->failed_error = 1;
      if (job->first_fail < 0) job->first_fail = (int64_t)i;
    } else {
      unsigned char was = 0;
      if (!raspK_check_batch(base, fixed, 1, tokens, &lead, &target, &was, &job->err))
        job->failed_error = 1;
      if (pass != was) job->changed++;
      if (pass) job->passed++;
      else if (job->first_fail < 0) job->first_fail = (int64_t)i;
    }
    raspE_free(ev);
    raspK_trace_free(&tr);
  }
  raspE_free(fixed);
  raspM_free(tokens);
  return NULL;
}

int raspK_verify_shuffled(const rasp_program *prog, rasp_ptrace *tr, uint64_t graphs,
                          uint64_t seed, int jobs, rasp_vresult *res) {
  memset(res, 0, sizeof *res);
  res->first_fail = -1;
  if (jobs < 1) jobs = 1;
  if ((uint64_t)jobs > graphs) jobs = graphs ? (int)graphs : 1;
  sjob *job = raspM_alloc(sizeof(sjob) * (size_t)jobs);
  pthread_t *th = raspM_alloc(sizeof(pthread_t) * (size_t)jobs);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64u << 20); /* the interpreter recurses */
  for (int j = 0; j < jobs; j++) {
    memset(&job[j], 0, sizeof job[j]);
    job[j].prog = prog;
    job[j].tr = tr;
    job[j].seed = seed;
    job[j].begin = graphs * (uint64_t)j / (uint64_t)jobs;
    job[j].end = graphs * (uint64_t)(j + 1) / (uint64_t)jobs;
  }
  int *ran_here = raspK_start_workers(shuffled_worker, job, sizeof job[0], jobs, th, &attr);
  int ok = 1;
  for (int j = 0; j < jobs; j++) {
    if (!ran_here[j]) pthread_join(th[j], NULL);
    res->passed += job[j].passed;
    res->changed += job[j].changed;
    res->total += job[j].end - job[j].begin;
    if (job[j].first_fail >= 0 && (res->first_fail < 0 || job[j].first_fail < res->first_fail))
      res->first_fail = job[j].first_fail;
    if (job[j].failed_error && ok) {
      res->error = job[j].err;
      ok = 0;
    }
  }
  raspM_free(ran_here);
  pthread_attr_destroy(&attr);
  raspM_free(job);
  raspM_free(th);
  return ok;
}
