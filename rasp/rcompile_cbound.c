/*
** rcompile_cbound.c -- a noise bound composed over the units.
**
** What raspG_noise_bound's per-layer intervals cannot see: the errors the
** margins proved per unit, composed from the embeddings to the readout.
*/
#include "rcompile_int.h"

/* ---- a noise bound composed over the units ---------------------------------
** The per-dimension bound (raspG_noise_bound, below) propagates intervals,
** which add up where values cancel.  This one starts from the value sets:
** at every point of the forward pass each residual dimension holds a known
** unit (or nothing), whose values bound its magnitude exactly (Mag), and
** what is carried is only the error E[d] of the perturbed float32 pass
** (every parameter moved by at most eps) against the values (non-BOS
** positions; E0 at BOS).  With S = sum_d (Mag[d] + E[d]) + 1 and
** g_k = k u / (1 - k u):
**   a linear read y = sum_r w_r x_r + b is off by sum |w_r| E[r] + eps S +
**     g_(D+1) sum |w_r| (Mag[r] + E[r]) (a perturbed weight meets every
**     dimension; the float32 sum's rounding);
**   a head: every score is off by at most delta (its query and key
**     columns' errors times the other side's size, the dot product's and
**     the scaling's rounding), so with its design gap G (the attention
**     margin) the selected keys still win while 2 delta < G, the weight
**     leaking past them is at most (n + 1) e^-(G - 2 delta) (logits), and
**     an averaging head's selected weights differ by at most e^(2 delta);
**     its output column is off by the value column's error, the leak times
**     the range of the values, for an average (e^(2 delta) - 1) times it,
**     and the softmax's and weighted sum's rounding ((n + 5) u of the
**     values); W_o then adds |W_o| times that, and its perturbation eps
**     times the head's output size to every dimension, padding heads too;
**   an MLP hidden unit h is off by delta_h (a linear read); over the value
**     sets its pre-activation is at most zmax_h, so where zmax_h <= -delta_h
**     it stays exactly 0, and elsewhere ReLU moves it by at most delta_h;
**     the output dimension d is off by sum_h |W_out[h][d]| delta_h over the
**     units that can be on, plus eps (sum_h (zmax_h+ + delta_h) + 1) on every
**     dimension (perturbed zeros included) and the sums' rounding;
**   at BOS every hidden unit but the undo is off by at least its BOS gate
**     (checked: the bound fails if delta_h reaches it) and every head
**     attends BOS alone;
**   each addition to the residual adds u (Mag + E).
** The readout's logit for value v is off by a linear read's error; every
** output stays right while twice that is below the readout's margin (the
** right logit's lead over every other, from the value sets); as for the
** per-dimension bound, a quarter is demanded.  Sound for
** any input of the compiled length, as the per-dimension bound; tighter
** because magnitudes come from the value sets and a unit that is off stays
** off, not because errors are reset: a step read on its hinge passes its
** input error on. */

typedef struct cbs {
  gc *g;
  raspG_model *out;
  double eps, u;
  int D;
  double *Mag, *E, *E0, *Mag0;
  double S, S0; /* the current sublayer's input sizes */
} cbs;

static double cb_gam(double u, double k) { return k * u < 0.5 ? k * u / (1 - k * u) : 1e300; }

/* The error of column col of W (rows: residual dims, ld) read at a non-BOS
** position (bos = 0) or at BOS (bos = 1); *T gets sum |w| (Mag + E). */
static double cb_read(const cbs *s, const float *W, int ld, int col, double S, int bos, double *T) {
  double e = 0, t = 0;
  const double *E = bos ? s->E0 : s->E, *M = bos ? s->Mag0 : s->Mag;
  for (int r = 0; r < s->D; r++) {
    double w = fabs((double)W[(size_t)r * ld + col]);
    if (w == 0) continue;
    e += w * E[r];
    t += w * (M[r] + E[r]);
  }
  *T = t;
  return e + s->eps * S + cb_gam(s->u, s->D + 1) * (t + s->eps * S);
}

