/*
** rcompile_write.c -- the weight writers.
**
** Each MLP unit kind and each head as weights (through a wctx, which also
** counts hidden units when its matrices are NULL), the erasers, and
** compile_once's writing steps: heads sized, embeddings, one layer at a
** time, the readout.
*/
#include "rcompile_int.h"

/* ---- weights ------------------------------------------------------------ */

/* Starts a hidden unit gated off at BOS by -L. */
static int hid(wctx *w, double bias, double L) {
  int h = w->h++;
  if (w->w_in) {
    w->b_in[h] = (float)bias;
    w->w_in[(size_t)0 * w->dmlp + h] -= (float)L;
  }
  return h;
}
static void win(wctx *w, int dim, int h, double x) {
  if (w->w_in) w->w_in[(size_t)dim * w->dmlp + h] += (float)x;
}
static void wout(wctx *w, int h, int dim, double x) {
  if (w->w_in) w->w_out[(size_t)h * w->d + dim] += (float)x;
}

/* Whether a reader of nin of a one-hot's n dimensions reads the other
** n - nin instead, through `one` (an MLP unit's bias, a head's `one` row):
** under --ln stock, which charges every read, where that is fewer. */
static int reads_complement(const gc *g, int n, int nin) {
  return g->o->ln == RASPG_LN_STOCK && n - nin < nin;
}

/* Adds coef times [categorical unit uid holds a value in the set in[]]
** to hidden unit h's input: coef on the set's dimensions, or, under --ln
** stock where the set is the larger part, coef through h's bias and -coef
** on the other dimensions.  The two agree wherever the unit holds a one-hot
** or a convex mix of them (its dimensions sum to 1; at BOS, where it may
** hold 0, hid's gate holds h off), and the second reads fewer dimensions:
** a stock norm charges every read, and a where over a one-hot of n values
** whose condition is "not the default" would otherwise sum n - 1 reads'
** errors at each step of a chain. */
static void win_onehot(wctx *w, int uid, const char *in, int h, double coef) {
  gc *g = w->g;
  const unit *s = &g->u[uid];
  int n = s->nvals, nin = 0;
  for (int b = 0; b < n; b++) nin += in[b] != 0;
  int flip = reads_complement(g, n, nin);
  if (flip && w->w_in) w->b_in[h] += (float)coef;
  for (int b = 0; b < n; b++)
    if ((in[b] != 0) != flip) win(w, s->dim + b, h, flip ? -coef : coef);
}

/* Hidden unit h adds coef times value e of decode unit u: to e's one-hot
** dimension, or to (x, x^2) of a numerical decode. */
static void dec_out(wctx *w, const unit *u, int h, rasp_elem e, double coef) {
  if (u->cat) {
    wout(w, h, u->dim + raspG_find(u->vals, u->nvals, e), coef);
    return;
  }
  double x = dval(e);
  wout(w, h, u->dim, coef * x);
  wout(w, h, u->dim + 1, coef * x * x);
}

/* The steps that read a quantized width s (raw values integers, ascending
** in index, falling as w grows) through view v: from the value at the top
** raw value down, one step per pair of adjacent raw values r < r' whose
** view values differ, ReLU(r' - x) - ReLU(r' - 1 - x): 1 where x <= r, 0
** where x >= r', exact on integers.  A unit is on only below its r', by at
** most r' - x, so the terms an output adds stay within the integers
** float32 holds (active_od's per-combination sums).  Returns the index of
** the top value (the base), and per step calls emit(h1, h2, a, a'): the
** step adds value a minus value a'. */
typedef void qw_emit(wctx *w, void *ctx, int h1, int h2, int a, int a2);
static int qw_steps(wctx *w, const view *v, qw_emit *emit, void *ctx) {
  gc *g = w->g;
  const unit *s = &g->u[v->unit];
  int top = -1;
  for (int a = v->nv - 1; a >= 0 && top < 0; a--)
    if (v->ok[a]) top = a;
  for (int a2 = top, a = top - 1; a >= 0; a--) {
    if (!v->ok[a]) continue;
    if (raspG_ecmp(v->val[a], v->val[a2])) {
      double r2 = dval(s->vals[a2]);
      /* at BOS x is 0 (undone) or its BOS value, above every r': off */
      int h1 = hid(w, r2, r2 + 16), h2 = hid(w, r2 - 1, r2 + 16);
      win(w, s->dim, h1, -1);
      win(w, s->dim, h2, -1);
      emit(w, ctx, h1, h2, a, a2);
    }
    a2 = a;
  }
  return top;
}

static void dec_step(wctx *w, void *ctx, int h1, int h2, int a, int a2) {
  unit *u = ctx;
  const view *v = &u->mv[0];
  dec_out(w, u, h1, v->val[a], 1);
  dec_out(w, u, h2, v->val[a], -1);
  dec_out(w, u, h1, v->val[a2], -1);
  dec_out(w, u, h2, v->val[a2], 1);
}

