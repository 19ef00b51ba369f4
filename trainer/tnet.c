/*
** tnet.c -- forward and backward passes of the trainer (see tnet.h).
**
** Layouts: every activation is row-major with one row per (sequence,
** position), r = b*T + t.  Queries, keys and values of all heads share one
** (rows, 3*H*Dh) matrix: row r holds q, then k, then v, head h of each in
** columns h*Dh .. h*Dh+Dh-1 of its third; a->k is a->q + H*Dh, a->v is
** a->q + 2*H*Dh, all with row stride 3*H*Dh (and so do their gradients).
** w_o, stored [H, Dh, D], is used as one (H*Dh, D) matrix.  w_q, w_k and
** w_v, stored [H, D, Dh], are copied into one (D, 3*H*Dh) matrix (wpack)
** per use, so that the three projections of all heads are one sgemm, and
** so are their two gradients, not 3*H narrow ones each (d_head is small in
** compiled models: 3 heads of 27 for a d_model of 755; the copy is
** 3*D*H*Dh floats against 3*R*D*H*Dh MACs).  Attention works one
** (batch, head) tile at a time, its products (scores, weighted sums and
** their four gradients) through tkern_sgemm reading q, k and v in place;
** each tile's probabilities are kept for the backward (B*H*T*T floats a
** layer, 10 MB at the paper's micro-batch) rather than recomputed.  With a
** causal mask the tile products skip the zero triangle (tkern_sgemm_tri).
** The MLP keeps its activation and, for GELU, the derivative (computed
** with it in one pass after the product), not the pre-activation.
** Where the time goes, and what was measured: bench/README-train.md.
*/
#include "tnet.h"

#include <cblas.h>
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "rmem.h"
#include "tkern.h"

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

/* The element-wise loops are compiled three times (target_clones): for
** x86-64-v4 (AVX-512), x86-64-v3 (AVX2, FMA) and the baseline, and the
** loader picks the clone the CPU runs (ifunc), so the default build (-O2,
** no -march) gets 64-byte vectors where the CPU has them, not only SSE2's
** 16.  OpenMP's parallel loops are not cloned (their outlined bodies would
** not follow): they call cloned functions on chunks instead.  No float
** contraction at -std=c11, so the clones differ only in the order of the
** omp simd reductions. */
#define VEC                                                                    \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define CHUNK 8192 /* floats per chunk of a parallel element-wise loop */

typedef struct lparams {
  float *ln1w, *ln1b, *wq, *wk, *wv, *bq, *bk, *bv, *wo, *bo, *ln2w, *ln2b,
      *win, *bin, *wout, *bout;
} lparams;

/* Pointers into a flat buffer laid out like the parameters (params or
** grad), for layer l. */
static lparams layer_ptrs(rasp_model *m, float *base, int l) {
  lparams p;
  char nm[64];
#define G(s) (snprintf(nm, sizeof nm, "layers.%d.%s", l, s),                  \
              raspN_tensor(m, nm) ? base + raspN_tensor(m, nm)->offset : NULL)
  p.ln1w = G("ln1.weight");
  p.ln1b = G("ln1.bias");
  p.wq = G("attn.w_q");
  p.wk = G("attn.w_k");
  p.wv = G("attn.w_v");
  p.bq = G("attn.b_q");
  p.bk = G("attn.b_k");
  p.bv = G("attn.b_v");
  p.wo = G("attn.w_o");
  p.bo = G("attn.b_o");
  p.ln2w = G("ln2.weight");
  p.ln2b = G("ln2.bias");
  p.win = G("mlp.w_in");
  p.bin = G("mlp.b_in");
  p.wout = G("mlp.w_out");
  p.bout = G("mlp.b_out");
#undef G
  return p;
}

static float *tensor_in(rasp_model *m, float *base, const char *name) {
  rasp_tensor *t = raspN_tensor(m, name);
  return t ? base + t->offset : NULL;
}

/* ---- allocation --------------------------------------------------------- */

static float *fbuf(size_t n) { return raspM_alloc((n ? n : 1) * sizeof(float)); }

int train_net_init(train_net *n, rasp_model *m, int B, int T, float dropout,
                   rasp_error *err) {
  memset(n, 0, sizeof *n);
  const rasp_model_config *c = &m->cfg;
  if (B < 1 || T < 1 || T > c->max_len) {
    raspR_setnoposc(err, RASP_E_USAGE, "network: batch %d x length %d does not fit the model "
                        "(max_len %d)", B, T, c->max_len);
    return 0;
  }
  openblas_set_num_threads(1); /* see sg() */
  n->m = m;
  n->exact_ln = raspN_ln_exact(m);
  n->B = B;
  n->T = T;
  n->dropout = dropout;
  n->grad = fbuf(m->nparams);
  size_t R = (size_t)B * T, D = (size_t)c->d_model,
         HD = (size_t)c->n_heads * c->d_head, F = (size_t)c->d_mlp;
  n->emb = fbuf(R * D);
  if (dropout > 0) n->emb_mask = fbuf(R * D);
  n->L = raspM_alloc(((size_t)c->n_layers + 1) * sizeof *n->L);
  for (int l = 0; l < c->n_layers; l++) {
    train_layer_acts *a = &n->L[l];
    if (c->layer_norm) {
      a->ln1 = fbuf(R * D);
      a->ln1_mean = fbuf(R);
      a->ln1_rstd = fbuf(R);
      a->ln2 = fbuf(R * D);
      a->ln2_mean = fbuf(R);
      a->ln2_rstd = fbuf(R);
    }
    a->q = fbuf(R * 3 * HD); /* q, k, v interleaved by row (see top) */
    a->k = a->q + HD;
    a->v = a->q + 2 * HD;
    a->att = fbuf((size_t)B * c->n_heads * T * T);
    a->atty = fbuf(R * HD);
    a->mid = fbuf(R * D);
    if (c->gelu) a->dact = fbuf(R * F);
    a->act = fbuf(R * F);
    a->out = fbuf(R * D);
    if (dropout > 0) {
      a->ao_mask = fbuf(R * D);
      a->mo_mask = fbuf(R * D);
    }
  }
  if (c->layer_norm) {
    n->lnf = fbuf(R * D);
    n->lnf_mean = fbuf(R);
    n->lnf_rstd = fbuf(R);
  }
  n->logits = fbuf(R * c->n_out);
  n->dlogits = fbuf(R * c->n_out);
  n->dx = fbuf(R * D);
  n->dh = fbuf(R * D);
  n->dt = fbuf(R * D);
  n->dq = fbuf(R * 3 * HD);
  n->dk = n->dq + HD;
  n->dv = n->dq + 2 * HD;
  n->daty = fbuf(R * HD);
  n->dfc = fbuf(R * F);
  n->wpack = fbuf(D * 3 * HD);
  n->gpack = fbuf(D * 3 * HD);
  raspT_rng_seed(&n->rng, 0x5eed, 0);
  return 1;
}

void train_net_free(train_net *n) {
  if (!n->m) return;
  for (int l = 0; l < n->m->cfg.n_layers; l++) {
    train_layer_acts *a = &n->L[l];
    float *bufs[] = {a->ln1, a->ln1_mean, a->ln1_rstd, a->ln2, a->ln2_mean,
                     a->ln2_rstd, a->q, a->att, a->atty, a->mid,
                     a->dact, a->act, a->out, a->ao_mask, a->mo_mask};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) raspM_free(bufs[i]);
  }
  float *bufs[] = {n->grad, n->emb, n->emb_mask, n->lnf, n->lnf_mean,
                   n->lnf_rstd, n->logits, n->dlogits, n->dx, n->dh, n->dt,
                   n->dq, n->daty, n->dfc, n->wpack, n->gpack};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) raspM_free(bufs[i]);
  raspM_free(n->L);
  memset(n, 0, sizeof *n);
}

