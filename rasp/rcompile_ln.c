/*
** rcompile_ln.c -- compiled models in the pre-LN architecture (--ln pre).
**
** The standard transformer most models are trained in normalises the
** residual before every attention, every MLP and the readout:
** LN(x)_i = w_i (x_i - mean) / sqrt(var + eps) + b_i over the d_model
** dimensions of one position.  A compiled model reads exact integers (node
** ids, their squares, 2^23 + a quantized width) from its residual, and its
** proof counts on them being exact; a layer norm that rescaled them by an
** input-dependent factor, even by one part in 2^24, would move a score
** built from squares of ids by more than its margin.  So here every layer
** norm is made *exactly the identity* on every dimension the model reads,
** in the float32 forward pass of rmodel.c (raspN_layer_norm: mean and
** variance summed in double, in index order; the reciprocal square root
** rounded to float once), and the rounding proof of the model without
** layer norm then holds for the model with it.
**
** The construction (ln_plan chooses it before the proof; ln_apply builds
** it from the proven model, whose dimensions keep their places, and checks
** it on the worst rows the bounds allow, ln_selftest):
**
**   * a balance dimension after the model's own (index d0): every writer
**     (token and position embeddings, each head's w_o and b_o, each MLP's
**     w_out and b_out) also writes minus the sum of what it writes into
**     the others, so in real arithmetic the residual sums to zero at every
**     position and every layer (its mean is the residue of rounding);
**   * padding (zeros) and then, as the last dimensions, the constants +K,
**     -K, +J, -J (K = a 2^s, J = b 2^s; J absent when b = 0), written by
**     the token embedding, with 2 (K^2 + J^2) = d_model 4^q (1 + delta):
**     exactly (delta = 0, s = q) where d_model = 2 (a^2 + b^2) costs at most
**     4 dimensions more than the model's own (1 + 2 or 4), else d_model =
**     d0 + 5 and a near sqrt(d_model / 2) 2^18, b the most of the rest,
**     s = q - m, m from 18 up to the first with -2^-27 < delta <= 0;
**   * every layer norm's weight is 2^q on the model's own dimensions and 0
**     on the balance, the padding and the constants; every bias 0.
**
** Why the layer norm is then exactly the identity, at every position of
** every input.  Let T bound the sum of |x_i| over the model's dimensions
** and the balance, and S the sum of their squares (ln_plan: from the value
** sets and the BOS position's residual, with slack; below).
**
**   * Mean.  The double sum runs over the model's dimensions, the balance
**     and the padding first, to some s with |s| <= T (1 + d 2^-53); then
**     +K.  K's neighbours in double are at least 2^(e-53) away (e =
**     floor(log2 K)), so with |s| < 2^(e-54) the sum rounds to K exactly,
**     -K makes it 0, and +J, -J leave it 0: the mean is exactly 0, and
**     x_i - mean = x_i.  s is chosen so that T is 2^5 below that.
**   * Variance.  (x_i - 0)^2 is exact in double; the sum is S' + d 4^q
**     (1 + delta) with S' <= S (1 + d 2^-53), each addition rounded by at
**     most 2^-53 of it, so var + eps = 4^q (1 + z) (1 + t), z = delta +
**     (S' + d eps) / (d 4^q), |t| <= 6 2^-53, and 1 / sqrt of it is
**     2^-q (1 - z/2 + ...) within 10 2^-53.  Any value in [2^-q (1 -
**     2^-25), 2^-q (1 + 2^-24)] rounds to 2^-q in float (ties go to its
**     even significand); q is chosen with -2^-27 < z <= 2^-26, so rs =
**     2^-q exactly: in real arithmetic the layer norm scales what it
**     reads by (1 + z)^-1/2, within 2^-27 of 1 (eta, the input-dependent
**     part, from S'; eps = 1e-5 is inside z), and float32 rounds that
**     scale to exactly 1.
**   * Output.  (float)(x_i 2^-q) is x_i 2^-q exactly when |x_i| >=
**     2^(q-126) (a normal float: the same significand) or x_i = 0; times
**     w_i = 2^q it is x_i again, plus b_i = 0.  A stored value below
**     2^(q-126) that is not 0 (what a head's leak leaves on a dimension
**     that should be 0) is moved by at most 2^(q-150) (gc.ln_tiny): the
**     proof adds that to every error that is not 0 (prove_residue), and
**     ln_apply checks that no value a unit can hold lies below 2^(q-126)
**     once its error is taken off.
**
** So the model is its proven no-LN model, read through layer norms that
** return what they read; the one new claim is the bounds T and S.  They are
** the value sets' (every unit that holds a dimension, its error below 1 --
** checked) and the BOS position's residual from one forward pass (in a
** causal model that position sees nothing else, so it is the same on every
** input; in a non-causal one it differs by the heads' proven leak), each
** doubled plus 1.  In real arithmetic the layer norm is the identity to
** within a factor 1 - z/2 (z <= 2^-26, far less for these models) and a
** shift of the residue's mean: the balance makes it a layer norm doing
** what a layer norm does, not one kept only by rounding.  What it is not:
** robust to another summation order.  A layer norm that adds the
** constants before the residual (or in float32: their squares exceed
** float32's range) does not return the residual (doc/compiler.md, "Pre-LN
** models").
*/
#include "rcompile_int.h"