static void mlp_decode(wctx *w, unit *u) {
  gc *g = w->g;
  const view *v = &u->mv[0];
  const unit *s = &g->u[v->unit];
  if (s->qw) {
    int h = hid(w, 0, 0);
    win(w, 1, h, 1);
    int top = qw_steps(w, v, dec_step, u);
    if (top >= 0) dec_out(w, u, h, v->val[top], 1);
    return;
  }
  if (s->cat) {
    char *in = raspM_alloc((size_t)v->nv + 1);
    for (int k = 0; k < u->nvals; k++) {
      int h = hid(w, 0, 10);
      for (int a = 0; a < v->nv; a++) in[a] = v->ok[a] && raspG_ecmp(v->val[a], u->vals[k]) == 0;
      win_onehot(w, v->unit, in, h, 1);
      wout(w, h, u->dim + k, 1);
    }
    raspM_free(in);
    return;
  }
  /* numerical source: a base value and a step wherever the value changes */
  double maxabs = 1;
  for (int a = 0; a < s->nvals; a++)
    if (fabs(dval(s->vals[a])) > maxabs) maxabs = fabs(dval(s->vals[a]));
  int prev = -1;
  for (int a = 0; a < v->nv; a++) {
    if (!v->ok[a]) continue;
    if (prev < 0) {
      int h = hid(w, 0, 0);
      win(w, 1, h, 1);
      dec_out(w, u, h, v->val[a], 1);
    } else if (raspG_ecmp(v->val[a], v->val[prev])) {
      double lo = dval(s->vals[prev]), hi = dval(s->vals[a]);
      double gap = hi - lo, mid = (lo + hi) / 2, sl = 2 / gap;
      double L = sl * (maxabs + fabs(mid) + gap) + 10;
      double b1 = -sl * (mid - gap / 4), b2 = -sl * (mid + gap / 4);
      if (s->sq) /* integers: ReLU(x - lo) - ReLU(x - lo - 1), exact in float32 */
        sl = 1, b1 = -lo, b2 = -lo - 1, L = maxabs + fabs(lo) + 11;
      int h1 = hid(w, b1, L), h2 = hid(w, b2, L);
      win(w, s->dim, h1, sl);
      win(w, s->dim, h2, sl);
      dec_out(w, u, h1, v->val[a], 1);
      dec_out(w, u, h2, v->val[a], -1);
      dec_out(w, u, h1, v->val[prev], -1);
      dec_out(w, u, h2, v->val[prev], 1);
    }
    prev = a;
  }
}

/* The values of view c whose truth is want (a where's condition). */
static char *truth_set(const view *c, int want) {
  char *in = raspM_alloc((size_t)c->nv + 1);
  for (int b = 0; b < c->nv; b++) in[b] = c->ok[b] && raspI_elem_truth(c->val[b]) == want;
  return in;
}

static void mlp_where(wctx *w, unit *u) {
  const view *c = &u->mv[0];
  /* in place: where c holds, add x and take y away */
  char *cin = truth_set(c, 1), *cout = truth_set(c, 0);
  /* steep (FORCE_STEEP): two units per value, ReLU(4z - 6) - ReLU(4z - 7) */
  int st = w->g->force && u->node >= 0 && (w->g->force[u->node] & FORCE_STEEP), nst = st ? 2 : 1;
  double sl = st ? 4 : 1;
  for (int br = 1; br <= 2; br++) {
    const view *x = &u->mv[br];
    int cnt;
    rasp_elem *img = raspG_view_image(x, &cnt);
    char *in = raspM_alloc((size_t)x->nv + 1);
    for (int k = 0; k < cnt; k++) {
      for (int a = 0; a < x->nv; a++) in[a] = x->ok[a] && raspG_ecmp(x->val[a], img[k]) == 0;
      for (int j = 0; j < nst; j++) {
        int h = hid(w, st ? -6 - j : -1, 10);
        win_onehot(w, x->unit, in, h, sl);
        win_onehot(w, c->unit, u->alias >= 0 || br == 1 ? cin : cout, h, sl);
        wout(w, h, u->dim + raspG_find(u->vals, u->nvals, img[k]),
             (u->alias >= 0 && br == 2 ? -1 : 1) * (j ? -1 : 1));
      }
    }
    raspM_free(in);
    raspM_free(img);
  }
  raspM_free(cin);
  raspM_free(cout);
}

/* f(x_a, y_b) as an index into u->vals, or -1 when impossible. */
static int pair_val(gc *g, unit *u, int a, int b) {
  const view *x = &u->mv[0], *y = &u->mv[1];
  rasp_elem args[2] = {x->val[a], y->val[b]}, r;
  if (!x->ok[a] || !y->ok[b] || !raspG_eval_elem(g, &g->ir->nodes[u->mnode], args, &r)) return -1;
  return raspG_find(u->vals, u->nvals, r);
}

/* Units needed with operand `outer` outside: per outer value, one per
** distinct result other than v0.  Fills tab (nx*ny) when counting. */
static long pair_cost(int nx, int ny, const int *tab, int outer, int v0, int nvals, int *seen) {
  long cost = 1;
  int no = outer ? ny : nx, ni = outer ? nx : ny;
  for (int o = 0; o < no; o++) {
    memset(seen, 0, sizeof(int) * (size_t)nvals);
    for (int i = 0; i < ni; i++) {
      int v = outer ? tab[(size_t)i * ny + o] : tab[(size_t)o * ny + i];
      if (v >= 0 && v != v0 && !seen[v]) {
        seen[v] = 1;
        cost++;
      }
    }
  }
  return cost;
}

static void mlp_pair(wctx *w, unit *u) {
  gc *g = w->g;
  const view *x = &u->mv[0], *y = &u->mv[1];
  int nx = x->nv, ny = y->nv;
  int *tab = raspM_alloc(sizeof(int) * (size_t)nx * (size_t)ny);
  int *cnt = raspM_alloc(sizeof(int) * (size_t)u->nvals);
  for (int a = 0; a < nx; a++)
    for (int b = 0; b < ny; b++) {
      int v = pair_val(g, u, a, b);
      tab[(size_t)a * ny + b] = v;
      if (v >= 0) cnt[v]++;
    }
  int v0 = 0;
  for (int v = 1; v < u->nvals; v++)
    if (cnt[v] > cnt[v0]) v0 = v;
  int outer = pair_cost(nx, ny, tab, 1, v0, u->nvals, cnt) <
              pair_cost(nx, ny, tab, 0, v0, u->nvals, cnt);
  int h0 = hid(w, 0, 0);
  win(w, 1, h0, 1);
  wout(w, h0, u->dim + v0, 1);
  const view *ov = outer ? y : x, *iv = outer ? x : y;
  int no = outer ? ny : nx, ni = outer ? nx : ny;
  /* per outer value o and result v, the test z = x_o + (the inner
  ** dimensions that give v) >= 2, z in {0, 1, 2}: ReLU(z - 1), on its
  ** hinge at z = 1 (one of the two on), where ReLU passes its inputs'
  ** errors on.  Steep (FORCE_STEEP: the proof found those errors, summed
  ** over the units on their hinges, too large downstream), ReLU(4z - 6) -
  ** ReLU(4z - 7), hinges at z = 3/2 and 7/4, which no integer z meets:
  ** each unit is off by a margin of 1 or on, its inputs' errors cancel in
  ** the pair (mlp_ncmp's steep step), for inputs off by less than 1/8 */
  int st = g->force && u->node >= 0 && (g->force[u->node] & FORCE_STEEP), nst = st ? 2 : 1;
  char *in = raspM_alloc((size_t)ni + 1);
  for (int o = 0; o < no; o++) {
    if (!ov->ok[o]) continue;
    for (int v = 0; v < u->nvals; v++) {
      if (v == v0) continue;
      int any = 0;
      for (int i = 0; i < ni; i++) {
        int r = outer ? tab[(size_t)i * ny + o] : tab[(size_t)o * ny + i];
        any |= in[i] = r == v;
      }
      if (!any) continue;
      for (int k = 0; k < nst; k++) {
        int h = hid(w, st ? -6 - k : -1, 10);
        win(w, udim(g, ov->unit) + o, h, st ? 4 : 1);
        win_onehot(w, iv->unit, in, h, st ? 4 : 1);
        wout(w, h, u->dim + v, k ? -1 : 1);
        wout(w, h, u->dim + v0, k ? 1 : -1);
      }
    }
  }
  raspM_free(in);
  raspM_free(tab);
  raspM_free(cnt);
}

