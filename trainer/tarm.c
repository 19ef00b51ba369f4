/*
** tarm.c -- one model being trained (see tarm.h): set-up, step,
** evaluation, and the probe of the compiled program's heads.
**
** Evaluation runs the net in batches of its own capacity (--micro), with
** dropout off, on inputs encoded as train_batch_put does for evaluation;
** the probe's reference argmaxes are computed with the same batches, so
** they are exactly what a forward of the compiled point beside every
** evaluation would give.
**
** A step sums its micro-batches' gradients in their order, each computed
** on its own (zeroed) and added to the sum, so that ranks sharing the
** micro-batches out (mpirun, tmpi.h) can form the very same sum: rank r
** adds its micro-batches to the sum of those before it, which comes from
** rank r - 1.  A K-rank run's parameters are those of one process, bit for
** bit, for any K (tests/train_mpi.sh).  Each micro-batch's dropout stream
** is seeded from a per-step draw and its index, for the same reason.
*/
#include "tarm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmem.h"
#include "rmodel_task.h"
#include "tteach.h"
#include "tinit.h"

/* The lowest and highest logit of a compiled model over a few of the
** training sequences, as the model sees them at evaluation (BOS prepended;
** the encoder's answer masked), for the adapted readout's floor. */
static void compiled_logit_range(const rasp_model *m, const train_opts *o,
                                 const train_dataset *d, float *lo, float *hi) {
  int T = train_model_len(o, d->len) + 1, cnt = d->n < 8 ? d->n : 8;
  train_batch b;
  train_batch_init(&b, 1, T, d->len);
  float *lg = raspM_alloc((size_t)T * m->cfg.n_out * sizeof *lg);
  *lo = INFINITY;
  *hi = -INFINITY;
  rasp_error e = {0};
  for (int s = 0; s < cnt; s++) {
    train_batch_put(&b, 0, o, d, s, -1, 1, m->cfg.bos_token);
    if (!raspN_forward(m, b.in, T, lg, NULL, &e)) continue;
    for (long k = 0; k < (long)T * m->cfg.n_out; k++) {
      if (lg[k] < *lo) *lo = lg[k];
      if (lg[k] > *hi) *hi = lg[k];
    }
  }
  if (!(*lo <= *hi)) *lo = *hi = 0;
  train_batch_free(&b);
  raspM_free(lg);
}

/* A compiled --init model: the layout's heads kept for the probe (before
** adapting drops the layout), the readout adapted to the task's vocab ids
** with a floor below anything it emits, BOS prepended (a->prefix). */
static int from_compiled(train_arm *a, const train_opts *o, int trial, const train_dataset *d,
                         int vocab, int len, rasp_error *err) {
  rasp_model *m = &a->m;
  float lo, hi;
  compiled_logit_range(m, o, d, &lo, &hi);
  /* ids the compiled model never outputs: well below anything it emits */
  float floor = lo - (hi - lo) - 1.0f;
  int bos = m->cfg.bos_token;
  int nu = 0;
  rasp_layout_unit *u = raspN_layout_units(m, &nu);
  for (int k = 0; k < nu; k++)
    if (!strcmp(u[k].kind, "head") && u[k].categorical && u[k].layer >= 0)
      u[a->nunits++] = u[k];
  if (a->nunits) a->units = u;
  else raspM_free(u);
  if (!train_adapt_compiled(m, o->init, &o->task, o->encoder, vocab,
                            train_model_len(o, len), floor, err))
    return 0;
  a->prefix = bos;
  if (trial == 0)
    fprintf(stderr, "rasp-train: '%s' is compiled: BOS %d prepended, readout "
                    "mapped to %d token ids (compiled logits in [%.3g, %.3g], "
                    "floor %.3g); d_model %d, %d layers, %d heads, d_mlp %d, "
                    "%s, %s\n",
            o->init, bos, vocab, lo, hi, floor, m->cfg.d_model,
            m->cfg.n_layers, m->cfg.n_heads, m->cfg.d_mlp,
            m->cfg.layer_norm == RASPN_LN_RMS ? "pre-RMSNorm (compiled exact)"
            : m->cfg.layer_norm ? (a->exact_ln ? "pre-LN (compiled exact)"
                                                     : "pre-LN (compiled, stock layer norm)")
                                : "no layer norm",
            m->cfg.causal ? "causal" : "non-causal");
  return 1;
}

