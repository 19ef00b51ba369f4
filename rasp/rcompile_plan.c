/*
** rcompile_plan.c -- the planner: which IR node becomes which unit.
**
** From the value sets of means and the selectors' components to plan(),
** which walks the first output's cone and gives every live node a view or
** a unit (rcompile.c's essay, "Units", "Views", "Heads"), then schedules
** them (rcompile_sched.c).
*/
#include "rcompile_int.h"

/* ---- value sets of averaging heads ------------------------------------- */

static int64_t gcd64(int64_t a, int64_t b) {
  return (int64_t)raspI_gcd_u64(a < 0 ? 0 - (uint64_t)a : (uint64_t)a,
                                b < 0 ? 0 - (uint64_t)b : (uint64_t)b);
}

/* Every mean of 1..n values drawn (with repetition) from img, plus dflt.
** Works on integers over the common denominator with a bitset of sums. */
static rasp_elem *mean_set(gc *g, const rasp_elem *img, int cnt, rasp_elem dflt, int *count) {
  int64_t D = 1;
  for (int i = 0; i < cnt; i++) {
    int64_t d = img[i].den > 0 ? img[i].den : 1;
    D = D / gcd64(D, d) * d;
    if (D > 1000000) return NULL;
  }
  int64_t *s = raspM_alloc(sizeof(int64_t) * (size_t)(cnt ? cnt : 1));
  int64_t lo = 0, hi = 0;
  for (int i = 0; i < cnt; i++) {
    int64_t den = img[i].den > 0 ? img[i].den : 1;
    s[i] = img[i].num * (D / den);
    if (!i || s[i] < lo) lo = s[i];
    if (!i || s[i] > hi) hi = s[i];
  }
  int64_t range = hi - lo;
  if (range * g->n > 50000000 / (cnt ? cnt : 1)) {
    raspM_free(s);
    return NULL;
  }
  size_t width = (size_t)(range * g->n + 1);
  unsigned char *cur = raspM_alloc(width), *nxt = raspM_alloc(width);
  cur[0] = 1; /* offsets from w*lo */
  int cap = 1024, m = 0;
  rasp_elem *out = raspM_alloc(sizeof(rasp_elem) * (size_t)cap);
  for (int w = 1; w <= g->n; w++) {
    memset(nxt, 0, width);
    size_t top = (size_t)(range * (w - 1));
    for (size_t o = 0; o <= top; o++)
      if (cur[o])
        for (int i = 0; i < cnt; i++) nxt[o + (size_t)(s[i] - lo)] = 1;
    unsigned char *t = cur;
    cur = nxt;
    nxt = t;
    for (size_t o = 0; o <= (size_t)(range * w); o++)
      if (cur[o]) {
        int64_t num = (int64_t)o + lo * w, den = D * w, c = gcd64(num, den);
        if (c > 1) {
          num /= c;
          den /= c;
        }
        if (m == cap) {
          cap *= 2;
          out = raspM_realloc(out, sizeof(rasp_elem) * (size_t)cap);
        }
        out[m++] = (rasp_elem){num, den};
      }
    if (m > 4 * MAXVALS) m = raspG_uniq(out, m);
    if (m > MAXVALS) break;
  }
  raspM_free(cur);
  raspM_free(nxt);
  raspM_free(s);
  out = raspM_realloc(out, sizeof(rasp_elem) * (size_t)(m + 1));
  out[m++] = dflt;
  m = raspG_uniq(out, m);
  if (m > MAXVALS) {
    raspM_free(out);
    return NULL;
  }
  *count = m;
  return out;
}

/* ---- selectors ---------------------------------------------------------- */

/* Aggregate id's move fact (rfacts.h), from the kinds of the value sets
** planned so far: nodes are planned in order, so every key it reads has its
** view (a node that is not live has none: its fact's kinds). */
static int move_fact(gc *g, int id) {
  for (; g->kdone < id; g->kdone++) {
    int i = g->kdone;
    g->kinds[i] = g->nv[i].val ? raspG_view_fact(g, &g->nv[i], i).kind : g->fact[i].kind;
  }
  return raspF_move(g->mscan, id, g->kinds);
}

/* The key and query units a selector tree reads, if it reads one of each
** (ONE aside); 0 otherwise. */
static int sel_units(gc *g, int id, int *ku, int *qu) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  if (nd->op == RASP_OP_SELECT) {
    if (g->numeq[id]) return 0;
    int k = unit_of(g, nd->in[0]), q = unit_of(g, nd->in[1]);
    if (g->u[k].kind != U_ONE) {
      if (*ku >= 0 && *ku != k) return 0;
      *ku = k;
    }
    if (g->u[q].kind != U_ONE) {
      if (*qu >= 0 && *qu != q) return 0;
      *qu = q;
    }
    if (!g->causal_model && !g->raw && (nd->flags & RASP_CAUSAL)) return 0;
    return 1;
  }
  for (int i = 0; i < nd->nin; i++)
    if (!sel_units(g, nd->in[i], ku, qu)) return 0;
  return 1;
}

static int one_unit(gc *g) {
  for (int i = 0; i < g->nu; i++)
    if (g->u[i].kind == U_ONE) return i;
  return -1;
}
static int idx_unit(gc *g) {
  for (int i = 0; i < g->nu; i++)
    if (g->u[i].kind == U_IDX) return i;
  return -1;
}

/* Selector tree value at key value index a (of unit ku) and query b. */
static int sel_eval(gc *g, int id, int ku, int a, int qu, int b) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  switch (nd->op) {
  case RASP_OP_SELECT: {
    const view *kv = &g->nv[nd->in[0]], *qv = &g->nv[nd->in[1]];
    int ka = kv->unit == ku ? a : 0, qb = qv->unit == qu ? b : 0;
    if (!kv->ok[ka] || !qv->ok[qb]) return 0;
    return raspG_pred_holds(g, nd, kv->val[ka], qv->val[qb]);
  }
  case RASP_OP_SEL_NOT: return !sel_eval(g, nd->in[0], ku, a, qu, b);
  case RASP_OP_SEL_AND:
    return sel_eval(g, nd->in[0], ku, a, qu, b) && sel_eval(g, nd->in[1], ku, a, qu, b);
  case RASP_OP_SEL_OR:
    return sel_eval(g, nd->in[0], ku, a, qu, b) || sel_eval(g, nd->in[1], ku, a, qu, b);
  default: return 0;
  }
}

static void add_comp(gc *g, comp *c, int *nc, int ku, int qu, int id, int causal_idx) {
  int nk = g->u[ku].nvals, nq = g->u[qu].nvals;
  memset(&c[*nc], 0, sizeof c[*nc]);
  c[*nc].ku = ku;
  c[*nc].qu = qu;
  c[*nc].t = raspM_alloc((size_t)nk * (size_t)nq);
  for (int a = 0; a < nk; a++)
    for (int b = 0; b < nq; b++)
      c[*nc].t[(size_t)a * nq + b] =
          (unsigned char)(causal_idx ? dval(g->u[ku].vals[a]) <= dval(g->u[qu].vals[b])
                                     : sel_eval(g, id, ku, a, qu, b));
  (*nc)++;
}

