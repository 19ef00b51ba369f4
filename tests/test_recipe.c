/*
** test_recipe.c -- the training recipe of rasp-train (trainer/tnet.h): the
** learning-rate schedule's factor at given steps against values worked
** out by hand (warm-up, cosine and linear decay to a floor, past the end),
** and gradient-norm clipping: the norm it reports, the clipped gradient,
** frozen entries left out of the norm, and one SGD step after clipping
** moving the parameters by exactly lr * the clip.
*/
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "rmem.h"
#include "tnet.h"
#include "tteach.h"

static const train_sched cosine = {.warmup = 10, .total = 110, .decay = TRAIN_DECAY_COSINE,
                                   .floor = 0.1f};

START_TEST(test_warmup) {
  /* lr/10 at step 1, rising by lr/10 a step, lr at step 10 */
  ck_assert_double_eq_tol(train_lr_factor(&cosine, 1), 0.1, 1e-12);
  ck_assert_double_eq_tol(train_lr_factor(&cosine, 5), 0.5, 1e-12);
  ck_assert_double_eq_tol(train_lr_factor(&cosine, 9), 0.9, 1e-12);
  ck_assert_double_eq_tol(train_lr_factor(&cosine, 10), 1.0, 1e-12);
  train_sched none = {.warmup = 4, .decay = TRAIN_DECAY_NONE, .total = 8, .floor = 0.5f};
  ck_assert_double_eq_tol(train_lr_factor(&none, 2), 0.5, 1e-12);
  ck_assert_double_eq(train_lr_factor(&none, 4), 1.0);
  ck_assert_double_eq(train_lr_factor(&none, 1000), 1.0);
  /* no warm-up, no decay: exactly 1, so the old runs are bit for bit */
  train_sched plain = {0};
  ck_assert_double_eq(train_lr_factor(&plain, 1), 1.0);
}
END_TEST

START_TEST(test_cosine) {
  /* p = (step - 10) / 100; 0.1 + 0.9 (1 + cos(pi p)) / 2 */
  ck_assert_double_eq_tol(train_lr_factor(&cosine, 35), 0.1 + 0.45 * (1 + sqrt(0.5)), 1e-7);
  ck_assert_double_eq_tol(train_lr_factor(&cosine, 60), 0.55, 1e-7);
  ck_assert_double_eq_tol(train_lr_factor(&cosine, 85), 0.1 + 0.45 * (1 - sqrt(0.5)), 1e-7);
  ck_assert_double_eq_tol(train_lr_factor(&cosine, 110), 0.1, 1e-7);
  ck_assert_double_eq_tol(train_lr_factor(&cosine, 5000), 0.1, 1e-7);
}
END_TEST

START_TEST(test_linear) {
  train_sched lin = cosine;
  lin.decay = TRAIN_DECAY_LINEAR;
  lin.floor = 0.0f;
  ck_assert_double_eq_tol(train_lr_factor(&lin, 35), 0.75, 1e-12);
  ck_assert_double_eq_tol(train_lr_factor(&lin, 60), 0.5, 1e-12);
  ck_assert_double_eq_tol(train_lr_factor(&lin, 110), 0.0, 1e-12);
  ck_assert_double_eq_tol(train_lr_factor(&lin, 111), 0.0, 1e-12);
  /* the factor never rises after the warm-up */
  double last = 2;
  for (long s = 10; s < 200; s++) {
    double f = train_lr_factor(&cosine, s);
    ck_assert(f <= last + 1e-15);
    last = f;
  }
}
END_TEST

START_TEST(test_clip) {
  float g[3] = {3, 4, 0};
  ck_assert_double_eq_tol(train_clip_grad(g, 3, NULL, 0), 5, 1e-12); /* off: untouched */
  ck_assert(g[0] == 3 && g[1] == 4);
  ck_assert_double_eq_tol(train_clip_grad(g, 3, NULL, 10), 5, 1e-12); /* below: untouched */
  ck_assert(g[0] == 3 && g[1] == 4);
  ck_assert_double_eq_tol(train_clip_grad(g, 3, NULL, 1), 5, 1e-12);
  ck_assert_float_eq_tol(g[0], 0.6f, 1e-7f);
  ck_assert_float_eq_tol(g[1], 0.8f, 1e-7f);
  /* a frozen entry (scale 0) is not in the norm */
  float h[3] = {3, 4, 100}, scale[3] = {1, 1, 0};
  ck_assert_double_eq_tol(train_clip_grad(h, 3, scale, 1), 5, 1e-12);
  ck_assert_float_eq_tol(h[1], 0.8f, 1e-7f);
}
END_TEST

