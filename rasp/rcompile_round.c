/*
** rcompile_round.c -- the precision model and its rounding arithmetic.
**
** The essay below is the proof's contract (doc/compiler.md, "Margins and
** precision"); this file holds the arithmetic it is built from: roundoff
** per precision, dot products of value sets with weight columns, how
** absolute errors grow through a sum, and the leak a head charges its
** readers.  rcompile_margin.c and rcompile_prove.c apply it.
*/
#include "rcompile_int.h"

/* ---- margins and precision ----------------------------------------------
** What the weights are proven to do on the value sets (doc/compiler.md,
** "Margins and precision").  Every unit's possible values are known, so
** each head and each MLP hidden unit is evaluated, in real arithmetic on the
** float32 weights as written, on every value its inputs can take:
**   head: per component, the score of every (key value, query value) pair
**     over its columns; the margin is the smallest gap between a selected
**     key and any key that is not selected, BOS included (an aggregate's
**     selected keys must beat BOS, and BOS every unselected key; sel_width's
**     BOS is selected), in logits (after the architecture's 1/sqrt(d_head));
**   MLP hidden unit: its pre-activation z = b + sum of each source unit's
**     contribution, over every combination of source values (the product of
**     the distinct contributions, the last source by binary search); the
**     margin is the smallest nonzero |z|.  z = 0 exactly (a unit on its
**     hinge, as ReLU(x_a + c - 1) with one of them on) is allowed: there the
**     output is exact while the input is;
**   readout: the right logit's lead over every other, per readout value.
** The rounding a unit must absorb at precision p (unit roundoff u: 2^-24,
** 2^-11, 2^-8) is bounded per operation, with its inputs at their values
** up to a relative error kappa u: 0 for what is computed exactly (embedded
** integers the format holds; an MLP unit whose inputs are exact, whose
** weights are integers and whose sums stay below 2^bits, so that every
** partial sum is an integer the format holds), 1 for another MLP unit's
** output (its one rounding), 4 for sel_width's 1/(w+1) (exp, sum, quotient,
** store) and n/2 + 4 for other heads (their weighted sum of up to n equal
** terms, accumulated in float32, adds up to n/2 roundings).  A dot product
** with terms t_j then moves by at most sum |t_j| kappa_j u + what rounding
** the weights to p moves it by + u |result| + (k + 1) 2^-24 sum |t_j|
** (float32 accumulation; nothing where it is exact), a score by its query
** and key columns' errors times the other's size, plus one rounding of the
** score (none when exact) and one of its scaling (the same for equal
** scores).  Proven at p: an MLP hidden unit when twice its bound is below
** its margin; a head when, with every score moved by its bound, the
** selected keys still win, the weight leaking past them (n e^-gap per key)
** times the range of the values moved stays below an eighth of the gap
** between those values (1 for one-hot and integers), and an averaging
** head's selected weights, unequal by e^(spread), move its mean by no more
** than that either; in fp16 no feature, score or value may exceed 65504.
** Whoever reads a head (an MLP unit, a query or key, the readout) adds the
** head's proven leak times the spread of what it reads over the head's
** values (leak_err): negligible at gain 1, the leak a smaller
** --attn-gain buys.  This is a proof per sublayer (its inputs within
** their kappa of their values; what passes through an MLP's linear pieces
** or a head's values is not carried on), not a bound composed over the
** depth: that is what --check
** --precision measures.  In fp16 and bf16 a unit that is not proven makes
** its numerical nodes (and its sources') categorical and the compile runs
** again, or is refused when nothing is left to change.
**
** fp32 adds to each unit an absolute error ae per dimension (x and x^2)
** and charges what the rules above leave out: an MLP unit's value moves by
** what its hidden units' errors move them by (per combination of source
** values, only the units at or above their hinge: active_od), a head's by
** the weight leaking past its selected keys and by its values' own errors,
** and a unit written where an erased one was (or in place) by what that
** one left (residue); an MLP unit whose hidden values are not integers
** also by its output sum's roundings (u times a partial sum per
** addition), and a head's leak is at least expf's subnormal ulp per key.
** Integers off by a little are summed by dev_grow's
** argument, not charged a rounding at the size of the sum; a relative
** error of an integer unit is carried as an absolute one (fold_kappa);
** and a head that selects one key (head_unique) is charged the leak alone,
** not n/2 roundings.  A unit whose bound is below 2^-24 times its
** smallest nonzero value is exact at its nonzero values (nz_exact): its
** readers charge its error per value, only on the dimensions that value
** leaves at 0 (aerr_val), and an MLP's output only what its hidden units
** carry at the source values where they can be on (a big-M gate whose 0/1
** condition is 0 is off by its margin; at 1 the condition is exact).
** STEM.json records each proven integer unit's
** deviation, and tests/test_compile (test_deviation, test_deviation_task
** on path-star models) checks it against the float32 forward pass.  The count this proves is reported, but the
** encodings stay as chosen by size, and --check measures.
**
** Tighter where the structure allows: a residue is charged per dimension;
** BOS leaks once and the other keys at most n times the worst key's
** weight; an output sum is charged its own dimension's terms; a score's
** product of integers off by a little rounds by its error or half an ulp,
** whichever is less; a term whose exact value is 0 grows a sum's error by
** at most twice its own, only the m nonzero ones can double it
** (dev_grow_z); and per combination of source values (active_od) an MLP
** is affine over the units above their hinges, so the inputs' errors go
** through W_eff = sum of w_in w_out over them (a step's two units and a
** where's branch and its operand cancel), a unit on its hinge is taken at
** slope 0 and 1, and the output sum is charged for the units that are not
** 0 there.
**
** Proof-driven fp32 (require_proof): a model the default weights already
** prove whole is kept; else the compile uses exact erasers, steep tests
** and no dimension written in the sublayer that frees it (proof_driven),
** raises the score scale of every head not proven or whose leak moves its
** value (head_gain, up to 2^4), and only then makes nodes categorical;
** where a unit is still not proven, the tables (M_PAIR) upstream of it are
** written with no hinge on an integer (FORCE_STEEP) before it is refused
** (after either, the default weights, then the default scale, are tried
** once more with those nodes one-hot and those tables steep:
** compile_impl).
** RASP_COMPILE_TRACE=1 prints every unit's verdict (=2: its hidden
** units and residue too).  */