/* A trained --init model (a checkpoint) must fit the task as it is. */
static int fits_checkpoint(const rasp_model *m, const train_opts *o, int vocab, int len,
                           rasp_error *err) {
  const rasp_model_config *c = &m->cfg;
  int need = o->encoder ? vocab : vocab - 1;
  if (c->vocab_size < need || c->n_out < vocab - 1 ||
      c->max_len < train_model_len(o, len) || c->causal != !o->encoder) {
    raspR_setnopos(err, "'%s': does not fit the task (vocab_size %d, n_out "
                        "%d, max_len %d, causal %d; the task needs vocab_size "
                        ">= %d, n_out >= %d, max_len >= %d, causal %d)",
                   o->init, c->vocab_size, c->n_out, c->max_len, c->causal,
                   need, vocab - 1, train_model_len(o, len), !o->encoder);
    return 0;
  }
  return 1;
}

/* A random model: the compiled model's architecture (compare's like), or
** --arch's sized for the task. */
static int random_model(train_arm *a, const train_opts *o, int trial,
                        const rasp_model_config *like, int vocab, int len, rasp_error *err) {
  rasp_model *m = &a->m;
  if (like) {
    if (!raspN_init(m, like, err)) return 0;
    a->prefix = like->bos_token;
    train_init_params(m, o->seed * 1000003 + (uint64_t)trial);
    return 1;
  }
  rasp_model_config c = o->arch;
  c.vocab_size = vocab;
  c.n_out = vocab;
  c.max_len = len;
  c.d_head = c.d_model / c.n_heads;
  c.causal = !o->encoder;
  c.bos_token = o->task.bos ? o->task.V + RASP_SP_BOS : -1;
  if (!raspN_init(m, &c, err)) return 0;
  train_init_params(m, o->seed * 1000003 + (uint64_t)trial);
  return 1;
}

/* An --init model's starting point: widened (--widen, compiled models
** only) or masked whole, recorded as a->ref, then moved by --init-mix,
** --reinit-layers and --init-noise. */
static int start_point(train_arm *a, const train_opts *o, int trial, rasp_error *err) {
  rasp_model *m = &a->m;
  if (o->widen && a->prefix < 0) { /* only compiled models get a prefix */
    raspR_setnopos(err, "--widen: '%s' is not a compiled model", o->init);
    return 0;
  }
  if (o->widen) {
    if (!train_widen(m, o->widen, o->widen_scale, o->seed * 1000003 + (uint64_t)trial,
                    &a->mask, err))
      return 0;
    if (trial == 0)
      fprintf(stderr, "rasp-train: widened by %d: d_model %d, %d heads, "
                      "d_mlp %d\n", o->widen, m->cfg.d_model,
              m->cfg.n_heads, m->cfg.d_mlp);
  } else {
    a->mask = raspM_alloc(m->nparams ? m->nparams : 1);
    memset(a->mask, 1, m->nparams);
  }
  a->ref = raspM_alloc((m->nparams ? m->nparams : 1) * sizeof(float));
  memcpy(a->ref, m->params, m->nparams * sizeof(float));
  if (o->init_mix > 0) {
    /* (1 - A) x compiled + A x random: in float, so A = 1 gives the random
    ** weights exactly (0 * w + r = r) and A = 0 the compiled ones */
    rasp_model rm;
    if (!raspN_init(&rm, &m->cfg, err)) return 0;
    train_init_params(&rm, o->seed * 1000003 + (uint64_t)trial);
    float A = o->init_mix;
    for (size_t i = 0; i < m->nparams; i++)
      m->params[i] = (1.0f - A) * m->params[i] + A * rm.params[i];
    raspN_free(&rm);
  }
  for (const char *p = o->reinit; p && *p;) {
    int l = atoi(p);
    if (l >= m->cfg.n_layers) {
      raspR_setnopos(err, "--reinit-layers: layer %d, the model has %d", l,
                     m->cfg.n_layers);
      return 0;
    }
    train_reinit_layer(m, l, o->seed + (uint64_t)trial);
    p = strchr(p, ',');
    if (!p) break;
    p++;
  }
  if (o->init_noise > 0) train_add_noise(m, o->init_noise, o->seed + (uint64_t)trial);
  return 1;
}