/* Adds view v's values (numbers) to dimension out: a categorical source
** through one hidden unit (values shifted to be >= 0, the shift added by
** the ONE unit of the caller: returned), a numerical one through a base and
** a step wherever the value changes (as mlp_decode). */
struct add_ctx {
  const view *v;
  int out;
};
static void add_step(wctx *w, void *ctx, int h1, int h2, int a, int a2) {
  const struct add_ctx *c = ctx;
  double dv = dval(c->v->val[a]) - dval(c->v->val[a2]);
  wout(w, h1, c->out, dv);
  wout(w, h2, c->out, -dv);
}

static double mlp_add_view(wctx *w, const view *v, int out) {
  gc *g = w->g;
  const unit *s = &g->u[v->unit];
  if (s->cat) {
    double lo = 0;
    int first = 1;
    for (int a = 0; a < v->nv; a++)
      if (v->ok[a] && (first || dval(v->val[a]) < lo)) {
        lo = dval(v->val[a]);
        first = 0;
      }
    int h = hid(w, 0, 10);
    for (int a = 0; a < v->nv; a++)
      if (v->ok[a] && dval(v->val[a]) != lo) win(w, s->dim + a, h, dval(v->val[a]) - lo);
    wout(w, h, out, 1);
    return lo;
  }
  lform f;
  double flo, fhi;
  if (s->sq && raspG_lf_build(g, v, 0, 0, &f, &flo, &fhi)) {
    /* an affine view of (x, x^2): ReLU(a x + b - lo) + lo */
    int h = hid(w, -flo, fabs(flo) + 10);
    if (w->w_in) raspG_lf_write(g, &f, w->w_in, w->dmlp, h, 1);
    wout(w, h, out, 1);
    return flo;
  }
  if (s->qw) {
    struct add_ctx c = {v, out};
    int top = qw_steps(w, v, add_step, &c);
    return top >= 0 ? dval(v->val[top]) : 0;
  }
  double maxabs = 1, base = 0;
  for (int a = 0; a < s->nvals; a++)
    if (fabs(dval(s->vals[a])) > maxabs) maxabs = fabs(dval(s->vals[a]));
  int prev = -1;
  for (int a = 0; a < v->nv; a++) {
    if (!v->ok[a]) continue;
    if (prev < 0) base = dval(v->val[a]);
    else if (dval(v->val[a]) != dval(v->val[prev])) {
      double lo = dval(s->vals[prev]), hi = dval(s->vals[a]);
      double gap = hi - lo, mid = (lo + hi) / 2, sl = 2 / gap;
      double L = sl * (maxabs + fabs(mid) + gap) + 10, dv = dval(v->val[a]) - dval(v->val[prev]);
      int h1 = hid(w, -sl * (mid - gap / 4), L), h2 = hid(w, -sl * (mid + gap / 4), L);
      win(w, s->dim, h1, sl);
      win(w, s->dim, h2, sl);
      wout(w, h1, out, dv);
      wout(w, h2, out, -dv);
    }
    prev = a;
  }
  return base;
}

static void mlp_sum(wctx *w, unit *u) {
  double c = mlp_add_view(w, &u->mv[0], u->dim) + mlp_add_view(w, &u->mv[1], u->dim);
  if (c != 0) {
    int h = hid(w, 0, 0);
    win(w, 1, h, 1);
    wout(w, h, u->dim, c);
  }
}

/* Whether fp32 chooses encodings by the rounding proof (--require-proof):
** the weights then take the forms that keep integers exact where the
** default keeps the size (steep tests, exact erasers, no dimension
** written in the sublayer that erases it) */
int raspG_proof_driven(const gc *g) {
  return g->o->precision == RASPG_FP32 && g->o->require_proof;
}

/* Whether 0/1 tests are written with no hinge on an integer (steep): in
** fp32 with an attention gain of 4 or more, where the heads' leak (below
** e^-128 per key) leaves the moved integers exact at their nonzero values
** (nz_exact) and the tests' inputs off by far less than the 1/8 a steep
** step tolerates; and proof-driven, where the proof then decides.  At
** gain 1 by default the tests keep the form that tolerates 1/2 (and the
** default weights stay as they were). */
static int steep(const gc *g) {
  return raspG_proof_driven(g) || (g->o->precision == RASPG_FP32 && g->o->attn_gain >= 4);
}

/* Whether erasers are exact (-ReLU(x) + ReLU(-x), mlp_erase) and a
** dimension is not given to a unit written in the sublayer that erases
** it (alloc_dims): proof-driven fp32, where what an erased unit was off
** by would otherwise stay behind under the next one (residue). */
int raspG_exact_erase(const gc *g) { return raspG_proof_driven(g); }

