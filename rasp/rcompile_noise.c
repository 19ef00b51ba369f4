/*
** rcompile_noise.c -- the proven noise level and --stats.
**
** A leaf: raspG_noise_bound and raspG_print_stats read the finished
** model, not the compile's state.
*/
#include "rcompile_int.h"

/* ---- proven noise level --------------------------------------------------
** A bound on how far the float32 forward pass of a perturbed copy of the
** model (every weight moved by at most eps) can move a logit from the
** real-arithmetic forward pass of the model as written.  Per residual
** dimension d it carries B[d] >= |x_d| (interval propagation, at every
** position) and E[d] >= the deviation.  The rules (u the unit roundoff,
** g_k = k u / (1 - k u), the rounding of a k-term dot product):
**   linear y = W x + b over m inputs: B' = sum |W| B + |b|,
**     E' = sum |W| E + eps (sum (B + E) + 1) + g_{m+1} (B' + sum |W| E +
**     eps (sum (B + E) + 1)) (the perturbed weight is at most |W| + eps);
**   ReLU is 1-Lipschitz and |ReLU(x)| <= |x|: B and E pass unchanged;
**   x + y: B = Bx + By, E = Ex + Ey + u (B + Ex + Ey);
**   attention: a score error delta (of q.k, rounding and the scale's product
**     included) and the softmax's own rounding r (the max subtraction on
**     scores up to S, expf within 2u, the sum, the division) change each
**     weight by a factor within e^(+-R), R = 2 delta + 4uS + 5u + g_nk, so
**     the weights move by at most e^R - 1 in total, and a head output
**     (a convex combination of values |v| <= BV with errors EV) moves by
**     (e^R - 1) BV + e^R EV + g_(nk+1) e^R (BV + EV).
** The deviation is measured from the model's design, which it computes
** with attention weights that are exactly uniform over the selected keys:
** the real weights put at most the proven leak lambda (attn_leak, from
** head_margin over the value sets, both the non-BOS and the BOS query; the
** gain sets it) past them, which moves a head's output by at most
** 2 lambda BV more (the total variation of the two weightings times the
** values' size).  A right output's logit beats every other by the logit
** margin X in the design, so every output stays right while every logit
** moves by less than X / 4.  The bound is sound but loose (interval
** magnitudes add up over the layers where the real values cancel), so deep
** models get small levels. */
typedef struct nb {
  const rasp_model *m;
  double u, eps, leak;
} nb;

static int nb_bound_dims(const raspG_model *g, double u, double *eps, double *dev0);

static double gam(double u, double k) { return k * u < 0.5 ? k * u / (1 - k * u) : 1e300; }
/* bounds saturate at 1e300 (overflow, and NaN from inf - inf or 0 * inf,
** would otherwise read as small: fmax drops a NaN) */
static double cap(double x) { return x < 1e300 ? x : 1e300; }

/* W row-major [nin][nout] (element (j, o) at W[j * nout + o]) */
static void nb_lin(const nb *s, const float *W, const float *b, int nin, int nout,
                   const double *Bi, const double *Ei, double *Bo, double *Eo) {
  double sBE = 1;
  for (int j = 0; j < nin; j++) sBE += Bi[j] + Ei[j];
  for (int o = 0; o < nout; o++) {
    double s1 = b ? fabs(b[o]) : 0, s2 = 0;
    for (int j = 0; j < nin; j++) {
      double w = fabs(W[(size_t)j * nout + o]);
      s1 += w * Bi[j];
      s2 += w * Ei[j];
    }
    double e = s2 + s->eps * sBE;
    Bo[o] = cap(s1);
    Eo[o] = cap(e + gam(s->u, nin + 1) * (s1 + e));
  }
}

static void nb_add(const nb *s, double *Bx, double *Ex, const double *By, const double *Ey,
                   int d) {
  for (int j = 0; j < d; j++) {
    Bx[j] = cap(Bx[j] + By[j]);
    Ex[j] = cap(Ex[j] + Ey[j] + s->u * (Bx[j] + Ex[j] + Ey[j]));
  }
}