/* Splits a selector into components. */
static int sel_comps(gc *g, int id, comp *c, int *nc) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  if (*nc >= MAXCOMPS - 1) {
    raspR_set(g->err, nd->pos, "compile: selector has too many parts");
    return 0;
  }
  int ku = -1, qu = -1;
  int one = one_unit(g);
  if (nd->op == RASP_OP_SELECT && g->numq[id]) {
    const view *kv = &g->nv[nd->in[0]], *qv = &g->nv[nd->in[1]];
    comp *cc = &c[(*nc)++];
    memset(cc, 0, sizeof *cc);
    cc->ku = kv->unit;
    cc->qu = qv->unit;
    cc->numq = 1;
    raspG_view_affine(g, qv, &cc->qa, &cc->qb);
    cc->ky = raspM_alloc(sizeof(double) * (size_t)kv->nv);
    for (int a = 0; a < kv->nv; a++) cc->ky[a] = kv->ok[a] ? dval(kv->val[a]) : 1e6;
    return 1;
  }
  if (!g->causal_model && !g->raw && (nd->flags & RASP_CAUSAL)) {
    /* the pattern without the mask (a causal combination is masked after
       combining: rcausal.h), then k <= q on the indices */
    g->raw = 1;
    int ok = sel_comps(g, id, c, nc);
    g->raw = 0;
    if (!ok) return 0;
    int ix = idx_unit(g);
    g->u[ix].used = 1;
    add_comp(g, c, nc, ix, ix, id, 1);
    return 1;
  }
  if (nd->op == RASP_OP_SELECT && g->numeq[id]) {
    comp *cc = &c[(*nc)++];
    memset(cc, 0, sizeof *cc);
    cc->numeq = 1;
    cc->sel = id;
    const view *ev = &g->eqv[2 * id];
    raspG_view_copy(g, &cc->kv, ev[0].val ? &ev[0] : &g->nv[nd->in[0]]);
    raspG_view_copy(g, &cc->qv, ev[1].val ? &ev[1] : &g->nv[nd->in[1]]);
    cc->ku = cc->kv.unit;
    cc->qu = cc->qv.unit;
    /* centred: the score's terms are as small as the values allow */
    double lo = 0, hi = 0, l2, h2;
    lform f;
    raspG_lf_build(g, &cc->kv, 0, 0, &f, &lo, &hi);
    raspG_lf_build(g, &cc->qv, 0, 0, &f, &l2, &h2);
    cc->sh = floor(((lo < l2 ? lo : l2) + (hi > h2 ? hi : h2)) / 2);
    return 1;
  }
  if (sel_units(g, id, &ku, &qu)) {
    if (ku < 0) ku = one;
    if (qu < 0) qu = one;
    add_comp(g, c, nc, ku, qu, id, 0);
    return 1;
  }
  if (nd->op == RASP_OP_SEL_AND)
    return sel_comps(g, nd->in[0], c, nc) && sel_comps(g, nd->in[1], c, nc);
  raspR_set(g->err, nd->pos,
            "compile: cannot realise this selector in one head (an or/not of selects "
            "reading different sequences)");
  return 0;
}

/* A table component that never holds for some query value (every key
** scores below the BOS column there, so the default or an empty width
** wins) makes every other component's entries at that query value
** irrelevant: they are cleared, which merges columns (a causal mask k <= q
** costs one column per query position, but a readout only needs the
** positions its equality can select at).  Likewise for key values. */
static void prune_comps(gc *g, comp *c, int nc) {
  for (int j = 0; j < nc; j++) {
    if (!c[j].t) continue;
    int nkj = g->u[c[j].ku].nvals, nqj = g->u[c[j].qu].nvals;
    for (int i = 0; i < nc; i++) {
      if (i == j || !c[i].t) continue;
      int nqi = g->u[c[i].qu].nvals;
      if (c[i].qu == c[j].qu)
        for (int b = 0; b < nqj; b++) {
          int zero = 1;
          for (int a = 0; a < nkj && zero; a++) zero = !c[j].t[(size_t)a * nqj + b];
          if (zero)
            for (int a = 0; a < g->u[c[i].ku].nvals; a++) c[i].t[(size_t)a * nqi + b] = 0;
        }
      if (c[i].ku == c[j].ku)
        for (int a = 0; a < nkj; a++) {
          int zero = 1;
          for (int b = 0; b < nqj && zero; b++) zero = !c[j].t[(size_t)a * nqj + b];
          if (zero) memset(c[i].t + (size_t)a * nqi, 0, (size_t)nqi);
        }
    }
  }
}

/* ---- planning ----------------------------------------------------------- */

/* Whether view v is raw * a + b of its (numerical) unit's raw values, with
** integer results. */
int raspG_view_affine(gc *g, const view *v, double *a, double *b) {
  const unit *u = &g->u[v->unit];
  int first = -1;
  *a = 1;
  *b = 0;
  for (int i = 0; i < v->nv; i++) {
    if (!v->ok[i]) continue;
    if (!is_num(v->val[i]) || v->val[i].den == RASP_DEN_BOOL || !is_num(u->vals[i])) return 0;
    if (v->val[i].den != 1) return 0;
    if (first < 0) first = i;
  }
  if (first < 0) return 0;
  int second = -1;
  for (int i = first + 1; i < v->nv && second < 0; i++)
    if (v->ok[i]) second = i;
  double x0 = dval(u->vals[first]), y0 = dval(v->val[first]);
  if (second >= 0) {
    double x1 = dval(u->vals[second]), y1 = dval(v->val[second]);
    *a = (y1 - y0) / (x1 - x0);
  }
  *b = y0 - *a * x0;
  for (int i = 0; i < v->nv; i++)
    if (v->ok[i] && fabs(*a * dval(u->vals[i]) + *b - dval(v->val[i])) > 1e-9) return 0;
  return 1;
}

/* A select realised with a numerical query: equality, not causal, the key
** a view of the indices (whose every value occurs in every input, so some
** key always matches and the default is never needed), the query an affine
** integer view of a numerical MLP unit whose values are all among the
** key's, and read only by aggregates.  Saves decoding the query. */
static int numq_ok(gc *g, int id) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  const view *kv = &g->nv[nd->in[0]], *qv = &g->nv[nd->in[1]];
  if (nd->aux != RASP_PRED_EQ || (nd->flags & RASP_CAUSAL)) return 0;
  if (g->u[kv->unit].kind != U_IDX) return 0;
  const unit *q = &g->u[qv->unit];
  if (q->cat || q->kind != U_MLP || q->mkind != M_SUM) return 0;
  double a, b;
  if (!raspG_view_affine(g, qv, &a, &b)) return 0;
  for (int i = 0; i < qv->nv; i++) {
    if (!qv->ok[i]) continue;
    int hit = 0;
    for (int k = 0; k < kv->nv && !hit; k++)
      hit = kv->ok[k] && is_num(kv->val[k]) && kv->val[k].den != RASP_DEN_BOOL &&
            raspI_elem_eq(kv->val[k], qv->val[i]);
    if (!hit) return 0;
  }
  for (int i = 0; i < g->ir->nnodes; i++) {
    const rasp_ir_node *r = &g->ir->nodes[i];
    for (int k = 0; k < r->nin; k++)
      if (r->in[k] == id && r->op != RASP_OP_AGGREGATE && r->op != RASP_OP_AGGR_MEAN) return 0;
  }
  return 1;
}

/* Whether unit uid's value can be off its integer by more than a move's
** leak: a need_num decode (its steps read a width or mean) or what moves or
** gates one.  Sources are planned before their readers, so come first. */
static int approx_unit(gc *g, int uid) {
  const unit *u = &g->u[uid];
  if (u->kind == U_MLP && u->mkind == M_DECODE) return !u->cat;
  if (u->kind == U_HEAD) return u->hmode == H_MOVE && approx_unit(g, u->hv.unit);
  if (u->kind != U_MLP || u->cat) return 0;
  for (int i = 0; i < u->nmv; i++)
    if (approx_unit(g, u->mv[i].unit)) return 1;
  return 0;
}

