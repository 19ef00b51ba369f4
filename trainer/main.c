/*
** main.c -- rasp-train: trains transformers (rmodel.h architecture) on the
** path-star task, from random or compiled weights.
**
**   rasp-train [options]            train (several trials), print a summary
**   rasp-train compare [options]    random init vs --init STEM (or any
**                                   --arm list) on the same batches;
**                                   curves to CSV and PNG
**
** This file is the command line: the option table (every option, what it
** means, its range; --help prints it with the defaults read off a freshly
** defaulted train_opts, so the two cannot disagree), the parser over it
** (--opt=VALUE split first, as in every rasp command), compare's --arm
** specifications, and the wiring.  The parser's functions return the exit
** status main ends with (0, or 2 for bad usage after a message), not the
** 1/0 of the modules (topts.h); run turns a module's failure into 1.  The
** rest is in modules:
**     topts.h    the options every module reads
**     tdata.c    training and test sets, epoch order, encodings
**     tarm.c     one model: set-up from random or --init, step, evaluation
**     tloop.c    the training loop; trials and compare around it
**     tresume.c  the run directory (--out) and checkpoint policy
**     tlog.c     logs rewritten whole and atomically
**     ttask.c    an --init model's task (STEM.json) against the options
**     ttrain.c   checkpoint files, compiled initialisation, widening
**     tnet.c     forward and backward passes, optimisers
** Protocols and their measurements: doc/training.md.
*/
#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp.h"
#include "rmem.h"
#include "tdata.h"
#include "tloop.h"
#include "topts.h"
#include "tresume.h"
#include "ttask.h"

/* ---- the option table --------------------------------------------------- */

typedef enum { K_INT, K_LONG, K_U64, K_FLOAT, K_CHOICE, K_FLAG, K_STR, K_ARM } kind;

typedef struct choice {
  const char *name;
  int value;
} choice;

typedef struct optdef {
  const char *name;   /* NULL: a group heading (help) */
  const char *arg;    /* the value's placeholder; NULL for flags */
  kind k;
  size_t off;         /* the field in train_opts */
  double lo, hi;      /* numbers: the range (K_FLOAT: hi excluded if hi_open) */
  int hi_open;
  const choice *ch;   /* K_CHOICE: names and values; K_FLAG: the value set */
  int arm;            /* 1: an --arm may set it */
  const char *help;   /* what it means */
  const char *def;    /* the default as text, when the field does not say it */
} optdef;

#define F(f) offsetof(train_opts, f)
static const choice c_order[] = {{"edge", RASP_ORDER_EDGE}, {"arm", RASP_ORDER_ARM}, {0, 0}};
static const choice c_q[] = {{"start", RASP_Q_START}, {"end", RASP_Q_END}, {0, 0}};
static const choice c_answer[] = {
    {"fwd", RASP_ANS_FORWARD}, {"rev", RASP_ANS_REVERSE}, {"lead", RASP_ANS_LEAD}, {0, 0}};
static const choice c_model[] = {{"decoder", 0}, {"encoder", 1}, {0, 0}};
static const choice c_obj[] = {
    {"tf", TRAIN_OBJ_TF}, {"iar", TRAIN_OBJ_IAR}, {"nar", TRAIN_OBJ_NAR}, {0, 0}};
static const choice c_pos[] = {{"learned", 1}, {"none", 0}, {0, 0}};
static const choice c_ln[] = {{"pre", 1}, {"none", 0}, {0, 0}};
static const choice c_act[] = {{"relu", 0}, {"gelu", 1}, {0, 0}};
static const choice c_optim[] = {{"adamw", 0}, {"sgd", 1}, {0, 0}};
static const choice c_lrs[] = {{"none", 0}, {"rms", 1}, {0, 0}};
static const choice c_freeze[] = {{"none", 0}, {"compiled", 1}, {0, 0}};
static const choice v_off[] = {{"", 0}}, v_on[] = {{"", 1}};

