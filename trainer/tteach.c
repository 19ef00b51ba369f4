/*
** tteach.c -- the teacher's auxiliary loss (see tteach.h).  Entry by
** entry: a plain sum in double over every entry (the states are small: b T
** D per sublayer), and its gradient written where train_backward adds it.
** Through a map: the products of the fit (S'S, S'H, the prediction, the
** gradient) go through the trainer's float matrix product, the solve of
** the small Ds x Ds system through a Cholesky factorisation in double (the
** ridge keeps it positive definite), the sums in double.
*/
#include "tteach.h"

#include <math.h>
#include <string.h>

#include "rmem.h"
#include "tkern.h"

double train_teach_weight(double weight, long until, long step) {
  if (until <= 0) return weight;
  double f = 1.0 - (double)(step - 1) / (double)until;
  return f > 0 ? weight * f : 0.0;
}

static void ensure_aux(train_net *s) {
  int L = s->m->cfg.n_layers;
  size_t RD = (size_t)s->B * s->T * s->m->cfg.d_model;
  if (s->aux_mid) return;
  s->aux_mid = raspM_alloc(((size_t)L + 1) * sizeof *s->aux_mid);
  s->aux_out = raspM_alloc(((size_t)L + 1) * sizeof *s->aux_out);
  for (int l = 0; l < L; l++) {
    s->aux_mid[l] = raspM_alloc((RD ? RD : 1) * sizeof(float));
    s->aux_out[l] = raspM_alloc((RD ? RD : 1) * sizeof(float));
  }
}

/* sum of w_d (a - b)^2 over R rows of D entries; g (may be NULL) gets
** f * 2 w_d (a - b) */
static double sq_dist(const float *a, const float *b, size_t R, int D, const float *w, float *g,
                      double f) {
  double sum = 0;
  for (size_t r = 0; r < R; r++)
    for (int d = 0; d < D; d++) {
      size_t i = r * (size_t)D + (size_t)d;
      double e = (double)a[i] - (double)b[i];
      sum += w[d] * e * e;
      if (g) g[i] = (float)(2.0 * f * w[d] * e);
    }
  return sum;
}

double train_teach_loss(train_net *s, const train_net *t, const float *w, double scale,
                        int want_grad) {
  int L = s->m->cfg.n_layers, D = s->m->cfg.d_model;
  size_t R = (size_t)s->b * s->t;
  if (want_grad) ensure_aux(s);
  double sum = 0;
  for (int l = 0; l < L; l++) {
    sum += sq_dist(s->L[l].mid, t->L[l].mid, R, D, w + (size_t)(2 * l) * D,
                   want_grad ? s->aux_mid[l] : NULL, scale);
    sum += sq_dist(s->L[l].out, t->L[l].out, R, D, w + (size_t)(2 * l + 1) * D,
                   want_grad ? s->aux_out[l] : NULL, scale);
  }
  s->aux_on = want_grad;
  return scale * sum;
}

double train_teach_attn_loss(train_net *s, const train_net *t, double coef, int want_grad) {
  const rasp_model_config *c = &s->m->cfg;
  int L = c->n_layers, H = c->n_heads, T = s->t, causal = c->causal;
  if (want_grad && !s->att_target)
    s->att_target = raspM_alloc((size_t)(L ? L : 1) * sizeof *s->att_target);
  double sum = 0;
  for (int l = 0; l < L; l++) {
    const float *P = s->L[l].att, *Pt = t->L[l].att;
    for (size_t row = 0; row < (size_t)s->b * H * T; row++) {
      int i = (int)(row % (size_t)T), nk = causal ? i + 1 : T;
      const float *p = P + row * T, *q = Pt + row * T;
      for (int j = 0; j < nk; j++)
        if (q[j] > 0) sum += (double)q[j] * (log((double)q[j]) - log(fmax((double)p[j], 1e-30)));
    }
    if (want_grad) s->att_target[l] = Pt;
  }
  s->att_coef = want_grad ? coef : 0;
  return coef * sum;
}

void train_teach_free(train_net *s) {
  raspM_free(s->att_target);
  s->att_target = NULL;
  s->att_coef = 0;
  if (!s->aux_mid) return;
  for (int l = 0; l < s->m->cfg.n_layers; l++) {
    raspM_free(s->aux_mid[l]);
    raspM_free(s->aux_out[l]);
  }
  raspM_free(s->aux_mid);
  raspM_free(s->aux_out);
  s->aux_mid = s->aux_out = NULL;
}

