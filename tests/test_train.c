/*
** test_train.c -- the trainer's network (trainer/tnet.c): gradients against
** double-precision central differences for every layer type, forward
** against the reference raspN_forward, a tiny overfit run, and the
** checkpoint round trip; a compiled model adapted as initialisation
** (train_adapt_compiled) against the compiled model's own decisions; an
** encoder readout (programs/encoder2_backward_targets.rasp) compiled for
** the encoder, adapted, and its leading-node accuracy on masked samples,
** in process and through the real binaries (rasp compile --encoder,
** rasp-train --model encoder and compare), with mismatched and corrupted
** models refused.
*/
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rasp.h"
#include "rcompile.h"
#include "rmem.h"
#include "rmodel.h"
#include "rmodel_task.h"
#include "rverify.h"
#include "tkern.h"
#include "tnet.h"
#include "tckpt.h"
#include "tinit.h"

#include "check_main.h"

/* ---- a double-precision reference of the whole model and its loss ------- */

/* Layer norm of one position, in double, as the reference computes it. */
static void ref_layer_norm(const double *x, int D, const double *w, const double *b,
                           double *out) {
  double mu = 0, var = 0;
  for (int d = 0; d < D; d++) mu += x[d];
  mu /= D;
  for (int d = 0; d < D; d++) var += (x[d] - mu) * (x[d] - mu);
  var /= D;
  for (int d = 0; d < D; d++) out[d] = (x[d] - mu) / sqrt(var + 1e-5) * w[d] + b[d];
}

/* The model's norm of one position: layer norm (layer_norm 1) or RMS norm
** (2: x / sqrt(mean(x^2) + eps) w, no bias: b unused). */
static void ref_norm(int kind, const double *x, int D, const double *w, const double *b,
                     double *out) {
  if (kind != 2) {
    ref_layer_norm(x, D, w, b, out);
    return;
  }
  double ss = 0;
  for (int d = 0; d < D; d++) ss += x[d] * x[d];
  for (int d = 0; d < D; d++) out[d] = x[d] / sqrt(ss / D + 1e-5) * w[d];
}

/* Everything as in rmodel.h, in double, over one sequence; returns the sum
** over positions of weight * cross entropy. */
static double ref_loss(const rasp_model *m, const double *P, const int *tok,
                       int t, const int *tgt, const float *w) {
  const rasp_model_config *c = &m->cfg;
  int D = c->d_model, H = c->n_heads, Dh = c->d_head, F = c->d_mlp,
      O = c->n_out;
  rasp_model *mm = (rasp_model *)m;
#define T_(name) (P + raspN_tensor(mm, name)->offset)
  char nm[64];
#define LT(s) (snprintf(nm, sizeof nm, "layers.%d.%s", l, s), T_(nm))
  double x[16][16], h[16][16], q[16][16], k[16][16], v[16][16], o[16][16];
  ck_assert(t <= 16 && D <= 16 && H * Dh <= 16 && F <= 16);
  for (int i = 0; i < t; i++)
    for (int d = 0; d < D; d++)
      x[i][d] = T_("tok_emb")[tok[i] * D + d] +
                (c->pos_embedding ? T_("pos_emb")[i * D + d] : 0);
  for (int l = 0; l < c->n_layers; l++) {
    for (int sub = 0; sub < 2; sub++) {
      for (int i = 0; i < t; i++) {
        if (c->layer_norm) {
          const double *lw = LT(sub ? "ln2.weight" : "ln1.weight"); /* one nm at a time */
          const double *lb = c->layer_norm == 1 ? LT(sub ? "ln2.bias" : "ln1.bias") : NULL;
          ref_norm(c->layer_norm, x[i], D, lw, lb, h[i]);
        } else
          for (int d = 0; d < D; d++) h[i][d] = x[i][d];
      }
      if (sub == 0) {
        const double *wq = LT("attn.w_q"), *wk = LT("attn.w_k"),
                     *wv = LT("attn.w_v"), *bq = LT("attn.b_q"),
                     *bk = LT("attn.b_k"), *bv = LT("attn.b_v"),
                     *wo = LT("attn.w_o"), *bo = LT("attn.b_o");
        for (int i = 0; i < t; i++)
          for (int hh = 0; hh < H; hh++)
            for (int e = 0; e < Dh; e++) {
              double sq = bq[hh * Dh + e], sk = bk[hh * Dh + e],
                     sv = bv[hh * Dh + e];
              for (int d = 0; d < D; d++) {
                size_t wi = ((size_t)hh * D + d) * Dh + e;
                sq += h[i][d] * wq[wi];
                sk += h[i][d] * wk[wi];
                sv += h[i][d] * wv[wi];
              }
              q[i][hh * Dh + e] = sq;
              k[i][hh * Dh + e] = sk;
              v[i][hh * Dh + e] = sv;
            }
        for (int i = 0; i < t; i++) {
          for (int d = 0; d < D; d++) o[i][d] = bo[d];
          for (int hh = 0; hh < H; hh++) {
            int nk = c->causal ? i + 1 : t;
            double s[16], mx = -1e300, sum = 0;
            for (int j = 0; j < nk; j++) {
              s[j] = 0;
              for (int e = 0; e < Dh; e++) s[j] += q[i][hh * Dh + e] * k[j][hh * Dh + e];
              s[j] /= sqrt((double)Dh);
              if (s[j] > mx) mx = s[j];
            }
            for (int j = 0; j < nk; j++) sum += exp(s[j] - mx);
            for (int e = 0; e < Dh; e++) {
              double y = 0;
              for (int j = 0; j < nk; j++) y += exp(s[j] - mx) / sum * v[j][hh * Dh + e];
              for (int d = 0; d < D; d++) o[i][d] += y * wo[((size_t)hh * Dh + e) * D + d];
            }
          }
        }
      } else {
        const double *wi = LT("mlp.w_in"), *bi = LT("mlp.b_in"),
                     *wt = LT("mlp.w_out"), *bt = LT("mlp.b_out");
        for (int i = 0; i < t; i++) {
          double z[16];
          for (int f = 0; f < F; f++) {
            z[f] = bi[f];
            for (int d = 0; d < D; d++) z[f] += h[i][d] * wi[d * F + f];
            double xx = z[f];
            z[f] = c->gelu ? 0.5 * xx * (1 + tanh(sqrt(2 / M_PI) * (xx + 0.044715 * xx * xx * xx)))
                           : (xx > 0 ? xx : 0);
          }
          for (int d = 0; d < D; d++) {
            o[i][d] = bt[d];
            for (int f = 0; f < F; f++) o[i][d] += z[f] * wt[f * D + d];
          }
        }
      }
      for (int i = 0; i < t; i++)
        for (int d = 0; d < D; d++) x[i][d] += o[i][d];
    }
  }
  double loss = 0;
  for (int i = 0; i < t; i++) {
    double hf[16];
    if (c->layer_norm)
      ref_norm(c->layer_norm, x[i], D, T_("ln_f.weight"),
               c->layer_norm == 1 ? T_("ln_f.bias") : NULL, hf);
    else
      for (int d = 0; d < D; d++) hf[d] = x[i][d];
    if (w[i] == 0) continue;
    double lg[32], mx = -1e300, sum = 0;
    ck_assert(O <= 32);
    for (int r = 0; r < O; r++) {
      lg[r] = T_("unembed_b")[r];
      for (int d = 0; d < D; d++) lg[r] += hf[d] * T_("unembed")[d * O + r];
      if (lg[r] > mx) mx = lg[r];
    }
    for (int r = 0; r < O; r++) sum += exp(lg[r] - mx);
    loss += w[i] * (mx + log(sum) - lg[tgt[i]]);
  }
#undef LT
#undef T_
  return loss;
}

static void random_params(rasp_model *m, unsigned seed) {
  srand(seed);
  for (int i = 0; i < m->ntensors; i++) {
    rasp_tensor *t = &m->tensors[i];
    int lnw = strstr(t->name, "ln") && strstr(t->name, ".weight");
    for (size_t j = 0; j < t->size; j++) {
      float u = (float)rand() / RAND_MAX - 0.5f;
      m->params[t->offset + j] = lnw ? 1.0f + 0.5f * u : u;
    }
  }
}

static rasp_model_config tiny(int causal, int ln, int pos, int gelu) {
  rasp_model_config c = {.vocab_size = 6, .max_len = 5, .d_model = 4,
                         .n_layers = 2, .n_heads = 2, .d_head = 3, .d_mlp = 5,
                         .n_out = 7, .causal = causal, .layer_norm = ln,
                         .pos_embedding = pos, .gelu = gelu, .bos_token = -1};
  return c;
}

/* Checks every parameter's gradient (so every layer type: embeddings,
** layer norms, attention, MLP, readout) against central differences of
** the double reference. */
static void gradcheck(rasp_model_config c) {
  rasp_model m;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  random_params(&m, 7 + (unsigned)c.causal * 2 + (unsigned)c.layer_norm);
  enum { B = 2, T = 5 };
  int tok[B * T] = {0, 3, 1, 5, 2, 4, 4, 1, 0, 3};
  int tgt[B * T] = {1, 2, 6, 0, 3, 5, 0, 2, 2, 4};
  float w[B * T] = {1, 0, 1, 0.5f, 1, 0, 1, 1, 2, 1};
  train_net n;
  ck_assert_int_eq(train_net_init(&n, &m, B, T, 0.0f, &err), 1);
  train_zero_grad(&n);
  train_forward(&n, tok, B, T);
  double lf = train_loss(&n, tgt, w, 1.0f, 1, NULL);
  train_backward(&n);
  double *P = raspM_alloc(m.nparams * sizeof *P);
  for (size_t i = 0; i < m.nparams; i++) P[i] = m.params[i];
  double l0 = 0;
  for (int s = 0; s < B; s++) l0 += ref_loss(&m, P, tok + s * T, T, tgt + s * T, w + s * T);
  ck_assert_double_eq_tol(lf, l0, 1e-4 * fabs(l0) + 1e-5);
  double worst = 0;
  const char *worst_name = "";
  for (int ti = 0; ti < m.ntensors; ti++) {
    rasp_tensor *t = &m.tensors[ti];
    for (size_t j = 0; j < t->size; j++) {
      size_t i = t->offset + j;
      double h = 1e-5, save = P[i], lp = 0, lm = 0;
      P[i] = save + h;
      for (int s = 0; s < B; s++) lp += ref_loss(&m, P, tok + s * T, T, tgt + s * T, w + s * T);
      P[i] = save - h;
      for (int s = 0; s < B; s++) lm += ref_loss(&m, P, tok + s * T, T, tgt + s * T, w + s * T);
      P[i] = save;
      double num = (lp - lm) / (2 * h), an = n.grad[i];
      double rel = fabs(num - an) / fmax(fabs(num) + fabs(an), 1e-2);
      if (rel > worst) {
        worst = rel;
        worst_name = t->name;
      }
      ck_assert_msg(rel < 1e-3, "%s[%zu]: analytic %g, numeric %g (rel %g)",
                    t->name, j, an, num, rel);
    }
  }
  (void)worst_name;
  raspM_free(P);
  train_net_free(&n);
  raspN_free(&m);
}

/* A diverged model predicts nothing: logits with a NaN or an inf give
** prediction -1 (never a target), where the bare argmax would give an
** arbitrary id, sometimes the right one, and accuracies of a NaN model that
** look alive. */
START_TEST(test_pred_nonfinite) {
  rasp_model_config c = tiny(1, 1, 1, 0);
  rasp_model m;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  random_params(&m, 3);
  enum { B = 1, T = 5 };
  int tok[B * T] = {0, 3, 1, 5, 2}, tgt[B * T] = {0, 2, 6, 0, 3}, pred[B * T];
  train_net n;
  ck_assert_int_eq(train_net_init(&n, &m, B, T, 0.0f, &err), 1);
  train_forward(&n, tok, B, T);
  int O = c.n_out;
  for (int o = 0; o < O; o++) n.logits[o] = o == 0 ? 5.0f : 0.0f; /* row 0: id 0, right */
  n.logits[(size_t)1 * O + 3] = NAN;
  n.logits[(size_t)2 * O + 0] = INFINITY;
  train_loss(&n, tgt, NULL, 1.0f, 0, pred);
  ck_assert_int_eq(pred[0], 0);
  ck_assert_int_eq(pred[1], -1);
  ck_assert_int_eq(pred[2], -1);
  ck_assert_int_ge(pred[3], 0);
  train_net_free(&n);
  raspN_free(&m);
}
END_TEST

START_TEST(test_grad_causal_ln_gelu) { gradcheck(tiny(1, 1, 1, 1)); }
END_TEST

