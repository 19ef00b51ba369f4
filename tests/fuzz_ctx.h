/*
** fuzz_ctx.h -- what the libFuzzer harnesses (fuzz_trace.c, fuzz_compile.c)
** share: which inputs stand for a program, and the context one runs in.
**
** An input is a program's text: at most 8192 bytes, no NUL, and neither
** `cfunc` (it calls any C function of any shared library, and libFuzzer
** would find exit() or abort() through its comparison hooks) nor `include`
** (it reads files).  It runs in a fresh context for inputs of length
** FUZZ_N with small limits, the five-symbol vocabulary `a b c ( )` and the
** stdlib ($RASP_STDLIB, else "stdlib": the source tree's, when run from its
** top).  A harness includes this once; every name is static.
*/
#ifndef RASP_TESTS_FUZZ_CTX_H
#define RASP_TESTS_FUZZ_CTX_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp.h"

#define FUZZ_N 5

static const char *const vocab[] = {"a", "b", "c", "(", ")"};
#define FUZZ_NVOCAB ((int)(sizeof vocab / sizeof vocab[0]))

/* The program text of an input (malloc'd, NUL-terminated), or NULL for an
** input the harnesses skip. */
static char *fuzz_program_text(const uint8_t *data, size_t size) {
  if (size > 8192) return NULL;
  char *text = malloc(size + 1);
  if (size) memcpy(text, data, size);
  text[size] = '\0';
  if (strlen(text) != size || strstr(text, "cfunc") || strstr(text, "include")) {
    free(text);
    return NULL;
  }
  return text;
}

/* The stdlib directory: $RASP_STDLIB, else "stdlib". */
static const char *fuzz_stdlib(void) {
  const char *stdlib = getenv("RASP_STDLIB");
  return stdlib ? stdlib : "stdlib";
}

/* The harnesses' limits: small, so that no input runs long. */
static void fuzz_limits(rasp_limits *lim) {
  rasp_default_limits(lim);
  lim->max_steps = 20000;
  lim->max_nodes = 5000;
  lim->max_depth = 50;
  lim->max_list = 10000;
  lim->max_length = 64;
  lim->max_selector_cells = 4096;
  lim->max_num_bits = 1 << 16; /* keeps 20000 steps of big arithmetic fast */
  lim->max_string = 1 << 20;
}

/* A fresh context with the stdlib loaded; aborts (a finding) when that
** fails, since nothing in it depends on the input.  who names the harness
** in the message. */
static rasp_ctx *fuzz_ctx_new(const char *who) {
  rasp_limits lim;
  fuzz_limits(&lim);
  rasp_error err;
  memset(&err, 0, sizeof err);
  rasp_ctx *ctx = rasp_ctx_new(FUZZ_N, &lim, &err);
  if (!ctx) abort(); /* valid length: must not fail */
  if (!rasp_set_vocab(ctx, vocab, FUZZ_NVOCAB, &err)) abort();
  if (!rasp_load_stdlib(ctx, fuzz_stdlib(), &err)) {
    fprintf(stderr, "%s: cannot load the stdlib from %s (set RASP_STDLIB): %s\n", who,
            fuzz_stdlib(), err.msg);
    abort();
  }
  return ctx;
}

/* FNV-1a of the input from seed h: the harnesses' inputs are derived from
** the program's bytes, so every run is reproducible. */
static uint64_t fuzz_hash(const uint8_t *data, size_t size, uint64_t h) {
  for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211ULL;
  return h;
}

/* FUZZ_N token ids, pseudo-random from h; returns h moved on. */
static uint64_t fuzz_tokens(uint64_t h, int64_t *tokens) {
  for (int i = 0; i < FUZZ_N; i++) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 29;
    tokens[i] = 1 + (int64_t)(h % (uint64_t)FUZZ_NVOCAB);
  }
  return h;
}

#endif
