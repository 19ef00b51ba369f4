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
** The proof charges both (gc.stock; the proof runs on the model before
** the balance and sinks are added, and charges every reader two sink rows):
**
**   * reading a stored value x (raspG_stock_read_err): fl(x - m) is within
**     u |x - m| of x - m, an error on that dimension for every reader
**     (prove() adds it to the unit's absolute errors, as it does the
**     subnormal ln_tiny); no value is read exactly, so the exactness
**     arguments (a head_unique value exact, raspG_nz_exact) fall away;
**   * each reader's sum (raspG_stock_sum_err: a head's query, key and
**     value columns, its gate column at BOS, an MLP unit's pre-activation,
**     a logit): its nnz rows and the sinks, n products and additions in
**     any order, each rounding by u of a partial sum, which the shifted
**     terms can carry to 2 (1 + u) M times the column's |weights| however
**     exactly they cancel at the end; sums on a grain are not exact any
**     more, so col_vectors, the readout and the MLP units take the general
**     bound.  That bound takes the terms' sizes with their inputs' errors
**     (D, linear: |w| e), so it is also what charges each product's
**     rounding, the error's share included; aerr_term does not double a
**     product by a weight that is not a power of two as it does where sums
**     are exact (which would keep half of every input's error out of an
**     MLP's affine cancellation, and a chain of wheres would double it at
**     each step), and a head's value errors are charged once
**     (head_stock_values).  A quantized width needs its scores exact and
**     is refused (FORCE_CLASSIC), as is any unit whose margin the charges
**     exceed: the proof-driven loop makes its nodes categorical or refuses
**     the compile.
**
** Since every read is charged, the MLP writers read a one-hot set from its
** smaller side under --ln stock (rcompile_write.c, win_onehot): a where
** whose condition is "x is not the default" reads 1 - x's default
** dimension, not the n - 1 others; a one-hot head's value column does the
** same through `one` (value_complements).  A chain of one-hot wheres (a
** loop's state, once per step) adds its inputs' errors at each step where
** a unit sits on its hinge, so the proof-driven loop writes such wheres
** steep, as tables (rcompile_prove.c, prove_steepen: only where their
** inputs' errors sum below 1/8), and a steep pair's two units, on and off
** together, charge their outputs only their own rounding where there are
** too many input combinations to enumerate (rcompile_margin.c,
** twin_step).
**
** M (raspG_stock_plan) bounds the computed mean: the residual's true mean,
** proven from the weights (what the balance leaves of each writer's
** cancellation), plus the mean's own rounding error, charged as 4 u T (T
** bounds the sum of |x_i| at a position; u = 2^-24, d the dimensions,
** d >= 8):
**
**   * a sum in any order, then a division (or a product by fl(1/d)): the
**     sum is within gamma_(d-1) T, the division adds at most 2 u of the
**     mean and (1 + u)^2 of the error: at most (gamma_(d-1) + 3 u) T / d
**     (1 + 2^-20), below 2 u T;
**   * Welford's updates, m_k = m_(k-1) + (x_k - m_(k-1)) / k: step k's
**     rounding is at most (2 u + u^2) (|x_k| + |m_(k-1)|) / k + u |m_k| /
**     (1 - u), and it reaches the end times k / d (each later step keeps
**     1 - 1/j of it); by induction every computed m_k stays within 1.1 A_k
**     / k (A_k = sum of |x_i| up to k, d < 2^20), so the sum is at most u T
**     (1.5 + (2 + 3 H_d) / d) (1 + 2^-20), H_d the harmonic number: below
**     2.8 u T for d >= 8;
**   * Welford's in chunks merged pairwise (m = m_A + (m_B - m_A) n_B / n,
**     PyTorch's CPU and CUDA kernels): each merge's rounding reaches the
**     end times n / d and is at most about 5.5 u A_node / n there, so the
**     merges add about 5.5 u T depth / d to the chunks' own (the bound
**     above, weighted n_chunk / d): within 4 u T for d >= 64.  This last
**     is a sketch; --check-orders (Welford's updates in every order) and
**     PyTorch's own layer norm measure it (doc/compiler.md).
**
** BOS's residual (bos_pass, below) is bounded layer by layer and charged
** to BOS's keys and values.  With every charge made, and the units proven,
** the layer norms are reported proven (--stats, STEM.json's
** layout.layer_norm.proven, bos_bound the largest distance): every reader
** sums, through them, within what the proof charged it.  A proof-driven
** compile refuses norms not proven (raspG_ln_conclude).
*/
#include "rcompile_int.h"

/* gamma_n = n u / (1 - n u): a sum of n products, in any order, is within
** gamma_n times the sum of their sizes (u = 2^-24). */
static double gamma_n(int n) {
  double u = ldexp(1, -24);
  return n * u / (1 - n * u);
}

/* What one writer (rows of W: its inputs, each at most a[r] in size; b its
** bias or NULL; D columns, the residual's dimensions) leaves of the
** balance's cancellation: the residual sums to exactly 0 over what the
** writer's weights give on its computed inputs, but for each column's
** rounding (gamma over its nonzero rows and bias, times its terms' sizes),
** the balance column's (its terms at most the others' sum), and the
** balance weights' own rounding (fl(-sum of a row), u times that row's
** sum of |W|). */
static double writer_drift(const float *W, const float *b, int nin, int D, const double *a) {
  double u = ldexp(1, -24), drift = 0, tot = 0;
  for (int j = 0; j < D; j++) {
    double S = b ? fabs((double)b[j]) : 0;
    int n = b && b[j] != 0;
    for (int r = 0; r < nin; r++) {
      float w = W[(size_t)r * D + j];
      if (w != 0) S += fabs((double)w) * a[r], n++;
    }
    drift += gamma_n(n) * S, tot += S;
  }
  return drift + gamma_n(nin + 1) * tot * (1 + u) + u * tot;
}

/* The size of a sum over a layer norm's output, column col of W (D rows,
** stride ld) plus bias b, with x_r within [lo[r], hi[r]] and the computed
** mean within Mg.  The sinks cancel the shift m in real arithmetic, so the
** sum is b + sum of w_r x_r but for each read's rounding (u |x_r - m|):
** between `below` and `above`, each term at the end of x_r's range that
** makes it least or most; grown by the rounding of at most D + 3 products
** (the shifted terms, and the sinks' as much again, reach 2 Mg (1 + u)
** times the weights in the partial sums).  relu: what a hidden unit passes,
** max(0, above) and the rounding (a large gate such as -L is_bos, where
** is_bos is 0 or 1, only lowers it); else the sum's largest size. */
static double read_bound(const float *W, int ld, int col, float b, const double *lo, const double *hi,
                         int D, double Mg, int relu) {
  double above = b, below = b, s = fabs((double)b), w1 = 0, e = ldexp(1, -23);
  for (int r = 0; r < D; r++) {
    double w = W[(size_t)r * ld + col];
    if (w == 0) continue;
    double l = lo[r] - e * (fabs(lo[r]) + Mg), h = hi[r] + e * (fabs(hi[r]) + Mg);
    above += fmax(w * l, w * h), below += fmin(w * l, w * h);
    s += fabs(w) * fmax(fabs(l), fabs(h)), w1 += fabs(w);
  }
  double v = relu ? fmax(0, above) : fmax(fabs(above), fabs(below));
  return v * (1 + ldexp(1, -20)) + gamma_n(D + 3) * (s + 3 * Mg * w1);
}

/* Each residual dimension's range at every layer norm, signed: the values
** of every unit that holds it (a one-hot 0 or 1, a number's values, its
** square's) and 0 (before it is written, after it is erased), each off by
** less than 1 (the bound raspG_ln_units_ok checks after the proof), and
** within B, raspG_ln_dim_bounds's bound on its size. */
static void dim_range(gc *g, const double *B, int D, double *lo, double *hi) {
  for (int d = 0; d < D; d++) lo[d] = hi[d] = 0;
  for (int d = 0; d < 2 && d < D; d++) hi[d] = 1; /* is_bos, one */
  for (int i = 0; i < g->nu; i++) {
    const unit *u = &g->u[i];
    if (!u->used || u->dim < 0) continue;
    for (int k = 0; k < usize(u) && u->dim + k < D; k++) {
      double mn = 0, mx = u->cat ? 1 : 0;
      for (int a = 0; a < u->nvals && !u->cat; a++) {
        double x = dval(u->vals[a]), v = u->sq && k ? x * x : x;
        mn = fmin(mn, v), mx = fmax(mx, v);
      }
      lo[u->dim + k] = fmin(lo[u->dim + k], mn), hi[u->dim + k] = fmax(hi[u->dim + k], mx);
    }
  }
  for (int d = 0; d < D; d++) lo[d] = fmax(-B[d], lo[d] - 1), hi[d] = fmin(B[d], hi[d] + 1);
}

/* A bound on the residual's true mean times d1 at every layer norm (the
** sum of what every writer leaves, writer_drift, and of every residual
** addition's rounding, u T each), B bounding each dimension and Mg the
** computed mean.  A writer's inputs (a head's values, an MLP's hidden
** units) are sums over a layer norm's output (read_bound). */
static double residual_drift(gc *g, rasp_model *m, const double *B, double T, double Mg) {
  const rasp_model_config *c = &m->cfg;
  int D = c->d_model, F = c->d_mlp, H = c->n_heads, dh = c->d_head;
  double u = ldexp(1, -24), grow = 1 + ldexp(1, -20), total = 0;
  int nmax = F > H * dh ? F : H * dh;
  double *a = raspM_alloc(sizeof(double) * (size_t)(nmax + 1 + 2 * D)), *lo = a + nmax + 1, *hi = lo + D;
  dim_range(g, B, D, lo, hi);
  /* the embeddings: the balance of a token row and of a position row, each
  ** rounded once, and their sum, rounded on every dimension and the
  ** balance */
  const float *te = raspN_data(m, "tok_emb"), *pe = c->pos_embedding ? raspN_data(m, "pos_emb") : NULL;
  double tmax = 0, pmax = 0;
  for (int v = 0; v < c->vocab_size; v++) tmax = fmax(tmax, raspG_col_abs(te + (size_t)v * D, D, 1, 0, NULL));
  for (int p = 0; pe && p < c->max_len; p++) pmax = fmax(pmax, raspG_col_abs(pe + (size_t)p * D, D, 1, 0, NULL));
  total += 3 * u * (tmax + pmax) * grow;
  for (int L = 0; L < c->n_layers; L++) {
    /* attention: each head's values within the largest its value columns
    ** read (a weighted mean moves no further), then w_o and b_o */
    const float *wv = raspG_layer_data(m, L, "attn.w_v");
    const float *bv = raspG_layer_data(m, L, "attn.b_v");
    for (int h = 0; h < H; h++)
      for (int j = 0; j < dh; j++)
        a[h * dh + j] = read_bound(wv + (size_t)h * D * dh, dh, j, bv[h * dh + j], lo, hi, D, Mg, 0);
    const float *wo = raspG_layer_data(m, L, "attn.w_o");
    total += writer_drift(wo, raspG_layer_data(m, L, "attn.b_o"), H * dh, D, a) + u * T;
    /* the MLP: each hidden unit within what ReLU passes of its
    ** pre-activation */
    const float *wi = raspG_layer_data(m, L, "mlp.w_in");
    const float *bi = raspG_layer_data(m, L, "mlp.b_in");
    for (int h = 0; h < F; h++) a[h] = read_bound(wi, F, h, bi[h], lo, hi, D, Mg, 1);
    const float *wout = raspG_layer_data(m, L, "mlp.w_out");
    total += writer_drift(wout, raspG_layer_data(m, L, "mlp.b_out"), F, D, a) + u * T;
  }
  raspM_free(a);
  return total;
}

/* ---- BOS's residual ----------------------------------------------------
**
** At BOS (position 0) a causal model sees BOS alone: every input gives it
** the same residual, and every head's weight on its one key is exactly 1
** (exp(0) over a sum of exp(0) and exact zeros), so its output is its value
** vector, whatever the scores.  Without norms the construction makes BOS's
** residual exactly is_bos's one-hot at every attention (each head writes
** its default, the layer's hidden unit 0, ReLU(is_bos), takes it back,
** every other hidden unit is gated off by -L is_bos), and the proof reads
** BOS's key and value from that one-hot.  Through stock norms each of
** those sums rounds with the shift m, so the heads' defaults and their undo
** no longer cancel exactly.  bos_pass follows one forward pass at BOS with
** a centre (the pass in real arithmetic, the norms' shifts cancelled by
** the sinks, computed in double) and, per dimension, a bound G on how far
** any implementation's float32 pass can be from it, in any summation
** order, with the computed mean within M:
**
**   * a reader's sum (a value column, a hidden unit's pre-activation) is
**     off by its rows' deviations, each read's rounding u |x - m|, and the
**     sum's own (raspG_stock_sum_err over its terms);
**   * a hidden unit whose centre is at or below minus its bound is exactly
**     0 (ReLU); any other is off by at most its pre-activation's bound;
**   * a writer's column (w_o, w_out) is off by its weights times its
**     inputs' bounds, and by gamma of its nonzero terms' sizes; the
**     residual's addition rounds by u of the sum;
**   * double's own rounding of the centre, n 2^-52 of each sum's terms'
**     sizes, is added to G too.
**
** raspG_stock_bos_err charges a reader at layer L what the difference from
** is_bos's one-hot adds to its sum at BOS's key: the deviation of each row
** (|centre - one-hot| + G), its read's rounding, and the sum's extra
** rounding.  The readers: BOS's key columns (hm_stock) and its value
** columns (the default a head returns, head_stock_values). */

static double gamma_d(int n) { return n * ldexp(1, -52); }

/* One reader column's sum at BOS, over the layer norm's output (col of W,
** d rows, stride ld; bias b): its centre and bound, from the residual's
** centre xc and bounds G. */
static double bos_read(const gc *g, const float *W, int d, int ld, int col, float b,
                       const double *xc, const double *G, double *err) {
  double u = ldexp(1, -24), c = b, t = fabs((double)b), dev = 0, tgt = 0, w1 = 0, M = g->stock_M;
  int nnz = b != 0;
  for (int r = 0; r < d; r++) {
    double w = W[(size_t)r * ld + col];
    if (w == 0) continue;
    c += w * xc[r], t += fabs(w) * fabs(xc[r]), w1 += fabs(w), nnz++;
    dev += fabs(w) * (G[r] + u * (fabs(xc[r]) + G[r] + M) + g->ln_tiny);
    tgt += fabs(w) * G[r];
  }
  *err = dev + raspG_stock_sum_err(g, nnz, t, tgt, w1) + gamma_d(nnz) * t;
  return c;
}

/* A writer's column j at BOS (rows of W, ld columns; bias b): inputs with
** centre a and bound e (e[i] 0 and a[i] 0: an exact zero, no term).
** Adds the centre to xc[j] and the bound, with the addition's rounding, to
** G[j]. */
static void bos_write(const float *W, int nin, int ld, int j, float b, const double *a,
                      const double *e, double *xc, double *G) {
  double u = ldexp(1, -24), c = b, t = fabs((double)b), dev = 0;
  int nnz = b != 0;
  for (int i = 0; i < nin; i++) {
    double w = W[(size_t)i * ld + j];
    if (w == 0 || (a[i] == 0 && e[i] == 0)) continue;
    c += w * a[i], t += fabs(w) * (fabs(a[i]) + e[i]), dev += fabs(w) * e[i], nnz++;
  }
  double eo = dev + gamma_n(nnz) * t + gamma_d(nnz) * t;
  xc[j] += c;
  G[j] += eo + u * (fabs(xc[j]) + G[j] + eo) + gamma_d(2) * fabs(xc[j]);
}

/* The pass: fills g->stock_bos (n_layers rows of d), or leaves it NULL
** with stock_bos_why. */
static void bos_pass(gc *g, rasp_model *m) {
  const rasp_model_config *c = &m->cfg;
  int D = c->d_model, F = c->d_mlp, H = c->n_heads, dh = c->d_head, nl = c->n_layers;
  if (!c->causal) {
    g->stock_bos_why = "the model is not causal: BOS's residual depends on the input";
    return;
  }
  if (c->gelu) {
    g->stock_bos_why = "BOS's residual is bounded for ReLU models only";
    return;
  }
  int nmax = F > H * dh ? F : H * dh;
  double *xc = raspM_alloc(sizeof(double) * (size_t)(2 * D + 2 * nmax)), *G = xc + D;
  double *a = G + D, *e = a + nmax;
  double *out = raspM_alloc(sizeof(double) * (size_t)nl * D);
  const float *te = raspN_data(m, "tok_emb") + (size_t)c->bos_token * D;
  const float *pe = c->pos_embedding ? raspN_data(m, "pos_emb") : NULL;
  for (int r = 0; r < D; r++) {
    xc[r] = (double)te[r] + (pe ? (double)pe[r] : 0);
    G[r] = pe && te[r] != 0 && pe[r] != 0 ? ldexp(1, -24) * fabs(xc[r]) : 0;
  }
  double gmax = 0;
  for (int L = 0; L < nl; L++) {
    for (int r = 0; r < D; r++) {
      out[(size_t)L * D + r] = fabs(xc[r] - (r == 0)) + G[r];
      gmax = fmax(gmax, out[(size_t)L * D + r]);
    }
    /* attention: each head's output is its value vector */
    const float *wv = raspG_layer_data(m, L, "attn.w_v");
    const float *bv = raspG_layer_data(m, L, "attn.b_v");
    for (int h = 0; h < H; h++)
      for (int j = 0; j < dh; j++)
        a[h * dh + j] = bos_read(g, wv + (size_t)h * D * dh, D, dh, j, bv[h * dh + j], xc, G,
                                 &e[h * dh + j]);
    const float *wo = raspG_layer_data(m, L, "attn.w_o");
    const float *bo = raspG_layer_data(m, L, "attn.b_o");
    for (int j = 0; j < D; j++) bos_write(wo, H * dh, D, j, bo[j], a, e, xc, G);
    /* the MLP: a hidden unit surely at or below 0 is exactly 0 */
    const float *wi = raspG_layer_data(m, L, "mlp.w_in");
    const float *bi = raspG_layer_data(m, L, "mlp.b_in");
    for (int h = 0; h < F; h++) {
      double pre = bos_read(g, wi, D, F, h, bi[h], xc, G, &e[h]);
      a[h] = pre > 0 ? pre : 0;
      if (pre + e[h] <= 0) e[h] = 0;
    }
    const float *wout = raspG_layer_data(m, L, "mlp.w_out");
    const float *bout = raspG_layer_data(m, L, "mlp.b_out");
    for (int j = 0; j < D; j++) bos_write(wout, F, D, j, bout[j], a, e, xc, G);
  }
  raspM_free(xc);
  if (!(gmax < 1)) { /* (p was sized for errors below 1, and every value a unit holds) */
    raspM_free(out);
    g->stock_bos_why = "BOS's residual can be 1 or more from its one-hot";
    return;
  }
  g->stock_bos = out, g->stock_bos_max = gmax;
}

double raspG_stock_bos_err(const gc *g, int L, const float *W, int d, int ld, int col) {
  if (!g->stock || !g->stock_bos) return 0; /* (no bound: the norms are not proven) */
  const double *dev = g->stock_bos + (size_t)L * d;
  double u = ldexp(1, -24), e = 0, t = 0;
  int nnz = 0;
  for (int r = 0; r < d; r++) {
    double w = fabs((double)W[(size_t)r * ld + col]);
    if (w == 0) continue;
    nnz++;
    if (dev[r] == 0) continue;
    e += w * (dev[r] + u * (dev[r] + g->stock_M) + g->ln_tiny), t += w * dev[r];
  }
  return e + gamma_n(nnz + g->stock_ns) * t * (1 + u);
}

/* Chooses p (out->ln_q) from the residual's bounds, before the proof,
** and the bound M on |m|, the computed mean, that the proof charges
** (gc.stock_M): m is the residual's true mean (residual_drift over d1: the
** balance cancels what every writer writes but for rounding) plus the
** computed mean's own error, at most 4 u T (the essay above: a sum in any
** order, Welford's updates, their merges).  M is a
** fixed point: the writers' inputs are bounded with the layer norm's
** output off by 2 M.  The variance of fl(x - m) over d dimensions is at
** most (S + 2 M T + d M^2) / d in real arithmetic, and twice that as
** summed in float32 (d < 2^20).  A unit's stored errors do not move the
** true mean (the balance cancels what is written, not what the program
** means); that they stay below 1, as B assumes, raspG_ln_units_ok checks
** after the proof. */
void raspG_stock_plan(gc *g, raspG_model *out) {
  int d0 = out->model.cfg.d_model;
  double T, S, u = ldexp(1, -24);
  raspG_ln_sums(g, out, &T, &S);
  int d1 = d0 + 3; /* (at most: the balance and two sinks) */
  double *B = raspG_ln_dim_bounds(g, out);
  double M0 = 4 * u * T * (1 + ldexp(1, -20)), Mg = M0, M = M0;
  for (int it = 0; it < 60; it++) {
    M = M0 + residual_drift(g, &out->model, B, T, Mg) / (d0 + 1);
    if (M <= Mg) break;
    Mg = 2 * M;
  }
  raspM_free(B);
  if (!(M <= Mg)) Mg = INFINITY;
  double V = 2 * (S + 2 * Mg * T + d1 * Mg * Mg) / d1;
  int p32 = (int)ceil((log2(V) + 26) / 2), p64 = (int)ceil((log2(V) + 55) / 2);
  if (p32 < 1) p32 = 1;
  if (p64 < 1) p64 = 1;
  out->ln_f64 = p64 <= 62;
  out->ln_q = out->ln_f64 ? p64 : p32;
  out->ln_d0 = d0, out->ln_T = T, out->ln_S = S, out->ln_M = Mg + ldexp(1, out->ln_q - 150);
  out->ln_stock = 1;
  g->ln_tiny = ldexp(1, out->ln_q - 150);
  g->stock = 1, g->stock_ns = 2, g->stock_M = out->ln_M;
  bos_pass(g, &out->model);
}

/* A reader's sum over the layer norm's output: its nnz rows read fl(x_i -
** m) and its sink rows -m, with weights summing to exactly 0, so m cancels
** in real arithmetic; in float arithmetic every partial sum is within its
** terms' sizes t, their inputs' errors D, and the shifted terms' M (W1 +
** the sink rows' at most W1 (1 + u)), each of the nnz + ns products and
** additions rounding by u of one.  D is the inputs' absolute errors
** times |w| (linear: this bound is what charges each product's rounding,
** the error's share with it); their relative errors (kappa u, kappa at most
** max_len/2 + 4 with max_len = n + 1, and the read's own u) make the terms
** up to (n/2 + 6) u times larger than t.  (A value below 2^(p-126) after the norm's scaling is a
** subnormal, off by ln_tiny more, as the shift is.) */
double raspG_stock_sum_err(const gc *g, int nnz, double t, double D, double W1) {
  if (!g->stock) return 0;
  double u = ldexp(1, -24), rel = 1 + (g->n / 2.0 + 6) * u;
  return gamma_n(nnz + g->stock_ns) * (t * rel + D + 2 * (1 + u) * (g->stock_M + g->ln_tiny) * W1) +
         W1 * g->ln_tiny;
}

/* Reading `one` (1) with weight w1: fl(1 - m) is within u (1 + M) of 1 - m. */
double raspG_stock_one_err(const gc *g, double w1) {
  if (!g->stock) return 0;
  return fabs(w1) * (ldexp(1, -24) * (1 + g->stock_M) + g->ln_tiny);
}

/* Reading unit i's stored dimension k (|x| at most its largest value, off
** by its ae and kappa): fl(x - m) is within u |x - m| of x - m.  (A value
** stored exactly 0 is read as -m exactly; raspG_nz_exact's units keep
** that, their readers charging only the shift.) */
double raspG_stock_read_err(const gc *g, int i, int k) {
  if (!g->stock) return 0;
  const unit *s = &g->u[i];
  double u = ldexp(1, -24), x = raspG_col_max(g, i, k);
  return u * (x * (1 + s->kappa * u) + s->ae[k] + g->stock_M) + g->ln_tiny;
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
  for (int L = 0; L <= c->n_layers; L++) {
    if (L < c->n_layers) {
      static const char *const qkv[] = {"attn.w_q", "attn.w_k", "attn.w_v"};
      for (int t = 0; t < 3; t++) { /* [head][D][d_head] */
        float *w = raspG_layer_data(m, L, qkv[t]);
        for (int h = 0; h < c->n_heads; h++)
          for (int j = 0; j < c->d_head; j++) {
            int k = sink_col(w + (size_t)h * D * c->d_head + j, (size_t)c->d_head, d0, ns);
            if (!k) return 0;
            need = k > need ? k : need;
          }
      }
      float *wi = raspG_layer_data(m, L, "mlp.w_in"); /* [D][d_mlp] */
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
  out->ln_bos = g->stock_bos ? g->stock_bos_max : -1;
  /* (what p was sized for: every unit's error below 1, no value it holds
  ** below 2^(p-125); raspG_ln_units_ok says which fails, in ln_why) */
  out->ln_proven = raspG_ln_units_ok(g, out);
  if (!out->ln_proven) {
    char why[sizeof out->ln_why];
    snprintf(why, sizeof why, "%s", out->ln_why);
    snprintf(out->ln_why, sizeof out->ln_why, "not even sized right: %.120s", why);
  } else if (!need)
    out->ln_proven = 0, snprintf(out->ln_why, sizeof out->ln_why,
                                 "a reader's sink rows cannot cancel its other rows exactly in two floats");
  else if (!g->stock_bos)
    out->ln_proven = 0, snprintf(out->ln_why, sizeof out->ln_why, "%s", g->stock_bos_why);
  /* (no self-test at the worst rows: what the norms return is not the
  ** identity, and the proof's charges are what --check-orders and the
  ** loaders' layer norms are held to) */
  return raspG_ln_conclude(g, out, m0, &m1, 1, "--ln stock: the layer norms", "a layer norm", err);
}