static const optdef optdefs[] = {
    {NULL, NULL, 0, 0, 0, 0, 0, NULL, 0, "task (the samples of rasp gen)", NULL},
    {"--D", "N", K_INT, F(task.D), 1, 1000, 0, NULL, 0, "degree: the number of arms", NULL},
    {"--M", "N", K_INT, F(task.M), 2, 1000, 0, NULL, 0, "arm length, the start node included", NULL},
    {"--V", "N", K_INT, F(task.V), 2, 1000000, 0, NULL, 0, "number of node symbols", NULL},
    {"--order", "edge|arm", K_CHOICE, F(task.order), 0, 0, 0, c_order, 0,
     "edges shuffled, or written arm by arm from the start node", NULL},
    {"--q", "start|end", K_CHOICE, F(task.q), 0, 0, 0, c_q, 0,
     "the query '/ s t =' before the graph or after it", NULL},
    {"--answer", "fwd|rev|lead", K_CHOICE, F(task.answer), 0, 0, 0, c_answer, 0,
     "the arm from s to t, reversed, or the leading node alone", NULL},
    {"--structured", "K", K_INT, F(task.structured), 0, 999, 0, NULL, 0,
     "K more training samples per graph: same edges, other targets (K < D)", NULL},
    {"--no-bos", NULL, K_FLAG, F(task.bos), 0, 0, 0, v_off, 0, "no BOS token before a sample",
     "BOS"},
    {"--no-eos", NULL, K_FLAG, F(task.eos), 0, 0, 0, v_off, 0, "no EOS token after a sample",
     "EOS"},
    {"--st-names", NULL, K_FLAG, F(task.st_names), 0, 0, 0, v_on, 0,
     "start and target written as the symbols s and t", "their numbers"},
    {NULL, NULL, 0, 0, 0, 0, 0, NULL, 0, "model", NULL},
    {"--model", "decoder|encoder", K_CHOICE, F(encoder), 0, 0, 0, c_model, 0,
     "causal next-token decoder, or encoder predicting masked answer tokens", NULL},
    {"--objective", "tf|iar|nar", K_CHOICE, F(obj), 0, 0, 0, c_obj, 0,
     "teacher forcing (decoder); the encoder masks a random share of the "
     "answer (iar) or all of it (nar)", "tf for the decoder, nar for the encoder"},
    {"--layers", "N", K_INT, F(arch.n_layers), 0, 64, 0, NULL, 0, "transformer layers", NULL},
    {"--d-model", "N", K_INT, F(arch.d_model), 1, 8192, 0, NULL, 0,
     "width of the residual stream", NULL},
    {"--heads", "N", K_INT, F(arch.n_heads), 1, 256, 0, NULL, 0,
     "attention heads per layer; divides --d-model", NULL},
    {"--d-mlp", "N", K_INT, F(arch.d_mlp), 1, 65536, 0, NULL, 0, "hidden width of each MLP",
     NULL},
    {"--pos", "learned|none", K_CHOICE, F(arch.pos_embedding), 0, 0, 0, c_pos, 0,
     "position embeddings", NULL},
    {"--ln", "pre|none", K_CHOICE, F(arch.layer_norm), 0, 0, 0, c_ln, 0, "layer norm", NULL},
    {"--act", "relu|gelu", K_CHOICE, F(arch.gelu), 0, 0, 0, c_act, 0, "the MLP's activation",
     NULL},
    {"--init", "random|STEM", K_STR, F(init), 0, 0, 0, NULL, 0,
     "random weights, or the model STEM.safetensors + STEM.json: one of ours, or "
     "compiled (decoder: a causal program, e.g. readout6_causal; encoder: rasp "
     "compile --encoder of programs/encoder*.rasp; same --D --M --V, --st-names "
     "--no-bos --no-eos: a compiled model's STEM.json names any that differ, and "
     "its edge markers are taken as they are)", NULL},
    {"--init-noise", "S", K_FLOAT, F(init_noise), 0, 1e3, 0, NULL, 1,
     "Gaussian noise on an --init model, S times each tensor's RMS", NULL},
    {"--init-mix", "A", K_FLOAT, F(init_mix), 0, 1, 0, NULL, 1,
     "start from (1 - A) x the --init model + A x compare's random arm", "0: off"},
    {"--widen", "K", K_INT, F(widen), 0, 4096, 0, NULL, 1,
     "K more residual dimensions (and heads, MLP units) around a compiled --init "
     "model, which computes as before", "0: off"},
    {"--widen-scale", "S", K_FLOAT, F(widen_scale), 0, 10, 0, NULL, 1,
     "standard deviation of --widen's random weights", NULL},
    {"--freeze", "none|compiled", K_CHOICE, F(freeze), 0, 0, 0, c_freeze, 1,
     "compiled: the compiled weights stay fixed, and so do the zeros joining "
     "--widen's to them; only --widen's weights train", NULL},
    {"--reinit-layers", "L,L,...", K_STR, F(reinit), 0, 0, 0, NULL, 1,
     "layers (from 0) of the --init model drawn at random again", "none"},
    {NULL, NULL, 0, 0, 0, 0, 0, NULL, 0, "training", NULL},
    {"--optim", "adamw|sgd", K_CHOICE, F(sgd), 0, 0, 0, c_optim, 1, "the optimiser", NULL},
    {"--momentum", "X", K_FLOAT, F(momentum), 0, 1, 1, NULL, 1,
     "momentum of --optim sgd", "0: plain SGD"},
    {"--lr", "X", K_FLOAT, F(lr), 0, 10, 0, NULL, 1, "learning rate", NULL},
    {"--lr-scale", "none|rms", K_CHOICE, F(lr_rms), 0, 0, 0, c_lrs, 1,
     "rms: each tensor's rate times its RMS at the starting point", NULL},
    {"--wd", "X", K_FLOAT, F(wd), 0, 10, 0, NULL, 1, "decoupled weight decay", NULL},
    {"--dropout", "X", K_FLOAT, F(dropout), 0, 0.95, 0, NULL, 1, "dropout probability", NULL},
    {"--batch", "N", K_INT, F(batch), 1, 1 << 20, 0, NULL, 0, "samples per optimiser step",
     NULL},
    {"--micro", "N", K_INT, F(micro), 1, 1 << 16, 0, NULL, 0,
     "samples per forward and backward pass (at most --batch)", NULL},
    {"--epochs", "N", K_INT, F(epochs), 1, 1000000, 0, NULL, 0,
     "passes over the training set at most", NULL},
    {"--max-steps", "N", K_LONG, F(max_steps), 1, 1099511627776.0, 0, NULL, 0,
     "optimiser steps at most", "no limit"},
    {"--stop-loss", "X", K_FLOAT, F(stop_loss), 0, 1e9, 0, NULL, 0,
     "a trial stops once its validation loss is below X", NULL},
    {"--seed", "N", K_U64, F(seed), 0, 4611686018427387904.0, 0, NULL, 0,
     "seed of weights, permutations, masks, dropout; trial k uses N + 7919k", NULL},
    {"--trials", "N", K_INT, F(trials), 1, 1000, 0, NULL, 0, "independent trials", NULL},
    {"--train", "N", K_INT, F(ntrain), 1, 100000000, 0, NULL, 0,
     "training graphs (before --structured)", NULL},
    {"--test", "N", K_INT, F(ntest), 1, 10000000, 0, NULL, 0, "test samples", NULL},
    {"--train-seed", "N", K_U64, F(train_seed), 0, 4611686018427387904.0, 0, NULL, 0,
     "seed of the training set", NULL},
    {"--test-seed", "N", K_U64, F(test_seed), 0, 4611686018427387904.0, 0, NULL, 0,
     "seed of the test set", NULL},
    {"--eval-every", "STEPS", K_INT, F(eval_every), 0, INT_MAX, 0, NULL, 0,
     "compare evaluates every STEPS steps, 0 meaning 10 (trials: every epoch)", NULL},
    {"--arm", "'NAME BASE [OPTION VALUE]...'", K_ARM, 0, 0, 0, 0, NULL, 0,
     "compare, repeatable (at most 16): an arm called NAME (letters, digits, _, -) "
     "from BASE compiled (--init), random (its architecture) or standard (--layers, "
     "--d-model...), with the OPTIONs marked * on top of the command line's",
     "random random, compiled compiled"},
    {"--threads", "N", K_INT, F(threads), 1, 1024, 0, NULL, 0, "OpenMP threads",
     "OpenMP's default"},
    {"--out", "DIR", K_STR, F(out), 0, 0, 0, NULL, 0,
     "directory (created) for config.txt, logs and checkpoints; compare: "
     "compare.csv, .gp, .png", "no files; compare: ."},
    {"--resume", NULL, K_FLAG, F(resume), 0, 0, 0, v_on, 0,
     "continue every trial from its checkpoint in --out", "off"},
};
#undef F
#define NOPTS ((int)(sizeof optdefs / sizeof optdefs[0]))