/* where(c, x, y) on numbers: per branch and column (value, square) with
** values in [lo, hi], ReLU(f - lo - M(1 - gate)), M = hi - lo + 1, which
** is f - lo where the gate is 1 and off by a margin of 1 where it is 0; the
** lo (and a constant branch) through one gated unit. */
/* A hidden unit ReLU(k t + f + bias) (no f when f is NULL); off at BOS. */
static int hid_t(wctx *w, const unit *u, double k, const lform *f, double bias) {
  gc *g = w->g;
  double b = bias + k * u->ct_b;
  int h = hid(w, b, fabs(b) + 10);
  win(w, udim(g, u->mv[0].unit), h, k * u->ct_a);
  if (f && w->w_in) raspG_lf_write(g, f, w->w_in, w->dmlp, h, 1);
  return h;
}

/* where(t == 0, x, y) / where(t >= 1, x, y) with an integer t, per column
** f in [lo, hi], f' = f - lo, M = hi - lo + 1:
**   f [t == 0] = ReLU(f' - Mt) + ReLU(f' + Mt) - M ReLU(t) - M ReLU(-t)
**                - ReLU(f') + lo (ReLU(t+1) - 2 ReLU(t) + ReLU(t-1))
**   f [t >= 1] = ReLU(f' + M(t-1)) - M ReLU(t-1) + lo (ReLU(t) - ReLU(t-1))
** and the else branch is g - g[test]. */
static void mlp_nwhere_t(wctx *w, unit *u) {
  gc *g = w->g;
  int eq = u->ctest == 1;
  /* the shared units of t */
  int tp = hid_t(w, u, 1, NULL, 0), tm1 = hid_t(w, u, 1, NULL, -1);
  int tn = eq ? hid_t(w, u, -1, NULL, 0) : -1, tp1 = eq ? hid_t(w, u, 1, NULL, 1) : -1;
  double cb[2] = {0, 0}; /* coefficient of the indicator per column */
  double cone[2] = {0, 0};
  for (int br = 1; br <= 2; br++) {
    const view *x = &u->mv[br];
    double sgn = br == 1 ? 1 : -1; /* else: y - y[test] */
    for (int col = 0; col < 2; col++) {
      lform f;
      double lo = 0, hi = 0;
      raspG_lf_build(g, x, col, 0, &f, &lo, &hi);
      int out = u->dim + col;
      cb[col] += sgn * lo;
      if (br == 2) cone[col] += lo;
      if (g->u[x->unit].kind == U_ONE || lo == hi) continue;
      double M = hi - lo + 1;
      int fl = hid(w, -lo, fabs(lo) + 10);
      if (w->w_in) raspG_lf_write(g, &f, w->w_in, w->dmlp, fl, 1);
      if (eq) {
        int a1 = hid_t(w, u, -M, &f, -lo), a2 = hid_t(w, u, M, &f, -lo);
        wout(w, a1, out, sgn);
        wout(w, a2, out, sgn);
        wout(w, tp, out, -sgn * M);
        wout(w, tn, out, -sgn * M);
        wout(w, fl, out, -sgn);
      } else {
        int a1 = hid_t(w, u, M, &f, -lo - M);
        wout(w, a1, out, sgn);
        wout(w, tm1, out, -sgn * M);
      }
      if (br == 2) wout(w, fl, out, 1); /* + y' */
    }
  }
  for (int col = 0; col < 2; col++) {
    int out = u->dim + col;
    if (eq) {
      wout(w, tp1, out, cb[col]);
      wout(w, tp, out, -2 * cb[col]);
      wout(w, tm1, out, cb[col]);
    } else {
      wout(w, tp, out, cb[col]);
      wout(w, tm1, out, -cb[col]);
    }
  }
  if (cone[0] != 0 || cone[1] != 0) {
    int h = hid(w, 0, 10);
    win(w, 1, h, 1);
    wout(w, h, u->dim, cone[0]);
    wout(w, h, u->dim + 1, cone[1]);
  }
}

static void mlp_nwhere(wctx *w, unit *u) {
  gc *g = w->g;
  if (u->ctest) {
    mlp_nwhere_t(w, u);
    return;
  }
  const view *c = &u->mv[0];
  char *cin[2] = {truth_set(c, 0), truth_set(c, 1)};
  for (int br = 1; br <= 2; br++) {
    const view *x = &u->mv[br];
    double konst[2] = {0, 0};
    for (int col = 0; col < 2; col++) {
      lform f;
      double lo = 0, hi = 0;
      raspG_lf_build(g, x, col, 0, &f, &lo, &hi);
      if (g->u[x->unit].kind == U_ONE || lo == hi) {
        konst[col] = lo;
        continue;
      }
      double M = hi - lo + 1;
      int h = hid(w, -lo - M, fabs(lo) + M + 10);
      if (w->w_in) raspG_lf_write(g, &f, w->w_in, w->dmlp, h, 1);
      win_onehot(w, c->unit, cin[br == 1], h, M);
      wout(w, h, u->dim + col, 1);
      konst[col] = lo;
    }
    if (konst[0] != 0 || konst[1] != 0) {
      /* steep: ReLU(2 c - 1), not ReLU(c): off by a margin of 1 where c is
      ** 0, so a 0 off by a little (nz_exact) passes nothing on times lo */
      int st = steep(g), h = hid(w, st ? -1 : 0, 10);
      win_onehot(w, c->unit, cin[br == 1], h, st ? 2 : 1);
      wout(w, h, u->dim, konst[0]);
      wout(w, h, u->dim + 1, konst[1]);
    }
  }
  raspM_free(cin[0]);
  raspM_free(cin[1]);
}

/* Adds coef * (form of v) to hidden unit h's input. */
static void win_form(wctx *w, const view *v, int h, double coef) {
  lform f;
  double lo, hi;
  raspG_lf_build(w->g, v, 0, 0, &f, &lo, &hi);
  if (w->w_in) raspG_lf_write(w->g, &f, w->w_in, w->dmlp, h, coef);
}

