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
** defaulted train_opts, so the two cannot disagree), the checks across
** options, compare's --arm specifications, and the wiring.  The table's
** format, its parser and its help printer are the `rasp` commands' own
** (rasp/ropts.h), so both programs spell, refuse and document options
** alike.  The parser's functions return the exit status main ends with (0,
** or 2 for bad usage after a message), not the 1/0 of the modules
** (topts.h); run turns a module's failure into 1.  The rest is in modules:
**     topts.h    the options every module reads
**     tdata.c    training and test sets, epoch order, encodings
**     tarm.c     one model: set-up from random or --init, step, evaluation
**     tloop.c    the training loop; trials and compare around it
**     tresume.c  the run directory (--out) and checkpoint policy
**     tlog.c     logs rewritten whole and atomically
**     ttask.c    an --init model's task (STEM.json) against the options
**     tckpt.c    checkpoint files, the run directory's temporaries
**     tinit.c    compiled models as initialisation, widening
**     tnet.c     forward and backward passes, optimisers
**     tmpi.c     (--with-mpi builds) the ranks of a data-parallel run
** Protocols and their measurements: doc/training-small.md.
*/
#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rasp.h"
#include "rmem.h"
#include "ropts.h"
#include "rmpiconf.h" /* RASP_MPI: built --with-mpi */
#include "tarm.h"
#include "tdata.h"
#include "tlog.h"
#include "tloop.h"
#include "topts.h"
#include "tresume.h"
#include "ttask.h"
#ifdef RASP_MPI
#include "tmpi.h"
#endif

/* ---- the option table --------------------------------------------------- */

/* The rows are ropts.h's, written OPT(name, arg, kind, field, lo, hi,
** hi_open, choices, arm, help, default): the value goes into train_opts's
** field, checked against [lo, hi] (hi excluded if hi_open) or choices (a
** flag sets choices[0]'s value); arm 1 marks an option an --arm may set;
** default is the default as text when the field's own value does not say
** it.  HEAD(title) starts a group of the help.  The kinds by short names: */
#define K_INT RASPU_INT
#define K_LONG RASPU_LONG
#define K_U64 RASPU_U64
#define K_FLOAT RASPU_FLOAT
#define K_CHOICE RASPU_CHOICE
#define K_FLAG RASPU_FLAG
#define K_STR RASPU_STRING
#define K_ARM RASPU_TEXT /* --arm: each one handed back, parsed by parse_arm */
#define OPT(name_, arg_, kind_, off_, lo_, hi_, hi_open_, ch_, arm_, help_, def_)                 \
  {.name = (name_), .arg = (arg_), .kind = (kind_), .off = (off_), .lo = (lo_), .hi = (hi_),      \
   .hi_open = (hi_open_), .choices = (ch_), .mark = (arm_), .help = (help_), .def = (def_),      \
   .sets = 1}
#define HEAD(title_) {.help = (title_)}
typedef raspU_choice choice;

#define F(f) offsetof(train_opts, f)
static const choice c_order[] = {{"edge", RASP_ORDER_EDGE}, {"arm", RASP_ORDER_ARM}, {0, 0}};
static const choice c_q[] = {{"start", RASP_Q_START}, {"end", RASP_Q_END}, {0, 0}};
/* rasp gen's and the model layout's words; fwd and rev (older configs) too */
static const choice c_answer[] = {{"forward", RASP_ANS_FORWARD}, {"reverse", RASP_ANS_REVERSE},
                                  {"lead", RASP_ANS_LEAD},       {"fwd", RASP_ANS_FORWARD},
                                  {"rev", RASP_ANS_REVERSE},     {0, 0}};
static const choice c_model[] = {{"decoder", 0}, {"encoder", 1}, {0, 0}};
static const choice c_obj[] = {
    {"tf", TRAIN_OBJ_TF}, {"iar", TRAIN_OBJ_IAR}, {"nar", TRAIN_OBJ_NAR}, {0, 0}};