void train_teach_weights(const train_net *t, float *w) {
  int L = t->m->cfg.n_layers, D = t->m->cfg.d_model;
  size_t R = (size_t)t->b * t->t;
  for (int k = 0; k < 2 * L; k++) {
    const float *h = k % 2 ? t->L[k / 2].out : t->L[k / 2].mid;
    for (int d = 0; d < D; d++) {
      double ms = 0;
      for (size_t r = 0; r < R; r++) ms += (double)h[r * D + d] * h[r * D + d];
      w[(size_t)k * D + d] = (float)(1.0 / (1.0 + ms / (double)(R ? R : 1)));
    }
  }
}

void train_teach_map_init(train_teach_map *mp, int Ls, int Lt, int Ds, int Dt, int shift) {
  memset(mp, 0, sizeof *mp);
  mp->Ls = Ls;
  mp->Lt = Lt;
  mp->Ds = Ds;
  mp->Dt = Dt;
  mp->shift = shift;
  mp->rho = 1e-3;
  mp->pair = raspM_alloc((size_t)(2 * Ls > 0 ? 2 * Ls : 1) * sizeof *mp->pair);
  for (int k = 0; k < 2 * Ls; k++) { /* round((k + 1) 2Lt / 2Ls) - 1 */
    int j = (int)(((long)(k + 1) * 2 * Lt + Ls) / (2L * Ls)) - 1;
    mp->pair[k] = j < 0 ? 0 : j >= 2 * Lt ? 2 * Lt - 1 : j;
  }
}

void train_teach_map_free(train_teach_map *mp) {
  raspM_free(mp->pair);
  raspM_free(mp->H);
  raspM_free(mp->P);
  raspM_free(mp->G);
  raspM_free(mp->C);
  raspM_free(mp->X);
  raspM_free(mp->Gd);
  raspM_free(mp->Xd);
  memset(mp, 0, sizeof *mp);
}

static void map_scratch(train_teach_map *mp, size_t R) {
  size_t Ds = (size_t)mp->Ds, Dt = (size_t)mp->Dt, ss = Ds * Ds + 1, st = Ds * Dt + 1;
  if (!mp->G) {
    mp->G = raspM_alloc(ss * sizeof(float));
    mp->C = raspM_alloc(st * sizeof(float));
    mp->X = raspM_alloc(st * sizeof(float));
    mp->Gd = raspM_alloc(ss * sizeof(double));
    mp->Xd = raspM_alloc(st * sizeof(double));
  }
  if (R > mp->cap) {
    mp->cap = R;
    mp->H = raspM_realloc(mp->H, R * Dt * sizeof(float));
    mp->P = raspM_realloc(mp->P, R * Dt * sizeof(float));
  }
}

/* Solves G X = B for a symmetric positive definite G (n x n, overwritten
** by its lower Cholesky factor) and m right-hand sides (B, n x m row-major,
** overwritten by X).  0 when G is not positive definite (then X is
** unspecified). */
static int cholesky_solve(double *G, int n, double *X, int m) {
  for (int j = 0; j < n; j++) {
    double *gj = G + (size_t)j * n, d = gj[j];
    for (int k = 0; k < j; k++) d -= gj[k] * gj[k];
    if (!(d > 0)) return 0;
    d = sqrt(d);
    gj[j] = d;
    for (int i = j + 1; i < n; i++) {
      double *gi = G + (size_t)i * n, v = gi[j];
      for (int k = 0; k < j; k++) v -= gi[k] * gj[k];
      gi[j] = v / d;
    }
  }
  for (int i = 0; i < n; i++) { /* L Y = B, row by row */
    double *xi = X + (size_t)i * m;
    for (int k = 0; k < i; k++) {
      double l = G[(size_t)i * n + k];
      const double *xk = X + (size_t)k * m;
      for (int c = 0; c < m; c++) xi[c] -= l * xk[c];
    }
    for (int c = 0; c < m; c++) xi[c] /= G[(size_t)i * n + i];
  }
  for (int i = n - 1; i >= 0; i--) { /* L' X = Y */
    double *xi = X + (size_t)i * m;
    for (int c = 0; c < m; c++) xi[c] /= G[(size_t)i * n + i];
    for (int k = 0; k < i; k++) {
      double l = G[(size_t)i * n + k];
      double *xk = X + (size_t)k * m;
      for (int c = 0; c < m; c++) xk[c] -= l * xi[c];
    }
  }
  return 1;
}