/* RMS norms (layer_norm 2): rmsnorm_fwd and rmsnorm_bwd against central
** differences of the double reference */
START_TEST(test_grad_causal_rms_gelu) { gradcheck(tiny(1, 2, 1, 1)); }
END_TEST

START_TEST(test_grad_bidir_rms_relu) { gradcheck(tiny(0, 2, 0, 0)); }
END_TEST
/* GELU's vectorised tanh (tnet.c) against libm's double tanh: within
** 3e-7 everywhere (libm's tanhf: 1e-7), exact 0 at 0, saturated and odd. */
START_TEST(test_tanh_accuracy) {
  double worst = 0;
  float at = 0;
  for (int i = -400000; i <= 400000; i++) {
    float u = (float)i * 5e-5f;
    double e = fabs((double)train_tanh(u) - tanh((double)u));
    if (e > worst) worst = e, at = u;
  }
  ck_assert_msg(worst < 3e-7, "tanh error %g at %g", worst, (double)at);
  ck_assert(train_tanh(0.0f) == 0.0f);
  ck_assert(train_tanh(50.0f) == 1.0f && train_tanh(-50.0f) == -1.0f);
  ck_assert(train_tanh(0.3f) == -train_tanh(-0.3f));
}
END_TEST
/* One case of the matrix-product tests: op(A) M x K, op(B) K x N, C M x N;
** mode bit 0 transposes A, bit 1 B, bit 2 makes beta 1 (else C is NaN, to
** be overwritten); leading dimensions wider than the matrices (C's padding
** columns must stay as they are: C0 keeps C's first contents).  A, B, then
** C filled from the seed. */
typedef struct gemm_case {
  int M, N, K, ta, tb, acc, lda, ldb, ldc;
  float *A, *B, *C, *C0;
} gemm_case;

static void gemm_case_new(gemm_case *g, const int shape[3], int mode, uint64_t seed,
                          uint64_t stream) {
  g->M = shape[0], g->N = shape[1], g->K = shape[2];
  g->ta = mode & 1, g->tb = (mode >> 1) & 1, g->acc = mode >> 2;
  g->lda = (g->ta ? g->M : g->K) + 3, g->ldb = (g->tb ? g->K : g->N) + 2, g->ldc = g->N + 5;
  size_t na = (size_t)(g->ta ? g->K : g->M) * g->lda + 1,
         nb = (size_t)(g->tb ? g->N : g->K) * g->ldb + 1, nc = (size_t)g->M * g->ldc;
  g->A = raspM_alloc(na * sizeof *g->A);
  g->B = raspM_alloc(nb * sizeof *g->B);
  g->C = raspM_alloc(nc * sizeof *g->C);
  g->C0 = raspM_alloc(nc * sizeof *g->C0);
  rasp_rng r;
  raspT_rng_seed(&r, seed, stream);
  for (size_t i = 0; i < na; i++) g->A[i] = (float)train_normal(&r);
  for (size_t i = 0; i < nb; i++) g->B[i] = (float)train_normal(&r);
  for (size_t i = 0; i < nc; i++) g->C0[i] = g->C[i] = g->acc ? (float)train_normal(&r) : NAN;
}

/* C[i][j] in double precision from A, B and C0; *mag the sum of the terms'
** magnitudes (the tolerance's scale). */
static double gemm_want(const gemm_case *g, int i, int j, double *mag) {
  double want = g->acc ? g->C0[(size_t)i * g->ldc + j] : 0;
  *mag = fabs(want);
  for (int k = 0; k < g->K; k++) {
    double a = g->ta ? g->A[(size_t)k * g->lda + i] : g->A[(size_t)i * g->lda + k];
    double b = g->tb ? g->B[(size_t)j * g->ldb + k] : g->B[(size_t)k * g->ldb + j];
    want += a * b;
    *mag += fabs(a * b);
  }
  return want;
}

static void gemm_case_free(gemm_case *g) {
  raspM_free(g->A);
  raspM_free(g->B);
  raspM_free(g->C);
  raspM_free(g->C0);
}

/* The trainer's matrix product (tkern.c), every kernel this CPU runs,
** against a double-precision reference: shapes across the micro-tile (12 x
** 32, 6 x 16) and block (192 rows, 256 deep, 1024 columns) edges, all four
** transpose cases, beta 0 (C's NaNs overwritten) and 1, leading dimensions
** wider than the matrices (the padding left alone), and K = 0. */
START_TEST(test_sgemm_kernels) {
  static const int shapes[][3] = {{1, 1, 1},   {13, 33, 7},  {70, 70, 25},
                                  {70, 25, 70}, {250, 40, 300}, {20, 1030, 9},
                                  {12, 32, 256}, {5, 3, 0}};
  static const char *kinds[] = {"avx512", "avx2", "cblas"};
  int tried = 0;
  for (int kk = 0; kk < 3; kk++) {
    if (tkern_select(kinds[kk])) continue;
    ck_assert_str_eq(tkern_name(), kinds[kk]);
    tried++;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int mode = 0; mode < 8; mode++) {
        gemm_case g;
        gemm_case_new(&g, shapes[s], mode, 17 + s, (uint64_t)mode);
        tkern_sgemm(g.ta, g.tb, g.M, g.N, g.K, g.A, g.lda, g.B, g.ldb, g.acc ? 1.0f : 0.0f, g.C,
                    g.ldc);
        for (int i = 0; i < g.M; i++)
          for (int j = 0; j < g.ldc; j++) {
            float got = g.C[(size_t)i * g.ldc + j];
            if (j >= g.N) { /* padding: untouched (NaN == NaN bitwise) */
              ck_assert(memcmp(&got, &g.C0[(size_t)i * g.ldc + j], sizeof got) == 0);
              continue;
            }
            double mag, want = gemm_want(&g, i, j, &mag);
            ck_assert_msg(fabs(got - want) <= 1e-6 * mag + 1e-30,
                          "%s %dx%dx%d ta %d tb %d beta %d: C[%d][%d] = %.9g, want %.9g",
                          kinds[kk], g.M, g.N, g.K, g.ta, g.tb, g.acc, i, j, (double)got, want);
          }
        gemm_case_free(&g);
      }
  }
  ck_assert_int_ge(tried, 1);
  ck_assert_int_eq(tkern_select("no such kernel"), -1);
  ck_assert_int_eq(tkern_select(NULL), 0);
}
END_TEST
/* tkern_sgemm_tri (causal attention's products): each structure, every
** kernel this CPU runs, all transposes, beta 0 and 1, against the double
** reference; A's promised zeros are real zeros, and with TKERN_C_LOWER the
** entries above C's diagonal are either untouched or right.  Shapes cross
** the micro-tile, the 192-row and the 256-deep blocks (K = 300: two depth
** blocks, so a tile's depth range can start or end in either). */
START_TEST(test_sgemm_tri) {
  static const int shapes[][3] = {{70, 70, 25}, {70, 25, 70}, {13, 33, 7},
                                  {300, 40, 300}, {25, 70, 70}};
  static const char *kinds[] = {"avx512", "avx2", "cblas"};
  for (int kk = 0; kk < 3; kk++) {
    if (tkern_select(kinds[kk])) continue;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int tri = TKERN_C_LOWER; tri <= TKERN_A_UPPER; tri++)
        for (int mode = 0; mode < 8; mode++) {
          gemm_case g;
          gemm_case_new(&g, shapes[s], mode, 101 + s, (uint64_t)(mode + 8 * tri));
          for (int i = 0; i < g.M; i++) /* op(A)'s promised zeros */
            for (int k = 0; k < g.K; k++)
              if ((tri == TKERN_A_LOWER && k > i) || (tri == TKERN_A_UPPER && k < i))
                g.A[g.ta ? (size_t)k * g.lda + i : (size_t)i * g.lda + k] = 0.0f;
          tkern_sgemm_tri(tri, g.ta, g.tb, g.M, g.N, g.K, g.A, g.lda, g.B, g.ldb,
                          g.acc ? 1.0f : 0.0f, g.C, g.ldc);
          for (int i = 0; i < g.M; i++)
            for (int j = 0; j < g.ldc; j++) {
              float got = g.C[(size_t)i * g.ldc + j];
              int same = memcmp(&got, &g.C0[(size_t)i * g.ldc + j], sizeof got) == 0;
              if (j >= g.N) {
                ck_assert(same);
                continue;
              }
              double mag, want = gemm_want(&g, i, j, &mag);
              int ok = fabs(got - want) <= 1e-6 * mag + 1e-30;
              if (tri == TKERN_C_LOWER && j > i) ok |= same;
              ck_assert_msg(ok, "%s tri %d %dx%dx%d ta %d tb %d beta %d: C[%d][%d] = %.9g, want %.9g",
                            kinds[kk], tri, g.M, g.N, g.K, g.ta, g.tb, g.acc, i, j, (double)got,
                            want);
            }
          gemm_case_free(&g);
        }
  }
  ck_assert_int_eq(tkern_select(NULL), 0);
}
END_TEST
START_TEST(test_grad_bidir_noln_relu) { gradcheck(tiny(0, 0, 0, 0)); }
END_TEST
START_TEST(test_grad_causal_noln_pos) { gradcheck(tiny(1, 0, 1, 0)); }
END_TEST
START_TEST(test_grad_bidir_ln) { gradcheck(tiny(0, 1, 1, 1)); }
END_TEST
/* one head: the projections skip the head packing (tnet.c) */
START_TEST(test_grad_one_head) {
  rasp_model_config c = tiny(1, 0, 1, 0);
  c.n_heads = 1;
  c.d_head = 5;
  gradcheck(c);
}
END_TEST

/* The whole net's forward and backward at a length the tiny gradient
** checks do not reach (T = 37: rows of attention scores longer than two
** vectors, several 12-row tiles, the causal triangle crossing them), with
** each fast kernel (AVX-512: masked edges, triangular products, the
** intrinsic softmax; AVX2: the generic loops) against cblas (whole
** products, no triangle skipped): logits and every gradient agree to
** float rounding, causal and not, GELU and ReLU. */
START_TEST(test_net_kernels_agree) {
  static const char *kinds[] = {"avx512", "avx2"};
  enum { B = 3, T = 37 };
  int tried = 0;
  for (int variant = 0; variant < 4; variant++) {
    rasp_model_config c = {.vocab_size = 11, .max_len = T, .d_model = 24,
                           .n_layers = 2, .n_heads = 2, .d_head = 12, .d_mlp = 40,
                           .n_out = 7, .causal = variant & 1, .layer_norm = 1,
                           .pos_embedding = 1, .gelu = variant >> 1, .bos_token = -1};
    rasp_model m;
    rasp_error err = {0};
    ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
    random_params(&m, 300 + (unsigned)variant);
    int tok[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) {
      tok[i] = (i * 7 + variant) % c.vocab_size;
      tgt[i] = (i * 5 + 1) % c.n_out;
    }
    size_t nl = (size_t)B * T * c.n_out;
    float *lg0 = raspM_alloc(nl * sizeof *lg0), *g0 = raspM_alloc(m.nparams * sizeof *g0);
    for (int kk = -1; kk < 2; kk++) {
      if (tkern_select(kk < 0 ? "cblas" : kinds[kk])) continue;
      train_net n;
      ck_assert_int_eq(train_net_init(&n, &m, B, T, 0.0f, &err), 1);
      train_zero_grad(&n);
      train_forward(&n, tok, B, T);
      train_loss(&n, tgt, NULL, 1.0f, 1, NULL);
      train_backward(&n);
      if (kk < 0) {
        memcpy(lg0, n.logits, nl * sizeof *lg0);
        memcpy(g0, n.grad, m.nparams * sizeof *g0);
      } else {
        tried++;
        double gmax = 0;
        for (size_t i = 0; i < m.nparams; i++) gmax = fmax(gmax, fabs(g0[i]));
        for (size_t i = 0; i < nl; i++)
          ck_assert_msg(fabs(n.logits[i] - lg0[i]) <= 1e-5 * (1 + fabs(lg0[i])),
                        "%s variant %d: logit %zu = %g, cblas %g", kinds[kk], variant, i,
                        (double)n.logits[i], (double)lg0[i]);
        for (size_t i = 0; i < m.nparams; i++)
          ck_assert_msg(fabs(n.grad[i] - g0[i]) <= 1e-4 * gmax,
                        "%s variant %d: grad %zu = %g, cblas %g", kinds[kk], variant, i,
                        (double)n.grad[i], (double)g0[i]);
      }
      train_net_free(&n);
    }
    raspM_free(lg0);
    raspM_free(g0);
    raspN_free(&m);
  }
  /* a CPU with AVX2 compared at least that kernel in every variant */
  int fast = tkern_select("avx2") == 0;
  ck_assert_int_eq(tkern_select(NULL), 0);
  ck_assert_int_ge(tried, fast ? 4 : 0);
}
END_TEST