static const choice c_pos[] = {{"learned", 1}, {"none", 0}, {0, 0}};
static const choice c_ln[] = {{"pre", 1}, {"rms", 2}, {"none", 0}, {0, 0}};
static const choice c_act[] = {{"relu", 0}, {"gelu", 1}, {0, 0}};
static const choice c_optim[] = {{"adamw", 0}, {"sgd", 1}, {0, 0}};
static const choice c_lrs[] = {{"none", 0}, {"rms", 1}, {0, 0}};
static const choice c_decay[] = {
    {"none", TRAIN_DECAY_NONE}, {"cosine", TRAIN_DECAY_COSINE}, {"linear", TRAIN_DECAY_LINEAR}, {0, 0}};
static const choice c_freeze[] = {{"none", 0}, {"compiled", 1}, {0, 0}};
static const choice v_off[] = {{"", 0}}, v_on[] = {{"", 1}};

static const raspU_option optdefs[] = {
    HEAD("task (the samples of rasp gen)"),
    OPT("--D", "N", K_INT, F(task.D), 1, 1000, 0, NULL, 0, "degree: the number of arms", NULL),
    OPT("--M", "N", K_INT, F(task.M), 2, 1000, 0, NULL, 0, "arm length, the start node included", NULL),
    OPT("--V", "N", K_INT, F(task.V), 2, 1000000, 0, NULL, 0, "number of node symbols", NULL),
    OPT("--order", "edge|arm", K_CHOICE, F(task.order), 0, 0, 0, c_order, 0,
     "edges shuffled, or written arm by arm from the start node", NULL),
    OPT("--q", "start|end", K_CHOICE, F(task.q), 0, 0, 0, c_q, 0,
     "the query '/ s t =' before the graph or after it", NULL),
    OPT("--answer", "forward|reverse|lead", K_CHOICE, F(task.answer), 0, 0, 0, c_answer, 0,
     "the arm from s to t, reversed, or the leading node alone", NULL),
    OPT("--structured", "K", K_INT, F(task.structured), 0, 999, 0, NULL, 0,
     "K more training samples per graph: same edges, other targets (K < D)", NULL),
    OPT("--no-bos", NULL, K_FLAG, F(task.bos), 0, 0, 0, v_off, 0, "no BOS token before a sample",
     "BOS"),
    OPT("--no-eos", NULL, K_FLAG, F(task.eos), 0, 0, 0, v_off, 0, "no EOS token after a sample",
     "EOS"),
    OPT("--st-names", NULL, K_FLAG, F(task.st_names), 0, 0, 0, v_on, 0,
     "start and target written as the symbols s and t", "their numbers"),
    HEAD("model"),
    OPT("--model", "decoder|encoder", K_CHOICE, F(encoder), 0, 0, 0, c_model, 0,
     "causal next-token decoder, or encoder predicting masked answer tokens", NULL),
    OPT("--objective", "tf|iar|nar", K_CHOICE, F(obj), 0, 0, 0, c_obj, 0,
     "teacher forcing (decoder); the encoder masks a random share of the "
     "answer (iar) or all of it (nar)", "tf for the decoder, nar for the encoder"),
    OPT("--layers", "N", K_INT, F(arch.n_layers), 0, 64, 0, NULL, 0, "transformer layers", NULL),
    OPT("--d-model", "N", K_INT, F(arch.d_model), 1, 8192, 0, NULL, 0,
     "width of the residual stream", NULL),
    OPT("--heads", "N", K_INT, F(arch.n_heads), 1, 256, 0, NULL, 0,
     "attention heads per layer; divides --d-model", NULL),
    OPT("--d-mlp", "N", K_INT, F(arch.d_mlp), 1, 65536, 0, NULL, 0, "hidden width of each MLP",
     NULL),
    OPT("--pos", "learned|none", K_CHOICE, F(arch.pos_embedding), 0, 0, 0, c_pos, 0,
     "position embeddings", NULL),
    OPT("--ln", "pre|rms|none", K_CHOICE, F(arch.layer_norm), 0, 0, 0, c_ln, 0,
        "layer norm (pre), RMS norm (rms) or none", NULL),
    OPT("--act", "relu|gelu", K_CHOICE, F(arch.gelu), 0, 0, 0, c_act, 0, "the MLP's activation",
     NULL),
    OPT("--init", "random|STEM", K_STR, F(init), 0, 0, 0, NULL, 0,
     "random weights, or the model STEM.safetensors + STEM.json: one of ours, or "
     "compiled (decoder: a causal program, e.g. readout6_causal; encoder: rasp "
     "compile --encoder of programs/encoder*.rasp; same --D --M --V, --st-names "
     "--no-bos --no-eos: a compiled model's STEM.json names any that differ, and "
     "its edge markers are taken as they are)", NULL),
    OPT("--init-noise", "S", K_FLOAT, F(init_noise), 0, 1e3, 0, NULL, 1,
     "Gaussian noise on an --init model, S times each tensor's RMS", NULL),
    OPT("--init-mix", "A", K_FLOAT, F(init_mix), 0, 1, 0, NULL, 1,
     "start from (1 - A) x the --init model + A x compare's random arm", "0: off"),
    OPT("--widen", "K", K_INT, F(widen), 0, 4096, 0, NULL, 1,
     "K more residual dimensions (and heads, MLP units) around a compiled --init "
     "model, which computes as before", "0: off"),
    OPT("--widen-scale", "S", K_FLOAT, F(widen_scale), 0, 10, 0, NULL, 1,
     "standard deviation of --widen's random weights", NULL),
    OPT("--freeze", "none|compiled", K_CHOICE, F(freeze), 0, 0, 0, c_freeze, 1,
     "compiled: the compiled weights stay fixed, and so do the zeros joining "
     "--widen's to them; only --widen's weights train", NULL),
    OPT("--reinit-layers", "L,L,...", K_STR, F(reinit), 0, 0, 0, NULL, 1,
     "layers (from 0) of the --init model drawn at random again", "none"),
    OPT("--teacher", "STEM", K_STR, F(teacher), 0, 0, 0, NULL, 1,
     "a compiled model whose residual stream, after every sublayer, the model is "
     "pulled toward on every batch (a mean squared distance per entry, each "
     "dimension in units of its size in the teacher, added to the loss); a model "
     "of another architecture through the linear map that fits best on each "
     "batch", "none"),
    OPT("--teacher-weight", "X", K_FLOAT, F(teacher_weight), 0, 1e6, 0, NULL, 1,
     "the teacher loss's weight lambda", NULL),
    OPT("--teacher-attn", "X", K_FLOAT, F(teacher_attn), 0, 1e6, 0, NULL, 1,
     "also pull every head's attention pattern toward the teacher's head's (KL per "
     "query row, weight X; the teacher's architecture only)", "0: off"),
    OPT("--teacher-until", "STEPS", K_LONG, F(teacher_until), 0, 1099511627776.0, 0, NULL, 1,
     "lambda falls linearly to 0 at step STEPS, so what is left is learned", "0: constant"),
    HEAD("training"),
    OPT("--optim", "adamw|sgd", K_CHOICE, F(sgd), 0, 0, 0, c_optim, 1, "the optimiser", NULL),
    OPT("--momentum", "X", K_FLOAT, F(momentum), 0, 1, 1, NULL, 1,
     "momentum of --optim sgd", "0: plain SGD"),
    OPT("--lr", "X", K_FLOAT, F(lr), 0, 10, 0, NULL, 1, "learning rate", NULL),
    OPT("--lr-scale", "none|rms", K_CHOICE, F(lr_rms), 0, 0, 0, c_lrs, 1,
     "rms: each tensor's rate times its RMS at the starting point", NULL),
    OPT("--warmup", "STEPS", K_LONG, F(warmup), 0, 1099511627776.0, 0, NULL, 1,
     "linear warm-up of the learning rate over the first STEPS steps", "0: none"),
    OPT("--decay", "none|cosine|linear", K_CHOICE, F(decay), 0, 0, 0, c_decay, 1,
     "after the warm-up, the learning rate falls to --lr-floor times --lr by "
     "--decay-steps", NULL),
    OPT("--lr-floor", "F", K_FLOAT, F(lr_floor), 0, 1, 0, NULL, 1,
     "the learning rate --decay ends at, as a share of --lr", NULL),
    OPT("--decay-steps", "STEPS", K_LONG, F(decay_steps), 0, 1099511627776.0, 0, NULL, 1,
     "the step --decay reaches its floor at", "0: the run's length, --max-steps or "
     "else --epochs passes"),
    OPT("--clip", "X", K_FLOAT, F(clip), 0, 1e9, 0, NULL, 1,
     "scale each step's gradient down to L2 norm X when above (the entries that "
     "train)", "0: off"),
    OPT("--wd", "X", K_FLOAT, F(wd), 0, 10, 0, NULL, 1, "decoupled weight decay", NULL),
    OPT("--dropout", "X", K_FLOAT, F(dropout), 0, 0.95, 0, NULL, 1, "dropout probability", NULL),
    OPT("--batch", "N", K_INT, F(batch), 1, 1 << 20, 0, NULL, 0, "samples per optimiser step",
     NULL),
    OPT("--micro", "N", K_INT, F(micro), 1, 1 << 16, 0, NULL, 0,
     "samples per forward and backward pass (at most --batch)", NULL),
    OPT("--epochs", "N", K_INT, F(epochs), 1, 1000000, 0, NULL, 0,
     "passes over the training set at most", NULL),
    OPT("--max-steps", "N", K_LONG, F(max_steps), 1, 1099511627776.0, 0, NULL, 0,
     "optimiser steps at most", "no limit"),
    OPT("--stop-loss", "X", K_FLOAT, F(stop_loss), 0, 1e9, 0, NULL, 0,
     "a trial stops once its validation loss is below X (train; compare's arms run "
     "the whole budget)", NULL),
    OPT("--seed", "N", K_U64, F(seed), 0, 4611686018427387904.0, 0, NULL, 0,
     "seed of weights, permutations, masks, dropout; trial k uses N + 7919k", NULL),
    OPT("--trials", "N", K_INT, F(trials), 1, 1000, 0, NULL, 0, "independent trials", NULL),
    OPT("--train", "N", K_INT, F(ntrain), 1, 100000000, 0, NULL, 0,
     "training graphs (before --structured)", NULL),
    OPT("--test", "N", K_INT, F(ntest), 1, 10000000, 0, NULL, 0, "test samples", NULL),
    OPT("--train-seed", "N", K_U64, F(train_seed), 0, 4611686018427387904.0, 0, NULL, 0,
     "seed of the training set", NULL),
    OPT("--test-seed", "N", K_U64, F(test_seed), 0, 4611686018427387904.0, 0, NULL, 0,
     "seed of the test set", NULL),
    OPT("--eval-every", "STEPS", K_INT, F(eval_every), 0, INT_MAX, 0, NULL, 0,
     "compare evaluates every STEPS steps, 0 meaning 10 (trials: every epoch)", NULL),
    OPT("--keep-every", "STEPS", K_LONG, F(keep_every), 0, 1099511627776.0, 0, NULL, 0,
     "compare (with --out), a multiple of --eval-every: at every evaluation whose "
     "step is a multiple of STEPS each arm's model is also kept, as "
     "DIR/arm_NAME.stepSTEP (a checkpoint, as the final arm_NAME)",
     "0: the final model only"),
    OPT("--arm", "'NAME BASE [OPTION VALUE]...'", K_ARM, 0, 0, 0, 0, NULL, 0,
     "compare, repeatable (at most 16): an arm called NAME (letters, digits, _, -) "
     "from BASE compiled (--init), random (its architecture) or standard (--layers, "
     "--d-model...), with the OPTIONs marked * on top of the command line's",
     "random random, compiled compiled"),
    OPT("--progress", "STEPS", K_INT, F(progress), 0, INT_MAX, 0, NULL, 0,
     "when the standard error is not a terminal, a progress line (step of total, "
     "tokens/s, time left, training loss) every STEPS steps; on a terminal one "
     "status line, redrawn every 2 seconds", "0: every 30 seconds"),
    OPT("--quiet", NULL, K_FLAG, F(quiet), 0, 0, 0, v_on, 0, "no progress lines", "off"),
    OPT("--threads", "N", K_INT, F(threads), 1, 1024, 0, NULL, 0, "OpenMP threads",
     "OpenMP's default"),
    OPT("--out", "DIR", K_STR, F(out), 0, 0, 0, NULL, 0,
     "directory (created) for config.txt, logs and checkpoints; compare: "
     "compare.csv, .gp, .png", "no files; compare: ."),
    OPT("--config", "FILE", K_STR, F(config), 0, 0, 0, NULL, 0,
     "read options from FILE first, one '--name value' line each ('#' starts a "
     "comment; a line 'compare' makes it a compare): a run's config.txt replays "
     "the run, bit for bit, and options after it on the command line override",
     "none"),
    OPT("--resume", NULL, K_FLAG, F(resume), 0, 0, 0, v_on, 0,
     "continue every trial from its checkpoint in --out", "off"),
    HEAD("other"),
    {.name = "--help", .alias = "-h", .help = "this list", .sets = 1},
    {.name = "--version", .help = "the version", .sets = 1},
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
  o->lr_floor = 0.1f;
  o->teacher_weight = 1.0f;
}

