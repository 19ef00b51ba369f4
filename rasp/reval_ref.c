/*
** reval_ref.c -- the evaluator's reference kernel: heads by definition.
**
** Every fast kernel of reval_kern.c is an algorithm for the same thing:
** build the selection matrix, then for each query summarise the values of
** the keys it selects.  This file does exactly that and nothing cleverer,
** so that `RASP_EVAL_REFERENCE=1` (or raspE_set_reference) can run any
** program through it and the tests can require the same outputs as the
** fast paths.  It shares no code with them: the matrix is built here,
** cell by cell, from the one predicate semantics (raspF_pred_holds); the
** sums are exact GMP rationals rather than 128-bit counters; and the
** finishing rules (an empty selection gives the default, a mean of
** booleans that are all equal is that boolean, a mean of equal symbols is
** that symbol, max/min keep the first of equal values) are written out
** again below from the language's definition, not called from finish() or
** ffinish().
**
** The matrix of every selector is materialised, so the evaluator's limit on
** selector cells (raspE_set_max_selector_cells) applies to every head in
** this mode.  A combination evaluates both operands in full before combining
** them (custom predicates are called for every cell, as the fast matrix
** does), and a causal selector or combination is masked to k <= q after.
*/
#include <gmp.h>

#include "reval_int.h"
#include "rfacts.h"

/* The selection matrix of selector id for input b into m (row q, column k). */
static int ref_matrix(rasp_eval *ev, int id, int b, unsigned char *m, rasp_error *err) {
  const rasp_ir_node *nd = &ev->ir->nodes[id];
  int n = ev->n;
  size_t nn = (size_t)n * n;
  int causal = (nd->flags & RASP_CAUSAL) != 0;
  switch (nd->op) {
  case RASP_OP_SELECT: {
    const rasp_elem *keys = ev->val[nd->in[0]], *qs = ev->val[nd->in[1]];
    if (!keys || !qs) {
      raspI_seterr(err, nd, "the operands of this selector were not kept");
      return 0;
    }
    keys += (size_t)b * n;
    qs += (size_t)b * n;
    for (int q = 0; q < n; q++)
      for (int k = 0; k < n; k++) {
        int r = 0;
        if (!causal || k <= q) {
          r = raspF_pred_holds((rasp_pred)nd->aux, keys[k], qs[q]);
          if (r < 0 && nd->aux == RASP_PRED_CUSTOM) {
            rasp_elem args[2] = {keys[k], qs[q]}, v;
            if (!raspE_call_memo(ev, id, 2, args, &v, err)) return 0;
            r = raspI_elem_truth(v);
          } else if (r < 0) {
            raspI_seterr(err, nd, "unknown predicate %d", nd->aux);
            return 0;
          }
        }
        m[(size_t)q * n + k] = (unsigned char)r;
      }
    return 1;
  }
  case RASP_OP_SEL_NOT:
    if (!ref_matrix(ev, nd->in[0], b, m, err)) return 0;
    for (size_t i = 0; i < nn; i++) m[i] = !m[i];
    break;
  case RASP_OP_SEL_AND:
  case RASP_OP_SEL_OR: {
    if (!ref_matrix(ev, nd->in[0], b, m, err)) return 0;
    unsigned char *t = raspM_alloc(nn + 1);
    int ok = ref_matrix(ev, nd->in[1], b, t, err);
    for (size_t i = 0; ok && i < nn; i++) m[i] = nd->op == RASP_OP_SEL_AND ? m[i] && t[i] : m[i] || t[i];
    raspM_free(t);
    if (!ok) return 0;
    break;
  }
  default:
    raspI_seterr(err, nd, "'%s' is not a selector", raspI_op_name(nd->op));
    return 0;
  }
  if (causal)
    for (int q = 0; q < n; q++)
      for (int k = q + 1; k < n; k++) m[(size_t)q * n + k] = 0;
  return 1;
}

/* The rational value of a number or boolean. */
static void to_mpq(mpq_t r, rasp_elem e) {
  mpz_set_si(mpq_numref(r), (long)e.num);
  mpz_set_si(mpq_denref(r), e.den == RASP_DEN_BOOL ? 1 : (long)e.den);
  mpq_canonicalize(r);
}

static int overflow(const rasp_ir_node *nd, rasp_error *err) {
  raspI_seterr(err, nd, "integer overflow (value does not fit in 64 bits)");
  return 0;
}

