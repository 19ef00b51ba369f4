/*
** rcompile_fast.c -- the sparse forward pass raspG_run uses.
**
** A leaf: it reads only the model, never the compile's state.
*/
#include "rcompile_int.h"

/* ---- a sparse forward pass ---------------------------------------------
** The same arithmetic as raspN_forward (rmodel.c) in the same order, with
** the zero weights skipped: every float sum adds the same nonzero terms in
** the same index order, and the skipped terms are exact zeros, so the
** logits are bit-identical to the dense pass (tests/test_compile checks
** this).  Compiled models are more than 99% zeros, which makes --check on
** the path-star programs feasible.  Only for ReLU models (what the compiler
** writes); a pre-LN or pre-RMSNorm model's norms are raspN_norm_rows itself, run
** on every row before the sums that read it. */

typedef struct spm { /* compressed columns of a rows x cols row-major matrix */
  int ncol;
  int *start; /* ncol + 1 */
  int *row;
  float *w;
} spm;

static void spm_build(spm *s, const float *W, int rows, int cols) {
  size_t nz = 0;
  for (size_t i = 0; i < (size_t)rows * cols; i++) nz += W[i] != 0;
  s->ncol = cols;
  s->start = raspM_alloc(sizeof(int) * (size_t)(cols + 1));
  s->row = raspM_alloc(sizeof(int) * (nz ? nz : 1));
  s->w = raspM_alloc(sizeof(float) * (nz ? nz : 1));
  size_t k = 0;
  for (int c = 0; c < cols; c++) {
    s->start[c] = (int)k;
    for (int r = 0; r < rows; r++) {
      float w = W[(size_t)r * cols + c];
      if (w != 0) {
        s->row[k] = r;
        s->w[k++] = w;
      }
    }
  }
  s->start[cols] = (int)k;
}
static void spm_free(spm *s) {
  raspM_free(s->start);
  raspM_free(s->row);
  raspM_free(s->w);
}

struct raspG_fast {
  int nl, H;
  spm *q, *k, *v, *o;  /* nl * H each */
  spm *wi, *wo;        /* nl each */
  spm un;
};

void raspG_fast_free(struct raspG_fast *f) {
  if (!f) return;
  for (int i = 0; i < f->nl * f->H; i++) {
    spm_free(&f->q[i]);
    spm_free(&f->k[i]);
    spm_free(&f->v[i]);
    spm_free(&f->o[i]);
  }
  for (int l = 0; l < f->nl; l++) {
    spm_free(&f->wi[l]);
    spm_free(&f->wo[l]);
  }
  spm_free(&f->un);
  raspM_free(f->q);
  raspM_free(f->k);
  raspM_free(f->v);
  raspM_free(f->o);
  raspM_free(f->wi);
  raspM_free(f->wo);
  raspM_free(f);
}

struct raspG_fast *raspG_fast_build(rasp_model *m) {
  const rasp_model_config *c = &m->cfg;
  if (c->gelu || (c->layer_norm && !raspN_data(m, "ln_f.weight"))) return NULL;
  int D = c->d_model, H = c->n_heads, Dh = c->d_head, F = c->d_mlp, nl = c->n_layers;
  struct raspG_fast *f = raspM_alloc(sizeof *f);
  f->nl = nl;
  f->H = H;
  size_t nh = (size_t)(nl * H > 0 ? nl * H : 1);
  f->q = raspM_alloc(sizeof(spm) * nh);
  f->k = raspM_alloc(sizeof(spm) * nh);
  f->v = raspM_alloc(sizeof(spm) * nh);
  f->o = raspM_alloc(sizeof(spm) * nh);
  f->wi = raspM_alloc(sizeof(spm) * (size_t)(nl ? nl : 1));
  f->wo = raspM_alloc(sizeof(spm) * (size_t)(nl ? nl : 1));
  char nm[64];
  for (int L = 0; L < nl; L++) {
#define P_(s) (snprintf(nm, sizeof nm, "layers.%d.%s", L, s), raspN_data(m, nm))
    const float *wq = P_("attn.w_q"), *wk = P_("attn.w_k"), *wv = P_("attn.w_v"),
                *wo = P_("attn.w_o");
    for (int hd = 0; hd < H; hd++) {
      size_t off = (size_t)hd * D * Dh;
      spm_build(&f->q[L * H + hd], wq + off, D, Dh);
      spm_build(&f->k[L * H + hd], wk + off, D, Dh);
      spm_build(&f->v[L * H + hd], wv + off, D, Dh);
      spm_build(&f->o[L * H + hd], wo + (size_t)hd * Dh * D, Dh, D);
    }
    spm_build(&f->wi[L], P_("mlp.w_in"), D, F);
    spm_build(&f->wo[L], P_("mlp.w_out"), F, D);
#undef P_
  }
  spm_build(&f->un, raspN_data(m, "unembed"), D, c->n_out);
  return f;
}

