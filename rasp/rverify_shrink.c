/*
** rverify_shrink.c -- counterexamples: a failing input found as small as
** the failure allows and printed with what the program computed on it.
**
** A counterexample is shrunk the way property-based testing does it: first
** the smallest (D, M) for which some graph fails, then the edge order,
** sorted towards arm-by-arm order one adjacent swap at a time while the
** input keeps failing, so what is printed is as small and as regular as
** the failure allows.
**
** An input is printed as the task writes it, then the output (or the
** error), what check() was asked for, and every labelled node the output
** depends on, with its source line and sublayer: the same view for a
** random run's counterexample, an exhaustive one's, and `rasp verify
** --input` (raspK_run_input).
*/
#include <stdlib.h>
#include <string.h>

#include "rfacts.h"
#include "rmem.h"
#include "rverify_int.h"

static int fails_on(rasp_ptrace *tr, rasp_eval *ev, const int64_t *tokens, int64_t lead,
                    int64_t target) {
  unsigned char pass = 0;
  rasp_error err = {0};
  if (!raspK_check_batch(tr, ev, 1, tokens, &lead, &target, &pass, &err)) return 1;
  return !pass;
}

void raspK_print_tokens(const rasp_ptrace *tr, const int64_t *tokens, FILE *out) {
  char buf[64];
  for (int i = 0; i < tr->n; i++) {
    raspT_token_text(&tr->opts, (int)tokens[i], buf, sizeof buf);
    fprintf(out, "%s%s", i ? " " : "", buf);
  }
  fputc('\n', out);
}

/* A node's values: token ids (raspF_symbolic, the rule `rasp run --symbols`
** follows) as their symbols, other numbers as numbers (a position is not a
** symbol, whatever id it happens to equal).  The program's output is shown
** as check() receives it (every id as its symbol, rverify.c's symbolic()): that
** is what is judged, and the task's contract makes it a token sequence. */
void raspK_print_row(rasp_ptrace *tr, rasp_eval *ev, int node, int b, FILE *out) {
  const rasp_elem *v = raspE_value(ev, node, b);
  int symbolic_ids = node == tr->output || raspE_symbolic(ev, node, b);
  char buf[128];
  for (int i = 0; i < tr->n; i++) {
    if (symbolic_ids) rasp_format_symbolic(tr->ctx, v[i], buf, sizeof buf);
    else raspI_elem_format(rasp_ctx_ir(tr->ctx), v[i], buf, sizeof buf);
    fprintf(out, "%s%s", i ? " " : "", buf);
  }
  fputc('\n', out);
}

/* Sorts blocks (edges, or whole arms) towards canonical order by adjacent
** swaps that keep the input failing. */
static void shrink_order(rasp_ptrace *tr, rasp_eval *ev, int64_t *tokens, int64_t lead,
                         int64_t target, int g_start) {
  const rasp_task_opts *o = &tr->opts;
  int w = 2 + o->markers;
  int E = o->D * (o->M - 1);
  int block = o->order == RASP_ORDER_ARM ? (o->M - 1) * w : w;
  int nblocks = o->order == RASP_ORDER_ARM ? o->D : E;
  int64_t *tmp = raspM_alloc(sizeof(int64_t) * (size_t)block);
  /* canonical order: blocks sorted by the ids of their first two tokens */
  for (int pass = 0; pass < nblocks; pass++) {
    int changed = 0;
    for (int k = 0; k + 1 < nblocks; k++) {
      int64_t *a = tokens + g_start + k * block, *b = a + block;
      if (a[0] < b[0] || (a[0] == b[0] && a[1] <= b[1])) continue;
      memcpy(tmp, a, sizeof(int64_t) * (size_t)block);
      memcpy(a, b, sizeof(int64_t) * (size_t)block);
      memcpy(b, tmp, sizeof(int64_t) * (size_t)block);
      if (fails_on(tr, ev, tokens, lead, target)) changed = 1;
      else { /* undo */
        memcpy(tmp, a, sizeof(int64_t) * (size_t)block);
        memcpy(a, b, sizeof(int64_t) * (size_t)block);
        memcpy(b, tmp, sizeof(int64_t) * (size_t)block);
      }
    }
    if (!changed) break;
  }
  raspM_free(tmp);
}