/* The largest deviation of a logit, or -1 when the model is not one this
** analysis covers (layer norm, GELU). */
static double nb_logit_dev(const nb *s) {
  const rasp_model_config *c = &s->m->cfg;
  if (c->layer_norm || c->gelu) return -1;
  rasp_model *mm = (rasp_model *)s->m; /* raspN_data does not modify */
  int D = c->d_model, H = c->n_heads, Dh = c->d_head, F = c->d_mlp, O = c->n_out;
  int n = c->max_len, W = D > F ? D : F;
  if (H * Dh > W) W = H * Dh;
  if (O > W) W = O;
  double *B = raspM_alloc(sizeof(double) * (size_t)W), *E = raspM_alloc(sizeof(double) * (size_t)W);
  double *B2 = raspM_alloc(sizeof(double) * (size_t)W), *E2 = raspM_alloc(sizeof(double) * (size_t)W);
  double *BQ = raspM_alloc(sizeof(double) * (size_t)W), *EQ = raspM_alloc(sizeof(double) * (size_t)W);
  double *BK = raspM_alloc(sizeof(double) * (size_t)W), *EK = raspM_alloc(sizeof(double) * (size_t)W);
  double *BV = raspM_alloc(sizeof(double) * (size_t)W), *EV = raspM_alloc(sizeof(double) * (size_t)W);
  const float *te = raspN_data(mm, "tok_emb"), *pe = raspN_data(mm, "pos_emb");
  for (int j = 0; j < D; j++) {
    double bt = 0, bp = 0;
    for (int t = 0; t < c->vocab_size; t++) bt = fmax(bt, fabs(te[(size_t)t * D + j]));
    for (int i = 0; pe && i < n; i++) bp = fmax(bp, fabs(pe[(size_t)i * D + j]));
    B[j] = bt + bp;
    E[j] = 2 * s->eps + s->u * (B[j] + 2 * s->eps);
  }
  double scale = 1.0f / sqrtf((float)Dh);
  char nm[64];
  for (int L = 0; L < c->n_layers; L++) {
#define P(x) (snprintf(nm, sizeof nm, "layers.%d.%s", L, x), raspN_data(mm, nm))
    const float *wq = P("attn.w_q"), *wk = P("attn.w_k"), *wv = P("attn.w_v");
    const float *bq = P("attn.b_q"), *bk = P("attn.b_k"), *bv = P("attn.b_v");
    const float *wo = P("attn.w_o"), *bo = P("attn.b_o");
    for (int hd = 0; hd < H; hd++) {
      size_t off = (size_t)hd * D * Dh;
      nb_lin(s, wq + off, bq + hd * Dh, D, Dh, B, E, BQ, EQ);
      nb_lin(s, wk + off, bk + hd * Dh, D, Dh, B, E, BK, EK);
      nb_lin(s, wv + off, bv + hd * Dh, D, Dh, B, E, BV + hd * Dh, EV + hd * Dh);
      double S = 0, dq = 0, big = 0;
      for (int e = 0; e < Dh; e++) {
        S += BQ[e] * BK[e];
        dq += EQ[e] * (BK[e] + EK[e]) + BQ[e] * EK[e];
        big += (BQ[e] + EQ[e]) * (BK[e] + EK[e]);
      }
      double delta = scale * (dq + gam(s->u, Dh) * big) + s->u * scale * big;
      S = scale * S + delta;
      double R = 2 * delta + 4 * s->u * S + 5 * s->u + gam(s->u, n);
      double eR = R <= 690 ? exp(R) : 1e300; /* NaN too */
      for (int e = 0; e < Dh; e++) {
        double bvv = BV[hd * Dh + e], evv = EV[hd * Dh + e];
        EV[hd * Dh + e] = cap((eR - 1) * bvv + eR * evv + gam(s->u, n + 1) * eR * (bvv + evv) +
                              2 * s->leak * bvv);
      }
    }
    nb_lin(s, wo, bo, H * Dh, D, BV, EV, B2, E2);
    nb_add(s, B, E, B2, E2, D);
    const float *wi = P("mlp.w_in"), *bi = P("mlp.b_in"), *wt = P("mlp.w_out"),
                *bt = P("mlp.b_out");
#undef P
    nb_lin(s, wi, bi, D, F, B, E, BQ, EQ); /* ReLU keeps B and E */
    nb_lin(s, wt, bt, F, D, BQ, EQ, B2, E2);
    nb_add(s, B, E, B2, E2, D);
  }
  nb_lin(s, raspN_data(mm, "unembed"), raspN_data(mm, "unembed_b"), D, O, B, E, B2, E2);
  double dev = 0;
  for (int o = 0; o < O; o++) dev = E2[o] > dev || E2[o] != E2[o] ? E2[o] : dev;
  raspM_free(B), raspM_free(E), raspM_free(B2), raspM_free(E2);
  raspM_free(BQ), raspM_free(EQ), raspM_free(BK), raspM_free(EK);
  raspM_free(BV), raspM_free(EV);
  return dev < 1e300 ? dev : 1e300;
}