/* a->m, a->prefix, a->init_fnv, and for an --init model a->ref (the
** starting point before --init-mix, --reinit-layers and --init-noise: the
** compiled point, widened by --widen: what distances are measured from),
** a->mask (its entries that came from the --init model: all but
** --widen's; and --widen's wires, tinit.h) and a->units (a compiled layout's heads, for the probe).  The
** order is tarm.h's.  1, or 0 with err. */
static int make_model(train_arm *a, const train_opts *o, int trial, int random_init,
                      const rasp_model_config *like, const train_dataset *d,
                      rasp_error *err) {
  int len = raspT_length(&o->task), vocab = o->task.V + 9;
  rasp_model *m = &a->m;
  a->prefix = -1;
  if (random_init) return random_model(a, o, trial, like, vocab, len, err);
  /* the checksum rmodel computes to check the files is the fingerprint */
  if (!raspN_load_fnv(m, o->init, &a->init_fnv, err)) return 0;
  /* a pre-LN compiled model, or a checkpoint trained from one, runs its
  ** layer norms in rmodel.c's arithmetic (tnet.h, exact_ln): kept in
  ** the layout the arm writes, which replaces the file's */
  a->exact_ln = raspN_ln_exact(m);
  if (train_is_compiled(m) ? !from_compiled(a, o, trial, d, vocab, len, err)
                           : !fits_checkpoint(m, o, vocab, len, err))
    goto fail;
  if (!start_point(a, o, trial, err)) goto fail;
  return 1;
fail:
  raspN_free(m);
  raspM_free(a->mask);
  raspM_free(a->ref);
  raspM_free(a->units);
  a->mask = NULL;
  a->ref = NULL;
  a->units = NULL;
  a->nunits = 0;
  return 0;
}

/* --teacher: the compiled model as an arm of its own (no dropout, never
** stepped).  A student of its architecture is compared entry by entry,
** any other through a fitted linear map (tteach.h), whose positions are
** the teacher's less a BOS position the student lacks.  1, or 0 with err. */
static int teacher_init(train_arm *a, int trial, const train_dataset *d, rasp_error *err) {
  const train_opts *o = a->o;
  train_opts *to = raspM_alloc(sizeof *to);
  *to = *o;
  to->init = o->teacher;
  to->teacher = NULL;
  to->widen = 0;
  to->init_mix = 0;
  to->mix_given = 0;
  to->init_noise = 0;
  to->reinit = NULL;
  to->freeze = 0;
  to->lr_rms = 0;
  to->dropout = 0;
  a->teacher_o = to;
  a->teacher = raspM_alloc(sizeof *a->teacher);
  if (!train_arm_init(a->teacher, to, trial, 0, NULL, d, err)) {
    raspM_free(a->teacher);
    a->teacher = NULL;
    return 0;
  }
  const rasp_model_config *s = &a->m.cfg, *t = &a->teacher->m.cfg;
  train_arm *ta = a->teacher;
  int same = s->d_model == t->d_model && s->n_layers == t->n_layers &&
             a->prefix == ta->prefix && a->T == ta->T;
  int shift = ta->prefix >= 0 && a->prefix < 0;
  if (!same && (a->prefix >= 0 && ta->prefix < 0)) {
    raspR_setnoposc(err, RASP_E_USAGE, "--teacher '%s': the model reads a BOS position first and "
                    "the teacher does not; a teacher's positions must be the student's or one "
                    "more (its BOS)", o->teacher);
    return 0;
  }
  if (!same && ta->T != a->T + shift) {
    raspR_setnoposc(err, RASP_E_USAGE, "--teacher '%s': the teacher reads %d positions and the "
                    "model %d%s: not the same task layout", o->teacher, ta->T, a->T,
                    shift ? " and a BOS" : "");
    return 0;
  }
  if (o->teacher_attn > 0 && (!same || s->n_heads != t->n_heads)) {
    raspR_setnoposc(err, RASP_E_USAGE, "--teacher-attn: attention patterns are compared head by "
                    "head, so the model needs the teacher's architecture (d_model %d, %d layers, "
                    "%d heads), not d_model %d, %d layers, %d heads", t->d_model, t->n_layers,
                    t->n_heads, s->d_model, s->n_layers, s->n_heads);
    return 0;
  }
  if (!same && s->n_layers < 1) {
    raspR_setnoposc(err, RASP_E_USAGE, "--teacher '%s': the model has no layer to teach",
                    o->teacher);
    return 0;
  }
  /* the loss's weights, from the teacher on training samples 0..B-1 as
  ** evaluation encodes them: the same in every run and every resume */
  int B = ta->net.B < d->n ? ta->net.B : d->n;
  train_batch eb;
  train_batch_init(&eb, B, ta->T, d->len);
  for (int j = 0; j < B; j++) train_batch_put(&eb, j, to, d, j, -1, 1, ta->prefix);
  ta->net.training = 0;
  train_forward(&ta->net, eb.in, B, ta->T);
  a->teach_w = raspM_alloc((size_t)2 * (t->n_layers ? t->n_layers : 1) * t->d_model *
                           sizeof(float));
  train_teach_weights(&ta->net, a->teach_w);
  train_batch_free(&eb);
  if (!same) {
    a->teach_map = raspM_alloc(sizeof *a->teach_map);
    train_teach_map_init(a->teach_map, s->n_layers, t->n_layers, s->d_model, t->d_model, shift);
    if (shift)
      a->teach_in = raspM_alloc((size_t)(a->net.B ? a->net.B : 1) * ta->T * sizeof(int));
  }
  return 1;
}