/* The forward pass over the sparse weights (sparse_forward), one plan for
** both precisions.  In fp32 it is raspN_forward's sums in its order without
** the zero terms, so the logits are bit-identical (a zero term changes no
** float32 sum but the sign of a zero).  In fp16 and bf16 it emulates the
** format: every weight rounded to it as it is read, and every result as it
** is made (a dot product, accumulated in float32, rounded once; each
** addition to the residual; the softmax's difference, exp, sum and
** quotient; each head's weighted sum and its output; the logits), as a GPU
** computing in that format with float32 accumulators does.  fp16 overflows
** to inf (and inf - inf, 0 * inf to NaN) as the hardware does, so there no
** term is skipped.  rnd is the rounding (none in fp32). */
static inline float rnd(int pr, float y) { return pr == RASPG_FP32 ? y : raspG_round(pr, y); }

/* Column c of s applied to x, plus b[c]: b[c] + sum_r x[r] W[r][c] in
** increasing r (as the dense pass), rounded once. */
static inline float sp_dot(int pr, const spm *s, int c, const float *x, const float *b) {
  float acc = b ? rnd(pr, b[c]) : 0.0f;
  for (int k = s->start[c]; k < s->start[c + 1]; k++) acc += x[s->row[k]] * rnd(pr, s->w[k]);
  return rnd(pr, acc);
}

/* exp(att[j] - max) in place; returns their sum.  fp32: raspN_forward's own
** softmax, so the weights are its bits. */
static float sp_softmax_exp(int pr, float *att, int nk) {
  if (pr == RASPG_FP32) return raspN_softmax_exp(att, nk);
  float mx = -INFINITY, sum = 0;
  for (int j = 0; j < nk; j++)
    if (att[j] > mx) mx = att[j];
  for (int j = 0; j < nk; j++) {
    att[j] = rnd(pr, expf(rnd(pr, att[j] - mx)));
    sum += att[j];
  }
  return rnd(pr, sum);
}

