/*
** fuzz_trace.c -- libFuzzer harness for the interpreter, the tracer and the
** evaluator.
**
** The input bytes are a RASP program.  Each input gets a fresh context for
** inputs of length 5 with small limits, a five-symbol vocabulary and the
** stdlib; the program runs (rasp_exec_string), and when it defines `main`
** that is traced (rasp_trace), its layers analysed, and the IR evaluated
** (raspE_run, small selector limit) on one pseudo-random input derived from
** the program's bytes, so every run is reproducible; then the same input is
** evaluated again inside batches of 1 to 3 on a second evaluator that drops
** and then keeps intermediates, and its outputs must be identical (what an
** evaluator carries between runs must not change results); and on a third
** evaluator in reference mode (reval_ref.c), whose outcome -- outputs, or
** error message -- must be the same.  The first evaluator runs with its
** value check on (raspE_set_check_values), and every value of every node
** must lie within its static fact (rfacts.h: raspF_values for tokens of the
** vocabulary, 1..5), so a transfer function too tight for some program is
** a finding.  When the
** program defines `check`, it is staged (rstage.h) and, if that succeeds,
** its residual predicate must agree with the interpreted check() on a few
** outputs wherever it decides.  The causality analysis (rcausal.h) runs on
** the IR, and every output position it calls causal must keep its value
** when the tokens after it change (a finding otherwise: the analysis
** missed a leak).  The program is also traced under two renumbered
** vocabularies and analysed for order invariance (rorder.h); if
** it is called invariant (and no watched aggregate averages ids on the
** input), its output under a third, pseudo-random numbering must be the
** same as symbols.  A failure must set an error with a code.  Everything
** is freed.  The interpreter's collector runs before every top-level
** statement (RASP_GC_STRESS=1), so a value it frees too early is a finding.
** Errors are expected; crashes, sanitizer reports, leaks and hangs are not.
**
** Programs that mention `cfunc` or `include` are skipped: cfunc calls any C
** function of any shared library (libFuzzer would find exit() or abort()
** through its comparison hooks), and include reads files.
**
** Build and run from the top of the source tree (see tests/README.md):
**
**   clang -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
**     -Irasp -DRASP_STDLIB_DIR='"stdlib"' rasp/rmem.c rasp/rerror.c rasp/rlex.c \
**     rasp/rparse.c rasp/rir.c rasp/rfacts.c rasp/reval.c rasp/reval_plan.c rasp/reval_kern.c \
**     rasp/reval_ref.c rasp/rlayers.c rasp/rcausal.c rasp/rheap.c rasp/rvalue.c \
**     rasp/rtrace.c rasp/rinterp.c rasp/rapi.c rasp/raux.c rasp/rbuiltin.c rasp/rffi.c \
**     rasp/rstage.c rasp/rorder.c tests/fuzz_trace.c \
**     -lffi -lgmp -lm \
**     -lpthread -o fuzz_trace
**   mkdir -p /tmp/fuzz_trace_corpus
**   ./fuzz_trace -max_total_time=300 -close_fd_mask=1 /tmp/fuzz_trace_corpus \
**     tests/fuzz_trace_corpus
**
** The stdlib directory is $RASP_STDLIB, else "stdlib" (the source tree's,
** when run from its top).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_ctx.h"
#include "rasp.h"
#include "rcausal.h"
#include "rfacts.h"
#include "rorder.h"
#include "rstage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A staged check() against the interpreted one on outputs made from h. */
static void fuzz_check(rasp_ctx *ctx, uint64_t h) {
  rasp_staged *st = raspS_stage(ctx, "check", FUZZ_N, NULL);
  if (!st) return;
  int64_t vocab_sym[FUZZ_NVOCAB + 1];
  for (int id = 1; id <= FUZZ_NVOCAB; id++)
    vocab_sym[id] = rasp_symbol(ctx, rasp_vocab_symbol(ctx, id));
  for (int g = 0; g < 4; g++) {
    rasp_elem out[FUZZ_N], shown[FUZZ_N], lt[2];
    for (int i = 0; i < FUZZ_N + 2; i++) {
      h = (h ^ (h >> 31)) * 0x9e3779b97f4a7c15ULL + (uint64_t)i;
      int64_t v = (int64_t)((h >> 40) % 8); /* tokens 1..5, then 0, 6, a boolean */
      rasp_elem e = v == 7 ? (rasp_elem){(int64_t)(h & 1), RASP_DEN_BOOL} : (rasp_elem){v, 1};
      rasp_elem sym = e.den == 1 && e.num >= 1 && e.num <= FUZZ_NVOCAB
                          ? (rasp_elem){vocab_sym[e.num], RASP_DEN_SYM}
                          : e;
      if (i < FUZZ_N) {
        out[i] = e;
        shown[i] = sym;
      } else {
        lt[i - FUZZ_N] = sym;
      }
    }
    int r = raspS_eval(st, out, vocab_sym, FUZZ_NVOCAB, lt[0], lt[1]);
    rasp_arg args[3];
    memset(args, 0, sizeof args);
    args[0].elems = shown;
    args[0].count = FUZZ_N;
    args[1].elem = lt[0];
    args[2].elem = lt[1];
    int truth = -1;
    rasp_error err;
    memset(&err, 0, sizeof err);
    int ok = rasp_call_check(ctx, "check", args, 3, &truth, &err);
    if (r >= 0 && (!ok || truth != r)) abort(); /* a staged verdict must be the real one */
    if (!ok && !err.set) abort();
  }
  raspS_free(st);
}