/* Marks the selects a sel_width reads (through and / or / not). */
static void mark_wsel(gc *g, int id) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  if (nd->op == RASP_OP_SELECT) g->wsel[id] = 1;
  else if (nd->op == RASP_OP_SEL_AND || nd->op == RASP_OP_SEL_OR || nd->op == RASP_OP_SEL_NOT)
    for (int i = 0; i < nd->nin; i++) mark_wsel(g, nd->in[i]);
}

/* A select realised as -(k - q)^2 (numeq): equality, not under an or / not
** (the score is a sum, not a 0/1 table), both sides readable as integers
** (lf_build), and either side a squared numerical unit or the one-hot
** table needing more than NUMMIN columns.  A side that is a width or mean
** of many values is decoded to (x, x^2) for it (need_num; g->eqv): three
** columns and two residual dimensions instead of a one-hot decode and a
** column per value.  Not for a select a sel_width reads: its selected keys
** must score alike to within a fraction of 1/(n+1)^2, which a decoded
** number's error (about 1e-2 in x^2 at n = 128) times the head's scale
** does not give (double_histogram at n = 128 was 346/1000). */
static int numeq_ok(gc *g, int id) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  if (nd->aux != RASP_PRED_EQ || g->ornot[id] || forced(g, id)) return 0;
  const view *kv = &g->nv[nd->in[0]], *qv = &g->nv[nd->in[1]];
  if (g->wsel[id] && (approx_unit(g, kv->unit) || approx_unit(g, qv->unit))) return 0;
  if (!raspG_lf_ok(g, kv) || !raspG_lf_ok(g, qv)) {
    if (g->wsel[id]) return 0;
    view k2, q2;
    raspG_view_copy(g, &k2, kv);
    raspG_view_copy(g, &q2, qv);
    if (raspG_need_num(g, &k2, nd->in[0]) && raspG_need_num(g, &q2, nd->in[1])) {
      g->eqv[2 * id] = k2;
      g->eqv[2 * id + 1] = q2;
      return 1;
    }
    raspG_view_free(&k2);
    raspG_view_free(&q2);
    return 0;
  }
  if (g->u[kv->unit].sq || g->u[qv->unit].sq) return 1;
  int nk, nq, common = 0;
  rasp_elem *ik = raspG_view_image(kv, &nk), *iq = raspG_view_image(qv, &nq);
  for (int i = 0; i < nk; i++) common += raspG_find(iq, nq, ik[i]) >= 0;
  raspM_free(ik);
  raspM_free(iq);
  return common > NUMMIN; /* large one-hot tables only: small ones train gently */
}

/* Marks the selects under an or / not (their pattern is a 0/1 table). */
static void mark_ornot(gc *g, int id, int under) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  if (nd->op == RASP_OP_SEL_OR || nd->op == RASP_OP_SEL_NOT) under = 1;
  if (nd->op == RASP_OP_SELECT) {
    if (under) g->ornot[id] = 1;
    return;
  }
  if (nd->op != RASP_OP_SEL_AND && nd->op != RASP_OP_SEL_OR && nd->op != RASP_OP_SEL_NOT) return;
  for (int i = 0; i < nd->nin; i++) mark_ornot(g, nd->in[i], under);
}

/* f(x, y) = G(x) + H(y) over integers: an element-wise node of two units
** that is a sum of functions of each (length - idx - 1) becomes one
** numerical dimension computed with |X| + |Y| hidden units at most,
** instead of a categorical table of |X| * |Y|. */
static int plan_sum(gc *g, int id, const rasp_ir_node *nd) {
  if ((nd->op != RASP_OP_BINARY && nd->op != RASP_OP_SEQMAP) || forced(g, id)) return 0;
  const view *x = &g->nv[nd->in[0]], *y = &g->nv[nd->in[1]];
  if (x->unit == y->unit || (long long)x->nv * y->nv > 4000000) return 0;
  if ((long long)x->nv * y->nv <= 64) return 0; /* a small table is as cheap */
  int a0 = -1, b0 = -1;
  for (int a = 0; a < x->nv && a0 < 0; a++)
    if (x->ok[a]) a0 = a;
  for (int b = 0; b < y->nv && b0 < 0; b++)
    if (y->ok[b]) b0 = b;
  if (a0 < 0 || b0 < 0) return 0;
  double *G = raspM_alloc(sizeof(double) * (size_t)x->nv), *H = raspM_alloc(sizeof(double) * (size_t)y->nv);
  int cap = 64, m = 0, ok = 1;
  rasp_elem *img = raspM_alloc(sizeof(rasp_elem) * (size_t)cap);
  rasp_elem r00;
  {
    rasp_elem args[2] = {x->val[a0], y->val[b0]};
    ok = raspG_eval_elem(g, nd, args, &r00) && r00.den == 1;
  }
  for (int a = 0; a < x->nv && ok; a++)
    for (int b = 0; b < y->nv && ok; b++) {
      if (!x->ok[a] || !y->ok[b]) continue;
      rasp_elem args[2] = {x->val[a], y->val[b]}, r;
      if (!raspG_eval_elem(g, nd, args, &r) || r.den != 1 || r.num > 100000000 || r.num < -100000000) {
        ok = 0;
        break;
      }
      if (b == b0) G[a] = (double)r.num;
      if (a == a0) H[b] = (double)r.num - (double)r00.num;
      if (b != b0 && a != a0) {
        /* checked once G[a] and H[b] are known: a0/b0 come first */
        if ((double)r.num != G[a] + H[b]) ok = 0;
      }
      RASP_GROW(img, cap, m + 1);
      img[m++] = r;
      if (m > 4 * MAXVALS) m = raspG_uniq(img, m);
    }
  if (!ok) {
    raspM_free(G);
    raspM_free(H);
    raspM_free(img);
    return 0;
  }
  m = raspG_uniq(img, m);
  int uid = raspG_new_unit(g, U_MLP, 0, img, m, id);
  unit *u = &g->u[uid];
  u->mkind = M_SUM;
  u->mnode = id;
  u->nmv = 2;
  raspG_view_copy(g, &u->mv[0], x);
  raspG_view_copy(g, &u->mv[1], y);
  for (int a = 0; a < x->nv; a++) u->mv[0].val[a] = (rasp_elem){(int64_t)(x->ok[a] ? G[a] : 0), 1};
  for (int b = 0; b < y->nv; b++) u->mv[1].val[b] = (rasp_elem){(int64_t)(y->ok[b] ? H[b] : 0), 1};
  raspM_free(G);
  raspM_free(H);
  raspG_view_identity(g, &g->nv[id], uid);
  return 1;
}