static void mlp_ncmp(wctx *w, unit *u) {
  gc *g = w->g;
  int op = g->ir->nodes[u->mnode].aux;
  /* z = s (x - y): s = -1 turns < and <= into > and >= */
  double s = op == RASP_BIN_LT || op == RASP_BIN_LE ? -1 : 1;
  int dt = u->dim + raspG_find(u->vals, u->nvals, (rasp_elem){1, RASP_DEN_BOOL});
  int df = u->dim + raspG_find(u->vals, u->nvals, (rasp_elem){0, RASP_DEN_BOOL});
  /* steep: on integers z, [z >= t] = ReLU(4 (z - t) + 2) - ReLU(4 (z - t) + 1):
  ** its hinges at t - 1/2 and t - 1/4, no integer z sits on one (4z + 2
  ** and 4z + 1 are never 0), so where z is off by a little (below 2^-27)
  ** every hidden unit is 0 or a nonzero integer, exact (nz_exact's
  ** argument), and the 0/1 out is exact; [z == 0] = [z >= 0] - [z >= 1].
  ** Else ReLU bumps (a hidden unit on its hinge at x = y passes the
  ** error of a 0 on) */
  double b[4], c[4], sl = steep(g) ? 4 : 1;
  int nh;
  if (sl == 1 && (op == RASP_BIN_EQ || op == RASP_BIN_NE)) {
    nh = 3;
    b[0] = 1, b[1] = 0, b[2] = -1;
    c[0] = 1, c[1] = -2, c[2] = 1;
  } else if (sl == 1) { /* z >= 1 (>, <) or z >= 0 (>=, <=) */
    nh = 2;
    double t = op == RASP_BIN_GT || op == RASP_BIN_LT ? 0 : 1;
    b[0] = t, b[1] = t - 1;
    c[0] = 1, c[1] = -1;
  } else if (op == RASP_BIN_EQ || op == RASP_BIN_NE) {
    nh = 4;
    b[0] = 2, b[1] = 1, b[2] = -2, b[3] = -3;
    c[0] = 1, c[1] = -1, c[2] = -1, c[3] = 1;
  } else { /* z >= 1 (>, <) or z >= 0 (>=, <=) */
    nh = 2;
    double t = op == RASP_BIN_GT || op == RASP_BIN_LT ? 1 : 0;
    b[0] = 2 - 4 * t, b[1] = 1 - 4 * t;
    c[0] = 1, c[1] = -1;
  }
  /* the indicator goes to True (False for !=), its complement to the other */
  int pos = op == RASP_BIN_NE ? df : dt, neg = op == RASP_BIN_NE ? dt : df;
  for (int k = 0; k < nh; k++) {
    int h = hid(w, b[k], 10);
    win_form(w, &u->mv[0], h, sl * s);
    win_form(w, &u->mv[1], h, -sl * s);
    wout(w, h, pos, c[k]);
    wout(w, h, neg, -c[k]);
  }
  int h = hid(w, 0, 10);
  win(w, 1, h, 1);
  wout(w, h, neg, 1);
}

static void mlp_unit(wctx *w, unit *u) {
  switch (u->mkind) {
  case M_NCMP: mlp_ncmp(w, u); break;
  case M_NWHERE: mlp_nwhere(w, u); break;
  case M_SUM: mlp_sum(w, u); break;
  case M_DECODE: mlp_decode(w, u); break;
  case M_WHERE: mlp_where(w, u); break;
  default: mlp_pair(w, u); break;
  }
}

/* Columns of one component: key values grouped by equal table rows, or
** query values by equal columns, whichever gives fewer.  Writes them when
** wq is not NULL. */
static int comp_cols(gc *g, const comp *c, int by_key, float *wq, float *wk, int d, int dh,
                     int col0, double scale) {
  int nk = g->u[c->ku].nvals, nq = g->u[c->qu].nvals;
  int nouter = by_key ? nk : nq, ninner = by_key ? nq : nk;
  int *grp = raspM_alloc(sizeof(int) * (size_t)(nouter ? nouter : 1));
  int ncol = 0;
#define T(o, i) (by_key ? c->t[(size_t)(o) * nq + (i)] : c->t[(size_t)(i) * nq + (o)])
  for (int o = 0; o < nouter; o++) {
    grp[o] = -1;
    int zero = 1;
    for (int i = 0; i < ninner && zero; i++) zero = !T(o, i);
    if (zero) continue;
    for (int p = 0; p < o && grp[o] < 0; p++) {
      if (grp[p] < 0) continue;
      int same = 1;
      for (int i = 0; i < ninner && same; i++) same = T(o, i) == T(p, i);
      if (same) grp[o] = grp[p];
    }
    if (grp[o] < 0) {
      grp[o] = ncol++;
      if (wq)
        for (int i = 0; i < ninner; i++)
          if (T(o, i)) {
            int col = col0 + grp[o];
            if (by_key) wq[(size_t)(udim(g, c->qu) + i) * dh + col] = (float)scale;
            else wk[(size_t)(udim(g, c->ku) + i) * dh + col] = 1;
          }
    }
    if (wq) {
      int col = col0 + grp[o];
      if (by_key) wk[(size_t)(udim(g, c->ku) + o) * dh + col] = 1;
      else wq[(size_t)(udim(g, c->qu) + o) * dh + col] = (float)scale;
    }
  }
#undef T
  (void)d;
  raspM_free(grp);
  return ncol;
}

static int comp_by_key(gc *g, const comp *c) {
  return comp_cols(g, c, 1, NULL, NULL, 0, 0, 0, 0) <= comp_cols(g, c, 0, NULL, NULL, 0, 0, 0, 0);
}

static int head_cols(gc *g, unit *u) {
  int cols = 1; /* BOS */
  for (int i = 0; i < u->nc; i++)
    cols += u->c[i].numeq ? 3 : u->c[i].numq ? 2 : comp_cols(g, &u->c[i], comp_by_key(g, &u->c[i]), NULL, NULL, 0, 0, 0, 0);
  return cols;
}