static inline __attribute__((always_inline)) void
sparse_pass(const raspG_model *g, int pr, const int *tokens, int n, float *logits) {
  const struct raspG_fast *f = g->fast;
  int emu = pr != RASPG_FP32;
  rasp_model *mm = (rasp_model *)&g->model;
  const rasp_model_config *c = &mm->cfg;
  int D = c->d_model, H = c->n_heads, Dh = c->d_head, F = c->d_mlp, O = c->n_out;
  size_t nD = (size_t)n * D;
  float *x = raspM_alloc(nD * sizeof *x), *o = raspM_alloc(nD * sizeof *o);
  float *q = raspM_alloc((size_t)n * Dh * sizeof *q), *k = raspM_alloc((size_t)n * Dh * sizeof *k);
  float *v = raspM_alloc((size_t)n * Dh * sizeof *v), *att = raspM_alloc((size_t)n * sizeof *att);
  float *z = raspM_alloc((size_t)(F > D ? F : D) * sizeof *z), *hv = raspM_alloc((size_t)Dh * sizeof *hv);
  int *act = raspM_alloc(sizeof(int) * (size_t)Dh), *vact = raspM_alloc(sizeof(int) * (size_t)Dh);
  /* what the sums read: the residual, or its layer norm (fp32 only: the
  ** compiler writes no pre-LN model in another precision) */
  float *h = c->layer_norm ? raspM_alloc(nD * sizeof *h) : x;
  const float *te = raspN_data(mm, "tok_emb"), *pe = raspN_data(mm, "pos_emb");
  for (int i = 0; i < n; i++)
    for (int j = 0; j < D; j++)
      x[(size_t)i * D + j] = rnd(pr, rnd(pr, te[(size_t)tokens[i] * D + j]) +
                                         (pe ? rnd(pr, pe[(size_t)i * D + j]) : 0.0f));
  float scale = rnd(pr, 1.0f / sqrtf((float)Dh));
  char nm[64];
  for (int L = 0; L < c->n_layers; L++) {
#define P_(s) (snprintf(nm, sizeof nm, "layers.%d.%s", L, s), raspN_data(mm, nm))
    const float *bq = P_("attn.b_q"), *bk = P_("attn.b_k"), *bv = P_("attn.b_v"),
                *bo = P_("attn.b_o");
    if (c->layer_norm) {
      const float *lw = P_("ln1.weight"), *lb = P_("ln1.bias");
      raspN_norm_rows(c->layer_norm, x, lw, lb, n, D, raspN_norm_eps(c), h);
    }
    for (size_t i = 0; i < nD; i++) o[i] = rnd(pr, bo[i % D]);
    for (int hd = 0; hd < H; hd++) {
      const spm *Sq = &f->q[L * H + hd], *Sk = &f->k[L * H + hd], *Sv = &f->v[L * H + hd],
                *So = &f->o[L * H + hd];
      const float *hbq = bq + hd * Dh, *hbk = bk + hd * Dh, *hbv = bv + hd * Dh;
      /* the head's plan: the dimensions whose q and k (act) or v (vact) can
         be nonzero; emulated, all of them */
      int na = 0, nva = 0;
      for (int e = 0; e < Dh; e++) {
        int qe = emu || Sq->start[e + 1] > Sq->start[e] || hbq[e] != 0;
        int ke = emu || Sk->start[e + 1] > Sk->start[e] || hbk[e] != 0;
        int ve = emu || Sv->start[e + 1] > Sv->start[e] || hbv[e] != 0;
        if (qe && ke) act[na++] = e;
        if (ve) vact[nva++] = e;
      }
      if (!nva) continue; /* writes nothing: o += 0 */
      for (int i = 0; i < n; i++)
        for (int e = 0; e < Dh; e++) {
          q[(size_t)i * Dh + e] = sp_dot(pr, Sq, e, h + (size_t)i * D, hbq);
          k[(size_t)i * Dh + e] = sp_dot(pr, Sk, e, h + (size_t)i * D, hbk);
          v[(size_t)i * Dh + e] = sp_dot(pr, Sv, e, h + (size_t)i * D, hbv);
        }
      for (int i = 0; i < n; i++) {
        int nk = c->causal ? i + 1 : n;
        for (int j = 0; j < nk; j++) {
          float s = 0;
          for (int t = 0; t < na; t++) s += q[(size_t)i * Dh + act[t]] * k[(size_t)j * Dh + act[t]];
          att[j] = rnd(pr, rnd(pr, s) * scale);
        }
        float sum = sp_softmax_exp(pr, att, nk);
        for (int e = 0; e < Dh; e++) hv[e] = 0;
        for (int j = 0; j < nk; j++) {
          if (att[j] == 0 && !emu) continue;
          float a = rnd(pr, att[j] / sum);
          for (int t = 0; t < nva; t++) hv[vact[t]] += a * v[(size_t)j * Dh + vact[t]];
        }
        float *oi = o + (size_t)i * D;
        if (!emu) { /* raspN_forward adds each term to the output as it goes */
          for (int j = 0; j < D; j++)
            for (int kk = So->start[j]; kk < So->start[j + 1]; kk++) oi[j] += hv[So->row[kk]] * So->w[kk];
          continue;
        }
        for (int e = 0; e < Dh; e++) hv[e] = rnd(pr, hv[e]);
        for (int j = 0; j < D; j++) /* the head's output rounded, then added */
          if (So->start[j] < So->start[j + 1]) oi[j] = rnd(pr, oi[j] + sp_dot(pr, So, j, hv, NULL));
      }
    }
    for (size_t i = 0; i < nD; i++) x[i] = rnd(pr, x[i] + o[i]);
    const float *bi = P_("mlp.b_in"), *bt = P_("mlp.b_out");
    if (c->layer_norm) {
      const float *lw = P_("ln2.weight"), *lb = P_("ln2.bias");
      raspN_norm_rows(c->layer_norm, x, lw, lb, n, D, raspN_norm_eps(c), h);
    }
#undef P_
    for (int i = 0; i < n; i++) {
      float *xi = x + (size_t)i * D;
      for (int t = 0; t < F; t++) {
        float zt = sp_dot(pr, &f->wi[L], t, h + (size_t)i * D, bi);
        z[t] = zt > 0 ? zt : 0;
      }
      for (int j = 0; j < D; j++) xi[j] = rnd(pr, xi[j] + sp_dot(pr, &f->wo[L], j, z, bt));
    }
  }
  const float *ub = raspN_data(mm, "unembed_b");
  if (c->layer_norm) {
    const float *lw = raspN_data(mm, "ln_f.weight"), *lb = raspN_data(mm, "ln_f.bias");
    raspN_norm_rows(c->layer_norm, x, lw, lb, n, D, raspN_norm_eps(c), h);
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < O; j++) logits[(size_t)i * O + j] = sp_dot(pr, &f->un, j, h + (size_t)i * D, ub);
  if (h != x) raspM_free(h);
  raspM_free(x);
  raspM_free(o);
  raspM_free(q);
  raspM_free(k);
  raspM_free(v);
  raspM_free(att);
  raspM_free(z);
  raspM_free(hv);
  raspM_free(act);
  raspM_free(vact);
}