double raspG_cb_colerr(const gc *g, const float *W, int ld, int col, int bos, double *T) {
  const cbs *s = g->cb;
  return cb_read(s, W, ld, col, bos ? s->S0 : s->S, bos, T);
}

static double cb_sum(const double *M, const double *E, int D) {
  double S = 1;
  for (int r = 0; r < D; r++) S += M[r] + E[r];
  return S;
}

/* Magnitude of unit uid's dimension k. */
static double cb_dim_mag(const gc *g, int uid, int k) {
  const unit *s = &g->u[uid];
  if (s->cat) return 1;
  double m = 0;
  for (int a = 0; a < s->nvals; a++) {
    double x = fabs(dval(s->vals[a]));
    m = fmax(m, s->sq && k ? x * x : x);
  }
  return m;
}

static void cb_place(cbs *s, int uid, int on) {
  const unit *u = &s->g->u[uid];
  if (!u->used || u->dim < 0) return;
  for (int k = 0; k < usize(u); k++) s->Mag[u->dim + k] = on ? cb_dim_mag(s->g, uid, k) : 0;
}

/* The largest pre-activation of hidden unit h over the value sets of its
** sources src[0..ns) (and ONE when not among them). */
static double cb_zmax(const gc *g, const float *wi, const float *bi, int F, int h, const int *src,
                      int ns) {
  int has_one = 0;
  for (int k = 0; k < ns; k++) has_one |= g->u[src[k]].kind == U_ONE;
  double z = (double)bi[h] + (has_one ? 0 : (double)wi[(size_t)1 * F + h]), t, wre;
  for (int k = 0; k < ns; k++) {
    double mx = -INFINITY;
    for (int a = 0; a < g->u[src[k]].nvals; a++)
      mx = fmax(mx, raspG_uv_dot(g, src[k], a, wi, F, h, RASPG_FP32, &t, &wre));
    if (g->u[src[k]].nvals) z += mx;
  }
  return z;
}