static int vcols(const unit *u) { return u->hmode == H_CAT ? u->nvals : u->hmode == H_MOVE ? 2 : 1; }

/* The factor every score is written with: beta sqrt(d_head) undoes the
** architecture's 1/sqrt(d_head), rounded up to a power of two, so that
** integer features times it stay exact in float32 and the scores of
** numerical equalities are exact on exact inputs (and a power-of-two gain
** F scales it, and every attn.w_q entry, by exactly F). */
double raspG_score_scale(double beta, int dh) {
  return exp2(ceil(log2(beta * sqrt((double)dh))));
}

/* A counted width's query gate (plan_count_width): at program position i
** (the indices' dimension i) BOS's logit ln(n - i), the score times
** 1/sqrt(d_head) (the gain does not scale it), nothing from `one` or
** is_bos (at BOS only BOS is visible: a causal model; the fewer and smaller
** the column's weights, the less a stock norm's shift costs its sum). */
static void count_gate(gc *g, unit *u, float *wq, int dh) {
  const unit *ix = &g->u[1];
  double lsc = (double)(1.0f / sqrtf((float)dh));
  wq[(size_t)1 * dh + u->bcol] = 0;
  wq[(size_t)0 * dh + u->bcol] = 0;
  for (int i = 0; i < g->n; i++)
    wq[(size_t)(ix->dim + i) * dh + u->bcol] = (float)(log((double)(g->n - i)) / lsc);
}

/* --ln stock: a one-hot head's value column k reads the source's values
** that map to k, or, where those are more than half of them, `one` less
** the others (as win_onehot does an MLP's set): the same at every key but
** BOS, where the source holds a one-hot (its dimensions sum to 1), and 0
** at BOS as before (`one` and the source are 0 there).  A stock norm
** charges every read, and a column such as `x == t`'s False over 100 node
** values would otherwise sum 99 reads' errors. */
static void value_complements(gc *g, const unit *u, float *wv, int dh) {
  const view *v = &u->hv;
  const unit *src = &g->u[v->unit];
  if (!src->cat || src->kind == U_ONE) return;
  int sd = udim(g, v->unit), n = v->nv;
  for (int k = 0; k < u->nvals; k++) {
    int nin = 0;
    for (int a = 0; a < n; a++) nin += wv[(size_t)(sd + a) * dh + k] != 0;
    if (!reads_complement(g, n, nin)) continue;
    wv[(size_t)1 * dh + k] += 1;
    for (int a = 0; a < n; a++) {
      float *w = &wv[(size_t)(sd + a) * dh + k];
      *w = *w != 0 ? 0 : -1;
    }
  }
}

static void write_head(gc *g, unit *u, float *wq, float *wk, float *wv, float *wo, int d,
                       int dh, double scale) {
  int col = 0;
  if (u->nc == 1 && u->c[0].numq) {
    /* score 2 q y - y^2 = q^2 - (q - y)^2: q^2 at the matching keys, at
    ** most q^2 - 1 elsewhere; BOS scores -1 (never wins: q^2 >= 0) */
    const comp *c = &u->c[0];
    int qd = udim(g, c->qu), kd = udim(g, c->ku);
    wq[(size_t)qd * dh + 0] = (float)(2 * c->qa * scale);
    wq[(size_t)1 * dh + 0] = (float)(2 * c->qb * scale);
    wq[(size_t)1 * dh + 1] = (float)scale;
    for (int a = 0; a < g->u[c->ku].nvals; a++) {
      wk[(size_t)(kd + a) * dh + 0] = (float)c->ky[a];
      wk[(size_t)(kd + a) * dh + 1] = (float)(-c->ky[a] * c->ky[a]);
    }
    wk[(size_t)0 * dh + 2] = 1;
    wq[(size_t)1 * dh + 2] = (float)(-1 * scale);
    wq[(size_t)0 * dh + 2] = (float)(10 * scale);
    u->c[0].col0 = 0;
    u->c[0].col1 = 2;
    u->bcol = 2;
  } else {
    double m = 0;
    for (int i = 0; i < u->nc; i++) {
      comp *c = &u->c[i];
      c->col0 = col;
      if (!c->numeq) {
        col += comp_cols(g, c, comp_by_key(g, c), wq, wk, d, dh, col, scale);
        c->col1 = col;
        m++;
        continue;
      }
      /* -(k - q)^2 = 2kq - k^2 - q^2 in three columns (k, q centred by
      ** sh): 0 where they are equal, at most -1 elsewhere, 0 at BOS */
      lform f;
      double lo, hi;
      raspG_lf_build(g, &c->qv, 0, c->sh, &f, &lo, &hi);
      raspG_lf_write(g, &f, wq, dh, col, scale);
      raspG_lf_build(g, &c->kv, 0, c->sh, &f, &lo, &hi);
      raspG_lf_write(g, &f, wk, dh, col, 2);
      col++;
      wq[(size_t)1 * dh + col] += (float)scale;
      raspG_lf_build(g, &c->kv, 1, c->sh, &f, &lo, &hi);
      raspG_lf_write(g, &f, wk, dh, col, -1);
      col++;
      raspG_lf_build(g, &c->qv, 1, c->sh, &f, &lo, &hi);
      raspG_lf_write(g, &f, wq, dh, col, -scale);
      wk[(size_t)1 * dh + col] += 1;
      col++;
      c->col1 = col;
    }
    u->bcol = col;
    wk[(size_t)0 * dh + col] = 1;
    wq[(size_t)1 * dh + col] = (float)((u->hmode == H_WIDTH ? m : m - 0.5) * scale);
    wq[(size_t)0 * dh + col] = (float)((m + 10) * scale);
    if (u->cw) count_gate(g, u, wq, dh);
  }
  if (u->hmode == H_WIDTH) {
    wv[0] = u->qw ? (float)u->qv : 1; /* (quantized: b_o adds QW_B, below) */
    wo[u->dim] = 1;
  } else if (u->hmode == H_MOVE) {
    lform f;
    double lo, hi, dv = dval(u->dflt);
    for (int col2 = 0; col2 < 2; col2++) {
      raspG_lf_build(g, &u->hv, col2, 0, &f, &lo, &hi);
      raspG_lf_write(g, &f, wv, dh, col2, 1);
      wo[(size_t)col2 * d + u->dim + col2] = 1;
    }
    wv[0] = (float)dv;
    wv[1] = (float)(dv * dv);
  } else if (u->hmode == H_NUM) {
    const view *v = &u->hv;
    for (int a = 0; a < v->nv; a++)
      if (v->ok[a]) wv[(size_t)(udim(g, v->unit) + a) * dh] += (float)dval(v->val[a]);
    wv[0] = (float)dval(u->dflt);
    wo[u->dim] = 1;
  } else {
    const view *v = &u->hv;
    for (int a = 0; a < v->nv; a++)
      if (v->ok[a])
        wv[(size_t)(udim(g, v->unit) + a) * dh + raspG_find(u->vals, u->nvals, v->val[a])] += 1;
    if (g->o->ln == RASPG_LN_STOCK) value_complements(g, u, wv, dh);
    wv[raspG_find(u->vals, u->nvals, u->dflt)] = 1;
    for (int k = 0; k < u->nvals; k++) wo[(size_t)k * d + u->dim + k] = 1;
  }
}