/* Two instances of the one pass: in the fp32 one pr is a constant, so its
** tests fold away and the sums run as fast as without them. */
static void sparse_forward(const raspG_model *g, const int *tokens, int n, float *logits) {
  if (g->precision == RASPG_FP32) sparse_pass(g, RASPG_FP32, tokens, n, logits);
  else sparse_pass(g, g->precision, tokens, n, logits);
}

int raspG_run(const raspG_model *g, const int64_t *tokens, rasp_elem *out, float *logits,
              rasp_error *err) {
  int n = g->n, no = g->model.cfg.n_out;
  int *t = raspM_alloc(sizeof(int) * (size_t)(n + 1));
  float *lg = logits ? logits : raspM_alloc(sizeof(float) * (size_t)(n + 1) * no);
  t[0] = g->model.cfg.bos_token;
  for (int i = 0; i < n; i++) t[i + 1] = (int)tokens[i];
  int rc = 0;
  if (g->fast && (g->precision != RASPG_FP32 || !getenv("RASP_COMPILE_DENSE")))
    sparse_forward(g, t, n + 1, lg);
  else
    rc = !raspN_forward(&g->model, t, n + 1, lg, NULL, err);
  if (rc == 0)
    for (int i = 0; i < n; i++) {
      const float *row = lg + (size_t)(i + 1) * no;
      int best = 0;
      for (int j = 1; j < g->n_out; j++)
        if (row[j] > row[best]) best = j;
      out[i] = g->out_vals[best];
    }
  raspM_free(t);
  if (!logits) raspM_free(lg);
  return rc == 0;
}