/* where(c, x, y) on numbers: (x, x^2) or (y, y^2) by big-M gating, a few
** hidden units, when x and y read as integers and the result has many
** values (or an operand is numerical already); a branch that is a width or
** mean of many values is decoded to (x, x^2) for it (need_num). */
static int plan_nwhere(gc *g, int id, const rasp_ir_node *nd) {
  if (nd->op != RASP_OP_WHERE || forced(g, id)) return 0;
  view xv, yv;
  raspG_view_copy(g, &xv, &g->nv[nd->in[1]]);
  raspG_view_copy(g, &yv, &g->nv[nd->in[2]]);
  const view *x = &xv, *y = &yv;
  if (!raspG_need_num(g, &xv, nd->in[1]) || !raspG_need_num(g, &yv, nd->in[2])) {
    raspG_view_free(&xv);
    raspG_view_free(&yv);
    return 0;
  }
  int nx, ny;
  rasp_elem *ix = raspG_view_image(x, &nx), *iy = raspG_view_image(y, &ny);
  ix = raspM_realloc(ix, sizeof(rasp_elem) * (size_t)(nx + ny + 1));
  memcpy(ix + nx, iy, sizeof(rasp_elem) * (size_t)ny);
  raspM_free(iy);
  int m = raspG_uniq(ix, nx + ny);
  if (m <= NUMMIN && !g->u[x->unit].sq && !g->u[y->unit].sq) {
    raspM_free(ix);
    raspG_view_free(&xv);
    raspG_view_free(&yv);
    return 0;
  }
  view c;
  raspG_view_copy(g, &c, &g->nv[nd->in[0]]);
  for (int a = 0; a < c.nv; a++) c.val[a] = (rasp_elem){raspI_elem_truth(c.val[a]), RASP_DEN_BOOL};
  int ctest = 0, swap = 0;
  double ct_a = 0, ct_b = 0;
  const unit *cu = &g->u[c.unit];
  if (cu->sq) {
    /* a condition that is one value, all but one, or a threshold of an
    ** integer x is tested in this MLP (no decode, no extra sublayer) */
    int nt = 0, nf = 0, vt = -1, vf = -1, ftrue = -1, lfalse = -1, ltrue = -1, ffalse = -1;
    for (int a = 0; a < c.nv; a++) {
      if (!c.ok[a] || !int_elem(cu->vals[a])) continue;
      if (c.val[a].num) {
        nt++, vt = a, ltrue = a;
        if (ftrue < 0) ftrue = a;
      } else {
        nf++, vf = a, lfalse = a;
        if (ffalse < 0) ffalse = a;
      }
    }
    int all = 1;
    for (int a = 0; a < c.nv; a++) all &= !c.ok[a] || int_elem(cu->vals[a]);
    if (all && nt && nf) {
      if (nt == 1) ctest = 1, ct_a = 1, ct_b = -dval(cu->vals[vt]);
      else if (nf == 1) ctest = 1, swap = 1, ct_a = 1, ct_b = -dval(cu->vals[vf]);
      else if (lfalse < ftrue) ctest = 2, ct_a = 1, ct_b = -dval(cu->vals[lfalse]);
      else if (ltrue < ffalse) ctest = 2, ct_a = -1, ct_b = dval(cu->vals[ffalse]);
    }
  }
  if (ctest) {
    /* exact in float32 only while every partial sum is an integer below
    ** 2^23: M |t| + M for the largest M (a square's range) and |t|;
    ** beyond that (large vocabularies) the condition is decoded first */
    double tmax = 0, mmax = 0, lo, hi;
    for (int a = 0; a < c.nv; a++)
      if (c.ok[a] && fabs(ct_a * dval(cu->vals[a]) + ct_b) > tmax)
        tmax = fabs(ct_a * dval(cu->vals[a]) + ct_b);
    const view *br[2] = {x, y};
    lform f;
    for (int b = 0; b < 2; b++)
      for (int col = 0; col < 2; col++)
        if (raspG_lf_build(g, br[b], col, 0, &f, &lo, &hi) && hi - lo + 1 > mmax) mmax = hi - lo + 1;
    if ((tmax + 2) * mmax >= 8388608.0) ctest = 0, swap = 0;
  }
  if (ctest) {
    int cunit = c.unit;
    raspG_view_free(&c);
    raspG_view_identity(g, &c, cunit);
  } else
    raspG_need_cat(g, &c, nd->in[0]);
  int uid = raspG_new_unit(g, U_MLP, 0, ix, m, id);
  unit *u = &g->u[uid];
  u->sq = 1;
  u->mkind = M_NWHERE;
  u->mnode = id;
  u->nmv = 3;
  u->mv[0] = c;
  u->ctest = ctest;
  u->ct_a = ct_a;
  u->ct_b = ct_b;
  u->mv[1] = swap ? yv : xv;
  u->mv[2] = swap ? xv : yv;
  raspG_view_identity(g, &g->nv[id], uid);
  return 1;
}

/* x == y, x < y, ... on integers where an operand is numerical: z = x - y
** is a linear form, and [z == 0] = ReLU(z+1) - 2 ReLU(z) + ReLU(z-1),
** [z >= 1] = ReLU(z) - ReLU(z-1): two or three hidden units and a
** two-valued (False, True) unit instead of decoding the operands. */
static int plan_ncmp(gc *g, int id, const rasp_ir_node *nd) {
  if (nd->op != RASP_OP_BINARY || forced(g, id)) return 0;
  switch ((rasp_binop)nd->aux) {
  case RASP_BIN_EQ: case RASP_BIN_NE: case RASP_BIN_LT: case RASP_BIN_LE: case RASP_BIN_GT:
  case RASP_BIN_GE: break;
  default: return 0;
  }
  const view *x = &g->nv[nd->in[0]], *y = &g->nv[nd->in[1]];
  if (!g->u[x->unit].sq && !g->u[y->unit].sq) return 0;
  if (!raspG_lf_ok(g, x) || !raspG_lf_ok(g, y)) return 0;
  rasp_elem *vals = raspM_alloc(sizeof(rasp_elem) * 2);
  vals[0] = (rasp_elem){0, RASP_DEN_BOOL};
  vals[1] = (rasp_elem){1, RASP_DEN_BOOL};
  int m = raspG_uniq(vals, 2);
  int uid = raspG_new_unit(g, U_MLP, 1, vals, m, id);
  unit *u = &g->u[uid];
  u->mkind = M_NCMP;
  u->mnode = id;
  u->nmv = 2;
  raspG_view_copy(g, &u->mv[0], x);
  raspG_view_copy(g, &u->mv[1], y);
  raspG_view_identity(g, &g->nv[id], uid);
  return 1;
}

/* Select id: through a numerical query (numq), as -(k - q)^2 (numeq), or
** over categorical key and query views.  Its columns are the head's
** (sel_comps); here only how its operands are read. */
static int plan_select(gc *g, int id, const rasp_ir_node *nd) {
  if (numq_ok(g, id)) {
    g->numq[id] = 1;
    raspG_need_cat(g, &g->nv[nd->in[0]], nd->in[0]);
    return 1;
  }
  if (numeq_ok(g, id)) {
    g->numeq[id] = 1;
    return 1;
  }
  for (int i = 0; i < 2; i++) raspG_need_cat(g, &g->nv[nd->in[i]], nd->in[i]);
  return 1;
}

