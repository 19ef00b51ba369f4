/*
** main.c -- rasp-train: trains transformers (rmodel.h architecture) on the
** path-star task, from random or compiled weights.
**
**   rasp-train [options]            train (several trials), print a summary
**   rasp-train compare [options]    random init vs --init STEM (or any
**                                   --arm list) on the same batches;
**                                   curves to CSV and PNG
**
** Data.  Training samples are indices 0..N-1 of --train-seed, test samples
** indices of --test-seed; a test sample whose (graph, target) also occurs in
** the training set is skipped (and counted).  Every epoch each training
** sample's edge blocks (EDGE order) or arm blocks (ARM order) are permuted
** anew with the trainer's own RNG, seeded from (seed, epoch, sample), so a
** resumed run sees exactly the data an uninterrupted one would.
**
** Token ids are rtask.h's (0 unused, 1..V nodes, V+1.. specials); the
** encoder's MASK token is V+8 (train_mask_id), so vocab_size = n_out = V+9.
** The decoder predicts token i+1 at position i; the encoder reads every
** answer position as MASK at evaluation (NAR; IAR training masks a random
** share of them, at least one) and predicts each masked token at its own
** position, so the leading node l_t (answer index 1 of fwd, M-2 of rev, 0
** of lead) is predicted at position ans_start+1 for fwd.
**
** A model given to --init is either one of ours (same ids: vocab_size >=
** V+8, V+9 for encoder objectives, and n_out >= V+8) or a compiled one
** (rcompile.h: bos_token >= 0 and a layout in STEM.json).  A compiled model
** gets the model's BOS in front of every sequence (targets and loss
** weights move with it; BOS itself has none), the task's ids must be the
** compiled model's input ids (checked by name against the layout; the
** readout programs want --st-names --no-bos --no-eos, Q at the start, the
** same V), and the readout is rebuilt over token ids (train_adapt_compiled
** in ttrain.c): column v is the compiled column whose out_vals entry is v,
** ids it never outputs get weight 0 and a bias below the compiled logits
** seen on a few training sequences (as evaluation encodes them).
**   - decoder: the model must be causal (programs/readout6_causal.rasp,
**     which puts l_t at ans_start, where the decoder predicts token
**     ans_start+1 = l_t);
**   - encoder (--model encoder, nar or iar): the model must have MASK (id
**     V+8) among its inputs and be compiled for exactly the task's length:
**     `rasp compile --encoder` of programs/encoder*.rasp, which put l_t at
**     ans_start+1, where the encoder sees MASK and predicts l_t.  Its
**     output at position i is read as the prediction at position i itself
**     (no shift; the BOS prefix moves inputs and targets alike).
** Anything else is refused with what does not fit.  Layer norm stays off,
** widths and heads stay the compiled ones; --init-noise and --reinit-layers
** apply after.  Every run evaluates once before its first step (CSV row
** epoch 0): for a compiled init, the leading-node accuracy there is what
** `rasp compile --check` measured (for --encoder, its check() line on
** masked inputs).  compare's random arm gets the compiled architecture
** (causal or not) and the same BOS prefix.
**
** Protocols (doc/training.md): --optim, --momentum, --lr-scale rms (the
** optimiser's per-parameter scales, tnet.h), --freeze compiled (scale 0),
** --widen (train_widen), --init-mix, --init-noise; make_model applies
** them in that order after adapting a compiled readout.  Every evaluation
** of a model started from --init logs its L2 distance from the compiled
** point and, for a compiled one, the probe's "still the program" share of
** the layout's heads that agree with the compiled point's.  compare runs
** any number of --arm's on the same batches.
**
** Logs (trialK.csv, compare.csv, compare.gp, compare.png) are kept in
** memory and rewritten whole, atomically, after every row: a killed run
** leaves the previous or the new file, never a torn one.
**
** Checkpoints (--out DIR): after every epoch, DIR/trialK.ckpt commits a
** generation of model and optimiser files (ttrain.h), with the trial's
** configuration (config_text: every option that shapes its trajectory);
** --resume loads the committed generation and refuses one made with other
** options, naming each.  A run locks DIR (DIR/rasp-train.lock, one run per
** directory) and, on start, removes what killed runs left there:
** temporaries of interrupted writes and generations never committed.
*/
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rasp.h"
#include "rmem.h"
#include "rmodel.h"
#include "rtask.h"
#include "tnet.h"
#include "ttrain.h"

typedef enum { OBJ_TF, OBJ_IAR, OBJ_NAR } objective;

#define MAX_ARMS 16
enum { ARM_COMPILED, ARM_RANDOM, ARM_STANDARD };

typedef struct opts {
  rasp_task_opts task;
  objective obj;
  int encoder;
  rasp_model_config arch;
  float dropout, lr, wd, stop_loss, init_noise;
  /* protocols (doc/training.md): optimiser, per-tensor learning rates,
  ** frozen compiled weights, widening, mixing with a random init */
  int sgd, lr_rms, freeze, widen, mix_given;
  float momentum, init_mix, widen_scale;
  int batch, micro, epochs, trials, ntrain, ntest, eval_every, threads;
  /* compare's arms (--arm "NAME BASE [OPTION VALUE]..."), parsed into
  ** options of their own at the end of parse_opts; none: random, compiled */
  int narms;
  const char *arm_spec[MAX_ARMS];
  struct arm {
    char name[33];
    int base;        /* ARM_COMPILED, ARM_RANDOM, ARM_STANDARD */
    struct opts *o;  /* the arm's options (raspM_alloc'd) */
    char *words;     /* the spec's words, which o points into */
    char **argv;
  } arms[MAX_ARMS];
  long max_steps;
  uint64_t seed, train_seed, test_seed;
  const char *out, *init, *reinit;
  int resume, compare;
} opts;

static void usage(FILE *f) {
  fputs(
      "usage: rasp-train [compare] [options]\n"
      " task:  --D N --M N --V N --order edge|arm --q start|end\n"
      "        --answer fwd|rev|lead --structured K --no-bos --no-eos\n"
      "        --st-names\n"
      " model: --model decoder|encoder --objective tf|iar|nar --layers N\n"
      "        --d-model N --heads N --d-mlp N --pos learned|none --ln pre|none\n"
      "        --act relu|gelu --init random|STEM --init-noise SIGMA\n"
      "        --reinit-layers L,L,... --init-mix A --widen K\n"
      "        --widen-scale S --freeze none|compiled\n"
      "        (--init STEM from rasp compile: decoder: a causal program,\n"
      "        e.g. readout6_causal; encoder: rasp compile --encoder of\n"
      "        programs/encoder*.rasp; same --D --M --V, --st-names\n"
      "        --no-bos --no-eos)\n"
      " compare: --arm 'NAME compiled|random|standard [OPTION VALUE]...'\n"
      "        (repeatable; OPTIONs: --optim --momentum --lr --lr-scale --wd\n"
      "        --dropout --freeze --widen --widen-scale --init-mix --init-noise\n"
      "        --reinit-layers)\n"
      " train: --optim adamw|sgd --momentum X --lr X --lr-scale none|rms\n"
      "        --wd X --dropout X --batch N --micro N --epochs N\n"
      "        --max-steps N --stop-loss X --seed N --trials N --train N\n"
      "        --test N --train-seed N --test-seed N --eval-every STEPS\n"
      "        --threads N --out DIR --resume\n"
      " other: --version -h\n"
      "        (any option's value may also follow an '=': --D=3)\n",
      f);
}

static int bad_opt(const char *name, const char *val, const char *why) {
  fprintf(stderr, "rasp-train: bad value '%s' for %s%s%s\n", val ? val : "",
          name, why ? ": " : "", why ? why : "");
  return 2;
}

static int parse_long(const char *s, long lo, long hi, long *out) {
  char *e;
  errno = 0;
  long v = strtol(s, &e, 10);
  if (!*s || *e || errno || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int parse_float(const char *s, double lo, double hi, float *out) {
  char *e;
  errno = 0;
  double v = strtod(s, &e);
  if (!*s || *e || errno || !(v >= lo && v <= hi)) return -1;
  *out = (float)v;
  return 0;
}

static int parse_arm(int argc, char **argv, struct opts *o, int k);

/* The last value given for option name (for messages). */
static const char *argv_value(int argc, char **argv, const char *name) {
  const char *v = "";
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], name)) v = argv[i + 1];
  return v;
}

