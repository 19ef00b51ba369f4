/*
** rcompile_rms.c -- compiled models in the pre-RMSNorm architecture
** (--ln rms).
**
** LLaMA's normalisation, and torch.nn.RMSNorm's: RMS(x)_i = x_i w_i /
** sqrt(mean(x^2) + eps) over the d_model dimensions of one position, no
** mean subtracted, no bias, before every attention, every MLP and the
** readout.  As with --ln pre (rcompile_ln.c), every norm is made *exactly
** the identity* on every dimension the model reads, so that the rounding
** proof of the model without norms holds for the model with them.  Unlike
** a layer norm's, this one is exact in any arithmetic that rounds each
** operation to nearest: float32 or float64 (as the layout says), the sum
** of squares in any order (sequential, pairwise, blocked, a permuted copy
** of the model, fused multiply-adds), the mean as sum / d or as sum times
** fl(1 / d), the reciprocal square root as one operation or as 1 / sqrt.
** A layer norm's mean is what no such construction survives (doc/compiler.md,
** "Why constants, and not a large epsilon"); an RMS norm has none.
**
** The construction (raspG_rms_plan before the proof, raspG_rms_apply on
** the proven model, whose dimensions keep their places):
**
**   * padding (zeros) and then nc = 1..4 constant dimensions, written by
**     every token's embedding and by nothing else: c_j = a_j 2^q with
**     integers a_1 >= ... >= a_nc >= 1 and a_1^2 + ... + a_nc^2 = d, the
**     model's d_model (the smallest d >= d0 + nc that is such a sum, and
**     for which fl(d fl(1/d)) = 1 in float32 and in float64);
**   * every norm's weight 2^q on the model's own d0 dimensions and 0 on the
**     padding and the constants.
**
** Why each norm returns what the model reads, at every position of every
** input.  Let S bound the sum of squares of the model's dimensions (the
** value sets and the BOS position's residual, as for --ln pre:
** raspG_ln_dim_bounds), S' = S (1 + (d + 2) 2^-23) (their squares and
** partial sums rounded, in float32 or wider), p the significand's bits (24
** or 53) and e = floor(log2(a_nc^2)) + 2q, so that the smallest constant's
** square c_nc^2 lies in [2^e, 2^(e+1)).  q is chosen with S' 2^5 <= 2^(e-p).
**
**   * Squares.  c_j^2 = a_j^2 4^q is exact (a_j^2 < 2^24), and so is every
**     sum of some of them (an integer below 2^24 times 4^q).
**   * Sum, in any order.  Any order of a sum is a binary tree of rounded
**     additions.  By induction over the tree, a partial sum that holds a
**     constant's square is computed as exactly the sum C of the constants'
**     squares it holds, and one that holds none is below S': two of the
**     first kind add exactly (above); one of the first and one of the
**     second is C + r with 0 <= r < S' < 2^(e-p), below half of C's ulp
**     (C >= c_nc^2), so it rounds to C; two of the second are bounded as S'
**     says.  (A fused multiply-add, acc + x x rounded once, is one such
**     addition with its term exact.)  So the sum is exactly d 4^q.
**   * Mean, eps, rsqrt.  d 4^q / d = 4^q exactly; d 4^q fl(1/d) = 4^q
**     fl(d fl(1/d)) = 4^q (d was chosen so).  4^q + eps rounds to 4^q (eps =
**     1e-5 is below 2^(2q-p), half 4^q's ulp: q >= 20).  The square root of
**     4^q is 2^q, its reciprocal 2^-q, and a correctly rounded rsqrt gives
**     2^-q: all exact.
**   * Output.  x_i 2^-q is exact wherever it is a normal number (|x_i| >=
**     2^(q-126) in float32) or 0, and times w_i = 2^q it is x_i again; in
**     whatever order the three are multiplied (2^-q 2^q = 1 exactly, and
**     x_i 2^q stays finite: |x_i| < 2^(127-q)).  A stored value below
**     2^(q-126) that is not 0 is moved by at most 2^(q-150): the proof adds
**     that to every error that is not 0 (gc.ln_tiny), and raspG_ln_units_ok
**     checks that no value a unit holds lies below 2^(q-125).  The
**     constants' dimensions come out 0 (weight 0) and nothing reads them.
**
** q is chosen for float64 (p = 53) when the constants then stay within
** float32's storable range with squares that sum finite (a_1 2^q <= 2^63,
** d 4^q < 2^127), else for float32 alone (p = 24: the layout's
** layer_norm.exact_in and arithmetic then say ["float32"]); past that the
** norms are not proven and the proof-driven compile refuses.  The
** arithmetic itself is checked on the worst rows the bounds allow, summed
** forwards and backwards (rms_selftest); --check-orders runs every order.
*/
#include "rcompile_int.h"

/* fl(d fl(1/d)) == 1 in float32 and in float64: a mean computed as the
** sum times the rounded reciprocal of d is then exact too. */
static int recip_exact(int d) {
  volatile float rf = 1.0f / (float)d, pf = (float)d * rf;
  volatile double rd = 1.0 / d, pd = d * rd;
  return pf == 1.0f && pd == 1.0;
}

/* Depth-first over c[lvl] <= maxv (descending), left more to place,
** keeping in b the representation of rest with the largest last (smallest)
** term. */
static void sq_search(int rest, int left, int maxv, int *c, int lvl, int *best, int *bn, int *b) {
  if (!left) {
    if (!rest && c[lvl - 1] > *best) {
      *best = c[lvl - 1], *bn = lvl;
      memcpy(b, c, sizeof(int) * 4);
    }
    return;
  }
  int v = (int)sqrt((double)rest);
  while (v * v > rest) v--;
  for (v = v < maxv ? v : maxv; v >= 1 && v > *best && v * v * left >= rest; v--) {
    c[lvl] = v;
    sq_search(rest - v * v, left - 1, v, c, lvl + 1, best, bn, b);
  }
}

