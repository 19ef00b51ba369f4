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

/* sum of (a - b)^2 over n entries; g (may be NULL) gets f * 2 (a - b) */
static double sq_dist(const float *a, const float *b, size_t n, float *g, double f) {
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    double d = (double)a[i] - (double)b[i];
    sum += d * d;
    if (g) g[i] = (float)(2.0 * f * d);
  }
  return sum;
}

double train_teach_loss(train_net *s, const train_net *t, double scale, int want_grad) {
  int L = s->m->cfg.n_layers;
  size_t RD = (size_t)s->b * s->t * s->m->cfg.d_model;
  if (want_grad) ensure_aux(s);
  double sum = 0;
  for (int l = 0; l < L; l++) {
    sum += sq_dist(s->L[l].mid, t->L[l].mid, RD, want_grad ? s->aux_mid[l] : NULL, scale);
    sum += sq_dist(s->L[l].out, t->L[l].out, RD, want_grad ? s->aux_out[l] : NULL, scale);
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