void train_zero_grad(train_net *n) {
  memset(n->grad, 0, n->m->nparams * sizeof(float));
}

/* ---- dropout ------------------------------------------------------------ */

/* The mask was one xoshiro draw per entry, a serial dependency chain (4%
** of a step).  Now one draw per call gives a 64-bit key and entry i's bits
** are a hash of (key, i) (counter-based, like Philox, but a 32-bit integer
** hash: two multiply-xorshift rounds over i mixed with the key), which
** vectorises and parallelises and stays reproducible from n->rng (which
** the trainer seeds per epoch).  Entries i < 2^32 (checked by the caller's
** sizes: R * D floats). */
VEC static void dropout_range(float *restrict y, float *restrict mask,
                              const float *restrict resid, size_t i0, size_t i1,
                              uint64_t key, uint32_t thr, float keep) {
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
#pragma omp simd
  for (size_t i = i0; i < i1; i++) {
    uint32_t h = ((uint32_t)i ^ k1) * 0x9e3779b1u + k0;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    float mk = (h >> 8) < thr ? 0.0f : keep; /* 24 bits: ample for a rate */
    mask[i] = mk;
    y[i] = y[i] * mk + (resid ? resid[i] : 0.0f);
  }
}

/* Fills mask with 0 or 1/(1-p) (inverted dropout) and sets x = x * mask +
** resid (resid NULL: 0): the residual add fused in. */
static void dropout_fwd(train_net *n, float *x, float *mask, const float *resid,
                        size_t len) {
  float p = n->dropout, keep = 1.0f / (1.0f - p);
  uint32_t thr = (uint32_t)(p * 16777216.0f);
  uint64_t key = raspT_rng_next(&n->rng);
#pragma omp parallel for schedule(static) if (len > 100000)
  for (size_t c = 0; c < len; c += CHUNK)
    dropout_range(x, mask, resid, c, c + CHUNK < len ? c + CHUNK : len, key,
                  thr, keep);
}

/* ---- embedding ---------------------------------------------------------- */

static void embedding_fwd(float *out, const int *tok, const float *te,
                          const float *pe, int b, int t, int D) {
  for (int i = 0; i < b; i++)
    for (int j = 0; j < t; j++) {
      float *o = out + ((size_t)i * t + j) * D;
      const float *e = te + (size_t)tok[i * t + j] * D;
      const float *p = pe ? pe + (size_t)j * D : NULL;
      for (int d = 0; d < D; d++) o[d] = e[d] + (p ? p[d] : 0.0f);
    }
}

static void embedding_bwd(const float *dout, const int *tok, float *dte,
                          float *dpe, int b, int t, int D) {
  /* Serial: rows with the same token would race. */
  for (int i = 0; i < b; i++)
    for (int j = 0; j < t; j++) {
      const float *g = dout + ((size_t)i * t + j) * D;
      float *e = dte + (size_t)tok[i * t + j] * D;
      float *p = dpe ? dpe + (size_t)j * D : NULL;
      for (int d = 0; d < D; d++) {
        e[d] += g[d];
        if (p) p[d] += g[d];
      }
    }
}

/* ---- layer norm --------------------------------------------------------- */

VEC static void layernorm_fwd_rows(float *restrict out, float *restrict mean,
                                   float *restrict rstd, const float *restrict x,
                                   const float *restrict w,
                                   const float *restrict bias, size_t r0,
                                   size_t r1, int D, float eps) {
  for (size_t r = r0; r < r1; r++) {
    const float *xr = x + r * D;
    float m = 0, v = 0;
#pragma omp simd reduction(+ : m)
    for (int d = 0; d < D; d++) m += xr[d];
    m /= D;
#pragma omp simd reduction(+ : v)
    for (int d = 0; d < D; d++) v += (xr[d] - m) * (xr[d] - m);
    v /= D;
    float s = 1.0f / sqrtf(v + eps);
    float *o = out + r * D;
#pragma omp simd
    for (int d = 0; d < D; d++) o[d] = (xr[d] - m) * s * w[d] + bias[d];
    mean[r] = m;
    rstd[r] = s;
  }
}

/* rmodel.c's layer norm (raspN_layer_norm: double sums in index order),
** with the mean and rstd the backward reads: a compiled pre-LN model's layer
** norms return the residual only in this arithmetic (its constants are near
** 2^80, their squares past float32's range; doc/compiler.md, "Pre-LN
** models"), so its step 0 is the compiled model's. */
static void layernorm_fwd_exact(float *out, float *mean, float *rstd, const float *x,
                                const float *w, const float *bias, size_t R, int D,
                                double eps) {
#pragma omp parallel for schedule(static) if (R * D > 100000)
  for (size_t r = 0; r < R; r++) {
    const float *xr = x + r * D;
    raspN_layer_norm(xr, w, bias, D, eps, out + r * D);
    double m = 0, v = 0;
    for (int d = 0; d < D; d++) m += xr[d];
    m /= D;
    for (int d = 0; d < D; d++) v += (xr[d] - m) * (xr[d] - m);
    mean[r] = (float)m;
    rstd[r] = (float)(1.0 / sqrt(v / D + eps));
  }
}

static void layernorm_fwd(float *out, float *mean, float *rstd, const float *x,
                          const float *w, const float *bias, size_t R, int D, int exact,
                          double eps) {
  if (exact) {
    layernorm_fwd_exact(out, mean, rstd, x, w, bias, R, D, eps);
    return;
  }
#pragma omp parallel for schedule(static) if (R * D > 100000)
  for (size_t r = 0; r < R; r += 32)
    layernorm_fwd_rows(out, mean, rstd, x, w, bias, r, r + 32 < R ? r + 32 : R, D, (float)eps);
}

VEC static void layernorm_bwd_rows(float *restrict dx, const float *restrict dout,
                                   const float *restrict x, const float *restrict w,
                                   const float *restrict mean,
                                   const float *restrict rstd, size_t r0,
                                   size_t r1, int D) {
  for (size_t r = r0; r < r1; r++) {
    const float *g = dout + r * D, *xr = x + r * D;
    float m = mean[r], s = rstd[r], a = 0, bsum = 0;
#pragma omp simd reduction(+ : a, bsum)
    for (int d = 0; d < D; d++) {
      float xh = (xr[d] - m) * s, gw = g[d] * w[d];
      a += gw;
      bsum += gw * xh;
    }
    a /= D;
    bsum /= D;
    float *o = dx + r * D;
#pragma omp simd
    for (int d = 0; d < D; d++) {
      float xh = (xr[d] - m) * s;
      o[d] += s * (g[d] * w[d] - a - xh * bsum);
    }
  }
}

VEC static void layernorm_wgrad(float *restrict dw, float *restrict db,
                                const float *restrict dout,
                                const float *restrict x,
                                const float *restrict mean,
                                const float *restrict rstd, size_t R, int D) {
  for (size_t r = 0; r < R; r++) {
    const float *g = dout + r * D, *xr = x + r * D;
    float m = mean[r], s = rstd[r];
#pragma omp simd
    for (int d = 0; d < D; d++) {
      dw[d] += g[d] * (xr[d] - m) * s;
      db[d] += g[d];
    }
  }
}

/* Adds to dx; dw and db accumulate (serially over rows, to avoid races). */
static void layernorm_bwd(float *dx, float *dw, float *db, const float *dout,
                          const float *x, const float *w, const float *mean,
                          const float *rstd, size_t R, int D) {
#pragma omp parallel for schedule(static) if (R * D > 100000)
  for (size_t r = 0; r < R; r += 32)
    layernorm_bwd_rows(dx, dout, x, w, mean, rstd, r, r + 32 < R ? r + 32 : R, D);
  layernorm_wgrad(dw, db, dout, x, mean, rstd, R, D);
}