const char *raspG_precision_name(int p) {
  return p == RASPG_FP16 ? "fp16" : p == RASPG_BF16 ? "bf16" : "fp32";
}

float raspG_round(int p, float x) {
  if (p == RASPG_BF16) {
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    if ((b & 0x7f800000u) == 0x7f800000u) return x; /* inf, NaN */
    b += 0x7fffu + ((b >> 16) & 1u);               /* to nearest, ties to even */
    b &= 0xffff0000u;
    memcpy(&x, &b, sizeof b);
    return x;
  }
  if (p != RASPG_FP16) return x;
  double a = fabs((double)x);
  if (!(a < INFINITY) || a == 0) return x;
  if (a >= 0x1p-14) { /* normal: keep 10 of float32's 23 fraction bits */
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    b += 0xfffu + ((b >> 13) & 1u);
    b &= ~0x1fffu;
    memcpy(&x, &b, sizeof b);
    return fabsf(x) > 65504.0f ? copysignf(INFINITY, x) : x;
  }
  int e;
  frexp(a, &e);       /* a in [2^(e-1), 2^e): 11 bits, quantum 2^(e-11) */
  int q = e - 11 < -24 ? -24 : e - 11; /* subnormals: quantum 2^-24 */
  double r = ldexp(nearbyint(ldexp(a, -q)), q);
  if (r > 65504) r = INFINITY;
  return (float)copysign(r, (double)x);
}