/* The smallest even d >= need_min with d/2 = a^2 + b^2 (b <= a) and room
** for the balance and the constants (2 dimensions per nonzero one): the
** model's d_model.  *a is the largest such a. */
static int ln_width(int d0, int *a, int *b) {
  for (int d = d0 + 3;; d++) {
    if (d & 1) continue;
    int h = d / 2;
    for (int x = (int)sqrt((double)h) + 1; x >= 1; x--) {
      int r = h - x * x, y;
      if (r < 0) continue;
      y = (int)sqrt((double)r);
      while (y * y > r) y--;
      while ((y + 1) * (y + 1) <= r) y++;
      if (y * y != r || y > x) continue;
      if (d0 + 1 + (y ? 4 : 2) > d) break; /* (a smaller x only makes y larger) */
      *a = x, *b = y;
      return d;
    }
  }
}

/* Per residual dimension of the model without layer norm, a bound on |x|
** at every layer norm: the value sets of the units that hold it (an error
** below 1, checked by ln_apply) and the BOS position's residual, doubled
** plus 1.  Fresh array of d0. */
double *raspG_ln_dim_bounds(gc *g, raspG_model *out) {
  rasp_model *m = &out->model;
  int D = m->cfg.d_model, n = g->n + 1, nl = m->cfg.n_layers;
  double *B = raspM_alloc(sizeof(double) * (size_t)D);
  for (int d = 0; d < D; d++) B[d] = d < 2; /* is_bos, one */
  for (int i = 0; i < g->nu; i++) {
    const unit *u = &g->u[i];
    if (!u->used || u->dim < 0) continue;
    for (int k = 0; k < usize(u) && u->dim + k < D; k++)
      B[u->dim + k] = fmax(B[u->dim + k], raspG_col_max(g, i, u->sq && k > 0));
  }
  int *tok = raspM_alloc(sizeof(int) * (size_t)n);
  tok[0] = m->cfg.bos_token;
  for (int i = 1; i < n; i++) tok[i] = (int)g->o->input_ids[(i - 1) % g->o->ninput];
  size_t nD = (size_t)n * D;
  float *res = raspM_alloc(sizeof(float) * nD * (size_t)(1 + 2 * nl));
  float *lg = raspM_alloc(sizeof(float) * (size_t)n * (size_t)m->cfg.n_out);
  rasp_error e = {0};
  if (raspN_forward(m, tok, n, lg, res, &e))
    for (int s = 0; s < 1 + 2 * nl; s++)
      for (int d = 0; d < D; d++) B[d] = fmax(B[d], fabs((double)res[(size_t)s * nD + d]));
  else
    for (int d = 0; d < D; d++) B[d] = INFINITY;
  for (int d = 0; d < D; d++) B[d] = 2 * B[d] + 1;
  raspM_free(tok);
  raspM_free(res);
  raspM_free(lg);
  return B;
}