/* The MLP unit's hidden units [h0, h1) over every combination of its
** sources' values (at most a few million steps): per combination, the units
** surely on (z > delta) pass their input errors through their summed
** gradient, sum_h W_out[h][d] W_in[r][h], which is 0 where a saturated step
** has both of its units on; units near their hinge (|z| <= delta) add
** |W_out| delta; those surely off add nothing.  Adds the largest error per
** output dimension to oe; 0 (nothing added) when there are too many. */
static int cb_mlp_combos(cbs *s, const float *wi, const float *bi, const float *wt, int F, int h0,
                         int h1, const int *src, int ns, double S, double *oe) {
  gc *g = s->g;
  int D = s->D, nh = h1 - h0;
  if (nh <= 0) return 1;
  double combos = 1;
  for (int k = 0; k < ns; k++) combos *= g->u[src[k]].nvals ? g->u[src[k]].nvals : 1;
  /* rows read and dims written */
  int *rows = raspM_alloc(sizeof(int) * (size_t)D * 2), *outs = rows + D, nr = 0, no = 0;
  for (int r = 0; r < D; r++) {
    int any = 0, anyo = 0;
    for (int h = h0; h < h1; h++) {
      any |= wi[(size_t)r * F + h] != 0;
      anyo |= wt[(size_t)h * D + r] != 0;
    }
    if (any) rows[nr++] = r;
    if (anyo) outs[no++] = r;
  }
  if (combos * nh * (nr + 1) * (no + 1) > 3e7 || combos > 1e6) {
    raspM_free(rows);
    return 0;
  }
  double *z = raspM_alloc(sizeof(double) * (size_t)nh * 4), *din = z + nh, *dw = din + nh,
         *zb = dw + nh;
  int has_one = 0;
  for (int k = 0; k < ns; k++) has_one |= g->u[src[k]].kind == U_ONE;
  for (int h = h0; h < h1; h++) {
    double e = 0, t = 0;
    for (int r = 0; r < D; r++) {
      double w = fabs((double)wi[(size_t)r * F + h]);
      e += w * s->E[r];
      t += w * (s->Mag[r] + s->E[r]);
    }
    din[h - h0] = e;
    dw[h - h0] = s->eps * S + cb_gam(s->u, D + 1) * (t + s->eps * S) + s->u * t;
    zb[h - h0] = (double)bi[h] + (has_one ? 0 : (double)wi[(size_t)1 * F + h]);
  }
  int *idx = raspM_alloc(sizeof(int) * (size_t)(ns + 1));
  double *grad = raspM_alloc(sizeof(double) * (size_t)(nr ? nr : 1));
  for (;;) {
    double t, wre;
    for (int h = 0; h < nh; h++) {
      z[h] = zb[h];
      for (int k = 0; k < ns; k++)
        if (g->u[src[k]].nvals) z[h] += raspG_uv_dot(g, src[k], idx[k], wi, F, h0 + h, RASPG_FP32, &t, &wre);
    }
    for (int o = 0; o < no; o++) {
      int d = outs[o];
      double err = 0;
      for (int q = 0; q < nr; q++) grad[q] = 0;
      for (int h = 0; h < nh; h++) {
        double w = (double)wt[(size_t)(h0 + h) * D + d], dl = din[h] + dw[h];
        if (w == 0 || z[h] < -dl) continue;
        if (z[h] <= dl) { /* near its hinge */
          err += fabs(w) * dl;
          continue;
        }
        err += fabs(w) * dw[h] + cb_gam(s->u, F + 1) * fabs(w) * (z[h] + dl);
        for (int q = 0; q < nr; q++) grad[q] += w * (double)wi[(size_t)rows[q] * F + h0 + h];
      }
      for (int q = 0; q < nr; q++) err += fabs(grad[q]) * s->E[rows[q]];
      if (err > oe[d]) oe[d] = err;
    }
    int k = 0;
    while (k < ns && ++idx[k] >= (g->u[src[k]].nvals ? g->u[src[k]].nvals : 1)) idx[k++] = 0;
    if (k == ns) break;
  }
  raspM_free(idx);
  raspM_free(grad);
  raspM_free(z);
  raspM_free(rows);
  return 1;
}

/* cb_run's plan: the embedding's errors (cb_embed), then per layer its
** attention (cb_attention: each head's score, leak and value errors,
** cb_head, then W_o) and its MLP (cb_mlp: each unit's hidden errors,
** cb_mlp_part, the BOS undo and padding, then the units it writes or
** erases), and the readout's deviation against its margin (cb_readout).
** oe, oe0 (D each) and ehv, ehv0 (d_head each) are the scratch the steps
** share; a step returns 1 when the bound fails there. */
typedef struct cbw {
  double *oe, *oe0;   /* per residual dimension: this sublayer's output error */
  double *ehv, *ehv0; /* per head column: the head's output error */
} cbw;

/* The embedding: two perturbed entries and one rounded sum per dimension. */
static void cb_embed(cbs *s) {
  for (int i = 0; i < 3; i++) cb_place(s, i, 1);
  s->Mag0[0] = 1;
  for (int r = 0; r < s->D; r++) {
    s->E[r] = 2 * s->eps + s->u * (s->Mag[r] + 2 * s->eps);
    s->E0[r] = 2 * s->eps + s->u * (s->Mag0[r] + 2 * s->eps);
  }
}

/* Tensor t of layer l. */
static const float *cb_tensor(rasp_model *m, int l, const char *t) {
  char nm[64];
  snprintf(nm, sizeof nm, "layers.%d.%s", l, t);
  return raspN_data(m, nm);
}