/* An element-wise node of two or three units as a categorical MLP unit
** (M_WHERE, M_PAIR): its operands decoded, its image every combination of
** their values, and a where that may update its else-operand in place. */
static int plan_mlp(gc *g, int id, const rasp_ir_node *nd) {
  view *v = &g->nv[id];
  /* operands first, so that their decode units come before this one */
  view tmp[3];
  for (int i = 0; i < nd->nin; i++) {
    raspG_view_copy(g, &tmp[i], &g->nv[nd->in[i]]);
    if (nd->op == RASP_OP_WHERE && i == 0) /* only the truth of the condition matters */
      for (int a = 0; a < tmp[i].nv; a++)
        tmp[i].val[a] = (rasp_elem){raspI_elem_truth(tmp[i].val[a]), RASP_DEN_BOOL};
    raspG_need_cat(g, &tmp[i], nd->in[i]);
  }
  int uid = raspG_new_unit(g, U_MLP, 1, NULL, 0, id);
  unit *u = &g->u[uid];
  u->mkind = nd->op == RASP_OP_WHERE ? M_WHERE : M_PAIR;
  u->mnode = id;
  u->nmv = nd->nin;
  for (int i = 0; i < nd->nin; i++) u->mv[i] = tmp[i];
  /* the image: evaluate over every combination of the operand values */
  int cap = 64, m = 0;
  rasp_elem *img = raspM_alloc(sizeof(rasp_elem) * (size_t)cap);
  if (u->mkind == M_WHERE) {
    for (int br = 1; br <= 2; br++)
      for (int a = 0; a < u->mv[br].nv; a++)
        if (u->mv[br].ok[a]) {
          RASP_GROW(img, cap, m + 1);
          img[m++] = u->mv[br].val[a];
        }
  } else {
    const view *x = &u->mv[0], *y = &u->mv[1];
    if ((long long)x->nv * y->nv > 4000000) {
      raspR_set(g->err, nd->pos, "compile: %d x %d value pairs is too many", x->nv, y->nv);
      raspM_free(img);
      return 0;
    }
    for (int a = 0; a < x->nv; a++)
      for (int b = 0; b < y->nv; b++) {
        rasp_elem args[2] = {x->val[a], y->val[b]}, r;
        if (x->ok[a] && y->ok[b] && raspG_eval_elem(g, nd, args, &r)) {
          RASP_GROW(img, cap, m + 1);
          img[m++] = r;
          if (m > 4 * MAXVALS) m = raspG_uniq(img, m);
        }
      }
  }
  m = raspG_uniq(img, m);
  u->vals = img;
  u->nvals = m;
  if (u->mkind == M_WHERE) {
    /* where(c, x, y) over a y that nobody reads afterwards can update y's
    ** dimensions in place (decided after scheduling): it takes y's value
    ** list when its own values are among y's */
    const view *y = &u->mv[2];
    unit *Y = &g->u[y->unit];
    int ident = Y->cat && (Y->kind == U_MLP || Y->kind == U_HEAD);
    for (int a = 0; a < y->nv && ident; a++) ident = y->ok[a] && !raspG_ecmp(y->val[a], Y->vals[a]);
    for (int k = 0; k < m && ident; k++) ident = raspG_find(Y->vals, Y->nvals, img[k]) >= 0;
    if (ident) {
      u->vals = raspM_alloc(sizeof(rasp_elem) * (size_t)Y->nvals);
      memcpy(u->vals, Y->vals, sizeof(rasp_elem) * (size_t)Y->nvals);
      u->nvals = Y->nvals;
      u->alias = y->unit;
      raspM_free(img);
    }
  }
  raspG_view_identity(g, v, uid);
  return 1;
}

/* An element-wise node (unary, binary, where, map, seqmap): a view when it
** reads one unit, else a numerical sum, a numerical where, a numerical
** comparison or an MLP unit (plan_mlp). */
static int plan_map(gc *g, int id, const rasp_ir_node *nd) {
  view *v = &g->nv[id];
  int src = -1, one = one_unit(g);
  for (int i = 0; i < nd->nin; i++) {
    int uu = unit_of(g, nd->in[i]);
    if (uu == one) continue;
    if (src == -1) src = uu;
    else if (src != uu) src = -2;
  }
  if (src != -2) { /* one source: a view */
    if (src < 0) src = one;
    raspG_view_alloc(g, v, src);
    for (int a = 0; a < v->nv; a++) {
      rasp_elem args[3];
      int ok = 1;
      for (int i = 0; i < nd->nin; i++) {
        const view *o = &g->nv[nd->in[i]];
        int k = o->unit == src ? a : 0;
        ok &= o->ok[k];
        args[i] = o->val[k];
      }
      v->ok[a] = (unsigned char)(ok && raspG_eval_elem(g, nd, args, &v->val[a]));
    }
    return 1;
  }
  if (plan_sum(g, id, nd)) return 1;
  if (plan_nwhere(g, id, nd)) return 1;
  if (plan_ncmp(g, id, nd)) return 1;
  return plan_mlp(g, id, nd);
}

/* --ln stock: a width whose select compares every key with one query value
** (select(k, full(c), pred), causal) in a causal model, as a count.  A
** stock norm's rounding of the keys' features weighs a classic width's
** selected keys unequally by more than its decode allows (1/(w + 1) and
** 1/(w + 2) are close); this head reads no key feature in its scores.
** Every key scores 0 and BOS ln(n - i) at query position i (the query's
** gate reads the indices), so in real arithmetic each of the i + 1 visible
** keys weighs exactly 1/(n + 1) and BOS (n - i)/(n + 1); its value is the
** indicator pred(k, c) (a view of the keys' categorical unit) and BOS's 0,
** so it holds count/(n + 1): raw values a/(n + 1), a = 0..n, 1/(n + 1)
** apart.  1 planned, 0 not this kind. */
static int plan_count_width(gc *g, int id, const rasp_ir_node *nd, const rasp_ir_node *sn) {
  if (g->o->ln != RASPG_LN_STOCK || !g->causal_model || sn->op != RASP_OP_SELECT ||
      sn->aux == RASP_PRED_TRUE || !(sn->flags & RASP_CAUSAL))
    return 0;
  const view *qv = &g->nv[sn->in[1]];
  int nq = 0;
  rasp_elem c = {0, 1};
  for (int b = 0; b < qv->nv; b++)
    if (qv->ok[b]) {
      if (nq++ && raspG_ecmp(qv->val[b], c) != 0) return 0;
      c = qv->val[b];
    }
  if (!nq) return 0;
  view kv;
  raspG_view_copy(g, &kv, &g->nv[sn->in[0]]);
  raspG_need_cat(g, &kv, sn->in[0]);
  for (int a = 0; a < kv.nv; a++)
    if (kv.ok[a]) kv.val[a] = (rasp_elem){raspG_pred_holds(g, sn, kv.val[a], c) ? 1 : 0, 1};
  int n = g->n;
  rasp_elem *vals = raspM_alloc(sizeof(rasp_elem) * (size_t)(n + 1));
  for (int a = 0; a <= n; a++) { /* a/(n + 1) in lowest terms, ascending */
    int64_t d = gcd64(a, n + 1);
    vals[a] = (rasp_elem){a / d, (n + 1) / d};
  }
  int uid = raspG_new_head(g, 0, vals, n + 1, id, H_NUM, nd->in[0], &kv, (rasp_elem){0, 1});
  g->u[uid].cw = 1;
  view *v = &g->nv[id];
  raspG_view_alloc(g, v, uid);
  for (int a = 0; a <= n; a++) v->val[a] = (rasp_elem){a, 1}, v->ok[a] = 1;
  return 1;
}

/* --ln stock: a width whose every reader reads only its truth (g->truth:
** where(w, x, y) as the condition), as whether any key is selected: a head
** that moves the constant True from every selected key, False (BOS's
** default) where none is.  Every selected key holds the same value, so
** however unequally rounding weighs them the head's one-hot is exact to its
** leak, as a move's is: no fine reading of key features.  The node's view
** gives 0 and 1 for False and True, which its readers read as truth only.
** 1 planned, 0 not this kind. */
static int plan_truth_width(gc *g, int id, const rasp_ir_node *nd) {
  if (g->o->ln != RASPG_LN_STOCK || !g->truth || !g->truth[id]) return 0;
  int one = one_unit(g);
  view hv;
  raspG_view_alloc(g, &hv, one);
  for (int a = 0; a < hv.nv; a++) hv.val[a] = (rasp_elem){1, RASP_DEN_BOOL}, hv.ok[a] = 1;
  rasp_elem *vals = raspM_alloc(sizeof(rasp_elem) * 2);
  vals[0] = (rasp_elem){0, RASP_DEN_BOOL}, vals[1] = (rasp_elem){1, RASP_DEN_BOOL};
  int uid = raspG_new_head(g, 1, vals, 2, id, H_CAT, nd->in[0], &hv, vals[0]);
  view *v = &g->nv[id];
  raspG_view_alloc(g, v, uid);
  for (int a = 0; a < 2; a++) v->val[a] = (rasp_elem){a, 1}, v->ok[a] = 1;
  return 1;
}