int train_arm_init(train_arm *a, const train_opts *o, int trial, int random_init,
                   const rasp_model_config *like, const train_dataset *d,
                   rasp_error *err) {
  memset(a, 0, sizeof *a);
  a->o = o;
  if (!make_model(a, o, trial, random_init, like, d, err)) return 0;
  /* the task in the model's layout, as `rasp compile` records it: a
  ** checkpoint given to --init or to `rasp apply --program` is then held
  ** against the task it was trained on (ttask.h), as a compiled model is.
  ** (A compiled model's own layout was dropped by adapting its readout.) */
  raspM_free(a->m.json_extra);
  a->m.json_extra = raspM_strdup("{\"trained_by\": \"rasp-train\"}");
  raspN_layout_set_task(&a->m, &o->task, o->encoder);
  if (a->exact_ln) {
    raspN_setting ln = {"construction", RASPN_SET_STR, "exact identity"};
    raspN_layout_set_object(&a->m, "layer_norm", &ln, 1);
  }
  int len = raspT_length(&o->task), T = train_model_len(o, len) + (a->prefix >= 0);
  a->T = T;
  if (!train_net_init(&a->net, &a->m, o->micro, T, o->dropout, err)) {
    raspN_free(&a->m);
    raspM_free(a->mask);
    raspM_free(a->ref);
    raspM_free(a->units);
    return 0;
  }
  train_adamw_init(&a->opt, a->m.nparams);
  a->opt.lr = o->lr;
  a->opt.wd = o->wd;
  a->opt.sgd = o->sgd;
  a->opt.momentum = o->momentum;
  a->sched = train_sched_of(o);
  if (o->lr_rms || (o->freeze && a->mask)) {
    size_t n = a->m.nparams;
    a->opt.scale = raspM_alloc((n ? n : 1) * sizeof(float));
    if (o->lr_rms) {
      /* each tensor's RMS at the compiled point (its own init for a
      ** random model), over the compiled entries */
      rasp_model view = a->m;
      if (a->ref) view.params = a->ref;
      /* the RMS of the compiled entries: not of --widen's wires (zeros) */
      unsigned char *cm = NULL;
      if (a->mask) {
        cm = raspM_alloc(n ? n : 1);
        for (size_t i = 0; i < n; i++) cm[i] = a->mask[i] == TRAIN_WIDEN_COMPILED;
      }
      train_lr_scale_rms(&view, cm, a->opt.scale);
      raspM_free(cm);
    } else {
      for (size_t i = 0; i < n; i++) a->opt.scale[i] = 1.0f;
    }
    /* the compiled entries and --widen's wires (tinit.h): the compiled
    ** dimensions then stay exactly the compiled model's */
    if (o->freeze && a->mask)
      for (size_t i = 0; i < n; i++)
        if (a->mask[i] != TRAIN_WIDEN_NEW) a->opt.scale[i] = 0.0f;
  }
  train_batch_init(&a->batch, o->batch, T, len);
  if (o->teacher && !teacher_init(a, trial, d, err)) {
    train_arm_free(a);
    return 0;
  }
  return 1;
}