/* The mean of the selected values sel[0..cnt) of vals, as the head's
** result (aggr_mean: truncated toward zero; aggregate: exact). */
static int ref_mean(const rasp_ir_node *nd, const rasp_elem *vals, const int *sel, int cnt,
                    rasp_elem *out, rasp_error *err) {
  int nsym = 0, nbool = 0, ntrue = 0;
  for (int i = 0; i < cnt; i++) {
    rasp_elem v = vals[sel[i]];
    nsym += v.den == RASP_DEN_SYM;
    nbool += v.den == RASP_DEN_BOOL;
    ntrue += v.den == RASP_DEN_BOOL && v.num;
  }
  if (nsym) { /* aggr_mean never gets here: its symbols are refused up front */
    for (int i = 0; i < cnt; i++)
      if (vals[sel[i]].den != RASP_DEN_SYM || vals[sel[i]].num != vals[sel[0]].num) {
        raspI_seterr(err, nd, "mean of symbols (the selected values differ)");
        return 0;
      }
    *out = vals[sel[0]];
    return 1;
  }
  if (nd->op == RASP_OP_AGGREGATE && nbool == cnt && (ntrue == 0 || ntrue == cnt)) {
    *out = (rasp_elem){ntrue ? 1 : 0, RASP_DEN_BOOL};
    return 1;
  }
  mpq_t sum, v;
  mpq_init(sum);
  mpq_init(v);
  for (int i = 0; i < cnt; i++) {
    to_mpq(v, vals[sel[i]]);
    mpq_add(sum, sum, v);
  }
  mpq_set_si(v, cnt, 1);
  mpq_div(sum, sum, v);
  int ok = 1;
  if (nd->op == RASP_OP_AGGR_MEAN) {
    mpz_tdiv_q(mpq_numref(v), mpq_numref(sum), mpq_denref(sum));
    ok = mpz_fits_slong_p(mpq_numref(v));
    if (ok) *out = (rasp_elem){mpz_get_si(mpq_numref(v)), 1};
  } else {
    ok = mpz_fits_slong_p(mpq_numref(sum)) && mpz_fits_slong_p(mpq_denref(sum));
    if (ok) *out = (rasp_elem){mpz_get_si(mpq_numref(sum)), mpz_get_si(mpq_denref(sum))};
  }
  mpq_clear(sum);
  mpq_clear(v);
  return ok ? 1 : overflow(nd, err);
}

int raspE_ref_head(rasp_eval *ev, int id, int b, const rasp_elem *vals, rasp_elem *out,
                   rasp_error *err) {
  const rasp_ir_node *nd = &ev->ir->nodes[id];
  int n = ev->n;
  if (!raspE_cells_ok(ev, &ev->ir->nodes[nd->in[0]], err)) return 0;
  unsigned char *m = raspM_alloc((size_t)n * n + 1);
  int *sel = raspM_alloc(((size_t)n + 1) * sizeof *sel);
  int ok = ref_matrix(ev, nd->in[0], b, m, err);
  for (int q = 0; ok && q < n; q++) {
    int cnt = 0;
    for (int k = 0; k < n; k++)
      if (m[(size_t)q * n + k]) sel[cnt++] = k;
    rasp_elem *o = &out[q];
    switch (nd->op) {
    case RASP_OP_SEL_WIDTH: *o = (rasp_elem){cnt, 1}; break;
    case RASP_OP_AGGR_MAX:
    case RASP_OP_AGGR_MIN: {
      if (!cnt) {
        *o = nd->c;
        break;
      }
      int want = nd->op == RASP_OP_AGGR_MAX ? 1 : -1, best = sel[0];
      for (int i = 1; i < cnt; i++) /* strictly better: the first of equals stays */
        if (raspI_elem_cmp(vals[sel[i]], vals[best]) * want > 0) best = sel[i];
      *o = vals[best];
      break;
    }
    case RASP_OP_AGGR_MEAN:
      if (!cnt) *o = raspI_elem_trunc(nd->c);
      else ok = ref_mean(nd, vals, sel, cnt, o, err);
      break;
    case RASP_OP_AGGREGATE:
      if (!cnt) *o = nd->c;
      else ok = ref_mean(nd, vals, sel, cnt, o, err);
      break;
    default:
      raspI_seterr(err, nd, "internal error: '%s' is not a head", raspI_op_name(nd->op));
      ok = 0;
    }
  }
  raspM_free(m);
  raspM_free(sel);
  return ok;
}