/* Every value of every live node within its static fact for any tokens of
** the vocabulary (ev keeps its intermediates). */
static void fuzz_values(rasp_ir *ir, rasp_eval *ev) {
  raspF_value *vf = malloc(sizeof *vf * (size_t)(ir->nnodes + 1));
  raspF_values(ir, (raspF_value){RASPF_K_INT, 1, FUZZ_NVOCAB}, vf);
  unsigned char *live = malloc((size_t)ir->nnodes + 1);
  raspI_live(ir, ir->outputs, ir->noutputs, live);
  for (int id = 0; id < ir->nnodes; id++) {
    if (!live[id] || raspI_op_component(ir->nodes[id].op) == RASP_COMP_SELECTOR) continue;
    const rasp_elem *v = raspE_value(ev, id, 0);
    if (!v) abort(); /* kept intermediates are readable */
    for (int i = 0; i < FUZZ_N; i++)
      if (!raspF_holds(vf[id], v[i])) abort(); /* a fact too tight */
  }
  free(live);
  free(vf);
}

/* For every q, tokens 0..q kept and the rest changed: output positions
** p <= q that the analysis calls causal must not change. */
static void fuzz_causal(rasp_ir *ir, const int64_t *tokens) {
  rasp_causal ca;
  raspA_analyse(ir, &ca);
  rasp_eval *ev = raspE_new(ir);
  raspE_set_max_selector_cells(ev, 4096);
  int64_t batch[(FUZZ_N - 1) * FUZZ_N];
  for (int q = 0; q + 1 < FUZZ_N; q++)
    for (int i = 0; i < FUZZ_N; i++)
      batch[q * FUZZ_N + i] = i <= q ? tokens[i] : 1 + (tokens[i] + q) % FUZZ_NVOCAB;
  rasp_error err;
  memset(&err, 0, sizeof err);
  int64_t both[2 * FUZZ_N];
  memcpy(both, tokens, sizeof(int64_t) * FUZZ_N);
  for (int q = 0; q + 1 < FUZZ_N; q++) {
    memcpy(both + FUZZ_N, batch + q * FUZZ_N, sizeof(int64_t) * FUZZ_N);
    if (!raspE_run(ev, 2, both, &err)) {
      if (!err.set) abort();
      memset(&err, 0, sizeof err);
      continue; /* the changed input may be one the program rejects */
    }
    for (int k = 0; k < ir->noutputs; k++) {
      const rasp_elem *x = raspE_value(ev, ir->outputs[k], 0);
      const rasp_elem *y = raspE_value(ev, ir->outputs[k], 1);
      for (int p = 0; p <= q; p++)
        if ((x[p].num != y[p].num || x[p].den != y[p].den) &&
            raspA_causal_at(&ca, ir->outputs[k], p))
          abort(); /* a leak the analysis missed */
    }
  }
  raspE_free(ev);
  raspA_free(&ca);
}