/* The eraser of unit u: minus its value.  By default one hidden unit per
** dimension, ReLU(x - lo) + lo (lo, the dimension's smallest value,
** through ONE).  Exact erasers (exact_erase): a numerical dimension x gets
** ReLU(x) and ReLU(-x), written back as -ReLU(x) + ReLU(-x) = -x: each
** hidden unit reads one nonzero term and one of them is 0, so in float32
** the MLP outputs exactly -x and the residual holds exactly 0 afterwards
** (what x was off by does not stay behind to meet the unit written there
** next, residue).  A one-hot dimension gets ReLU(x) either way. */
static void mlp_erase(wctx *w, unit *u) {
  int ncol = u->cat ? u->nvals : u->sq ? 2 : 1, ex = raspG_exact_erase(w->g);
  for (int col = 0; col < ncol; col++) {
    double lo = 0;
    for (int a = 0; a < u->nvals && !u->cat && !ex; a++) {
      double x = dval(u->vals[a]), v = col ? x * x : x;
      if (!a || v < lo) lo = v;
    }
    int h = hid(w, u->cat ? 0 : -lo, fabs(lo) + 10); /* (-0 for a numerical 0: the bytes as before) */
    win(w, u->dim + col, h, 1);
    wout(w, h, u->dim + col, -1);
    if (!u->cat && ex) {
      h = hid(w, 0, 10);
      win(w, u->dim + col, h, -1);
      wout(w, h, u->dim + col, 1);
    } else if (lo != 0) {
      h = hid(w, 0, 10);
      win(w, 1, h, 1);
      wout(w, h, u->dim + col, -lo);
    }
  }
}

/* Hidden units of layer l's MLP: its units and the erasers due there. */
int raspG_layer_width(gc *g, int l, int d, int dh, int heads) {
  wctx w = {g, d, 0, dh, NULL, NULL, NULL, heads ? 1 : 0};
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (!u->used) continue;
    if (u->kind == U_MLP && u->layer == l) mlp_unit(&w, u);
    if (u->erase && u->erase / 2 - 1 == l) mlp_erase(&w, u);
  }
  return w.h;
}

/* Heads per layer (out->heads, sized with out->mlp_width) and the shape
** they give cfg: n_layers, n_heads (the most in a layer) and d_head (the
** widest head's query/key or value columns, rounded up for PyTorch's
** attention unless no_sdpa); each used head's cols. */
void raspG_size_heads(gc *g, raspG_model *out, rasp_model_config *cfg) {
  int nl = 0;
  for (int i = 0; i < g->nu; i++)
    if (g->u[i].used && g->u[i].kind >= U_HEAD && g->u[i].layer + 1 > nl)
      nl = g->u[i].layer + 1;
  out->heads = raspM_alloc(sizeof(int) * (size_t)(nl + 1));
  out->mlp_width = raspM_alloc(sizeof(int) * (size_t)(nl + 1));
  int maxh = 1, dh = 1;
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (!u->used || u->kind != U_HEAD) continue;
    out->heads[u->layer]++;
    u->cols = head_cols(g, u);
    if (u->cols > dh) dh = u->cols;
    if (vcols(u) > dh) dh = vcols(u);
  }
  for (int l = 0; l < nl; l++)
    if (out->heads[l] > maxh) maxh = out->heads[l];
  /* zero columns up to 1, 16, 256, ...: PyTorch's scaled_dot_product_attention
  ** scales q and k each by d_head^(-1/4), a power of two only there, where
  ** its scores are then the model's own (rmodel.h, raspN_sdpa_exact) */
  if (!g->o->no_sdpa) dh = raspN_sdpa_round(dh);
  cfg->n_layers = nl;
  cfg->n_heads = maxh;
  cfg->d_head = dh;
}

/* The token and position embeddings: is-BOS, ONE, and the TOK and IDX
** units where used (a squared TOK as (t, t^2)). */
void raspG_write_embeddings(gc *g, rasp_model *m) {
  int d = m->cfg.d_model;
  float *te = raspN_data(m, "tok_emb"), *pe = raspN_data(m, "pos_emb");
  te[(size_t)m->cfg.bos_token * d + 0] = 1;
  for (int t = 1; t <= g->o->nvocab; t++) {
    te[(size_t)t * d + 1] = 1;
    int k = raspG_find(g->u[0].vals, g->u[0].nvals, (rasp_elem){t, 1});
    if (g->u[0].used && k >= 0 && g->u[0].sq) {
      te[(size_t)t * d + g->u[0].dim] = (float)t;
      te[(size_t)t * d + g->u[0].dim + 1] = (float)((double)t * t);
    } else if (g->u[0].used && k >= 0)
      te[(size_t)t * d + g->u[0].dim + k] = 1;
  }
  if (g->u[1].used)
    for (int p = 1; p <= g->n; p++) pe[(size_t)p * d + g->u[1].dim + p - 1] = 1;
}