/* ---- RMS norm (layer_norm 2) -------------------------------------------- */

/* y = x s w, s = 1 / sqrt(mean(x^2) + eps) per row (rmodel.h's raspN_rms_norm,
** its sum of squares in the simd order: a compiled pre-RMSNorm model's norms
** are exact in any order, doc/compiler.md, "Pre-RMSNorm models"); rstd[r] = s
** for the backward. */
VEC static void rmsnorm_fwd_rows(float *restrict out, float *restrict rstd,
                                 const float *restrict x, const float *restrict w,
                                 size_t r0, size_t r1, int D) {
  for (size_t r = r0; r < r1; r++) {
    const float *xr = x + r * D;
    float ss = 0;
#pragma omp simd reduction(+ : ss)
    for (int d = 0; d < D; d++) ss += xr[d] * xr[d];
    float s = 1.0f / sqrtf(ss / (float)D + RASPN_RMS_EPS);
    float *o = out + r * D;
#pragma omp simd
    for (int d = 0; d < D; d++) o[d] = (xr[d] * s) * w[d];
    rstd[r] = s;
  }
}

static void rmsnorm_fwd(float *out, float *rstd, const float *x, const float *w, size_t R,
                        int D) {
#pragma omp parallel for schedule(static) if (R * D > 100000)
  for (size_t r = 0; r < R; r += 32)
    rmsnorm_fwd_rows(out, rstd, x, w, r, r + 32 < R ? r + 32 : R, D);
}

/* dx_i += s w_i g_i - x_i s^3 (1/D) sum_j g_j w_j x_j (s^2 = 1 / (mean(x^2)
** + eps): d s / d x_i = -s^3 x_i / D). */
VEC static void rmsnorm_bwd_rows(float *restrict dx, const float *restrict dout,
                                 const float *restrict x, const float *restrict w,
                                 const float *restrict rstd, size_t r0, size_t r1, int D) {
  for (size_t r = r0; r < r1; r++) {
    const float *g = dout + r * D, *xr = x + r * D;
    float s = rstd[r], a = 0;
#pragma omp simd reduction(+ : a)
    for (int d = 0; d < D; d++) a += g[d] * w[d] * xr[d];
    float c = a / (float)D * s * s * s;
    float *o = dx + r * D;
#pragma omp simd
    for (int d = 0; d < D; d++) o[d] += s * g[d] * w[d] - xr[d] * c;
  }
}

/* Adds to dx; dw accumulates (serially over rows). */
static void rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x,
                        const float *w, const float *rstd, size_t R, int D) {
#pragma omp parallel for schedule(static) if (R * D > 100000)
  for (size_t r = 0; r < R; r += 32)
    rmsnorm_bwd_rows(dx, dout, x, w, rstd, r, r + 32 < R ? r + 32 : R, D);
  for (size_t r = 0; r < R; r++) {
    const float *g = dout + r * D, *xr = x + r * D;
    float s = rstd[r];
    for (int d = 0; d < D; d++) dw[d] += g[d] * xr[d] * s;
  }
}

/* The model's norm (config.layer_norm: 1 layer norm, 2 RMS norm) forward
** and backward; mean is unused by the RMS norm, b and db NULL for it. */
static void norm_fwd(const train_net *n, float *out, float *mean, float *rstd, const float *x,
                     const float *w, const float *b, size_t R, int D) {
  if (n->m->cfg.layer_norm == RASPN_LN_RMS) rmsnorm_fwd(out, rstd, x, w, R, D);
  else layernorm_fwd(out, mean, rstd, x, w, b, R, D, n->exact_ln, raspN_norm_eps(&n->m->cfg));
}

static void norm_bwd(const train_net *n, float *dx, float *dw, float *db, const float *dout,
                     const float *x, const float *w, const float *mean, const float *rstd,
                     size_t R, int D) {
  if (n->m->cfg.layer_norm == RASPN_LN_RMS) rmsnorm_bwd(dx, dw, dout, x, w, rstd, R, D);
  else layernorm_bwd(dx, dw, db, dout, x, w, mean, rstd, R, D);
}

/* ---- matmul helpers ----------------------------------------------------- */

/* All matmuls go through sg(): OpenMP splits the output into row (or
** column) blocks, one single-threaded product per thread (tkern_sgemm: the
** trainer's own AVX-512/AVX2 kernels, OpenBLAS on other CPUs, which runs
** single-threaded).
** Mixing OpenBLAS's own threads with OpenMP's spinning ones oversubscribes
** the cores (measured: 10x slower on 2 cores), so one threading layer. */
static void sg(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K,
               const float *A, int lda, const float *Bm, int ldb, float beta,
               float *C, int ldc) {
  int nt = omp_get_max_threads();
  if (nt <= 1 || (long)M * N * K < 200000) {
    tkern_sgemm(ta == CblasTrans, tb == CblasTrans, M, N, K, A, lda, Bm, ldb,
                beta, C, ldc);
    return;
  }
  int rows = M >= N;
  int tot = rows ? M : N;
#pragma omp parallel num_threads(nt)
  {
    int id = omp_get_thread_num(), n = omp_get_num_threads();
    /* split points on multiples of 32, the AVX-512 micro-tile's width and
    ** a multiple of its height's: no thread gets extra edge tiles */
    int a = (int)((long)tot * id / n) / 32 * 32,
        b = id == n - 1 ? tot : (int)((long)tot * (id + 1) / n) / 32 * 32;
    if (b > a) {
      if (rows) {
        const float *Ap = ta == CblasNoTrans ? A + (size_t)a * lda : A + a;
        tkern_sgemm(ta == CblasTrans, tb == CblasTrans, b - a, N, K, Ap, lda,
                    Bm, ldb, beta, C + (size_t)a * ldc, ldc);
      } else {
        const float *Bp = tb == CblasNoTrans ? Bm + a : Bm + (size_t)a * ldb;
        tkern_sgemm(ta == CblasTrans, tb == CblasTrans, M, b - a, K, A, lda,
                    Bp, ldb, beta, C + a, ldc);
      }
    }
  }
}

/* C (M x N, ldc) = A (M x K, lda) B (K x N, ldb) [+ C when acc]. */
static void mm(int M, int N, int K, const float *A, int lda, const float *Bm,
               int ldb, float *C, int ldc, int acc) {
  sg(CblasNoTrans, CblasNoTrans, M, N, K, A, lda, Bm, ldb, acc ? 1.0f : 0.0f,
     C, ldc);
}
/* C += A^T B: A (K x M), B (K x N). */
static void mm_tn(int M, int N, int K, const float *A, int lda, const float *Bm,
                  int ldb, float *C, int ldc) {
  sg(CblasTrans, CblasNoTrans, M, N, K, A, lda, Bm, ldb, 1.0f, C, ldc);
}
/* C (+)= A B^T: A (M x K), B (N x K). */
static void mm_nt(int M, int N, int K, const float *A, int lda, const float *Bm,
                  int ldb, float *C, int ldc, int acc) {
  sg(CblasNoTrans, CblasTrans, M, N, K, A, lda, Bm, ldb, acc ? 1.0f : 0.0f, C,
     ldc);
}