int raspG_noise_bound(const raspG_model *g, double u, double *eps, double *dev0) {
  if (g->model.cfg.layer_norm) { /* (neither bound models a layer norm) */
    *eps = 0;
    *dev0 = 1e300;
    return 0;
  }
  /* the bound composed over the units (cb_bound, at compile time) where it
  ** proves more than the per-dimension one */
  if (u == RASPG_FP32_U && g->cb_dev0 >= 0) {
    double e1, d1;
    int ok1 = nb_bound_dims(g, u, &e1, &d1);
    *eps = ok1 && e1 > g->cb_eps ? e1 : g->cb_eps;
    *dev0 = ok1 && d1 < g->cb_dev0 ? d1 : g->cb_dev0;
    return 1;
  }
  return nb_bound_dims(g, u, eps, dev0);
}

static int nb_bound_dims(const raspG_model *g, double u, double *eps, double *dev0) {
  nb s = {&g->model, u, 0, g->attn_leak};
  double limit = g->logit_scale / 4;
  *eps = 0;
  *dev0 = nb_logit_dev(&s);
  if (*dev0 < 0 || !(*dev0 < limit)) return 0;
  /* the deviation grows with eps: bisect on a log scale */
  double lo = -30, hi = 0;
  s.eps = 1;
  if (nb_logit_dev(&s) < limit) {
    *eps = 1;
    return 1;
  }
  for (int it = 0; it < 50; it++) {
    double mid = (lo + hi) / 2;
    s.eps = pow(10, mid);
    if (nb_logit_dev(&s) < limit) lo = mid;
    else hi = mid;
  }
  *eps = lo <= -30 ? 0 : pow(10, lo);
  return 1;
}

/* --stats' lines for a pre-RMSNorm model (rcompile_rms.c's proof). */
static void rms_stats(const raspG_model *g, FILE *out) {
  const rasp_model_config *c = &g->model.cfg;
  char cs[96] = "";
  size_t k = 0;
  for (int j = 0; j < g->ln_nc && k < sizeof cs; j++)
    k += (size_t)snprintf(cs + k, sizeof cs - k, "%s%d", j ? ", " : "", g->ln_c[j]);
  fprintf(out, "layer norm: pre-RMSNorm (--ln rms), d_model %d = %d + %d padding + %d "
          "constant%s (%s, times 2^%d; their squares sum to d_model 4^%d), eps 1e-5, weight 2^%d; ",
          c->d_model, g->ln_d0, c->d_model - g->ln_d0 - g->ln_nc, g->ln_nc,
          g->ln_nc == 1 ? "" : "s", cs, g->ln_q, g->ln_q, g->ln_q);
  if (!g->ln_proven) {
    fprintf(out, "the RMS norms are NOT proven exact:\n  %s\n", g->ln_why);
  } else {
    int a = g->ln_c[g->ln_nc - 1], e = (int)floor(log2((double)a * a)) + 2 * g->ln_q;
    fprintf(out, "the model's dimensions' sum of squares is at most %.3g = 2^%.1f, 2^5 or more "
            "below 2^%d (half an ulp of the smallest constant's square in %s): every RMS norm "
            "proven exactly the identity on every dimension the model reads, in %s, in any "
            "summation order (the rounding proof above holds as without it)\n",
            g->ln_S, log2(g->ln_S), e - (g->ln_f64 ? 53 : 24),
            g->ln_f64 ? "float64" : "float32", g->ln_f64 ? "float32 and float64" : "float32 only");
  }
  fprintf(out, "not proven: the noise bounds do not model layer norm\n");
}