/* A random gradient of norm far above the clip: one plain SGD step after
** clipping moves the parameters by lr * clip (L2), whatever the gradient. */
START_TEST(test_clipped_step) {
  enum { N = 1000 };
  float *p = calloc(N, sizeof *p), *g = malloc(N * sizeof *g);
  rasp_rng r;
  raspT_rng_seed(&r, 7, 0);
  for (int i = 0; i < N; i++) g[i] = (float)(train_normal(&r) * 30);
  train_adamw opt;
  train_adamw_init(&opt, N);
  opt.sgd = 1;
  opt.lr = 0.25f;
  opt.wd = 0;
  double before = train_clip_grad(g, N, NULL, 2.0);
  ck_assert(before > 100);
  train_adamw_step(&opt, p, g, N);
  double moved = 0;
  for (int i = 0; i < N; i++) moved += (double)p[i] * p[i];
  ck_assert_double_eq_tol(sqrt(moved), 0.25 * 2.0, 1e-5);
  train_adamw_free(&opt);
  free(p);
  free(g);
}
END_TEST

/* Central differences (h 1e-3) of a teacher loss against the gradient the
** backward left in s->grad, for every parameter of ms: loss(s, arg) after a
** forward of s over tok (B x T).  Each must agree within tol relative to
** max(|numeric| + |analytic|, floor); returns how many analytic gradients
** are above reach (so a check cannot pass vacuously). */
typedef double (*teach_loss_fn)(train_net *s, void *arg);
static int fd_check(rasp_model *ms, train_net *s, const int *tok, int B, int T,
                    teach_loss_fn loss, void *arg, double tol, double floor, double reach) {
  int reached = 0;
  for (size_t i = 0; i < ms->nparams; i++) {
    float save = ms->params[i], h = 1e-3f;
    ms->params[i] = save + h;
    train_forward(s, tok, B, T);
    double lp = loss(s, arg);
    ms->params[i] = save - h;
    train_forward(s, tok, B, T);
    double lm = loss(s, arg);
    ms->params[i] = save;
    double num = (lp - lm) / (2.0 * h), an = s->grad[i];
    double rel = fabs(num - an) / fmax(fabs(num) + fabs(an), floor);
    ck_assert_msg(rel < tol, "parameter %zu: analytic %g, numeric %g (rel %g)", i, an, num, rel);
    reached += fabs(an) > reach;
  }
  return reached;
}

/* the three losses' arguments for fd_check */
typedef struct teach_arg {
  train_net *t;
  float *w;
  train_teach_map *mp;
  double scale;
} teach_arg;
static double states_loss(train_net *s, void *arg) {
  teach_arg *a = arg;
  return train_teach_loss(s, a->t, a->w, a->scale, 0);
}
static double map_loss(train_net *s, void *arg) {
  teach_arg *a = arg;
  return train_teach_map_loss(s, a->t, a->mp, a->w, a->scale, 0);
}
static double attn_loss(train_net *s, void *arg) {
  teach_arg *a = arg;
  return train_teach_attn_loss(s, a->t, a->scale, 0);
}

/* The teacher loss of a student and a teacher of one architecture (2
** layers, GELU, with and without layer norm) on the same tokens: the
** gradient train_backward gives (the task loss's weights all 0, so the
** teacher's alone) against central differences of the loss itself. */
static void teach_gradcheck(int ln) {
  rasp_model_config c = {.vocab_size = 6, .max_len = 5, .d_model = 4, .n_layers = 2,
                         .n_heads = 2, .d_head = 2, .d_mlp = 5, .n_out = 6, .causal = 1,
                         .layer_norm = ln, .pos_embedding = 1, .gelu = 1, .bos_token = -1};
  rasp_model ms, mt;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&ms, &c, &err), 1);
  ck_assert_int_eq(raspN_init(&mt, &c, &err), 1);
  train_init_params(&ms, 11);
  train_init_params(&mt, 12);
  /* weights larger than the init (x5) so the states differ at every entry,
  ** small enough that float32 states leave central differences (h 1e-3)
  ** accurate */
  float up = 5;
  for (size_t i = 0; i < ms.nparams; i++) ms.params[i] *= up, mt.params[i] *= up;
  enum { B = 2, T = 5 };
  int tok[B * T] = {0, 3, 1, 5, 2, 4, 4, 1, 0, 3}, tgt[B * T] = {0};
  float w[B * T] = {0};
  train_net s, t;
  ck_assert_int_eq(train_net_init(&s, &ms, B, T, 0.0f, &err), 1);
  ck_assert_int_eq(train_net_init(&t, &mt, B, T, 0.0f, &err), 1);
  double scale = 3.0 / (B * T * c.d_model * 2.0 * c.n_layers);
  train_forward(&t, tok, B, T);
  train_zero_grad(&s);
  train_forward(&s, tok, B, T);
  train_loss(&s, tgt, w, 1.0f, 1, NULL);
  /* per-dimension weights as the trainer measures them: from the teacher */
  float *wt = raspM_alloc((size_t)2 * c.n_layers * c.d_model * sizeof *wt);
  train_teach_weights(&t, wt);
  for (int i = 0; i < 2 * c.n_layers * c.d_model; i++) ck_assert(wt[i] > 0 && wt[i] <= 1);
  double l0 = train_teach_loss(&s, &t, wt, scale, 1);
  ck_assert(l0 > 0.01);
  train_backward(&s);
  teach_arg ta = {&t, wt, NULL, scale};
  int checked = fd_check(&ms, &s, tok, B, T, states_loss, &ta, 2e-2, 1e-3, 1e-4);
  ck_assert_int_gt(checked, (int)ms.nparams / 2); /* most parameters reach the states */
  raspM_free(wt);
  train_teach_free(&s);
  train_net_free(&s);
  train_net_free(&t);
  raspN_free(&ms);
  raspN_free(&mt);
}

