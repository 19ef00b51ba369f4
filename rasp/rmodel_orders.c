/*
** rmodel_orders.c -- the forward pass of rmodel.h's transformer in other
** summation orders and in float64 (rmodel_orders.h).
**
** Why.  A compiled model is proven exact against rounding (rcompile_prove.c),
** and --check runs it in one order: raspN_forward's (the compiler's sparse
** pass adds the same terms in the same order).  Someone who loads it into
** PyTorch on a GPU sums in another order (blocked, pairwise, by a
** permuted layout), and a loader may run it in float64 (model.double(),
** numpy promotion).  A claim "exact" that holds in one order only is a
** claim about that order; this file lets --check run the others.  It is
** written apart from raspN_forward and the compiler's pass, so that a bug
** shared with them does not hide here.
**
** How.  Every value is held in a double; in the float32 orders each
** operation's result is rounded to float at once (R below).  For +, -, *,
** / and sqrt that gives float32's own result: double has 53 >= 2 * 24 + 2
** bits, so rounding the exact result to double and then to float is the
** same as rounding it to float once.  exp and tanh are float32's expf and
** tanhf, as raspN_forward calls them.  Layer norm follows raspN_forward
** (its mean and variance summed in double, whatever the order); an RMS
** norm's sum of squares is summed in the order, as any other sum.
**
** Every dot product or reduction is one call of osum: the bias (or 0) in
** buf[0], the nonzero terms (each product already rounded) in buf[1..m],
** collected in the order the model's indices give (by rank under perm),
** and summed as the order says: c, perm and f64 from buf[0] up; rev from
** buf[m] down to the bias; asc and desc after sorting by magnitude; pair
** as a balanced tree.  Zero weights are left out (the matrices are kept by
** column, nonzeros only): an exact zero added anywhere changes no sum, so
** each of these is still an order of the full sum, and the pass costs what
** the compiled models' few nonzeros cost.
**
** perm draws one permutation each of the residual dimensions, the MLP's
** hidden units, the heads, the head dimensions and the key positions
** (splitmix64 of the seed): the order a copy of the model with its
** dimensions permuted consistently would sum in.  The argmax stays over the
** logits by index (a tie is a failure in any order).
**
** sdpa is the C order with the scores of PyTorch 2's
** scaled_dot_product_attention (its math path and ONNX export): the scale
** sqrt(1/sqrt(d_head)) computed in double, rounded to float32 as a tensor
** times a scalar rounds it, q and k each multiplied by it, then the
** product; no scale after.  Where d_head^(-1/4) is not a power of two this
** rounds differently from raspN_forward's product-then-scale.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rerror.h"
#include "rmem.h"
#include "rmodel_orders.h"

static const char *const order_names[RASPN_NORDERS] = {"c",    "rev",  "asc", "desc",
                                                       "pair", "perm", "f64", "sdpa"};

const char *raspN_order_name(int order) {
  return order >= 0 && order < RASPN_NORDERS ? order_names[order] : NULL;
}

int raspN_order_parse(const char *word) {
  for (int i = 0; word && i < RASPN_NORDERS; i++)
    if (!strcmp(word, order_names[i])) return i;
  return -1;
}

/* A weight matrix of `in` rows and `out` columns kept by column: column c's
** nonzero entries are row[ptr[c] .. ptr[c+1]) with weights w[...], in the
** order its sums take them. */
typedef struct smat {
  int out;
  int *ptr, *row;
  double *w;
} smat;

struct raspN_ofwd {
  const rasp_model *m;
  int order, f64;
  int stock_ln;    /* layer norms not the exact construction: summed in the order */
  int *inv_d, *inv_f, *inv_e, *inv_k; /* index order of dims, hidden units,
                                         head dims, keys (identity but perm) */
  smat *q, *k, *v; /* [layer * H + head]: D x Dh */
  smat *o;         /* [layer]: H*Dh x D, rows (head, head dim) */
  smat *wi, *wo;   /* [layer]: D x F, F x D */
  smat un;         /* D x n_out */
  double *buf;     /* osum's terms: 1 + the longest sum */
};