long train_steps_per_epoch(const train_opts *o) {
  long n = (long)o->ntrain * (o->task.structured + 1);
  return (n + o->batch - 1) / o->batch;
}

train_sched train_sched_of(const train_opts *o) {
  /* the schedule's length: --decay-steps, else the run's */
  return (train_sched){.warmup = o->warmup, .decay = o->decay, .floor = o->lr_floor,
                       .total = o->decay_steps ? o->decay_steps
                                : o->max_steps ? o->max_steps
                                               : train_steps_per_epoch(o) * o->epochs};
}

void train_arm_free(train_arm *a) {
  if (a->teacher) {
    train_arm_free(a->teacher);
    raspM_free(a->teacher);
    a->teacher = NULL;
  }
  raspM_free(a->teacher_o);
  a->teacher_o = NULL;
  raspM_free(a->teach_w);
  a->teach_w = NULL;
  if (a->teach_map) train_teach_map_free(a->teach_map);
  raspM_free(a->teach_map);
  a->teach_map = NULL;
  raspM_free(a->teach_in);
  a->teach_in = NULL;
  train_teach_free(&a->net);
  raspM_free(a->probe.u);
  raspM_free(a->probe.ref);
  raspM_free(a->units);
  raspM_free(a->mask);
  raspM_free(a->ref);
  train_net_free(&a->net);
  train_adamw_free(&a->opt);
  raspN_free(&a->m);
  train_batch_free(&a->batch);
  raspM_free(a->gsum);
  raspM_free(a->keep);
  raspM_free(a->keep_loss);
}

/* Encodes samples s0..s0+b-1 of d for evaluation into rows 0..b-1 of eb. */
static void eval_encode(const train_arm *a, train_batch *eb, const train_dataset *d,
                        int s0, int b, int epoch) {
  for (int j = 0; j < b; j++)
    train_batch_put(eb, j, a->o, d, s0 + j, epoch, 1, a->prefix);
}

/* The argmax of each probed unit at each row of net's last forward (rows
** 0..rows-1), into out[row][unit]. */
static void probe_argmax(const train_probe *p, const train_net *net, int rows,
                         int *out) {
  size_t D = (size_t)net->m->cfg.d_model;
  for (int k = 0; k < p->n; k++) {
    const rasp_layout_unit *u = &p->u[k];
    const float *x = net->L[u->layer].mid;
    for (int r = 0; r < rows; r++) {
      const float *xr = x + (size_t)r * D + u->dim;
      int ax = 0;
      for (int j = 1; j < u->size; j++)
        if (xr[j] > xr[ax]) ax = j;
      /* a diverged model's NaN or inf is no unit value: -1 matches no
      ** reference (NaN compares false, so ax would stay 0, often right) */
      for (int j = 0; j < u->size; j++)
        if (!isfinite(xr[j])) ax = -1;
      out[(size_t)r * p->n + k] = ax;
    }
  }
}

int train_arm_probe(train_arm *a, const rasp_layout_unit *u, int n,
                    const train_dataset *d, int cnt, rasp_error *err) {
  if (!u || !n || !a->ref) return 1; /* nothing to probe: not a failure */
  if (cnt > d->n) cnt = d->n;
  train_probe *p = &a->probe;
  /* the compiled point, run once over the samples */
  rasp_model cm;
  train_net cn;
  if (!raspN_init(&cm, &a->m.cfg, err)) return 0;
  memcpy(cm.params, a->ref, a->m.nparams * sizeof(float));
  if (!train_net_init(&cn, &cm, a->net.B, a->net.T, 0.0f, err)) {
    raspN_free(&cm);
    return 0;
  }
  cn.exact_ln = a->net.exact_ln; /* (cm has no layout) */
  p->u = raspM_alloc((size_t)n * sizeof *p->u);
  memcpy(p->u, u, (size_t)n * sizeof *p->u);
  p->n = n;
  p->d = d;
  p->cnt = cnt;
  p->ref = raspM_alloc(((size_t)cnt * a->T * n + 1) * sizeof *p->ref);
  train_batch eb;
  train_batch_init(&eb, cn.B, a->T, d->len);
  cn.training = 0;
  for (int s0 = 0; s0 < cnt; s0 += cn.B) {
    int b = cnt - s0 < cn.B ? cnt - s0 : cn.B;
    eval_encode(a, &eb, d, s0, b, -1);
    train_forward(&cn, eb.in, b, a->T);
    probe_argmax(p, &cn, b * a->T, p->ref + (size_t)s0 * a->T * n);
  }
  train_batch_free(&eb);
  train_net_free(&cn);
  raspN_free(&cm);
  p->on = 1;
  return 1;
}