/* The largest power of two of which x is an integer multiple (INFINITY
** for 0): a sum of such multiples is exact in float32 while every
** partial sum stays within 2^24 of them. */
double raspG_pow2_grain(double x) {
  int ex;
  if (x == 0 || !isfinite(x)) return x == 0 ? INFINITY : 0;
  double m = frexp(fabs(x), &ex); /* x = m 2^ex, m in [1/2, 1) */
  unsigned long long bits = (unsigned long long)ldexp(m, 53); /* nonzero */
  return ldexp(1, ex - 53 + __builtin_ctzll(bits));
}

/* Whether s is a float32 and no other float32 lies in [lo, hi]: a float32
** result the proof bounds within [lo, hi] is then exactly s.  (A bound
** need not vanish in double to pin its result; it must stay below the
** spacing of the float32 values next to s.) */
int raspG_f32_pinned(double s, double lo, double hi) {
  float f = (float)s;
  if ((double)f != s || !(lo <= s && s <= hi)) return 0;
  return lo > (double)nextafterf(f, -INFINITY) && hi < (double)nextafterf(f, INFINITY);
}

/* Unit uid's value a dotted with column col of W (rows = residual
** dimensions, row length ld); *t gets the sum of |terms| and *wre the most
** rounding W's entries to precision p moves it by. */
double raspG_uv_dot(const gc *g, int uid, int a, const float *W, int ld, int col, int p,
                    double *t, double *wre) {
  const unit *s = &g->u[uid];
  if (s->cat) {
    float w = W[(size_t)(s->dim + a) * ld + col];
    *t = fabs((double)w);
    *wre = fabs((double)w - (double)raspG_round(p, w));
    return w;
  }
  float w0 = W[(size_t)s->dim * ld + col];
  double x = dval(s->vals[a]), r = x * w0;
  *t = fabs(r);
  *wre = fabs(x) * fabs((double)w0 - (double)raspG_round(p, w0));
  if (s->sq) {
    float w1 = W[(size_t)(s->dim + 1) * ld + col];
    double r2 = x * x * w1;
    r += r2;
    *t += fabs(r2);
    *wre += x * x * fabs((double)w1 - (double)raspG_round(p, w1));
  }
  return r;
}

/* Integers off by a little (fp32, the unit's ae).  A float32 operation
** whose exact result would be an integer N the format holds, on operands
** off by at most e in all from the integers that give N, rounds to a float
** no further from the result than N is: its error is at most e as well as
** at most u |result|.  So a dot product of such inputs with integer
** weights, whose terms' magnitudes sum to at most T <= 2^24, is off by at
** most dev_grow(sum |w_j| e_j (twice where w_j is not a power of two,
** see below), k, T) after k additions that can be nonzero: a product by
** 2^k is exact, each addition rounds by at most the error before it (or u
** times the partial sum, whichever is smaller).  And
** less: a nonzero integer N has no other float within 2^-25 |N| of it, so
** a result within e of N rounds to N (error 0) when e < 2^-25 |N|, else
** by at most min(e, u (|N| + e)) (not e/2: 1 + 2^-24 + 2^-40, an integer
** off by 2^-24 + 2^-40, rounds to 1 + 2^-23); one near 0 by u e.
** (Products by integers alike: e more, none for a power of two.) */
double raspG_dev_grow(double D, int nadd, double T) {
  double f = D, u = ldexp(1, -24);
  for (int k = 0; k < nadd && f > 0; k++) f += f < u / 2 ? u * f : fmin(u * (T + f), f);
  return f;
}

/* dev_grow on the grain G >= 1 (a power of two): integer multiples of G
** are integers scaled exactly, so the argument holds in units of G. */
double raspG_dev_grow_on(double D, int nadd, double T, double G) {
  return G * raspG_dev_grow(D / G, nadd, T / G);
}

double raspG_col_abs(const float *W, int rows, int ld, int col, int *nnz) {
  double s = 0;
  int k = 0;
  for (int r = 0; r < rows; r++) {
    float w = W[(size_t)r * ld + col];
    if (w != 0) s += fabs((double)w), k++;
  }
  if (nnz) *nnz = k;
  return s;
}