/* The element-wise loops below take restrict pointers and `omp simd`:
** GCC's -O2 (the "very cheap" vectorisation cost model: no runtime alias
** checks, no epilogues) leaves them scalar otherwise, which cost a fifth
** of a step on a compiled model (d_model 755, 3 heads of 27). */
VEC static void add_bias_rows(float *restrict x, const float *restrict b,
                              size_t r0, size_t r1, int N, int ld) {
  for (size_t r = r0; r < r1; r++)
#pragma omp simd
    for (int j = 0; j < N; j++) x[r * ld + j] += b[j];
}

static void add_bias(float *x, const float *b, size_t R, int N, int ld) {
#pragma omp parallel for schedule(static) if (R * N > 100000)
  for (size_t r = 0; r < R; r += 32)
    add_bias_rows(x, b, r, r + 32 < R ? r + 32 : R, N, ld);
}

VEC static void bias_grad(float *restrict db, const float *restrict dy, size_t R,
                      int N, int ld) {
  for (size_t r = 0; r < R; r++)
#pragma omp simd
    for (int j = 0; j < N; j++) db[j] += dy[r * ld + j];
}

/* y += x */
VEC static void vec_add(float *restrict y, const float *restrict x, size_t n) {
#pragma omp simd
  for (size_t i = 0; i < n; i++) y[i] += x[i];
}

/* y = x * m */
VEC static void vec_mul(float *restrict y, const float *restrict x,
                    const float *restrict m, size_t n) {
#pragma omp simd
  for (size_t i = 0; i < n; i++) y[i] = x[i] * m[i];
}

/* ---- attention ---------------------------------------------------------- */

/* w (H, D, Dh) -> out (D, H*Dh, leading dimension ld):
** out[d][h*Dh + e] = w[h][d][e]. */
static void pack_heads(float *out, size_t ld, const float *w, int H, int D,
                       int Dh) {
  for (int hd = 0; hd < H; hd++)
    for (int d = 0; d < D; d++)
      memcpy(out + d * ld + (size_t)hd * Dh, w + ((size_t)hd * D + d) * Dh,
             (size_t)Dh * sizeof *out);
}

/* w (H, D, Dh) += g (D, H*Dh, leading dimension ld): pack_heads inverted. */
static void unpack_add_heads(float *w, const float *g, size_t ld, int H, int D,
                             int Dh) {
  for (int hd = 0; hd < H; hd++)
    for (int d = 0; d < D; d++)
      vec_add(w + ((size_t)hd * D + d) * Dh, g + d * ld + (size_t)hd * Dh,
              (size_t)Dh);
}

static inline float vexp(float x) {
  const float shift = 12582912.0f; /* 1.5 * 2^23: rounds to an integer */
  float t = x * 1.44269504f + shift, k = t - shift;
  float r = x - k * 0.693145752f - k * 1.42860677e-6f; /* ln2, hi + lo */
  float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 +
            r * (1.0f / 120 + r * (1.0f / 720))))));
  uint32_t ti, ki;
  memcpy(&ti, &t, sizeof ti);
  /* 2^k: k is t's mantissa minus 0x400000; unsigned, so the shift is
  ** defined (k + 127 > 0 for every x here: x >= -80) */
  ki = (ti - 0x4B400000u + 127u) << 23;
  float s;
  memcpy(&s, &ki, sizeof s);
  return p * s;
}

/* One row of scores in place: p[j] = softmax(scale * p[0..nk))_j for j <
** nk, 0 for nk <= j < t (causal mask).  Vectorised: the max and the sum
** are omp simd reductions, e^x is vexp with x clamped to -80 (e^-80 is
** 2e-35, which rounds away against the row's largest term, 1). */
__attribute__((always_inline)) static inline void
softmax_row(float *restrict p, int nk, int t, float scale) {
  float mx = -INFINITY, sum = 0.0f;
#pragma omp simd reduction(max : mx)
  for (int j = 0; j < nk; j++) mx = p[j] > mx ? p[j] : mx;
  mx *= scale;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < nk; j++) {
    /* x <= 0; -|x| clamped at -80 on its bits (a float compare here is
    ** control flow to GCC at -O2 and the loop would stay scalar) */
    float x = p[j] * scale - mx;
    uint32_t xb;
    memcpy(&xb, &x, sizeof xb);
    xb &= 0x7fffffffu;
    xb = (xb < 0x42a00000u ? xb : 0x42a00000u) | 0x80000000u; /* 80.0f */
    memcpy(&x, &xb, sizeof x);
    p[j] = vexp(x);
    sum += p[j];
  }
  float inv = 1.0f / sum;
#pragma omp simd
  for (int j = 0; j < nk; j++) p[j] *= inv;
#pragma omp simd
  for (int j = nk; j < t; j++) p[j] = 0.0f;
}

/* Softmax backward for one row: ds[j] = p[j] (ds[j] - sum_k p[k] ds[k]) *
** scale for j < nk, where ds holds dL/dp on entry; 0 for nk <= j < t (p is
** 0 there, and ds was not computed: see attention_bwd). */
__attribute__((always_inline)) static inline void
softmax_bwd_row(float *restrict ds, const float *restrict p, int nk, int t,
                float scale) {
  float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
  for (int j = 0; j < nk; j++) dot += p[j] * ds[j];
#pragma omp simd
  for (int j = 0; j < nk; j++) ds[j] = p[j] * (ds[j] - dot) * scale;
#pragma omp simd
  for (int j = nk; j < t; j++) ds[j] = 0.0f;
}

/* The softmax and its backward over a (batch, head) tile, t rows: one call
** per tile, not per row (a row is 35 entries on average when causal, and
** the per-row call through the clone's dispatch cost as much as the row). */
VEC static void softmax_tile(float *restrict P, int t, int causal, float scale) {
  for (int i = 0; i < t; i++)
    softmax_row(P + (size_t)i * t, causal ? i + 1 : t, t, scale);
}

/* softmax_tile with AVX-512 and masks, where the CPU has it: the clone's
** omp simd loops reduce their lanes one by one (16 dependent max and 16
** dependent adds a row) and take a row's last nk mod 16 entries through a
** scalar copy of vexp, which made the forward softmax 3% of a step for rows
** of 35 entries on average.  The same arithmetic entry by entry (vexp's
** multiplies and adds, unfused like the C, the same clamp); only the order
** of the row sum's additions differs. */
#define M16(n) ((n) >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n)) - 1))
__attribute__((target("avx512f"))) static void
softmax_tile512(float *restrict P, int t, int causal, float scale) {
  const __m512 vs = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-INFINITY),
               shift = _mm512_set1_ps(12582912.0f);
  const __m512i absm = _mm512_set1_epi32(0x7fffffff), lim = _mm512_set1_epi32(0x42a00000),
                sgn = _mm512_set1_epi32((int)0x80000000u),
                bias = _mm512_set1_epi32((int)(127u - 0x4B400000u));
  for (int i = 0; i < t; i++) {
    float *p = P + (size_t)i * t;
    int nk = causal ? i + 1 : t, j;
    __m512 vm = ninf, vsum = _mm512_setzero_ps();
    for (j = 0; j < nk; j += 16)
      vm = _mm512_max_ps(vm, _mm512_mask_loadu_ps(ninf, M16(nk - j), p + j));
    __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(vm) * scale);
    for (j = 0; j < nk; j += 16) {
      __mmask16 m = M16(nk - j);
      __m512 x = _mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, p + j), vs), mx);
      __m512i xb = _mm512_min_epu32(_mm512_and_si512(_mm512_castps_si512(x), absm), lim);
      x = _mm512_castsi512_ps(_mm512_or_si512(xb, sgn));
      /* vexp */
      __m512 tt = _mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)), shift),
             k = _mm512_sub_ps(tt, shift);
      __m512 r = _mm512_sub_ps(_mm512_sub_ps(x, _mm512_mul_ps(k, _mm512_set1_ps(0.693145752f))),
                               _mm512_mul_ps(k, _mm512_set1_ps(1.42860677e-6f)));
      __m512 q = _mm512_add_ps(_mm512_set1_ps(1.0f / 120), _mm512_mul_ps(r, _mm512_set1_ps(1.0f / 720)));
      q = _mm512_add_ps(_mm512_set1_ps(1.0f / 24), _mm512_mul_ps(r, q));
      q = _mm512_add_ps(_mm512_set1_ps(1.0f / 6), _mm512_mul_ps(r, q));
      q = _mm512_add_ps(_mm512_set1_ps(0.5f), _mm512_mul_ps(r, q));
      q = _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_mul_ps(r, q));
      q = _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_mul_ps(r, q));
      __m512 s = _mm512_castsi512_ps(
          _mm512_slli_epi32(_mm512_add_epi32(_mm512_castps_si512(tt), bias), 23));
      __m512 e = _mm512_mul_ps(q, s);
      _mm512_mask_storeu_ps(p + j, m, e);
      vsum = _mm512_add_ps(vsum, _mm512_maskz_mov_ps(m, e));
    }
    __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
    for (j = 0; j < nk; j += 16) {
      __mmask16 m = M16(nk - j);
      _mm512_mask_storeu_ps(p + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, p + j), inv));
    }
    for (j = nk; j < t; j += 16) _mm512_mask_storeu_ps(p + j, M16(t - j), _mm512_setzero_ps());
  }
}
#undef M16