/* Head slot hd of layer l (hu its unit, NULL for padding): its output
** columns' errors into w->ehv (w->ehv0 at BOS), and the sizes of its
** output into *hvsum, *hvsum0.  1 when its selected keys may lose. */
static int cb_head(cbs *s, int l, int hd, unit *hu, cbw *w, double *hvsum, double *hvsum0) {
  gc *g = s->g;
  rasp_model *m = &s->out->model;
  const rasp_model_config *c = &m->cfg;
  int D = c->d_model, dh = c->d_head, n = c->max_len, fail = 0;
  double u = s->u, S = s->S, S0 = s->S0, lsc = (double)(1.0f / sqrtf((float)dh));
  size_t off = (size_t)hd * D * dh;
  const float *wq = cb_tensor(m, l, "attn.w_q") + off, *wk = cb_tensor(m, l, "attn.w_k") + off,
              *wv = cb_tensor(m, l, "attn.w_v") + off;
  double delta = 0, delta0 = 0, dbq = 0, T, T2, sabs = 0, sabq = 0;
  /* score error: columns' errors times the other side's size (dbq: of
  ** the BOS query, against any key) */
  for (int j = 0; j < dh; j++) {
    double eq = cb_read(s, wq, dh, j, S, 0, &T), ek = cb_read(s, wk, dh, j, S, 0, &T2);
    double ek0, T3, Tq0, eq0 = cb_read(s, wq, dh, j, S0, 1, &Tq0);
    ek0 = cb_read(s, wk, dh, j, S0, 1, &T3);
    delta += eq * (T2 + ek) + T * ek + cb_gam(u, dh) * T * T2;
    delta0 += eq * (T3 + ek0) + T * ek0 + cb_gam(u, dh) * T * T3;
    dbq += eq0 * (fmax(T2, T3) + fmax(ek, ek0)) + Tq0 * fmax(ek, ek0) +
           cb_gam(u, dh) * Tq0 * fmax(T2, T3);
    sabs += T * fmax(T2, T3);
    sabq += Tq0 * fmax(T2, T3);
  }
  /* the scaling's and the max subtraction's rounding */
  delta = lsc * (delta + 2 * u * sabs);
  delta0 = lsc * (delta0 + 2 * u * sabs);
  dbq = lsc * (dbq + 2 * u * sabq);
  if (!hu) {
    for (int cc = 0; cc < dh; cc++) {
      w->ehv[cc] = cb_read(s, wv, dh, cc, S, 0, &T) + T;
      w->ehv0[cc] = cb_read(s, wv, dh, cc, S0, 1, &T2) + T2;
      *hvsum += T + w->ehv[cc], *hvsum0 += T2 + w->ehv0[cc];
    }
    return 0;
  }
  /* the head's own analysis (head_margin) with these errors: per key
  ** and query value, the gap left, the leak and the spread */
  double sm = hu->margin, sn = hu->need, sl = hu->leak, sl0 = hu->leak0, ss = hu->spread;
  const char *sw = hu->why;
  g->cb = s;
  raspG_head_margin(g, hu, m, RASPG_FP32);
  g->cb = NULL;
  double G = hu->margin, Gp = hu->margin - hu->need, leak = hu->leak, spread = hu->spread;
  hu->margin = sm, hu->need = sn, hu->leak = sl, hu->leak0 = sl0, hu->spread = ss;
  hu->why = sw;
  if (G < INFINITY && !(Gp > 0)) fail = 1;
  /* at BOS: only BOS's key scores (its gate, head_margin's leak0),
  ** every score moved by at most dbq */
  double leak0 = (double)n * exp(-((double)wq[hu->bcol] * wk[hu->bcol] * lsc - 2 * dbq));
  int self = (int)(hu - g->u), avg = hu->hmode == H_WIDTH || hu->hmode == H_NUM;
  double vrange = 2 * raspG_unit_max(g, self);
  for (int cc = 0; cc < dh; cc++) {
    double ev = cb_read(s, wv, dh, cc, S, 0, &T), ev0 = cb_read(s, wv, dh, cc, S0, 1, &T2);
    double e = ev + leak * vrange + (n + 5) * u * T;
    if (avg) e += (exp(spread) - 1) * vrange;
    w->ehv[cc] = e;
    w->ehv0[cc] = ev0 + (vrange > 0 ? leak0 * vrange : 0) + (n + 5) * u * T2;
    *hvsum += T + e;
    *hvsum0 += T2 + w->ehv0[cc];
  }
  return fail;
}