/* The trainer's batched forward equals the reference forward. */
START_TEST(test_forward_matches_reference) {
  for (int variant = 0; variant < 4; variant++) {
    rasp_model_config c = tiny(variant & 1, (variant >> 1) & 1, 1, variant == 3);
    rasp_model m;
    rasp_error err = {0};
    ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
    random_params(&m, 100 + (unsigned)variant);
    enum { B = 3, T = 5 };
    int tok[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (i * 7 + variant) % c.vocab_size;
    train_net n;
    ck_assert_int_eq(train_net_init(&n, &m, B, T, 0.0f, &err), 1);
    train_forward(&n, tok, B, T);
    for (int s = 0; s < B; s++) {
      float lg[T * 7];
      ck_assert_int_eq(raspN_forward(&m, tok + s * T, T, lg, NULL, &err), 1);
      for (int i = 0; i < T * c.n_out; i++)
        ck_assert_float_eq_tol(n.logits[s * T * c.n_out + i], lg[i], 1e-4f);
    }
    train_net_free(&n);
    raspN_free(&m);
  }
}
END_TEST

/* A tiny model memorises four sequences. */
START_TEST(test_overfit) {
  rasp_model_config c = tiny(1, 1, 1, 0);
  c.d_model = 16;
  c.d_mlp = 32;
  c.n_out = 6;
  rasp_model m;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  train_init_params(&m, 3);
  enum { B = 4, T = 5 };
  int tok[B * T] = {0, 1, 2, 3, 4, 0, 2, 1, 4, 3, 0, 3, 3, 1, 2, 0, 4, 2, 2, 1};
  int tgt[B * T];
  float w[B * T];
  for (int i = 0; i < B * T; i++) {
    tgt[i] = (i % T < T - 1) ? tok[i + 1] : 0;
    w[i] = (i % T < T - 1 && i % T >= 0) ? 1.0f : 0.0f;
  }
  train_net n;
  ck_assert_int_eq(train_net_init(&n, &m, B, T, 0.1f, &err), 1);
  train_adamw opt;
  train_adamw_init(&opt, m.nparams);
  opt.lr = 1e-2f;
  double first = 0, last = 0;
  for (int step = 0; step < 150; step++) {
    n.training = 1;
    train_zero_grad(&n);
    train_forward(&n, tok, B, T);
    double l = train_loss(&n, tgt, w, 1.0f / 16, 1, NULL) / 16;
    train_backward(&n);
    train_adamw_step(&opt, m.params, n.grad, m.nparams);
    if (step == 0) first = l;
    last = l;
  }
  n.training = 0;
  train_forward(&n, tok, B, T);
  double eval = train_loss(&n, tgt, w, 1.0f, 0, NULL) / 16;
  ck_assert_msg(first > 1.0 && eval < 0.6 && last < first / 2,
                "loss %g -> %g (eval %g)", first, last, eval);
  train_adamw_free(&opt);
  train_net_free(&n);
  raspN_free(&m);
}
END_TEST

static int exists(const char *dir, const char *name) {
  char p[600];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, F_OK) == 0;
}

static void touch(const char *dir, const char *name) {
  char p[600];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs("partial", f);
  fclose(f);
}

/* dir/name with text in it */
static void write_text(const char *dir, const char *name, const char *text) {
  char p[600];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  ck_assert(f != NULL);
  fputs(text, f);
  fclose(f);
}