VEC static void softmax_bwd_tile(float *restrict dS, const float *restrict P,
                                 int t, int causal, float scale) {
  for (int i = 0; i < t; i++)
    softmax_bwd_row(dS + (size_t)i * t, P + (size_t)i * t, causal ? i + 1 : t,
                    t, scale);
}

/* dS += coef (P - Pt) on a tile's attended entries: the gradient of coef /
** scale times KL(Pt || P) per row with respect to the raw scores. */
static void attn_target_bwd(float *restrict dS, const float *restrict P,
                            const float *restrict Pt, int t, int causal, float coef) {
  for (int i = 0; i < t; i++) {
    int nk = causal ? i + 1 : t;
    for (int j = 0; j < nk; j++) {
      size_t k = (size_t)i * t + j;
      dS[k] += coef * (P[k] - Pt[k]);
    }
  }
}

/* out (R x D) = attention(h) (without dropout). */
static void attention_fwd(train_net *n, train_layer_acts *a, const lparams *p,
                          const float *h, float *out) {
  const rasp_model_config *c = &n->m->cfg;
  int b = n->b, t = n->t, D = c->d_model, H = c->n_heads, Dh = c->d_head,
      HD = H * Dh;
  int R = b * t, QS = 3 * HD; /* row stride of q, k, v */
  pack_heads(n->wpack, (size_t)QS, p->wq, H, D, Dh);
  pack_heads(n->wpack + HD, (size_t)QS, p->wk, H, D, Dh);
  pack_heads(n->wpack + 2 * HD, (size_t)QS, p->wv, H, D, Dh);
  mm(R, QS, D, h, D, n->wpack, QS, a->q, QS, 0);
  add_bias(a->q, p->bq, (size_t)R, HD, QS);
  add_bias(a->k, p->bk, (size_t)R, HD, QS);
  add_bias(a->v, p->bv, (size_t)R, HD, QS);
  float scale = 1.0f / sqrtf((float)Dh);
  int causal = c->causal;
  const float *Q = a->q, *K = a->k, *V = a->v;
  float *Y = a->atty, *att = a->att;
  /* one (batch, head) tile at a time: its scores S = Q K^T (t x t), the
  ** softmax in place, Y = P V; both products through tkern_sgemm, which
  ** reads the tiles where they lie (row stride QS).  Causal: only S's lower
  ** triangle is computed (softmax_row reads nothing above the diagonal and
  ** writes 0 there) and P V skips P's zeros (tkern.h, tkern_sgemm_tri):
  ** about 40% of the tile products' work */
  int lowc = causal ? TKERN_C_LOWER : TKERN_FULL,
      lowa = causal ? TKERN_A_LOWER : TKERN_FULL;
  int avx512 = !strcmp(tkern_name(), "avx512"); /* the CPU has it */
#pragma omp parallel for collapse(2) schedule(static) if ((long)b * t * t * Dh * H > 200000)
  for (int bi = 0; bi < b; bi++)
    for (int hd = 0; hd < H; hd++) {
      float *P = att + ((size_t)bi * H + hd) * t * t;
      size_t o = (size_t)bi * t * QS + (size_t)hd * Dh;
      tkern_sgemm_tri(lowc, 0, 1, t, t, Dh, Q + o, QS, K + o, QS, 0.0f, P, t);
      if (avx512)
        softmax_tile512(P, t, causal, scale);
      else
        softmax_tile(P, t, causal, scale);
      tkern_sgemm_tri(lowa, 0, 0, t, Dh, t, P, t, V + o, QS, 0.0f,
                      Y + (size_t)bi * t * HD + (size_t)hd * Dh, HD);
    }
  mm(R, D, HD, a->atty, HD, p->wo, D, out, D, 0);
  add_bias(out, p->bo, (size_t)R, D, D);
}

/* dout: gradient of the attention output (R x D); writes dh (R x D). */
static void attention_bwd(train_net *n, train_layer_acts *a, const lparams *p,
                          lparams *g, const float *h, const float *dout,
                          float *dh) {
  const rasp_model_config *c = &n->m->cfg;
  int b = n->b, t = n->t, D = c->d_model, H = c->n_heads, Dh = c->d_head,
      HD = H * Dh;
  int R = b * t, QS = 3 * HD;
  /* out = atty wo + bo */
  mm_tn(HD, D, R, a->atty, HD, dout, D, g->wo, D);
  bias_grad(g->bo, dout, (size_t)R, D, D);
  mm_nt(R, HD, D, dout, D, p->wo, D, n->daty, HD, 0);
  float scale = 1.0f / sqrtf((float)Dh);
  /* dq, dk and dv share a buffer, in disjoint columns; every entry of the
  ** b*t rows is written below (beta 0), so no zeroing */
  float *dQ = n->dq, *dK = n->dk, *dV = n->dv;
  const float *Q = a->q, *K = a->k, *V = a->v, *dY = n->daty, *att = a->att;
  /* causal: P and dS are lower triangular (as in attention_fwd) */
  int causal = c->causal, lowc = causal ? TKERN_C_LOWER : TKERN_FULL,
      lowa = causal ? TKERN_A_LOWER : TKERN_FULL,
      upa = causal ? TKERN_A_UPPER : TKERN_FULL;
  const float *Pt = n->att_target && n->att_coef != 0 ? n->att_target[a - n->L] : NULL;
#pragma omp parallel if ((long)b * t * t * Dh * H > 200000)
  {
    float *dS = raspM_alloc((size_t)t * t * sizeof(float));
#pragma omp for collapse(2) schedule(static)
    for (int bi = 0; bi < b; bi++)
      for (int hd = 0; hd < H; hd++) {
        /* per tile: dP = dY V^T, dV = P^T dY, dS = P * (dP - rowsum(P dP))
        ** * scale in place, dQ = dS K, dK = dS^T Q (P is 0 above the
        ** diagonal when causal, and so is dS) */
        const float *P = att + ((size_t)bi * H + hd) * t * t;
        size_t o = (size_t)bi * t * QS + (size_t)hd * Dh;
        const float *dy = dY + (size_t)bi * t * HD + (size_t)hd * Dh;
        tkern_sgemm_tri(lowc, 0, 1, t, t, Dh, dy, HD, V + o, QS, 0.0f, dS, t);
        tkern_sgemm_tri(upa, 1, 0, t, Dh, t, P, t, dy, HD, 0.0f, dV + o, QS);
        softmax_bwd_tile(dS, P, t, causal, scale);
        if (Pt) /* + coef d KL(target || P) / d score = coef scale (P - target) */
          attn_target_bwd(dS, P, Pt + ((size_t)bi * H + hd) * t * t, t, causal,
                          (float)(n->att_coef * scale));
        tkern_sgemm_tri(lowa, 0, 0, t, Dh, t, dS, t, K + o, QS, 0.0f, dQ + o, QS);
        tkern_sgemm_tri(upa, 1, 0, t, Dh, t, dS, t, Q + o, QS, 0.0f, dK + o, QS);
      }
    raspM_free(dS);
  }
  bias_grad(g->bq, n->dq, (size_t)R, HD, QS);
  bias_grad(g->bk, n->dk, (size_t)R, HD, QS);
  bias_grad(g->bv, n->dv, (size_t)R, HD, QS);
  /* gpack = h^T [dq dk dv], added to the three gradients head by head;
  ** dh = [dq dk dv] wpack^T */
  sg(CblasTrans, CblasNoTrans, D, QS, R, h, D, n->dq, QS, 0.0f, n->gpack, QS);
  unpack_add_heads(g->wq, n->gpack, (size_t)QS, H, D, Dh);
  unpack_add_heads(g->wk, n->gpack + HD, (size_t)QS, H, D, Dh);
  unpack_add_heads(g->wv, n->gpack + 2 * HD, (size_t)QS, H, D, Dh);
  pack_heads(n->wpack, (size_t)QS, p->wq, H, D, Dh);
  pack_heads(n->wpack + HD, (size_t)QS, p->wk, H, D, Dh);
  pack_heads(n->wpack + 2 * HD, (size_t)QS, p->wv, H, D, Dh);
  mm_nt(R, D, QS, n->dq, QS, n->wpack, QS, dh, D, 0);
}