int raspK_show_input(const rasp_program *prog, rasp_ptrace *tr, rasp_eval *ev,
                      const int64_t *tokens, int64_t lead, int64_t target, const char *title,
                      int verdict, FILE *out, rasp_error *err) {
  char lbuf[64], tbuf[64];
  raspT_token_text(&tr->opts, (int)lead, lbuf, sizeof lbuf);
  raspT_token_text(&tr->opts, (int)target, tbuf, sizeof tbuf);
  fprintf(out, "  %s\n    input:    ", title);
  raspK_print_tokens(tr, tokens, out);
  unsigned char pass = 0;
  err->set = 0;
  int ran = raspK_check_batch(tr, ev, 1, tokens, &lead, &target, &pass, err);
  if (!ran) {
    fprintf(out, "    error:    ");
    raspR_print(err, out);
  } else {
    fprintf(out, "    output:   ");
    raspK_print_row(tr, ev, tr->output, 0, out);
  }
  fprintf(out, "    expected: leading node l_t = %s for target t = %s (judged by %s's check)\n",
          lbuf, tbuf, prog->name);
  if (verdict)
    fprintf(out, "    verdict:  %s\n", !ran ? "ERROR (above)" : pass ? "ok (check() passed)"
                                                                 : "FAIL (check() failed)");
  /* intermediate values: every labelled node the output depends on (none
  ** when evaluation stopped with an error: no values were kept) */
  rasp_ir *ir = rasp_ctx_ir(tr->ctx);
  unsigned char *live = raspM_alloc((size_t)ir->nnodes);
  raspI_live(ir, &tr->output, 1, live);
  fprintf(out, "    intermediate values (source line, variable, sublayer):\n");
  int shown = 0;
  for (int i = 0; i < ir->nnodes && shown < 60; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    if (!live[i] || !nd->label || nd->type == RASP_T_SEL || !raspE_value(ev, i, 0)) continue;
    if (nd->op == RASP_OP_INPUT || nd->op == RASP_OP_INDICES || nd->op == RASP_OP_FULL) continue;
    fprintf(out, "      %4d %-18s %2d: ", nd->pos.line, nd->label, tr->layers.sublayer[i]);
    raspK_print_row(tr, ev, i, 0, out);
    shown++;
  }
  raspM_free(live);
  return ran ? pass : -1;
}

void raspK_counterexample(const rasp_program *prog, int D, int M, int V, uint64_t seed,
                          uint64_t index, FILE *out) {
  rasp_error err = {0};
  rasp_ptrace tr;
  int64_t *tokens = NULL, lead = 0, target = 0;
  int found = 0;
  /* smallest (D, M) first, then the one given */
  for (int m = prog->min_M; m <= M && !found; m++)
    for (int dd = prog->min_D > 2 ? prog->min_D : 2; dd <= D && !found; dd++) {
      if (m == M && dd == D) continue;
      if (!raspK_trace(prog, dd, m, V, &tr, &err)) continue;
      rasp_eval *ev = raspE_new(rasp_ctx_ir(tr.ctx));
      tokens = raspM_realloc(tokens, sizeof(int64_t) * (size_t)tr.n);
      for (uint64_t i = 0; i < 200 && !found; i++)
        if (raspK_sample_tokens(&tr, seed, i, tokens, &lead, &target, &err) &&
            fails_on(&tr, ev, tokens, lead, target))
          found = 1;
      if (found) {
        D = dd;
        M = m;
      }
      raspE_free(ev);
      raspK_trace_free(&tr);
    }
  if (!raspK_trace(prog, D, M, V, &tr, &err)) {
    raspR_print(&err, out);
    raspM_free(tokens);
    return;
  }
  tokens = raspM_realloc(tokens, sizeof(int64_t) * (size_t)tr.n);
  rasp_eval *ev = raspE_new(rasp_ctx_ir(tr.ctx));
  if (!found) raspK_sample_tokens(&tr, seed, index, tokens, &lead, &target, &err);
  rasp_sample s;
  memset(&s, 0, sizeof s);
  raspT_sample(&tr.opts, 0, 0, &s, &err);
  int g_start = s.g_start;
  raspT_sample_free(&s);
  shrink_order(&tr, ev, tokens, lead, target, g_start);
  char title[128];
  snprintf(title, sizeof title, "counterexample (D=%d, M=%d, n=%d):", D, M, tr.n);
  raspK_show_input(prog, &tr, ev, tokens, lead, target, title, 0, out, &err);
  raspE_free(ev);
  raspK_trace_free(&tr);
  raspM_free(tokens);
}