static void set_defaults(train_opts *o) {
  memset(o, 0, sizeof *o);
  raspT_opts_default(&o->task);
  o->obj = TRAIN_OBJ_TF;
  o->arch = (rasp_model_config){.n_layers = 6, .d_model = 200, .n_heads = 8,
                                .d_mlp = 800, .causal = 1, .layer_norm = 1,
                                .pos_embedding = 1, .gelu = 0, .bos_token = -1};
  o->dropout = 0.1f;
  o->lr = 5e-4f;
  o->wd = 0.01f;
  o->stop_loss = 0.001f;
  o->batch = 1024;
  o->micro = 64;
  o->epochs = 100;
  o->trials = 1;
  o->ntrain = 20000;
  o->ntest = 2000;
  o->seed = 1;
  o->train_seed = 1000;
  o->test_seed = 2000;
  o->eval_every = 10; /* compare only (0 is 10 too) */
  o->init = "random";
  o->widen_scale = 0.02f;
}

/* The default of option d, as text, from the defaulted o. */
static const char *default_text(const optdef *d, const train_opts *o, char *buf,
                                size_t size) {
  const char *p = (const char *)o + d->off;
  if (d->def) return d->def;
  switch (d->k) {
  case K_INT: snprintf(buf, size, "%d", *(const int *)p); break;
  case K_LONG: snprintf(buf, size, "%ld", *(const long *)p); break;
  case K_U64: snprintf(buf, size, "%llu", (unsigned long long)*(const uint64_t *)p); break;
  case K_FLOAT: snprintf(buf, size, "%g", (double)*(const float *)p); break;
  case K_CHOICE:
    snprintf(buf, size, "?");
    for (const choice *c = d->ch; c->name; c++)
      if (c->value == *(const int *)p) snprintf(buf, size, "%s", c->name);
    break;
  case K_STR: snprintf(buf, size, "%s", *(const char *const *)p ? *(const char *const *)p : "none"); break;
  default: snprintf(buf, size, "off"); break;
  }
  return buf;
}