static void usage(unsigned cmd, FILE *f);
static const raspU_table table = {"rasp-train", optdefs, NOPTS, NULL, usage, 25, "*"};

static void usage(unsigned cmd, FILE *f) {
  train_opts o;
  set_defaults(&o);
  fputs("usage: rasp-train [options]           train --trials models, print a summary\n"
        "       rasp-train compare [options]   --init STEM's arms on the same batches\n"
        "Every option's value may also follow an '=' (--D=3).  (range; default)\n"
        "* marks the options an --arm may set.\n",
        f);
  raspU_help(&table, cmd, &o, f);
#ifdef RASP_MPI
  fputs("This build runs under mpirun or srun (`mpirun -np K rasp-train ...`): the K\n"
        "ranks share out every step's micro-batches and train what one process trains,\n"
        "bit for bit; rank 0 writes --out.\n",
        f);
#endif
}

/* Says that option name's value val is bad (why: NULL, or the reason);
** returns 2, the exit status for bad usage. */
static int bad_opt(const char *name, const char *val, const char *why) {
  fprintf(stderr, "rasp-train: bad value '%s' for %s%s%s\n", val ? val : "",
          name, why ? ": " : "", why ? why : "");
  return 2;
}

static const raspU_option *find_opt(const char *name) {
  for (int i = 0; i < NOPTS; i++)
    if (optdefs[i].name && !strcmp(optdefs[i].name, name)) return &optdefs[i];
  return NULL;
}