/* Returns 0, or the exit status (2) after a message. */
static int parse_opts(int argc, char **argv, opts *o) {
  memset(o, 0, sizeof *o);
  raspT_opts_default(&o->task);
  o->obj = OBJ_TF;
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
  o->threads = 0;
  o->init = "random";
  o->widen_scale = 0.02f;
  const char *objname = NULL;
  int momentum_given = 0;
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
    if (!strcmp(a, "--no-bos")) { o->task.bos = 0; continue; }
    if (!strcmp(a, "--no-eos")) { o->task.eos = 0; continue; }
    if (!strcmp(a, "--resume")) { o->resume = 1; continue; }
    if (!strcmp(a, "--st-names")) { o->task.st_names = 1; continue; }
    if (strncmp(a, "--", 2)) {
      fprintf(stderr, "rasp-train: unexpected argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "rasp-train: option %s needs a value\n", a);
      return 2;
    }
    const char *v = argv[++i];
    long n;
    float f;
#define INT(name, lo, hi, dst)                                                 \
  if (!strcmp(a, name)) {                                                      \
    if (parse_long(v, lo, hi, &n)) return bad_opt(a, v, "expected an integer in " #lo ".." #hi); \
    dst = n;                                                                   \
    continue;                                                                  \
  }
#define FLT(name, lo, hi, dst)                                                 \
  if (!strcmp(a, name)) {                                                      \
    if (parse_float(v, lo, hi, &f)) return bad_opt(a, v, "expected a number in [" #lo ", " #hi "]"); \
    dst = f;                                                                   \
    continue;                                                                  \
  }
    INT("--D", 1, 1000, o->task.D)
    INT("--M", 2, 1000, o->task.M)
    INT("--V", 2, 1000000, o->task.V)
    INT("--structured", 0, 999, o->task.structured)
    INT("--layers", 0, 64, o->arch.n_layers)
    INT("--d-model", 1, 8192, o->arch.d_model)
    INT("--heads", 1, 256, o->arch.n_heads)
    INT("--d-mlp", 1, 65536, o->arch.d_mlp)
    INT("--batch", 1, 1 << 20, o->batch)
    INT("--micro", 1, 1 << 16, o->micro)
    INT("--epochs", 1, 1000000, o->epochs)
    INT("--max-steps", 1, 1L << 40, o->max_steps)
    INT("--trials", 1, 1000, o->trials)
    INT("--train", 1, 100000000, o->ntrain)
    INT("--test", 1, 10000000, o->ntest)
    INT("--seed", 0, 1L << 62, o->seed)
    INT("--train-seed", 0, 1L << 62, o->train_seed)
    INT("--test-seed", 0, 1L << 62, o->test_seed)
    INT("--eval-every", 0, 1L << 40, o->eval_every)
    INT("--threads", 1, 1024, o->threads)
    FLT("--lr", 0, 10, o->lr)
    FLT("--wd", 0, 10, o->wd)
    FLT("--dropout", 0, 0.95, o->dropout)
    FLT("--stop-loss", 0, 1e9, o->stop_loss)
    FLT("--init-noise", 0, 1e3, o->init_noise)
    FLT("--widen-scale", 0, 10, o->widen_scale)
    if (!strcmp(a, "--init-mix")) {
      if (parse_float(v, 0, 1, &f)) return bad_opt(a, v, "expected a number in [0, 1]");
      o->init_mix = f;
      o->mix_given = 1;
      continue;
    }
    if (!strcmp(a, "--momentum")) {
      if (parse_float(v, 0, 1, &f) || f >= 1)
        return bad_opt(a, v, "expected a number in [0, 1)");
      o->momentum = f;
      momentum_given = 1;
      continue;
    }
    INT("--widen", 0, 4096, o->widen)
#undef INT
#undef FLT
    if (!strcmp(a, "--order")) {
      if (!strcmp(v, "edge")) o->task.order = RASP_ORDER_EDGE;
      else if (!strcmp(v, "arm")) o->task.order = RASP_ORDER_ARM;
      else return bad_opt(a, v, "expected edge or arm");
    } else if (!strcmp(a, "--q")) {
      if (!strcmp(v, "start")) o->task.q = RASP_Q_START;
      else if (!strcmp(v, "end")) o->task.q = RASP_Q_END;
      else return bad_opt(a, v, "expected start or end");
    } else if (!strcmp(a, "--answer")) {
      if (!strcmp(v, "fwd")) o->task.answer = RASP_ANS_FORWARD;
      else if (!strcmp(v, "rev")) o->task.answer = RASP_ANS_REVERSE;
      else if (!strcmp(v, "lead")) o->task.answer = RASP_ANS_LEAD;
      else return bad_opt(a, v, "expected fwd, rev or lead");
    } else if (!strcmp(a, "--model")) {
      if (!strcmp(v, "decoder")) o->encoder = 0;
      else if (!strcmp(v, "encoder")) o->encoder = 1;
      else return bad_opt(a, v, "expected decoder or encoder");
    } else if (!strcmp(a, "--objective")) {
      objname = v;
      if (!strcmp(v, "tf")) o->obj = OBJ_TF;
      else if (!strcmp(v, "iar")) o->obj = OBJ_IAR;
      else if (!strcmp(v, "nar")) o->obj = OBJ_NAR;
      else return bad_opt(a, v, "expected tf, iar or nar");
    } else if (!strcmp(a, "--pos")) {
      if (!strcmp(v, "learned")) o->arch.pos_embedding = 1;
      else if (!strcmp(v, "none")) o->arch.pos_embedding = 0;
      else return bad_opt(a, v, "expected learned or none");
    } else if (!strcmp(a, "--ln")) {
      if (!strcmp(v, "pre")) o->arch.layer_norm = 1;
      else if (!strcmp(v, "none")) o->arch.layer_norm = 0;
      else return bad_opt(a, v, "expected pre or none");
    } else if (!strcmp(a, "--act")) {
      if (!strcmp(v, "relu")) o->arch.gelu = 0;
      else if (!strcmp(v, "gelu")) o->arch.gelu = 1;
      else return bad_opt(a, v, "expected relu or gelu");
    } else if (!strcmp(a, "--arm")) {
      if (o->narms >= MAX_ARMS) return bad_opt(a, v, "at most 16 arms");
      o->arm_spec[o->narms++] = v;
    } else if (!strcmp(a, "--optim")) {
      if (!strcmp(v, "adamw")) o->sgd = 0;
      else if (!strcmp(v, "sgd")) o->sgd = 1;
      else return bad_opt(a, v, "expected adamw or sgd");
    } else if (!strcmp(a, "--lr-scale")) {
      if (!strcmp(v, "none")) o->lr_rms = 0;
      else if (!strcmp(v, "rms")) o->lr_rms = 1;
      else return bad_opt(a, v, "expected none or rms");
    } else if (!strcmp(a, "--freeze")) {
      if (!strcmp(v, "none")) o->freeze = 0;
      else if (!strcmp(v, "compiled")) o->freeze = 1;
      else return bad_opt(a, v, "expected none or compiled");
    } else if (!strcmp(a, "--init")) {
      o->init = v;
    } else if (!strcmp(a, "--reinit-layers")) {
      for (const char *p = v; *p; p++)
        if (!strchr("0123456789,", *p)) return bad_opt(a, v, "expected layer numbers like 0,3");
      if (!*v) return bad_opt(a, v, "expected layer numbers like 0,3");
      o->reinit = v;
    } else if (!strcmp(a, "--out")) {
      if (!*v) return bad_opt(a, v, "empty directory name");
      o->out = v;
    } else {
      fprintf(stderr, "rasp-train: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  /* the objective follows the model unless given */
  if (o->encoder && !objname) o->obj = OBJ_NAR;
  if (o->encoder && o->obj == OBJ_TF)
    return bad_opt("--objective", "tf", "the encoder trains with iar or nar");
  if (!o->encoder && o->obj != OBJ_TF)
    return bad_opt("--objective", objname, "the decoder trains with tf");
  if (o->arch.d_model % o->arch.n_heads) {
    char b[32];
    snprintf(b, sizeof b, "%d", o->arch.n_heads);
    return bad_opt("--heads", b, "must divide --d-model");
  }
  if (o->micro > o->batch) o->micro = o->batch;
  if (o->task.answer == RASP_ANS_NONE) return bad_opt("--answer", "none", NULL);
  rasp_error err = {0};
  if (!raspT_opts_check(&o->task, &err)) {
    fprintf(stderr, "rasp-train: %s\n", err.msg);
    return 2;
  }
  if (o->compare && !strcmp(o->init, "random"))
    return bad_opt("--init", o->init, "compare needs a model stem");
  if (o->resume && !o->out)
    return bad_opt("--resume", "", "needs --out DIR");
  if (momentum_given && !o->sgd)
    return bad_opt("--momentum", argv_value(argc, argv, "--momentum"),
                   "momentum is for --optim sgd (AdamW has its own)");
  int rnd = !strcmp(o->init, "random");
  if (rnd && o->mix_given)
    return bad_opt("--init-mix", argv_value(argc, argv, "--init-mix"),
                   "needs --init STEM (the model to mix with a random one)");
  if (rnd && o->widen)
    return bad_opt("--widen", argv_value(argc, argv, "--widen"),
                   "needs --init STEM of a compiled model");
  if (o->freeze && !o->widen)
    return bad_opt("--freeze", "compiled", "nothing would train: add capacity "
                   "with --widen K");
  if (o->narms && !o->compare)
    return bad_opt("--arm", o->arm_spec[0], "arms are for rasp-train compare");
  for (int k = 0; k < o->narms; k++) {
    int r = parse_arm(argc, argv, o, k);
    if (r) return r;
  }
  return 0;
}

/* The options an arm may set: how it trains, never what it trains on (so
** every arm sees the same batches in the same order). */
static const char *const arm_opts_ok[] = {
    "--optim", "--momentum", "--lr", "--lr-scale", "--wd", "--dropout",
    "--freeze", "--widen", "--widen-scale", "--init-mix", "--init-noise",
    "--reinit-layers", NULL};

/* Arm k: its spec's name and base, then the command line (less compare,
** --arm and --resume) followed by its options, through parse_opts. */
static int parse_arm(int argc, char **argv, opts *o, int k) {
  struct arm *a = &o->arms[k];
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
  if (!strcmp(w[1], "compiled")) a->base = ARM_COMPILED;
  else if (!strcmp(w[1], "random")) a->base = ARM_RANDOM;
  else if (!strcmp(w[1], "standard")) a->base = ARM_STANDARD;
  else return bad_opt("--arm", spec, "BASE is compiled, random or standard");
  if ((nw - 2) % 2) return bad_opt("--arm", spec, "every OPTION takes a VALUE");
  for (int i = 2; i < nw; i += 2) {
    int ok = 0;
    for (const char *const *n = arm_opts_ok; *n; n++) ok |= !strcmp(*n, w[i]);
    if (!ok) return bad_opt("--arm", spec, "an arm sets only --optim --momentum --lr "
                                           "--lr-scale --wd --dropout --freeze --widen "
                                           "--widen-scale --init-mix --init-noise "
                                           "--reinit-layers");
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

static void opts_free(opts *o) {
  for (int k = 0; k < o->narms; k++) {
    if (o->arms[k].o) opts_free(o->arms[k].o);
    raspM_free(o->arms[k].o);
    raspM_free(o->arms[k].words);
    raspM_free(o->arms[k].argv);
  }
  o->narms = 0;
}

/* ---- data --------------------------------------------------------------- */

typedef struct dataset {
  int n, len;       /* samples, tokens each */
  int *tok;         /* n * len */
  int *ans_start;   /* n */
  int *edge_pos;    /* n * nedges: where each written edge block starts */
  int *edge_arm;    /* n * nedges */
  int nedges, blk;  /* edges per sample, tokens per edge block */
} dataset;

static uint64_t graph_key(const rasp_sample *s) {
  /* (graph, target): arms as node sequences, sorted, then t; FNV-1a. */
  int D = s->D, M = s->M;
  int *ord = raspM_alloc((size_t)D * sizeof *ord);
  for (int a = 0; a < D; a++) ord[a] = a;
  for (int a = 1; a < D; a++)
    for (int b = a; b > 0 && s->arms[ord[b] * M + 1] < s->arms[ord[b - 1] * M + 1]; b--) {
      int x = ord[b];
      ord[b] = ord[b - 1];
      ord[b - 1] = x;
    }
  uint64_t h = 1469598103934665603ull;
  for (int a = 0; a < D; a++)
    for (int k = 0; k < M; k++) h = (h ^ (uint64_t)s->arms[ord[a] * M + k]) * 1099511628211ull;
  h = (h ^ (uint64_t)s->t) * 1099511628211ull;
  raspM_free(ord);
  return h | 1; /* 0 marks an empty slot */
}

typedef struct keyset {
  uint64_t *k;
  size_t cap;
} keyset;

static void ks_add(keyset *s, uint64_t k) {
  size_t i = k & (s->cap - 1);
  while (s->k[i] && s->k[i] != k) i = (i + 1) & (s->cap - 1);
  s->k[i] = k;
}
static int ks_has(const keyset *s, uint64_t k) {
  size_t i = k & (s->cap - 1);
  while (s->k[i]) {
    if (s->k[i] == k) return 1;
    i = (i + 1) & (s->cap - 1);
  }
  return 0;
}

static void ds_put(dataset *d, int i, const rasp_sample *s) {
  memcpy(d->tok + (size_t)i * d->len, s->tokens, (size_t)d->len * sizeof(int));
  d->ans_start[i] = s->ans_start;
  for (int k = 0; k < d->nedges; k++) {
    d->edge_pos[(size_t)i * d->nedges + k] = s->edge_pos[k];
    d->edge_arm[(size_t)i * d->nedges + k] = s->edge_arm[k];
  }
}

static void ds_alloc(dataset *d, const rasp_task_opts *t, int n) {
  d->n = n;
  d->len = raspT_length(t);
  d->nedges = raspT_edges(t);
  d->blk = 2 + t->markers;
  d->tok = raspM_alloc((size_t)n * d->len * sizeof(int));
  d->ans_start = raspM_alloc((size_t)n * sizeof(int));
  d->edge_pos = raspM_alloc((size_t)n * d->nedges * sizeof(int));
  d->edge_arm = raspM_alloc((size_t)n * d->nedges * sizeof(int));
}

static void ds_free(dataset *d) {
  raspM_free(d->tok);
  raspM_free(d->ans_start);
  raspM_free(d->edge_pos);
  raspM_free(d->edge_arm);
  memset(d, 0, sizeof *d);
}

/* Training set (with structured variants) and a disjoint test set. */
static int make_data(const opts *o, dataset *tr, dataset *te, int *overlap,
                     rasp_error *err) {
  int k = o->task.structured;
  ds_alloc(tr, &o->task, o->ntrain * (k + 1));
  rasp_sample *g = raspM_alloc((size_t)(k + 1) * sizeof *g);
  keyset ks = {0};
  ks.cap = 1;
  while (ks.cap < (size_t)tr->n * 2 + 16) ks.cap *= 2;
  ks.k = raspM_alloc(ks.cap * sizeof *ks.k);
  int rc = -1;
  for (int i = 0; i < o->ntrain; i++) {
    if (raspT_sample_group(&o->task, o->train_seed, (uint64_t)i, g, err) < 0) goto out;
    for (int j = 0; j <= k; j++) {
      ds_put(tr, i * (k + 1) + j, &g[j]);
      ks_add(&ks, graph_key(&g[j]));
    }
  }
  ds_alloc(te, &o->task, o->ntest);
  *overlap = 0;
  uint64_t idx = 0;
  for (int i = 0; i < o->ntest; idx++) {
    if (!raspT_sample(&o->task, o->test_seed, idx, &g[0], err)) goto out;
    if (ks_has(&ks, graph_key(&g[0]))) {
      ++*overlap;
      continue;
    }
    ds_put(te, i++, &g[0]);
  }
  rc = 0;
out:
  for (int j = 0; j <= k; j++) raspT_sample_free(&g[j]);
  raspM_free(g);
  raspM_free(ks.k);
  return rc;
}

/* Sample i of the set with its edge (or arm) blocks permuted by rng. */
static void permuted(const dataset *d, const opts *o, int i, rasp_rng *rng,
                     int *out) {
  const int *src = d->tok + (size_t)i * d->len;
  memcpy(out, src, (size_t)d->len * sizeof *out);
  const int *ep = d->edge_pos + (size_t)i * d->nedges;
  int E = d->nedges, blk = d->blk, gs = ep[0];
  for (int k = 1; k < E; k++)
    if (ep[k] < gs) gs = ep[k];
  int perm[4096];
  if (o->task.order == RASP_ORDER_EDGE) {
    if (E > 4096) return;
    for (int k = 0; k < E; k++) perm[k] = k;
    for (int k = E - 1; k > 0; k--) {
      int j = (int)raspT_rng_below(rng, (uint64_t)k + 1), x = perm[k];
      perm[k] = perm[j];
      perm[j] = x;
    }
    for (int k = 0; k < E; k++)
      memcpy(out + gs + k * blk, src + ep[perm[k]], (size_t)blk * sizeof *out);
  } else {
    /* arms in written order; each arm's edges are consecutive blocks */
    int D = o->task.D, per = o->task.M - 1;
    if (D > 4096) return;
    for (int a = 0; a < D; a++) perm[a] = a;
    for (int a = D - 1; a > 0; a--) {
      int j = (int)raspT_rng_below(rng, (uint64_t)a + 1), x = perm[a];
      perm[a] = perm[j];
      perm[j] = x;
    }
    for (int a = 0; a < D; a++)
      memcpy(out + gs + a * per * blk, src + gs + perm[a] * per * blk,
             (size_t)per * blk * sizeof *out);
  }
}

/* ---- objectives --------------------------------------------------------- */

static int answer_len(const opts *o) {
  return o->task.answer == RASP_ANS_LEAD ? 1 : o->task.M;
}
/* Index of l_t within the answer. */
static int lead_index(const opts *o) {
  switch (o->task.answer) {
  case RASP_ANS_FORWARD: return 1;
  case RASP_ANS_REVERSE: return o->task.M - 2;
  default: return 0;
  }
}
static int model_len(const opts *o, int len) { return o->encoder ? len : len - 1; }
static int mask_token(const opts *o) { return train_mask_id(&o->task); }

/* Builds one example: input (T ids), target and weight per position, and
** apos (the answer index a position predicts, or -1).  eval: the encoder
** masks every answer position (1-step NAR inference, as in the paper). */
static void encode(const opts *o, const int *seq, int len, int ans, int eval,
                   rasp_rng *rng, int *in, int *tgt, float *w, int *apos,
                   int prefix) {
  int A = answer_len(o), T = model_len(o, len);
  if (prefix >= 0) {
    /* compiled models: BOS at position 0 (no target), the rest shifted */
    in[0] = prefix;
    tgt[0] = 0;
    w[0] = 0;
    apos[0] = -1;
    in++, tgt++, w++, apos++;
  }
  if (!o->encoder) {
    for (int i = 0; i < T; i++) {
      in[i] = seq[i];
      tgt[i] = seq[i + 1];
      int k = i + 1 - ans;
      apos[i] = (k >= 0 && k < A) ? k : -1;
      w[i] = apos[i] >= 0;
    }
    return;
  }
  double rate = 1.0;
  if (o->obj == OBJ_IAR && !eval)
    rate = (double)(raspT_rng_next(rng) >> 11) / 9007199254740992.0;
  int any = 0;
  for (int i = 0; i < T; i++) {
    in[i] = seq[i];
    tgt[i] = seq[i];
    w[i] = 0;
    apos[i] = -1;
    int k = i - ans;
    if (k >= 0 && k < A) {
      int m = rate >= 1.0 || (double)(raspT_rng_next(rng) >> 11) / 9007199254740992.0 < rate;
      if (m) {
        in[i] = mask_token(o);
        w[i] = 1;
        apos[i] = k;
        any = 1;
      }
    }
  }
  if (!any) { /* at least one masked position, so every sample teaches */
    int k = (int)raspT_rng_below(rng, (uint64_t)A), i = ans + k;
    in[i] = mask_token(o);
    w[i] = 1;
    apos[i] = k;
  }
}

/* ---- evaluation --------------------------------------------------------- */

typedef struct metrics {
  double loss, seq_acc, tok_acc, lead_acc;
  double pos_acc[64];
  double prog_acc; /* "still the program" (probe), NAN without one */
} metrics;

/* "Still the program": the compiled model's attention heads named in its
** layout (categorical units of kind "head") are read off the residual
** stream after their layer's attention, as the argmax over the unit's
** dimensions, at every position but BOS, in the trained model and in the
** model at the compiled point (net, over ref: the interpreter's values
** wherever `rasp compile --check` passes).  prog_acc is the share of
** (sequence, position, head) that agree. */
typedef struct probe {
  int on;
  rasp_layout_unit *u; /* the head units */
  int n;
  rasp_model m;        /* the compiled point */
  train_net net;
} probe;

/* Agreements and comparisons of the probe's heads in the last forwards of
** a (the trained model) and b (the compiled point), rows 0..rows-1, rows
** whose position is 0 skipped when skip0 (BOS). */
static void probe_count(const probe *p, const train_net *a, const train_net *b,
                        int rows, int T, int skip0, long *hit, long *tot) {
  size_t D = (size_t)a->m->cfg.d_model;
  for (int k = 0; k < p->n; k++) {
    const rasp_layout_unit *u = &p->u[k];
    const float *x = a->L[u->layer].mid, *y = b->L[u->layer].mid;
    for (int r = 0; r < rows; r++) {
      if (skip0 && r % T == 0) continue;
      const float *xr = x + (size_t)r * D + u->dim, *yr = y + (size_t)r * D + u->dim;
      int ax = 0, ay = 0;
      for (int j = 1; j < u->size; j++) {
        if (xr[j] > xr[ax]) ax = j;
        if (yr[j] > yr[ay]) ay = j;
      }
      *hit += ax == ay;
      ++*tot;
    }
  }
}

static void evaluate(train_net *n, const opts *o, int prefix, const dataset *d,
                     int limit, int permute_epoch, probe *pb, metrics *mt) {
  int len = d->len, T = model_len(o, len) + (prefix >= 0), A = answer_len(o),
      B = n->B;
  int cnt = limit < d->n ? limit : d->n;
  int *seq = raspM_alloc((size_t)len * sizeof *seq);
  int *in = raspM_alloc((size_t)B * T * sizeof *in), *tgt = raspM_alloc((size_t)B * T * sizeof *tgt);
  int *apos = raspM_alloc((size_t)B * T * sizeof *apos), *pred = raspM_alloc((size_t)B * T * sizeof *pred);
  float *w = raspM_alloc((size_t)B * T * sizeof *w);
  double loss = 0, ntok = 0;
  long seqok = 0, tokok = 0, posok[64] = {0}, phit = 0, ptot = 0;
  int was = n->training;
  n->training = 0;
  for (int s0 = 0; s0 < cnt; s0 += B) {
    int b = cnt - s0 < B ? cnt - s0 : B;
    for (int j = 0; j < b; j++) {
      rasp_rng r;
      raspT_rng_seed(&r, o->seed ^ 0xe7a1, (uint64_t)(s0 + j));
      if (permute_epoch >= 0) {
        raspT_rng_seed(&r, o->seed, ((uint64_t)permute_epoch << 32) + (uint64_t)(s0 + j));
        permuted(d, o, s0 + j, &r, seq);
      } else {
        memcpy(seq, d->tok + (size_t)(s0 + j) * len, (size_t)len * sizeof *seq);
      }
      encode(o, seq, len, d->ans_start[s0 + j], 1, &r, in + j * T, tgt + j * T,
             w + j * T, apos + j * T, prefix);
    }
    train_forward(n, in, b, T);
    loss += train_loss(n, tgt, w, 1.0f, 0, pred);
    if (pb && pb->on) {
      train_forward(&pb->net, in, b, T);
      probe_count(pb, n, &pb->net, b * T, T, prefix >= 0, &phit, &ptot);
    }
    for (int j = 0; j < b; j++) {
      int ok = 1;
      for (int i = 0; i < T; i++) {
        int r = j * T + i;
        if (apos[r] < 0) continue;
        int hit = pred[r] == tgt[r];
        ok &= hit;
        tokok += hit;
        ntok++;
        if (apos[r] < 64) posok[apos[r]] += hit;
      }
      seqok += ok;
    }
  }
  n->training = was;
  mt->loss = ntok ? loss / ntok : 0;
  mt->seq_acc = cnt ? (double)seqok / cnt : 0;
  mt->tok_acc = ntok ? tokok / ntok : 0;
  for (int k = 0; k < A && k < 64; k++) mt->pos_acc[k] = cnt ? (double)posok[k] / cnt : 0;
  mt->lead_acc = mt->pos_acc[lead_index(o)];
  mt->prog_acc = ptot ? (double)phit / (double)ptot : NAN;
  raspM_free(seq);
  raspM_free(in);
  raspM_free(tgt);
  raspM_free(apos);
  raspM_free(pred);
  raspM_free(w);
}

/* ---- model set-up ------------------------------------------------------- */

/* The lowest and highest logit of a compiled model over a few of the
** training sequences, as the model sees them at evaluation (BOS prepended;
** the encoder's answer masked), for the adapted readout's floor. */
static void compiled_logit_range(const rasp_model *m, const opts *o,
                                 const dataset *d, float *lo, float *hi) {
  int T = model_len(o, d->len) + 1, cnt = d->n < 8 ? d->n : 8;
  int *in = raspM_alloc((size_t)T * sizeof *in), *tgt = raspM_alloc((size_t)T * sizeof *tgt);
  int *apos = raspM_alloc((size_t)T * sizeof *apos);
  float *w = raspM_alloc((size_t)T * sizeof *w);
  float *lg = raspM_alloc((size_t)T * m->cfg.n_out * sizeof *lg);
  *lo = INFINITY;
  *hi = -INFINITY;
  rasp_error e = {0};
  for (int s = 0; s < cnt; s++) {
    rasp_rng r;
    raspT_rng_seed(&r, o->seed ^ 0xe7a1, (uint64_t)s);
    encode(o, d->tok + (size_t)s * d->len, d->len, d->ans_start[s], 1, &r, in,
           tgt, w, apos, m->cfg.bos_token);
    if (!raspN_forward(m, in, T, lg, NULL, &e)) continue;
    for (long k = 0; k < (long)T * m->cfg.n_out; k++) {
      if (lg[k] < *lo) *lo = lg[k];
      if (lg[k] > *hi) *hi = lg[k];
    }
  }
  if (!(*lo <= *hi)) *lo = *hi = 0;
  raspM_free(in);
  raspM_free(tgt);
  raspM_free(apos);
  raspM_free(w);
  raspM_free(lg);
}

static uint64_t fnv1a(const void *p, size_t n) { return raspN_fnv1a(RASPN_FNV0, p, n); }

/* prefix: the BOS id to put before every sequence (compiled models), or
** -1.  d: training data (for the compiled logits' range).  init_fnv:
** FNV-1a of the --init model's parameters as loaded (0 for a random init),
** for the checkpoint's configuration.  For an --init model, *ref gets the
** starting point before --init-mix, --reinit-layers and --init-noise (the
** compiled point, widened by --widen: what distances are measured from)
** and *mask marks its entries that came from the --init model (all but
** --widen's); both NULL for a random init.
**
** The order: adapt a compiled readout, widen, mix with the random init of
** the same architecture and seed as compare's random arm (so --init-mix 1
** is that arm, bit for bit), re-initialise layers, add noise. */
static int make_model(const opts *o, int trial, int random_init,
                      const rasp_model_config *like, const dataset *d,
                      rasp_model *m, int *prefix, uint64_t *init_fnv,
                      unsigned char **mask, float **ref,
                      rasp_layout_unit **units, int *nunits, rasp_error *err) {
  int len = raspT_length(&o->task), vocab = o->task.V + 9;
  *units = NULL;
  *nunits = 0;
  *prefix = -1;
  *init_fnv = 0;
  *mask = NULL;
  *ref = NULL;
  if (!random_init) {
    if (!raspN_load(m, o->init, err)) return -1;
    *init_fnv = fnv1a(m->params, m->nparams * sizeof(float));
  }
  if (!random_init && train_is_compiled(m)) {
    float lo, hi;
    compiled_logit_range(m, o, d, &lo, &hi);
    /* ids the compiled model never outputs: well below anything it emits */
    float floor = lo - (hi - lo) - 1.0f;
    int bos = m->cfg.bos_token;
    /* the layout's heads, for the probe, before adapting drops the layout */
    int nu = 0;
    rasp_layout_unit *u = raspN_layout_units(m, &nu);
    for (int k = 0; k < nu; k++)
      if (!strcmp(u[k].kind, "head") && u[k].categorical && u[k].layer >= 0)
        u[(*nunits)++] = u[k];
    if (*nunits) *units = u;
    else raspM_free(u);
    if (!train_adapt_compiled(m, o->init, &o->task, o->encoder, vocab,
                             model_len(o, len), floor, err)) {
      raspN_free(m);
      raspM_free(*units);
      *units = NULL;
      return -1;
    }
    *prefix = bos;
    if (trial == 0)
      fprintf(stderr, "rasp-train: '%s' is compiled: BOS %d prepended, readout "
                      "mapped to %d token ids (compiled logits in [%.3g, %.3g], "
                      "floor %.3g); d_model %d, %d layers, %d heads, d_mlp %d, "
                      "no layer norm, %s\n",
              o->init, bos, vocab, lo, hi, floor, m->cfg.d_model,
              m->cfg.n_layers, m->cfg.n_heads, m->cfg.d_mlp,
              m->cfg.causal ? "causal" : "non-causal");
  } else if (!random_init) {
    const rasp_model_config *c = &m->cfg;
    int need = o->encoder ? vocab : vocab - 1;
    if (c->vocab_size < need || c->n_out < vocab - 1 ||
        c->max_len < model_len(o, len) || c->causal != !o->encoder) {
      raspR_setnopos(err, "'%s': does not fit the task (vocab_size %d, n_out "
                          "%d, max_len %d, causal %d; the task needs vocab_size "
                          ">= %d, n_out >= %d, max_len >= %d, causal %d)",
                     o->init, c->vocab_size, c->n_out, c->max_len, c->causal,
                     need, vocab - 1, model_len(o, len), !o->encoder);
      raspN_free(m);
      return -1;
    }
  } else if (like) { /* compare: the compiled model's architecture */
    if (!raspN_init(m, like, err)) return -1;
    *prefix = like->bos_token;
    train_init_params(m, o->seed * 1000003 + (uint64_t)trial);
  } else {
    rasp_model_config c = o->arch;
    c.vocab_size = vocab;
    c.n_out = vocab;
    c.max_len = len;
    c.d_head = c.d_model / c.n_heads;
    c.causal = !o->encoder;
    c.bos_token = o->task.bos ? o->task.V + RASP_SP_BOS : -1;
    if (!raspN_init(m, &c, err)) return -1;
    train_init_params(m, o->seed * 1000003 + (uint64_t)trial);
  }
  if (!random_init) {
    if (o->widen && *prefix < 0) { /* only compiled models get a prefix */
      raspR_setnopos(err, "--widen: '%s' is not a compiled model", o->init);
      goto fail;
    }
    if (o->widen) {
      if (!train_widen(m, o->widen, o->widen_scale,
                      o->seed * 1000003 + (uint64_t)trial, mask, err))
        goto fail;
      if (trial == 0)
        fprintf(stderr, "rasp-train: widened by %d: d_model %d, %d heads, "
                        "d_mlp %d\n", o->widen, m->cfg.d_model,
                m->cfg.n_heads, m->cfg.d_mlp);
    } else {
      *mask = raspM_alloc(m->nparams ? m->nparams : 1);
      memset(*mask, 1, m->nparams);
    }
    *ref = raspM_alloc((m->nparams ? m->nparams : 1) * sizeof(float));
    memcpy(*ref, m->params, m->nparams * sizeof(float));
  }
  if (!random_init && o->init_mix > 0) {
    /* (1 - A) x compiled + A x random: in float, so A = 1 gives the random
    ** weights exactly (0 * w + r = r) and A = 0 the compiled ones */
    rasp_model rm;
    if (!raspN_init(&rm, &m->cfg, err)) goto fail;
    train_init_params(&rm, o->seed * 1000003 + (uint64_t)trial);
    float A = o->init_mix;
    for (size_t i = 0; i < m->nparams; i++)
      m->params[i] = (1.0f - A) * m->params[i] + A * rm.params[i];
    raspN_free(&rm);
  }
  if (!random_init && o->reinit) {
    for (const char *p = o->reinit; *p;) {
      int l = atoi(p);
      if (l >= m->cfg.n_layers) {
        raspR_setnopos(err, "--reinit-layers: layer %d, the model has %d", l,
                       m->cfg.n_layers);
        goto fail;
      }
      train_reinit_layer(m, l, o->seed + (uint64_t)trial);
      p = strchr(p, ',');
      if (!p) break;
      p++;
    }
  }
  if (!random_init && o->init_noise > 0)
    train_add_noise(m, o->init_noise, o->seed + (uint64_t)trial);
  return 0;
fail:
  raspN_free(m);
  raspM_free(*mask);
  raspM_free(*ref);
  raspM_free(*units);
  *mask = NULL;
  *ref = NULL;
  *units = NULL;
  return -1;
}

/* ---- training ----------------------------------------------------------- */

typedef struct trainer {
  const opts *o;
  rasp_model m;
  train_net net;
  train_adamw opt;
  /* one batch, encoded */
  int *in, *tgt, *apos;
  float *w;
  int *seq;
  int prefix; /* BOS id prepended (compiled architectures), or -1 */
  int T;      /* model positions */
  uint64_t init_fnv; /* the --init model's parameters (make_model) */
  unsigned char *mask; /* make_model's: entries from the --init model */
  float *ref;          /* the compiled point (make_model), or NULL */
  probe probe;         /* "still the program" (evaluate) */
} trainer;

/* Sets up t's probe of the n head units u (copied) against the model at
** t->ref; nothing without either. */
static int trainer_probe(trainer *t, const rasp_layout_unit *u, int n,
                         rasp_error *err) {
  if (!u || !n || !t->ref) return 0;
  probe *p = &t->probe;
  if (!raspN_init(&p->m, &t->m.cfg, err)) return -1;
  memcpy(p->m.params, t->ref, t->m.nparams * sizeof(float));
  if (!train_net_init(&p->net, &p->m, t->net.B, t->net.T, 0.0f, err)) {
    raspN_free(&p->m);
    return -1;
  }
  p->u = raspM_alloc((size_t)n * sizeof *p->u);
  memcpy(p->u, u, (size_t)n * sizeof *p->u);
  p->n = n;
  p->on = 1;
  return 0;
}

static int trainer_init(trainer *t, const opts *o, int trial, int random_init,
                        const rasp_model_config *like, const dataset *d,
                        rasp_error *err) {
  memset(t, 0, sizeof *t);
  t->o = o;
  rasp_layout_unit *units = NULL;
  int nunits = 0;
  if (make_model(o, trial, random_init, like, d, &t->m, &t->prefix,
                 &t->init_fnv, &t->mask, &t->ref, &units, &nunits, err))
    return -1;
  int len = raspT_length(&o->task), T = model_len(o, len) + (t->prefix >= 0);
  t->T = T;
  if (!train_net_init(&t->net, &t->m, o->micro, T, o->dropout, err) ||
      trainer_probe(t, units, nunits, err)) {
    train_net_free(&t->net);
    raspN_free(&t->m);
    raspM_free(t->mask);
    raspM_free(t->ref);
    raspM_free(units);
    return -1;
  }
  raspM_free(units);
  raspT_rng_seed(&t->net.rng, o->seed + (uint64_t)trial, 0xd40);
  train_adamw_init(&t->opt, t->m.nparams);
  t->opt.lr = o->lr;
  t->opt.wd = o->wd;
  t->opt.sgd = o->sgd;
  t->opt.momentum = o->momentum;
  if (o->lr_rms || (o->freeze && t->mask)) {
    size_t n = t->m.nparams;
    t->opt.scale = raspM_alloc((n ? n : 1) * sizeof(float));
    if (o->lr_rms) {
      /* each tensor's RMS at the compiled point (its own init for a
      ** random model), over the compiled entries */
      rasp_model view = t->m;
      if (t->ref) view.params = t->ref;
      train_lr_scale_rms(&view, t->mask, t->opt.scale);
    } else {
      for (size_t i = 0; i < n; i++) t->opt.scale[i] = 1.0f;
    }
    if (o->freeze && t->mask)
      for (size_t i = 0; i < n; i++)
        if (t->mask[i]) t->opt.scale[i] = 0.0f;
  }
  size_t BT = (size_t)o->batch * T;
  t->in = raspM_alloc(BT * sizeof(int));
  t->tgt = raspM_alloc(BT * sizeof(int));
  t->apos = raspM_alloc(BT * sizeof(int));
  t->w = raspM_alloc(BT * sizeof(float));
  t->seq = raspM_alloc((size_t)len * sizeof(int));
  return 0;
}

static void trainer_free(trainer *t) {
  if (t->probe.on) {
    train_net_free(&t->probe.net);
    raspN_free(&t->probe.m);
    raspM_free(t->probe.u);
  }
  raspM_free(t->mask);
  raspM_free(t->ref);
  train_net_free(&t->net);
  train_adamw_free(&t->opt);
  raspN_free(&t->m);
  raspM_free(t->in);
  raspM_free(t->tgt);
  raspM_free(t->apos);
  raspM_free(t->w);
  raspM_free(t->seq);
}

/* The L2 distance of the weights from ref (the compiled point), as CSV
** text into buf; empty without one. */
static const char *dist_text(const trainer *t, const float *ref, char *buf,
                             size_t size) {
  buf[0] = 0;
  if (!ref) return buf;
  double s = 0;
  for (size_t i = 0; i < t->m.nparams; i++) {
    double d = (double)t->m.params[i] - ref[i];
    s += d * d;
  }
  snprintf(buf, size, "%.6g", sqrt(s));
  return buf;
}

/* The probe's accuracy as CSV text; empty without a probe. */
static const char *prog_text(const metrics *mv, char *buf, size_t size) {
  buf[0] = 0;
  if (!isnan(mv->prog_acc)) snprintf(buf, size, "%.6g", mv->prog_acc);
  return buf;
}

/* Encodes the batch of samples idx[0..b) for epoch e (the permutation of
** G and the masks are pure functions of (seed, epoch, sample)). */
static void encode_batch(trainer *t, const dataset *d, const int *idx, int b,
                         int e) {
  const opts *o = t->o;
  int T = t->T;
  for (int j = 0; j < b; j++) {
    rasp_rng r;
    raspT_rng_seed(&r, o->seed, ((uint64_t)e << 32) + (uint64_t)idx[j]);
    permuted(d, o, idx[j], &r, t->seq);
    encode(o, t->seq, d->len, d->ans_start[idx[j]], 0, &r, t->in + (size_t)j * T,
           t->tgt + (size_t)j * T, t->w + (size_t)j * T, t->apos + (size_t)j * T,
           t->prefix);
  }
}

/* One optimiser step over the encoded batch; returns the mean loss per
** answer token. */
static double train_step(trainer *t, int b, int T) {
  double wsum = 0;
  for (long i = 0; i < (long)b * T; i++) wsum += t->w[i];
  if (wsum <= 0) return 0;
  train_zero_grad(&t->net);
  t->net.training = 1;
  double loss = 0;
  for (int s0 = 0; s0 < b; s0 += t->net.B) {
    int mb = b - s0 < t->net.B ? b - s0 : t->net.B;
    size_t off = (size_t)s0 * T;
    train_forward(&t->net, t->in + off, mb, T);
    loss += train_loss(&t->net, t->tgt + off, t->w + off, (float)(1.0 / wsum), 1, NULL);
    train_backward(&t->net);
  }
  train_adamw_step(&t->opt, t->m.params, t->net.grad, t->m.nparams);
  return loss / wsum;
}

static void shuffle_order(int *ord, int n, uint64_t seed, int epoch) {
  rasp_rng r;
  raspT_rng_seed(&r, seed ^ 0x0de5, (uint64_t)epoch);
  for (int i = 0; i < n; i++) ord[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)raspT_rng_below(&r, (uint64_t)i + 1), x = ord[i];
    ord[i] = ord[j];
    ord[j] = x;
  }
}

/* ---- logs, rewritten whole and atomically ------------------------------- */

/* A log kept in memory and written out whole (raspR_write_file: a temporary
** file renamed over the old one) after every row, so that a run killed at
** any moment leaves the previous or the new log, never a torn one. */
typedef struct logbuf {
  char *s;
  size_t len, cap;
} logbuf;

static void lb_printf(logbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (b->len + (size_t)n + 1 > b->cap) {
    while (b->len + (size_t)n + 1 > b->cap) b->cap = b->cap ? b->cap * 2 : 4096;
    b->s = raspM_realloc(b->s, b->cap);
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

static int lb_commit(const logbuf *b, const char *path, rasp_error *err) {
  return raspR_write_file(path, b->s ? b->s : "", b->len, err) ? 0 : -1;
}

/* Resuming: the rows of an earlier log up to (and including) epoch `upto`
** (its second column), so a run killed between writing its log and its
** checkpoint does not repeat a row.  Returns 1 if a log was read. */
static int lb_resume(logbuf *b, const char *path, int upto) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[8192];
  int first = 1;
  while (fgets(line, sizeof line, f)) {
    size_t n = strlen(line);
    if (!n || line[n - 1] != '\n') break; /* (not possible: written whole) */
    const char *c = strchr(line, ',');
    if (first || (c && atoi(c + 1) <= upto)) lb_printf(b, "%s", line);
    first = 0;
  }
  fclose(f);
  return b->len > 0;
}

static void csv_header(logbuf *f, const opts *o) {
  lb_printf(f, "trial,epoch,step,train_loss,train_eval_loss,val_loss,val_seq_acc,"
               "val_tok_acc,val_lead_acc");
  for (int k = 0; k < answer_len(o); k++) lb_printf(f, ",val_pos%d_acc", k);
  lb_printf(f, ",seconds,dist_compiled,program_acc\n");
}

/* The shortest "%g" text that reads back as f. */
static const char *ftext(char *buf, size_t size, float f) {
  for (int p = 6; p <= 9; p++) {
    snprintf(buf, size, "%.*g", p, (double)f);
    if (strtof(buf, NULL) == f) break;
  }
  return buf;
}

/* The checkpoint's configuration: every option that shapes a trial's
** trajectory, one "--name value" line each, in the form the command line
** takes (floats in the shortest form that reads back exactly, so equal
** means equal).  --epochs, --max-steps and --stop-loss only say where to
** stop (a finished run resumes when given more), --trials, --threads,
** --eval-every and --out not what a trial computes, so they are left out.
** init-weights fingerprints the --init model's contents, which may change
** under the same name. */
static void config_text(logbuf *b, const opts *o, uint64_t init_fnv) {
  char f1[32], f2[32], f3[32];
  static const char *orders[] = {"edge", "arm"}, *qs[] = {"start", "end"};
  const char *ans = o->task.answer == RASP_ANS_FORWARD   ? "fwd"
                    : o->task.answer == RASP_ANS_REVERSE ? "rev"
                                                         : "lead";
  const char *obj = o->obj == OBJ_TF ? "tf" : o->obj == OBJ_IAR ? "iar" : "nar";
  lb_printf(b, "--D %d\n--M %d\n--V %d\n--order %s\n--q %s\n--answer %s\n"
               "--structured %d\n--no-bos %s\n--no-eos %s\n--st-names %s\n",
            o->task.D, o->task.M, o->task.V, orders[o->task.order == RASP_ORDER_ARM],
            qs[o->task.q == RASP_Q_END], ans, o->task.structured,
            o->task.bos ? "no" : "yes", o->task.eos ? "no" : "yes",
            o->task.st_names ? "yes" : "no");
  lb_printf(b, "--model %s\n--objective %s\n--layers %d\n--d-model %d\n"
               "--heads %d\n--d-mlp %d\n--pos %s\n--ln %s\n--act %s\n",
            o->encoder ? "encoder" : "decoder", obj, o->arch.n_layers,
            o->arch.d_model, o->arch.n_heads, o->arch.d_mlp,
            o->arch.pos_embedding ? "learned" : "none",
            o->arch.layer_norm ? "pre" : "none", o->arch.gelu ? "gelu" : "relu");
  lb_printf(b, "--init %s\n--init-noise %s\n--reinit-layers %s\n", o->init,
            ftext(f1, sizeof f1, o->init_noise), o->reinit ? o->reinit : "none");
  if (init_fnv) lb_printf(b, "init-weights %016llx\n", (unsigned long long)init_fnv);
  /* the protocols, each only when not the default, so that checkpoints
  ** made before they existed still resume */
  if (o->init_mix > 0) lb_printf(b, "--init-mix %s\n", ftext(f1, sizeof f1, o->init_mix));
  if (o->widen)
    lb_printf(b, "--widen %d\n--widen-scale %s\n", o->widen,
              ftext(f1, sizeof f1, o->widen_scale));
  if (o->freeze) lb_printf(b, "--freeze compiled\n");
  if (o->sgd)
    lb_printf(b, "--optim sgd\n--momentum %s\n", ftext(f1, sizeof f1, o->momentum));
  if (o->lr_rms) lb_printf(b, "--lr-scale rms\n");
  lb_printf(b, "--lr %s\n--wd %s\n--dropout %s\n--batch %d\n--micro %d\n"
               "--train %d\n--test %d\n--seed %llu\n--train-seed %llu\n"
               "--test-seed %llu\n",
            ftext(f1, sizeof f1, o->lr), ftext(f2, sizeof f2, o->wd),
            ftext(f3, sizeof f3, o->dropout), o->batch, o->micro,
            o->ntrain, o->ntest, (unsigned long long)o->seed,
            (unsigned long long)o->train_seed, (unsigned long long)o->test_seed);
}

typedef struct trial_result {
  double val_seq, val_loss, train_loss;
  int epochs;
} trial_result;

static int run_trial(const opts *o, int trial, const dataset *tr,
                     const dataset *te, trial_result *res, rasp_error *err) {
  trainer t;
  opts ot = *o;
  ot.seed = o->seed + (uint64_t)trial * 7919;
  if (trainer_init(&t, &ot, trial, !strcmp(o->init, "random"), NULL, tr, err))
    return -1;
  train_ckpt_state st = {0, 0, INFINITY, 0, 0};
  char stem[4096] = "", csvp[4200] = "";
  logbuf csv = {0}, cfg = {0};
  if (o->out) {
    snprintf(stem, sizeof stem, "%s/trial%d", o->out, trial);
    snprintf(csvp, sizeof csvp, "%s/trial%d.csv", o->out, trial);
    config_text(&cfg, o, t.init_fnv);
    /* generations written but never committed (a kill between the two) */
    train_ckpt_clean(stem);
    long gen = train_ckpt_generation(stem, err);
    if (gen < 0 && o->resume) {
      trainer_free(&t);
      raspM_free(cfg.s);
      return -1;
    }
    /* a fresh run numbers its generations after any committed one, so
    ** that the old checkpoint stays whole until the new one commits */
    st.generation = gen > 0 ? gen : 0;
    if (o->resume && gen > 0) {
      rasp_model m2;
      train_adamw o2;
      char *saved = NULL;
      if (!train_ckpt_load(stem, &m2, &o2, &st, &saved, err)) {
        trainer_free(&t);
        raspM_free(cfg.s);
        return -1;
      }
      char diff[sizeof err->msg - 200];
      int nd = train_config_diff(saved, cfg.s, diff, sizeof diff);
      int bad = nd || m2.nparams != t.m.nparams;
      if (bad)
        raspR_setnopos(err, "'%s.ckpt': the checkpoint was made with other "
                            "options: %s; resume with the same options, or "
                            "train into another --out", stem,
                       nd ? diff : "(a model of another size)");
      else {
        memcpy(t.m.params, m2.params, m2.nparams * sizeof(float));
        memcpy(t.opt.m, o2.m, m2.nparams * sizeof(float));
        memcpy(t.opt.v, o2.v, m2.nparams * sizeof(float));
        t.opt.step = o2.step;
      }
      raspM_free(saved);
      raspN_free(&m2);
      train_adamw_free(&o2);
      if (bad) {
        trainer_free(&t);
        raspM_free(cfg.s);
        return -1;
      }
      /* a finished run resumes when given more epochs or steps */
      st.done = st.best_val < o->stop_loss || st.epoch >= o->epochs ||
                (o->max_steps && st.step >= o->max_steps);
      fprintf(stderr, "trial %d: resumed after epoch %d (step %ld)\n", trial,
              st.epoch, st.step);
    }
    if (!st.epoch || !lb_resume(&csv, csvp, st.epoch)) {
      csv.len = 0;
      csv_header(&csv, o);
    }
  }
  int T = t.T;
  int *ord = raspM_alloc((size_t)tr->n * sizeof *ord);
  metrics mv = {0}, mt = {0};
  double t0 = (double)clock() / CLOCKS_PER_SEC;
  struct timespec w0;
  clock_gettime(CLOCK_MONOTONIC, &w0);
  int rc = 0;
  if (!st.epoch && !st.done) {
    /* before the first step: the initialisation's accuracies (for a
    ** compiled model, what `rasp compile --check` measured) */
    evaluate(&t.net, &ot, t.prefix, te, te->n, -1, &t.probe, &mv);
    evaluate(&t.net, &ot, t.prefix, tr, te->n, 0, NULL, &mt);
    fprintf(stderr, "trial %d before training: val %.4f seq %.3f lead %.3f pos",
            trial, mv.loss, mv.seq_acc, mv.lead_acc);
    for (int k = 0; k < answer_len(o) && k < 64; k++)
      fprintf(stderr, " %.3f", mv.pos_acc[k]);
    fprintf(stderr, "\n");
    char dist[32], prog[32];
    dist_text(&t, t.ref, dist, sizeof dist);
    if (t.ref)
      fprintf(stderr, "trial %d before training: L2 distance from the compiled "
                      "point %s%s%s\n", trial, dist, t.probe.on ? ", program heads " : "",
              prog_text(&mv, prog, sizeof prog));
    if (o->out) {
      lb_printf(&csv, "%d,0,0,,%.6g,%.6g,%.6g,%.6g,%.6g", trial, mt.loss,
                mv.loss, mv.seq_acc, mv.tok_acc, mv.lead_acc);
      for (int k = 0; k < answer_len(o); k++) lb_printf(&csv, ",%.6g", mv.pos_acc[k]);
      lb_printf(&csv, ",0,%s,%s\n", dist, prog_text(&mv, prog, sizeof prog));
      if (lb_commit(&csv, csvp, err)) rc = -1;
    }
    memset(&mv, 0, sizeof mv);
    memset(&mt, 0, sizeof mt);
  }
  while (!rc && !st.done && st.epoch < o->epochs) {
    int e = st.epoch;
    shuffle_order(ord, tr->n, ot.seed, e);
    /* dropout masks from a stream tied to the epoch: a resumed run draws
    ** exactly what an uninterrupted one would */
    raspT_rng_seed(&t.net.rng, ot.seed, 0xd40000 + (uint64_t)e);
    double eloss = 0;
    int nb = 0;
    for (int s0 = 0; s0 < tr->n; s0 += o->batch) {
      int b = tr->n - s0 < o->batch ? tr->n - s0 : o->batch;
      encode_batch(&t, tr, ord + s0, b, e);
      eloss += train_step(&t, b, T);
      nb++;
      st.step++;
      if (o->max_steps && st.step >= o->max_steps) break;
    }
    st.epoch++;
    evaluate(&t.net, &ot, t.prefix, te, te->n, -1, &t.probe, &mv);
    evaluate(&t.net, &ot, t.prefix, tr, te->n, e, NULL, &mt);
    struct timespec w1;
    clock_gettime(CLOCK_MONOTONIC, &w1);
    double secs = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);
    if (mv.loss < st.best_val) st.best_val = mv.loss;
    res->train_loss = mt.loss;
    char dist[32], prog[32];
    dist_text(&t, t.ref, dist, sizeof dist);
    if (o->out) {
      lb_printf(&csv, "%d,%d,%ld,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g", trial, st.epoch,
                st.step, nb ? eloss / nb : 0, mt.loss, mv.loss, mv.seq_acc,
                mv.tok_acc, mv.lead_acc);
      for (int k = 0; k < answer_len(o); k++) lb_printf(&csv, ",%.6g", mv.pos_acc[k]);
      lb_printf(&csv, ",%.2f,%s,%s\n", secs, dist, prog_text(&mv, prog, sizeof prog));
      if (lb_commit(&csv, csvp, err)) {
        rc = -1;
        break;
      }
    }
    fprintf(stderr, "trial %d epoch %d step %ld: train %.4f val %.4f seq %.3f "
                    "lead %.3f (%.1fs)\n", trial, st.epoch, st.step,
            nb ? eloss / nb : 0, mv.loss, mv.seq_acc, mv.lead_acc, secs);
    if (t.ref)
      fprintf(stderr, "trial %d epoch %d: L2 distance from the compiled point "
                      "%s%s%s\n", trial, st.epoch, dist,
              t.probe.on ? ", program heads " : "", prog_text(&mv, prog, sizeof prog));
    if (mv.loss < o->stop_loss) st.done = 1;
    if (o->max_steps && st.step >= o->max_steps) st.done = 1;
    if (st.epoch >= o->epochs) st.done = 1;
    if (o->out && !train_ckpt_save(stem, &t.m, &t.opt, &st, cfg.s, err)) {
      rc = -1;
      break;
    }
  }
  (void)t0;
  if (!rc && st.done && st.step && mv.loss == 0 && mt.loss == 0) {
    /* finished earlier (resumed a completed run): evaluate once */
    evaluate(&t.net, &ot, t.prefix, te, te->n, -1, &t.probe, &mv);
    evaluate(&t.net, &ot, t.prefix, tr, te->n, 0, NULL, &mt);
    res->train_loss = mt.loss;
  }
  res->val_seq = mv.seq_acc;
  res->val_loss = mv.loss;
  res->epochs = st.epoch;
  raspM_free(csv.s);
  raspM_free(cfg.s);
  raspM_free(ord);
  trainer_free(&t);
  return rc;
}

/* ---- compare ------------------------------------------------------------ */

/* The gnuplot script for compare.csv: loss, leading-node and sequence
** accuracy against steps, one line per arm.  It names no file: the CSV and
** the PNG are its arguments (gnuplot -c compare.gp CSV PNG, PNG '-' for the
** standard output; by default compare.csv and compare.png beside it), so no
** file name is ever gnuplot code, whatever --out holds.  Rows cycle
** through the n arms after the header: arm k is every n::(k+1).  Arm names
** are letters, digits, '_' and '-' (parse_arm), safe in gnuplot strings. */
static int write_compare_gp(const char *gp, int n, char names[][33],
                            rasp_error *err) {
  logbuf g = {0};
  lb_printf(&g,
            "# gnuplot -c compare.gp [CSV [PNG]]\n"
            "csv = ARGC >= 1 ? ARG1 : 'compare.csv'\n"
            "png = ARGC >= 2 ? ARG2 : 'compare.png'\n"
            "set terminal pngcairo size 1200,360 font ',10'\n"
            "if (png eq '-') { set output } else { set output png }\n"
            "set datafile separator ','\n"
            "set multiplot layout 1,3\n"
            "set xlabel 'step'\n");
  static const char *titles[] = {"validation loss (answer tokens)", "leading-node accuracy",
                                 "other answer tokens (mean accuracy)"};
  static const int cols[] = {4, 5, 8};
  for (int p = 0; p < 3; p++) {
    lb_printf(&g, "set title '%s'\n", titles[p]);
    if (p == 0) lb_printf(&g, "set logscale y\n");
    if (p == 1) lb_printf(&g, "unset logscale y\nset yrange [0:1.05]\n");
    for (int k = 0; k < n; k++)
      lb_printf(&g, "%s every %d::%d using 1:%d with lines lw 2 title '%s'%s",
                k ? "''" : "plot csv", n, k + 1, cols[p], names[k],
                k + 1 < n ? ", " : "\n");
  }
  lb_printf(&g, "unset multiplot\n");
  int rc = lb_commit(&g, gp, err);
  raspM_free(g.s);
  return rc;
}

/* Every arm on the same batches in the same order: the arms differ only in
** how they train (parse_arm), and each step encodes the same samples for
** each (a pure function of seed, epoch and sample).  Without --arm the arms
** are random (the compiled architecture, random weights) and compiled. */
static int run_compare(const opts *o, const dataset *tr, const dataset *te,
                       rasp_error *err) {
  int n = o->narms ? o->narms : 2;
  char names[MAX_ARMS][33];
  int base[MAX_ARMS];
  const opts *aopt[MAX_ARMS];
  for (int k = 0; k < n; k++) {
    if (o->narms) {
      snprintf(names[k], sizeof names[k], "%s", o->arms[k].name);
      base[k] = o->arms[k].base;
      aopt[k] = o->arms[k].o;
    } else {
      snprintf(names[k], sizeof names[k], "%s", k ? "compiled" : "random");
      base[k] = k ? ARM_COMPILED : ARM_RANDOM;
      aopt[k] = o;
    }
  }
  /* the compiled model with the command line's options: the architecture
  ** of the random arms and the point distances are measured from */
  trainer tc;
  if (trainer_init(&tc, o, 0, 0, NULL, tr, err)) return -1;
  trainer *ts = raspM_alloc((size_t)n * sizeof *ts);
  memset(ts, 0, (size_t)n * sizeof *ts);
  int made = 0, rc = 0;
  for (; made < n; made++) {
    int k = made, b = base[k];
    if (trainer_init(&ts[k], aopt[k], 0, b != ARM_COMPILED,
                     b == ARM_RANDOM ? &tc.m.cfg : NULL, tr, err)) {
      rc = -1;
      break;
    }
    if (b == ARM_RANDOM && ts[k].m.nparams == tc.m.nparams) {
      ts[k].ref = raspM_alloc((tc.m.nparams ? tc.m.nparams : 1) * sizeof(float));
      memcpy(ts[k].ref, tc.ref, tc.m.nparams * sizeof(float));
      /* its heads against the compiled ones: the chance baseline */
      if (trainer_probe(&ts[k], tc.probe.u, tc.probe.n, err)) {
        made++;
        rc = -1;
        break;
      }
    }
  }
  trainer_free(&tc);
  logbuf f = {0};
  int *ord = NULL;
  if (rc) goto out;
  const char *dir = o->out ? o->out : ".";
  /* gnuplot reads a file name that starts with '<' as a shell command:
  ** relative paths get "./" in front */
  const char *dot = dir[0] == '/' ? "" : "./";
  char csvp[4300], pngp[4300], gp[4300];
  snprintf(csvp, sizeof csvp, "%s%s/compare.csv", dot, dir);
  snprintf(pngp, sizeof pngp, "%s%s/compare.png", dot, dir);
  snprintf(gp, sizeof gp, "%s%s/compare.gp", dot, dir);
  int A = answer_len(o), lead = lead_index(o);
  lb_printf(&f, "step,init,train_loss,val_loss,val_lead_acc,val_seq_acc,"
                "val_tok_acc,val_other_acc");
  for (int k = 0; k < A && k < 64; k++) lb_printf(&f, ",val_pos%d_acc", k);
  lb_printf(&f, ",dist_compiled,program_acc\n");
  int every = o->eval_every ? o->eval_every : 10;
  int nev = te->n < 500 ? te->n : 500;
  ord = raspM_alloc((size_t)tr->n * sizeof *ord);
  long step = 0, max = o->max_steps ? o->max_steps : 1L << 40;
  metrics mv;
  double *l = raspM_alloc((size_t)n * sizeof *l);
#define ROW(k, lossfmt)                                                        \
  do {                                                                         \
    double oth = 0;                                                            \
    for (int q = 0; q < A && q < 64; q++)                                      \
      if (q != lead) oth += mv.pos_acc[q];                                     \
    oth = A > 1 ? oth / (A - 1) : 0;                                           \
    lb_printf(&f, "%ld,%s,", step, names[k]);                                  \
    lossfmt;                                                                   \
    lb_printf(&f, ",%.6g,%.6g,%.6g,%.6g,%.6g", mv.loss, mv.lead_acc,           \
              mv.seq_acc, mv.tok_acc, oth);                                    \
    for (int q = 0; q < A && q < 64; q++) lb_printf(&f, ",%.6g", mv.pos_acc[q]); \
    char dist_[32], prog_[32];                                                 \
    lb_printf(&f, ",%s,%s\n", dist_text(&ts[k], ts[k].ref, dist_, sizeof dist_), \
              prog_text(&mv, prog_, sizeof prog_));                            \
    fprintf(stderr, "step %ld %s: val %.4f lead %.3f seq %.3f pos", step,      \
            names[k], mv.loss, mv.lead_acc, mv.seq_acc);                       \
    for (int q = 0; q < A && q < 64; q++) fprintf(stderr, " %.3f", mv.pos_acc[q]); \
    fprintf(stderr, "\n");                                                     \
  } while (0)
  for (int k = 0; k < n; k++) {
    evaluate(&ts[k].net, o, ts[k].prefix, te, nev, -1, &ts[k].probe, &mv);
    ROW(k, (void)0);
  }
  if (lb_commit(&f, csvp, err) || write_compare_gp(gp, n, names, err))
    rc = -1;
  for (int e = 0; !rc && e < o->epochs && step < max; e++) {
    shuffle_order(ord, tr->n, o->seed, e);
    for (int s0 = 0; s0 < tr->n && step < max; s0 += o->batch) {
      int b = tr->n - s0 < o->batch ? tr->n - s0 : o->batch;
      for (int k = 0; k < n; k++) {
        /* the same sequences (and masks) for every arm: a pure function
        ** of (seed, epoch, sample) */
        encode_batch(&ts[k], tr, ord + s0, b, e);
        l[k] = train_step(&ts[k], b, ts[k].T);
      }
      step++;
      if (step % every == 0 || step == max) {
        for (int k = 0; k < n; k++) {
          evaluate(&ts[k].net, o, ts[k].prefix, te, nev, -1, &ts[k].probe, &mv);
          ROW(k, lb_printf(&f, "%.6g", l[k]));
        }
        if (lb_commit(&f, csvp, err)) {
          rc = -1;
          break;
        }
      }
    }
  }
#undef ROW
  raspM_free(l);
out:
  raspM_free(f.s);
  raspM_free(ord);
  for (int k = 0; k < made; k++) trainer_free(&ts[k]);
  raspM_free(ts);
  if (rc) return -1;
  /* no shell: gnuplot's arguments are a vector, and the PNG comes on its
  ** standard output into a fresh mkstemp file renamed over compare.png */
  const char *gargv[] = {"gnuplot", "-c", gp, csvp, "-", NULL};
  rasp_afile png;
  rasp_error perr = {0};
  if (raspR_atomic_open(&png, pngp, &perr)) {
    if (!raspR_spawn(gargv, -1, fileno(png.f), &perr)) raspR_atomic_abort(&png);
    else raspR_atomic_commit(&png, &perr);
  }
  if (perr.set)
    fprintf(stderr, "rasp-train: no plot (%s); curves are in %s (script %s)\n", perr.msg,
            csvp, gp);
  else
    fprintf(stderr, "rasp-train: wrote %s and %s\n", csvp, pngp);
  return 0;
}

/* ---- main --------------------------------------------------------------- */

/* DIR/config.txt, written atomically when a run starts: every option's
** value, the defaults included, one "--name value" line each (flags as
** "--no-bos yes"), so that a run directory says how it was made.
** The lines config_text writes (and checkpoints compare on --resume) come
** first, then those that only say where to stop and how to run; options
** that are off are comment lines. */
static int write_run_config(const opts *o, rasp_error *err) {
  logbuf b = {0};
  char f1[32], path[4200];
  lb_printf(&b, "# rasp-train%s: every option of the run in %s (rasp-train --help "
                "says what each means)\n", o->compare ? " compare" : "", o->out);
  config_text(&b, o, 0);
  if (!o->init_mix) lb_printf(&b, "# --init-mix: off\n");
  if (!o->widen) lb_printf(&b, "# --widen: off (--widen-scale %s)\n", ftext(f1, sizeof f1, o->widen_scale));
  if (!o->freeze) lb_printf(&b, "--freeze none\n");
  if (!o->sgd) lb_printf(&b, "--optim adamw\n");
  if (!o->lr_rms) lb_printf(&b, "--lr-scale none\n");
  lb_printf(&b, "--epochs %d\n", o->epochs);
  if (o->max_steps) lb_printf(&b, "--max-steps %ld\n", o->max_steps);
  else lb_printf(&b, "# --max-steps: not set (no limit)\n");
  lb_printf(&b, "--stop-loss %s\n--trials %d\n--eval-every %d\n", ftext(f1, sizeof f1, o->stop_loss),
            o->trials, o->eval_every);
  if (o->threads) lb_printf(&b, "--threads %d\n", o->threads);
  else lb_printf(&b, "# --threads: not set (%d, OpenMP's default)\n", omp_get_max_threads());
  lb_printf(&b, "--out %s\n", o->out);
  if (o->resume) lb_printf(&b, "--resume\n");
  for (int k = 0; k < o->narms; k++) lb_printf(&b, "--arm %s\n", o->arm_spec[k]);
  snprintf(path, sizeof path, "%s/config.txt", o->out);
  int rc = lb_commit(&b, path, err);
  raspM_free(b.s);
  return rc;
}

static int run(const opts *op) {
  opts o = *op; /* shares op's arms */
  int rc = 0;
  if (o.threads) omp_set_num_threads(o.threads);
  rasp_error err = {0};
  if (o.out && !raspR_mkdirs(o.out, &err)) { /* parents too, as mkdir -p */
    fprintf(stderr, "rasp-train: --out: %s\n", err.msg);
    return 1;
  }
  if (o.out) {
    /* one run per directory: the lock (released by the kernel however the
    ** run ends) makes it safe to remove what killed runs left */
    char lp[4200];
    snprintf(lp, sizeof lp, "%s/rasp-train.lock", o.out);
    int lk = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (lk < 0 || flock(lk, LOCK_EX | LOCK_NB)) {
      int e = errno;
      fprintf(stderr, "rasp-train: cannot lock '%s': %s\n", lp,
              e == EWOULDBLOCK ? "another rasp-train is using the directory"
                               : strerror(e));
      return 1;
    }
    int n = train_clean_tmp(o.out);
    if (n)
      fprintf(stderr, "rasp-train: removed %d temporary file%s left in '%s' "
                      "by a killed run\n", n, n > 1 ? "s" : "", o.out);
    if (write_run_config(&o, &err)) {
      fprintf(stderr, "rasp-train: %s\n", err.msg);
      return 1;
    }
  }
  dataset tr = {0}, te = {0};
  int overlap = 0;
  if (make_data(&o, &tr, &te, &overlap, &err)) {
    fprintf(stderr, "rasp-train: %s\n", err.msg);
    return 1;
  }
  fprintf(stderr, "rasp-train: %d training sequences, %d test (%d overlapping "
                  "test samples skipped), %d tokens each\n",
          tr.n, te.n, overlap, tr.len);
  if (o.compare) {
    rc = run_compare(&o, &tr, &te, &err) ? 1 : 0;
    if (rc) fprintf(stderr, "rasp-train: %s\n", err.msg);
    ds_free(&tr);
    ds_free(&te);
    return rc;
  }
  int ok = 0, failed = 0, not_diverged = 0;
  for (int k = 0; k < o.trials; k++) {
    trial_result r = {0};
    if (run_trial(&o, k, &tr, &te, &r, &err)) {
      fprintf(stderr, "rasp-train: %s\n", err.msg);
      rc = 1;
      break;
    }
    /* success: >= 95% teacher-forced sequence accuracy.  A failed trial
    ** "overfits" when its validation loss has diverged from its training
    ** loss: val > 2 * train + 0.05 (our reading of the paper's second
    ** column, which reports failed trials that have NOT diverged). */
    int success = r.val_seq >= 0.95;
    int diverged = r.val_loss > 2 * r.train_loss + 0.05;
    ok += success;
    if (!success) {
      failed++;
      not_diverged += !diverged;
    }
    printf("trial %d: epochs %d, val seq acc %.4f, val loss %.4f, train loss "
           "%.4f: %s\n", k, r.epochs, r.val_seq, r.val_loss, r.train_loss,
           success ? "success" : diverged ? "failed (overfit)" : "failed");
  }
  if (!rc) {
    printf("summary: %d trials, %.0f%% reached 95%% sequence accuracy", o.trials,
           100.0 * ok / o.trials);
    if (failed)
      printf("; of %d failed, %.0f%% did not diverge (%.0f%% overfit)", failed,
             100.0 * not_diverged / failed, 100.0 * (failed - not_diverged) / failed);
    printf("\n");
  }
  ds_free(&tr);
  ds_free(&te);
  return rc;
}

/* --opt=VALUE is --opt VALUE, as in every rasp command; --version prints
** the version.  The new vector lives until exit. */
static char **split_args;

static int split_options(int *argcp, char ***argvp) {
  int version;
  split_args = raspR_split_options(argcp, *argvp, 1, &version);
  if (!split_args) {
    fputs("rasp-train: out of memory\n", stderr);
    exit(1);
  }
  *argvp = split_args;
  if (version) printf("rasp-train " RASP_VERSION "\n");
  return version;
}

int main(int argc, char **argv) {
  opts o;
  if (split_options(&argc, &argv)) {
    free(split_args);
    return 0;
  }
  int rc = parse_opts(argc, argv, &o);
  if (!rc) rc = run(&o);
  opts_free(&o);
  free(split_args);
  return rc;
}
