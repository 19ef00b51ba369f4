/*
** tloop.c -- the training loop, and the trials and compare around it (see
** tloop.h).
**
** One loop serves both: every epoch draws the order of the training
** samples from (seed, epoch) and seeds every arm's dropout stream from
** (its seed, epoch), then each batch is encoded for and stepped by every
** arm in turn (the same samples, permutations and masks for every arm: a
** pure function of seed, epoch and sample).  What an experiment does
** between steps is its hooks': a trial evaluates, logs and checkpoints
** after every epoch (so a resumed run, which starts at an epoch boundary,
** draws exactly what an uninterrupted one would); compare evaluates every
** --eval-every steps.  Data parallelism (mpirun) lives in train_arm_step
** (tarm.c), the one place that sees a batch's gradient: every rank runs
** this loop over the same batches and evaluates the same samples (the
** results are the same everywhere, so every rank stops where rank 0
** does); only rank 0 writes files (rank 0 alone has --out: main.c).
*/
#include "tloop.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rmem.h"
#include "tarm.h"
#include "tlog.h"
#include "tresume.h"

/* What the loop calls: after every step (loss[k]: arm k's mean loss per
** answer token), and after every epoch (epoch: the number completed;
** mean_loss: arm 0's over the epoch's steps; *stop ends the loop).  Each
** returns 1 to go on, or 0 (err set) to end it with an error. */
typedef struct hooks {
  int (*step)(void *ctx, long step, const double *loss, rasp_error *err);
  int (*epoch)(void *ctx, int epoch, long step, double mean_loss, int *stop,
               rasp_error *err);
  void *ctx;
} hooks;

/* ---- progress ----------------------------------------------------------- */

typedef struct progress {
  int on, tty;
  long total, step0; /* steps the run will take at most; where it started */
  double t0, last;   /* seconds: at the start, at the last line */
  double tokens;     /* model positions stepped since the start */
} progress;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress_start(progress *p, const train_opts *o, long step) {
  memset(p, 0, sizeof *p);
  const train_transport *t = train_get_transport();
  p->on = !o->quiet && (!t || t->rank == 0);
  p->tty = isatty(2);
  long total = train_steps_per_epoch(o) * o->epochs;
  p->total = o->max_steps && o->max_steps < total ? o->max_steps : total;
  p->step0 = step;
  p->t0 = p->last = now_s();
  if (!p->on) return;
  train_sched sc = train_sched_of(o);
  fprintf(stderr, "rasp-train: recipe: %s, lr %g", o->sgd ? "SGD" : "AdamW", (double)o->lr);
  if (o->warmup) fprintf(stderr, ", linear warm-up over %ld steps", o->warmup);
  if (o->decay)
    fprintf(stderr, ", %s decay to %g x lr by step %ld",
            o->decay == TRAIN_DECAY_COSINE ? "cosine" : "linear", (double)o->lr_floor, sc.total);
  if (o->clip > 0) fprintf(stderr, ", gradient norm clipped to %g", (double)o->clip);
  fprintf(stderr, ", weight decay %g, dropout %g, batch %d; at most %ld steps%s\n",
          (double)o->wd, (double)o->dropout, o->batch, p->total,
          o->narms ? " (arms may set their own)" : "");
}

/* After step `step`: a line when it is time (every 2 s on a terminal;
** every --progress steps, or 30 s, in a log). */
static void progress_step(progress *p, const train_opts *o, long step, const train_arm *arms,
                          const double *loss, int n) {
  if (!p->on) return;
  for (int k = 0; k < n; k++)
    if (!arms[k].stopped) p->tokens += (double)arms[k].batch.rows * arms[k].T;
  double t = now_s();
  int due = p->tty ? t - p->last >= 2 : o->progress ? step % o->progress == 0 : t - p->last >= 30;
  if (!due && step < p->total) return;
  p->last = t;
  double el = t - p->t0, rate = el > 0 ? (double)(step - p->step0) / el : 0;
  double left = rate > 0 ? (double)(p->total - step) / rate : 0;
  char losses[256];
  size_t at = 0;
  for (int k = 0; k < n && at < sizeof losses - 16; k++)
    at += (size_t)snprintf(losses + at, sizeof losses - at, "%s%.4g", k ? "/" : "", loss[k]);
  char teach[64] = "";
  for (int k = 0; k < n; k++)
    if (arms[k].teacher) {
      snprintf(teach, sizeof teach, ", teacher loss %.4g", arms[k].teach_loss);
      break;
    }
  fprintf(stderr, "%sstep %ld/%ld (%.0f%%), %.0f tokens/s, %.0fs elapsed, about %.0fs left, "
                  "lr %.3g, train loss %s%s%s",
          p->tty ? "\r" : "", step, p->total, 100.0 * (double)step / (double)p->total,
          el > 0 ? p->tokens / el : 0, el, left, (double)arms[0].opt.lr, losses, teach,
          p->tty ? "\033[K" : "\n");
}