/* A context of the program with the vocabulary's ids renumbered: symbol
** with id v gets id perm[v]; NULL when it does not run or trace. */
static rasp_ctx *traced_with(const char *text, const rasp_limits *lim, const char *stdlib,
                             const int64_t *perm) {
  const char *syms[FUZZ_NVOCAB];
  for (int v = 1; v <= FUZZ_NVOCAB; v++) syms[perm[v] - 1] = vocab[v - 1];
  rasp_error err;
  memset(&err, 0, sizeof err);
  rasp_ctx *ctx = rasp_ctx_new(FUZZ_N, lim, &err);
  if (!ctx) abort();
  if (!rasp_set_vocab(ctx, syms, FUZZ_NVOCAB, &err) || !rasp_load_stdlib(ctx, stdlib, &err) ||
      !rasp_exec_string(ctx, "<fuzz>", text, &err) || !rasp_trace(ctx, "main", &err)) {
    rasp_ctx_free(ctx);
    return NULL;
  }
  return ctx;
}

/* The first output on tokens (ids of ctx's own numbering) as text, symbols
** by name: 0 when the evaluation fails. */
static int output_text(rasp_ctx *ctx, const int64_t *tokens, char *buf, size_t size) {
  rasp_ir *ir = rasp_ctx_ir(ctx);
  rasp_eval *ev = raspE_new(ir);
  raspE_set_max_selector_cells(ev, 4096);
  rasp_error err;
  memset(&err, 0, sizeof err);
  int ok = raspE_run(ev, 1, tokens, &err);
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; ok && i < FUZZ_N; i++) {
    char e[128];
    rasp_format_symbolic(ctx, raspE_value(ev, ir->outputs[0], 0)[i], e, sizeof e);
    used += (size_t)snprintf(buf + used, size - used, "%s ", e);
  }
  raspE_free(ev);
  return ok;
}