/* Input `want` of the exhaustive enumeration: its tokens, l_t and t as
** exhaustive_visit takes them. */
typedef struct xfind {
  const rasp_ptrace *tr;
  uint64_t want, seen;
  int64_t *tokens, lead, target;
} xfind;

static int find_visit(const rasp_sample *s, void *user) {
  xfind *f = user;
  if (f->seen++ != f->want) return 0;
  for (int i = 0; i < s->ntokens; i++) f->tokens[i] = s->tokens[i];
  f->lead = s->lead;
  f->target = f->tr->opts.st_names ? f->tr->opts.V + RASP_SP_T : s->t;
  return 1;
}

int raspK_failing_input(const rasp_ptrace *tr, int exhaustive, uint64_t seed, uint64_t index,
                        int64_t *tokens, int64_t *lead, int64_t *target, rasp_error *err) {
  if (!exhaustive) return raspK_sample_tokens(tr, seed, index, tokens, lead, target, err);
  xfind f = {tr, index, 0, tokens, 0, 0};
  if (raspT_enumerate(&tr->opts, NULL, UINT64_MAX, find_visit, &f, NULL, err) != 1) {
    if (!err->set) raspR_setnopos(err, "exhaustive input %llu not found", (unsigned long long)index);
    return 0;
  }
  *lead = f.lead;
  *target = f.target;
  return 1;
}

void raspK_counterexample_exhaustive(const rasp_program *prog, rasp_ptrace *tr, uint64_t index,
                                     FILE *out) {
  rasp_error err = {0};
  xfind f = {tr, index, 0, raspM_alloc(sizeof(int64_t) * (size_t)tr->n), 0, 0};
  if (raspT_enumerate(&tr->opts, NULL, UINT64_MAX, find_visit, &f, NULL, &err) != 1) {
    if (!err.set) raspR_setnopos(&err, "exhaustive input %llu not found", (unsigned long long)index);
    raspR_print(&err, out);
    raspM_free(f.tokens);
    return;
  }
  rasp_eval *ev = raspE_new(rasp_ctx_ir(tr->ctx));
  rasp_sample s;
  memset(&s, 0, sizeof s);
  raspT_sample(&tr->opts, 0, 0, &s, &err);
  int g_start = s.g_start;
  raspT_sample_free(&s);
  shrink_order(tr, ev, f.tokens, f.lead, f.target, g_start);
  char title[160];
  snprintf(title, sizeof title, "counterexample (D=%d, M=%d, n=%d; exhaustive input %llu, "
                                "its order sorted while it still fails):",
           tr->opts.D, tr->opts.M, tr->n, (unsigned long long)index);
  raspK_show_input(prog, tr, ev, f.tokens, f.lead, f.target, title, 0, out, &err);
  raspE_free(ev);
  raspM_free(f.tokens);
}