void train_arm_encode(train_arm *a, const train_dataset *d, const int *idx,
                      int b, int e) {
  for (int j = 0; j < b; j++)
    train_batch_put(&a->batch, j, a->o, d, idx[j], e, 0, a->prefix);
}

/* ---- the step ----------------------------------------------------------- */

static const train_transport *transport;

void train_set_transport(const train_transport *t) { transport = t; }
const train_transport *train_get_transport(void) { return transport; }

/* y += x: one float addition per entry, however the loop is vectorised, so
** the sum of a step's gradients is the same on every rank and for every K */
static void grad_add(float *restrict y, const float *restrict x, size_t n) {
#pragma omp simd
  for (size_t i = 0; i < n; i++) y[i] += x[i];
}

/* The first micro-batch of rank r of K, of n: ceil(n r / K) (rank 0 gets
** at least one whenever there is one; the last ones may get none). */
static int first_micro(int n, int r, int K) {
  return (int)(((long)n * r + K - 1) / K);
}


/* The teacher's forward pass on the micro-batch in (mb sequences of T
** tokens): the same rows, or, when it reads a BOS position the model does
** not (a->teach_in), each row after the teacher's BOS. */
static void teacher_forward(train_arm *a, const int *in, int mb, int T) {
  int tT = a->teacher->T;
  if (a->teach_in) {
    for (int q = 0; q < mb; q++) {
      a->teach_in[(size_t)q * tT] = a->teacher->prefix;
      memcpy(a->teach_in + (size_t)q * tT + 1, in + (size_t)q * T, (size_t)T * sizeof(int));
    }
    in = a->teach_in;
  }
  train_forward(&a->teacher->net, in, mb, tT);
}

/* 1 if x[0..n) are all finite. */
static int all_finite(const float *x, size_t n) {
  int ok = 1;
  for (size_t i = 0; i < n; i++) ok &= isfinite(x[i]) != 0;
  return ok;
}