/* What the table's types do not say about option a's value: 0, or 2 after
** a message. */
static int take(const raspU_arg *a, train_opts *o) {
  const char *name = a->opt->name, *v = a->val;
  if (!strcmp(name, "--out") && !*v) return bad_opt(name, v, "empty directory name");
  /* config.txt holds one option a line: a value with a line break could
  ** not be replayed, or would replay as other options */
  if (v && strpbrk(v, "\n\r")) return bad_opt(name, v, "a line break in the value");
  if (!strcmp(name, "--reinit-layers")) {
    int ok = *v != 0;
    for (const char *c = v; *c; c++) ok &= strchr("0123456789,", *c) != NULL;
    if (!ok) return bad_opt(name, v, "expected layer numbers like 0,3");
  }
  if (!strcmp(name, "--arm")) {
    if (o->narms >= TRAIN_MAX_ARMS) return bad_opt(name, v, "at most 16 arms");
    o->arm_spec[o->narms++] = v;
  }
  return 0;
}

/* ---- the run's options as text, and --config ---------------------------- */

/* o's options, every one the table types (defaults included), as the
** parser reads them back: "--name value" lines, flags alone, then the
** --arm lines; "compare" first for compare.  What is not set (a flag off,
** no string, a number outside its row's range such as --threads 0,
** --momentum without sgd, --init-mix not given) is a "# --name: not set"
** comment.  --config, --resume and --help are not the run's: left out.
** The text is raspM_alloc'd. */
static char *options_text(const train_opts *o) {
  train_log b = {0};
  if (o->compare) train_log_printf(&b, "compare\n");
  for (int i = 0; i < NOPTS; i++) {
    const raspU_option *d = &optdefs[i];
    if (!d->name || d->kind == RASPU_TEXT || !strcmp(d->name, "--config") ||
        !strcmp(d->name, "--resume"))
      continue;
    char v[4200];
    int r = raspU_value_text(d, o, v, sizeof v);
    if (r > 0 && d->kind != RASPU_CHOICE && d->kind != RASPU_STRING) {
      double x = strtod(v, NULL);
      if (x < d->lo || x > d->hi || (d->hi_open && x >= d->hi)) r = -1;
    }
    if ((!strcmp(d->name, "--momentum") && !o->sgd) ||
        (!strcmp(d->name, "--init-mix") && !o->mix_given))
      r = -1;
    if (r > 0) train_log_printf(&b, "%s %s\n", d->name, v);
    else if (r == 0) train_log_printf(&b, "%s\n", d->name);
    else train_log_printf(&b, "# %s: not set\n", d->name);
  }
  for (int k = 0; k < o->narms; k++) train_log_printf(&b, "--arm %s\n", o->arm_spec[k]);
  /* not an option: a compiled --init model's, taken again on replay */
  if (o->task.markers != 1)
    train_log_printf(&b, "# markers %d (the --init model's edge markers)\n", o->task.markers);
  return b.s ? b.s : raspM_strdup("");
}