/* The nonzero entries of column col of W (rows x ld). */
static int col_nnz(const float *W, int rows, int ld, int col) {
  int k;
  raspG_col_abs(W, rows, ld, col, &k);
  return k;
}

/* Sum over unit uid's dimensions of |entry of column col| times its ae,
** times 2 (plus a little) where the entry is not a power of two and the
** product's error reaches 2^-25 (dev_grow's argument: a product by 2^k is
** exact, another rounds by at most its input's error times |w| more,
** none below 2^-25 but a relative u).  Under --ln stock (lin) the term is
** |w| ae alone: there every reader's sum is charged gamma_n times its
** terms' sizes with these errors included (raspG_stock_sum_err's D), which
** bounds each product's rounding, the error's share with it, so doubling
** it here would count that rounding twice -- and, charged as rounding, it
** would escape the cancellation of an MLP's affine bound (active_od),
** where a chain of wheres then doubles its error at every step. */
static double aerr_term(double w, double a, int lin) {
  int e;
  if (w == 0) return 0;
  if (lin) return w * a;
  return (frexp(w, &e) == 0.5 ? w : w * a < ldexp(1, -25) ? w * (1 + ldexp(1, -24)) : 2 * w * (1 + ldexp(1, -23))) * a;
}

static double aerr_dot(const gc *g, int uid, const float *W, int ld, int col) {
  const unit *s = &g->u[uid];
  if (!(s->ae[0] > 0) && !(s->ae[1] > 0)) return 0;
  double D = 0;
  int sz = s->cat ? s->nvals : s->sq ? 2 : 1;
  for (int k = 0; k < sz; k++)
    D += aerr_term(fabs((double)W[(size_t)(s->dim + k) * ld + col]), s->ae[s->sq && k == 1], g->stock);
  return D;
}

/* aerr_dot at unit uid's value a: where the unit is exact at its nonzero
** values (nzx), only the dimensions that value a leaves at 0 (a one-hot's
** other dimensions; both of a squared unit's at x = 0) are charged. */
double raspG_aerr_val(const gc *g, int uid, int a, const float *W, int ld, int col) {
  const unit *s = &g->u[uid];
  if (!s->nzx) return aerr_dot(g, uid, W, ld, col);
  double D = 0, x = s->cat ? 0 : dval(s->vals[a]);
  int sz = s->cat ? s->nvals : s->sq ? 2 : 1;
  for (int k = 0; k < sz; k++) {
    double v = s->cat ? (k == a) : k ? x * x : x;
    if (v == 0) D += aerr_term(fabs((double)W[(size_t)(s->dim + k) * ld + col]), s->ae[s->sq && k == 1], g->stock);
  }
  return D;
}

/* aerr_val split by what the terms are worth (fp32, integer weights): a
** dot product's term whose exact value is 0 (a one-hot's other
** dimensions, x and x^2 at x = 0) and whose input is off by e holds
** w e rounded relatively; a term with a nonzero exact value (the others)
** as aerr_term charges it.  *z and *nz get the two sums at unit uid's
** value a, *m the number of terms with a nonzero exact value (nonzero
** weight), which dev_grow_z needs. */
void raspG_aerr_split(const gc *g, int uid, int a, const float *W, int ld, int col, double *z,
                      double *nz, int *m) {
  const unit *s = &g->u[uid];
  double x = s->cat ? 0 : dval(s->vals[a]);
  int sz = s->cat ? s->nvals : s->sq ? 2 : 1;
  *z = *nz = 0;
  *m = 0;
  for (int k = 0; k < sz; k++) {
    double w = fabs((double)W[(size_t)(s->dim + k) * ld + col]);
    double v = s->cat ? (k == a) : k ? x * x : x, e = s->ae[s->sq && k == 1];
    if (w == 0) continue;
    if (v == 0) *z += w * e * (1 + ldexp(1, -23));
    else {
      ++*m;
      if (!s->nzx) *nz += aerr_term(w, e, g->stock);
    }
  }
}