/* ---- MLP ---------------------------------------------------------------- */

/* The activation loops were one loop with the choice of ReLU or GELU (a
** libm tanhf call) inside: scalar, and ReLU's branch on the sign of random
** pre-activations mispredicted half the time, 8% of a step at one thread
** (bench/README-train.md).  Now one branch-free loop per activation,
** vectorised (`omp simd`; no calls, no branches inside).  GELU's tanh is
** sign(u) (1 - e)/(1 + e), e = e^(-2|u|), |u| clamped to 10 (tanh(10)
** rounds to 1 in float), and e^x from vexp(): x = k ln2 + r,
** |r| <= ln2/2, 2^k built in the exponent bits, e^r by its degree-6 Taylor
** polynomial (relative error below 2.5e-7 on [-80, 20]; tanh's absolute
** error against double tanh is below 3e-7, libm's tanhf's 1e-7: checked by
** test_tanh_accuracy in tests/test_train.c). */
static inline float vtanh(float u) {
  /* |u| clamped to 10 on its bits (positive floats order like their bits):
  ** a float compare would be a branch (GCC keeps those under its default
  ** -ftrapping-math) and the loop would stay scalar. */
  uint32_t b, sign;
  memcpy(&b, &u, sizeof b);
  sign = b & 0x80000000u;
  b &= 0x7fffffffu;
  b = b < 0x41200000u ? b : 0x41200000u; /* 10.0f */
  float a, e, th;
  memcpy(&a, &b, sizeof a);
  e = vexp(-2.0f * a); /* in [e^-20, 1] */
  th = (1.0f - e) / (1.0f + e);
  memcpy(&b, &th, sizeof b);
  b |= sign;
  memcpy(&th, &b, sizeof th);
  return th;
}

float train_tanh(float u) { return vtanh(u); }

/* tanh of GELU's argument (tanh form) */
static inline float gelu_tanh(float x) {
  return vtanh(GELU_K * (x + 0.044715f * x * x * x));
}

/* The forward pass adds the bias and applies the activation in one pass
** over the GEMM's output, in place (act), and GELU's forward also keeps
** its derivative at the pre-activation (dact), so the backward is one
** multiply: the tanh is computed once per entry and step, not twice, and
** no pre-activation is kept.  ReLU's derivative is act > 0 (act = x > 0 ?
** x : 0 is positive exactly where x is), so ReLU keeps nothing more. */
VEC static void relu_fwd_rows(float *restrict y, const float *restrict b,
                              size_t r0, size_t r1, int F) {
  for (size_t r = r0; r < r1; r++) {
    float *yr = y + r * F;
#pragma omp simd
    for (int j = 0; j < F; j++) {
      float x = yr[j] + b[j];
      yr[j] = x > 0.0f ? x : 0.0f;
    }
  }
}

VEC static void gelu_fwd_rows(float *restrict y, float *restrict dy,
                              const float *restrict b, size_t r0, size_t r1,
                              int F) {
  for (size_t r = r0; r < r1; r++) {
    float *yr = y + r * F, *dr = dy + r * F;
#pragma omp simd
    for (int j = 0; j < F; j++) {
      float x = yr[j] + b[j], th = gelu_tanh(x);
      yr[j] = 0.5f * x * (1.0f + th);
      dr[j] = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * GELU_K *
                                       (1.0f + 3 * 0.044715f * x * x);
    }
  }
}

/* act (R x F) = act(act + b) in place, dact = act'(...) for GELU */
static void activation_fwd(int gelu, float *act, float *dact, const float *b,
                           size_t R, int F) {
#pragma omp parallel for schedule(static) if (R * F > 100000)
  for (size_t r = 0; r < R; r += 16) {
    size_t r1 = r + 16 < R ? r + 16 : R;
    if (gelu)
      gelu_fwd_rows(act, dact, b, r, r1, F);
    else
      relu_fwd_rows(act, b, r, r1, F);
  }
}

/* dy *= act'(x) and db += the column sums of the result, in one pass over
** dy (it was two: the derivative, then bias_grad), columns c0 .. c1-1 of
** every row.  Each db[j] adds the rows in order, as bias_grad did, so
** the sums do not depend on how the columns are split across threads. */
VEC static void act_bwd_bias_cols(int gelu, float *restrict dy,
                                  const float *restrict act,
                                  const float *restrict dact,
                                  float *restrict db, size_t R, int F, int c0,
                                  int c1) {
  for (size_t r = 0; r < R; r++) {
    float *d = dy + r * F;
    if (gelu) {
      const float *g = dact + r * F;
#pragma omp simd
      for (int j = c0; j < c1; j++) {
        d[j] *= g[j];
        db[j] += d[j];
      }
    } else {
      const float *a = act + r * F;
#pragma omp simd
      for (int j = c0; j < c1; j++) {
        d[j] = a[j] > 0.0f ? d[j] : 0.0f;
        db[j] += d[j];
      }
    }
  }
}

static void activation_bwd(int gelu, float *dy, const float *act,
                           const float *dact, float *db, size_t R, int F) {
  int nt = R * F > 100000 ? omp_get_max_threads() : 1;
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int k = 0; k < nt; k++) {
    /* column ranges on multiples of 16 (whole vectors) */
    int c0 = (int)((long)F * k / nt) / 16 * 16,
        c1 = k == nt - 1 ? F : (int)((long)F * (k + 1) / nt) / 16 * 16;
    if (c1 > c0) act_bwd_bias_cols(gelu, dy, act, dact, db, R, F, c0, c1);
  }
}