/* Layer l's attention: every head slot (cb_head), its output through W_o
** and W_o's perturbation, then the heads' units placed and every residual
** dimension's error grown by the sublayer's.  1 when the bound fails. */
static int cb_attention(cbs *s, int l, cbw *w) {
  gc *g = s->g;
  rasp_model *m = &s->out->model;
  const rasp_model_config *c = &m->cfg;
  int D = c->d_model, H = c->n_heads, dh = c->d_head, fail = 0;
  double eps = s->eps, u = s->u;
  const float *wo = cb_tensor(m, l, "attn.w_o");
  double bg = eps, bg0 = eps;
  s->S = cb_sum(s->Mag, s->E, D), s->S0 = cb_sum(s->Mag0, s->E0, D);
  for (int r = 0; r < D; r++) w->oe[r] = w->oe0[r] = 0;
  for (int hd = 0; hd < H; hd++) {
    unit *hu = NULL;
    for (int i = 0; i < g->nu; i++)
      if (g->u[i].used && g->u[i].kind == U_HEAD && g->u[i].layer == l && g->u[i].hslot == hd)
        hu = &g->u[i];
    double hvsum = 0, hvsum0 = 0;
    if (cb_head(s, l, hd, hu, w, &hvsum, &hvsum0)) fail = 1;
    const float *who = wo + (size_t)hd * dh * D;
    for (int d = 0; d < D; d++)
      for (int cc = 0; cc < dh; cc++) {
        double wa = fabs((double)who[(size_t)cc * D + d]);
        w->oe[d] += wa * w->ehv[cc];
        w->oe0[d] += wa * w->ehv0[cc];
      }
    bg += eps * (hvsum + 1);
    bg0 += eps * (hvsum0 + 1);
  }
  for (int i = 0; i < g->nu; i++)
    if (g->u[i].used && g->u[i].kind == U_HEAD && g->u[i].layer == l) {
      cb_place(s, i, 1);
      const unit *hu = &g->u[i];
      for (int k = 0; k < usize(hu); k++)
        s->Mag0[hu->dim + k] = hu->cat ? 1 : fabs(dval(hu->dflt)) * (hu->sq && k ? fabs(dval(hu->dflt)) : 1) + (hu->hmode == H_WIDTH ? qwidth_bos(hu) : 0);
    }
  for (int r = 0; r < D; r++) {
    s->E[r] += w->oe[r] + bg + u * (s->Mag[r] + s->E[r] + w->oe[r] + bg);
    s->E0[r] += w->oe0[r] + bg0 + u * (s->Mag0[r] + s->E0[r] + w->oe0[r] + bg0);
  }
  return fail;
}

/* Hidden units [h0, h1) of one MLP unit (or its eraser) reading src[0..ns):
** their errors into w->oe and their largest activations into *act, each
** marked in done[].  1 when one is not off at BOS by its gate. */
static int cb_mlp_part(cbs *s, const float *wi, const float *bi, const float *wt, int h0, int h1,
                       const int *src, int ns, cbw *w, double *act, unsigned char *done) {
  gc *g = s->g;
  const rasp_model_config *c = &s->out->model.cfg;
  int D = c->d_model, F = c->d_mlp, fail = 0;
  double u = s->u, S = s->S, S0 = s->S0;
  if (cb_mlp_combos(s, wi, bi, wt, F, h0, h1, src, ns, S, w->oe)) {
    /* per combination of values: errors cancel through the units on */
    for (int h = h0; h < h1; h++) {
      double T, dl = cb_read(s, wi, F, h, S, 0, &T), T0, dl0 = cb_read(s, wi, F, h, S0, 1, &T0);
      double zmax = cb_zmax(g, wi, bi, F, h, src, ns);
      done[h] = 1;
      double pre0 = (double)bi[h] + wi[h];
      for (int r = 2; r < D; r++) pre0 += s->Mag0[r] * fabs((double)wi[(size_t)r * F + h]);
      if (pre0 > -dl0) fail = 1;
      if (zmax > -dl - u * T) *act += fmax(zmax, 0) + dl + u * T;
    }
    return fail;
  }
  for (int h = h0; h < h1; h++) {
    double T, dl = cb_read(s, wi, F, h, S, 0, &T), T0, dl0 = cb_read(s, wi, F, h, S0, 1, &T0);
    dl += u * T; /* the hidden sum's result */
    double zmax = cb_zmax(g, wi, bi, F, h, src, ns);
    done[h] = 1;
    /* at BOS: off by its gate */
    double pre0 = (double)bi[h] + wi[h];
    for (int r = 2; r < D; r++) pre0 += s->Mag0[r] * fabs((double)wi[(size_t)r * F + h]);
    if (pre0 > -dl0) fail = 1;
    if (zmax <= -dl) continue;
    *act += fmax(zmax, 0) + dl;
    for (int d = 0; d < D; d++) {
      double wa = fabs((double)wt[(size_t)h * D + d]);
      if (wa != 0) w->oe[d] += wa * dl + cb_gam(u, F + 1) * wa * (fmax(zmax, 0) + dl);
    }
  }
  return fail;
}

