/*
** reval_matrix.c -- materialised selectors: the byte matrix of a select
** for one input, which the heads fall back to where the selector has no
** structure a kernel of reval_kern.c exploits (custom predicates, causal
** comparisons, and/or/not combinations), and which the API's selector
** view (reval.c) returns.
**
** The matrix is n x n bytes, m[q * n + k] = 1 when query q selects key
** k, within the evaluator's max_selector_cells (raspE_cells_ok, which
** the reference kernel checks too).  A select is built row by row, with a
** vectorisable compare per row where the keys and queries are int-like
** and the predicate a built-in one, else through the predicate (a custom
** one through the memoised callback); select_and, select_or and
** select_not combine their operands' matrices, and a causal combination
** is masked to k <= q after combining (rcausal.h).
*/
#include "reval_int.h"
#include "rfacts.h"

int raspE_cells_ok(rasp_eval *ev, const rasp_ir_node *sel, rasp_error *err) {
  size_t n = (size_t)ev->n;
  if (n && n > ev->max_cells / n) {
    raspI_seterr(err, sel,
              "selector of %d x %d exceeds the limit of %zu cells", ev->n,
              ev->n, ev->max_cells);
    return 0;
  }
  return 1;
}

/* The predicate of select id on one key and query (rfacts.h); a custom one
** through the memoised callback. */
static int pred_holds(rasp_eval *ev, int id, rasp_pred p, rasp_elem key,
                      rasp_elem query, int *res, rasp_error *err) {
  int r = raspF_pred_holds(p, key, query);
  if (r >= 0) {
    *res = r;
    return 1;
  }
  if (p != RASP_PRED_CUSTOM) {
    raspI_seterr(err, &ev->ir->nodes[id], "unknown predicate %d", (int)p);
    return 0;
  }
  rasp_elem args[2] = {key, query}, v;
  if (!raspE_call_memo(ev, id, 2, args, &v, err)) return 0;
  *res = raspI_elem_truth(v);
  return 1;
}

#define ROW_LOOP(EXPR)                                                         \
  for (int k = 0; k < lim; k++) row[k] = (unsigned char)(EXPR);

/* Rows of a select on int-like keys and queries: plain compares of num. */
static void select_rows_int(rasp_eval *ev, const rasp_ir_node *nd,
                            const rasp_elem *keys, const rasp_elem *qs,
                            unsigned char *m) {
  int n = ev->n, causal = (nd->flags & RASP_CAUSAL) != 0;
  int64_t *kk = scratch(ev, SC_KK, ((size_t)n + 1) * sizeof *kk);
  for (int k = 0; k < n; k++) kk[k] = keys[k].num;
  for (int q = 0; q < n; q++) {
    unsigned char *row = m + (size_t)q * n;
    int64_t qv = qs[q].num;
    int lim = causal ? q + 1 : n;
    switch ((rasp_pred)nd->aux) {
    case RASP_PRED_EQ: ROW_LOOP(kk[k] == qv) break;
    case RASP_PRED_NE: ROW_LOOP(kk[k] != qv) break;
    case RASP_PRED_LT: ROW_LOOP(kk[k] < qv) break;
    case RASP_PRED_LE: ROW_LOOP(kk[k] <= qv) break;
    case RASP_PRED_GT: ROW_LOOP(kk[k] > qv) break;
    case RASP_PRED_GE: ROW_LOOP(kk[k] >= qv) break;
    case RASP_PRED_TRUE: memset(row, 1, (size_t)lim); break;
    default: memset(row, 0, (size_t)lim); break;
    }
    if (lim < n) memset(row + lim, 0, (size_t)(n - lim));
  }
}

/* A causal combination of selectors keeps only keys k <= q of the combined
** pattern (rcausal.h): ~causal(A) selects no later key. */
static void mask_causal(const rasp_ir_node *nd, int n, unsigned char *m) {
  if (!(nd->flags & RASP_CAUSAL)) return;
  for (int q = 0; q + 1 < n; q++) memset(m + (size_t)q * n + q + 1, 0, (size_t)(n - q - 1));
}

/* Fills m (n*n, row q, column k) with selector id for input b.  depth picks
** the scratch matrix for the operands of and/or. */
int raspE_build_matrix(rasp_eval *ev, int id, int b, unsigned char *m,
                        int depth, rasp_error *err) {
  const rasp_ir_node *nd = &ev->ir->nodes[id];
  int n = ev->n;
  size_t nn = (size_t)n * n;
  switch (nd->op) {
  case RASP_OP_SELECT: {
    const rasp_elem *keys = ev->val[nd->in[0]], *qs = ev->val[nd->in[1]];
    if (!keys || !qs) {
      raspI_seterr(err, nd, "the operands of this selector were not kept");
      return 0;
    }
    keys += (size_t)b * n;
    qs += (size_t)b * n;
    if (nd->aux != RASP_PRED_CUSTOM && INTLIKE(ev->kind[nd->in[0]]) &&
        INTLIKE(ev->kind[nd->in[1]])) {
      select_rows_int(ev, nd, keys, qs, m);
      return 1;
    }
    int causal = (nd->flags & RASP_CAUSAL) != 0;
    for (int q = 0; q < n; q++)
      for (int k = 0; k < n; k++) {
        int r = 0;
        if (!causal || k <= q)
          if (!pred_holds(ev, id, (rasp_pred)nd->aux, keys[k], qs[q], &r, err))
            return 0;
        m[(size_t)q * n + k] = (unsigned char)r;
      }
    return 1;
  }
  case RASP_OP_SEL_NOT:
    if (!raspE_build_matrix(ev, nd->in[0], b, m, depth, err)) return 0;
    for (size_t i = 0; i < nn; i++) m[i] ^= 1;
    mask_causal(nd, n, m);
    return 1;
  case RASP_OP_SEL_AND:
  case RASP_OP_SEL_OR: {
    if (!raspE_build_matrix(ev, nd->in[0], b, m, depth, err)) return 0;
    int slot = SC_MAT0 + depth + 1;
    unsigned char *t = slot < SC__COUNT ? scratch(ev, slot, nn + 1)
                                        : raspM_alloc(nn + 1);
    int ok = raspE_build_matrix(ev, nd->in[1], b, t, depth + 1, err);
    if (ok) {
      if (nd->op == RASP_OP_SEL_AND)
        for (size_t i = 0; i < nn; i++) m[i] &= t[i];
      else
        for (size_t i = 0; i < nn; i++) m[i] |= t[i];
      mask_causal(nd, n, m);
    }
    if (slot >= SC__COUNT) raspM_free(t);
    return ok;
  }
  default: break;
  }
  raspI_seterr(err, nd, "'%s' is not a selector", raspI_op_name(nd->op));
  return 0;
}
