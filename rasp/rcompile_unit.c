/*
** rcompile_unit.c -- the compiler's elements, units and views.
**
** The vocabulary every other compiler file speaks: a total order on
** elements, a unit table that grows as plan() creates units, views (a
** unit plus a table of a node's value per unit value), the evaluator's
** element arithmetic as the value sets need it, and views read as numbers:
** linear forms over the residual (lf_build, lf_write) and the predicates
** that choose between one-hot and numerical encodings (need_cat,
** need_num).
*/
#include "rcompile_int.h"

/* ---- elements ----------------------------------------------------------- */

/* A total order that tells True from 1 (sets must keep both). */
int raspG_ecmp(rasp_elem a, rasp_elem b) {
  int c = raspI_elem_cmp(a, b);
  if (c) return c;
  if (a.den != b.den) return a.den < b.den ? -1 : 1;
  return a.num < b.num ? -1 : a.num > b.num;
}
static int ecmp_q(const void *a, const void *b) {
  return raspG_ecmp(*(const rasp_elem *)a, *(const rasp_elem *)b);
}
int raspG_cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int raspG_uniq(rasp_elem *v, int n) {
  qsort(v, (size_t)n, sizeof *v, ecmp_q);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (!m || raspG_ecmp(v[m - 1], v[i])) v[m++] = v[i];
  return m;
}
int raspG_find(const rasp_elem *v, int n, rasp_elem x) {
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2, c = raspG_ecmp(v[mid], x);
    if (!c) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* A program function's call failed with e while value sets were computed.
** A value it refuses (an assertion, a division by zero) is one the program
** never produces, and is dropped by the caller; a function that is not
** pure, or a limit, fails the compile (plan reads g->fatal). */
static void callback_failed(gc *g, const rasp_error *e) {
  if ((e->code == RASP_E_IMPURE || e->code == RASP_E_LIMIT || e->code == RASP_E_INTERRUPTED) &&
      !g->fatal.set)
    g->fatal = *e;
}

/* Evaluates element-wise node nd on args (its operands' values). */
int raspG_eval_elem(gc *g, const rasp_ir_node *nd, const rasp_elem *a, rasp_elem *out) {
  rasp_error e = {0};
  switch (nd->op) {
  case RASP_OP_UNARY: return raspI_elem_unop((rasp_unop)nd->aux, a[0], out, &e);
  case RASP_OP_BINARY: return raspI_elem_binop((rasp_binop)nd->aux, a[0], a[1], out, &e);
  case RASP_OP_WHERE: *out = raspI_elem_truth(a[0]) ? a[1] : a[2]; return 1;
  case RASP_OP_MAP:
  case RASP_OP_SEQMAP: {
    if (!g->ir->call) return 0;
    rasp_elem args[2] = {a[0], nd->op == RASP_OP_SEQMAP ? a[1] : a[0]};
    if (!g->ir->call(g->ir->user, nd->fn, nd->op == RASP_OP_SEQMAP ? 2 : 1, args, out, &e)) {
      callback_failed(g, &e);
      return 0;
    }
    if (nd->op == RASP_OP_SEQMAP) *out = raspI_elem_trunc(*out);
    return 1;
  }
  default: return 0;
  }
}

/* Predicate semantics are raspF_pred_holds's (rfacts.h, the one copy);
** only a custom predicate, which that leaves to the caller, runs here. */
int raspG_pred_holds(gc *g, const rasp_ir_node *nd, rasp_elem k, rasp_elem q) {
  int r = raspF_pred_holds((rasp_pred)nd->aux, k, q);
  if (r >= 0 || nd->aux != RASP_PRED_CUSTOM) return r > 0;
  rasp_elem args[2] = {k, q}, out;
  rasp_error e = {0};
  if (!g->ir->call || !g->ir->call(g->ir->user, nd->fn, 2, args, &out, &e)) {
    callback_failed(g, &e);
    return 0;
  }
  return raspI_elem_truth(out);
}

/* ---- units and views ---------------------------------------------------- */

int raspG_new_unit(gc *g, int kind, int cat, rasp_elem *vals, int nvals, int node) {
  RASP_GROW(g->u, g->capu, g->nu + 1);
  unit *u = &g->u[g->nu];
  memset(u, 0, sizeof *u);
  u->kind = kind;
  u->cat = cat;
  u->vals = vals;
  u->nvals = nvals;
  u->dim = -1;
  u->node = node;
  u->selnode = -1;
  u->mnode = -1;
  u->alias = -1;
  g->decoded = raspM_realloc(g->decoded, sizeof(int) * (size_t)(g->nu + 1));
  g->decoded[g->nu] = -1;
  return g->nu++;
}

/* A head unit: its mode, the selector it reads and (aggregates) the view of
** the values it moves and the default of an empty selection. */
int raspG_new_head(gc *g, int cat, rasp_elem *vals, int nvals, int node, int hmode,
                   int selnode, const view *hv, rasp_elem dflt) {
  int uid = raspG_new_unit(g, U_HEAD, cat, vals, nvals, node);
  g->u[uid].hmode = hmode;
  g->u[uid].selnode = selnode;
  if (hv) g->u[uid].hv = *hv;
  g->u[uid].dflt = dflt;
  return uid;
}

/* A quantized width's value at width w: QW_B + qv fl32(1/(w + 1)), rounded
** to float32 as the attention's bias adds it (the grid there is 1):
** exactly the integer the residual holds when the head's softmax gives
** BOS fl32(1/(w + 1)) (prove checks when it does). */
int64_t raspG_qwidth_value(double qv, int w) {
  volatile float p = 1.0f / (float)(w + 1);
  volatile float o = (float)qv * p; /* a power of two: exact */
  volatile float r = (float)QW_B + o;
  return (int64_t)r;
}

/* The BOS weight qv a width node id (widths wlo..n) is quantized with, or
** 0 for the classic 1/(w + 1): proof-driven fp32 only, unless the proof
** made it classic (FORCE_CLASSIC).  qv is the smallest power of two at
** which the values of adjacent widths stay apart; at most 2^22. */
double raspG_qwidth_scale(const gc *g, int id, int wlo) {
  if (!raspG_proof_driven(g) || (g->force && (g->force[id] & FORCE_CLASSIC))) return 0;
  for (double qv = 4; qv <= ldexp(1, 22); qv *= 2) {
    int apart = 1;
    for (int w = wlo; w < g->n && apart; w++) apart = raspG_qwidth_value(qv, w) > raspG_qwidth_value(qv, w + 1);
    if (apart) return qv;
  }
  return 0;
}

void raspG_view_alloc(gc *g, view *v, int unit_id) {
  v->unit = unit_id;
  v->nv = g->u[unit_id].nvals;
  v->val = raspM_alloc(sizeof(rasp_elem) * (size_t)(v->nv ? v->nv : 1));
  v->ok = raspM_alloc((size_t)(v->nv ? v->nv : 1));
}
void raspG_view_free(view *v) {
  raspM_free(v->val);
  raspM_free(v->ok);
  memset(v, 0, sizeof *v);
}
void raspG_view_copy(gc *g, view *dst, const view *src) {
  raspG_view_alloc(g, dst, src->unit);
  memcpy(dst->val, src->val, sizeof(rasp_elem) * (size_t)src->nv);
  memcpy(dst->ok, src->ok, (size_t)src->nv);
}
void raspG_view_identity(gc *g, view *v, int unit_id) {
  raspG_view_alloc(g, v, unit_id);
  for (int i = 0; i < v->nv; i++) {
    v->val[i] = g->u[unit_id].vals[i];
    v->ok[i] = 1;
  }
}
/* The distinct values a view takes; malloc'd, sorted. */
rasp_elem *raspG_view_image(const view *v, int *count) {
  rasp_elem *r = raspM_alloc(sizeof(rasp_elem) * (size_t)(v->nv + 1));
  int m = 0;
  for (int i = 0; i < v->nv; i++)
    if (v->ok[i]) r[m++] = v->val[i];
  *count = raspG_uniq(r, m);
  return r;
}

/* A unit holding view v's values (an MLP decode): categorical, or (num) an
** integer with its square (x, x^2); memoised. */
static int decode_unit(gc *g, const view *v, int node, int num) {
  for (int i = 0; i < g->nu; i++) {
    const unit *d = &g->u[i];
    if (d->kind == U_MLP && d->mkind == M_DECODE && d->cat == !num && d->mv[0].unit == v->unit &&
        !memcmp(d->mv[0].ok, v->ok, (size_t)v->nv)) {
      int same = 1;
      for (int a = 0; a < v->nv && same; a++)
        same = !v->ok[a] || !raspG_ecmp(d->mv[0].val[a], v->val[a]);
      if (same) return i;
    }
  }
  int cnt;
  rasp_elem *img = raspG_view_image(v, &cnt);
  int id = raspG_new_unit(g, U_MLP, !num, img, cnt, node);
  g->u[id].mkind = M_DECODE;
  g->u[id].sq = num;
  raspG_view_copy(g, &g->u[id].mv[0], v);
  g->u[id].nmv = 1;
  return id;
}

/* Makes v read a categorical unit (decoding a numerical one). */
void raspG_need_cat(gc *g, view *v, int node) {
  if (g->u[v->unit].cat) return;
  int id = decode_unit(g, v, node, 0);
  raspG_view_free(v);
  raspG_view_identity(g, v, id);
}

/* ---- numbers ------------------------------------------------------------
** A view read as a number is a linear form over residual dimensions: a
** categorical unit through its table (sum over values of value * one-hot),
** a squared numerical unit (x, x^2) through an affine view a x + b, whose
** square is a^2 x^2 + 2ab x + b^2 (b on ONE).  Both are 0 at BOS. */

/* The fact of view v of node id: the kinds and [lo, hi] of its possible
** values, within the node's fact (rfacts.h) -- the exact set refines it
** where the transfer function cannot see (a map's table, the means an
** aggregate can take).  id < 0: the set's alone. */
raspF_value raspG_view_fact(const gc *g, const view *v, int id) {
  raspF_value f = {0, INT64_MAX, INT64_MIN};
  for (int a = 0; a < v->nv; a++) {
    if (!v->ok[a]) continue;
    raspF_value e = raspF_elem_value(v->val[a]);
    f.kind |= e.kind;
    if (e.kind & RASPF_K_NUM) {
      f.lo = e.lo < f.lo ? e.lo : f.lo;
      f.hi = e.hi > f.hi ? e.hi : f.hi;
    }
  }
  return id >= 0 && g->fact ? raspF_meet(f, g->fact[id]) : f;
}

static void lf_add(lform *f, int u, int off, double w) {
  if (w != 0 && f->n < 8) {
    f->u[f->n] = u;
    f->off[f->n] = off;
    f->w[f->n++] = w;
  }
}

/* The form of (v - sh) (sq = 0) or (v - sh)^2 (sq = 1), with the range of
** its values; 0 when v cannot be read as an integer this way. */
int raspG_lf_build(gc *g, const view *v, int sq, double sh, lform *f, double *lo, double *hi) {
  const unit *u = &g->u[v->unit];
  if (!fact_int(raspG_view_fact(g, v, -1))) return 0;
  int any = 0;
  for (int a = 0; a < v->nv; a++) {
    if (!v->ok[a]) continue;
    double x = dval(v->val[a]) - sh, w = sq ? x * x : x;
    if (!any || w < *lo) *lo = w;
    if (!any || w > *hi) *hi = w;
    any = 1;
  }
  if (!any) return 0;
  memset(f, 0, sizeof *f);
  f->sq = sq;
  f->sh = sh;
  if (u->cat) {
    f->cat = v;
    return 1;
  }
  double A, B;
  if (!u->sq || !raspG_view_affine(g, v, &A, &B)) return 0;
  int one = 2; /* the ONE unit is always unit 2 */
  B -= sh;
  if (!sq) {
    lf_add(f, v->unit, 0, A);
    lf_add(f, one, 0, B);
  } else {
    lf_add(f, v->unit, 1, A * A);
    lf_add(f, v->unit, 0, 2 * A * B);
    lf_add(f, one, 0, B * B);
  }
  return 1;
}
int raspG_lf_ok(gc *g, const view *v) {
  lform f;
  double lo, hi;
  return raspG_lf_build(g, v, 0, 0, &f, &lo, &hi);
}

/* Makes v read as an integer form (lf_ok) where it can: a view of a
** numerical unit without its square (a width, a mean, a sum) taking more
** than NUMMIN integer values is decoded to (x, x^2) -- the categorical
** decode's steps, weighted by the change of x and of x^2 (two output
** dimensions, not one per value).  node: the view's IR node, whose forcing
** (a fallback) keeps the categorical decode.  Returns whether v is lf_ok. */
int raspG_need_num(gc *g, view *v, int node) {
  if (raspG_lf_ok(g, v)) return 1;
  const unit *s = &g->u[v->unit];
  if (s->cat || s->sq || forced(g, node) || !fact_int(raspG_view_fact(g, v, node))) return 0;
  int cnt;
  raspM_free(raspG_view_image(v, &cnt));
  if (cnt <= NUMMIN) return 0;
  int id = decode_unit(g, v, node, 1);
  raspG_view_free(v);
  raspG_view_identity(g, v, id);
  return raspG_lf_ok(g, v);
}

/* Adds coef * form to column col of a weight matrix (rows = residual
** dimensions, ld = row length). */
void raspG_lf_write(gc *g, const lform *f, float *W, int ld, int col, double coef) {
  if (f->cat) {
    const view *v = f->cat;
    int d0 = g->u[v->unit].dim;
    for (int a = 0; a < v->nv; a++) {
      if (!v->ok[a]) continue;
      double x = dval(v->val[a]) - f->sh, w = f->sq ? x * x : x;
      if (w != 0) W[(size_t)(d0 + a) * ld + col] += (float)(coef * w);
    }
    return;
  }
  for (int i = 0; i < f->n; i++)
    W[(size_t)(g->u[f->u[i]].dim + f->off[i]) * ld + col] += (float)(coef * f->w[i]);
}

void raspG_gc_free(gc *g) {
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    raspM_free(u->vals);
    raspG_view_free(&u->hv);
    for (int k = 0; k < u->nmv; k++) raspG_view_free(&u->mv[k]);
    for (int k = 0; k < u->nc; k++) {
      raspM_free(u->c[k].t);
      raspM_free(u->c[k].ky);
      raspG_view_free(&u->c[k].kv);
      raspG_view_free(&u->c[k].qv);
    }
  }
  raspM_free(g->u);
  raspM_free(g->stock_bos);
  if (g->nv)
    for (int i = 0; i < g->ir->nnodes; i++) raspG_view_free(&g->nv[i]);
  raspM_free(g->nv);
  if (g->eqv)
    for (int i = 0; i < 2 * g->ir->nnodes; i++) raspG_view_free(&g->eqv[i]);
  raspM_free(g->eqv);
  raspM_free(g->decoded);
  raspM_free(g->numq);
  raspM_free(g->numeq);
  raspM_free(g->ornot);
  raspM_free(g->wsel);
  raspM_free(g->truth);
  raspM_free(g->fact);
  raspM_free(g->dist);
  raspF_moves_free(g->mscan);
  raspM_free(g->kinds);
}