/* The teacher loss through a fitted linear map (tteach.h): a student of 2
** layers and width 4 (no BOS) taught by a teacher of 3 layers and width 6
** that reads a BOS position first; the gradient against central
** differences of the loss, whose map is refitted at every evaluation (so
** the check covers the envelope argument and the ridge's share). */
static void teach_map_gradcheck(int ln) {
  rasp_model_config c = {.vocab_size = 6, .max_len = 5, .d_model = 4, .n_layers = 2,
                         .n_heads = 2, .d_head = 2, .d_mlp = 5, .n_out = 6, .causal = 1,
                         .layer_norm = ln, .pos_embedding = 1, .gelu = 1, .bos_token = -1};
  rasp_model_config ct = c;
  ct.d_model = 6, ct.n_layers = 3, ct.n_heads = 3, ct.max_len = 6, ct.layer_norm = 0;
  rasp_model ms, mt;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&ms, &c, &err), 1);
  ck_assert_int_eq(raspN_init(&mt, &ct, &err), 1);
  train_init_params(&ms, 21);
  train_init_params(&mt, 22);
  for (size_t i = 0; i < ms.nparams; i++) ms.params[i] *= 5;
  for (size_t i = 0; i < mt.nparams; i++) mt.params[i] *= 5;
  enum { B = 3, T = 5 };
  int tok[B * T] = {0, 3, 1, 5, 2, 4, 4, 1, 0, 3, 2, 2, 5, 1, 0}, tgt[B * T] = {0};
  int ttok[B * (T + 1)];
  for (int b = 0; b < B; b++) { /* the teacher's input: BOS (5), then the student's */
    ttok[b * (T + 1)] = 5;
    memcpy(ttok + b * (T + 1) + 1, tok + b * T, T * sizeof(int));
  }
  float w[B * T] = {0};
  train_net s, t;
  ck_assert_int_eq(train_net_init(&s, &ms, B, T, 0.0f, &err), 1);
  ck_assert_int_eq(train_net_init(&t, &mt, B, T + 1, 0.0f, &err), 1);
  train_forward(&t, ttok, B, T + 1);
  float *wt = raspM_alloc((size_t)2 * ct.n_layers * ct.d_model * sizeof *wt);
  train_teach_weights(&t, wt);
  train_teach_map mp;
  train_teach_map_init(&mp, c.n_layers, ct.n_layers, c.d_model, ct.d_model, 1);
  ck_assert_int_eq(mp.pair[0], 1); /* round(1 * 6/4) - 1 = 2 - 1 */
  ck_assert_int_eq(mp.pair[1], 2); /* round(2 * 6/4) - 1 */
  ck_assert_int_eq(mp.pair[3], 5); /* the last meets the last */
  double scale = 3.0 / (B * T * ct.d_model * 2.0 * c.n_layers);
  train_zero_grad(&s);
  train_forward(&s, tok, B, T);
  train_loss(&s, tgt, w, 1.0f, 1, NULL);
  double l0 = train_teach_map_loss(&s, &t, &mp, wt, scale, 1);
  ck_assert(l0 > 1e-3);
  train_backward(&s);
  teach_arg ta = {&t, wt, &mp, scale};
  int checked = fd_check(&ms, &s, tok, B, T, map_loss, &ta, 3e-2, 1e-4, 1e-5);
  ck_assert_int_gt(checked, (int)ms.nparams / 3); /* not vacuous: a third reach the states */
  train_teach_map_free(&mp);
  raspM_free(wt);
  train_teach_free(&s);
  train_net_free(&s);
  train_net_free(&t);
  raspN_free(&ms);
  raspN_free(&mt);
}

