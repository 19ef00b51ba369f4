/*
** interp_bench.c -- times librasp's evaluator on the example programs.
**
** usage: interp_bench INPUTS OUTPUTS PROGRAM.rasp...
**
** INPUTS holds one input per line (symbols separated by spaces, all of the
** same length n, drawn from the fixed vocabulary below).  Each program is
** traced once for length n, then evaluated on all inputs (a) in batches of
** 64 inputs per raspE_run, as the verifier evaluates graphs, and (b) one
** input per raspE_run (B = 1 each); each way on a fresh evaluator, timed
** over all inputs.  Both must agree; the outputs go to
** OUTPUTS ("# program" then one line per input, values as `rasp run`
** prints them) for bench/interp_bench.sh to compare with the numpy
** reference.  Single thread; times from clock_gettime(CLOCK_MONOTONIC).
** Not a test.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rasp.h"

static const char *const vocab[] = {"(", ")", "a", "b", "c", "d", "e", "f"};
enum { CHUNK = 64 }; /* inputs per raspE_run in the batched timing */
enum { NVOCAB = sizeof vocab / sizeof vocab[0] };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int64_t symbol_id(const char *s) {
  for (int i = 0; i < NVOCAB; i++)
    if (strcmp(vocab[i], s) == 0) return i + 1;
  return 0;
}

/* Reads the inputs: returns B, sets *n and *tokens (B*n ids). */
static int read_inputs(const char *path, int *n, int64_t **tokens) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    exit(2);
  }
  char line[65536];
  int B = 0, cap = 0;
  int64_t *t = NULL;
  *n = -1;
  while (fgets(line, sizeof line, f)) {
    int len = 0;
    for (char *tok = strtok(line, " \t\r\n"); tok; tok = strtok(NULL, " \t\r\n")) {
      int64_t id = symbol_id(tok);
      if (!id) {
        fprintf(stderr, "%s: symbol '%s' is not in the vocabulary\n", path, tok);
        exit(2);
      }
      if ((B + 1) * 4096 > cap) {
        cap = (B + 1) * 8192;
        t = realloc(t, sizeof *t * (size_t)cap);
      }
      if (len >= 4096) {
        fprintf(stderr, "%s: input too long\n", path);
        exit(2);
      }
      t[(size_t)B * 4096 + (size_t)len++] = id;
    }
    if (!len) continue;
    if (*n < 0) *n = len;
    if (len != *n) {
      fprintf(stderr, "%s: line %d has length %d, expected %d\n", path, B + 1, len, *n);
      exit(2);
    }
    B++;
  }
  fclose(f);
  /* compact the rows (stride 4096 -> n) */
  for (int b = 0; b < B; b++) memmove(t + (size_t)b * *n, t + (size_t)b * 4096, sizeof *t * (size_t)*n);
  *tokens = t;
  return B;
}

static void fail(const char *what, rasp_error *err) {
  fprintf(stderr, "interp_bench: %s: ", what);
  raspR_print(err, stderr);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: interp_bench INPUTS OUTPUTS PROGRAM.rasp...\n");
    return 2;
  }
  int n;
  int64_t *tokens;
  int B = read_inputs(argv[1], &n, &tokens);
  FILE *out = fopen(argv[2], "w");
  if (!out) {
    perror(argv[2]);
    return 2;
  }
  printf("%d inputs of length %d\n", B, n);
  printf("%-22s %10s %14s %14s\n", "program", "trace ms", "batch us/input", "B=1 us/input");
  for (int p = 3; p < argc; p++) {
    rasp_error err = {0};
    double t0 = now();
    rasp_ctx *ctx = rasp_ctx_new(n, NULL, &err);
    if (!ctx) fail(argv[p], &err);
    if (!rasp_set_vocab(ctx, vocab, NVOCAB, &err)) fail(argv[p], &err);
    if (!rasp_load_stdlib(ctx, NULL, &err)) fail(argv[p], &err);
    if (!rasp_exec_file(ctx, argv[p], &err)) fail(argv[p], &err);
    if (!rasp_trace(ctx, "main", &err)) fail(argv[p], &err);
    double t_trace = now() - t0;
    rasp_ir *ir = rasp_ctx_ir(ctx);
    int node = ir->outputs[0];

    /* (a) batches of CHUNK inputs per raspE_run, as rasp verify runs them,
       on a fresh evaluator; the outputs are copied out afterwards */
    rasp_eval *ev = raspE_new(ir);
    raspE_set_keep_intermediates(ev, 0);
    t0 = now();
    for (int b = 0; b < B; b += CHUNK)
      if (!raspE_run(ev, B - b < CHUNK ? B - b : CHUNK, tokens + (size_t)b * n, &err))
        fail(argv[p], &err);
    double t_batch = now() - t0;
    rasp_elem *batch = malloc(sizeof *batch * (size_t)B * (size_t)n);
    for (int b = 0; b < B; b += CHUNK) {
      int k = B - b < CHUNK ? B - b : CHUNK;
      if (!raspE_run(ev, k, tokens + (size_t)b * n, &err)) fail(argv[p], &err);
      for (int i = 0; i < k; i++)
        memcpy(batch + (size_t)(b + i) * n, raspE_value(ev, node, i), sizeof *batch * (size_t)n);
    }
    raspE_free(ev);

    /* (b) one input per run, on a fresh evaluator: timed as a whole, with
       nothing else in the loop (a clock read per run would cost a
       noticeable part of a short run); the outputs are checked below */
    ev = raspE_new(ir);
    int mismatch = 0;
    t0 = now();
    for (int b = 0; b < B; b++)
      if (!raspE_run(ev, 1, tokens + (size_t)b * n, &err)) fail(argv[p], &err);
    double t_single = now() - t0;
    char buf[128];
    const char *slash = strrchr(argv[p], '/');
    fprintf(out, "# %s\n", slash ? slash + 1 : argv[p]);
    for (int b = 0; b < B; b++) {
      if (!raspE_run(ev, 1, tokens + (size_t)b * n, &err)) fail(argv[p], &err);
      const rasp_elem *v = raspE_value(ev, node, 0);
      for (int i = 0; i < n; i++) {
        if (v[i].num != batch[(size_t)b * n + i].num || v[i].den != batch[(size_t)b * n + i].den)
          mismatch = 1;
        raspI_elem_format(ir, v[i], buf, sizeof buf);
        fprintf(out, "%s%s", i ? " " : "", buf);
      }
      fputc('\n', out);
    }
    raspE_free(ev);
    free(batch);
    if (mismatch) {
      fprintf(stderr, "interp_bench: %s: batch and one-at-a-time results differ\n", argv[p]);
      return 1;
    }
    printf("%-22s %10.2f %14.2f %14.2f\n", slash ? slash + 1 : argv[p], t_trace * 1e3,
           t_batch * 1e6 / B, t_single * 1e6 / B);
    rasp_ctx_free(ctx);
  }
  fclose(out);
  free(tokens);
  return 0;
}