/* Clears a terminal's status line before other output (which the next
** status line follows). */
static void status_clear(void) {
  if (isatty(2)) fputs("\r\033[K", stderr);
}

/* Trains the n arms from epoch epoch0, whose first `skip` batches were
** taken already (*step steps taken in all), until o->epochs epochs,
** o->max_steps steps, a hook's stop or every arm stopped.  o gives
** the schedule (--batch, --epochs, --max-steps) and the seed of the order.
** An arm whose step found a non-finite loss, gradient or weight
** (train_arm_step) is stopped: its ->stopped is that step, it takes no
** more steps and its loss is NAN from then on; when every arm has
** stopped, the epoch's hook runs and the loop ends.  1, or 0 with err (a
** hook's). */
static int loop(train_arm *arms, int n, const train_opts *o, const train_dataset *tr,
                int epoch0, int skip, long *step, const hooks *h, rasp_error *err) {
  long max = o->max_steps ? o->max_steps : 1L << 40;
  progress pg;
  progress_start(&pg, o, *step);
  int *ord = raspM_alloc((size_t)tr->n * sizeof *ord);
  double *loss = raspM_alloc((size_t)n * sizeof *loss);
  int ok = 1, stop = 0, live = 1;
  for (int e = epoch0; ok && !stop && live && e < o->epochs && *step < max; e++) {
    train_data_order(ord, tr->n, o->seed, e);
    /* dropout masks from a stream tied to the epoch */
    for (int k = 0; k < n; k++)
      raspT_rng_seed(&arms[k].net.rng, arms[k].o->seed, 0xd40000 + (uint64_t)e);
    double sum = 0;
    int nb = 0, first = 0;
    if (e == epoch0 && skip > 0) {
      /* resumed inside the epoch: its first `skip` batches were taken, and
      ** each drew one dropout key from every live arm's stream */
      first = skip * o->batch;
      for (int k = 0; k < n; k++)
        for (int j = 0; j < skip && !arms[k].stopped; j++) raspT_rng_next(&arms[k].net.rng);
    }
    for (int s0 = first; ok && live && s0 < tr->n && *step < max; s0 += o->batch) {
      int b = tr->n - s0 < o->batch ? tr->n - s0 : o->batch;
      live = 0;
      for (int k = 0; k < n; k++) {
        train_arm *a = &arms[k];
        loss[k] = NAN;
        if (a->stopped) continue;
        train_arm_encode(a, tr, ord + s0, b, e);
        loss[k] = train_arm_step(a, b);
        if (a->diverged) a->stopped = *step + 1;
        else live++;
      }
      sum += loss[0];
      nb++;
      ++*step;
      progress_step(&pg, o, *step, arms, loss, n);
      if (h->step) ok = h->step(h->ctx, *step, loss, err);
    }
    status_clear();
    if (ok && h->epoch) ok = h->epoch(h->ctx, e + 1, *step, nb ? sum / nb : 0, &stop, err);
  }
  raspM_free(ord);
  raspM_free(loss);
  return ok;
}

/* The lines of `arm` (an options text) that `base` lacks, joined by spaces
** into buf: what an arm sets on top of the command line. */
static void options_added(const char *base, const char *arm, char *buf, size_t size) {
  size_t at = 0;
  buf[0] = '\0';
  for (const char *l = arm; l && *l;) {
    const char *nl = strchr(l, '\n');
    size_t n = nl ? (size_t)(nl - l) : strlen(l);
    int found = 0;
    for (const char *b = base; b && *b && !found;) {
      const char *bn = strchr(b, '\n');
      size_t m = bn ? (size_t)(bn - b) : strlen(b);
      found = m == n && !strncmp(b, l, n);
      b = bn ? bn + 1 : NULL;
    }
    if (!found && *l != '#' && at + n + 2 < size) {
      at += (size_t)snprintf(buf + at, size - at, "%s%.*s", at ? " " : "", (int)n, l);
    }
    l = nl ? nl + 1 : NULL;
  }
}

/* ---- trials ------------------------------------------------------------- */

typedef struct trial_result {
  double val_seq, val_loss, train_loss;
  int epochs;
  long stopped;         /* the step a non-finite value stopped it at, or 0 */
  const char *diverged; /* what was not finite */
} trial_result;