/* dev_grow for a sum (in any order) of terms that are integers within the
** format, some (m) with a nonzero exact value off by at most Dnz in all,
** the others with exact value 0 off by at most Dz in all.  Adding a term
** whose exact value is 0 to a float F rounds F + e to a float no further
** from it than F is (|e|): the error grows by at most 2|e|, never doubles;
** adding one with a nonzero exact value can double it (dev_grow's
** argument), at most m times.  The worst order puts the zeros first. */
double raspG_dev_grow_z(double Dz, double Dnz, int m, double T) {
  double D = 2 * Dz + Dnz;
  return D > 0 ? raspG_dev_grow(D, m, T + D) : 0;
}

/* fp32: whether unit i, its absolute errors ae final, is exact at its
** nonzero values.  A float within 2^-24 |N| of a nonzero integer N with
** |N| <= 2^24 is N itself (no other float is that close: the spacing
** next to N is at least 2^-24 |N|, at a power of two below it); so a
** stored dimension whose value N is a nonzero integer and whose bound is
** below 2^-24 |N| (less a little for the bound's own rounding) holds N
** exactly, and only where the value is 0 can it be off.  (The stored
** float, not a sum before its rounding: that one needs 2^-25, dev_grow.)  Its readers then charge ae per value (aerr_val): a one-hot's 1
** and a number's nonzero x and x^2 carry no error, and a big-M gate
** reading a 0/1 condition is either off by its margin (the condition 0,
** within ae of 0) or reads an exact 1. */
int raspG_nz_exact(const gc *g, int i) {
  const unit *u = &g->u[i];
  double t = ldexp(1, -24) * (1 - ldexp(1, -20));
  if (u->kappa != 0) return 0;
  if (u->cat) return u->ae[0] < t;
  for (int a = 0; a < u->nvals; a++) {
    double x = dval(u->vals[a]);
    if (x != floor(x) || fabs(u->sq ? x * x : x) > ldexp(1, 24)) return 0;
    if (x != 0 && !(u->ae[0] < t * fabs(x))) return 0;
    if (x != 0 && u->sq && !(u->ae[1] < t * x * x)) return 0;
  }
  return 1;
}

/* The largest magnitude of unit uid's dimension col (0: x, 1: a squared
** unit's x^2; 1 for one-hot). */
double raspG_col_max(const gc *g, int uid, int col) {
  const unit *s = &g->u[uid];
  double m = s->cat ? 1 : 0;
  for (int a = 0; a < s->nvals && !s->cat; a++) {
    double x = fabs(dval(s->vals[a]));
    m = fmax(m, col && s->sq ? x * x : x);
  }
  return m;
}

/* The finest power-of-two grain (pow2_grain) of the terms unit uid's
** value a puts into column col of W (uv_dot's terms) and of w1, ONE's
** entry: a sum of them whose sizes stay within 2^24 of it is exact in
** float32. */
double raspG_uv_grain(const gc *g, int uid, int a, const float *W, int ld, int col, float w1) {
  const unit *s = &g->u[uid];
  double gr = raspG_pow2_grain(w1);
  if (s->cat) return fmin(gr, raspG_pow2_grain(W[(size_t)(s->dim + a) * ld + col]));
  double x = dval(s->vals[a]);
  gr = fmin(gr, raspG_pow2_grain(x * W[(size_t)s->dim * ld + col]));
  return s->sq ? fmin(gr, raspG_pow2_grain(x * x * W[(size_t)(s->dim + 1) * ld + col])) : gr;
}