/* *T and *S: bounds on the sum of |x| and of x^2 over the model's
** dimensions and a balance dimension holding minus their sum
** (raspG_ln_dim_bounds), the residual a --ln pre or --ln stock layer norm
** reads. */
void raspG_ln_sums(gc *g, raspG_model *out, double *T, double *S) {
  double *B = raspG_ln_dim_bounds(g, out), t = 0, s = 0;
  for (int d = 0; d < out->model.cfg.d_model; d++) t += B[d], s += B[d] * B[d];
  raspM_free(B);
  *S = s + t * t; /* the balance holds minus their sum */
  *T = 2 * t;
}

void raspG_ln_plan(gc *g, raspG_model *out) {
  int d0 = out->model.cfg.d_model, a = 1, b = 0, m = 0;
  double T, S;
  raspG_ln_sums(g, out, &T, &S);
  /* exact constants where that costs no more than the near ones: d0 + 5,
  ** a 2^18 near sqrt(d/2) 2^18 and b 2^18 the most of the rest */
  int d1 = ln_width(d0, &a, &b);
  if (d1 > d0 + 4) /* (a < 2^24 while d < 2^12; delta > -2^-27 by m = 22) */
    for (d1 = d0 + 5, m = 18; m <= 22; m++) {
      double N = ldexp(d1 / 2.0, 2 * m); /* (an integer: d1 / 2 has one bit after the point) */
      a = (int)floor(sqrt(N));
      while ((double)a * a > N) a--;
      b = (int)floor(sqrt(N - (double)a * a));
      while ((double)b * b > N - (double)a * a) b--;
      if (((double)a * a + (double)b * b) / N - 1 > -ldexp(1, -27)) break;
    }
  int la = (int)floor(log2((double)a));
  /* mean: T (1 + d 2^-53) below 2^(e - 54), e = s + la, with 2^5 to spare */
  int sc = (int)ceil(log2(T * (1 + ldexp(1, -40)))) + 54 + 5 - la;
  /* variance: z = (S' + d eps) / (d 4^q) <= 2^-26 */
  while (sc < 120 && !((S * (1 + ldexp(1, -40)) + d1 * 1e-5) <= ldexp((double)d1, 2 * (sc + m) - 26)))
    sc++;
  out->ln_d0 = d0, out->ln_d1 = d1, out->ln_a = a, out->ln_b = b, out->ln_s = sc, out->ln_q = sc + m;
  out->ln_T = T, out->ln_S = S;
  g->ln_tiny = ldexp(1, out->ln_q - 150);
}

/* Copies tensor t0 of m0 into t1 of m1, whose one differing axis (the
** residual's) is longer: the first t0 entries along it. */
static void copy_tensor(const rasp_model *m0, const rasp_tensor *t0, rasp_model *m1,
                        const rasp_tensor *t1) {
  int ax = -1;
  for (int k = 0; k < t0->ndim; k++)
    if (t0->shape[k] != t1->shape[k]) ax = k;
  const float *src = m0->params + t0->offset;
  float *dst = m1->params + t1->offset;
  if (ax < 0) {
    memcpy(dst, src, sizeof(float) * t0->size);
    return;
  }
  size_t outer = 1, inner = 1;
  for (int k = 0; k < ax; k++) outer *= (size_t)t0->shape[k];
  for (int k = ax + 1; k < t0->ndim; k++) inner *= (size_t)t0->shape[k];
  size_t n0 = (size_t)t0->shape[ax], n1 = (size_t)t1->shape[ax];
  for (size_t o = 0; o < outer; o++)
    memcpy(dst + o * n1 * inner, src + o * n0 * inner, sizeof(float) * n0 * inner);
}