/* A --config file's lines as arguments: "--name value" (the value is the
** rest of the line, spaces and all), "--flag", "compare"; '#' lines and
** blank ones skipped.  Appends to *v (n entries, strings raspM_alloc'd);
** *compare set by a "compare" line.  0, or 2 after a message. */
static int config_args(const char *path, char ***v, int *n, int *compare) {
  /* a regular file of at most 1 MiB, read through the one descriptor */
  rasp_error oerr = {0};
  FILE *f = raspR_fopen_regular(path, &oerr); /* a FIFO would block fopen */
  struct stat stt;
  if (!f || fstat(fileno(f), &stt) || stt.st_size > (1 << 20)) {
    fprintf(stderr, "rasp-train: --config: cannot read '%s': %s\n", path,
            !f ? oerr.msg : "not a regular file of at most 1 MiB");
    if (f) fclose(f);
    return 2;
  }
  char *text = raspM_alloc((size_t)stt.st_size + 1);
  size_t len = fread(text, 1, (size_t)stt.st_size, f);
  text[len] = '\0';
  fclose(f);
  int line = 0, r = 0;
  for (char *s = text, *nl; s && *s && !r; s = nl ? nl + 1 : NULL) {
    nl = strchr(s, '\n');
    if (nl) *nl = '\0';
    line++;
    while (*s == ' ' || *s == '\t') s++;
    size_t e = strlen(s);
    while (e && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) s[--e] = '\0';
    if (!*s || *s == '#') continue;
    if (!strcmp(s, "compare")) {
      *compare = 1;
      continue;
    }
    if (strncmp(s, "--", 2) || !strcmp(s, "--config") || !strncmp(s, "--config ", 9)) {
      fprintf(stderr, "rasp-train: --config: %s:%d: expected '--name value', "
                      "'--flag' or 'compare', not '%s'\n", path, line, s);
      r = 2;
      break;
    }
    char *sp = strpbrk(s, " \t");
    *v = raspM_realloc(*v, (size_t)(*n + 2) * sizeof **v);
    if (sp) *sp = '\0';
    (*v)[(*n)++] = raspM_strdup(s);
    if (sp) {
      char *val = sp + 1;
      while (*val == ' ' || *val == '\t') val++;
      (*v)[(*n)++] = raspM_strdup(val);
    }
  }
  raspM_free(text);
  return r;
}