/* Checkpoints (tckpt.h): a generation's files committed by the manifest.
** Round trip with the configuration; the previous generation removed only
** after the next commits; a generation written but not committed (a kill
** before the manifest's rename) ignored by load and removed by clean, as
** are temporaries; damaged files refused with the file named. */
START_TEST(test_checkpoint_round_trip) {
  char dir[] = "/tmp/test_train.XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  rasp_model_config c = tiny(1, 1, 1, 0);
  rasp_model m, r;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  train_init_params(&m, 1);
  train_adamw opt, o2;
  train_adamw_init(&opt, m.nparams);
  for (size_t i = 0; i < m.nparams; i++) {
    opt.m[i] = (float)i;
    opt.v[i] = (float)(2 * i);
  }
  opt.step = 77;
  train_ckpt_state st = {.epoch = 3, .step = 77, .best_val = 0.1, .generation = 0};
  char stem[300];
  snprintf(stem, sizeof stem, "%s/ck", dir);
  const char *cfg = "--lr 0.0005\n--seed 1\n";
  ck_assert_int_eq(train_ckpt_generation(stem, &err), 0);
  ck_assert_msg(train_ckpt_save(stem, &m, &opt, &st, cfg, &err) == 1, "%s", err.msg);
  ck_assert_int_eq(st.generation, 1);
  ck_assert_int_eq(train_ckpt_generation(stem, &err), 1);
  train_ckpt_state st2;
  char *saved = NULL;
  ck_assert_msg(train_ckpt_load(stem, &r, &o2, &st2, &saved, &err) == 1, "%s", err.msg);
  ck_assert_mem_eq(r.params, m.params, m.nparams * sizeof(float));
  ck_assert_mem_eq(o2.m, opt.m, m.nparams * sizeof(float));
  ck_assert_mem_eq(o2.v, opt.v, m.nparams * sizeof(float));
  ck_assert_int_eq(o2.step, 77);
  ck_assert_int_eq(st2.epoch, 3);
  ck_assert_int_eq(st2.step, 77);
  ck_assert(st2.best_val == 0.1); /* exactly: stored in hex */
  ck_assert_int_eq(st2.generation, 1);
  ck_assert_str_eq(saved, cfg);
  raspM_free(saved);
  raspN_free(&r);
  train_adamw_free(&o2);

  /* the next generation replaces the previous one only once committed */
  m.params[0] += 1.0f;
  st.epoch = 4;
  ck_assert_int_eq(train_ckpt_save(stem, &m, &opt, &st, cfg, &err), 1);
  ck_assert_int_eq(st.generation, 2);
  ck_assert(!exists(dir, "ck.g000001.safetensors") && !exists(dir, "ck.g000001.opt") &&
            !exists(dir, "ck.g000001.json"));
  ck_assert(exists(dir, "ck.g000002.safetensors") && exists(dir, "ck.g000002.opt"));

  /* killed after writing generation 3, before its manifest: load reads 2 */
  char g3[320];
  snprintf(g3, sizeof g3, "%s.g000003", stem);
  float p2 = m.params[0];
  m.params[0] += 1.0f;
  write_text(dir, "ck.pending", "rasp-train pending generation 3 after 2\n");
  ck_assert_int_eq(raspN_save(&m, g3, &err), 1);
  touch(dir, "ck.g000007.json"); /* looks like a generation, was never pending: kept */
  touch(dir, "ck.g000003.opt.tmp.Ab12Cd");
  touch(dir, "ck.ckpt.tmp.x9Y8z7");
  touch(dir, "notes.tmp.txt");  /* not ours: kept */
  touch(dir, "ck.csv.tmp.abc"); /* not mkstemp's six characters: kept */
  ck_assert_int_eq(train_ckpt_load(stem, &r, &o2, &st2, NULL, &err), 1);
  ck_assert_int_eq(st2.generation, 2);
  ck_assert_int_eq(st2.epoch, 4);
  ck_assert(r.params[0] == p2);
  raspN_free(&r);
  train_adamw_free(&o2);
  ck_assert_int_eq(train_ckpt_clean(stem), 2); /* g3's .json, .safetensors */
  ck_assert_int_eq(train_clean_tmp(dir), 2);
  ck_assert(!exists(dir, "ck.g000003.json") && !exists(dir, "ck.ckpt.tmp.x9Y8z7"));
  ck_assert(exists(dir, "notes.tmp.txt") && exists(dir, "ck.csv.tmp.abc"));
  ck_assert(exists(dir, "ck.g000002.json") && exists(dir, "ck.ckpt"));
  ck_assert(exists(dir, "ck.g000007.json") && !exists(dir, "ck.pending"));
  ck_assert_int_eq(train_ckpt_clean(stem), 0); /* nothing pending: nothing removed */

  /* damaged files: named in the error, nothing half-loaded */
  char p[320], cmd[1500];
  snprintf(p, sizeof p, "%s.g000002.opt", stem);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s.bak' && truncate -s 100 '%s'", p, p, p);
  ck_assert_int_eq(system(cmd), 0);
  ck_assert_int_eq(train_ckpt_load(stem, &r, &o2, &st2, NULL, &err), 0);
  ck_assert_msg(strstr(err.msg, "ck.g000002.opt") && strstr(err.msg, "100 bytes"), "%s", err.msg);
  snprintf(cmd, sizeof cmd, "mv '%s.bak' '%s'", p, p);
  ck_assert_int_eq(system(cmd), 0);
  /* a changed moment: the optimiser state is not the committed one */
  snprintf(cmd, sizeof cmd, "printf 'XXXX' | dd of='%s' bs=1 seek=40 conv=notrunc 2>/dev/null", p);
  ck_assert_int_eq(system(cmd), 0);
  ck_assert_int_eq(train_ckpt_load(stem, &r, &o2, &st2, NULL, &err), 0);
  ck_assert_msg(strstr(err.msg, "optimiser state in") && strstr(err.msg, "ck.g000002.opt"), "%s", err.msg);
  /* a damaged manifest */
  snprintf(p, sizeof p, "%s.ckpt", stem);
  snprintf(cmd, sizeof cmd, "sed -i 's/^end$/en/' '%s'", p);
  ck_assert_int_eq(system(cmd), 0);
  ck_assert_int_eq(train_ckpt_load(stem, &r, &o2, &st2, NULL, &err), 0);
  ck_assert_msg(strstr(err.msg, "ck.ckpt") && strstr(err.msg, "damaged"), "%s", err.msg);
  ck_assert_int_eq(train_ckpt_generation(stem, &err), -1);
  ck_assert_int_eq(train_ckpt_clean(stem), 0); /* kept for repair by hand */
  ck_assert_int_eq(unlink(p), 0);
  ck_assert_int_eq(train_ckpt_load(stem, &r, &o2, &st2, NULL, &err), 0);
  ck_assert_msg(strstr(err.msg, "no checkpoint"), "%s", err.msg);
  /* without a manifest no generation is committed: clean removes the
  ** pending one (a first save killed before its manifest), and only it */
  ck_assert_int_eq(train_ckpt_clean(stem), 0);
  write_text(dir, "ck.pending", "rasp-train pending generation 2 after 0\n");
  ck_assert_int_eq(train_ckpt_clean(stem), 3);
  ck_assert(exists(dir, "ck.g000007.json"));
  train_adamw_free(&opt);
  raspN_free(&m);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Configurations differ option by option, both ways, each named with both
** values. */
START_TEST(test_config_diff) {
  char msg[512];
  const char *a = "--lr 0.0005\n--seed 1\n--model decoder\n--gone x\n";
  const char *b = "--lr 0.001\n--seed 1\n--model encoder\n--new 3\n";
  ck_assert_int_eq(train_config_diff(a, a, msg, sizeof msg), 0);
  ck_assert_str_eq(msg, "");
  ck_assert_int_eq(train_config_diff(a, b, msg, sizeof msg), 4);
  ck_assert_str_eq(msg, "--lr 0.001 (checkpoint: 0.0005), --model encoder "
                        "(checkpoint: decoder), --new 3 (checkpoint: not set), "
                        "--gone not set (checkpoint: x)");
  /* a short buffer truncates the message, not the count */
  ck_assert_int_eq(train_config_diff(a, b, msg, 10), 4);
  ck_assert_uint_eq(strlen(msg), 9);
  /* a value an older rasp-train spelled otherwise is the same value (a
  ** checkpoint saved with --answer fwd resumes where it is now written
  ** forward), in either direction; another value still differs */
  ck_assert_int_eq(train_config_diff("--answer fwd\n", "--answer forward\n", msg, sizeof msg), 0);
  ck_assert_int_eq(train_config_diff("--answer reverse\n", "--answer rev\n", msg, sizeof msg), 0);
  ck_assert_int_eq(train_config_diff("--answer fwd\n", "--answer reverse\n", msg, sizeof msg), 1);
  ck_assert_str_eq(msg, "--answer reverse (checkpoint: fwd)");
  ck_assert_int_eq(train_config_diff("--order fwd\n", "--order forward\n", msg, sizeof msg), 1);
}
END_TEST

/* ---- compiled initialisation ------------------------------------------- */

/* A small causal program over the task vocabulary (V = 4, st_names, no
** BOS/EOS), compiled, saved and loaded as rasp-train --init does, adapted
** to the trainer's ids; the trainer's forward must make the compiled
** model's decisions (raspG_run) wherever they are token ids. */
START_TEST(test_compiled_init) {
  rasp_task_opts task;
  raspT_opts_default(&task);
  task.V = 4;
  task.D = 1;
  task.M = 4;
  task.bos = task.eos = 0;
  task.st_names = 1;
  int V = task.V, nvocab = V + 7, n = 7, nout = V + 9;
  char names[16][16];
  const char *vocab[16], *tnames[17];
  tnames[0] = "0";
  for (int id = 1; id <= nvocab; id++) {
    raspT_token_text(&task, id, names[id], sizeof names[id]);
    vocab[id - 1] = names[id];
    tnames[id] = names[id];
  }
  rasp_error err = {0};
  rasp_ctx *ctx = rasp_ctx_new(n, NULL, &err);
  ck_assert_ptr_nonnull(ctx);
  ck_assert(rasp_set_vocab(ctx, vocab, nvocab, &err));
  ck_assert_msg(rasp_load_stdlib(ctx, NULL, &err), "%s", err.msg);
  ck_assert_msg(rasp_exec_string(ctx, "test",
                                 "def main(seq):\n"
                                 "    return shift_right(seq, 1, default=-1, causal=True)\n",
                                 &err),
                "%s", err.msg);
  ck_assert_msg(rasp_trace(ctx, "main", &err), "%s", err.msg);
  /* what a task sequence can hold: nodes, | / =, s, t (no BOS, EOS) */
  int64_t ids[16];
  int nids = 0;
  for (int id = 1; id <= nvocab; id++)
    if (id != V + RASP_SP_BOS && id != V + RASP_SP_EOS) ids[nids++] = id;
  raspG_opts go = {ids, nids, nvocab, tnames, 0, RASPG_FP32, RASPG_ENC_AUTO, 1, RASPG_MOVES_ASSUME, 0, 0, 0};
  raspG_model g;
  ck_assert_msg(raspG_compile(rasp_ctx_ir(ctx), &go, &g, &err), "%s", err.msg);
  char dir[] = "/tmp/test_train.XXXXXX", stem[300], cmd[400];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(stem, sizeof stem, "%s/c", dir);
  ck_assert_msg(raspN_save(&g.model, stem, &err) == 1, "%s", err.msg);
  rasp_model m;
  ck_assert_msg(raspN_load(&m, stem, &err) == 1, "%s", err.msg);
  ck_assert(train_is_compiled(&m));
  /* a task with EOS does not fit: EOS is not in the compiled vocabulary */
  rasp_task_opts bad = task;
  bad.eos = 1;
  ck_assert_int_eq(train_adapt_compiled(&m, "c", &bad, 0, nout, n, -10, &err), 0);
  ck_assert_msg(strstr(err.msg, "EOS") != NULL, "%s", err.msg);
  /* nor does one longer than the compiled length */
  ck_assert_int_eq(train_adapt_compiled(&m, "c", &task, 0, nout, n + 1, -10, &err), 0);
  int bos = m.cfg.bos_token;
  ck_assert_msg(train_adapt_compiled(&m, "c", &task, 0, nout, n, -10, &err) == 1,
                "%s", err.msg);
  ck_assert_int_eq(m.cfg.n_out, nout);
  ck_assert_int_eq(m.cfg.bos_token, bos);
  ck_assert_int_eq(m.cfg.layer_norm, 0);
  ck_assert_int_eq(m.cfg.d_model, g.model.cfg.d_model);
  ck_assert_int_eq(m.cfg.n_heads, g.model.cfg.n_heads);
  enum { B = 8 };
  train_net net;
  ck_assert_int_eq(train_net_init(&net, &m, B, n + 1, 0.0f, &err), 1);
  int tok[B * 8];
  int64_t in[8];
  rasp_elem out[B][8];
  rasp_rng rng;
  raspT_rng_seed(&rng, 11, 0);
  for (int b = 0; b < B; b++) {
    tok[b * (n + 1)] = bos;
    for (int i = 0; i < n; i++) {
      in[i] = ids[raspT_rng_below(&rng, (uint64_t)nids)];
      tok[b * (n + 1) + i + 1] = (int)in[i];
    }
    ck_assert_msg(raspG_run(&g, in, out[b], NULL, &err), "%s", err.msg);
  }
  train_forward(&net, tok, B, n + 1);
  int checked = 0;
  for (int b = 0; b < B; b++)
    for (int i = 0; i < n; i++) {
      const rasp_elem *e = &out[b][i];
      if (e->den != 1 || e->num < 0 || e->num >= nout) continue;
      const float *lg = net.logits + ((size_t)b * (n + 1) + i + 1) * nout;
      int am = 0;
      for (int v = 1; v < nout; v++)
        if (lg[v] > lg[am]) am = v;
      ck_assert_msg(am == e->num, "sequence %d position %d: trainer %d, compiled %lld",
                    b, i, am, (long long)e->num);
      ck_assert_int_eq(e->num, tok[b * (n + 1) + i]); /* the previous token */
      checked++;
    }
  ck_assert_int_ge(checked, B * (n - 1));
  train_net_free(&net);
  raspN_free(&m);
  raspG_free(&g);
  rasp_ctx_free(ctx);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- compiled initialisation of the encoder ------------------------------ */

/* The encoder task of these tests: D = 2, M = 3, |V| = 6, as the encoder
** readouts want it (edge order, Q at the start, st_names, no BOS/EOS). */
static void enc_task(rasp_task_opts *t) {
  raspT_opts_default(t);
  t->D = 2;
  t->M = 3;
  t->V = 6;
  t->bos = t->eos = 0;
  t->st_names = 1;
}

static const char *srcdir(void) {
  const char *d = getenv("top_srcdir");
  return d && *d ? d : ".";
}

/* Compiles programs/NAME.rasp for enc_task as `rasp compile` does, with
** the mask token among the input ids when with_mask (--encoder), and
** saves it to stem. */
static void enc_compile(const char *name, int with_mask, const char *stem) {
  rasp_task_opts t;
  enc_task(&t);
  char path[4096];
  snprintf(path, sizeof path, "%s/programs/%s.rasp", srcdir(), name);
  rasp_program prog;
  rasp_ptrace tr;
  rasp_error err = {0};
  ck_assert_msg(raspK_load(path, NULL, t.D, t.M, t.V, &prog, &err), "%s", err.msg);
  ck_assert_msg(raspK_trace(&prog, t.D, t.M, t.V, &tr, &err), "%s", err.msg);
  int nv = rasp_vocab_size(tr.ctx), mask = train_mask_id(&t);
  ck_assert_int_ge(nv, mask);
  if (with_mask) ck_assert_str_eq(rasp_vocab_symbol(tr.ctx, mask), "MASK");
  int64_t ids[64];
  int nids = 0;
  for (int id = 1; id < mask; id++) ids[nids++] = id;
  if (with_mask) ids[nids++] = mask;
  const char **names = raspM_alloc(sizeof(char *) * (size_t)(nv + 1));
  names[0] = "PAD";
  for (int i = 1; i <= nv; i++) names[i] = rasp_vocab_symbol(tr.ctx, i);
  raspG_opts go = {ids, nids, nv, names, 0, RASPG_FP32, RASPG_ENC_AUTO, 1, RASPG_MOVES_ASSUME, 0, 0, 0};
  raspG_model g;
  ck_assert_msg(raspG_compile(rasp_ctx_ir(tr.ctx), &go, &g, &err), "%s", err.msg);
  ck_assert_int_eq(g.model.cfg.causal, 0);
  ck_assert_msg(raspN_save(&g.model, stem, &err) == 1, "%s", err.msg);
  raspM_free(names);
  raspG_free(&g);
  raspK_trace_free(&tr);
  raspK_program_free(&prog);
}

/* In process: the encoder readout compiled with MASK, loaded and adapted as
** rasp-train --model encoder --init does; on test samples whose answer
** positions all hold MASK (NAR evaluation), the argmax at the answer's
** second position (model position ans_start + 2, after BOS) is l_t, every
** time.  The same program compiled without MASK, the model given to the
** decoder, and a task of another length are refused. */
START_TEST(test_compiled_init_encoder) {
  rasp_task_opts t;
  enc_task(&t);
  int n = raspT_length(&t), nout = t.V + 9, mask = train_mask_id(&t);
  ck_assert_int_eq(mask, t.V + 8);
  char dir[] = "/tmp/test_train.XXXXXX", stem[300], nomask[300], cmd[400];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(stem, sizeof stem, "%s/enc", dir);
  snprintf(nomask, sizeof nomask, "%s/nomask", dir);
  enc_compile("encoder2_backward_targets", 1, stem);
  enc_compile("encoder2_backward_targets", 0, nomask);
  rasp_error err = {0};
  rasp_model m;
  /* without MASK among its inputs: refused, naming MASK */
  ck_assert_msg(raspN_load(&m, nomask, &err) == 1, "%s", err.msg);
  ck_assert_int_eq(train_adapt_compiled(&m, "nomask", &t, 1, nout, n, -2, &err), 0);
  ck_assert_msg(strstr(err.msg, "MASK") && strstr(err.msg, "--encoder"), "%s", err.msg);
  raspN_free(&m);
  ck_assert_msg(raspN_load(&m, stem, &err) == 1, "%s", err.msg);
  ck_assert(train_is_compiled(&m));
  /* a non-causal model cannot be a decoder */
  ck_assert_int_eq(train_adapt_compiled(&m, "enc", &t, 0, nout, n - 1, -2, &err), 0);
  ck_assert_msg(strstr(err.msg, "not causal") != NULL, "%s", err.msg);
  /* nor serve another length (here the decoder's n - 1 tokens) */
  ck_assert_int_eq(train_adapt_compiled(&m, "enc", &t, 1, nout, n - 1, -2, &err), 0);
  ck_assert_msg(strstr(err.msg, "exactly") != NULL, "%s", err.msg);
  int bos = m.cfg.bos_token;
  ck_assert_msg(train_adapt_compiled(&m, "enc", &t, 1, nout, n, -2, &err) == 1, "%s",
                err.msg);
  ck_assert_int_eq(m.cfg.n_out, nout);
  enum { B = 16 };
  train_net net;
  ck_assert_int_eq(train_net_init(&net, &m, B, n + 1, 0.0f, &err), 1);
  int tok[B * 32], lead[B], at[B];
  ck_assert_int_le(n + 1, 32);
  rasp_sample s;
  memset(&s, 0, sizeof s);
  for (int b = 0; b < B; b++) {
    ck_assert_msg(raspT_sample(&t, 2000, (uint64_t)b, &s, &err) == 1, "%s", err.msg);
    int *row = tok + b * (n + 1);
    row[0] = bos;
    for (int i = 0; i < n; i++)
      row[i + 1] = i >= s.ans_start && i < s.ans_start + t.M ? mask : s.tokens[i];
    lead[b] = s.lead;
    at[b] = s.ans_start + 1; /* l_t's input position in R_t = s l_t ... t */
    ck_assert_int_eq(s.tokens[at[b]], s.lead);
  }
  raspT_sample_free(&s);
  train_forward(&net, tok, B, n + 1);
  int hits = 0;
  for (int b = 0; b < B; b++) {
    const float *lg = net.logits + ((size_t)b * (n + 1) + at[b] + 1) * nout;
    int am = 0;
    for (int v = 1; v < nout; v++)
      if (lg[v] > lg[am]) am = v;
    hits += am == lead[b];
  }
  ck_assert_msg(hits == B, "leading-node accuracy %d/%d before training", hits, B);
  train_net_free(&net);
  raspN_free(&m);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- protocols: optimisers, per-tensor learning rates, noise ------------ */

/* Per-tensor learning rates (--lr-scale rms) against a hand computation on
** a tiny model: tok_emb holds 3, -4, 3, -4, ... (RMS sqrt(12.5)), pos_emb
** all 2 (RMS 2), every other tensor 0, so it falls back to the RMS of the
** whole model, sqrt((24 * 12.5 + 20 * 4) / nparams).  Two steps of SGD
** with momentum 0.5, lr 0.1, all gradients 1, no decay: the buffer is 1
** then 1.5, so a parameter moves by 0.1 * scale * 2.5.  Then SGD with
** decay, AdamW's first step (lr * scale * g / |g|), and a frozen entry
** (scale 0) that stays bit-identical with its moments. */
START_TEST(test_lr_scale_rms_hand) {
  rasp_model_config c = tiny(1, 0, 1, 0);
  rasp_model m;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  float *te = raspN_data(&m, "tok_emb"), *pe = raspN_data(&m, "pos_emb");
  ck_assert_int_eq(raspN_tensor(&m, "tok_emb")->size, 24);
  ck_assert_int_eq(raspN_tensor(&m, "pos_emb")->size, 20);
  for (int i = 0; i < 24; i++) te[i] = i % 2 ? -4.0f : 3.0f;
  for (int i = 0; i < 20; i++) pe[i] = 2.0f;
  size_t n = m.nparams;
  float *scale = raspM_alloc(n * sizeof *scale);
  train_lr_scale_rms(&m, NULL, scale);
  double s_te = sqrt(12.5), s_pe = 2.0, s_rest = sqrt((24 * 12.5 + 20 * 4.0) / (double)n);
  size_t o_te = raspN_tensor(&m, "tok_emb")->offset, o_pe = raspN_tensor(&m, "pos_emb")->offset,
         o_ub = raspN_tensor(&m, "unembed_b")->offset;
  ck_assert_double_eq_tol(scale[o_te + 5], s_te, 1e-6);
  ck_assert_double_eq_tol(scale[o_pe + 19], s_pe, 1e-6);
  ck_assert_double_eq_tol(scale[o_ub], s_rest, 1e-6);
  /* a mask restricts the RMS to the entries it marks */
  unsigned char *mask = raspM_alloc(n);
  memset(mask, 1, n);
  for (int i = 0; i < 24; i += 2) mask[o_te + (size_t)i] = 0; /* only the -4s */
  float *ms = raspM_alloc(n * sizeof *ms);
  train_lr_scale_rms(&m, mask, ms);
  ck_assert_double_eq_tol(ms[o_te], 4.0, 1e-6);
  raspM_free(ms);
  raspM_free(mask);

  float *g = raspM_alloc(n * sizeof *g), *p0 = raspM_alloc(n * sizeof *p0);
  for (size_t i = 0; i < n; i++) g[i] = 1.0f;
  memcpy(p0, m.params, n * sizeof *p0);
  train_adamw o;
  train_adamw_init(&o, n);
  o.sgd = 1;
  o.momentum = 0.5f;
  o.lr = 0.1f;
  o.wd = 0;
  o.scale = scale;
  scale[o_pe + 3] = 0; /* frozen */
  train_adamw_step(&o, m.params, g, n);
  train_adamw_step(&o, m.params, g, n);
  ck_assert_double_eq_tol(m.params[o_te], 3 - 0.1 * s_te * 2.5, 1e-5);
  ck_assert_double_eq_tol(m.params[o_te + 1], -4 - 0.1 * s_te * 2.5, 1e-5);
  ck_assert_double_eq_tol(m.params[o_pe], 2 - 0.1 * s_pe * 2.5, 1e-5);
  ck_assert_double_eq_tol(m.params[o_ub], -0.1 * s_rest * 2.5, 1e-5);
  ck_assert(memcmp(&m.params[o_pe + 3], &p0[o_pe + 3], sizeof(float)) == 0);
  ck_assert(o.m[o_pe + 3] == 0.0f && o.v[o_pe + 3] == 0.0f);
  /* plain SGD with decoupled decay: p -= lr * scale * (g + wd * p) */
  memcpy(m.params, p0, n * sizeof *p0);
  memset(o.m, 0, n * sizeof *o.m);
  o.momentum = 0;
  o.wd = 0.5f;
  train_adamw_step(&o, m.params, g, n);
  ck_assert_double_eq_tol(m.params[o_te], 3 - 0.1 * s_te * (1 + 0.5 * 3), 1e-5);
  ck_assert_double_eq_tol(m.params[o_pe], 2 - 0.1 * s_pe * (1 + 0.5 * 2), 1e-5);
  /* AdamW's first step: m_hat = g, v_hat = g^2, so it moves lr * scale */
  memcpy(m.params, p0, n * sizeof *p0);
  memset(o.m, 0, n * sizeof *o.m);
  o.sgd = 0;
  o.wd = 0;
  o.step = 0;
  for (size_t i = 0; i < n; i++) g[i] = i % 3 ? 0.25f : -7.0f;
  train_adamw_step(&o, m.params, g, n);
  ck_assert_double_eq_tol(m.params[o_te + 1], -4 - 0.1 * s_te, 1e-5);
  ck_assert_double_eq_tol(m.params[o_te], 3 + 0.1 * s_te, 1e-5);
  ck_assert(memcmp(&m.params[o_pe + 3], &p0[o_pe + 3], sizeof(float)) == 0);
  train_adamw_free(&o); /* frees scale */
  raspM_free(g);
  raspM_free(p0);
  raspN_free(&m);
}
END_TEST

/* --init-noise S: each tensor gets Gaussian noise of RMS S times its own
** RMS (measured over 6400 entries: within 5%); a tensor of zeros stays. */
START_TEST(test_noise_relative) {
  rasp_model_config c = tiny(1, 0, 1, 0);
  c.vocab_size = 100;
  c.d_model = 64;
  c.n_heads = 2;
  c.d_head = 32;
  rasp_model m;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  float *te = raspN_data(&m, "tok_emb"), *pe = raspN_data(&m, "pos_emb");
  size_t nte = raspN_tensor(&m, "tok_emb")->size, npe = raspN_tensor(&m, "pos_emb")->size;
  for (size_t i = 0; i < nte; i++) te[i] = i % 2 ? 2.0f : -2.0f;
  for (size_t i = 0; i < npe; i++) pe[i] = 50.0f;
  train_add_noise(&m, 0.1f, 5);
  double s = 0, sp = 0;
  for (size_t i = 0; i < nte; i++) s += pow(te[i] - (i % 2 ? 2.0 : -2.0), 2);
  for (size_t i = 0; i < npe; i++) sp += pow(pe[i] - 50.0, 2);
  double r = sqrt(s / (double)nte), rp = sqrt(sp / (double)npe);
  ck_assert_msg(fabs(r - 0.2) < 0.01, "tok_emb noise RMS %g, want 0.2", r);
  ck_assert_msg(rp > 3 && rp < 7, "pos_emb noise RMS %g, want about 5", rp);
  const float *ub = raspN_data(&m, "unembed_b");
  for (size_t i = 0; i < raspN_tensor(&m, "unembed_b")->size; i++) ck_assert(ub[i] == 0.0f);
  raspN_free(&m);
}
END_TEST

/* --widen K (train_widen) on the adapted encoder readout: K more residual
** dimensions, ceil(K / d_head) more heads, 4K more units, random at a large
** scale (0.5) so that a leak would show; the logits at every position equal
** the unwidened model's (to float rounding: the sums have more, zero,
** terms); the mask marks exactly the old parameters; and one training step
** with the mask frozen (scale 0) leaves them bit-identical while the added
** weights move. */
START_TEST(test_widen_unchanged) {
  rasp_task_opts t;
  enc_task(&t);
  int n = raspT_length(&t), nout = t.V + 9, mask = train_mask_id(&t);
  char dir[] = "/tmp/test_train.XXXXXX", stem[300], cmd[400];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(stem, sizeof stem, "%s/enc", dir);
  enc_compile("encoder2_backward_targets", 1, stem);
  rasp_error err = {0};
  rasp_model m;
  ck_assert_msg(raspN_load(&m, stem, &err) == 1, "%s", err.msg);
  /* the layout's units (what the probe reads): the tokens, and heads */
  int nu = 0, heads = 0, toks = 0;
  rasp_layout_unit *lu = raspN_layout_units(&m, &nu);
  ck_assert_ptr_nonnull(lu);
  for (int k = 0; k < nu; k++) {
    ck_assert_int_le(lu[k].dim + lu[k].size, m.cfg.d_model);
    heads += !strcmp(lu[k].kind, "head") && lu[k].layer >= 0;
    toks += !strcmp(lu[k].name, "tokens") && lu[k].layer == -1 && lu[k].categorical;
  }
  ck_assert_int_gt(heads, 2);
  ck_assert_int_eq(toks, 1);
  raspM_free(lu);
  ck_assert_msg(train_adapt_compiled(&m, "enc", &t, 1, nout, n, -2, &err) == 1, "%s",
                err.msg);
  ck_assert_ptr_null(raspN_layout_units(&m, &nu)); /* adapting drops the layout */
  int bos = m.cfg.bos_token;
  enum { B = 4 };
  int tok[B * 32];
  rasp_sample s;
  memset(&s, 0, sizeof s);
  for (int b = 0; b < B; b++) {
    ck_assert_msg(raspT_sample(&t, 2000, (uint64_t)b, &s, &err) == 1, "%s", err.msg);
    int *row = tok + b * (n + 1);
    row[0] = bos;
    for (int i = 0; i < n; i++)
      row[i + 1] = i >= s.ans_start && i < s.ans_start + t.M ? mask : s.tokens[i];
  }
  raspT_sample_free(&s);
  size_t R = (size_t)B * (n + 1) * nout;
  float *before = raspM_alloc(R * sizeof *before);
  train_net net;
  ck_assert_int_eq(train_net_init(&net, &m, B, n + 1, 0.0f, &err), 1);
  train_forward(&net, tok, B, n + 1);
  memcpy(before, net.logits, R * sizeof *before);
  train_net_free(&net);
  rasp_model_config c0 = m.cfg;
  size_t n0 = m.nparams;
  unsigned char *mk = NULL;
  int K = 5;
  ck_assert_msg(train_widen(&m, K, 0.5f, 9, &mk, &err) == 1, "%s", err.msg);
  ck_assert_int_eq(m.cfg.d_model, c0.d_model + K);
  ck_assert_int_eq(m.cfg.n_heads, c0.n_heads + (K + c0.d_head - 1) / c0.d_head);
  ck_assert_int_eq(m.cfg.d_mlp, c0.d_mlp + 4 * K);
  /* the wires, counted by hand: per layer, the H old heads' q, k, v rows
  ** and the F old units' w_in rows for the K new dimensions, the new heads'
  ** w_o and the 4K new units' w_out columns for the D old ones */
  size_t marked = 0, wires = 0, He = (size_t)(m.cfg.n_heads - c0.n_heads);
  size_t Dh = (size_t)c0.d_head, D0 = (size_t)c0.d_model;
  for (size_t i = 0; i < m.nparams; i++) {
    ck_assert_uint_le(mk[i], TRAIN_WIDEN_WIRE);
    marked += mk[i] == TRAIN_WIDEN_COMPILED;
    if (mk[i] == TRAIN_WIDEN_WIRE) {
      wires++;
      ck_assert(m.params[i] == 0.0f);
    }
  }
  ck_assert_uint_eq(marked, n0);
  ck_assert_uint_eq(wires, (size_t)c0.n_layers *
                               (3 * (size_t)c0.n_heads * K * Dh + K * (size_t)c0.d_mlp +
                                He * Dh * D0 + 4 * (size_t)K * D0));
  ck_assert_int_eq(train_net_init(&net, &m, B, n + 1, 0.0f, &err), 1);
  train_forward(&net, tok, B, n + 1);
  double worst = 0;
  for (size_t i = 0; i < R; i++) {
    double d = fabs((double)net.logits[i] - before[i]) / (1 + fabs(before[i]));
    if (d > worst) worst = d;
  }
  ck_assert_msg(worst < 1e-5, "widened logits differ by %g", worst);
  /* one step with the old parameters frozen */
  float *p0 = raspM_alloc(m.nparams * sizeof *p0);
  memcpy(p0, m.params, m.nparams * sizeof *p0);
  int tgt[B * 32];
  float w[B * 32];
  for (int i = 0; i < B * (n + 1); i++) {
    tgt[i] = 1 + i % t.V;
    w[i] = 1;
  }
  train_zero_grad(&net);
  train_loss(&net, tgt, w, 1.0f, 1, NULL);
  train_backward(&net);
  train_adamw o;
  train_adamw_init(&o, m.nparams);
  o.scale = raspM_alloc(m.nparams * sizeof *o.scale);
  for (size_t i = 0; i < m.nparams; i++) o.scale[i] = mk[i] ? 0.0f : 1.0f;
  o.lr = 0.01f;
  train_adamw_step(&o, m.params, net.grad, m.nparams);
  size_t moved = 0;
  for (size_t i = 0; i < m.nparams; i++) {
    if (mk[i]) ck_assert(memcmp(&m.params[i], &p0[i], sizeof(float)) == 0);
    else moved += m.params[i] != p0[i];
  }
  ck_assert_uint_gt(moved, (m.nparams - n0 - wires) / 2);
  train_adamw_free(&o);
  raspM_free(p0);
  train_net_free(&net);
  raspM_free(mk);
  raspM_free(before);
  /* layer norm would mix the new dimensions in: refused */
  rasp_model_config lc = tiny(1, 1, 1, 0);
  rasp_model lm;
  ck_assert_int_eq(raspN_init(&lm, &lc, &err), 1);
  ck_assert_int_eq(train_widen(&lm, 2, 0.02f, 1, &mk, &err), 0);
  ck_assert_msg(strstr(err.msg, "layer norm") != NULL, "%s", err.msg);
  raspN_free(&lm);
  raspN_free(&m);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Runs a shell command line; returns its exit status, its stderr in err. */
static int run_cmd(const char *line, char *errbuf, size_t size) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "%s 2>&1 >/dev/null", line);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(errbuf, 1, size - 1, p);
  errbuf[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Field k (0-based) of the CSV row of path whose first fields are
** "trial,0" (rasp-train's row before the first step) or, for compare.csv,
** "0,compiled"; NAN when there is none. */
static double csv_field(const char *path, const char *prefix, int k) {
  FILE *f = fopen(path, "r");
  if (!f) return NAN;
  char line[4096];
  double v = NAN;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, prefix, strlen(prefix))) {
      char *p = line;
      for (int i = 0; i < k && p; i++) {
        p = strchr(p, ',');
        if (p) p++;
      }
      if (p) v = strtod(p, NULL);
      break;
    }
  fclose(f);
  return v;
}

/* Through the binaries, as a user runs them: rasp compile --encoder
** (--check: every masked input passes the program's check), rasp-train
** --model encoder --objective nar --init: the CSV row before the first step
** has leading-node accuracy 1 (as --check measured); compare: the compiled
** arm's step-0 row likewise.  A model compiled for the decoder layout
** (readout2_backward_targets, no MASK) and a truncated one are refused
** with a message, exit status 1. */
START_TEST(test_compiled_encoder_binaries) {
  const char *bd = getenv("top_builddir");
  if (!bd || !*bd) bd = ".";
  char rasp[4200], train[4200], dir[] = "/tmp/test_train.XXXXXX", cmd[8192], out[8192];
  snprintf(rasp, sizeof rasp, "%s/rasp/rasp", bd);
  snprintf(train, sizeof train, "%s/trainer/rasp-train", bd);
  ck_assert_msg(access(rasp, X_OK) == 0 && access(train, X_OK) == 0,
                "no binaries under top_builddir '%s'", bd);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  const char *task = "--D 2 --M 3 --V 6";
  snprintf(cmd, sizeof cmd,
           "'%s' compile '%s/programs/encoder2_backward_targets.rasp' %s --encoder "
           "-o '%s/enc' --check 20 2>&1 | grep -c '^check: 20/20\\|passes on 20/20'",
           rasp, srcdir(), task, dir);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  int lines = 0;
  ck_assert_int_eq(fscanf(p, "%d", &lines), 1);
  pclose(p);
  ck_assert_msg(lines == 2, "rasp compile --encoder --check: %d of 2 lines say 20/20", lines);
  char targs[2048];
  snprintf(targs, sizeof targs,
           "%s --st-names --no-bos --no-eos --model encoder --objective nar "
           "--train 16 --test 16 --batch 8 --micro 8 --lr 1e-5 --dropout 0 --threads 1",
           task);
  snprintf(cmd, sizeof cmd, "'%s' %s --init '%s/enc' --epochs 1 --out '%s/run'", train,
           targs, dir, dir);
  ck_assert_msg(run_cmd(cmd, out, sizeof out) == 0, "%s", out);
  ck_assert_ptr_nonnull(strstr(out, "non-causal"));
  char csv[4300];
  snprintf(csv, sizeof csv, "%s/run/trial0.csv", dir);
  /* trial,epoch,step,train_loss,train_eval_loss,val_loss,val_seq_acc,
  ** val_tok_acc,val_lead_acc: the lead accuracy is field 8 */
  double lead = csv_field(csv, "0,0,0,", 8);
  ck_assert_msg(lead == 1.0, "leading-node accuracy before the first step: %g", lead);
  /* compare: the random arm gets the compiled architecture */
  snprintf(cmd, sizeof cmd, "'%s' compare %s --init '%s/enc' --max-steps 1 "
           "--eval-every 1 --out '%s'", train, targs, dir, dir);
  ck_assert_msg(run_cmd(cmd, out, sizeof out) == 0, "%s", out);
  snprintf(csv, sizeof csv, "%s/compare.csv", dir);
  /* step,init,train_loss,val_loss,val_lead_acc: field 4 */
  double clead = csv_field(csv, "0,compiled,", 4);
  ck_assert_msg(clead == 1.0, "compare, compiled arm at step 0: lead %g", clead);
  ck_assert(csv_field(csv, "0,random,", 4) >= 0.0);
  /* the decoder's readout (no MASK, l_t at the answer's first position) */
  snprintf(cmd, sizeof cmd,
           "'%s' compile '%s/programs/readout2_backward_targets.rasp' %s -o '%s/dec'",
           rasp, srcdir(), task, dir);
  ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 0);
  snprintf(cmd, sizeof cmd, "'%s' %s --init '%s/dec' --epochs 1", train, targs, dir);
  ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 2); /* options that do not fit the model: usage */
  ck_assert_msg(strstr(out, "MASK (id 14)") && strstr(out, "rasp compile --encoder"), "%s",
                out);
  /* rasp compile --encoder refuses a program without MASK */
  snprintf(cmd, sizeof cmd,
           "'%s' compile '%s/programs/readout2_backward_targets.rasp' %s --encoder -o '%s/x'",
           rasp, srcdir(), task, dir);
  ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 2);
  ck_assert_msg(strstr(out, "not 'MASK'") != NULL, "%s", out);
  /* a corrupted model */
  snprintf(cmd, sizeof cmd, "truncate -s 200 '%s/enc.safetensors'", dir);
  ck_assert_int_eq(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "'%s' %s --init '%s/enc' --epochs 1", train, targs, dir);
  ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 1);
  ck_assert_msg(strstr(out, "enc") != NULL && strstr(out, "rasp-train: ") != NULL, "%s", out);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The tests through the binary: train gets the built rasp-train (under
** $top_builddir; the test fails if it is not there) and dir, a
** "/tmp/...XXXXXX" template, becomes a fresh temporary directory. */
static void trainer_bin_setup(char *train, size_t size, char *dir) {
  const char *bd = getenv("top_builddir");
  if (!bd || !*bd) bd = ".";
  snprintf(train, size, "%s/trainer/rasp-train", bd);
  ck_assert_msg(access(train, X_OK) == 0, "no binaries under top_builddir '%s'", bd);
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* The protocols through the binary, on the encoder readout of
** test_compiled_encoder_binaries:
**   - --init-mix 0 gives the compiled run's step-0 row, field for field;
**     --init-mix 1 the step-0 accuracies and loss of compare's random arm;
**   - --widen 3 the compiled run's step-0 accuracies (loss to 1e-4);
**   - the program's heads agree with the compiled point's at step 0 (the
**     compiled run, widened, frozen), much less for random weights;
**   - --widen 3 --freeze compiled: after 1 epoch and after resuming to 3,
**     every compiled entry and every wire (tinit.h) is bit-identical (to
**     the first checkpoint, and to the compiled model adapted and widened
**     in process), while added weights moved, and the program's heads
**     still agree everywhere; the distance from the compiled point is logged; the
**     resumed run's checkpoint equals an uninterrupted run's byte for byte;
**   - resuming with another optimiser is refused, naming it; bad
**     combinations are usage errors (status 2). */
START_TEST(test_protocols_binaries) {
  char train[4200], dir[] = "/tmp/test_train.XXXXXX", cmd[16384], out[8192];
  trainer_bin_setup(train, sizeof train, dir);
  char stem[400];
  snprintf(stem, sizeof stem, "%s/enc", dir);
  enc_compile("encoder2_backward_targets", 1, stem);
  const char *targs = "--D 2 --M 3 --V 6 --st-names --no-bos --no-eos --model encoder "
                      "--train 16 --test 16 --batch 8 --micro 8 --lr 1e-3 --dropout 0 "
                      "--threads 1";
  const char *runs[][2] = {
      {"base", ""},
      {"mix0", "--init-mix 0"},
      {"mix1", "--init-mix 1"},
      {"wide", "--widen 3"},
      {"frozen", "--widen 3 --freeze compiled --optim sgd --momentum 0.9 --lr-scale rms"},
  };
  for (int k = 0; k < 5; k++) {
    snprintf(cmd, sizeof cmd, "'%s' %s --init '%s' --epochs 1 --out '%s/%s' %s", train, targs,
             stem, dir, runs[k][0], runs[k][1]);
    ck_assert_msg(run_cmd(cmd, out, sizeof out) == 0, "%s: %s", cmd, out);
  }
  snprintf(cmd, sizeof cmd, "'%s' compare %s --init '%s' --max-steps 1 --eval-every 1 "
           "--out '%s'", train, targs, stem, dir);
  ck_assert_msg(run_cmd(cmd, out, sizeof out) == 0, "%s", out);
  char p[5][400], cmp[400];
  for (int k = 0; k < 5; k++) snprintf(p[k], sizeof p[k], "%s/%s/trial0.csv", dir, runs[k][0]);
  snprintf(cmp, sizeof cmp, "%s/compare.csv", dir);
  /* trial CSV: val_loss 5, seq 6, tok 7, lead 8, pos 9..11, seconds 12,
  ** dist_compiled 13; compare.csv: val_loss 3, lead 4, seq 5, tok 6,
  ** pos 8..10, dist_compiled 11 */
  ck_assert(csv_field(p[0], "0,0,0,", 8) == 1.0);
  for (int f = 5; f <= 13; f++)
    ck_assert_msg(csv_field(p[1], "0,0,0,", f) == csv_field(p[0], "0,0,0,", f),
                  "--init-mix 0, field %d", f);
  static const int tf[] = {5, 6, 7, 8, 9, 10, 11}, cf[] = {3, 5, 6, 4, 8, 9, 10};
  for (int i = 0; i < 7; i++) {
    double a = csv_field(p[2], "0,0,0,", tf[i]), b = csv_field(cmp, "0,random,", cf[i]);
    ck_assert_msg(a == b, "--init-mix 1 field %d: %g, compare's random arm %g", tf[i], a, b);
  }
  ck_assert(csv_field(p[2], "0,0,0,", 13) > 0); /* far from the compiled point */
  /* still the program (field 14): the compiled heads at the compiled point
  ** and after widening; random weights agree far less often */
  ck_assert(csv_field(p[0], "0,0,0,", 14) == 1.0);
  ck_assert(csv_field(p[3], "0,0,0,", 14) == 1.0);
  ck_assert(csv_field(p[4], "0,0,0,", 14) == 1.0);
  ck_assert_msg(csv_field(p[2], "0,0,0,", 14) < 0.5, "random heads agree %g",
                csv_field(p[2], "0,0,0,", 14));
  ck_assert(csv_field(cmp, "0,compiled,", 12) == 1.0);
  ck_assert(csv_field(cmp, "0,random,", 12) == csv_field(p[2], "0,0,0,", 14));
  ck_assert(csv_field(cmp, "0,compiled,", 11) == 0);
  ck_assert(csv_field(cmp, "0,random,", 11) == csv_field(p[2], "0,0,0,", 13));
  ck_assert_double_eq_tol(csv_field(p[3], "0,0,0,", 5), csv_field(p[0], "0,0,0,", 5), 1e-4);
  for (int f = 6; f <= 11; f++)
    ck_assert_msg(csv_field(p[3], "0,0,0,", f) == csv_field(p[0], "0,0,0,", f),
                  "--widen 3, field %d", f);
  /* frozen: the first checkpoint, then two more epochs */
  snprintf(cmd, sizeof cmd, "cp '%s/frozen/trial0.g000001.json' '%s/first.json' && "
           "cp '%s/frozen/trial0.g000001.safetensors' '%s/first.safetensors'", dir, dir,
           dir, dir);
  ck_assert_int_eq(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "'%s' %s --init '%s' --epochs 3 --out '%s/frozen' %s --resume",
           train, targs, stem, dir, runs[4][1]);
  ck_assert_msg(run_cmd(cmd, out, sizeof out) == 0, "%s", out);
  ck_assert(csv_field(p[4], "0,3,", 13) > 0);
  /* and the wires stayed 0, so the compiled heads compute exactly what
  ** they did at step 0 (with the wires training: 0.912 here) */
  ck_assert_msg(csv_field(p[4], "0,3,", 14) == 1.0, "frozen: program heads %g after 3 epochs",
                csv_field(p[4], "0,3,", 14));
  /* resumed = uninterrupted, SGD momentum and all */
  snprintf(cmd, sizeof cmd, "'%s' %s --init '%s' --epochs 3 --out '%s/straight' %s", train,
           targs, stem, dir, runs[4][1]);
  ck_assert_msg(run_cmd(cmd, out, sizeof out) == 0, "%s", out);
  snprintf(cmd, sizeof cmd, "cmp '%s/straight/trial0.g000003.safetensors' "
           "'%s/frozen/trial0.g000003.safetensors' && cmp '%s/straight/trial0.g000003.opt' "
           "'%s/frozen/trial0.g000003.opt'", dir, dir, dir, dir);
  ck_assert_msg(system(cmd) == 0, "a resumed --optim sgd run differs from an uninterrupted one");
  rasp_model a, b, c;
  rasp_error err = {0};
  char sa[400], sb[400];
  snprintf(sa, sizeof sa, "%s/first", dir);
  snprintf(sb, sizeof sb, "%s/frozen/trial0.g000003", dir);
  ck_assert_msg(raspN_load(&a, sa, &err) == 1, "%s", err.msg);
  ck_assert_msg(raspN_load(&b, sb, &err) == 1, "%s", err.msg);
  ck_assert_msg(raspN_load(&c, stem, &err) == 1, "%s", err.msg);
  rasp_task_opts t;
  enc_task(&t);
  ck_assert_msg(train_adapt_compiled(&c, "enc", &t, 1, t.V + 9, raspT_length(&t), -2, &err) == 1,
                "%s", err.msg);
  unsigned char *mk;
  ck_assert_msg(train_widen(&c, 3, 0.02f, 1, &mk, &err) == 1, "%s", err.msg);
  ck_assert_uint_eq(a.nparams, c.nparams);
  ck_assert_uint_eq(b.nparams, c.nparams);
  const rasp_tensor *ub = raspN_tensor(&c, "unembed_b"); /* its floor is the run's */
  size_t moved = 0, frozen = 0;
  for (size_t i = 0; i < c.nparams; i++) {
    if (!mk[i]) {
      moved += a.params[i] != b.params[i];
      continue;
    }
    ck_assert_msg(memcmp(&a.params[i], &b.params[i], sizeof(float)) == 0, "param %zu moved", i);
    if (i < ub->offset || i >= ub->offset + ub->size)
      ck_assert_msg(memcmp(&b.params[i], &c.params[i], sizeof(float)) == 0,
                    "param %zu is not the compiled one", i);
    frozen++;
  }
  ck_assert_uint_gt(moved, 0);
  ck_assert_uint_gt(frozen, 1000);
  raspM_free(mk);
  raspN_free(&a);
  raspN_free(&b);
  raspN_free(&c);
  /* resuming with another optimiser is refused */
  snprintf(cmd, sizeof cmd, "'%s' %s --init '%s' --epochs 4 --out '%s/frozen' --widen 3 "
           "--freeze compiled --resume", train, targs, stem, dir);
  ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 1);
  ck_assert_msg(strstr(out, "--optim not set (checkpoint: sgd)") != NULL, "%s", out);
  /* usage errors */
  const char *bad[][2] = {
      {"--momentum 0.9", "--optim sgd"},
      {"--freeze compiled", "--widen"},
      {"--optim sgd --momentum 1", "[0, 1)"},
      {"--lr-scale xy", "none or rms"},
      {"--init-mix 1.5", "[0, 1]"},
  };
  for (int k = 0; k < 5; k++) {
    snprintf(cmd, sizeof cmd, "'%s' %s --init '%s' %s", train, targs, stem, bad[k][0]);
    ck_assert_msg(run_cmd(cmd, out, sizeof out) == 2, "%s: %s", bad[k][0], out);
    ck_assert_msg(strstr(out, bad[k][1]) != NULL, "%s: %s", bad[k][0], out);
  }
  snprintf(cmd, sizeof cmd, "'%s' %s --init-mix 0.5", train, targs);
  ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 2);
  ck_assert_msg(strstr(out, "needs --init STEM") != NULL, "%s", out);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The text of the row of path whose first fields are prefix, from its