/* The integers a[0] >= ... >= a[nc-1] >= 1 whose squares sum to d, nc <= k
** (and <= 4), with the largest smallest one, and then the fewest: nc, or 0
** when there are none. */
static int squares(int d, int k, int *a) {
  int best = 0, bn = 0, c[4] = {0};
  for (int nc = 1; nc <= k && nc <= 4; nc++) sq_search(d, nc, d, c, 0, &best, &bn, a);
  return bn;
}

void raspG_rms_plan(gc *g, raspG_model *out) {
  int d0 = out->model.cfg.d_model, d, nc = 0, a[4] = {0};
  double *B = raspG_ln_dim_bounds(g, out), S = 0;
  for (int i = 0; i < d0; i++) S += B[i] * B[i];
  raspM_free(B);
  for (d = d0 + 1;; d++)
    if (recip_exact(d) && (nc = squares(d, d - d0, a)) > 0) break;
  double Sp = S * (1 + (d + 2) * ldexp(1, -23));
  int e0 = (int)floor(log2((double)a[nc - 1] * a[nc - 1])), q = 0, f64 = 0;
  for (int pass = 0; pass < 2; pass++) {
    int p = pass ? 24 : 53;
    /* S' 2^5 <= 2^(e0 + 2q - p), and eps = 1e-5 below 2^(2q - p) */
    for (q = (p - 16 + 1) / 2 + 1; q < 127 && !(Sp * 32 <= ldexp(1, e0 + 2 * q - p)); q++) {}
    if (ldexp(a[0], q) <= ldexp(1, 63) && ldexp(d, 2 * q) < ldexp(1, 127)) {
      f64 = !pass;
      break;
    }
    q = -1;
  }
  out->ln_d0 = d0, out->ln_d1 = d, out->ln_nc = nc, out->ln_q = out->ln_s = q;
  memcpy(out->ln_c, a, sizeof a);
  out->ln_a = a[0], out->ln_b = 0, out->ln_f64 = f64;
  out->ln_T = 0, out->ln_S = S;
  g->ln_tiny = q >= 0 ? ldexp(1, q - 150) : 0;
}

/* The norms' weights and the constants. */
static void write_rms(const raspG_model *out, rasp_model *m) {
  int D = m->cfg.d_model, d0 = out->ln_d0, nc = out->ln_nc;
  float w = ldexpf(1, out->ln_q);
  raspG_ln_set_weights(m, 0, d0, w);
  float *te = raspN_data(m, "tok_emb");
  for (int t = 0; t < m->cfg.vocab_size; t++)
    for (int k = 0; k < nc; k++) te[(size_t)t * D + (D - nc) + k] = ldexpf((float)out->ln_c[k], out->ln_q);
}

/* The arithmetic itself on the worst rows the bounds allow: every model
** dimension at its bound (scaled to just below S), S on one dimension, and
** nothing but `one`; each summed forwards and backwards (the row and the
** weights reversed), and each must come back exactly. */
static int rms_selftest(const raspG_model *out, rasp_model *m) {
  int D = m->cfg.d_model, d0 = out->ln_d0;
  const float *w = raspN_data(m, "ln_f.weight"), *te = raspN_data(m, "tok_emb");
  float *x = raspM_alloc(sizeof(float) * (size_t)D), *y = raspM_alloc(sizeof(float) * (size_t)D);
  float *xr = raspM_alloc(sizeof(float) * (size_t)D), *wr = raspM_alloc(sizeof(float) * (size_t)D);
  int ok = 1;
  double s1 = sqrt(out->ln_S * (1 - ldexp(1, -20)) / d0);
  for (int c = 0; c < 3 && ok; c++) {
    memcpy(x, te, sizeof(float) * (size_t)D); /* (any row: the constants) */
    for (int j = 0; j < d0; j++) x[j] = c == 0 ? (float)s1 : 0;
    if (c) x[1] = (float)(c == 1 ? sqrt(out->ln_S * (1 - ldexp(1, -20))) : 1);
    raspN_rms_norm(x, w, D, y);
    for (int j = 0; j < d0; j++) ok = ok && y[j] == x[j];
    for (int j = 0; j < D; j++) xr[j] = x[D - 1 - j], wr[j] = w[D - 1 - j];
    raspN_rms_norm(xr, wr, D, y);
    for (int j = 0; j < d0; j++) ok = ok && y[D - 1 - j] == x[j];
  }
  raspM_free(x);
  raspM_free(y);
  raspM_free(xr);
  raspM_free(wr);
  return ok;
}

int raspG_rms_apply(gc *g, raspG_model *out, rasp_error *err) {
  rasp_model *m0 = &out->model, m1;
  if (!raspG_ln_widen(m0, out->ln_d1, RASPN_LN_RMS, &m1, err)) return 0;
  out->ln_proven = 0;
  if (out->ln_q < 0)
    snprintf(out->ln_why, sizeof out->ln_why, "the residual's sum of squares (bound %.3g) needs "
             "constants past 2^63 (float32's squares would overflow)", out->ln_S);
  else {
    write_rms(out, &m1);
    out->ln_proven = raspG_ln_units_ok(g, out);
  }
  return raspG_ln_conclude(g, out, m0, &m1, !out->ln_proven || rms_selftest(out, &m1),
                           "--ln rms: the RMS norms", "an RMS norm", err);
}