/* argv with every --config FILE (or --config=FILE) replaced by FILE's
** arguments, "compare" moved first: *nargv (raspM_alloc'd, its strings
** too, *nargc entries), or argv itself when there is no --config.  0, or
** 2 after a message. */
static int expand_config(int argc, char **argv, int *nargc, char ***nargv) {
  int has = 0;
  for (int i = 1; i < argc; i++)
    has |= !strcmp(argv[i], "--config") || !strncmp(argv[i], "--config=", 9);
  *nargc = argc;
  *nargv = argv;
  if (!has) return 0;
  char **v = NULL;
  int n = 0, compare = 0, r = 0;
  v = raspM_alloc(sizeof *v);
  v[n++] = raspM_strdup(argv[0]);
  for (int i = 1; i < argc && !r; i++) {
    if (!strcmp(argv[i], "--config") || !strncmp(argv[i], "--config=", 9)) {
      const char *path = argv[i][8] == '=' ? argv[i] + 9 : i + 1 < argc ? argv[++i] : NULL;
      if (!path) {
        fprintf(stderr, "rasp-train: --config needs a FILE\n");
        r = 2;
      } else {
        r = config_args(path, &v, &n, &compare);
      }
    } else if (i == 1 && !strcmp(argv[i], "compare")) {
      compare = 1;
    } else {
      v = raspM_realloc(v, (size_t)(n + 1) * sizeof *v);
      v[n++] = raspM_strdup(argv[i]);
    }
  }
  if (compare) { /* the command word first */
    v = raspM_realloc(v, (size_t)(n + 1) * sizeof *v);
    memmove(v + 2, v + 1, (size_t)(n - 1) * sizeof *v);
    v[1] = raspM_strdup("compare");
    n++;
  }
  *nargc = n;
  *nargv = v;
  return r;
}