/* The range of a numeric option, as text ("" for others). */
static const char *range_text(const optdef *d, char *buf, size_t size) {
  buf[0] = 0;
  if (d->k == K_INT || d->k == K_LONG || d->k == K_U64)
    snprintf(buf, size, "%.0f..%.0f; ", d->lo, d->hi);
  else if (d->k == K_FLOAT && d->hi_open)
    snprintf(buf, size, "%g <= %s < %g; ", d->lo, d->arg, d->hi);
  else if (d->k == K_FLOAT)
    snprintf(buf, size, "%g..%g; ", d->lo, d->hi);
  return buf;
}

/* text from column `indent` on (the cursor there), wrapped at 79 columns */
static void wrapped(FILE *f, const char *text, int indent) {
  int col = indent;
  for (const char *p = text; *p;) {
    const char *e = strchr(p, ' ');
    int n = e ? (int)(e - p) : (int)strlen(p);
    if (col > indent && col + 1 + n > 79) {
      fprintf(f, "\n%*s", indent, "");
      col = indent;
    } else if (col > indent) {
      fputc(' ', f);
      col++;
    }
    fprintf(f, "%.*s", n, p);
    col += n;
    p += n;
    while (*p == ' ') p++;
  }
  fputc('\n', f);
}

static void usage(FILE *f) {
  train_opts o;
  set_defaults(&o);
  fputs("usage: rasp-train [options]           train --trials models, print a summary\n"
        "       rasp-train compare [options]   --init STEM's arms on the same batches\n"
        "Every option's value may also follow an '=' (--D=3).  (range; default)\n"
        "* marks the options an --arm may set.\n",
        f);
  for (int i = 0; i < NOPTS; i++) {
    const optdef *d = &optdefs[i];
    if (!d->name) {
      fprintf(f, "%s:\n", d->help);
      continue;
    }
    char head[64], text[1024], r[96], df[64];
    snprintf(head, sizeof head, "%s%s%s", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
    snprintf(text, sizeof text, "%s%s (%sdefault %s)", d->arm ? "* " : "", d->help,
             range_text(d, r, sizeof r), default_text(d, &o, df, sizeof df));
    int w = fprintf(f, "  %s", head);
    if (w < 25) fprintf(f, "%*s", 25 - w, "");
    else fprintf(f, "\n%25s", "");
    wrapped(f, text, 25);
  }
  fputs("other:\n"
        "  -h, --help              this list\n"
        "  --version               the version\n",
        f);
}

/* Says that option name's value val is bad (why: NULL, or the reason);
** returns 2, the exit status for bad usage. */
static int bad_opt(const char *name, const char *val, const char *why) {
  fprintf(stderr, "rasp-train: bad value '%s' for %s%s%s\n", val ? val : "",
          name, why ? ": " : "", why ? why : "");
  return 2;
}

static const optdef *find_opt(const char *name) {
  for (int i = 0; i < NOPTS; i++)
    if (optdefs[i].name && !strcmp(optdefs[i].name, name)) return &optdefs[i];
  return NULL;
}

/* Stores value v of option d into o; 0, or 2 after a message. */
static int store(const optdef *d, const char *v, train_opts *o) {
  char *p = (char *)o + d->off, why[128], *e;
  errno = 0;
  switch (d->k) {
  case K_INT:
  case K_LONG:
  case K_U64: {
    long long x = strtoll(v, &e, 10);
    if (!*v || *e || errno || (double)x < d->lo || (double)x > d->hi) {
      snprintf(why, sizeof why, "expected an integer in %.0f..%.0f", d->lo, d->hi);
      return bad_opt(d->name, v, why);
    }
    if (d->k == K_INT) *(int *)p = (int)x;
    else if (d->k == K_LONG) *(long *)p = (long)x;
    else *(uint64_t *)p = (uint64_t)x;
    return 0;
  }
  case K_FLOAT: {
    double x = strtod(v, &e);
    if (!*v || *e || errno || !(x >= d->lo && x <= d->hi) || (d->hi_open && x >= d->hi)) {
      snprintf(why, sizeof why, "expected a number in [%g, %g%s", d->lo, d->hi,
               d->hi_open ? ")" : "]");
      return bad_opt(d->name, v, why);
    }
    *(float *)p = (float)x;
    return 0;
  }
  case K_CHOICE: {
    size_t at = 0;
    for (const choice *c = d->ch; c->name; c++) {
      if (!strcmp(c->name, v)) {
        *(int *)p = c->value;
        return 0;
      }
      at += (size_t)snprintf(why + at, sizeof why - at, "%s%s", at ? (c[1].name ? ", " : " or ") : "expected ", c->name);
      if (at >= sizeof why) at = sizeof why - 1;
    }
    return bad_opt(d->name, v, why);
  }
  case K_STR:
    if (!strcmp(d->name, "--out") && !*v) return bad_opt(d->name, v, "empty directory name");
    if (!strcmp(d->name, "--reinit-layers")) {
      int ok = *v != 0;
      for (const char *c = v; *c; c++) ok &= strchr("0123456789,", *c) != NULL;
      if (!ok) return bad_opt(d->name, v, "expected layer numbers like 0,3");
    }
    *(const char **)p = v;
    return 0;
  case K_ARM:
    if (o->narms >= TRAIN_MAX_ARMS) return bad_opt(d->name, v, "at most 16 arms");
    o->arm_spec[o->narms++] = v;
    return 0;
  case K_FLAG:
    *(int *)p = d->ch->value;
    return 0;
  }
  return 0;
}

static int parse_arm(int argc, char **argv, train_opts *o, int k);

/* Fills o from argv (after raspR_split_options).  Returns 0, or the exit
** status (2) after a message; exits 0 after --help. */
static int parse_opts(int argc, char **argv, train_opts *o) {
  set_defaults(o);
  const char *given[NOPTS] = {0}; /* each option's last value */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i == 1 && !strcmp(a, "compare")) {
      o->compare = 1;
      continue;
    }
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    }
    if (strncmp(a, "--", 2)) {
      fprintf(stderr, "rasp-train: unexpected argument '%s' (rasp-train --help lists "
                      "the options)\n", a);
      return 2;
    }
    const optdef *d = find_opt(a);
    if (!d) {
      fprintf(stderr, "rasp-train: unknown option '%s' (rasp-train --help lists "
                      "the options)\n", a);
      return 2;
    }
    const char *v = "";
    if (d->k != K_FLAG) {
      if (i + 1 >= argc) {
        fprintf(stderr, "rasp-train: option %s needs a value\n", a);
        return 2;
      }
      v = argv[++i];
    }
    int r = store(d, v, o);
    if (r) return r;
    given[d - optdefs] = v;
  }