static void mlp_fwd(train_net *n, train_layer_acts *a, const lparams *p,
                    const float *h, float *out) {
  const rasp_model_config *c = &n->m->cfg;
  int R = n->b * n->t, D = c->d_model, F = c->d_mlp, gelu = c->gelu;
  mm(R, F, D, h, D, p->win, F, a->act, F, 0);
  activation_fwd(gelu, a->act, a->dact, p->bin, (size_t)R, F);
  mm(R, D, F, a->act, F, p->wout, D, out, D, 0);
  add_bias(out, p->bout, (size_t)R, D, D);
}

static void mlp_bwd(train_net *n, train_layer_acts *a, const lparams *p,
                    lparams *g, const float *h, const float *dout, float *dh) {
  const rasp_model_config *c = &n->m->cfg;
  int R = n->b * n->t, D = c->d_model, F = c->d_mlp, gelu = c->gelu;
  mm_tn(F, D, R, a->act, F, dout, D, g->wout, D);
  bias_grad(g->bout, dout, (size_t)R, D, D);
  mm_nt(R, F, D, dout, D, p->wout, D, n->dfc, F, 0);
  activation_bwd(gelu, n->dfc, a->act, a->dact, g->bin, (size_t)R, F);
  mm_tn(D, F, R, h, D, n->dfc, F, g->win, F);
  mm_nt(R, D, F, n->dfc, F, p->win, F, dh, D, 0);
}

/* ---- whole model -------------------------------------------------------- */

void train_forward(train_net *n, const int *tokens, int b, int t) {
  rasp_model *m = n->m;
  const rasp_model_config *c = &m->cfg;
  int D = c->d_model;
  size_t R = (size_t)b * t, RD = R * D;
  n->b = b;
  n->t = t;
  n->tokens = tokens;
  int drop = n->training && n->dropout > 0;
  embedding_fwd(n->emb, tokens, tensor_in(m, m->params, "tok_emb"),
                tensor_in(m, m->params, "pos_emb"), b, t, D);
  if (drop) dropout_fwd(n, n->emb, n->emb_mask, NULL, RD);
  const float *x = n->emb;
  for (int l = 0; l < c->n_layers; l++) {
    train_layer_acts *a = &n->L[l];
    lparams p = layer_ptrs(m, m->params, l);
    const float *h = x;
    if (c->layer_norm) {
      norm_fwd(n, a->ln1, a->ln1_mean, a->ln1_rstd, x, p.ln1w, p.ln1b, R, D);
      h = a->ln1;
    }
    attention_fwd(n, a, &p, h, a->mid);
    if (drop)
      dropout_fwd(n, a->mid, a->ao_mask, x, RD);
    else
      vec_add(a->mid, x, RD);
    h = a->mid;
    if (c->layer_norm) {
      norm_fwd(n, a->ln2, a->ln2_mean, a->ln2_rstd, a->mid, p.ln2w, p.ln2b, R, D);
      h = a->ln2;
    }
    mlp_fwd(n, a, &p, h, a->out);
    if (drop)
      dropout_fwd(n, a->out, a->mo_mask, a->mid, RD);
    else
      vec_add(a->out, a->mid, RD);
    x = a->out;
  }
  const float *h = x;
  if (c->layer_norm) {
    norm_fwd(n, n->lnf, n->lnf_mean, n->lnf_rstd, x, tensor_in(m, m->params, "ln_f.weight"),
             tensor_in(m, m->params, "ln_f.bias"), R, D);
    h = n->lnf;
  }
  int O = c->n_out;
  mm((int)R, O, D, h, D, tensor_in(m, m->params, "unembed"), O, n->logits, O, 0);
  add_bias(n->logits, tensor_in(m, m->params, "unembed_b"), R, O, O);
}

double train_loss(train_net *n, const int *targets, const float *weight,
                  float scale, int want_grad, int *pred) {
  int O = n->m->cfg.n_out;
  size_t R = (size_t)n->b * n->t;
  double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total) if (R * O > 100000)
  for (size_t r = 0; r < R; r++) {
    const float *lg = n->logits + r * O;
    float *dl = n->dlogits + r * O;
    int am = 0, finite = isfinite(lg[0]);
    float mx = lg[0];
    for (int o = 1; o < O; o++) {
      finite &= isfinite(lg[o]);
      if (lg[o] > mx) {
        mx = lg[o];
        am = o;
      }
    }
    /* a diverged model predicts nothing: NaN compares false, so the argmax
    ** would otherwise be an arbitrary id, sometimes the right one */
    if (pred) pred[r] = finite ? am : -1;
    float w = weight ? weight[r] : 1.0f;
    if (w == 0.0f || targets[r] < 0 || targets[r] >= O) {
      if (want_grad) memset(dl, 0, (size_t)O * sizeof *dl);
      continue;
    }
    double sum = 0;
    for (int o = 0; o < O; o++) sum += exp((double)(lg[o] - mx));
    double lse = mx + log(sum);
    total += w * (lse - lg[targets[r]]);
    if (want_grad) {
      for (int o = 0; o < O; o++)
        dl[o] = (float)(scale * w * exp(lg[o] - lse));
      dl[targets[r]] -= scale * w;
    }
  }
  return total;
}

void train_backward(train_net *n) {
  rasp_model *m = n->m;
  const rasp_model_config *c = &m->cfg;
  int D = c->d_model, O = c->n_out, b = n->b, t = n->t;
  size_t R = (size_t)b * t, RD = R * D;
  float *G = n->grad;
  const float *xL = c->n_layers ? n->L[c->n_layers - 1].out : n->emb;
  const float *hf = c->layer_norm ? n->lnf : xL;
  /* readout */
  mm_tn(D, O, (int)R, hf, D, n->dlogits, O, tensor_in(m, G, "unembed"), O);
  bias_grad(tensor_in(m, G, "unembed_b"), n->dlogits, R, O, O);
  float *dx = n->dx, *dh = n->dh, *dt = n->dt;
  if (c->layer_norm) {
    mm_nt((int)R, D, O, n->dlogits, O, tensor_in(m, m->params, "unembed"), O,
          dh, D, 0);
    memset(dx, 0, RD * sizeof *dx);
    norm_bwd(n, dx, tensor_in(m, G, "ln_f.weight"), tensor_in(m, G, "ln_f.bias"), dh, xL,
             tensor_in(m, m->params, "ln_f.weight"), n->lnf_mean, n->lnf_rstd, R, D);
  } else {
    mm_nt((int)R, D, O, n->dlogits, O, tensor_in(m, m->params, "unembed"), O,
          dx, D, 0);
  }
  for (int l = c->n_layers - 1; l >= 0; l--) {
    train_layer_acts *a = &n->L[l];
    lparams p = layer_ptrs(m, m->params, l), g = layer_ptrs(m, G, l);
    const float *xin = l ? n->L[l - 1].out : n->emb;
    if (n->aux_on && n->aux_out[l]) vec_add(dx, n->aux_out[l], RD);
    /* out = mid + drop(mlp(h2)); dx holds d out */
    const float *dmo = dx;
    if (a->mo_mask && n->training && n->dropout > 0) {
      vec_mul(dt, dx, a->mo_mask, RD);
      dmo = dt;
    }
    const float *h2 = c->layer_norm ? a->ln2 : a->mid;
    mlp_bwd(n, a, &p, &g, h2, dmo, dh);
    if (c->layer_norm)
      norm_bwd(n, dx, g.ln2w, g.ln2b, dh, a->mid, p.ln2w, a->ln2_mean, a->ln2_rstd, R, D);
    else
      vec_add(dx, dh, RD);
    if (n->aux_on && n->aux_mid[l]) vec_add(dx, n->aux_mid[l], RD);
    /* mid = xin + drop(attn(h1)); dx holds d mid */
    const float *dao = dx;
    if (a->ao_mask && n->training && n->dropout > 0) {
      vec_mul(dt, dx, a->ao_mask, RD);
      dao = dt;
    }
    const float *h1 = c->layer_norm ? a->ln1 : xin;
    attention_bwd(n, a, &p, &g, h1, dao, dh);
    if (c->layer_norm)
      norm_bwd(n, dx, g.ln1w, g.ln1b, dh, xin, p.ln1w, a->ln1_mean, a->ln1_rstd, R, D);
    else
      vec_add(dx, dh, RD);
  }
  if (n->emb_mask && n->training && n->dropout > 0)
    for (size_t i = 0; i < RD; i++) dx[i] *= n->emb_mask[i];
  embedding_bwd(dx, n->tokens, tensor_in(m, G, "tok_emb"),
                tensor_in(m, G, "pos_emb"), b, t, D);
}

