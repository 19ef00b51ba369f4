/*
** tteach.c -- the teacher's auxiliary loss (see tteach.h).  A plain sum in
** double over every entry (the states are small: b T D per sublayer), and
** its gradient written where train_backward adds it.
*/
#include "tteach.h"

#include <string.h>

#include "rmem.h"

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

void train_teach_free(train_net *s) {
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