** third field on (what follows "step,arm,"), into buf; 0 if none. */
static int csv_rest(const char *path, const char *prefix, char *buf, size_t size) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[4096];
  int found = 0;
  while (!found && fgets(line, sizeof line, f))
    if (!strncmp(line, prefix, strlen(prefix))) {
      const char *c = strchr(line, ',');
      c = c ? strchr(c + 1, ',') : NULL;
      snprintf(buf, size, "%s", c ? c : "");
      found = 1;
    }
  fclose(f);
  return found;
}

/* compare with any number of arms (--arm): two arms with the same options
** ("a" and "b", compiled) give the same rows at every step (the same
** batches in the same order); "rnd" is the default compare's random arm
** and "comp" its compiled arm, row for row; "std" (the pre-LN standard
** architecture) has no distance from the compiled point; "wide" (--widen 2
** --freeze compiled --optim sgd) starts at the compiled accuracies.  The
** plot script draws every arm.  Bad arm specifications are usage errors. */
START_TEST(test_compare_arms) {
  char train[4200], dir[] = "/tmp/test_train.XXXXXX", cmd[16384], out[8192];
  trainer_bin_setup(train, sizeof train, dir);
  char stem[400];
  snprintf(stem, sizeof stem, "%s/enc", dir);
  enc_compile("encoder2_backward_targets", 1, stem);
  const char *targs = "--D 2 --M 3 --V 6 --st-names --no-bos --no-eos --model encoder "
                      "--train 16 --test 16 --batch 8 --micro 8 --lr 1e-3 --dropout 0 "
                      "--threads 1 --layers 1 --d-model 16 --heads 2 --d-mlp 32 "
                      "--max-steps 3 --eval-every 1";
  snprintf(cmd, sizeof cmd, "mkdir '%s/two' '%s/many'", dir, dir);
  ck_assert_int_eq(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "'%s' compare %s --init '%s' --out '%s/two'", train, targs, stem,
           dir);
  ck_assert_msg(run_cmd(cmd, out, sizeof out) == 0, "%s", out);
  snprintf(cmd, sizeof cmd,
           "'%s' compare %s --init '%s' --out '%s/many' --arm 'a compiled' --arm 'rnd random' "
           "--arm 'std standard' --arm 'b compiled' --arm 'comp compiled' "
           "--arm 'wide compiled --widen 2 --freeze compiled --optim sgd --momentum 0.5'",
           train, targs, stem, dir);
  ck_assert_msg(run_cmd(cmd, out, sizeof out) == 0, "%s", out);
  char two[400], many[400], gp[400], x[4096], y[4096], pre[64];
  snprintf(two, sizeof two, "%s/two/compare.csv", dir);
  snprintf(many, sizeof many, "%s/many/compare.csv", dir);
  snprintf(gp, sizeof gp, "%s/many/compare.gp", dir);
  for (int step = 0; step <= 3; step++) {
    snprintf(pre, sizeof pre, "%d,a,", step);
    ck_assert(csv_rest(many, pre, x, sizeof x));
    snprintf(pre, sizeof pre, "%d,b,", step);
    ck_assert(csv_rest(many, pre, y, sizeof y));
    ck_assert_msg(!strcmp(x, y), "step %d: a %s b %s", step, x, y);
    static const char *const pairs[][2] = {{"random", "rnd"}, {"compiled", "comp"}};
    for (int k = 0; k < 2; k++) {
      snprintf(pre, sizeof pre, "%d,%s,", step, pairs[k][0]);
      ck_assert(csv_rest(two, pre, x, sizeof x));
      snprintf(pre, sizeof pre, "%d,%s,", step, pairs[k][1]);
      ck_assert(csv_rest(many, pre, y, sizeof y));
      ck_assert_msg(!strcmp(x, y), "step %d %s: %s vs %s", step, pairs[k][1], x, y);
    }
    snprintf(pre, sizeof pre, "%d,std,", step);
    ck_assert(csv_rest(many, pre, x, sizeof x));
    size_t xl = strlen(x); /* the last two fields empty */
    ck_assert_msg(xl > 3 && !strcmp(x + xl - 3, ",,\n"), "std has a distance: %s", x);
  }
  ck_assert(csv_field(many, "0,wide,", 4) == 1.0);
  ck_assert(csv_field(many, "0,wide,", 12) == 1.0); /* the program's heads */
  ck_assert(csv_field(many, "3,wide,", 11) > 0);
  FILE *f = fopen(gp, "r");
  ck_assert_ptr_nonnull(f);
  size_t nr = fread(x, 1, sizeof x - 1, f);
  x[nr] = 0;
  fclose(f);
  ck_assert_msg(strstr(x, "every 6::3 using 1:5 with lines lw 2 title 'std'") != NULL, "%s", x);
  const char *bad[][2] = {
      {"--arm 'x'", "NAME compiled|random|standard"},
      {"--arm 'x other'", "BASE is compiled, random or standard"},
      {"--arm 'x compiled --D 3'", "an arm sets only"},
      {"--arm 'x compiled --lr'", "every OPTION takes a VALUE"},
      {"--arm 'x; compiled'", "NAME is letters"},
      {"--arm 'x compiled' --arm 'x random'", "two arms"},
      {"--arm 'x compiled --freeze compiled'", "--widen K"},
  };
  for (int k = 0; k < 7; k++) {
    snprintf(cmd, sizeof cmd, "'%s' compare %s --init '%s' %s", train, targs, stem, bad[k][0]);
    ck_assert_msg(run_cmd(cmd, out, sizeof out) == 2, "%s: %s", bad[k][0], out);
    ck_assert_msg(strstr(out, bad[k][1]) != NULL, "%s: %s", bad[k][0], out);
  }
  snprintf(cmd, sizeof cmd, "'%s' %s --init '%s' --arm 'x compiled'", train, targs, stem);
  ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 2);
  ck_assert_msg(strstr(out, "rasp-train compare") != NULL, "%s", out);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* rasp-train compare and a trial run the one training loop: an arm with