#define GIVEN(name) given[find_opt(name) - optdefs]
  o->mix_given = GIVEN("--init-mix") != NULL;
  /* the objective follows the model unless given */
  if (o->encoder && !GIVEN("--objective")) o->obj = TRAIN_OBJ_NAR;
  if (o->encoder && o->obj == TRAIN_OBJ_TF)
    return bad_opt("--objective", "tf", "the encoder trains with iar or nar");
  if (!o->encoder && o->obj != TRAIN_OBJ_TF)
    return bad_opt("--objective", GIVEN("--objective"), "the decoder trains with tf");
  if (o->arch.d_model % o->arch.n_heads) {
    char b[32];
    snprintf(b, sizeof b, "%d", o->arch.n_heads);
    return bad_opt("--heads", b, "must divide --d-model");
  }
  if (o->micro > o->batch) o->micro = o->batch;
  /* a compiled --init model's task (ttask.h): refused if it differs */
  if (strcmp(o->init, "random")) {
    int r = train_task_match(o);
    if (r) return r;
  }
  rasp_error err = {0};
  if (!raspT_opts_check(&o->task, &err)) {
    fprintf(stderr, "rasp-train: %s\n", err.msg);
    return 2;
  }
  if (o->compare && !strcmp(o->init, "random"))
    return bad_opt("--init", o->init, "compare needs a model stem");
  if (o->resume && !o->out) return bad_opt("--resume", "", "needs --out DIR");
  if (GIVEN("--momentum") && !o->sgd)
    return bad_opt("--momentum", GIVEN("--momentum"),
                   "momentum is for --optim sgd (AdamW has its own)");
  int rnd = !strcmp(o->init, "random");
  if (rnd && o->mix_given)
    return bad_opt("--init-mix", GIVEN("--init-mix"),
                   "needs --init STEM (the model to mix with a random one)");
  if (rnd && o->widen)
    return bad_opt("--widen", GIVEN("--widen"), "needs --init STEM of a compiled model");
  if (o->freeze && !o->widen)
    return bad_opt("--freeze", "compiled", "nothing would train: add capacity "
                   "with --widen K");
  if (o->narms && !o->compare)
    return bad_opt("--arm", o->arm_spec[0], "arms are for rasp-train compare");