/* m0 with a residual of d1 dimensions and norms of kind (RASPN_LN_*):
** every tensor of m0 in its place in *m1, the rest 0 (the norm
** constructions fill it).  1, or 0 with err. */
int raspG_ln_widen(const rasp_model *m0, int d1, int kind, rasp_model *m1, rasp_error *err) {
  rasp_model_config cfg = m0->cfg;
  cfg.d_model = d1;
  cfg.layer_norm = kind;
  if (!raspN_init(m1, &cfg, err)) return 0;
  for (int t = 0; t < m1->ntensors; t++) {
    const rasp_tensor *t0 = raspN_tensor((rasp_model *)m0, m1->tensors[t].name);
    if (t0) copy_tensor(m0, t0, m1, &m1->tensors[t]);
  }
  return 1;
}

/* Every row of what a writer adds to the residual (the last axis of these
** tensors) gets minus the sum of its first d0 entries at d0. */
void raspG_ln_write_balance(rasp_model *m, int d0) {
  static const char *const suf[] = {"tok_emb", "pos_emb", "attn.w_o", "attn.b_o", "mlp.w_out",
                                    "mlp.b_out"};
  int D = m->cfg.d_model;
  for (int t = 0; t < m->ntensors; t++) {
    rasp_tensor *tt = &m->tensors[t];
    size_t nl = strlen(tt->name);
    int hit = 0;
    for (int k = 0; k < 6; k++) {
      size_t ns = strlen(suf[k]);
      hit |= nl >= ns && !strcmp(tt->name + nl - ns, suf[k]);
    }
    if (!hit) continue;
    for (size_t r = 0; r < tt->size / (size_t)D; r++) {
      float *row = m->params + tt->offset + r * (size_t)D;
      double s = 0;
      for (int j = 0; j < d0; j++) s += row[j];
      row[d0] = (float)-s;
    }
  }
}

/* The layer norms' weights and the constants. */
/* Every norm's weight (ln1, ln2 of each layer, ln_f): w on dimensions
** [j0, j1) (the model's own, or --ln stock's sinks); the rest keep what
** they hold (the 0 they were made with).  Shared with rcompile_rms.c and
** rcompile_lnstock.c. */
void raspG_ln_set_weights(rasp_model *m, int j0, int j1, float w) {
  char nm[64];
  for (int L = 0; L <= m->cfg.n_layers; L++)
    for (int s = 0; s < 2; s++) {
      if (L == m->cfg.n_layers && s) break;
      if (L == m->cfg.n_layers) snprintf(nm, sizeof nm, "ln_f.weight");
      else snprintf(nm, sizeof nm, "layers.%d.ln%d.weight", L, s + 1);
      float *lw = raspN_data(m, nm);
      for (int j = j0; j < j1; j++) lw[j] = w;
    }
}

static void write_norms(const raspG_model *out, rasp_model *m) {
  int D = m->cfg.d_model, d0 = out->ln_d0, nc = out->ln_b ? 4 : 2;
  float w = ldexpf(1, out->ln_q), K = ldexpf((float)out->ln_a, out->ln_s),
        J = ldexpf((float)out->ln_b, out->ln_s);
  raspG_ln_set_weights(m, 0, d0, w);
  float *te = raspN_data(m, "tok_emb");
  for (int t = 0; t < m->cfg.vocab_size; t++) {
    float *row = te + (size_t)t * D + (D - nc);
    row[0] = K, row[1] = -K;
    if (nc == 4) row[2] = J, row[3] = -J;
  }
}

/* What the construction needs of the proof: every unit's error below 1
** (the slack in raspG_ln_dim_bounds) and no value it can hold, its error taken off,
** below 2^(q-125).  1, or 0 with why. */
int raspG_ln_units_ok(gc *g, raspG_model *out) {
  double lo = ldexp(1, out->ln_q - 125);
  char nb[96];
  for (int i = 0; i < g->nu; i++) {
    const unit *u = &g->u[i];
    if (!u->used || u->dim < 0) continue;
    double ae = fmax(u->ae[0], u->ae[1]);
    if (!(ae < 1)) {
      snprintf(out->ln_why, sizeof out->ln_why, "%s may be off by %.3g (the bound needs < 1)",
               raspG_unit_name(g, u, nb, sizeof nb), ae);
      return 0;
    }
    for (int a = 0; a < u->nvals && !u->cat; a++) {
      double x = fabs(dval(u->vals[a]));
      for (int k = 0; k < (u->sq ? 2 : 1); k++) {
        double v = k ? x * x : x;
        if (v != 0 && !(v - u->ae[k] >= lo)) {
          snprintf(out->ln_why, sizeof out->ln_why, "%s holds %.3g, below 2^%d",
                   raspG_unit_name(g, u, nb, sizeof nb), v, out->ln_q - 125);
          return 0;
        }
      }
    }
  }
  return 1;
}

