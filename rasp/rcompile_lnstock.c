/*
** rcompile_lnstock.c -- compiled models for a stock layer norm (--ln stock).
**
** `--ln pre` (rcompile_ln.c) makes every layer norm exactly the identity,
** but only in rasp's own arithmetic (the mean summed in double, in index
** order): torch.nn.LayerNorm computes the mean in float32 with Welford's
** updates, in its own order, and gets it wrong by a different amount at
** every position, which a model that reads exact integers does not
** survive.  This construction is meant for the stock layer norm, in any
** order.  It does not make the layer norm the identity; it makes what the
** model reads insensitive to the one thing a stock layer norm gets wrong:
**
**   * eps = 4^p and every weight 2^p (bias 0), with every variance the
**     residual can have below 2^(2p-26) (and 2^(2p-55) where float64 is
**     claimed too, p <= 62): var + eps then rounds to exactly 4^p however
**     the variance was summed, so the scale 1/sqrt(var + eps) is exactly
**     2^-p, and times the weight, exactly 1.  The layer norm returns
**     fl(x_i - m) on every dimension it passes, m the computed mean;
**   * a balance dimension (as --ln pre's): every writer also writes minus
**     the sum of what it writes, so the residual's true mean is the
**     residue of rounding, and m is small;
**   * sink dimensions: 0 in the residual everywhere (no writer touches
**     them), weight 2^p, so the layer norm returns -m there exactly; every
**     reader of a layer norm's output (queries, keys, values, the MLPs'
**     input, the unembedding) gets sink rows that sum to exactly minus the
**     sum of its rows over the dimensions the norm passes (one row where
**     one float holds it, else two: a float and the float of the rest).
**     So every reader's rows sum to exactly 0, and the shift m cancels in
**     real arithmetic, in any order of summation.  What is left is the
**     rounding of each x_i - m (at most half an ulp of |x_i| + |m|, none
**     where x_i = 0) and that of the reader's sum over the shifted terms.
**
** What is not done: the proof.  Those two roundings are not charged by the
** per-unit proof (rcompile_prove.c), whose exactness arguments (integer
** sums on a grain, exact quantized widths) a stock layer norm voids; so
** the layer norms of such a model are reported not proven (--stats,
** STEM.json's layout.layer_norm.proven, the Python loader's warning) on a
** model whose units are proven as without layer norm.  doc/compiler.md
** ("Stock layer norms") has what --check-orders and PyTorch's own layer
** norm measure on it, and what a proof would need.
*/
#include "rcompile_int.h"

/* Chooses p (out->ln_q) from the residual's bounds, before the proof:
** the variance of fl(x - m) over d dimensions is at most (S + 2 M T +
** d M^2) / d in real arithmetic, M a bound on |m| (below), and twice that
** as summed in float32 (d < 2^20).  M: the computed mean's error, at most
** 4 u T in any order (u = 2^-24), plus the residual's true mean, at most
** the sum of the stored errors over d (each below 1: raspG_ln_units_ok)
** and the balance's rounding (2 u T per writer). */
void raspG_stock_plan(gc *g, raspG_model *out) {
  int d0 = out->model.cfg.d_model, nw = 2 + 2 * out->model.cfg.n_layers;
  double T, S, u = ldexp(1, -24);
  raspG_ln_sums(g, out, &T, &S);
  int d1 = d0 + 3; /* (at most: the balance and two sinks) */
  double M = 4 * u * T * (1 + ldexp(1, -20)) + (d0 + 2 * nw * u * T) / d1;
  double V = 2 * (S + 2 * M * T + d1 * M * M) / d1;
  int p32 = (int)ceil((log2(V) + 26) / 2), p64 = (int)ceil((log2(V) + 55) / 2);
  if (p32 < 1) p32 = 1;
  if (p64 < 1) p64 = 1;
  out->ln_f64 = p64 <= 62;
  out->ln_q = out->ln_f64 ? p64 : p32;
  out->ln_d0 = d0, out->ln_T = T, out->ln_S = S, out->ln_M = M + ldexp(1, out->ln_q - 150);
  out->ln_stock = 1;
  g->ln_tiny = ldexp(1, out->ln_q - 150);
}

/* x as an integer multiple of 2^e0 (x a float, e0 at most its lowest
** bit's exponent). */
static __int128 scaled(float x, int e0) {
  int e;
  double f = frexp((double)x, &e); /* x = f 2^e, |f| in [1/2, 1) */
  long long m = (long long)ldexp(f, 24); /* exact: 24 significand bits */
  int sh = e - 24 - e0;
  /* (below: x's bits under 2^(e - 24) are 0 down to e0, so the shift is exact) */
  /* (a product, not a shift: m may be negative) */
  return sh >= 0 ? (__int128)m * ((__int128)1 << sh) : (__int128)(m / (1LL << -sh));
}

/* The exponent of x's lowest set bit (x a nonzero float). */
static int low_exp(float x) {
  int e;
  double f = frexp((double)x, &e);
  long long m = (long long)ldexp(fabs(f), 24);
  return e - 24 + __builtin_ctzll((unsigned long long)m);
}