double train_arm_step(train_arm *a, int b) {
  int T = a->T, B = a->net.B;
  const train_batch *bt = &a->batch;
  /* every rank encoded the whole batch: wsum needs no message */
  double wsum = 0;
  for (long i = 0; i < (long)b * T; i++) wsum += bt->w[i];
  if (wsum <= 0) return 0;
  const train_transport *t = transport && transport->size > 1 ? transport : NULL;
  int K = t ? t->size : 1, r = t ? t->rank : 0, nmb = (b + B - 1) / B;
  int lo = first_micro(nmb, r, K), hi = first_micro(nmb, r + 1, K);
  size_t n = a->m.nparams;
  if (!a->gsum) a->gsum = raspM_alloc((n ? n : 1) * sizeof(float));
  if (r > 0 && hi - lo > a->nkeep) {
    a->nkeep = hi - lo;
    a->keep = raspM_realloc(a->keep, (size_t)a->nkeep * (n ? n : 1) * sizeof(float));
    a->keep_loss = raspM_realloc(a->keep_loss, (size_t)a->nkeep * sizeof(double));
  }
  /* dropout: one draw of the epoch's stream (the loop seeds it) per step,
  ** then a stream of its own for each micro-batch, which any rank can
  ** start; the epoch's stream is put back for the next step */
  uint64_t key = raspT_rng_next(&a->net.rng);
  rasp_rng epoch_rng = a->net.rng;
  /* --teacher: lambda at this step, over the batch's b T D 2L state entries */
  double lambda = a->teacher ? train_teach_weight(a->o->teacher_weight, a->o->teacher_until,
                                                  a->opt.step + 1)
                             : 0;
  int tD = a->teach_map ? a->teacher->m.cfg.d_model : a->m.cfg.d_model; /* the targets' width */
  int nL = a->m.cfg.n_layers ? a->m.cfg.n_layers : 1;
  double tscale = lambda / ((double)b * T * tD * 2.0 * nL);
  /* --teacher-attn: its lambda, over the batch's b T H L query rows */
  double lambda_a = a->teacher && a->o->teacher_attn > 0
                        ? train_teach_weight(a->o->teacher_attn, a->o->teacher_until, a->opt.step + 1)
                        : 0;
  double acoef = lambda_a / ((double)b * T * (a->m.cfg.n_heads ? a->m.cfg.n_heads : 1) * nL);
  a->teach_loss = 0;
  a->net.training = 1;
  double loss = 0;
  for (int j = lo; j < hi; j++) {
    int s0 = j * B, mb = b - s0 < B ? b - s0 : B;
    size_t off = (size_t)s0 * T;
    raspT_rng_seed(&a->net.rng, key, (uint64_t)j);
    train_zero_grad(&a->net);
    train_forward(&a->net, bt->in + off, mb, T);
    double l = train_loss(&a->net, bt->tgt + off, bt->w + off, (float)(1.0 / wsum), 1, NULL);
    a->net.aux_on = 0;
    a->net.att_coef = 0;
    if (lambda > 0 || lambda_a > 0) {
      teacher_forward(a, bt->in + off, mb, T);
      if (a->teach_map) /* another architecture: through the fitted map (no attention term) */
        a->teach_loss += train_teach_map_loss(&a->net, &a->teacher->net, a->teach_map, a->teach_w,
                                              tscale, 1);
      if (!a->teach_map && lambda > 0)
        a->teach_loss += train_teach_loss(&a->net, &a->teacher->net, a->teach_w, tscale, 1);
      if (!a->teach_map && lambda_a > 0)
        a->teach_loss += train_teach_attn_loss(&a->net, &a->teacher->net, acoef, 1);
    }
    train_backward(&a->net);
    if (r > 0) { /* kept until the sum of micro-batches 0..lo-1 comes */
      memcpy(a->keep + (size_t)(j - lo) * n, a->net.grad, n * sizeof(float));
      a->keep_loss[j - lo] = l;
    } else if (j == 0) {
      memcpy(a->gsum, a->net.grad, n * sizeof(float));
      loss = l;
    } else {
      grad_add(a->gsum, a->net.grad, n);
      loss += l;
    }
  }
  /* Data parallelism: the gradients are summed in micro-batch order, as
  ** one process sums them (float addition is not associative: any other
  ** order would make the result depend on K).  Rank r gets the sum of
  ** micro-batches 0..lo-1 from rank r - 1, adds its own in order and
  ** passes it on; the last rank's sum goes to every rank, and every rank
  ** takes the same step from the same parameters. */
  if (t) {
    if (r > 0) {
      t->recv(r - 1, a->gsum, n * sizeof(float));
      t->recv(r - 1, &loss, sizeof loss);
      for (int k = 0; k < hi - lo; k++) {
        grad_add(a->gsum, a->keep + (size_t)k * n, n);
        loss += a->keep_loss[k];
      }
    }
    if (r < K - 1) {
      t->send(r + 1, a->gsum, n * sizeof(float));
      t->send(r + 1, &loss, sizeof loss);
    }
    t->bcast(K - 1, a->gsum, n * sizeof(float));
    t->bcast(K - 1, &loss, sizeof loss);
  }
  a->net.rng = epoch_rng;
  /* a loss or gradient that is not finite: no step (every rank has the
  ** same sum, so every rank stops the arm at the same step) */
  if (!isfinite(loss) || !all_finite(a->gsum, n)) {
    a->diverged = isfinite(loss) ? "gradient" : "loss";
    return loss / wsum;
  }
  a->gnorm = train_clip_grad(a->gsum, n, a->opt.scale, a->o->clip);
  a->opt.lr = (float)(a->o->lr * train_lr_factor(&a->sched, a->opt.step + 1));
  train_adamw_step(&a->opt, a->m.params, a->gsum, n);
  if (!all_finite(a->m.params, n)) a->diverged = "weights";
  return loss / wsum;
}

