/*
** embed.c -- using librasp from C.
**
** Traces a small RASP program (reverse) once for inputs of length 5, then
** evaluates the traced IR on a batch of three inputs, prints the outputs as
** symbols and as raw values, and reports how many transformer layers and
** heads the program needs.
**
** Build: `make` builds it as examples/embed (linked with librasp).
** Outside the source tree:
**   cc embed.c $(pkg-config --cflags --libs librasp) -o embed
*/
#include <stdio.h>
#include <stdlib.h>

#include "rasp.h"

static const char program[] =
    "def main(seq):\n"
    "    idx = indices(seq)\n"
    "    flip = select(idx, length - idx - 1, equals, causal=False)\n"
    "    return aggregate(flip, seq)\n";

int main(void) {
  enum { N = 5, B = 3 };
  static const char *const vocab[] = {"e", "h", "l", "o", "w", "r", "d"};
  static const char *const inputs[B][N] = {
      {"h", "e", "l", "l", "o"},
      {"w", "o", "r", "l", "d"},
      {"h", "e", "l", "l", "h"},
  };
  /* the library found at run time must be the one these headers describe */
  if (rasp_abi_version() != RASP_ABI_VERSION) {
    fprintf(stderr, "embed: built for librasp ABI %d, running with ABI %d\n", RASP_ABI_VERSION,
            rasp_abi_version());
    return 1;
  }
  rasp_error err = {0};
  rasp_ctx *ctx = rasp_ctx_new(N, NULL, &err); /* default limits */
  rasp_eval *ev = NULL;
  int status = 1;
  if (!ctx) goto fail;
  /* Token ids are 1..7 in the order of `vocab`. */
  if (!rasp_set_vocab(ctx, vocab, (int)(sizeof vocab / sizeof vocab[0]), &err)) goto fail;
  /* NULL: $RASP_STDLIB, else the installed stdlib (or the source tree's). */
  if (!rasp_load_stdlib(ctx, NULL, &err)) goto fail;
  if (!rasp_exec_string(ctx, "<embed>", program, &err)) goto fail;
  if (!rasp_trace(ctx, "main", &err)) goto fail;

  rasp_ir *ir = rasp_ctx_ir(ctx);
  printf("traced %d IR nodes for n = %d\n", ir->nnodes, rasp_ctx_length(ctx));

  int64_t tokens[B * N];
  for (int b = 0; b < B; b++)
    for (int i = 0; i < N; i++) tokens[b * N + i] = rasp_vocab_id(ctx, inputs[b][i]);

  ev = raspE_new(ir);
  if (!raspE_run(ev, B, tokens, &err)) goto fail;
  char buf[128];
  for (int b = 0; b < B; b++) {
    const rasp_elem *out = raspE_value(ev, ir->outputs[0], b);
    printf("input %d:", b);
    for (int i = 0; i < N; i++) printf(" %s", inputs[b][i]);
    printf("  ->  ");
    for (int i = 0; i < N; i++) {
      rasp_format_symbolic(ctx, out[i], buf, sizeof buf);
      printf("%s%s", i ? " " : "", buf);
    }
    printf("  (ids");
    for (int i = 0; i < N; i++) {
      raspI_elem_format(ir, out[i], buf, sizeof buf);
      printf(" %s", buf);
    }
    printf(")\n");
  }

  rasp_layers layers;
  raspL_analyse(ir, NULL, 0, &layers);
  raspL_print(&layers, stdout);
  raspL_free(&layers);
  status = 0;
fail:
  if (status) { /* err->code says what kind of error, e.g. RASP_E_SYNTAX */
    raspR_print(&err, stderr);
    status = raspR_exit_status(&err);
  }
  raspE_free(ev);
  rasp_ctx_free(ctx);
  return status;
}