static int parse_arm(const raspU_arg *args, int nargs, char *argv0, train_opts *o, int k);

#define DONE (-1) /* parse_opts: --help or --version printed */
static int check_opts(train_opts *o, const char *const *given);

/* Fills o from argv.  Returns 0, the exit status (2) after a message, or
** DONE after --help or --version. */
static int parse_opts(int argc, char **argv, train_opts *o) {
  set_defaults(o);
  const char *given[NOPTS] = {0}; /* each option's last value */
  raspU_arg *args;
  int nargs = raspU_parse(&table, 1, "rasp-train", argc, argv, o, &args), r = 0;
  if (nargs < 0) return nargs == RASPU_DONE ? DONE : 2;
  for (int k = 0; k < nargs && !r; k++) {
    const raspU_arg *a = &args[k];
    if (!a->opt && k == 0 && !strcmp(a->val, "compare")) {
      o->compare = 1;
    } else if (!a->opt) {
      fprintf(stderr, "rasp-train: unexpected argument '%s' (rasp-train --help lists "
                      "the options)\n", a->val);
      r = 2;
    } else {
      r = take(a, o);
      given[a->opt - optdefs] = a->val ? a->val : "";
    }
  }
  if (!r) r = check_opts(o, given);
  for (int k = 0; k < o->narms && !r; k++) r = parse_arm(args, nargs, argv[0], o, k);
  raspM_free(args);
  if (!r) o->cmdline = options_text(o);
  return r;
}

/* The checks across options once o holds them all (given: the value of
** each row given, by index): 0, or 2 after a message. */
static int check_opts(train_opts *o, const char *const *given) {
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
  if (o->teacher) { /* the teacher's task too */
    train_opts t = *o;
    t.init = o->teacher;
    int r = train_task_match(&t);
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
  if (o->keep_every && !(o->compare && o->out))
    return bad_opt("--keep-every", GIVEN("--keep-every"),
                   "keeps models of rasp-train compare, in its --out DIR");
  if (o->keep_every % (o->eval_every ? o->eval_every : 10))
    return bad_opt("--keep-every", GIVEN("--keep-every"),
                   "models are kept at evaluations: a multiple of --eval-every");
#undef GIVEN
  return 0;
}

/* Arm k: its spec's name and base, then the command line as parsed (args,
** less compare, --arm, --resume and --keep-every: the run's, not an
** arm's) followed by its options, through
** parse_opts.  An arm
** sets only how it trains (the options marked arm), never what it trains
** on, so every arm sees the same batches in the same order.  0, or 2 after
** a message. */
static int parse_arm(const raspU_arg *args, int nargs, char *argv0, train_opts *o, int k) {
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
    const raspU_option *d = find_opt(w[i]);
    if (!d || !d->mark) {
      char why[512] = "an arm sets only";
      size_t at = strlen(why);
      for (int j = 0; j < NOPTS && at < sizeof why; j++)
        if (optdefs[j].name && optdefs[j].mark)
          at += (size_t)snprintf(why + at, sizeof why - at, " %s", optdefs[j].name);
      return bad_opt("--arm", spec, why);
    }
  }
  a->argv = raspM_alloc((size_t)(2 * nargs + nw) * sizeof(char *));
  int n = 0;
  a->argv[n++] = argv0;
  for (int i = 0; i < nargs; i++) {
    const raspU_option *d = args[i].opt;
    if (!d || !strcmp(d->name, "--arm") || !strcmp(d->name, "--resume") ||
        !strcmp(d->name, "--keep-every"))
      continue;
    a->argv[n++] = (char *)d->name;
    if (args[i].val) a->argv[n++] = (char *)args[i].val;
  }
  for (int i = 2; i < nw; i++) a->argv[n++] = w[i];
  a->o = raspM_alloc(sizeof *a->o);
  int r = parse_opts(n, a->argv, a->o);
  if (r) fprintf(stderr, "rasp-train: in --arm '%s'\n", spec);
  return r;
}