/* ---- initialisation ----------------------------------------------------- */

double train_normal(rasp_rng *r) {
  /* Box-Muller on 53-bit uniforms; u1 in (0, 1]. */
  double u1 = ((double)(raspT_rng_next(r) >> 11) + 1.0) / 9007199254740992.0;
  double u2 = (double)(raspT_rng_next(r) >> 11) / 9007199254740992.0;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && !strcmp(s + a - b, suf);
}

static void init_tensor(rasp_model *m, rasp_tensor *t, rasp_rng *r) {
  float *p = m->params + t->offset;
  float std = 0.02f;
  if (ends_with(t->name, "w_o") || ends_with(t->name, "w_out"))
    std /= sqrtf(2.0f * (m->cfg.n_layers ? m->cfg.n_layers : 1));
  int is_ln_w = strstr(t->name, "ln") && ends_with(t->name, ".weight");
  int is_bias = ends_with(t->name, ".bias") || ends_with(t->name, "_b") ||
                strstr(t->name, ".b_") != NULL;
  for (size_t i = 0; i < t->size; i++)
    p[i] = is_ln_w ? 1.0f : is_bias ? 0.0f : (float)(std * train_normal(r));
}

void train_init_params(rasp_model *m, uint64_t seed) {
  rasp_rng r;
  raspT_rng_seed(&r, seed, 0x1a17);
  for (int i = 0; i < m->ntensors; i++) init_tensor(m, &m->tensors[i], &r);
}

void train_reinit_layer(rasp_model *m, int layer, uint64_t seed) {
  rasp_rng r;
  raspT_rng_seed(&r, seed, 0x2e1a17 + (uint64_t)layer);
  char pre[32];
  snprintf(pre, sizeof pre, "layers.%d.", layer);
  for (int i = 0; i < m->ntensors; i++)
    if (!strncmp(m->tensors[i].name, pre, strlen(pre)))
      init_tensor(m, &m->tensors[i], &r);
}

/* RMS of the n floats at p, in double. */
static double rms_of(const float *p, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += (double)p[i] * p[i];
  return n ? sqrt(s / (double)n) : 0;
}

void train_add_noise(rasp_model *m, float rel, uint64_t seed) {
  rasp_rng r;
  raspT_rng_seed(&r, seed, 0x9015e);
  for (int k = 0; k < m->ntensors; k++) {
    float *p = m->params + m->tensors[k].offset;
    size_t n = m->tensors[k].size;
    double sigma = rel * rms_of(p, n);
    for (size_t i = 0; i < n; i++) p[i] += (float)(sigma * train_normal(&r));
  }
}

void train_lr_scale_rms(const rasp_model *m, const unsigned char *mask,
                        float *scale) {
  double all = 0;
  size_t nall = 0;
  for (size_t i = 0; i < m->nparams; i++)
    if (!mask || mask[i]) {
      all += (double)m->params[i] * m->params[i];
      nall++;
    }
  double fallback = nall && all > 0 ? sqrt(all / (double)nall) : 1.0;
  for (int k = 0; k < m->ntensors; k++) {
    const rasp_tensor *t = &m->tensors[k];
    const float *p = m->params + t->offset;
    double s = 0;
    size_t n = 0;
    for (size_t i = 0; i < t->size; i++)
      if (!mask || mask[t->offset + i]) {
        s += (double)p[i] * p[i];
        n++;
      }
    float v = (float)(n && s > 0 ? sqrt(s / (double)n) : fallback);
    for (size_t i = 0; i < t->size; i++) scale[t->offset + i] = v;
  }
}

/* ---- AdamW -------------------------------------------------------------- */

void train_adamw_init(train_adamw *o, size_t nparams) {
  o->lr = 5e-4f;
  o->beta1 = 0.9f;
  o->beta2 = 0.999f;
  o->eps = 1e-8f;
  o->wd = 0.01f;
  o->step = 0;
  o->sgd = 0;
  o->momentum = 0;
  o->scale = NULL;
  o->m = fbuf(nparams);
  o->v = fbuf(nparams);
}

void train_adamw_free(train_adamw *o) {
  raspM_free(o->m);
  raspM_free(o->v);
  raspM_free(o->scale);
  o->m = o->v = o->scale = NULL;
}

void train_adamw_step(train_adamw *o, float *params, const float *grad,
                      size_t n) {
  o->step++;
  float b1c = 1.0f - powf(o->beta1, (float)o->step);
  float b2c = 1.0f - powf(o->beta2, (float)o->step);
  float lr = o->lr, b1 = o->beta1, b2 = o->beta2, eps = o->eps, wd = o->wd,
        mu = o->momentum;
  float *M = o->m, *V = o->v;
  const float *S = o->scale;
  if (o->sgd) {
#pragma omp parallel for schedule(static) if (n > 100000)
    for (size_t i = 0; i < n; i++) {
      float li = S ? lr * S[i] : lr;
      if (li == 0.0f) continue; /* frozen: not even the momentum moves */
      M[i] = mu * M[i] + grad[i];
      params[i] -= li * (M[i] + wd * params[i]);
    }
    return;
  }
#pragma omp parallel for schedule(static) if (n > 100000)
  for (size_t i = 0; i < n; i++) {
    float li = S ? lr * S[i] : lr;
    if (li == 0.0f) continue;
    float g = grad[i];
    M[i] = b1 * M[i] + (1 - b1) * g;
    V[i] = b2 * V[i] + (1 - b2) * g * g;
    float mh = M[i] / b1c, vh = V[i] / b2c;
    /* decoupled weight decay (Loshchilov & Hutter) */
    params[i] -= li * (mh / (sqrtf(vh) + eps) + wd * params[i]);
  }
}

/* ---- schedule and clipping ---------------------------------------------- */

double train_lr_factor(const train_sched *s, long step) {
  if (s->warmup > 0 && step < s->warmup) return (double)step / (double)s->warmup;
  if (s->decay == TRAIN_DECAY_NONE) return 1.0;
  long span = s->total - s->warmup;
  double p = span > 0 ? (double)(step - s->warmup) / (double)span : 1.0;
  if (p < 0) p = 0;
  if (p > 1) p = 1;
  double fl = s->floor, left = s->decay == TRAIN_DECAY_COSINE ? 0.5 * (1 + cos(3.14159265358979323846 * p)) : 1 - p;
  return fl + (1 - fl) * left;
}

double train_clip_grad(float *g, size_t n, const float *scale, double max_norm) {
  double ss = 0;
  for (size_t i = 0; i < n; i++)
    if (!scale || scale[i] != 0.0f) ss += (double)g[i] * g[i];
  double norm = sqrt(ss);
  if (max_norm > 0 && norm > max_norm) {
    float f = (float)(max_norm / norm);
    for (size_t i = 0; i < n; i++) g[i] *= f;
  }
  return norm;
}