/* ---- building ----------------------------------------------------------- */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* The index order 0..n-1, shuffled when rng is not NULL. */
static int *index_order(int n, uint64_t *rng) {
  int *p = raspM_alloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  for (int i = 0; i < n; i++) p[i] = i;
  for (int i = n - 1; rng && i > 0; i--) {
    int j = (int)(splitmix(rng) % (uint64_t)(i + 1)), t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
  return p;
}

/* The matrix W (in x out, row r at W + r * stride) by column, its rows in
** the order rows_in[0..in). */
static void smat_build(smat *s, const float *W, int in, int out, size_t stride,
                       const int *rows_in) {
  size_t nz = 0;
  for (int r = 0; r < in; r++)
    for (int c = 0; c < out; c++) nz += W[(size_t)r * stride + c] != 0;
  s->out = out;
  s->ptr = raspM_alloc(sizeof(int) * ((size_t)out + 1));
  s->row = raspM_alloc(sizeof(int) * (nz ? nz : 1));
  s->w = raspM_alloc(sizeof(double) * (nz ? nz : 1));
  size_t k = 0;
  for (int c = 0; c < out; c++) {
    s->ptr[c] = (int)k;
    for (int i = 0; i < in; i++) {
      int r = rows_in[i];
      float w = W[(size_t)r * stride + c];
      if (w != 0) s->row[k] = r, s->w[k++] = w;
    }
  }
  s->ptr[out] = (int)k;
}

static void smat_free(smat *s) {
  raspM_free(s->ptr);
  raspM_free(s->row);
  raspM_free(s->w);
}

static const float *param(const rasp_model *m, int layer, const char *name) {
  char nm[64];
  snprintf(nm, sizeof nm, "layers.%d.%s", layer, name);
  return raspN_data((rasp_model *)m, nm); /* (raspN_data does not modify) */
}

raspN_ofwd *raspN_ofwd_new(const rasp_model *m, int order, uint64_t seed) {
  const rasp_model_config *c = &m->cfg;
  int D = c->d_model, H = c->n_heads, E = c->d_head, F = c->d_mlp, NL = c->n_layers;
  raspN_ofwd *f = raspM_alloc(sizeof *f);
  f->m = m, f->order = order, f->f64 = order == RASPN_ORD_F64;
  f->stock_ln = c->layer_norm == RASPN_LN_PRE && !raspN_ln_exact(m);
  uint64_t s = seed ^ 0x5eed0bde7ULL, *rng = order == RASPN_ORD_PERM ? &s : NULL;
  f->inv_d = index_order(D, rng);
  f->inv_f = index_order(F, rng);
  f->inv_e = index_order(E, rng);
  f->inv_k = index_order(c->max_len, rng);
  int *inv_h = index_order(H, rng), *rows_o = raspM_alloc(sizeof(int) * (size_t)(H * E + 1));
  for (int a = 0; a < H; a++)
    for (int b = 0; b < E; b++) rows_o[a * E + b] = inv_h[a] * E + f->inv_e[b];
  f->q = raspM_alloc(sizeof(smat) * (size_t)(NL * H + 1));
  f->k = raspM_alloc(sizeof(smat) * (size_t)(NL * H + 1));
  f->v = raspM_alloc(sizeof(smat) * (size_t)(NL * H + 1));
  f->o = raspM_alloc(sizeof(smat) * (size_t)(NL + 1));
  f->wi = raspM_alloc(sizeof(smat) * (size_t)(NL + 1));
  f->wo = raspM_alloc(sizeof(smat) * (size_t)(NL + 1));
  for (int L = 0; L < NL; L++) {
    const float *wq = param(m, L, "attn.w_q"), *wk = param(m, L, "attn.w_k"),
                *wv = param(m, L, "attn.w_v");
    for (int h = 0; h < H; h++) {
      size_t off = (size_t)h * D * E;
      smat_build(&f->q[L * H + h], wq + off, D, E, (size_t)E, f->inv_d);
      smat_build(&f->k[L * H + h], wk + off, D, E, (size_t)E, f->inv_d);
      smat_build(&f->v[L * H + h], wv + off, D, E, (size_t)E, f->inv_d);
    }
    smat_build(&f->o[L], param(m, L, "attn.w_o"), H * E, D, (size_t)D, rows_o);
    smat_build(&f->wi[L], param(m, L, "mlp.w_in"), D, F, (size_t)F, f->inv_d);
    smat_build(&f->wo[L], param(m, L, "mlp.w_out"), F, D, (size_t)D, f->inv_f);
  }
  smat_build(&f->un, raspN_data((rasp_model *)m, "unembed"), D, c->n_out, (size_t)c->n_out,
             f->inv_d);
  int longest = D > F ? D : F;
  if (H * E > longest) longest = H * E;
  if (c->max_len > longest) longest = c->max_len;
  f->buf = raspM_alloc(sizeof(double) * ((size_t)longest + 2));
  raspM_free(inv_h);
  raspM_free(rows_o);
  return f;
}

void raspN_ofwd_free(raspN_ofwd *f) {
  if (!f) return;
  const rasp_model_config *c = &f->m->cfg;
  for (int i = 0; i < c->n_layers * c->n_heads; i++) {
    smat_free(&f->q[i]);
    smat_free(&f->k[i]);
    smat_free(&f->v[i]);
  }
  for (int L = 0; L < c->n_layers; L++) {
    smat_free(&f->o[L]);
    smat_free(&f->wi[L]);
    smat_free(&f->wo[L]);
  }
  smat_free(&f->un);
  raspM_free(f->q);
  raspM_free(f->k);
  raspM_free(f->v);
  raspM_free(f->o);
  raspM_free(f->wi);
  raspM_free(f->wo);
  raspM_free(f->inv_d);
  raspM_free(f->inv_f);
  raspM_free(f->inv_e);
  raspM_free(f->inv_k);
  raspM_free(f->buf);
  raspM_free(f);
}

/* ---- arithmetic --------------------------------------------------------- */

/* x rounded to the pass's element type. */
static inline double R(const raspN_ofwd *f, double x) { return f->f64 ? x : (double)(float)x; }

static int cmp_mag(const void *a, const void *b) {
  double x = fabs(*(const double *)a), y = fabs(*(const double *)b);
  if (x != y) return x < y ? -1 : 1;
  x = *(const double *)a, y = *(const double *)b; /* (a fixed order for ties) */
  return (x > y) - (x < y);
}

static double pairwise(const raspN_ofwd *f, const double *t, int n) {
  if (n == 1) return t[0];
  return R(f, pairwise(f, t, n / 2) + pairwise(f, t + n / 2, n - n / 2));
}

/* The sum of f->buf[0] (the bias, or 0) and the m terms f->buf[1..m], in
** the pass's order. */
static double osum(raspN_ofwd *f, int m) {
  double *t = f->buf, s = 0;
  switch (f->order) {
  case RASPN_ORD_REV:
    for (int i = m; i >= 0; i--) s = R(f, s + t[i]);
    return s;
  case RASPN_ORD_ASC:
  case RASPN_ORD_DESC:
    qsort(t, (size_t)m + 1, sizeof *t, cmp_mag);
    if (f->order == RASPN_ORD_ASC)
      for (int i = 0; i <= m; i++) s = R(f, s + t[i]);
    else
      for (int i = m; i >= 0; i--) s = R(f, s + t[i]);
    return s;
  case RASPN_ORD_PAIR: return pairwise(f, t, m + 1);
  default:
    s = t[0];
    for (int i = 1; i <= m; i++) s = R(f, s + t[i]);
    return s;
  }
}

/* Column c of s applied to x (x[row]), plus bias. */
static double dot_col(raspN_ofwd *f, const smat *s, int c, const double *x, double bias) {
  int m = 0;
  f->buf[0] = bias;
  for (int k = s->ptr[c]; k < s->ptr[c + 1]; k++) f->buf[++m] = R(f, x[s->row[k]] * s->w[k]);
  return osum(f, m);
}

/* ---- the pass ----------------------------------------------------------- */

/* Welford's moments of t[0..n) (count, mean, sum of squared deviations),
** each operation rounded: sequentially, or (pair) halves merged as Chan's
** parallel update -- the updates torch.nn.LayerNorm's kernels use. */
typedef struct { double n, mean, m2; } moments;

static moments welford(const raspN_ofwd *f, const double *t, int n) {
  moments r = {0, 0, 0};
  if (f->order == RASPN_ORD_PAIR && n > 1) {
    moments a = welford(f, t, n / 2), b = welford(f, t + n / 2, n - n / 2);
    double delta = R(f, b.mean - a.mean);
    r.n = a.n + b.n;
    r.mean = R(f, a.mean + R(f, delta * R(f, b.n / r.n)));
    r.m2 = R(f, R(f, a.m2 + b.m2) + R(f, R(f, delta * delta) * R(f, R(f, a.n * b.n) / r.n)));
    return r;
  }
  for (int k = 0; k < n; k++) {
    double delta = R(f, t[k] - r.mean);
    r.n = k + 1;
    r.mean = R(f, r.mean + R(f, delta / r.n));
    r.m2 = R(f, r.m2 + R(f, delta * R(f, t[k] - r.mean)));
  }
  return r;
}

/* x (d values) layer-normed into out, as raspN_forward's layer_norm (the
** exact construction of rasp compile --ln pre: its arithmetic, whatever
** the order); a stock layer norm (stock_ln) instead as a float32 one
** computes: Welford's mean and variance over x in the pass's order (sorted
** by magnitude for asc and desc, halves merged for pair), each operation
** rounded. */
static void layer_norm(raspN_ofwd *f, const double *x, const float *w, const float *b,
                       int d, double *out) {
  double eps = raspN_norm_eps(&f->m->cfg), mean = 0, var = 0, rs;
  if (f->stock_ln) { /* Welford's, over x in the pass's order */
    double *t = f->buf;
    for (int i = 0; i < d; i++) t[i] = x[f->inv_d[i]];
    if (f->order == RASPN_ORD_ASC || f->order == RASPN_ORD_DESC)
      qsort(t, (size_t)d, sizeof *t, cmp_mag);
    if (f->order == RASPN_ORD_REV || f->order == RASPN_ORD_DESC)
      for (int i = 0; i < d / 2; i++) {
        double s = t[i];
        t[i] = t[d - 1 - i], t[d - 1 - i] = s;
      }
    moments mo = welford(f, t, d);
    mean = mo.mean;
    var = R(f, mo.m2 / d);
    rs = R(f, 1.0 / R(f, sqrt(R(f, var + eps))));
    for (int i = 0; i < d; i++) out[i] = R(f, R(f, R(f, R(f, x[i] - mean) * rs) * w[i]) + b[i]);
    return;
  }
  for (int i = 0; i < d; i++) mean += x[f->inv_d[i]];
  mean /= d;
  for (int i = 0; i < d; i++) var += (x[i] - mean) * (x[i] - mean);
  var /= d;
  rs = f->f64 ? 1.0 / sqrt(var + eps) : (float)(1.0 / sqrt(var + eps));
  for (int i = 0; i < d; i++) out[i] = R(f, R(f, R(f, (x[i] - mean) * rs) * w[i]) + b[i]);
}

/* x (d values) RMS-normed into out, as raspN_rms_norm, with its sum of
** squares taken in the pass's order like every other sum (by rank under
** perm), the mean, eps, square root and reciprocal each rounded. */
static void rms_norm(raspN_ofwd *f, const double *x, const float *w, int d, double *out) {
  f->buf[0] = 0;
  for (int i = 0; i < d; i++) {
    double xi = x[f->inv_d[i]];
    f->buf[i + 1] = R(f, xi * xi);
  }
  double ms = R(f, osum(f, d) / d), eps = f->f64 ? 1e-5 : (double)RASPN_RMS_EPS;
  double rs = R(f, 1.0 / R(f, sqrt(R(f, ms + eps))));
  for (int i = 0; i < d; i++) out[i] = R(f, R(f, x[i] * rs) * w[i]);
}

/* h (n x D, already normed) through layer L's heads, added to x. */
static void attention(raspN_ofwd *f, int L, const double *h, double *x, int n, double *q,
                      double *k, double *v, double *hv, double *att) {
  const rasp_model_config *c = &f->m->cfg;
  int D = c->d_model, H = c->n_heads, E = c->d_head;
  const float *bq = param(f->m, L, "attn.b_q"), *bk = param(f->m, L, "attn.b_k"),
              *bv = param(f->m, L, "attn.b_v"), *bo = param(f->m, L, "attn.b_o");
  double scale = f->f64 ? 1.0 / sqrt((double)E) : (double)(1.0f / sqrtf((float)E));
  /* sdpa: q and k each times this, and no scale after the product */
  double qks = (float)sqrt(1.0 / sqrt((double)E));
  int sdpa = f->order == RASPN_ORD_SDPA;
  for (int hd = 0; hd < H; hd++) {
    const smat *Q = &f->q[L * H + hd], *K = &f->k[L * H + hd], *V = &f->v[L * H + hd];
    for (int i = 0; i < n; i++)
      for (int e = 0; e < E; e++) {
        int be = hd * E + e;
        q[i * E + e] = dot_col(f, Q, e, h + (size_t)i * D, bq[be]);
        k[i * E + e] = dot_col(f, K, e, h + (size_t)i * D, bk[be]);
        v[i * E + e] = dot_col(f, V, e, h + (size_t)i * D, bv[be]);
      }
    for (int i = 0; i < n; i++) {
      int nk = c->causal ? i + 1 : n;
      double mx = -INFINITY, sum;
      for (int j = 0; j < nk; j++) {
        f->buf[0] = 0;
        for (int e = 0; e < E; e++) {
          int ee = f->inv_e[e];
          f->buf[e + 1] = sdpa ? R(f, R(f, q[i * E + ee] * qks) * R(f, k[j * E + ee] * qks))
                               : R(f, q[i * E + ee] * k[j * E + ee]);
        }
        att[j] = sdpa ? osum(f, E) : R(f, osum(f, E) * scale);
        if (att[j] > mx) mx = att[j];
      }
      for (int j = 0; j < nk; j++)
        att[j] = f->f64 ? exp(att[j] - mx) : (double)expf((float)(att[j] - mx));
      int m = 0;
      f->buf[0] = 0;
      for (int jj = 0; jj < c->max_len; jj++)
        if (f->inv_k[jj] < nk) f->buf[++m] = att[f->inv_k[jj]];
      sum = osum(f, m);
      for (int e = 0; e < E; e++) {
        m = 0;
        f->buf[0] = 0;
        for (int jj = 0; jj < c->max_len; jj++) {
          int j = f->inv_k[jj];
          if (j < nk) f->buf[++m] = R(f, R(f, att[j] / sum) * v[j * E + e]);
        }
        hv[(size_t)i * H * E + hd * E + e] = osum(f, m);
      }
    }
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < D; j++)
      x[(size_t)i * D + j] = R(f, x[(size_t)i * D + j] +
                                      dot_col(f, &f->o[L], j, hv + (size_t)i * H * E, bo[j]));
}

static double act(const raspN_ofwd *f, double z, int gelu) {
  if (!gelu) return z > 0 ? z : 0;
  if (f->f64) return 0.5 * z * (1.0 + tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
  float x = (float)z, k = 0.7978845608028654f;
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

/* h (n x D, already normed) through layer L's MLP, added to x. */
static void mlp(raspN_ofwd *f, int L, const double *h, double *x, int n, double *z) {
  const rasp_model_config *c = &f->m->cfg;
  int D = c->d_model, F = c->d_mlp;
  const float *bi = param(f->m, L, "mlp.b_in"), *bt = param(f->m, L, "mlp.b_out");
  for (int i = 0; i < n; i++) {
    for (int u = 0; u < F; u++) z[u] = act(f, dot_col(f, &f->wi[L], u, h + (size_t)i * D, bi[u]), c->gelu);
    for (int j = 0; j < D; j++)
      x[(size_t)i * D + j] = R(f, x[(size_t)i * D + j] + dot_col(f, &f->wo[L], j, z, bt[j]));
  }
}

/* h = x, or x normed (layer norm or RMS norm) by the named weights. */
static void normed(raspN_ofwd *f, const char *w, const char *b, int L, const double *x,
                   double *h, int n) {
  const rasp_model_config *c = &f->m->cfg;
  int D = c->d_model;
  if (!c->layer_norm) {
    memcpy(h, x, sizeof *h * (size_t)n * D);
    return;
  }
  const float *W = L >= 0 ? param(f->m, L, w) : raspN_data((rasp_model *)f->m, w),
              *B = L >= 0 ? param(f->m, L, b) : raspN_data((rasp_model *)f->m, b);
  for (int i = 0; i < n; i++)
    if (c->layer_norm == RASPN_LN_RMS) rms_norm(f, x + (size_t)i * D, W, D, h + (size_t)i * D);
    else layer_norm(f, x + (size_t)i * D, W, B, D, h + (size_t)i * D);
}

int raspN_ofwd_run(raspN_ofwd *f, const int *tokens, int n, double *logits, rasp_error *err) {
  const rasp_model *m = f->m;
  const rasp_model_config *c = &m->cfg;
  if (!raspN_check_input(c, tokens, n, err)) return 0;
  int D = c->d_model, H = c->n_heads, E = c->d_head;
  size_t nD = (size_t)n * D;
  double *x = raspM_alloc(sizeof(double) * nD), *h = raspM_alloc(sizeof(double) * nD);
  double *q = raspM_alloc(sizeof(double) * (size_t)n * E), *k = raspM_alloc(sizeof(double) * (size_t)n * E);
  double *v = raspM_alloc(sizeof(double) * (size_t)n * E), *att = raspM_alloc(sizeof(double) * (size_t)n);
  double *hv = raspM_alloc(sizeof(double) * (size_t)n * H * E);
  double *z = raspM_alloc(sizeof(double) * (size_t)(c->d_mlp + 1));
  const float *te = raspN_data((rasp_model *)m, "tok_emb"), *pe = raspN_data((rasp_model *)m, "pos_emb");
  for (int i = 0; i < n; i++)
    for (int j = 0; j < D; j++)
      x[(size_t)i * D + j] = R(f, (double)te[(size_t)tokens[i] * D + j] +
                                      (pe ? pe[(size_t)i * D + j] : 0.0));
  for (int L = 0; L < c->n_layers; L++) {
    normed(f, "ln1.weight", "ln1.bias", L, x, h, n);
    attention(f, L, h, x, n, q, k, v, hv, att);
    normed(f, "ln2.weight", "ln2.bias", L, x, h, n);
    mlp(f, L, h, x, n, z);
  }
  normed(f, "ln_f.weight", "ln_f.bias", -1, x, h, n);
  const float *ub = raspN_data((rasp_model *)m, "unembed_b");
  for (int i = 0; i < n; i++)
    for (int r = 0; r < c->n_out; r++)
      logits[(size_t)i * c->n_out + r] = dot_col(f, &f->un, r, h + (size_t)i * D, ub[r]);
  raspM_free(x);
  raspM_free(h);
  raspM_free(q);
  raspM_free(k);
  raspM_free(v);
  raspM_free(att);
  raspM_free(hv);
  raspM_free(z);
  return 1;
}