static void opts_free(train_opts *o) {
  raspM_free(o->cmdline);
  o->cmdline = NULL;
  for (int k = 0; k < o->narms; k++) {
    if (o->arms[k].o) opts_free(o->arms[k].o);
    raspM_free(o->arms[k].o);
    raspM_free(o->arms[k].words);
    raspM_free(o->arms[k].argv);
  }
  o->narms = 0;
}

/* ---- wiring ------------------------------------------------------------- */

/* The manual's exit status for an error: 2 for bad usage (an option or a
** value, settings that cannot go together, a task the options do not make,
** a model whose task is not the options'), 1 for a run that fails (a file
** that cannot be read or written, a malformed model or checkpoint, a
** training step that breaks). */
static int exit_status(const rasp_error *err) {
  switch (err->code) {
  case RASP_E_USAGE:
  case RASP_E_NO_TASK:
  case RASP_E_TASK: return 2;
  default: return 1;
  }
}

/* The run (trials or compare) o describes; the exit status: 0, or
** exit_status's after the error's message. */
static int run(const train_opts *o) {
  if (o->threads) omp_set_num_threads(o->threads);
  rasp_error err = {0};
  if (o->out && !train_dir_open(o, &err)) {
    fprintf(stderr, "rasp-train: %s\n", err.msg);
    return exit_status(&err);
  }
  train_dataset tr = {0}, te = {0};
  train_split sp;
  if (!train_data_make(o, &tr, &te, &sp, &err)) {
    fprintf(stderr, "rasp-train: %s\n", err.msg);
    train_data_free(&tr);
    train_data_free(&te);
    return exit_status(&err);
  }
  char line[1024];
  train_split_text(&sp, o, line, sizeof line);
  fprintf(stderr, "rasp-train: %s; %d tokens each\n", line, tr.len);
  if (sp.coverage > 0.5)
    fprintf(stderr, "rasp-train: warning: the training set holds %.1f%% of the task's "
                    "questions, so accuracy on this task measures memory as much as "
                    "learning; a larger task (--V, --M, --D) leaves room for both\n",
            100 * sp.coverage);
  if (o->out && !train_split_write(&sp, o, &te, o->out, &err)) {
    fprintf(stderr, "rasp-train: %s\n", err.msg);
    train_data_free(&tr);
    train_data_free(&te);
    return exit_status(&err);
  }
  int ok = o->compare ? train_compare(o, &tr, &te, &err) : train_trials(o, &tr, &te, &err);
  if (!ok) fprintf(stderr, "rasp-train: %s\n", err.msg);
  train_data_free(&tr);
  train_data_free(&te);
  return ok ? 0 : exit_status(&err);
}

int main(int argc, char **argv) {
#ifdef RASP_MPI
  /* under mpirun or srun: one rank of a data-parallel run (tmpi.h) */
  int mpi = train_mpi_start();
#endif
  train_opts o;
  int nargc;
  char **nargv;
  int rc = expand_config(argc, argv, &nargc, &nargv);
  if (!rc) rc = parse_opts(nargc, nargv, &o);
  else memset(&o, 0, sizeof o);
#ifdef RASP_MPI
  /* every rank parsed the same command line: a usage error ends all */
  if (mpi && rc != DONE) rc = train_mpi_agree(rc);
  /* rank 0 alone has the run directory: it locks it, writes, resumes
  ** and hands the resumed state to the others (tloop.c) */
  if (mpi && !rc && train_get_transport()->rank) o.out = NULL;
#endif
  if (rc == DONE) rc = 0;
  else if (!rc) rc = run(&o);
  opts_free(&o);
  if (nargv != argv) {
    for (int i = 0; i < nargc; i++) raspM_free(nargv[i]);
    raspM_free(nargv);
  }
#ifdef RASP_MPI
  if (mpi) rc = train_mpi_finish(rc);
#endif
  return rc;
}