/* Per IR node, whether every live reader reads only its truth (as a
** where's condition) and it is not an output; a node raspF_canon merges
** with others is planned once for all of them, so all of theirs count. */
static unsigned char *truth_readers(const rasp_ir *ir, const unsigned char *live, const int *canon) {
  int n = ir->nnodes;
  unsigned char *t = raspM_alloc((size_t)n + 1);
  for (int i = 0; i < n; i++) t[i] = live[i] != 0;
  for (int k = 0; k < ir->noutputs; k++) t[ir->outputs[k]] = 0;
  for (int j = 0; j < n; j++) {
    if (!live[j]) continue;
    const rasp_ir_node *nd = &ir->nodes[j];
    for (int k = 0; k < nd->nin; k++)
      if (!(nd->op == RASP_OP_WHERE && k == 0)) t[nd->in[k]] = 0;
  }
  for (int i = 0; i < n; i++)
    if (live[i] && !t[i]) t[canon[i]] = 0;
  for (int i = 0; i < n; i++)
    if (live[i]) t[i] = t[canon[i]];
  return t;
}

/* sel_width: the constant n for a non-causal `always` (no head), a count
** (plan_count_width) or a truth (plan_truth_width), else a width head, its
** raw values 1/(w + 1) or quantized (qwidth_scale). */
static int plan_width(gc *g, int id, const rasp_ir_node *nd) {
  view *v = &g->nv[id];
  const rasp_ir_node *sn = &g->ir->nodes[nd->in[0]];
  if (plan_count_width(g, id, nd, sn) || plan_truth_width(g, id, nd)) return 1;
  int wlo = 0;
  if (sn->op == RASP_OP_SELECT && sn->aux == RASP_PRED_TRUE) {
    if (!(sn->flags & RASP_CAUSAL)) { /* `length`: the constant n, no head */
      raspG_view_alloc(g, v, one_unit(g));
      v->val[0] = (rasp_elem){g->n, 1};
      v->ok[0] = 1;
      return 1;
    }
    wlo = 1; /* causal: i + 1 */
  }
  double qv = raspG_qwidth_scale(g, id, wlo);
  rasp_elem *vals = raspM_alloc(sizeof(rasp_elem) * (size_t)(g->n + 1));
  /* raw values: 1/(w + 1), or (quantized) the integer the residual holds,
  ** which falls as w grows: listed from w = n down, ascending */
  for (int w = wlo; w <= g->n; w++)
    vals[w - wlo] = qv > 0 ? (rasp_elem){raspG_qwidth_value(qv, g->n + wlo - w), 1} : (rasp_elem){1, w + 1};
  int cnt = raspG_uniq(vals, g->n + 1 - wlo);
  int uid = raspG_new_head(g, 0, vals, cnt, id, H_WIDTH, nd->in[0], NULL, (rasp_elem){0, 1});
  g->u[uid].qw = qv > 0;
  g->u[uid].qv = qv;
  raspG_view_alloc(g, v, uid);
  for (int a = 0; a < cnt; a++) {
    v->val[a] = (rasp_elem){qv > 0 ? g->n - a : vals[a].den - 1, 1};
    v->ok[a] = 1;
  }
  return 1;
}

/* An aggregate that moves an integer as a number (x, x^2) (H_MOVE): where
** its values sv are squared already or many; 1 planned (sv given to the
** head), 0 not (sv still the caller's). */
static int plan_num_move(gc *g, int id, const rasp_ir_node *nd, const view *sv, rasp_elem d0,
                         int mv) {
  /* numerical move of an integer (x, x^2): the selected keys hold one
  ** value (as for the categorical move below), so the mean is it; a
  ** width or mean read here is decoded to (x, x^2) first (need_num) */
  int cnt;
  rasp_elem *img = raspG_view_image(sv, &cnt);
  if (!g->u[sv->unit].sq && cnt <= NUMMIN) {
    raspM_free(img);
    return 0;
  }
  img = raspM_realloc(img, sizeof(rasp_elem) * (size_t)(cnt + 1));
  img[cnt++] = d0;
  cnt = raspG_uniq(img, cnt);
  int uid = raspG_new_head(g, 0, img, cnt, id, H_MOVE, nd->in[0], sv, d0);
  g->u[uid].sq = 1;
  g->u[uid].move = mv;
  raspG_view_identity(g, &g->nv[id], uid);
  return 1;
}

/* An aggregate of numbers that averages (H_NUM): the head's values are
** every mean its values img (cnt of them, the view hv's image) can take
** (mean_set), read back as the node's elements. */
static int plan_mean(gc *g, int id, const rasp_ir_node *nd, view hv, raspF_value hf,
                     rasp_elem *img, int cnt) {
  view *v = &g->nv[id];
  int trunc = nd->op == RASP_OP_AGGR_MEAN, allbool = !(hf.kind & ~RASPF_K_BOOL);
  /* numerical: the exact mean.  The interpreter's mean of booleans that
  ** are all True (all False) is True (False), of a mix of booleans and
  ** numbers a number: one number cannot say which, so that is refused */
  if (!trunc && (hf.kind & RASPF_K_BOOL) && (hf.kind & (RASPF_K_INT | RASPF_K_RAT))) {
    raspM_free(img);
    raspG_view_free(&hv);
    raspR_setc(g->err, RASP_E_INEXACT, nd->pos, "compile: a mean of values that mix booleans "
               "and numbers (True or 1 depends on which keys are selected) is not supported");
    return 0;
  }
  int mc;
  rasp_elem dnum = nd->c;
  if (dnum.den == RASP_DEN_BOOL) dnum.den = 1;
  /* the head writes dnum where nothing is selected; where a mean of the
  ** same number is another element (default 0 against a mean of False,
  ** False against 0, a symbol against 0) it writes a number no mean
  ** takes instead, one above them all */
  if (!trunc && (nd->c.den == RASP_DEN_SYM || (nd->c.den == RASP_DEN_BOOL) != allbool)) {
    double top = 0;
    for (int a = 0; a < cnt; a++)
      if (is_num(img[a]) && dval(img[a]) > top) top = dval(img[a]);
    dnum = (rasp_elem){(int64_t)floor(top) + 1, 1};
  }
  rasp_elem *means = mean_set(g, img, cnt, dnum, &mc);
  raspM_free(img);
  if (!means) {
    raspG_view_free(&hv);
    raspR_set(g->err, nd->pos, "compile: too many possible means for this aggregate");
    return 0;
  }
  int uid = raspG_new_head(g, 0, means, mc, id, H_NUM, nd->in[0], &hv, dnum);
  raspG_view_alloc(g, v, uid);
  for (int a = 0; a < mc; a++) {
    rasp_elem r = means[a];
    if (raspG_ecmp(r, dnum) == 0) r = trunc ? raspI_elem_trunc(nd->c) : nd->c;
    else if (trunc) r = raspI_elem_trunc(r);
    else if (allbool && r.den == 1 && (r.num == 0 || r.num == 1))
      r.den = RASP_DEN_BOOL;
    v->val[a] = r;
    v->ok[a] = 1;
  }
  return 1;
}