typedef struct trial {
  const train_opts *o; /* the command line's */
  int k;
  train_arm a;         /* its options: the trial's seed */
  train_resume r;
  const train_dataset *tr, *te;
  train_metrics mv, mt; /* the last evaluation (validation, training) */
  int evaluated;
  struct timespec w0;
  trial_result *res;
} trial;

static void csv_header(train_log *f, const train_opts *o) {
  train_log_printf(f, "trial,epoch,step,train_loss,train_eval_loss,val_loss,val_seq_acc,"
                      "val_tok_acc,val_lead_acc");
  for (int k = 0; k < train_answer_len(o) && k < 64; k++)
    train_log_printf(f, ",val_pos%d_acc", k);
  train_log_printf(f, ",seconds,dist_compiled,program_acc,stopped\n");
}

/* The row's answer positions (at most 64) and its last four fields
** (stopped: the step at which a non-finite value stopped the trial, empty
** while it trains). */
static void csv_tail(trial *t, const char *secs) {
  char dist[32], prog[32], stop[32] = "";
  for (int k = 0; k < train_answer_len(t->o) && k < 64; k++)
    train_log_printf(&t->r.csv, ",%.6g", t->mv.pos_acc[k]);
  if (t->a.stopped) snprintf(stop, sizeof stop, "%ld", t->a.stopped);
  train_log_printf(&t->r.csv, ",%s,%s,%s,%s\n", secs,
                   train_dist_text(&t->a, dist, sizeof dist),
                   train_prog_text(&t->mv, prog, sizeof prog), stop);
}

static void print_distance(trial *t, const char *when) {
  char dist[32], prog[32];
  if (t->a.ref)
    fprintf(stderr, "trial %d %s: L2 distance from the compiled point %s%s%s\n", t->k, when,
            train_dist_text(&t->a, dist, sizeof dist), t->a.probe.on ? ", program heads " : "",
            train_prog_text(&t->mv, prog, sizeof prog));
}

/* Before the first step: the initialisation's accuracies (for a compiled
** model, what `rasp compile --check` measured).  1, or 0 with err. */
static int trial_start(trial *t, rasp_error *err) {
  train_arm_eval(&t->a, t->te, t->te->n, -1, &t->mv);
  train_arm_eval(&t->a, t->tr, t->te->n, 0, &t->mt);
  fprintf(stderr, "trial %d before training: val %.4f seq %.3f lead %.3f pos", t->k,
          t->mv.loss, t->mv.seq_acc, t->mv.lead_acc);
  for (int k = 0; k < train_answer_len(t->o) && k < 64; k++)
    fprintf(stderr, " %.3f", t->mv.pos_acc[k]);
  fprintf(stderr, "\n");
  print_distance(t, "before training");
  int ok = 1;
  if (t->r.on) {
    train_log_printf(&t->r.csv, "%d,0,0,,%.6g,%.6g,%.6g,%.6g,%.6g", t->k, t->mt.loss,
                     t->mv.loss, t->mv.seq_acc, t->mv.tok_acc, t->mv.lead_acc);
    csv_tail(t, "0");
    ok = train_log_commit(&t->r.csv, t->r.csv_path, err);
  }
  memset(&t->mv, 0, sizeof t->mv);
  memset(&t->mt, 0, sizeof t->mt);
  return ok;
}