/* One student state S (R x Ds) against the teacher's rows H (R x Dt, in
** mp->H): the fitted map's loss (unscaled), and with g, scale times its
** gradient with respect to S written to g (R x Ds). */
static double map_state(train_teach_map *mp, const float *S, size_t R, const float *w, float *g,
                        double scale) {
  int Ds = mp->Ds, Dt = mp->Dt;
  float *H = mp->H, *P = mp->P, *G = mp->G, *C = mp->C, *X = mp->X;
  double *Gd = mp->Gd, *Xd = mp->Xd;
  tkern_sgemm(1, 0, Ds, Ds, (int)R, S, Ds, S, Ds, 0, G, Ds); /* S'S */
  tkern_sgemm(1, 0, Ds, Dt, (int)R, S, Ds, H, Dt, 0, C, Dt); /* S'H */
  double tr = 0;
  for (int i = 0; i < Ds; i++) tr += G[(size_t)i * Ds + i];
  double mu = mp->rho * (tr / Ds + 1e-8);
  for (size_t i = 0; i < (size_t)Ds * Ds; i++) Gd[i] = G[i];
  for (int i = 0; i < Ds; i++) Gd[(size_t)i * Ds + i] += mu;
  for (size_t i = 0; i < (size_t)Ds * Dt; i++) Xd[i] = C[i];
  if (!cholesky_solve(Gd, Ds, Xd, Dt)) /* not finite: the loss says so */
    for (size_t i = 0; i < (size_t)Ds * Dt; i++) Xd[i] = NAN;
  for (size_t i = 0; i < (size_t)Ds * Dt; i++) X[i] = (float)Xd[i];
  tkern_sgemm(0, 0, (int)R, Dt, Ds, S, Ds, X, Dt, 0, P, Dt); /* the prediction S X */
  double sum = 0, ridge = 0;
  for (size_t r = 0; r < R; r++)
    for (int d = 0; d < Dt; d++) {
      size_t i = r * (size_t)Dt + (size_t)d;
      double e = (double)P[i] - (double)H[i];
      sum += w[d] * e * e;
      P[i] = (float)(2.0 * scale * w[d] * e); /* dloss/dP, for the gradient */
    }
  for (int i = 0; i < Ds; i++)
    for (int d = 0; d < Dt; d++) {
      double x = Xd[(size_t)i * Dt + d];
      ridge += w[d] * x * x;
    }
  if (g) {
    /* dloss/dS = dloss/dP X' at the fitted X, plus the ridge's share
    ** through mu: dloss/dmu = ridge, dmu/dS = rho 2 S / Ds */
    tkern_sgemm(0, 1, (int)R, Ds, Dt, P, Dt, X, Dt, 0, g, Ds);
    float f = (float)(scale * ridge * mp->rho * 2.0 / Ds);
    for (size_t i = 0; i < R * (size_t)Ds; i++) g[i] += f * S[i];
  }
  return sum + mu * ridge;
}

double train_teach_map_loss(train_net *s, const train_net *t, train_teach_map *mp,
                            const float *w, double scale, int want_grad) {
  int Dt = mp->Dt, ts = s->t, tt = t->t;
  size_t R = (size_t)s->b * ts;
  if (want_grad) ensure_aux(s);
  map_scratch(mp, R);
  double sum = 0;
  for (int k = 0; k < 2 * mp->Ls; k++) {
    int l = k / 2, j = mp->pair[k];
    const float *S = k % 2 ? s->L[l].out : s->L[l].mid;
    const float *Ht = j % 2 ? t->L[j / 2].out : t->L[j / 2].mid;
    for (int b = 0; b < s->b; b++) /* the teacher's rows on the student's positions */
      for (int p = 0; p < ts; p++)
        memcpy(mp->H + ((size_t)b * ts + p) * Dt, Ht + ((size_t)b * tt + p + mp->shift) * Dt,
               (size_t)Dt * sizeof(float));
    float *g = want_grad ? (k % 2 ? s->aux_out[l] : s->aux_mid[l]) : NULL;
    sum += map_state(mp, S, R, w + (size_t)j * Dt, g, scale);
  }
  s->aux_on = want_grad;
  return scale * sum;
}