/* An aggregate: a numerical move (plan_num_move), a categorical head
** (symbols, booleans, moves) or the exact mean (plan_mean). */
static int plan_aggregate(gc *g, int id, const rasp_ir_node *nd) {
  view *v = &g->nv[id];
  rasp_elem d0 = nd->op == RASP_OP_AGGR_MEAN ? raspI_elem_trunc(nd->c) : nd->c;
  /* an aggregate over an equality select moves one value (its selected
  ** keys are taken to hold one value, so the mean is it), where that is
  ** proven or, by default, assumed (raspF_moves, raspG_opts.moves) */
  int mv = move_fact(g, id);
  int moves = mv == RASPF_MOVE_PROVEN || (mv == RASPF_MOVE_ASSUMED && g->o->moves != RASPG_MOVES_PROVE);
  view sv;
  raspG_view_copy(g, &sv, &g->nv[nd->in[1]]);
  if (moves && int_elem(d0) && !forced(g, id) && raspG_need_num(g, &sv, nd->in[1]) &&
      plan_num_move(g, id, nd, &sv, d0, mv))
    return 1;
  raspG_view_free(&sv);
  view hv;
  raspG_view_copy(g, &hv, &g->nv[nd->in[1]]);
  raspG_need_cat(g, &hv, nd->in[1]);
  int trunc = nd->op == RASP_OP_AGGR_MEAN;
  rasp_elem dflt = trunc ? raspI_elem_trunc(nd->c) : nd->c;
  /* the values' kinds: numbers are averaged, booleans' means of 0 and 1
     stay booleans, symbols are moved */
  raspF_value hf = raspG_view_fact(g, &hv, nd->in[1]);
  int allnum = !(hf.kind & RASPF_K_SYM);
  int cnt;
  rasp_elem *img = raspG_view_image(&hv, &cnt);
  if (!allnum || moves) {
    /* categorical: the selected value itself (symbols always: their mean
    ** is an error unless they are one symbol) */
    if (trunc)
      for (int a = 0; a < hv.nv; a++) hv.val[a] = raspI_elem_trunc(hv.val[a]);
    raspM_free(img);
    img = raspG_view_image(&hv, &cnt);
    img = raspM_realloc(img, sizeof(rasp_elem) * (size_t)(cnt + 1));
    img[cnt++] = dflt;
    cnt = raspG_uniq(img, cnt);
    int uid = raspG_new_head(g, 1, img, cnt, id, H_CAT, nd->in[0], &hv, dflt);
    if (allnum) g->u[uid].move = mv;
    raspG_view_identity(g, v, uid);
    return 1;
  }
  return plan_mean(g, id, nd, hv, hf, img, cnt);
}

/* Plans node id: a view or a unit for it (g->nv[id]); 0 with err set when
** the compiler cannot. */
static int plan_node(gc *g, int id) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  view *v = &g->nv[id];
  switch (nd->op) {
  case RASP_OP_INPUT:
    for (int i = 0; i < g->nu; i++)
      if (g->u[i].kind == U_TOK) raspG_view_identity(g, v, i);
    return 1;
  case RASP_OP_INDICES: raspG_view_identity(g, v, idx_unit(g)); return 1;
  case RASP_OP_FULL:
    raspG_view_alloc(g, v, one_unit(g));
    v->val[0] = nd->c;
    v->ok[0] = 1;
    return 1;
  case RASP_OP_SELECT: return plan_select(g, id, nd);
  case RASP_OP_SEL_AND:
  case RASP_OP_SEL_OR:
  case RASP_OP_SEL_NOT: return 1;
  case RASP_OP_UNARY:
  case RASP_OP_BINARY:
  case RASP_OP_WHERE:
  case RASP_OP_MAP:
  case RASP_OP_SEQMAP: return plan_map(g, id, nd);
  case RASP_OP_SEL_WIDTH: return plan_width(g, id, nd);
  case RASP_OP_AGGREGATE:
  case RASP_OP_AGGR_MEAN: return plan_aggregate(g, id, nd);
  case RASP_OP_AGGR_MAX:
  case RASP_OP_AGGR_MIN:
  default:
    raspR_set(g->err, nd->pos, "compile: '%s' is not supported by the compiler",
              raspI_op_name(nd->op));
    return 0;
  }
}

/* A static head (raspF_static: its value reads no token, e.g. sel_width of
** a causal `always` = i + 1, or an aggregate of the indices over an order
** select) needs no attention: its value at each position is a view of the
** index unit, with the table taken from one run of the evaluator (any input
** gives the same values).  Returns 1 with g->nv[id] set, 0 to plan the node
** as usual (not a head, or the evaluator failed on the input tried). */
static int static_view(gc *g, int id, rasp_eval **ev, int *state) {
  int op = g->ir->nodes[id].op;
  if (op != RASP_OP_SEL_WIDTH && op != RASP_OP_AGGREGATE && op != RASP_OP_AGGR_MEAN) return 0;
  if (*state == 0) {
    *state = -1;
    if (g->o->ninput < 1 || g->n < 1) return 0;
    *ev = raspE_new(g->ir);
    if (!*ev) return 0;
    raspE_set_keep_intermediates(*ev, 1);
    int64_t *tok = raspM_alloc(sizeof(int64_t) * (size_t)g->n);
    for (int i = 0; i < g->n; i++) tok[i] = g->o->input_ids[0];
    rasp_error e = {0};
    if (raspE_run(*ev, 1, tok, &e)) *state = 1;
    raspM_free(tok);
  }
  if (*state != 1) return 0;
  const rasp_elem *val = raspE_value(*ev, id, 0);
  if (!val) return 0;
  view *v = &g->nv[id];
  raspG_view_alloc(g, v, idx_unit(g));
  for (int a = 0; a < v->nv; a++) {
    v->val[a] = val[a];
    v->ok[a] = 1;
  }
  return 1;
}

/* RASP_COMPILE_CHECK_FACTS=1: every value a node's view can take lies
** within the node's fact.  The exact sets and the transfer functions are
** two analyses of one program; a value outside is a bug in one of them: an
** internal error naming the node, the value and the fact. */
static int check_facts(gc *g, const unsigned char *live) {
  const rasp_ir *ir = g->ir;
  for (int id = 0; id < ir->nnodes; id++) {
    const view *v = &g->nv[id];
    if (!live[id] || !v->val) continue;
    for (int a = 0; a < v->nv; a++) {
      if (!v->ok[a] || raspF_holds(g->fact[id], v->val[a])) continue;
      char buf[64];
      raspI_elem_format(ir, v->val[a], buf, sizeof buf);
      raspR_set(g->err, ir->nodes[id].pos,
                "internal error: compile: %s of node %d ('%s') outside its value fact "
                "(kinds %u, [%lld, %lld])",
                buf, id, raspI_op_name(ir->nodes[id].op), g->fact[id].kind,
                (long long)g->fact[id].lo, (long long)g->fact[id].hi);
      return 0;
    }
  }
  return 1;
}