/* Whether every entry of W that unit uid's dimensions (and ONE, when
** with_one) feed into column col is an integer. */
int raspG_int_weights(const gc *g, int uid, const float *W, int ld, int col, int with_one) {
  const unit *s = &g->u[uid];
  int sz = s->cat ? s->nvals : s->sq ? 2 : 1;
  for (int k = 0; k < sz; k++) {
    float w = W[(size_t)(s->dim + k) * ld + col];
    if (w != floorf(w)) return 0;
  }
  if (with_one) {
    float w = W[(size_t)1 * ld + col];
    if (w != floorf(w)) return 0;
  }
  return 1;
}

/* The relative error of an embedded unit's values: 0 where the format holds
** them exactly (one-hot, or integers it represents), else 1. */
double raspG_embed_kappa(const gc *g, int uid, int p) {
  const unit *s = &g->u[uid];
  for (int a = 0; a < s->nvals && !s->cat; a++) {
    double x = dval(s->vals[a]);
    if ((double)raspG_round(p, (float)x) != x || (double)(float)x != x) return 1;
    if (s->sq && ((double)raspG_round(p, (float)(x * x)) != x * x || (double)(float)(x * x) != x * x))
      return 1;
  }
  return 0;
}

/* The largest magnitude unit uid holds (x^2 for a squared one). */
double raspG_unit_max(const gc *g, int uid) {
  const unit *s = &g->u[uid];
  double m = s->cat ? 1 : 0;
  for (int a = 0; a < s->nvals && !s->cat; a++) {
    double x = fabs(dval(s->vals[a]));
    if (x > m) m = x;
    if (s->sq && x * x > m) m = x * x;
  }
  return m;
}

/* The smallest gap between two of unit uid's values (1 for one-hot). */
double raspG_unit_gap(const gc *g, int uid) {
  const unit *s = &g->u[uid];
  double m = 1;
  for (int a = 1; a < s->nvals && !s->cat; a++) {
    double d = dval(s->vals[a]) - dval(s->vals[a - 1]);
    if (d > 0 && d < m) m = d;
  }
  return m;
}

int raspG_comp_rel(const gc *g, const comp *c, int a, int b) {
  if (c->t) return c->t[(size_t)a * g->u[c->qu].nvals + b];
  if (c->numq) return c->ky[a] == c->qa * dval(g->u[c->qu].vals[b]) + c->qb;
  return c->kv.ok[a] && c->qv.ok[b] && dval(c->kv.val[a]) == dval(c->qv.val[b]);
}

/* The column vectors (over [c0, c1)) of every value of unit uid read through
** W, plus ONE's row where uid is not ONE: vec[a * ncol + j]; per column the
** largest |entry| (amax) and the largest error (emax: 0 where the column is
** computed exactly: exact inputs, integer weights, sums within the format). */

/* How far the leak of head unit uid (its weight past the selected keys,
** proven by head_margin, which runs before any reader) can move what
** column col of W reads from it: the head's output is its value moved by
** at most that weight towards other values (a convex combination), so the
** read moves by the leak times the spread of what it reads over those
** values (a mean's or a width's values lie within +-unit_max).  0 for
** other units, in the composed bound, whose errors carry the leak, and in
** fp32 (p), where the head's absolute errors (ae, head_margin) carry it
** and aerr_dot charges it: charging it here too would count it twice. */
double raspG_leak_err(const gc *g, int uid, const float *W, int ld, int col, int p) {
  const unit *s = &g->u[uid];
  if (g->cb || p == RASPG_FP32 || s->kind != U_HEAD || !(s->leak > 0)) return 0;
  double lo = INFINITY, hi = -INFINITY, t, wre;
  for (int a = 0; a < s->nvals; a++) {
    double z = raspG_uv_dot(g, uid, a, W, ld, col, RASPG_FP32, &t, &wre);
    lo = fmin(lo, z), hi = fmax(hi, z);
  }
  double r = hi > lo ? hi - lo : 0;
  if (!s->cat && !s->sq)
    r = fmax(r, 2 * raspG_unit_max(g, uid) * fabs((double)W[(size_t)s->dim * ld + col]));
  return fmin(s->leak, 1) * r; /* (a weight, at most 1) */
}