/* Layer l's MLP: every unit and eraser of the layer (cb_mlp_part, over its
** distinct sources), the BOS undo and padding units, then the units
** written or erased placed and the residual's errors grown.  1 when the
** bound fails. */
static int cb_mlp(cbs *s, int l, cbw *w) {
  gc *g = s->g;
  rasp_model *m = &s->out->model;
  const rasp_model_config *c = &m->cfg;
  int D = c->d_model, F = c->d_mlp, fail = 0;
  double eps = s->eps, u = s->u;
  const float *wi = cb_tensor(m, l, "mlp.w_in"), *bi = cb_tensor(m, l, "mlp.b_in"),
              *wt = cb_tensor(m, l, "mlp.w_out");
  s->S = cb_sum(s->Mag, s->E, D), s->S0 = cb_sum(s->Mag0, s->E0, D);
  double act = 0;
  for (int r = 0; r < D; r++) w->oe[r] = w->oe0[r] = 0;
  unsigned char *done = raspM_alloc((size_t)F + 1);
  int src[2 * MAXCOMPS + 4], ns;
  for (int i = 0; i < g->nu; i++) {
    unit *uu = &g->u[i];
    if (!uu->used) continue;
    for (int part = 0; part < 2; part++) {
      int h0 = part ? uu->e0 : uu->h0, h1 = part ? uu->e1 : uu->h1;
      int lay = part ? uu->erase / 2 - 1 : uu->layer;
      if ((part ? !uu->erase : uu->kind != U_MLP) || lay != l) continue;
      if (part) src[0] = i, ns = 1;
      else raspG_unit_sources(uu, src, &ns);
      { /* distinct sources */
        int k2 = 0;
        for (int a2 = 0; a2 < ns; a2++) {
          int dup = 0;
          for (int b2 = 0; b2 < k2; b2++) dup |= src[b2] == src[a2];
          if (!dup) src[k2++] = src[a2];
        }
        ns = k2;
      }
      if (cb_mlp_part(s, wi, bi, wt, h0, h1, src, ns, w, &act, done)) fail = 1;
    }
  }
  /* the BOS undo (hidden unit 0 where the layer has heads): ReLU(is_bos),
     0 elsewhere up to its error; every other unknown hidden unit (padding)
     reads noise only */
  for (int h = 0; h < F; h++) {
    if (done[h]) continue;
    double T, dl = cb_read(s, wi, F, h, s->S, 0, &T) + fabs((double)bi[h]) , T0, dl0 = cb_read(s, wi, F, h, s->S0, 1, &T0);
    act += dl;
    for (int d = 0; d < D; d++) {
      double wa = fabs((double)wt[(size_t)h * D + d]);
      if (wa != 0) w->oe[d] += wa * dl, w->oe0[d] += wa * dl0;
    }
  }
  raspM_free(done);
  double bgm = eps * (act + 1);
  /* units written or erased here */
  for (int i = 0; i < g->nu; i++) {
    const unit *uu = &g->u[i];
    if (!uu->used) continue;
    if (uu->kind == U_MLP && uu->layer == l && uu->alias < 0) cb_place(s, i, 1);
    if (uu->erase && uu->erase / 2 - 1 == l) cb_place(s, i, 0);
    if (uu->kind == U_HEAD && uu->layer == l)
      for (int k = 0; k < usize(uu); k++) s->Mag0[uu->dim + k] = 0;
  }
  for (int r = 0; r < D; r++) {
    s->E[r] += w->oe[r] + bgm + u * (s->Mag[r] + s->E[r] + w->oe[r] + bgm);
    s->E0[r] += w->oe0[r] + bgm + u * (s->Mag0[r] + s->E0[r] + w->oe0[r] + bgm);
  }
  return fail;
}