** the command line's options steps exactly as the trial does, dropout
** included (its masks come from the same per-epoch stream), so compare's
** rows at the epoch boundaries (steps 2 and 4: 16 samples, batches of 8)
** equal the trial's epoch rows, field for field. */
START_TEST(test_compare_steps_as_trial) {
  char train[4200], dir[] = "/tmp/test_train.XXXXXX", cmd[16384], out[8192];
  trainer_bin_setup(train, sizeof train, dir);
  char stem[400];
  snprintf(stem, sizeof stem, "%s/enc", dir);
  enc_compile("encoder2_backward_targets", 1, stem);
  const char *targs = "--D 2 --M 3 --V 6 --st-names --no-bos --no-eos --model encoder "
                      "--train 16 --test 16 --batch 8 --micro 4 --lr 1e-3 --dropout 0.2 "
                      "--threads 1 --epochs 2";
  snprintf(cmd, sizeof cmd, "'%s' %s --init '%s' --out '%s/t'", train, targs, stem, dir);
  ck_assert_msg(run_cmd(cmd, out, sizeof out) == 0, "%s", out);
  snprintf(cmd, sizeof cmd, "'%s' compare %s --init '%s' --eval-every 2 --out '%s' "
           "--arm 'c compiled'", train, targs, stem, dir);
  ck_assert_msg(run_cmd(cmd, out, sizeof out) == 0, "%s", out);
  char tp[400], cp[400], pre[32];
  snprintf(tp, sizeof tp, "%s/t/trial0.csv", dir);
  snprintf(cp, sizeof cp, "%s/compare.csv", dir);
  /* trial: val_loss 5, seq 6, tok 7, lead 8, pos 9..11, dist 13, prog 14;
  ** compare: val_loss 3, lead 4, seq 5, tok 6, pos 8..10, dist 11, prog 12 */
  static const int tf[] = {5, 6, 7, 8, 9, 10, 11, 13, 14}, cf[] = {3, 5, 6, 4, 8, 9, 10, 11, 12};
  for (int e = 1; e <= 2; e++) {
    snprintf(pre, sizeof pre, "0,%d,%d,", e, 2 * e);
    char cpre[32];
    snprintf(cpre, sizeof cpre, "%d,c,", 2 * e);
    ck_assert_msg(!isnan(csv_field(tp, pre, 5)) && !isnan(csv_field(cp, cpre, 3)),
                  "rows for epoch %d missing", e);
    for (int i = 0; i < 9; i++) {
      double a = csv_field(tp, pre, tf[i]), b = csv_field(cp, cpre, cf[i]);
      ck_assert_msg(a == b, "epoch %d, trial field %d: %g, compare %g", e, tf[i], a, b);
    }
  }
  /* the trial moved (dropout and all): not a vacuous equality */
  ck_assert(csv_field(tp, "0,2,4,", 13) > 0);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The checksum rmodel records in STEM.json comes back from
** raspN_save_fnv and raspN_load_fnv (so the trainer never reads the
** parameters again for its own): it is FNV-1a over the parameters, and the
** checkpoint manifest stores the same one. */
START_TEST(test_fnv_handed_back) {
  char dir[] = "/tmp/test_train.XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  rasp_model_config c = tiny(1, 1, 1, 0);
  rasp_model m, r;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&m, &c, &err), 1);
  train_init_params(&m, 5);
  uint64_t want = raspN_fnv1a(RASPN_FNV0, m.params, m.nparams * sizeof(float)), a = 0, b = 0;
  char stem[300];
  snprintf(stem, sizeof stem, "%s/m", dir);
  ck_assert_msg(raspN_save_fnv(&m, stem, &a, &err), "%s", err.msg);
  ck_assert_uint_eq(a, want);
  ck_assert_msg(raspN_load_fnv(&r, stem, &b, &err), "%s", err.msg);
  ck_assert_uint_eq(b, want);
  raspN_free(&r);
  train_adamw opt;
  train_adamw_init(&opt, m.nparams);
  train_ckpt_state st = {.best_val = 1};
  snprintf(stem, sizeof stem, "%s/ck", dir);
  ck_assert_msg(train_ckpt_save(stem, &m, &opt, &st, "--seed 1\n", &err), "%s", err.msg);
  char path[320], line[256], hex[32];
  snprintf(path, sizeof path, "%s.ckpt", stem);
  snprintf(hex, sizeof hex, "params_fnv %016llx\n", (unsigned long long)want);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  int found = 0;
  while (fgets(line, sizeof line, f)) found |= !strcmp(line, hex);
  fclose(f);
  ck_assert_msg(found, "the manifest lacks '%s'", hex);
  train_adamw_free(&opt);
  raspN_free(&m);
  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(path), 0);
}
END_TEST