/* After every epoch: evaluate, log, decide whether to stop, checkpoint.
** A hook: 1, or 0 with err. */
static int trial_epoch(void *ctx, int epoch, long step, double mean_loss, int *stop,
                       rasp_error *err) {
  trial *t = ctx;
  const train_opts *o = t->o;
  train_ckpt_state *st = &t->r.st;
  st->epoch = epoch;
  train_arm_eval(&t->a, t->te, t->te->n, -1, &t->mv);
  train_arm_eval(&t->a, t->tr, t->te->n, epoch - 1, &t->mt);
  t->evaluated = 1;
  struct timespec w1;
  clock_gettime(CLOCK_MONOTONIC, &w1);
  double secs = (double)(w1.tv_sec - t->w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - t->w0.tv_nsec);
  if (t->mv.loss < st->best_val) st->best_val = t->mv.loss;
  t->res->train_loss = t->mt.loss;
  if (t->r.on) {
    char s[32];
    train_log_printf(&t->r.csv, "%d,%d,%ld,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g", t->k, epoch, step,
                     mean_loss, t->mt.loss, t->mv.loss, t->mv.seq_acc, t->mv.tok_acc,
                     t->mv.lead_acc);
    snprintf(s, sizeof s, "%.2f", secs);
    csv_tail(t, s);
    if (!train_log_commit(&t->r.csv, t->r.csv_path, err)) return 0;
  }
  fprintf(stderr, "trial %d epoch %d step %ld: train %.4f val %.4f seq %.3f "
                  "lead %.3f (%.1fs)\n", t->k, epoch, step, mean_loss, t->mv.loss,
          t->mv.seq_acc, t->mv.lead_acc, secs);
  char when[32];
  snprintf(when, sizeof when, "epoch %d", epoch);
  print_distance(t, when);
  if (t->mv.loss < o->stop_loss) st->done = 1;
  if (o->max_steps && step >= o->max_steps) st->done = 1;
  if (epoch >= o->epochs) st->done = 1;
  if (t->a.stopped) {
    /* no checkpoint of a stopped epoch: --resume replays it from the last
    ** one and stops at the same step, as an uninterrupted run does */
    st->done = 1;
    t->res->stopped = t->a.stopped;
    t->res->diverged = t->a.diverged;
    fprintf(stderr, "trial %d stopped at step %ld (epoch %d): its %s %s not finite; %s\n",
            t->k, t->a.stopped, epoch, t->a.diverged,
            strcmp(t->a.diverged, "weights") ? "was" : "were",
            strcmp(t->a.diverged, "weights") ? "the step was not taken"
                                             : "the weights are those after the step");
  }
  *stop = st->done;
  return t->r.on && !t->a.stopped ? train_resume_save(&t->r, &t->a.m, &t->a.opt, err) : 1;
}

/* Trial k, its result into *res.  1, or 0 with err. */
static int run_trial(const train_opts *o, int k, const train_dataset *tr,
                     const train_dataset *te, trial_result *res, rasp_error *err) {
  trial t;
  memset(&t, 0, sizeof t);
  train_opts ot = *o;
  ot.seed = o->seed + (uint64_t)k * 7919;
  t.o = o;
  t.k = k;
  t.tr = tr;
  t.te = te;
  t.res = res;
  if (!train_arm_init(&t.a, &ot, k, !strcmp(o->init, "random"), NULL, tr, err)) return 0;
  if (!train_arm_probe(&t.a, t.a.units, t.a.nunits, te, te->n, err) ||
      !train_resume_open(&t.r, o, k, t.a.init_fnv, &t.a.m, &t.a.opt, err)) {
    train_arm_free(&t.a);
    return 0;
  }
  if (t.r.on && !t.r.csv.len) csv_header(&t.r.csv, o);
  char who[32], extra[160];
  snprintf(who, sizeof who, "trial %d", k);
  snprintf(extra, sizeof extra, "%s, --seed %llu",
           strcmp(o->init, "random") ? "from --init" : "random weights",
           (unsigned long long)ot.seed);
  if (!train_config_ran(who, &t.a.m, t.a.prefix, extra, err)) {
    train_resume_free(&t.r);
    train_arm_free(&t.a);
    return 0;
  }
  /* data-parallel ranks (tarm.h) start where rank 0 set up or resumed */
  train_arm_share(&t.a, &t.r.st, sizeof t.r.st);
  clock_gettime(CLOCK_MONOTONIC, &t.w0);
  train_ckpt_state *st = &t.r.st;
  int ok = 1;
  if (!st->epoch && !st->done) ok = trial_start(&t, err);
  if (ok && !st->done) {
    hooks h = {NULL, trial_epoch, &t};
    ok = loop(&t.a, 1, &ot, tr, st->epoch, 0, &st->step, &h, err);
  }
  if (ok && st->done && st->step && !t.evaluated) {
    /* finished earlier (resumed a completed run): evaluate once */
    train_arm_eval(&t.a, te, te->n, -1, &t.mv);
    train_arm_eval(&t.a, tr, te->n, 0, &t.mt);
    res->train_loss = t.mt.loss;
  }
  res->val_seq = t.mv.seq_acc;
  res->val_loss = t.mv.loss;
  res->epochs = st->epoch;
  train_resume_free(&t.r);
  train_arm_free(&t.a);
  return ok;
}