/* The readout: each logit's error against the margin, a quarter of the
** lead demanded (as raspG_noise_bound); the largest ratio. */
static double cb_readout(cbs *s, const view *ov) {
  rasp_model *m = &s->out->model;
  const rasp_model_config *c = &m->cfg;
  const float *un = raspN_data(m, "unembed");
  double S = cb_sum(s->Mag, s->E, c->d_model), mg, nd, T, res = 0;
  raspG_readout_margin(s->g, s->out, ov, RASPG_FP32, &mg, &nd);
  for (int j = 0; j < c->n_out; j++) {
    double e = cb_read(s, un, c->n_out, j, S, 0, &T) + s->u * T;
    res = fmax(res, 4 * e / mg); /* below a quarter of the lead, as raspG_noise_bound */
    s->out->cb_dev = fmax(s->out->cb_dev, e);
  }
  return res;
}

/* The largest logit deviation over the margin's half (< 1: every output
** right), or 1e300 when a step of the bound fails. */
static double cb_run(gc *g, raspG_model *out, const view *ov, double eps, double u) {
  const rasp_model_config *c = &out->model.cfg;
  int D = c->d_model, dh = c->d_head;
  cbs s = {g, out, eps, u, D, NULL, NULL, NULL, NULL, 0, 0};
  s.Mag = raspM_alloc(sizeof(double) * (size_t)D * 4);
  s.E = s.Mag + D, s.E0 = s.E + D, s.Mag0 = s.E0 + D;
  cbw w;
  w.oe = raspM_alloc(sizeof(double) * (size_t)D * 2), w.oe0 = w.oe + D;
  w.ehv = raspM_alloc(sizeof(double) * (size_t)(dh + 1) * 2), w.ehv0 = w.ehv + dh + 1;
  double res = 0;
  int fail = 0;
  cb_embed(&s);
  for (int l = 0; l < c->n_layers && !fail; l++) {
    if (cb_attention(&s, l, &w)) fail = 1;
    if (cb_mlp(&s, l, &w)) fail = 1;
  }
  if (!fail) res = cb_readout(&s, ov);
  raspM_free(s.Mag);
  raspM_free(w.oe);
  raspM_free(w.ehv);
  return fail || !(res < 1e300) ? 1e300 : res;
}

/* The compositional bound at float32: the rounding-only deviation ratio and
** the largest eps (bisection on a log scale) that keeps it below 1. */
void raspG_cb_bound(gc *g, raspG_model *out, const view *ov) {
  double u = RASPG_FP32_U;
  out->cb_dev = 0;
  double r0 = cb_run(g, out, ov, 0, u);
  out->cb_dev0 = r0 < 1 ? out->cb_dev : -1;
  out->cb_eps = 0;
  if (!(r0 < 1)) return;
  double lo = -30, hi = 0;
  if (cb_run(g, out, ov, 1, u) < 1) {
    out->cb_eps = 1;
    return;
  }
  for (int it = 0; it < 40; it++) {
    double mid = (lo + hi) / 2;
    if (cb_run(g, out, ov, pow(10, mid), u) < 1) lo = mid;
    else hi = mid;
  }
  out->cb_eps = lo <= -30 ? 0 : pow(10, lo);
}