/* A program the order analysis (rorder.h) calls invariant must give the
** same output, as symbols, under a renumbered vocabulary. */
static void fuzz_order(rasp_ctx *ctx, const char *text, const rasp_limits *lim,
                       const char *stdlib, const int64_t *tokens, uint64_t h) {
  int64_t rot[FUZZ_NVOCAB + 1], rev[FUZZ_NVOCAB + 1], shuf[FUZZ_NVOCAB + 1];
  rot[0] = rev[0] = shuf[0] = 0;
  for (int v = 1; v <= FUZZ_NVOCAB; v++) {
    rot[v] = v % FUZZ_NVOCAB + 1;
    rev[v] = FUZZ_NVOCAB + 1 - v;
    shuf[v] = v;
  }
  for (int v = FUZZ_NVOCAB; v > 1; v--) { /* a permutation drawn from h */
    h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ULL + 1;
    int r = 1 + (int)((h >> 33) % (uint64_t)v);
    int64_t t = shuf[v];
    shuf[v] = shuf[r];
    shuf[r] = t;
  }
  rasp_ctx *p0 = traced_with(text, lim, stdlib, rot), *p1 = traced_with(text, lim, stdlib, rev);
  rasp_ctx *sh = traced_with(text, lim, stdlib, shuf);
  rasp_ir *ir = rasp_ctx_ir(ctx);
  if (p0 && p1 && sh && ir->noutputs == 1) {
    rasp_order_probe pr[2] = {{rasp_ctx_ir(p0), rasp_ctx_ir(p0)->outputs[0], rot},
                              {rasp_ctx_ir(p1), rasp_ctx_ir(p1)->outputs[0], rev}};
    unsigned char node_id[FUZZ_NVOCAB + 1] = {0};
    rasp_idorder res;
    if (raspO_analyse(ir, ir->outputs[0], FUZZ_NVOCAB, node_id, pr, 2, &res)) {
      rasp_eval *ev = raspE_new(ir);
      raspE_set_max_selector_cells(ev, 4096);
      rasp_error err;
      memset(&err, 0, sizeof err);
      int mixes = !raspE_run(ev, 1, tokens, &err) || raspO_mixes(&res, ir, ev, 0);
      raspE_free(ev);
      int64_t moved[FUZZ_N];
      for (int i = 0; i < FUZZ_N; i++) moved[i] = shuf[tokens[i]];
      char a[2048], b[2048];
      if (!mixes && output_text(ctx, tokens, a, sizeof a) && output_text(sh, moved, b, sizeof b) &&
          strcmp(a, b) != 0)
        abort(); /* called invariant, yet the ids' order changed the output */
    }
    raspO_free(&res);
  }
  rasp_ctx_free(p0);
  rasp_ctx_free(p1);
  rasp_ctx_free(sh);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_program_text(data, size);
  if (!text) return 0;
  /* the collector before every top-level statement, swept values freed at
  ** once: a value it frees while the program can still reach it is a use
  ** after free the sanitizer reports (rheap.c) */
  setenv("RASP_GC_STRESS", "1", 1);
  rasp_ctx *ctx = fuzz_ctx_new("fuzz_trace");
  rasp_limits lim; /* the context's, for the renumbered traces */
  fuzz_limits(&lim);
  const char *stdlib = fuzz_stdlib();
  rasp_error err;

  memset(&err, 0, sizeof err);
  int ran = rasp_exec_string(ctx, "<fuzz>", text, &err);
  if (ran && rasp_has_global(ctx, "check")) {
    fuzz_check(ctx, fuzz_hash(data, size, 0x12345));
  }
  if (ran && rasp_has_global(ctx, "main")) {
    memset(&err, 0, sizeof err);
    if (rasp_trace(ctx, "main", &err)) {
      rasp_ir *ir = rasp_ctx_ir(ctx);
      if (ir->noutputs < 1) abort(); /* a successful trace has an output */
      rasp_layers layers;
      memset(&layers, 0, sizeof layers);
      raspL_analyse(ir, ir->outputs, ir->noutputs, &layers);
      raspL_free(&layers);

      /* one input, pseudo-random but determined by the program text */
      uint64_t h = fuzz_hash(data, size, 1469598103934665603ULL);
      int64_t tokens[FUZZ_N];
      h = fuzz_tokens(h, tokens);
      rasp_eval *ev = raspE_new(ir);
      raspE_set_max_selector_cells(ev, 4096);
      raspE_set_check_values(ev, 1); /* a value outside its fact fails the run */
      memset(&err, 0, sizeof err);
      int ok = raspE_run(ev, 1, tokens, &err);
      /* The reference kernel (reval_ref.c) on the same input: the same
         outcome, the same error or the same outputs. */
      rasp_eval *evr = raspE_new(ir);
      raspE_set_max_selector_cells(evr, 4096);
      raspE_set_reference(evr, 1);
      rasp_error errr;
      memset(&errr, 0, sizeof errr);
      if (raspE_run(evr, 1, tokens, &errr) != ok) abort();
      if (!ok && strcmp(err.msg, errr.msg) != 0) abort();
      for (int k = 0; ok && k < ir->noutputs; k++) {
        const rasp_elem *x = raspE_value(ev, ir->outputs[k], 0);
        const rasp_elem *y = raspE_value(evr, ir->outputs[k], 0);
        if (!x || !y || memcmp(x, y, sizeof *x * FUZZ_N) != 0) abort();
      }
      raspE_free(evr);
      if (ok) fuzz_values(ir, ev);
      if (ok) {
        /* The same input again, inside batches, on an evaluator that drops
           intermediates and then keeps them: what the evaluator carries
           from run to run (token-independent values, shared duplicates,
           the release plan) must not change any output. */
        int64_t batch[3 * FUZZ_N];
        for (int b = 0; b < 3; b++)
          for (int i = 0; i < FUZZ_N; i++)
            batch[b * FUZZ_N + i] = b ? 1 + (tokens[i] + b) % FUZZ_NVOCAB : tokens[i];
        rasp_eval *ev2 = raspE_new(ir);
        raspE_set_max_selector_cells(ev2, 4096);
        static const int shapes[][2] = {{3, 0}, {1, 0}, {2, 1}, {3, 0}};
        for (size_t r = 0; r < sizeof shapes / sizeof *shapes; r++) {
          raspE_set_keep_intermediates(ev2, shapes[r][1]);
          rasp_error err2;
          memset(&err2, 0, sizeof err2);
          if (!raspE_run(ev2, shapes[r][0], batch, &err2)) {
            if (!err2.set) abort();
            continue; /* another input of the batch may fail */
          }
          for (int k = 0; k < ir->noutputs; k++) {
            const rasp_elem *x = raspE_value(ev, ir->outputs[k], 0);
            const rasp_elem *y = raspE_value(ev2, ir->outputs[k], 0);
            if (!y || memcmp(x, y, sizeof *x * FUZZ_N) != 0) abort();
          }
        }
        raspE_free(ev2);
        fuzz_causal(ir, tokens);
      } else if (!err.set || err.code == RASP_E_NONE) {
        abort(); /* a failure must say why, and what kind it is */
      }
      raspE_free(ev);
      fuzz_order(ctx, text, &lim, stdlib, tokens, h);
    } else if (!err.set || err.code == RASP_E_NONE) {
      abort();
    }
  }
  rasp_ctx_free(ctx);
  free(text);
  return 0;
}