int train_trials(const train_opts *o, const train_dataset *tr, const train_dataset *te,
                 rasp_error *err) {
  int ok = 0, failed = 0, not_diverged = 0, nstopped = 0;
  for (int k = 0; k < o->trials; k++) {
    trial_result r = {0};
    if (!run_trial(o, k, tr, te, &r, err)) return 0;
    /* success: >= 95% teacher-forced sequence accuracy.  A failed trial
    ** "overfits" when its validation loss has diverged from its training
    ** loss: val > 2 * train + 0.05 (our reading of the paper's second
    ** column, which reports failed trials that have NOT diverged). */
    int success = r.val_seq >= 0.95 && !r.stopped;
    int diverged = r.val_loss > 2 * r.train_loss + 0.05;
    ok += success;
    nstopped += r.stopped != 0;
    if (!success && !r.stopped) {
      failed++;
      not_diverged += !diverged;
    }
    printf("trial %d: epochs %d, val seq acc %.4f, val loss %.4f, train loss "
           "%.4f: ", k, r.epochs, r.val_seq, r.val_loss, r.train_loss);
    if (r.stopped) printf("stopped at step %ld (non-finite %s)\n", r.stopped, r.diverged);
    else printf("%s\n", success ? "success" : diverged ? "failed (overfit)" : "failed");
  }
  printf("summary: %d trials, %.0f%% reached 95%% sequence accuracy", o->trials,
         100.0 * ok / o->trials);
  if (nstopped) printf("; %d stopped (non-finite)", nstopped);
  if (failed)
    printf("; of %d %sfailed, %.0f%% did not diverge (%.0f%% overfit)", failed,
           nstopped ? "other " : "", 100.0 * not_diverged / failed,
           100.0 * (failed - not_diverged) / failed);
  printf("\n");
  return 1;
}

/* ---- compare ------------------------------------------------------------ */

/* The gnuplot script for compare.csv: loss, leading-node and sequence
** accuracy against steps, one line per arm.  It names no file: the CSV and
** the PNG are its arguments (gnuplot -c compare.gp CSV PNG, PNG '-' for the
** standard output; by default compare.csv and compare.png beside it), so no
** file name is ever gnuplot code, whatever --out holds.  Rows cycle
** through the n arms after the header: arm k is every n::(k+1).  Arm names
** are letters, digits, '_' and '-' (main.c), safe in gnuplot strings.
** 1, or 0 with err. */
/* compare.gp: the three panels of compare.csv, under a title with the run's
** settings (a plot passed around without its directory still says what
** ran), the legend below the panels so that it covers no line. */
static int write_compare_gp(const char *gp, const train_opts *o, int n, char names[][33],
                            rasp_error *err) {
  train_log g = {0};
  char recipe[160] = "";
  if (o->warmup) snprintf(recipe, sizeof recipe, ", warm-up %ld", o->warmup);
  if (o->decay)
    snprintf(recipe + strlen(recipe), sizeof recipe - strlen(recipe), ", %s decay",
             o->decay == TRAIN_DECAY_COSINE ? "cosine" : "linear");
  if (o->clip > 0)
    snprintf(recipe + strlen(recipe), sizeof recipe - strlen(recipe), ", clip %g", (double)o->clip);
  train_log_printf(&g,
                   "# gnuplot -c compare.gp [CSV [PNG]]\n"
                   "csv = ARGC >= 1 ? ARG1 : 'compare.csv'\n"
                   "png = ARGC >= 2 ? ARG2 : 'compare.png'\n"
                   "set terminal pngcairo size 1200,400 font ',10'\n"
                   "if (png eq '-') { set output } else { set output png }\n"
                   "set datafile separator ','\n"
                   "set multiplot layout 1,3 title 'D %d, M %d, |V| %d, %s; %d training "
                   "draws, %d test questions (held out); batch %d, lr %g%s, weight decay %g, "
                   "seed %llu'\n"
                   "set key below\n"
                   "set xlabel 'step'\n",
                   o->task.D, o->task.M, o->task.V, o->encoder ? "encoder" : "decoder", o->ntrain,
                   o->ntest, o->batch, (double)o->lr, recipe, (double)o->wd,
                   (unsigned long long)o->seed);
  static const char *titles[] = {"validation loss (answer tokens)", "leading-node accuracy",
                                 "other answer tokens (mean accuracy)"};
  static const int cols[] = {4, 5, 8};
  for (int p = 0; p < 3; p++) {
    train_log_printf(&g, "set title '%s'\n", titles[p]);
    if (p == 0) train_log_printf(&g, "set logscale y\n");
    if (p == 1) train_log_printf(&g, "unset logscale y\nset yrange [0:1.05]\n");
    for (int k = 0; k < n; k++)
      train_log_printf(&g, "%s every %d::%d using 1:%d with lines lw 2 title '%s'%s",
                       k ? "''" : "plot csv", n, k + 1, cols[p], names[k],
                       k + 1 < n ? ", " : "\n");
  }
  train_log_printf(&g, "unset multiplot\n");
  int ok = train_log_commit(&g, gp, err);
  train_log_free(&g);
  return ok;
}