/* Whether the model can be causal: no live head selects a later key, its
** selector being causal or provably reading only keys k <= q (rcausal.h),
** so the mask changes nothing. */
static int causal_model(const rasp_ir *ir, const unsigned char *live) {
  rasp_causal ca;
  raspA_analyse(ir, &ca);
  int causal = 1;
  for (int i = 0; i < ir->nnodes; i++)
    if (live[i] && raspI_op_component(ir->nodes[i].op) == RASP_COMP_ATTN &&
        !raspA_sel_prefix(&ca, ir->nodes[i].in[0]))
      causal = 0;
  raspA_free(&ca);
  return causal;
}

/* The embedded units TOK, IDX and ONE (units 0, 1, 2), and between them
** the graph's value facts for tokens among the vocabulary's ids. */
static void plan_embedded(gc *g, const rasp_ir *ir, const raspG_opts *o) {
  rasp_elem *tv = raspM_alloc(sizeof(rasp_elem) * (size_t)(o->ninput + 1));
  for (int i = 0; i < o->ninput; i++) tv[i] = (rasp_elem){o->input_ids[i], 1};
  int ntv = raspG_uniq(tv, o->ninput);
  int tcat = ntv <= NUMMIN || forced(g, -1);
  raspG_new_unit(g, U_TOK, tcat, tv, ntv, -1);
  g->u[0].sq = !tcat; /* many symbols: the token id and its square */
  /* value facts (rfacts.h) for tokens among the vocabulary's ids */
  raspF_value tf = {o->ninput ? RASPF_K_INT : 0, INT64_MAX, INT64_MIN};
  for (int i = 0; i < ntv; i++) {
    tf.lo = tv[i].num < tf.lo ? tv[i].num : tf.lo;
    tf.hi = tv[i].num > tf.hi ? tv[i].num : tf.hi;
  }
  g->fact = raspM_alloc(sizeof(raspF_value) * (size_t)(ir->nnodes + 1));
  raspF_values(ir, tf, g->fact);
  g->dist = raspM_alloc(sizeof(raspF_distinct) * (size_t)(ir->nnodes + 1));
  raspF_distincts(ir, g->fact, g->dist);
  g->mscan = raspF_moves_new(ir);
  g->kinds = raspM_alloc(sizeof(unsigned) * (size_t)(ir->nnodes ? ir->nnodes : 1));
  rasp_elem *iv = raspM_alloc(sizeof(rasp_elem) * (size_t)g->n);
  for (int i = 0; i < g->n; i++) iv[i] = (rasp_elem){i, 1};
  raspG_new_unit(g, U_IDX, 1, iv, g->n, -1);
  rasp_elem *ov1 = raspM_alloc(sizeof(rasp_elem));
  ov1[0] = (rasp_elem){1, 1};
  raspG_new_unit(g, U_ONE, 1, ov1, 1, -1);
}

/* The planner: units for every live node of the first output's cone (CSE
** and static heads applied), the readout view *ov and whether it is read as
** a number (*quad), every unit scheduled (schedule) and the ones the output
** needs marked used.  raspG_compile writes weights for this plan and
** raspG_schedule reports it, so `rasp layers` and the compiled model agree
** by construction.  Returns 1, or 0 with err set and g freed. */
int raspG_plan(gc *g, const rasp_ir *ir, const raspG_opts *o, const unsigned char *force,
               view *ov, int *quadp, rasp_error *err) {
  if (!ir->noutputs) {
    raspR_setnopos(err, "compile: the program has no output");
    return 0;
  }
  memset(g, 0, sizeof *g);
  g->ir = ir;
  g->o = o;
  g->n = ir->n;
  g->err = err;
  g->force = force;
  g->allcat = o->encoding == RASPG_ENC_CATEGORICAL;
  const char *tr = getenv("RASP_COMPILE_TRACE");
  g->trace = tr ? atoi(tr) : 0;
  int root = ir->outputs[0];
  unsigned char *live = raspM_alloc((size_t)ir->nnodes);
  raspI_live(ir, &root, 1, live);
  g->causal_model = causal_model(ir, live);
  plan_embedded(g, ir, o);
  g->nv = raspM_alloc(sizeof(view) * (size_t)ir->nnodes);
  g->numq = raspM_alloc((size_t)ir->nnodes);
  g->numeq = raspM_alloc((size_t)ir->nnodes);
  g->eqv = raspM_alloc(sizeof(view) * 2 * (size_t)ir->nnodes);
  g->ornot = raspM_alloc((size_t)ir->nnodes);
  for (int i = 0; i < ir->nnodes; i++)
    if (live[i]) mark_ornot(g, i, 0);
  g->wsel = raspM_alloc((size_t)ir->nnodes);
  for (int i = 0; i < ir->nnodes; i++)
    if (live[i] && ir->nodes[i].op == RASP_OP_SEL_WIDTH) mark_wsel(g, ir->nodes[i].in[0]);
  /* common subexpressions (raspF_canon): a head or MLP node computed twice
     is planned once, its copies read the same unit; selects are planned
     again (they make no unit, and their operands' decodes are memoised) */
  int *canon = raspM_alloc(sizeof(int) * (size_t)ir->nnodes);
  raspF_canon(ir, live, canon);
  g->truth = truth_readers(ir, live, canon);
  unsigned char *st = raspM_alloc((size_t)ir->nnodes);
  raspF_static(ir, 0, st);
  rasp_eval *sev = NULL;
  int sev_state = 0; /* 0 not run, 1 values available, -1 failed */
  int ok = 1;
  for (int i = 0; i < ir->nnodes && ok; i++) {
    if (!live[i]) continue;
    int op = ir->nodes[i].op;
    int makes_unit = op != RASP_OP_SELECT && op != RASP_OP_SEL_AND && op != RASP_OP_SEL_OR &&
                     op != RASP_OP_SEL_NOT;
    if (canon[i] != i && makes_unit) {
      raspG_view_copy(g, &g->nv[i], &g->nv[canon[i]]);
      continue;
    }
    if (st[i] && static_view(g, i, &sev, &sev_state)) continue;
    ok = plan_node(g, i);
    if (ok && g->fatal.set) {
      *g->err = g->fatal;
      ok = 0;
    }
  }
  if (sev) raspE_free(sev);
  const char *chk = getenv("RASP_COMPILE_CHECK_FACTS");
  if (ok && chk && strcmp(chk, "1") == 0) ok = check_facts(g, live);
  raspM_free(canon);
  raspM_free(st);
  raspM_free(live);
  memset(ov, 0, sizeof *ov);
  int quad = 0; /* a numerical readout: logit_v = -X (x - v)^2 */
  if (ok) {
    raspG_view_copy(g, ov, &g->nv[root]);
    raspG_need_num(g, ov, root); /* a width or mean of many values: read out as (x, x^2) */
    double qa, qb;
    quad = g->u[ov->unit].sq && raspG_lf_ok(g, ov) && raspG_view_affine(g, ov, &qa, &qb);
    if (!quad) raspG_need_cat(g, ov, root);
  }
  for (int i = 0; i < g->nu && ok; i++)
    if (g->u[i].kind == U_HEAD && !g->u[i].cw) { /* (a count has no components) */
      ok = sel_comps(g, g->u[i].selnode, g->u[i].c, &g->u[i].nc);
      if (ok) prune_comps(g, g->u[i].c, g->u[i].nc);
    }
  if (ok && g->fatal.set) { /* (a custom predicate's, met by sel_comps) */
    *g->err = g->fatal;
    ok = 0;
  }
  if (!ok) {
    raspG_view_free(ov);
    raspG_gc_free(g);
    return 0;
  }
  *quadp = quad;
  raspG_schedule_units(g);
  raspG_mark_used(g, ov->unit);
  return 1;
}