/* Tensor s of layer l ("attn.w_q", ...). */
float *raspG_layer_data(rasp_model *m, int l, const char *s) {
  char name[64];
  snprintf(name, sizeof name, "layers.%d.%s", l, s);
  return raspN_data(m, name);
}

/* Hidden unit 0 of a layer with heads: ReLU(is_bos), which takes back what
** the layer's heads wrote at BOS (their defaults). */
static void undo_bos(wctx *w, int l) {
  gc *g = w->g;
  int h = w->h++;
  w->w_in[h] = 1;
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (!u->used || u->kind != U_HEAD || u->layer != l) continue;
    if (u->hmode == H_CAT) wout(w, h, u->dim + raspG_find(u->vals, u->nvals, u->dflt), -1);
    else if (u->hmode == H_MOVE) {
      wout(w, h, u->dim, -dval(u->dflt));
      wout(w, h, u->dim + 1, -dval(u->dflt) * dval(u->dflt));
    }
    else wout(w, h, u->dim, u->hmode == H_WIDTH ? -qwidth_bos(u) : -dval(u->dflt));
  }
}

/* At BOS layer l's heads have written their BOS values (the undo comes in
** this MLP): every other hidden unit is kept off there by a large enough
** -L * is_bos, whatever it reads. */
static void off_at_bos(wctx *w, int l) {
  gc *g = w->g;
  int d = w->d, dmlp = w->dmlp;
  double *bv = raspM_alloc(sizeof(double) * (size_t)d);
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (!u->used || u->kind != U_HEAD || u->layer != l) continue;
    double dv = dval(u->dflt);
    if (u->hmode == H_CAT) bv[u->dim + raspG_find(u->vals, u->nvals, u->dflt)] = 1;
    else if (u->hmode == H_WIDTH) bv[u->dim] = qwidth_bos(u);
    else if (u->hmode == H_MOVE) bv[u->dim] = dv, bv[u->dim + 1] = dv * dv;
    else bv[u->dim] = dv;
  }
  for (int h = 1; h < w->h; h++) {
    double pre = (double)w->b_in[h] + w->w_in[h];
    for (int r = 2; r < d; r++)
      if (bv[r] != 0) pre += bv[r] * w->w_in[(size_t)r * dmlp + h];
    if (pre > -1) w->w_in[h] -= (float)(pre + 10);
  }
  raspM_free(bv);
}

/* Layer l: its heads (each unit's hslot), then its MLP: the BOS undo, its
** MLP units and the erasers due there (their hidden units [h0, h1) and
** [e0, e1)), every hidden unit off at BOS. */
void raspG_write_layer(gc *g, raspG_model *out, int l) {
  rasp_model *m = &out->model;
  int d = m->cfg.d_model, dh = m->cfg.d_head, hh = 0;
  float *wq = raspG_layer_data(m, l, "attn.w_q"), *wk = raspG_layer_data(m, l, "attn.w_k"),
        *wv = raspG_layer_data(m, l, "attn.w_v"), *wo = raspG_layer_data(m, l, "attn.w_o"),
        *bo = raspG_layer_data(m, l, "attn.b_o");
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (!u->used || u->kind != U_HEAD || u->layer != l) continue;
    size_t off = (size_t)hh * d * dh;
    write_head(g, u, wq + off, wk + off, wv + off, wo + (size_t)hh * dh * d, d, dh,
               out->score_scale * head_gain(g, u));
    if (u->qw) bo[u->dim] = (float)QW_B;
    u->hslot = hh++;
  }
  wctx w = {g, d, m->cfg.d_mlp, dh, raspG_layer_data(m, l, "mlp.w_in"), raspG_layer_data(m, l, "mlp.b_in"),
            raspG_layer_data(m, l, "mlp.w_out"), 0};
  if (hh) undo_bos(&w, l);
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (!u->used) continue;
    if (u->kind == U_MLP && u->layer == l) {
      u->h0 = w.h;
      mlp_unit(&w, u);
      u->h1 = w.h;
    }
    if (u->erase && u->erase / 2 - 1 == l) {
      u->e0 = w.h;
      mlp_erase(&w, u);
      u->e1 = w.h;
    }
  }
  if (hh) off_at_bos(&w, l);
}

/* The readout: the output unit's one-hot times the logit scale, or for a
** number (quad) logits quadratic in it. */
void raspG_write_readout(gc *g, raspG_model *out, const view *ov, int quad) {
  float *un = raspN_data(&out->model, "unembed");
  int no = out->model.cfg.n_out;
  if (!quad) {
    for (int a = 0; a < ov->nv; a++)
      if (ov->ok[a])
        un[(size_t)(udim(g, ov->unit) + a) * no + raspG_find(out->out_vals, out->n_out, ov->val[a])] =
            (float)out->logit_scale;
    return;
  }
  /* -X ((x - sh) - (v - sh))^2 = X (2 (v-sh)(x-sh) - (x-sh)^2 - (v-sh)^2):
  ** 0 for the right value, at most -X for every other */
  double sh = floor((dval(out->out_vals[0]) + dval(out->out_vals[out->n_out - 1])) / 2);
  double X = out->logit_scale, lo, hi;
  lform f0, f1;
  raspG_lf_build(g, ov, 0, sh, &f0, &lo, &hi);
  raspG_lf_build(g, ov, 1, sh, &f1, &lo, &hi);
  /* proof-driven: without the -X (x - sh)^2 that every logit shares
  ** (no logit difference moves), so the readout reads no x^2, whose
  ** error a move over ties makes large at |V| = 1000 (its sums stay
  ** exact on the grain X, a power of two: below) */
  int no_sq = raspG_proof_driven(g);
  for (int j = 0; j < out->n_out; j++) {
    double v = dval(out->out_vals[j]) - sh;
    raspG_lf_write(g, &f0, un, no, j, 2 * v * X);
    if (!no_sq) raspG_lf_write(g, &f1, un, no, j, -X);
    un[(size_t)1 * no + j] += (float)(-v * v * X);
  }
}