typedef struct compare {
  const train_opts *o;
  int n;
  char names[TRAIN_MAX_ARMS][33];
  train_arm *arms;
  const train_dataset *te;
  int nev, every;
  long max;
  train_log csv;
  char csv_path[4300];
  int writes; /* 0: a data-parallel rank other than 0 */
  train_compare_ckpt ck; /* --out: every arm saved after every evaluation */
  /* each arm's last evaluation and its step; a stopped arm's weights do
  ** not change, so its first evaluation after the stop serves for the
  ** rest (cached) */
  train_metrics last[TRAIN_MAX_ARMS];
  long last_step[TRAIN_MAX_ARMS];
  int cached[TRAIN_MAX_ARMS];
} compare;

/* Evaluates arm k at step and appends its row; loss: its last step's
** (NULL before the first; none after the arm stopped).  The last field is
** the step at which the arm was stopped, empty while it trains. */
static void compare_row(compare *c, int k, long step, const double *loss) {
  const train_opts *o = c->o;
  int A = train_answer_len(o), lead = train_lead_index(o);
  train_arm *a = &c->arms[k];
  train_metrics mv;
  if (c->cached[k]) mv = c->last[k];
  else train_arm_eval(a, c->te, c->nev, -1, &mv);
  c->last[k] = mv;
  c->last_step[k] = step;
  c->cached[k] = a->stopped != 0;
  double oth = 0;
  for (int q = 0; q < A && q < 64; q++)
    if (q != lead) oth += mv.pos_acc[q];
  oth = A > 1 ? oth / (A - 1) : 0;
  train_log_printf(&c->csv, "%ld,%s,", step, c->names[k]);
  if (loss && (!a->stopped || a->stopped == step)) train_log_printf(&c->csv, "%.6g", loss[k]);
  train_log_printf(&c->csv, ",%.6g,%.6g,%.6g,%.6g,%.6g", mv.loss, mv.lead_acc, mv.seq_acc,
                   mv.tok_acc, oth);
  for (int q = 0; q < A && q < 64; q++) train_log_printf(&c->csv, ",%.6g", mv.pos_acc[q]);
  char dist[32], prog[32];
  train_log_printf(&c->csv, ",%s,%s,", train_dist_text(a, dist, sizeof dist),
                   train_prog_text(&mv, prog, sizeof prog));
  if (a->stopped) train_log_printf(&c->csv, "%ld", a->stopped);
  train_log_printf(&c->csv, "\n");
  status_clear();
  fprintf(stderr, "step %ld %s: val %.4f lead %.3f seq %.3f pos", step, c->names[k], mv.loss,
          mv.lead_acc, mv.seq_acc);
  for (int q = 0; q < A && q < 64; q++) fprintf(stderr, " %.3f", mv.pos_acc[q]);
  fprintf(stderr, "\n");
}

/* Arm k's weights and optimiser state as a trial's checkpoint,
** DIR/arm_NAME followed by suffix (the final model: ""; --keep-every's:
** ".stepN"), its manifest's params_fnv and opt_fnv telling two runs apart
** bit for bit.  A checkpoint already there (a resumed run saving again)
** gets the next generation.  1, or 0 with err. */
static int save_arm(compare *c, int k, long step, const char *suffix, rasp_error *err) {
  char stem[4300];
  snprintf(stem, sizeof stem, "%s/arm_%s%s", c->o->out, c->names[k], suffix);
  train_ckpt_state st = {.step = step, .best_val = c->last[k].loss, .done = !*suffix};
  long gen = train_ckpt_generation(stem, err);
  st.generation = gen > 0 ? gen : 0;
  memset(err, 0, sizeof *err);
  train_log cfg = {0};
  train_config_text(&cfg, c->arms[k].o, c->arms[k].init_fnv);
  int ok = train_ckpt_save(stem, &c->arms[k].m, &c->arms[k].opt, &st, cfg.s ? cfg.s : "", err);
  train_log_free(&cfg);
  return ok;
}

/* --keep-every (main.c allows it only with --out): every arm's model at
** this step, before the save that commits the step (a run killed between
** the two redoes the step and keeps it again).  1, or 0 with err. */
static int keep_arms(compare *c, long step, rasp_error *err) {
  if (!c->o->keep_every || step % c->o->keep_every) return 1;
  char suffix[32];
  snprintf(suffix, sizeof suffix, ".step%ld", step);
  for (int k = 0; k < c->n; k++)
    if (!save_arm(c, k, step, suffix, err)) return 0;
  return 1;
}