/* --teacher-attn: the KL of every head's attention rows to the teacher's
** (one architecture, causal and not), its gradient against central
** differences; and the loss is 0 against the student's own patterns. */
static void teach_attn_gradcheck(int causal) {
  rasp_model_config c = {.vocab_size = 6, .max_len = 5, .d_model = 4, .n_layers = 2,
                         .n_heads = 2, .d_head = 2, .d_mlp = 5, .n_out = 6, .causal = causal,
                         .layer_norm = 1, .pos_embedding = 1, .gelu = 1, .bos_token = -1};
  rasp_model ms, mt;
  rasp_error err = {0};
  ck_assert_int_eq(raspN_init(&ms, &c, &err), 1);
  ck_assert_int_eq(raspN_init(&mt, &c, &err), 1);
  train_init_params(&ms, 31);
  train_init_params(&mt, 32);
  for (size_t i = 0; i < ms.nparams; i++) ms.params[i] *= 5, mt.params[i] *= 5;
  enum { B = 2, T = 5 };
  int tok[B * T] = {0, 3, 1, 5, 2, 4, 4, 1, 0, 3}, tgt[B * T] = {0};
  float w[B * T] = {0};
  train_net s, t;
  ck_assert_int_eq(train_net_init(&s, &ms, B, T, 0.0f, &err), 1);
  ck_assert_int_eq(train_net_init(&t, &mt, B, T, 0.0f, &err), 1);
  double coef = 2.0 / (B * T * c.n_heads * c.n_layers);
  train_forward(&t, tok, B, T);
  train_zero_grad(&s);
  train_forward(&s, tok, B, T);
  train_loss(&s, tgt, w, 1.0f, 1, NULL);
  double l0 = train_teach_attn_loss(&s, &t, coef, 1);
  ck_assert(l0 > 1e-3);
  ck_assert_double_eq_tol(train_teach_attn_loss(&s, &s, coef, 0), 0, 1e-9);
  train_teach_attn_loss(&s, &t, coef, 1);
  train_backward(&s);
  double gmax = 0; /* float32 central differences are good to a share of the largest */
  for (size_t i = 0; i < ms.nparams; i++) gmax = fmax(gmax, fabs(s.grad[i]));
  ck_assert(gmax > 1e-3);
  teach_arg ta = {&t, NULL, NULL, coef};
  int checked = fd_check(&ms, &s, tok, B, T, attn_loss, &ta, 3e-2, 1e-2 * gmax, 1e-2 * gmax);
  ck_assert_int_gt(checked, (int)ms.nparams / 4); /* q, k and what feeds them */
  train_teach_free(&s);
  train_net_free(&s);
  train_net_free(&t);
  raspN_free(&ms);
  raspN_free(&mt);
}

START_TEST(test_teach_attn_grad) { teach_attn_gradcheck(1); }
END_TEST

START_TEST(test_teach_attn_grad_bidir) { teach_attn_gradcheck(0); }
END_TEST

START_TEST(test_teach_map_grad) { teach_map_gradcheck(0); }
END_TEST

START_TEST(test_teach_map_grad_ln) { teach_map_gradcheck(1); }
END_TEST

START_TEST(test_teach_grad) { teach_gradcheck(0); }
END_TEST

START_TEST(test_teach_grad_ln) { teach_gradcheck(1); }
END_TEST

START_TEST(test_teach_weight) {
  ck_assert_double_eq(train_teach_weight(2, 0, 1), 2);
  ck_assert_double_eq(train_teach_weight(2, 0, 1000000), 2);
  ck_assert_double_eq(train_teach_weight(2, 100, 1), 2);
  ck_assert_double_eq_tol(train_teach_weight(2, 100, 51), 1, 1e-12);
  ck_assert_double_eq(train_teach_weight(2, 100, 101), 0);
  ck_assert_double_eq(train_teach_weight(2, 100, 500), 0);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("recipe");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_warmup);
  tcase_add_test(tc, test_cosine);
  tcase_add_test(tc, test_linear);
  tcase_add_test(tc, test_clip);
  tcase_add_test(tc, test_clipped_step);
  tcase_add_test(tc, test_teach_grad);
  tcase_add_test(tc, test_teach_map_grad);
  tcase_add_test(tc, test_teach_attn_grad);
  tcase_add_test(tc, test_teach_attn_grad_bidir);
  tcase_add_test(tc, test_teach_map_grad_ln);
  tcase_add_test(tc, test_teach_grad_ln);
  tcase_add_test(tc, test_teach_weight);
  suite_add_tcase(s, tc);
  return s;
}

RASP_CHECK_MAIN(make_suite())