/* A model whose forward overflows (every embedding entry 3e38: the sum of
** token and position embeddings is inf, so the loss is NaN) is stopped at
** its first step, not stepped on: a trial of 3 epochs writes the epoch-1
** row with stopped = 1 and no later row, commits no checkpoint, and says
** so on both streams (exit status 0: a diverged run is a result); in a
** compare its arm stops at step 1 (a row there, though --eval-every is 2),
** its later rows repeat that evaluation with no train_loss, the random arm
** trains on to step 4, and the summary on the standard output names the
** stop. */
START_TEST(test_nonfinite_stops) {
  char train[4200], dir[] = "/tmp/test_train.XXXXXX", cmd[16384], out[8192];
  trainer_bin_setup(train, sizeof train, dir);
  const char *targs = "--D 2 --M 3 --V 6 --st-names --no-bos --no-eos --train 16 --test 16 "
                      "--batch 8 --micro 8 --lr 1e-3 --dropout 0 --threads 1 --layers 1 "
                      "--d-model 16 --heads 2 --d-mlp 32";
  snprintf(cmd, sizeof cmd, "'%s' %s --epochs 1 --out '%s/seed'", train, targs, dir);
  ck_assert_msg(run_cmd(cmd, out, sizeof out) == 0, "%s", out);
  rasp_model m;
  rasp_error err = {0};
  char stem[400];
  snprintf(stem, sizeof stem, "%s/seed/trial0.g000001", dir);
  ck_assert_msg(raspN_load(&m, stem, &err) == 1, "%s", err.msg);
  float *te = raspN_data(&m, "tok_emb"), *pe = raspN_data(&m, "pos_emb");
  ck_assert(te && pe);
  for (size_t i = 0; i < raspN_tensor(&m, "tok_emb")->size; i++) te[i] = 3e38f;
  for (size_t i = 0; i < raspN_tensor(&m, "pos_emb")->size; i++) pe[i] = 3e38f;
  snprintf(stem, sizeof stem, "%s/bad", dir);
  ck_assert_msg(raspN_save(&m, stem, &err) == 1, "%s", err.msg);
  raspN_free(&m);
  /* a trial */
  snprintf(cmd, sizeof cmd, "'%s' %s --init '%s' --epochs 3 --out '%s/t' 2>'%s/t.err'", train,
           targs, stem, dir, dir);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = 0;
  ck_assert_int_eq(pclose(p), 0);
  ck_assert_msg(strstr(out, "trial 0: epochs 1,") && strstr(out, "stopped at step 1 (non-finite "
                "loss)") && strstr(out, "1 stopped (non-finite)"), "%s", out);
  char path[4300];
  snprintf(path, sizeof path, "%s/t.err", dir);
  p = fopen(path, "r");
  ck_assert_ptr_nonnull(p);
  n = fread(out, 1, sizeof out - 1, p);
  out[n] = 0;
  fclose(p);
  ck_assert_msg(strstr(out, "trial 0 stopped at step 1 (epoch 1): its loss was not finite") !=
                    NULL, "%s", out);
  snprintf(path, sizeof path, "%s/t/trial0.csv", dir);
  /* trial,epoch,step,...: the last field (15 for 3 answer positions) */
  ck_assert_msg(csv_field(path, "0,1,1,", 15) == 1.0, "stopped: %g", csv_field(path, "0,1,1,", 15));
  ck_assert(isnan(csv_field(path, "0,2,", 5)));
  ck_assert(isnan(csv_field(path, "0,3,", 5)));
  snprintf(path, sizeof path, "%s/t/trial0.ckpt", dir);
  ck_assert_int_ne(access(path, F_OK), 0);
  /* compare: the poisoned model against random weights of its shape */
  snprintf(cmd, sizeof cmd, "'%s' compare %s --init '%s' --max-steps 4 --eval-every 2 "
           "--out '%s' 2>/dev/null", train, targs, stem, dir);
  p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  n = fread(out, 1, sizeof out - 1, p);
  out[n] = 0;
  ck_assert_int_eq(pclose(p), 0);
  const char *rl = strstr(out, "arm random: step 4,"), *cl = strstr(out, "arm compiled: step 4,");
  ck_assert_msg(rl && cl, "%s", out);
  const char *re = strchr(rl, '\n'), *ce = strchr(cl, '\n');
  ck_assert_msg(re && ce, "%s", out);
  ck_assert_msg(!memmem(rl, (size_t)(re - rl), "stopped", 7), "%s", out);
  ck_assert_msg(memmem(cl, (size_t)(ce - cl), ": stopped at step 1 (non-finite loss)", 37), "%s",
                out);
  char csv[4300], x[4096], y[4096];
  snprintf(csv, sizeof csv, "%s/compare.csv", dir);
  /* step,init,train_loss,val_loss,val_lead_acc,val_seq_acc,val_tok_acc,
  ** val_other_acc,pos 0..2,dist_compiled,program_acc,stopped: field 13 */
  ck_assert(csv_field(csv, "1,compiled,", 13) == 1.0);
  ck_assert(!isfinite(csv_field(csv, "1,compiled,", 2))); /* the loss that stopped it */
  ck_assert(csv_field(csv, "4,compiled,", 13) == 1.0);
  ck_assert(csv_rest(csv, "4,random,", x, sizeof x));
  ck_assert_msg(strlen(x) > 2 && !strcmp(x + strlen(x) - 2, ",\n"), "%s", x); /* it trains */
  ck_assert(isfinite(csv_field(csv, "4,random,", 2)));
  ck_assert(csv_field(csv, "4,random,", 11) > 0); /* it moved */
  ck_assert(csv_rest(csv, "2,compiled,", x, sizeof x));
  ck_assert(csv_rest(csv, "4,compiled,", y, sizeof y));
  ck_assert_msg(x[0] == ',' && !strcmp(x, y), "after the stop: %s vs %s", x, y);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* rasp-train's checkpoints record the task they were trained on
** (layout.task, as `rasp compile` does), so the model given to --init
** with another task is refused, naming the option that fixes it (status
** 2, before any data is drawn), and with the same task it trains. */
START_TEST(test_checkpoint_task) {
  char train[4200], dir[] = "/tmp/test_train.XXXXXX", cmd[16384], out[8192];
  trainer_bin_setup(train, sizeof train, dir);
  const char *model = "--train 16 --test 16 --batch 8 --micro 8 --lr 1e-3 --dropout 0 "
                      "--threads 1 --layers 1 --d-model 16 --heads 2 --d-mlp 32 --epochs 1";
  const char *task = "--D 2 --M 3 --V 6 --st-names --no-bos --no-eos";
  snprintf(cmd, sizeof cmd, "'%s' %s %s --out '%s/a'", train, task, model, dir);
  ck_assert_msg(run_cmd(cmd, out, sizeof out) == 0, "%s", out);
  rasp_model m;
  rasp_error err = {0};
  char stem[400];
  snprintf(stem, sizeof stem, "%s/a/trial0.g000001", dir);
  ck_assert_msg(raspN_load_config(&m, stem, &err) == 1, "%s", err.msg);
  rasp_task_opts t;
  enc_task(&t); /* the same settings; the model's key says decoder */
  raspN_task_diff d[RASPN_TASK_NKEYS];
  ck_assert_int_eq(raspN_layout_task_diff(&m, &t, 0, d), 0);
  t.D = 3;
  ck_assert_int_eq(raspN_layout_task_diff(&m, &t, 0, d), 1);
  ck_assert_str_eq(d[0].key, "D");
  ck_assert_str_eq(d[0].model, "2");
  raspN_free(&m);
  static const char *const wrong[][2] = {
      {"--D 3 --M 3 --V 6 --st-names --no-bos --no-eos", "fix: --D 2"},
      {"--D 2 --M 3 --V 6 --no-bos --no-eos", "fix: --st-names"},
      {"--D 2 --M 3 --V 6 --st-names --no-bos --no-eos --q end", "fix: --q start"},
  };
  for (int k = 0; k < 3; k++) {
    snprintf(cmd, sizeof cmd, "'%s' %s %s --init '%s'", train, wrong[k][0], model, stem);
    ck_assert_msg(run_cmd(cmd, out, sizeof out) == 2, "%s: %s", wrong[k][0], out);
    ck_assert_msg(strstr(out, wrong[k][1]) && strstr(out, "was compiled for"), "%s: %s",
                  wrong[k][0], out);
  }
  snprintf(cmd, sizeof cmd, "'%s' %s %s --init '%s' --out '%s/b'", train, task, model, stem,
           dir);
  ck_assert_msg(run_cmd(cmd, out, sizeof out) == 0, "%s", out);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *train_suite(void) {
  Suite *s = suite_create("train");
  TCase *tc = tcase_create("core");
  /* a guard against a hang, not a speed target: the binaries these tests
  ** run take a minute on a loaded machine (two cores, load 8) */
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_grad_causal_ln_gelu);
  tcase_add_test(tc, test_tanh_accuracy);
  tcase_add_test(tc, test_pred_nonfinite);
  tcase_add_test(tc, test_sgemm_kernels);
  tcase_add_test(tc, test_sgemm_tri);
  tcase_add_test(tc, test_net_kernels_agree);
  tcase_add_test(tc, test_grad_bidir_noln_relu);
  tcase_add_test(tc, test_grad_causal_noln_pos);
  tcase_add_test(tc, test_grad_bidir_ln);
  tcase_add_test(tc, test_grad_causal_rms_gelu);
  tcase_add_test(tc, test_grad_bidir_rms_relu);
  tcase_add_test(tc, test_grad_one_head);
  tcase_add_test(tc, test_forward_matches_reference);
  tcase_add_test(tc, test_overfit);
  tcase_add_test(tc, test_checkpoint_round_trip);
  tcase_add_test(tc, test_config_diff);
  tcase_add_test(tc, test_compiled_init);
  tcase_add_test(tc, test_compiled_init_encoder);
  tcase_add_test(tc, test_compiled_encoder_binaries);
  tcase_add_test(tc, test_lr_scale_rms_hand);
  tcase_add_test(tc, test_noise_relative);
  tcase_add_test(tc, test_widen_unchanged);
  tcase_add_test(tc, test_protocols_binaries);
  tcase_add_test(tc, test_compare_arms);
  tcase_add_test(tc, test_compare_steps_as_trial);
  tcase_add_test(tc, test_fnv_handed_back);
  tcase_add_test(tc, test_nonfinite_stops);
  tcase_add_test(tc, test_checkpoint_task);
  suite_add_tcase(s, tc);
  return s;
}

RASP_CHECK_MAIN(train_suite())