/* A hook: every --eval-every steps, at the last and at the step an arm
** stopped at, every arm's row.  1, or 0 with err. */
static int compare_step(void *ctx, long step, const double *loss, rasp_error *err) {
  compare *c = ctx;
  int now = 0;
  for (int k = 0; k < c->n; k++)
    if (c->arms[k].stopped == step) {
      const char *why = c->arms[k].diverged;
      int w = !strcmp(why, "weights");
      fprintf(stderr, "rasp-train: arm %s stopped at step %ld: its %s %s not finite (%s); "
                      "it takes no more steps\n", c->names[k], step, why, w ? "were" : "was",
              w ? "after the step" : "the step was not taken");
      now = 1;
    }
  if (step % c->every && step != c->max && !now) return 1;
  for (int k = 0; k < c->n; k++) compare_row(c, k, step, loss);
  if (!c->writes) return 1;
  /* the rows, then the arms at this step: a resume starts from the last
  ** committed save and keeps the rows up to its step */
  return train_log_commit(&c->csv, c->csv_path, err) && keep_arms(c, step, err) &&
         train_compare_save(&c->ck, c->o, c->arms, c->names, c->n, step, err);
}

/* The arms: the compiled model with the command line's options gives the
** random arms' architecture and the point their distances are measured
** from (and the heads their probes compare).  *made: how many arms were
** set up (to free, whether or not all were).  1, or 0 with err. */
static int compare_arms(compare *c, const train_dataset *tr, int *made, rasp_error *err) {
  const train_opts *o = c->o;
  train_arm tc;
  *made = 0;
  if (!train_arm_init(&tc, o, 0, 0, NULL, tr, err)) return 0;
  int ok = 1;
  for (*made = 0; *made < c->n; ++*made) {
    int k = *made, base = o->narms ? o->arms[k].base : k ? TRAIN_ARM_COMPILED : TRAIN_ARM_RANDOM;
    const train_opts *ao = o->narms ? o->arms[k].o : o;
    train_arm *a = &c->arms[k];
    if (!train_arm_init(a, ao, 0, base != TRAIN_ARM_COMPILED,
                        base == TRAIN_ARM_RANDOM ? &tc.m.cfg : NULL, tr, err)) {
      ok = 0;
      break;
    }
    if (base == TRAIN_ARM_RANDOM && a->m.nparams == tc.m.nparams) {
      /* its heads against the compiled ones: the chance baseline */
      a->ref = raspM_alloc((tc.m.nparams ? tc.m.nparams : 1) * sizeof(float));
      memcpy(a->ref, tc.ref, tc.m.nparams * sizeof(float));
      ok = train_arm_probe(a, tc.units, tc.nunits, c->te, c->nev, err);
    } else {
      ok = train_arm_probe(a, a->units, a->nunits, c->te, c->nev, err);
    }
    if (ok) {
      static const char *bases[] = {"the compiled model (--init)",
                                    "random weights of the compiled architecture",
                                    "random weights of the command line's architecture"};
      char who[64], extra[2048], added[1800];
      options_added(o->cmdline, ao->cmdline, added, sizeof added);
      snprintf(who, sizeof who, "arm %s", c->names[k]);
      snprintf(extra, sizeof extra, "from %s%s%s", bases[base], *added ? "; on top of the "
               "command line: " : "", added);
      ok = train_config_ran(who, &a->m, a->prefix, extra, err);
    }
    if (!ok) {
      ++*made;
      break;
    }
  }
  train_arm_free(&tc);
  return ok;
}