double *raspG_col_vectors(const gc *g, int uid, const float *W, int rows, int dh, int c0,
                          int c1, int p, double *amax, double *emax) {
  const unit *s = &g->u[uid];
  int ncol = c1 - c0, one = s->kind != U_ONE;
  double up = prec_u(p), kap = s->kappa, lim = ldexp(1, prec_bits[p]);
  double *v = raspM_alloc(sizeof(double) * (size_t)(s->nvals ? s->nvals : 1) * (size_t)(ncol ? ncol : 1));
  for (int j = 0; j < ncol; j++) {
    amax[j] = emax[j] = 0;
    double tmax = 0, gr = p == RASPG_FP32 ? INFINITY : 1; /* fp32: its terms' grain */
    float w1 = one ? W[(size_t)1 * dh + c0 + j] : 0;
    double w1e = fabs((double)w1 - (double)raspG_round(p, w1));
    for (int a = 0; a < s->nvals; a++) {
      double t, wre, x = raspG_uv_dot(g, uid, a, W, dh, c0 + j, p, &t, &wre) + w1;
      t += fabs((double)w1);
      if (p == RASPG_FP32) gr = fmin(gr, raspG_uv_grain(g, uid, a, W, dh, c0 + j, w1));
      /* (--ln stock: the sum's rounding is charged below, over its rows) */
      double e = t * kap * up + wre + w1e + up * fabs(x) + (g->stock ? 0 : 8 * ldexp(1, -24) * t) +
                 raspG_stock_one_err(g, w1);
      v[(size_t)a * ncol + j] = x;
      if (fabs(x) > amax[j]) amax[j] = fabs(x);
      if (e > emax[j]) emax[j] = e;
      if (t > tmax) tmax = t;
    }
    /* fp32: terms on one power-of-two grain gr (a score's scale), summed
    ** within 2^24 gr: exact on exact inputs, dev_grow's in units of gr on
    ** integers off by a little */
    double D = aerr_dot(g, uid, W, dh, c0 + j);
    if (g->stock) { /* no sum on a grain: the shifted terms are not */
      int nnz;
      double W1 = raspG_col_abs(W, rows, dh, c0 + j, &nnz);
      emax[j] += D + raspG_stock_sum_err(g, nnz, tmax, D, W1);
    }
    else if (p == RASPG_FP32 && kap == 0 && D == 0 && tmax <= lim * gr)
      emax[j] = 0;
    else if (kap == 0 && raspG_int_weights(g, uid, W, dh, c0 + j, one) &&
             tmax <= lim * (gr = fmax(1, gr)))
      emax[j] = D > 0 ? raspG_dev_grow_on(D, col_nnz(W, rows, dh, c0 + j), tmax + D, gr) : 0;
    else emax[j] += D;
    emax[j] += raspG_leak_err(g, uid, W, dh, c0 + j, p);
    if (g->cb) { /* the composed bound: the column's error in the pass */
      double T;
      emax[j] = raspG_cb_colerr(g, W, dh, c0 + j, 0, &T);
    }
  }
  return v;
}

/* fp32: what the moved values' absolute errors can move a head's output
** dimension col by (a weighted mean moves no further than its terms). */
double raspG_vsrc_dev(gc *g, const unit *u, rasp_model *m, int col) {
  if (u->hmode == H_WIDTH) return 0;
  int d = m->cfg.d_model, dh = m->cfg.d_head, ncol = u->hmode == H_CAT ? u->nvals : 1;
  char nm[64];
  snprintf(nm, sizeof nm, "layers.%d.attn.w_v", u->layer);
  const float *wv = raspN_data(m, nm) + (size_t)u->hslot * d * dh;
  if (u->hmode == H_MOVE) return aerr_dot(g, u->hv.unit, wv, dh, col);
  double e = 0;
  for (int j = 0; j < ncol && col == 0; j++) e = fmax(e, aerr_dot(g, u->hv.unit, wv, dh, j));
  return e;
}