/* Sink rows for one reader column (entries col[k stride], k < d0): sets
** col[(d0 + 1 + j) stride] for j < ns so that all of them sum to exactly
** 0, summed exactly as integers on the finest grain of the column; returns
** how many sink rows that takes (1 or 2), or 0 where ns floats cannot hold
** it (or the column's exponents span too much for the exact sum). */
static int sink_col(float *col, size_t stride, int d0, int ns) {
  int e0 = 0, emax = 0, any = 0;
  for (int k = 0; k < d0; k++) {
    float x = col[(size_t)k * stride];
    if (x == 0) continue;
    int lo = low_exp(x), hi;
    frexp((double)x, &hi);
    if (!any || lo < e0) e0 = lo;
    if (!any || hi > emax) emax = hi;
    any = 1;
  }
  for (int j = 0; j < ns; j++) col[(size_t)(d0 + 1 + j) * stride] = 0;
  if (!any) return 1;
  if (emax - e0 > 100) return 0; /* (the integer sum must stay within 2^127) */
  __int128 S = 0;
  for (int k = 0; k < d0; k++) {
    float x = col[(size_t)k * stride];
    if (x != 0) S += scaled(x, e0);
  }
  /* s1: the float nearest -S; the rest, -S - s1, must be 0 or one float */
  float s1 = (float)ldexp(-(double)S, e0);
  __int128 R = -S - (s1 != 0 ? scaled(s1, e0) : 0);
  col[(size_t)(d0 + 1) * stride] = s1;
  if (R == 0) return 1;
  if (ns < 2) return 2; /* (ask for two) */
  float s2 = (float)ldexp((double)R, e0);
  if (scaled(s2, e0) != R) return 0;
  col[(size_t)(d0 + 2) * stride] = s2;
  return 2;
}

/* Every reader's sink rows with ns sink dimensions; how many the readers
** need at most (0: one cannot be made exact with ns). */
static int write_sinks(rasp_model *m, int d0, int ns) {
  const rasp_model_config *c = &m->cfg;
  int D = c->d_model, need = 1;
  char nm[64];
  for (int L = 0; L <= c->n_layers; L++) {
    if (L < c->n_layers) {
      static const char *const qkv[] = {"attn.w_q", "attn.w_k", "attn.w_v"};
      for (int t = 0; t < 3; t++) { /* [head][D][d_head] */
        snprintf(nm, sizeof nm, "layers.%d.%s", L, qkv[t]);
        float *w = raspN_data(m, nm);
        for (int h = 0; h < c->n_heads; h++)
          for (int j = 0; j < c->d_head; j++) {
            int k = sink_col(w + (size_t)h * D * c->d_head + j, (size_t)c->d_head, d0, ns);
            if (!k) return 0;
            need = k > need ? k : need;
          }
      }
      snprintf(nm, sizeof nm, "layers.%d.mlp.w_in", L); /* [D][d_mlp] */
      float *wi = raspN_data(m, nm);
      for (int f = 0; f < c->d_mlp; f++) {
        int k = sink_col(wi + f, (size_t)c->d_mlp, d0, ns);
        if (!k) return 0;
        need = k > need ? k : need;
      }
    } else {
      float *un = raspN_data(m, "unembed"); /* [D][n_out] */
      for (int o = 0; o < c->n_out; o++) {
        int k = sink_col(un + o, (size_t)c->n_out, d0, ns);
        if (!k) return 0;
        need = k > need ? k : need;
      }
    }
  }
  return need;
}

/* The construction on the proven model (its dimensions keep their places):
** the balance at d0, ns sinks after it, eps 4^p and weights 2^p. */
static int stock_build(const raspG_model *out, const rasp_model *m0, int ns, rasp_model *m1,
                       rasp_error *err) {
  int d0 = out->ln_d0;
  if (!raspG_ln_widen(m0, d0 + 1 + ns, RASPN_LN_PRE, m1, err)) return -1;
  m1->cfg.norm_eps = ldexp(1, 2 * out->ln_q);
  raspG_ln_write_balance(m1, d0);
  float w = ldexpf(1, out->ln_q);
  raspG_ln_set_weights(m1, 0, d0, w);
  raspG_ln_set_weights(m1, d0 + 1, d0 + 1 + ns, w); /* the sinks */
  return write_sinks(m1, d0, ns);
}

int raspG_stock_apply(gc *g, raspG_model *out, rasp_error *err) {
  rasp_model *m0 = &out->model, m1;
  int need = stock_build(out, m0, 1, &m1, err);
  if (need < 0) return 0;
  if (need != 1) { /* some column needs a second sink row */
    raspN_free(&m1);
    need = stock_build(out, m0, 2, &m1, err);
    if (need < 0) return 0;
  }
  out->ln_ns = m1.cfg.d_model - out->ln_d0 - 1;
  out->ln_d1 = m1.cfg.d_model;
  out->ln_proven = 0;
  /* (what p was sized for: every unit's error below 1, no value it holds
  ** below 2^(p-125); raspG_ln_units_ok says which fails, in ln_why) */
  if (!raspG_ln_units_ok(g, out)) {
    char why[sizeof out->ln_why];
    snprintf(why, sizeof why, "%s", out->ln_why);
    snprintf(out->ln_why, sizeof out->ln_why, "not even sized right: %.120s", why);
  } else if (!need)
    snprintf(out->ln_why, sizeof out->ln_why,
             "a reader's sink rows cannot cancel its other rows exactly in two floats");
  else
    snprintf(out->ln_why, sizeof out->ln_why,
             "the proof does not yet charge a stock layer norm's rounding (its computed mean); "
             "--check-orders and PyTorch's own layer norm measure it");
  /* (not raspG_ln_conclude, which refuses norms not proven: these never
  ** are, and the model says so -- --stats, layout.layer_norm.proven, the
  ** loaders' warning) */
  raspN_free(m0);
  *m0 = m1;
  return 1;
}