int train_compare(const train_opts *o, const train_dataset *tr, const train_dataset *te,
                  rasp_error *err) {
  compare c;
  memset(&c, 0, sizeof c);
  c.o = o;
  c.n = o->narms ? o->narms : 2;
  for (int k = 0; k < c.n; k++)
    snprintf(c.names[k], sizeof c.names[k], "%s",
             o->narms ? o->arms[k].name : k ? "compiled" : "random");
  c.te = te;
  c.nev = te->n < 500 ? te->n : 500;
  c.every = o->eval_every ? o->eval_every : 10;
  c.max = o->max_steps ? o->max_steps : 1L << 40;
  c.writes = !train_get_transport() || train_get_transport()->rank == 0;
  c.arms = raspM_alloc((size_t)c.n * sizeof *c.arms);
  memset(c.arms, 0, (size_t)c.n * sizeof *c.arms);
  int made = 0;
  int ok = compare_arms(&c, tr, &made, err);
  const char *dir = o->out ? o->out : ".";
  /* gnuplot reads a file name that starts with '<' as a shell command:
  ** relative paths get "./" in front */
  const char *dot = dir[0] == '/' ? "" : "./";
  char pngp[4300], gp[4300];
  snprintf(c.csv_path, sizeof c.csv_path, "%s%s/compare.csv", dot, dir);
  snprintf(pngp, sizeof pngp, "%s%s/compare.png", dot, dir);
  snprintf(gp, sizeof gp, "%s%s/compare.gp", dot, dir);
  long step = 0;
  /* --resume: rank 0 loads the last committed save; every rank then
  ** starts from rank 0's arms and step */
  if (ok && c.writes) ok = train_compare_resume(&c.ck, o, c.arms, c.names, c.n, &step, err);
  for (int k = 0; ok && k < c.n; k++)
    train_arm_share(&c.arms[k], k ? NULL : &step, k ? 0 : sizeof step);
  if (ok && step) {
    train_log_resume(&c.csv, c.csv_path, 0, step);
    fprintf(stderr, "rasp-train: compare resumed at step %ld\n", step);
    for (int k = 0; k < c.n; k++) c.last_step[k] = -1; /* no row yet (summary below) */
  } else if (ok) {
    int A = train_answer_len(o);
    train_log_printf(&c.csv, "step,init,train_loss,val_loss,val_lead_acc,val_seq_acc,"
                             "val_tok_acc,val_other_acc");
    for (int k = 0; k < A && k < 64; k++) train_log_printf(&c.csv, ",val_pos%d_acc", k);
    train_log_printf(&c.csv, ",dist_compiled,program_acc,stopped\n");
    for (int k = 0; k < c.n; k++) compare_row(&c, k, 0, NULL);
  }
  if (ok && c.writes)
    ok = train_log_commit(&c.csv, c.csv_path, err) && write_compare_gp(gp, o, c.n, c.names, err);
  if (ok) {
    hooks h = {compare_step, NULL, &c};
    long per_epoch = train_steps_per_epoch(o);
    ok = loop(c.arms, c.n, o, tr, (int)(step / per_epoch), (int)(step % per_epoch), &step, &h,
              err);
  }
  for (int k = 0; ok && k < c.n; k++)
    if (c.last_step[k] < 0) { /* resumed with nothing left to run: the summary's row */
      train_arm_eval(&c.arms[k], c.te, c.nev, -1, &c.last[k]);
      c.last_step[k] = step;
    }
  /* each arm's final weights and optimiser state (DIR/arm_NAME.ckpt) */
  for (int k = 0; ok && c.writes && o->out && k < c.n; k++)
    ok = save_arm(&c, k, step, "", err);
  if (ok)
    for (int k = 0; k < c.n; k++) { /* the summary: each arm's last row */
      const train_metrics *mv = &c.last[k];
      char dist[32], prog[32];
      printf("arm %s: step %ld, val loss %.6g, lead %.4f, seq %.4f", c.names[k], c.last_step[k],
             mv->loss, mv->lead_acc, mv->seq_acc);
      if (*train_dist_text(&c.arms[k], dist, sizeof dist)) printf(", distance %s", dist);
      if (*train_prog_text(mv, prog, sizeof prog)) printf(", program heads %s", prog);
      if (c.arms[k].stopped)
        printf(": stopped at step %ld (non-finite %s)", c.arms[k].stopped,
               c.arms[k].diverged);
      printf("\n");
    }
  train_log_free(&c.csv);
  for (int k = 0; k < made; k++) train_arm_free(&c.arms[k]);
  raspM_free(c.arms);
  if (!ok) return 0;
  if (!c.writes) return 1;
  /* no shell: gnuplot's arguments are a vector, and the PNG comes on its
  ** standard output into a fresh mkstemp file renamed over compare.png */
  const char *gargv[] = {"gnuplot", "-c", gp, c.csv_path, "-", NULL};
  rasp_afile png;
  rasp_error perr = {0};
  if (raspR_atomic_open(&png, pngp, &perr)) {
    if (!raspR_spawn(gargv, -1, fileno(png.f), &perr)) raspR_atomic_abort(&png);
    else raspR_atomic_commit(&png, &perr);
  }
  if (perr.set)
    fprintf(stderr, "rasp-train: no plot (%s); curves are in %s (script %s)\n", perr.msg,
            c.csv_path, gp);
  else
    fprintf(stderr, "rasp-train: wrote %s and %s\n", c.csv_path, pngp);
  return 1;
}