void raspG_print_stats(const raspG_model *g, FILE *out) {
  const rasp_model_config *c = &g->model.cfg;
  fprintf(out, "d_model %d, layers %d, heads %d (d_head %d), d_mlp %d, n_out %d, %s\n",
          c->d_model, c->n_layers, c->n_heads, c->d_head, c->d_mlp, c->n_out,
          c->causal ? "causal" : "non-causal");
  fprintf(out, "heads per layer:");
  for (int l = 0; l < c->n_layers; l++) fprintf(out, " %d", g->heads[l]);
  fprintf(out, "\nMLP widths:");
  for (int l = 0; l < c->n_layers; l++) fprintf(out, " %d", g->mlp_width[l]);
  fprintf(out, "\nparameters: %zu\n", g->model.nparams);
  fprintf(out, "logit margin %.4g (--logit-scale; a right output's cross-entropy <= %.3g)\n",
          g->logit_scale, raspG_logit_ce_bound(g->n_out, g->logit_scale));
  if (g->attn_margin >= 0) {
    fprintf(out, "min attention margin %.4g (score gap in logits) at %s\n", g->attn_margin,
            g->attn_at);
    double s1 = raspG_score_scale(2 * (log((double)g->n + 1) + 21), c->d_head);
    fprintf(out, "attention gain %g (--attn-gain; scores scaled by %g, %g times gain 1's): "
            "per-key leak e^-%.4g = %.3g (a key at the smallest margin, against a selected "
            "key); proven total leak <= %.3g\n",
            g->attn_gain, g->score_scale, g->score_scale / s1, g->attn_margin,
            exp(-g->attn_margin), g->attn_leak);
  } else
    fprintf(out, "min attention margin: no heads\n");
  if (g->mlp_margin >= 0)
    fprintf(out, "min MLP margin %.4g (distance from a hinge) at %s\n", g->mlp_margin, g->mlp_at);
  else
    fprintf(out, "min MLP margin: no MLP units\n");
  if (g->moves_assumed)
    fprintf(out, "moves: %d head%s move%s one selected number where the program averages; %d "
            "assume%s %s (the first: %s), which the program does not "
            "prove: every claim below holds on inputs that keep it, --check tests them "
            "(--moves prove: exact means instead)\n",
            g->moves, g->moves == 1 ? "" : "s", g->moves == 1 ? "s" : "", g->moves_assumed,
            g->moves_assumed == 1 ? "s" : "",
            g->moves_one ? "one selected key per query (--moves one)" : "the selected values are equal",
            g->moves_at);
  else if (g->moves)
    fprintf(out, "moves: %d head%s move%s one selected number where the program averages; the "
            "program proves the selected values equal at every one\n",
            g->moves, g->moves == 1 ? "" : "s", g->moves == 1 ? "s" : "");
  if (g->sharpened)
    fprintf(out, "sharpened: %d head%s scaled by up to %g beyond the model's score scale, where "
            "the weight leaking past the selected keys kept a unit from being proven\n",
            g->sharpened, g->sharpened == 1 ? "" : "s", g->gain_max);
  if (g->precision == RASPG_FP32 && !g->fallbacks)
  {
    /* with require_proof (`rasp compile`'s default) every unit is proven
    ** and this reads "N of N"; by size (--unproven) a unit the bound does
    ** not prove is still compiled as it is, and the model is labelled */
    fprintf(out, "fp32: proven exact against rounding: %d of %d heads, MLP units and readout",
            g->checked - g->unproven, g->checked);
    if (g->unproven)
      fprintf(out, "; not proven: %d, the first %s (the encodings were chosen by size, not "
              "by this bound: --check measures)", g->unproven, g->unproven_at);
    fprintf(out, "\n");
    if (g->unproven)
      fprintf(out, "UNPROVEN MODEL: not proven exact in float32 (compiled by size, --unproven); "
              "STEM.json says so (layout.proof), and rasp apply and the Python loader warn\n");
  }
  else
    fprintf(out, "%s: every head, MLP unit and the readout proven against rounding; %d node%s "
            "compiled categorically (numerical not proven)\n",
            raspG_precision_name(g->precision), g->fallbacks, g->fallbacks == 1 ? "" : "s");
  if (c->layer_norm == RASPN_LN_RMS) {
    rms_stats(g, out);
    return;
  }
  if (c->layer_norm && g->ln_stock) {
    fprintf(out, "layer norm: stock pre-LN (--ln stock), d_model %d = %d + balance + %d sink%s, "
            "eps 4^%d, weight 2^%d (the scale exactly 1 in float32%s for every variance within "
            "the bounds); every read charged fl(x - m) with the computed mean m within %.3g (the "
            "residual's true mean, and the mean's own rounding, below 4 u T summed in any order "
            "or by Welford's updates); ", c->d_model, g->ln_d0, g->ln_ns, g->ln_ns == 1 ? "" : "s",
            g->ln_q, g->ln_q, g->ln_f64 ? " and float64" : "", g->ln_M);
    if (g->ln_bos >= 0)
      fprintf(out, "BOS's residual within %.3g of its one-hot at every attention, charged to its "
              "keys and values; ", g->ln_bos);
    if (g->ln_proven)
      fprintf(out, "every layer norm proven: each reader's sum through it is within the charges "
              "the proof above makes\n");
    else
      fprintf(out, "the layer norms are NOT proven:\n  %s\n", g->ln_why);
    fprintf(out, "not proven: the noise bounds do not model layer norm\n");
    return;
  }
  if (c->layer_norm) {
    char cs[64];
    if (g->ln_b) snprintf(cs, sizeof cs, "+-%d*2^%d, +-%d*2^%d", g->ln_a, g->ln_s, g->ln_b, g->ln_s);
    else snprintf(cs, sizeof cs, "+-%d*2^%d", g->ln_a, g->ln_s);
    fprintf(out, "layer norm: pre-LN (--ln pre), d_model %d = %d + balance + %d padding + %d "
            "constants (%s), weight 2^%d; %s\n", c->d_model, g->ln_d0,
            c->d_model - g->ln_d0 - 1 - (g->ln_b ? 4 : 2), g->ln_b ? 4 : 2, cs, g->ln_q,
            g->ln_proven ? "every layer norm proven exactly the identity on every dimension the "
            "model reads (the rounding proof above holds as without it)"
            : "the layer norms are NOT proven exact:");
    if (!g->ln_proven) fprintf(out, "  %s\n", g->ln_why);
    fprintf(out, "not proven: the noise bounds do not model layer norm\n");
    return;
  }
  double eps, dev0;
  if (raspG_noise_bound(g, RASPG_FP32_U, &eps, &dev0))
    fprintf(out, "proven: float32 rounding moves a logit by <= %.3g (< margin/4); every weight "
            "may move by up to %.3g (uniform per-weight noise) with every output right\n",
            dev0, eps);
  else
  {
    /* the noise bounds compose the errors over the whole model, more
    ** coarsely than the per-unit proof above, which can prove every unit
    ** where they prove nothing: say so, rather than seem to contradict it */
    char reach[64];
    if (dev0 < 1e300) snprintf(reach, sizeof reach, "reaches %.3g", dev0);
    else snprintf(reach, sizeof reach, "has no finite bound");
    fprintf(out, "not proven: neither noise bound (doc/compiler.md) holds for float32 rounding "
            "alone (the per-dimension one %s, not below margin/4 = %.3g)%s\n", reach,
            g->logit_scale / 4,
            g->precision == RASPG_FP32 && !g->unproven && g->checked
                ? "; they are coarser than the per-unit proof above, which holds" : "");
  }
}

double raspG_default_logit_scale(int n_out) {
  return n_out < 2 ? 1.0 : log(1000.0 * (n_out - 1));
}

double raspG_logit_ce_bound(int n_out, double scale) {
  return n_out < 2 ? 0.0 : log1p((n_out - 1) * exp(-scale));
}