/* The arithmetic itself on the worst rows the bounds allow: the largest
** sum (T, spread evenly over the model's dimensions and the balance), the
** largest sum of squares (S over one dimension and the balance, summing to
** 0), and nothing but `one` and its balance.  Each must come back exactly
** on the model's dimensions. */
static int ln_selftest(const raspG_model *out, const rasp_model *m) {
  int D = m->cfg.d_model, d0 = out->ln_d0;
  rasp_model *mm = (rasp_model *)m;
  const float *w = raspN_data(mm, "ln_f.weight"), *bb = raspN_data(mm, "ln_f.bias");
  const float *te = raspN_data(mm, "tok_emb");
  float *x = raspM_alloc(sizeof(float) * (size_t)D), *y = raspM_alloc(sizeof(float) * (size_t)D);
  int ok = 1;
  for (int c = 0; c < 3 && ok; c++) {
    memcpy(x, te, sizeof(float) * (size_t)D); /* (any row: the constants) */
    for (int j = 0; j <= d0; j++) x[j] = 0;
    if (c == 0)
      for (int j = 0; j <= d0; j++) x[j] = (float)(out->ln_T * (1 - ldexp(1, -20)) / (d0 + 1));
    else {
      x[1] = (float)(c == 1 ? sqrt(out->ln_S * (1 - ldexp(1, -20)) / 2) : 1);
      x[d0] = -x[1];
    }
    raspN_layer_norm(x, w, bb, D, raspN_norm_eps(&m->cfg), y);
    for (int j = 0; j < d0; j++) ok = ok && y[j] == x[j];
  }
  raspM_free(x);
  raspM_free(y);
  return ok;
}

int raspG_ln_apply(gc *g, raspG_model *out, rasp_error *err) {
  rasp_model *m0 = &out->model, m1;
  if (!raspG_ln_widen(m0, out->ln_d1, RASPN_LN_PRE, &m1, err)) return 0;
  raspG_ln_write_balance(&m1, out->ln_d0);
  write_norms(out, &m1);
  out->ln_proven = raspG_ln_units_ok(g, out);
  if (out->ln_proven && out->ln_q > 100)
    out->ln_proven = 0, snprintf(out->ln_why, sizeof out->ln_why,
                                 "the residual's bounds need constants past 2^100");
  return raspG_ln_conclude(g, out, m0, &m1, out->ln_proven && ln_selftest(out, &m1),
                           "--ln pre: the layer norms", "a layer norm", err);
}

/* The end of a norm construction (this file's and rcompile_rms.c's): a
** proof whose self-test at the bounds' worst rows failed is no proof; the
** model with norms replaces the one without; and a proof-driven compile
** refuses an unproven one.  1, or 0 with err. */
int raspG_ln_conclude(gc *g, raspG_model *out, rasp_model *m0, rasp_model *m1, int selftest_ok,
                      const char *norms, const char *one, rasp_error *err) {
  if (out->ln_proven && !selftest_ok)
    out->ln_proven = 0, snprintf(out->ln_why, sizeof out->ln_why,
                                 "%s at the bounds' worst rows is not the identity", one);
  raspN_free(m0);
  *m0 = *m1;
  if (!out->ln_proven && g->o->require_proof) {
    raspR_setnoposc(err, RASP_E_INEXACT, "compile: %s are not proven exact: %s", norms,
                    out->ln_why);
    return 0;
  }
  return 1;
}
