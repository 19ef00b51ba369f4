/*
** cli_orders.c -- `rasp compile --check-orders LIST`: --check's inputs
** through the compiled model in other summation orders and in float64.
**
** --check runs the model in one order, raspN_forward's.  A proof of
** exactness that is worth its name holds in every order a float32 forward
** pass may take (a GPU's blocked or pairwise sums, a permuted copy of the
** model) and at a wider type; the rounding bounds say so, and this is the
** measurement: every --check input once more through raspN_ofwd
** (rmodel_orders.c, written apart from raspN_forward and the compiler's
** sparse pass) in each order asked for, its argmax decoded as raspG_run
** decodes and compared with the interpreter's output.  Each order gets a
** summary line; the first disagreements of each are printed with the
** input.  A model whose layout.arithmetic is ["float32"] (a quantized
** width: rcompile_layout.c) is not claimed exact in float64, and the
** loaders refuse to run it there: its f64 line says so, and its f64
** disagreements do not fail the check.  Likewise a model whose
** layout.attention.formulas does not list "sdpa" (`rasp compile
** --no-sdpa`) is not claimed exact under PyTorch's attention formula: its
** sdpa line says so and does not fail the check.
*/
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rcompile.h"
#include "rmem.h"
#include "rmodel_orders.h"

struct raspC_orders {
  const raspG_model *g;
  const rasp_ir *ir;
  int norders, f32_only, no_sdpa;
  int order[RASPN_NORDERS];
  raspN_ofwd *fwd[RASPN_NORDERS];
  long done, bad[RASPN_NORDERS];
  int *tokens;
  double *logits;
};

int raspC_check_orders(const char *text, unsigned char *on) {
  unsigned char seen[RASPN_NORDERS] = {0};
  char *copy = raspM_strdup(text ? text : ""), *save = NULL;
  int n = 0, bad = 0;
  for (char *w = strtok_r(copy, ", ", &save); w && !bad; w = strtok_r(NULL, ", ", &save)) {
    if (!strcmp(w, "all")) {
      for (int i = 0; i < RASPN_NORDERS; i++) seen[i] = 1;
      continue;
    }
    int k = raspN_order_parse(w);
    if (k < 0) {
      fprintf(stderr, "rasp compile: --check-orders: unknown order '%s' (the orders: c, rev, "
                      "asc, desc, pair, perm, f64, sdpa, or all)\n", w);
      bad = 1;
    } else {
      seen[k] = 1;
    }
  }
  raspM_free(copy);
  if (bad) return -1;
  for (int i = 0; i < RASPN_NORDERS; i++) n += seen[i];
  if (!n) {
    fprintf(stderr, "rasp compile: --check-orders: no order given (e.g. 'perm,f64' or 'all')\n");
    return -1;
  }
  if (on) memcpy(on, seen, sizeof seen);
  return n;
}

raspC_orders *raspC_orders_new(const raspG_model *g, const rasp_ir *ir, const char *text,
                               uint64_t seed) {
  unsigned char on[RASPN_NORDERS];
  if (raspC_check_orders(text, on) < 0) return NULL; /* (parsed with the options) */
  raspC_orders *o = raspM_alloc(sizeof *o);
  o->g = g, o->ir = ir;
  for (int i = 0; i < RASPN_NORDERS; i++)
    if (on[i]) {
      o->order[o->norders] = i;
      o->fwd[o->norders++] = raspN_ofwd_new(&g->model, i, seed);
    }
  int na = 0;
  char **ar = raspN_layout_strings(&g->model, "arithmetic", &na);
  o->f32_only = ar && na == 1 && !strcmp(ar[0], "float32");
  raspN_free_strings(ar, na);
  char **fo = raspN_layout_strings(&g->model, "attention.formulas", &na);
  o->no_sdpa = 1;
  for (int i = 0; i < na; i++) o->no_sdpa &= strcmp(fo[i], "sdpa") != 0;
  raspN_free_strings(fo, na);
  o->tokens = raspM_alloc(sizeof(int) * (size_t)(g->n + 1));
  o->logits = raspM_alloc(sizeof(double) * (size_t)(g->n + 1) * (size_t)g->model.cfg.n_out);
  return o;
}

void raspC_orders_free(raspC_orders *o) {
  if (!o) return;
  for (int i = 0; i < o->norders; i++) raspN_ofwd_free(o->fwd[i]);
  raspM_free(o->tokens);
  raspM_free(o->logits);
  raspM_free(o);
}

/* The first disagreements of an order, on stderr. */
static void order_mismatch(const raspC_orders *o, int oi, long k, int i, const int64_t *tok,
                           rasp_elem got, rasp_elem want) {
  char a[128], b[128];
  raspI_elem_format(o->ir, got, a, sizeof a);
  raspI_elem_format(o->ir, want, b, sizeof b);
  fprintf(stderr, "rasp compile: order %s: input %ld, position %d: model %s, interpreter %s\n"
                  "  input (ids):", raspN_order_name(o->order[oi]), k, i, a, b);
  for (int j = 0; j < o->g->n; j++) fprintf(stderr, " %lld", (long long)tok[j]);
  fprintf(stderr, "\n");
}

int raspC_orders_run(raspC_orders *o, long k, const int64_t *tok, const rasp_elem *want,
                     rasp_error *err) {
  const raspG_model *g = o->g;
  int n = g->n, no = g->model.cfg.n_out;
  o->tokens[0] = g->model.cfg.bos_token;
  for (int i = 0; i < n; i++) o->tokens[i + 1] = (int)tok[i];
  o->done++;
  for (int oi = 0; oi < o->norders; oi++) {
    if (!raspN_ofwd_run(o->fwd[oi], o->tokens, n + 1, o->logits, err)) return 0;
    for (int i = 0; i < n; i++) {
      const double *row = o->logits + (size_t)(i + 1) * no;
      int best = 0;
      for (int j = 1; j < g->n_out; j++)
        if (row[j] > row[best]) best = j;
      rasp_elem got = g->out_vals[best];
      if (got.num != want[i].num || got.den != want[i].den) {
        if (o->bad[oi] < 3) order_mismatch(o, oi, k, i, tok, got, want[i]);
        o->bad[oi]++;
        break;
      }
    }
  }
  return 1;
}

int raspC_orders_summary(const raspC_orders *o, FILE *out) {
  int failed = 0;
  for (int oi = 0; oi < o->norders; oi++) {
    int f64 = o->order[oi] == RASPN_ORD_F64, sdpa = o->order[oi] == RASPN_ORD_SDPA;
    fprintf(out, "check order %s: %ld/%ld inputs agree with the interpreter", raspN_order_name(o->order[oi]),
            o->done - o->bad[oi], o->done);
    if (f64 && o->f32_only)
      fprintf(out, " (a float32-only model: STEM.json's layout.arithmetic is [\"float32\"], and "
                   "the loaders refuse float64)");
    if (sdpa && o->no_sdpa)
      fprintf(out, " (not an sdpa model: STEM.json's layout.attention.formulas does not list "
                   "\"sdpa\"; compiled with --no-sdpa)");
    fprintf(out, "\n");
    if (o->bad[oi] && !(f64 && o->f32_only) && !(sdpa && o->no_sdpa)) failed = 1;
  }
  return failed;
}