#undef GIVEN
  for (int k = 0; k < o->narms; k++) {
    int r = parse_arm(argc, argv, o, k);
    if (r) return r;
  }
  return 0;
}

/* Arm k: its spec's name and base, then the command line (less compare,
** --arm and --resume) followed by its options, through parse_opts.  An arm
** sets only how it trains (the options marked arm), never what it trains
** on, so every arm sees the same batches in the same order.  0, or 2 after
** a message. */
static int parse_arm(int argc, char **argv, train_opts *o, int k) {
  train_arm_spec *a = &o->arms[k];
  const char *spec = o->arm_spec[k];
  a->words = raspM_strdup(spec);
  char *w[64];
  int nw = 0;
  for (char *t = strtok(a->words, " \t"); t; t = strtok(NULL, " \t")) {
    if (nw == 64) return bad_opt("--arm", spec, "too many words");
    w[nw++] = t;
  }
  if (nw < 2 || strlen(w[0]) > 32)
    return bad_opt("--arm", spec, "expected 'NAME compiled|random|standard "
                                  "[OPTION VALUE]...', NAME at most 32 characters");
  for (const char *c = w[0]; *c; c++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", *c))
      return bad_opt("--arm", spec, "NAME is letters, digits, '_' and '-'");
  for (int j = 0; j < k; j++)
    if (!strcmp(o->arms[j].name, w[0])) return bad_opt("--arm", spec, "two arms with that NAME");
  snprintf(a->name, sizeof a->name, "%s", w[0]);
  if (!strcmp(w[1], "compiled")) a->base = TRAIN_ARM_COMPILED;
  else if (!strcmp(w[1], "random")) a->base = TRAIN_ARM_RANDOM;
  else if (!strcmp(w[1], "standard")) a->base = TRAIN_ARM_STANDARD;
  else return bad_opt("--arm", spec, "BASE is compiled, random or standard");
  if ((nw - 2) % 2) return bad_opt("--arm", spec, "every OPTION takes a VALUE");
  for (int i = 2; i < nw; i += 2) {
    const optdef *d = find_opt(w[i]);
    if (!d || !d->arm) {
      char why[512] = "an arm sets only";
      size_t at = strlen(why);
      for (int j = 0; j < NOPTS && at < sizeof why; j++)
        if (optdefs[j].name && optdefs[j].arm)
          at += (size_t)snprintf(why + at, sizeof why - at, " %s", optdefs[j].name);
      return bad_opt("--arm", spec, why);
    }
  }
  a->argv = raspM_alloc((size_t)(argc + nw) * sizeof(char *));
  int n = 0;
  a->argv[n++] = argv[0];
  for (int i = 1; i < argc; i++) {
    if (i == 1 && !strcmp(argv[i], "compare")) continue;
    if (!strcmp(argv[i], "--arm") && i + 1 < argc) {
      i++;
      continue;
    }
    if (!strcmp(argv[i], "--resume")) continue;
    a->argv[n++] = argv[i];
  }
  for (int i = 2; i < nw; i++) a->argv[n++] = w[i];
  a->o = raspM_alloc(sizeof *a->o);
  int r = parse_opts(n, a->argv, a->o);
  if (r) fprintf(stderr, "rasp-train: in --arm '%s'\n", spec);
  return r;
}

static void opts_free(train_opts *o) {
  for (int k = 0; k < o->narms; k++) {
    if (o->arms[k].o) opts_free(o->arms[k].o);
    raspM_free(o->arms[k].o);
    raspM_free(o->arms[k].words);
    raspM_free(o->arms[k].argv);
  }
  o->narms = 0;
}

/* ---- wiring ------------------------------------------------------------- */

/* The run (trials or compare) o describes; the exit status: 0, or 1 after
** the error's message. */
static int run(const train_opts *o) {
  if (o->threads) omp_set_num_threads(o->threads);
  rasp_error err = {0};
  if (o->out && !train_dir_open(o, &err)) {
    fprintf(stderr, "rasp-train: %s\n", err.msg);
    return 1;
  }
  train_dataset tr = {0}, te = {0};
  int overlap = 0;
  if (!train_data_make(o, &tr, &te, &overlap, &err)) {
    fprintf(stderr, "rasp-train: %s\n", err.msg);
    train_data_free(&tr);
    train_data_free(&te);
    return 1;
  }
  fprintf(stderr, "rasp-train: %d training sequences, %d test (%d overlapping "
                  "test samples skipped), %d tokens each\n",
          tr.n, te.n, overlap, tr.len);
  int ok = o->compare ? train_compare(o, &tr, &te, &err) : train_trials(o, &tr, &te, &err);
  if (!ok) fprintf(stderr, "rasp-train: %s\n", err.msg);
  train_data_free(&tr);
  train_data_free(&te);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  /* --opt=VALUE is --opt VALUE; the new vector lives until exit */
  int version;
  char **args = raspR_split_options(&argc, argv, 1, &version);
  if (!args) {
    fputs("rasp-train: out of memory\n", stderr);
    return 1;
  }
  if (version) {
    printf("rasp-train " RASP_VERSION "\n");
    free(args);
    return 0;
  }
  train_opts o;
  int rc = parse_opts(argc, args, &o);
  if (!rc) rc = run(&o);
  opts_free(&o);
  free(args);
  return rc;
}
