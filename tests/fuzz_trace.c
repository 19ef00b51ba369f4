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
** evaluator carries between runs must not change results).  When the
** program defines `check`, it is staged (rstage.h) and, if that succeeds,
** its residual predicate must agree with the interpreted check() on a few
** outputs wherever it decides.  Everything is freed.
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
**     rasp/rparse.c rasp/rir.c rasp/reval.c rasp/rlayers.c rasp/rinterp.c \
**     rasp/rbuiltin.c rasp/rffi.c rasp/rstage.c tests/fuzz_trace.c -lffi -lgmp -lm \
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

#include "rasp.h"
#include "rstage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_N 5

static const char *const vocab[] = {"a", "b", "c", "(", ")"};
#define FUZZ_NVOCAB ((int)(sizeof vocab / sizeof vocab[0]))

static int mentions(const char *text, const char *word) { return strstr(text, word) != NULL; }

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 8192) return 0;
  char *text = malloc(size + 1);
  if (size) memcpy(text, data, size);
  text[size] = '\0';
  if (strlen(text) != size || mentions(text, "cfunc") || mentions(text, "include")) {
    free(text);
    return 0;
  }

  const char *stdlib = getenv("RASP_STDLIB");
  if (!stdlib) stdlib = "stdlib";

  rasp_limits lim;
  rasp_default_limits(&lim);
  lim.max_steps = 20000;
  lim.max_nodes = 5000;
  lim.max_depth = 50;
  lim.max_list = 10000;
  lim.max_length = 64;
  lim.max_selector_cells = 4096;
  lim.max_num_bits = 1 << 16; /* keeps 20000 steps of big arithmetic fast */
  lim.max_string = 1 << 20;

  rasp_error err;
  memset(&err, 0, sizeof err);
  rasp_ctx *ctx = rasp_ctx_new(FUZZ_N, &lim, &err);
  if (!ctx) abort(); /* valid length: must not fail */
  if (!rasp_set_vocab(ctx, vocab, FUZZ_NVOCAB, &err)) abort();
  if (!rasp_load_stdlib(ctx, stdlib, &err)) {
    fprintf(stderr, "fuzz_trace: cannot load the stdlib from %s (set RASP_STDLIB): %s\n",
            stdlib, err.msg);
    abort();
  }

  memset(&err, 0, sizeof err);
  int ran = rasp_exec_string(ctx, "<fuzz>", text, &err);
  if (ran && rasp_has_global(ctx, "check")) {
    uint64_t h = 0x12345;
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211ULL;
    fuzz_check(ctx, h);
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
      uint64_t h = 1469598103934665603ULL;
      for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211ULL;
      int64_t tokens[FUZZ_N];
      for (int i = 0; i < FUZZ_N; i++) {
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 29;
        tokens[i] = 1 + (int64_t)(h % (uint64_t)FUZZ_NVOCAB);
      }
      rasp_eval *ev = raspE_new(ir);
      raspE_set_max_selector_cells(ev, 4096);
      memset(&err, 0, sizeof err);
      if (raspE_run(ev, 1, tokens, &err)) {
        for (int k = 0; k < ir->noutputs; k++)
          if (!raspE_value(ev, ir->outputs[k], 0)) abort();
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
      } else if (!err.set) {
        abort(); /* a failure must say why */
      }
      raspE_free(ev);
    } else if (!err.set) {
      abort();
    }
  }
  rasp_ctx_free(ctx);
  free(text);
  return 0;
}