void train_arm_share(train_arm *a, void *state, size_t bytes) {
  const train_transport *t = transport && transport->size > 1 ? transport : NULL;
  if (!t) return;
  size_t n = a->m.nparams;
  t->agree((uint64_t)n, "the model's size");
  t->bcast(0, a->m.params, n * sizeof(float));
  t->bcast(0, a->opt.m, n * sizeof(float));
  t->bcast(0, a->opt.v, n * sizeof(float));
  t->bcast(0, &a->opt.step, sizeof a->opt.step);
  if (bytes) t->bcast(0, state, bytes);
}

void train_arm_eval(train_arm *a, const train_dataset *d, int limit, int epoch,
                    train_metrics *mt) {
  const train_opts *o = a->o;
  train_net *n = &a->net;
  int T = a->T, A = train_answer_len(o), B = n->B;
  int cnt = limit < d->n ? limit : d->n;
  const train_probe *pb = &a->probe;
  int probe = pb->on && pb->d == d && pb->cnt == cnt && epoch < 0;
  train_batch eb;
  train_batch_init(&eb, B, T, d->len);
  int *pred = raspM_alloc((size_t)B * T * sizeof *pred);
  int *arg = probe ? raspM_alloc((size_t)B * T * pb->n * sizeof *arg) : NULL;
  double loss = 0, ntok = 0;
  long seqok = 0, tokok = 0, posok[64] = {0}, phit = 0, ptot = 0;
  int was = n->training;
  n->training = 0;
  for (int s0 = 0; s0 < cnt; s0 += B) {
    int b = cnt - s0 < B ? cnt - s0 : B;
    eval_encode(a, &eb, d, s0, b, epoch);
    train_forward(n, eb.in, b, T);
    loss += train_loss(n, eb.tgt, eb.w, 1.0f, 0, pred);
    if (probe) {
      probe_argmax(pb, n, b * T, arg);
      const int *ref = pb->ref + (size_t)s0 * T * pb->n;
      for (int r = 0; r < b * T; r++) {
        if (a->prefix >= 0 && r % T == 0) continue; /* BOS */
        for (int k = 0; k < pb->n; k++) phit += arg[r * pb->n + k] == ref[r * pb->n + k];
        ptot += pb->n;
      }
    }
    for (int j = 0; j < b; j++) {
      int ok = 1;
      for (int i = 0; i < T; i++) {
        int r = j * T + i;
        if (eb.apos[r] < 0) continue;
        int hit = pred[r] == eb.tgt[r];
        ok &= hit;
        tokok += hit;
        ntok++;
        if (eb.apos[r] < 64) posok[eb.apos[r]] += hit;
      }
      seqok += ok;
    }
  }
  n->training = was;
  mt->loss = ntok ? loss / ntok : 0;
  mt->seq_acc = cnt ? (double)seqok / cnt : 0;
  mt->tok_acc = ntok ? tokok / ntok : 0;
  for (int k = 0; k < A && k < 64; k++) mt->pos_acc[k] = cnt ? (double)posok[k] / cnt : 0;
  mt->lead_acc = mt->pos_acc[train_lead_index(o)];
  mt->prog_acc = ptot ? (double)phit / (double)ptot : NAN;
  train_batch_free(&eb);
  raspM_free(pred);
  raspM_free(arg);
}

const char *train_dist_text(const train_arm *a, char *buf, size_t size) {
  buf[0] = 0;
  if (!a->ref) return buf;
  double s = 0;
  for (size_t i = 0; i < a->m.nparams; i++) {
    double d = (double)a->m.params[i] - a->ref[i];
    s += d * d;
  }
  snprintf(buf, size, "%.6g", sqrt(s));
  return buf;
}

const char *train_prog_text(const train_metrics *mt, char *buf, size_t size) {
  buf[0] = 0;
  if (!isnan(mt->prog_acc)) snprintf(buf, size, "%.6g", mt->prog_acc);
  return buf;
}
