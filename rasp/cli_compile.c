/*
** cli_compile.c -- `rasp compile`: a RASP program to transformer weights.
**
** Path-star programs (files that declare `task`) are traced for --D --M
** --V and checked on the task's own random samples; other programs are
** traced for --length N over the vocabulary --input-vocab "a b c" (or
** --vocab FILE) and checked on uniformly random token strings.  The check
** runs the compiled model in float32 (raspN_forward) and compares every
** position with the interpreter (raspE_run).
**
** Plain programs' inputs for --check: the even-numbered ones uniform, the
** odd-numbered ones adversarial, cycling through four classes that uniform
** draws almost never produce (a histogram's count n needs one repeated
** token): one token repeated, two tokens mixed, sorted runs (one to three
** runs, each ascending or descending in vocabulary order), and the
** vocabulary's two extremes (its first and last symbols) mixed.  A
** disagreement names its class and the summary counts each class.
**
** Path-star programs' inputs are the task's own samples; with edge order
** (any order of the edges is a valid input) the odd-numbered ones get
** their edges rewritten in an adversarial order, cycling through: every
** arm from s outward, every arm from its end inward, and all arms
** interleaved from their ends inward (by step, descending), orders that a
** uniform shuffle produces with probability about 1/(D(M-1))!.
**
** A path-star model's STEM.json records the task it was compiled for, as
** layout.task (rmodel.h: D, M, V, order, q, answer, bos, eos, markers,
** st_names, and model "encoder" or "decoder"), which rasp-train --init and
** `rasp apply --program` hold their own settings against.
**
** -o STEM is required (a compile that keeps nothing is a forgotten -o);
** --dry-run says so on purpose, for --check and --stats alone.  STEM's
** missing directories are created, as --dump-forward's are.  The model is
** written after --check, and only when it passed: a compile whose check
** fails (exit status 1) leaves no model files, and leaves a model already
** at STEM untouched (the user's last good one).
**
** --logit-scale X sets the margin of the readout's logits (rcompile.h;
** default ln(1000 (n_out - 1))), recorded in STEM.json.
**
** --attn-gain F scales every head's scores by F (rcompile.h: up to the
** power-of-two rounding of the score scale; default 1), recorded in
** STEM.json (layout.attention); --stats prints the leak past the selected
** keys that it gives, and the proofs account for it.
**
** --precision fp32|fp16|bf16 is the forward pass the encodings are proven
** for (a numerical encoding not proven there is compiled categorically; a
** node with neither is refused, exit status 1) and the one --check runs
** (raspG_run emulates fp16 and bf16).  --encoding categorical compiles
** every integer one-hot.  --moves one|assume|prove: what an aggregate of
** numbers over an equality select whose premise (one value at the selected
** keys) the program does not prove compiles to (rcompile.h, raspG_opts).
**
** Sound by default: fp32 chooses its encodings by the rounding proof, as
** fp16 and bf16 always do (raspG_opts.require_proof = 1; --require-proof
** is accepted and changes nothing), on the premise --moves one states
** (each assumed move selects one key per query: the path-star tasks' one
** edge per node), which --stats and STEM.json (layout.proof) state and
** --check tests.  The library's default (require_proof 0, moves assume)
** is the old one; this command sets both (`rasp layers` and the verifier
** count the planner's schedule by size, rlayers.c).  --unproven asks for the
** size-driven fp32 model instead; where a unit is then not proven the
** model says so: --stats, layout.proof.proven false (and the first unit
** not proven), a warning from `rasp apply` and the Python loader.
**
** --check-orders LIST runs every --check input through the model once
** more in each order of LIST (cli_orders.c, rmodel_orders.h: other
** float32 summation orders, a seeded permutation, float64) and reports
** each order's agreement; a disagreement fails the check, except float64
** on a model whose layout says it needs float32 (layout.arithmetic), which
** is reported as such.
**
** --no-sdpa keeps each head's d_head as the heads need it; by default the
** compiler rounds it up to 1, 16, 256, ..., where PyTorch's
** scaled_dot_product_attention computes the model's own scores
** (rcompile.h, raspG_opts.no_sdpa; STEM.json's layout.attention.formulas).
**
** --encoder compiles a path-star program for rasp-train's encoder-only
** models, which read the sequence with every answer position replaced by
** the mask token (id V+8; the trainer's MASK) and predict each answer token
** at its own position.  The program must name 'MASK' as its first extra
** symbol (task['symbols']), so that the interpreter's id for it is V+8;
** the model's input ids then include it, and --check masks the answer
** positions of every sample before comparing model and interpreter, and
** also runs the program's check() on those masked inputs (the readout's
** accuracy where the encoder sees MASK, which `rasp verify`, on the task's
** unmasked samples, does not measure).
*/
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rcompile.h"
#include "rfacts.h"
#include "rmem.h"
#include "rmodel_task.h"
#include "rverify.h"

/* --encoder: the mask token's id (V+8, which the program must name 'MASK')
** and the answer positions it replaces (ans .. ans+alen-1, the same in
** every sample of the task).  0, or -1 after a message. */
static int encoder_layout(const rasp_ptrace *tr, uint64_t seed, int *mask, int *ans,
                          int *alen) {
  *mask = raspT_vocab_size(&tr->opts);
  const char *sym = *mask <= rasp_vocab_size(tr->ctx) ? rasp_vocab_symbol(tr->ctx, *mask) : NULL;
  if (!sym || strcmp(sym, "MASK")) {
    fprintf(stderr, "rasp compile: --encoder: token id %d (V+8, rasp-train's mask token) "
                    "is '%s', not 'MASK'; name 'MASK' first in task['symbols'], e.g. "
                    "symbols=['MASK'] + pathstar_symbols() (programs/encoder*.rasp)\n",
            *mask, sym ? sym : "(none)");
    return -1;
  }
  if (tr->opts.answer == RASP_ANS_NONE) {
    fprintf(stderr, "rasp compile: --encoder: the task has no answer to mask "
                    "(task['answer'] is 'none')\n");
    return -1;
  }
  rasp_sample s;
  memset(&s, 0, sizeof s);
  rasp_error err = {0};
  if (!raspT_sample(&tr->opts, seed, 0, &s, &err)) {
    raspR_print(&err, stderr);
    return -1;
  }
  *ans = s.ans_start;
  *alen = tr->opts.answer == RASP_ANS_LEAD ? 1 : tr->opts.M;
  raspT_sample_free(&s);
  return 0;
}

/* The classes of plain programs' --check inputs (see the essay above). */
enum { IN_UNIFORM, IN_ONE, IN_TWO, IN_SORTED, IN_EXTREMES, IN_NCLASS };
static const char *const in_class_name[IN_NCLASS] = {"uniform", "one token", "two tokens",
                                                     "sorted runs", "extremes"};

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Plain input k of the check into tok[0..n): its class, and the tokens drawn
** from ids[0..nids) (in vocabulary order) with stream k of seed. */
static int plain_input(uint64_t seed, long k, const int64_t *ids, int nids, int64_t *tok,
                       int n) {
  rasp_rng rng;
  raspT_rng_seed(&rng, seed, (uint64_t)k);
  int cls = k % 2 ? IN_ONE + (int)((k / 2) % (IN_NCLASS - 1)) : IN_UNIFORM;
  uint64_t m = (uint64_t)nids;
  int64_t a = ids[raspT_rng_below(&rng, m)], b = ids[raspT_rng_below(&rng, m)];
  if (cls == IN_EXTREMES) a = ids[0], b = ids[nids - 1];
  for (int i = 0; i < n; i++) {
    switch (cls) {
    case IN_ONE: tok[i] = a; break;
    case IN_TWO:
    case IN_EXTREMES: tok[i] = raspT_rng_below(&rng, 2) ? b : a; break;
    default: tok[i] = ids[raspT_rng_below(&rng, m)]; break;
    }
  }
  if (cls == IN_SORTED) { /* ids are 1..nids in vocabulary order */
    int runs = 1 + (int)raspT_rng_below(&rng, 3), start = 0;
    for (int r = 0; r < runs && start < n; r++) {
      int len = r == runs - 1 ? n - start : 1 + (int)raspT_rng_below(&rng, (uint64_t)(n - start));
      qsort(tok + start, (size_t)len, sizeof *tok, cmp_i64);
      if (raspT_rng_below(&rng, 2))
        for (int i = 0; i < len / 2; i++) {
          int64_t t = tok[start + i];
          tok[start + i] = tok[start + len - 1 - i];
          tok[start + len - 1 - i] = t;
        }
      start += len;
    }
  }
  return cls;
}

/* Path-star input classes (see the essay above). */
enum { PS_SAMPLE, PS_OUTWARD, PS_INWARD, PS_STEPS, PS_NCLASS };
static const char *const ps_class_name[PS_NCLASS] = {"task sample", "arms outward",
                                                     "arms inward", "steps inward"};

typedef struct edge_key {
  int a, b, e; /* sort keys, then the edge's written index */
} edge_key;

static int cmp_edge(const void *x, const void *y) {
  const edge_key *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  return (p->e > q->e) - (p->e < q->e);
}

/* Path-star input k into tok (the task's sample k; for odd k under edge
** order, its edges rewritten in an adversarial order).  Returns its class,
** or -1 with err set. */
static int pathstar_input(const rasp_ptrace *tr, uint64_t seed, long k, int64_t *tok,
                          int64_t *lead, int64_t *target, rasp_error *err) {
  if (!raspK_sample_tokens(tr, seed, (uint64_t)k, tok, lead, target, err)) return -1;
  if (k % 2 == 0 || tr->opts.order != RASP_ORDER_EDGE) return PS_SAMPLE;
  int cls = PS_OUTWARD + (int)((k / 2) % (PS_NCLASS - 1));
  rasp_sample s;
  memset(&s, 0, sizeof s);
  if (!raspT_sample(&tr->opts, seed, (uint64_t)k, &s, err)) {
    raspT_sample_free(&s);
    return -1;
  }
  int w = 2 + tr->opts.markers, E = s.nedges;
  edge_key *key = raspM_alloc(sizeof *key * (size_t)E);
  int64_t *blocks = raspM_alloc(sizeof *blocks * (size_t)E * (size_t)w);
  for (int e = 0; e < E; e++) {
    int arm = s.edge_arm[e], step = s.edge_step[e];
    key[e] = cls == PS_OUTWARD  ? (edge_key){arm, step, e}
             : cls == PS_INWARD ? (edge_key){arm, -step, e}
                                : (edge_key){-step, arm, e};
    memcpy(blocks + (size_t)e * w, tok + s.edge_pos[e], sizeof *blocks * (size_t)w);
  }
  qsort(key, (size_t)E, sizeof *key, cmp_edge);
  for (int i = 0; i < E; i++)
    memcpy(tok + s.g_start + (size_t)i * w, blocks + (size_t)key[i].e * w,
           sizeof *blocks * (size_t)w);
  raspM_free(key);
  raspM_free(blocks);
  raspT_sample_free(&s);
  return cls;
}

/* A number in (0, max] for option name (--logit-scale: 10000; --attn-gain:
** 1000, past which the scores overflow float32).  0 after a message. */
static int bounded_opt(const char *name, const char *text, double max, double *out) {
  char *end;
  errno = 0;
  double v = text ? strtod(text, &end) : 0;
  if (!text || !*text || *end || errno || !(v > 0 && v <= max)) {
    fprintf(stderr, "rasp compile: %s: expected a number in (0, %g], got '%s'\n", name, max,
            text ? text : "");
    return 0;
  }
  *out = v;
  return 1;
}

/* --precision's and --encoding's values: the index of text in names[0..n),
** or -1 after a message. */
static int word_opt(const char *opt, const char *text, const char *const *names, int n) {
  for (int i = 0; i < n && text; i++)
    if (!strcmp(text, names[i])) return i;
  fprintf(stderr, "rasp compile: %s: expected %s", opt, names[0]);
  for (int i = 1; i < n; i++) fprintf(stderr, "%s%s", i == n - 1 ? " or " : ", ", names[i]);
  fprintf(stderr, ", got '%s'\n", text ? text : "");
  return -1;
}

static const char *const precs[] = {"fp32", "fp16", "bf16"}, *const encs[] = {"auto", "categorical"},
                         *const mvs[] = {"assume", "prove", "one"}, *const lns[] = {"none", "pre", "rms", "stock"};

/* The options of a compile. */
typedef struct copts {
  const char *file, *stem, *ivocab, *vfile, *stdlib, *dump, *orders_text;
  long D, M, V, len, check, seed;
  int stats, task_given, encoder, dry_run, prec, require, require_given, encoding, moves, ln;
  int no_sdpa;
  double scale, gain; /* scale 0: the compiler's default */
} copts;

/* One option or operand into o: 1, or 0 after a message. */
static int compile_opt(const raspC_arg *a, copts *o) {
  const char *v = a->val;
  switch (a->id) {
  case RASPC_OPERAND:
    if (o->file) {
      fprintf(stderr, "rasp compile: unexpected argument '%s'\n", v);
      o->file = v;
      return 0;
    }
    o->file = v;
    return 1;
  case RASPC_O_OUT: o->stem = v; return 1;
  case RASPC_O_STATS: o->stats = 1; return 1;
  case RASPC_O_DRY_RUN: o->dry_run = 1; return 1;
  case RASPC_O_REQUIRE_PROOF: o->require_given = 1; return 1;
  case RASPC_O_UNPROVEN: o->require = 0; return 1;
  case RASPC_O_NO_SDPA: o->no_sdpa = 1; return 1;
  case RASPC_O_ENCODER: o->encoder = 1; return 1;
  case RASPC_O_INPUT_VOCAB: o->ivocab = v; return 1;
  case RASPC_O_VOCAB: o->vfile = v; return 1;
  case RASPC_O_STDLIB: o->stdlib = v; return 1;
  case RASPC_O_DUMP_FORWARD: o->dump = v; return 1;
  case RASPC_O_CHECK_ORDERS: o->orders_text = v; return raspC_check_orders(v, NULL) >= 0;
  case RASPC_O_LOGIT_SCALE: return bounded_opt("--logit-scale", v, 10000, &o->scale);
  case RASPC_O_ATTN_GAIN: return bounded_opt("--attn-gain", v, 1000, &o->gain);
  case RASPC_O_PRECISION: return (o->prec = word_opt(a->name, v, precs, 3)) >= 0;
  case RASPC_O_ENCODING: return (o->encoding = word_opt(a->name, v, encs, 2)) >= 0;
  case RASPC_O_MOVES: return (o->moves = word_opt(a->name, v, mvs, 3)) >= 0;
  case RASPC_O_LN: return (o->ln = word_opt(a->name, v, lns, 4)) >= 0;
  case RASPC_O_D: case RASPC_O_M: case RASPC_O_V:
    o->task_given = 1;
    return raspC_int_opt("compile", a->name, v, 1, 100000L,
                         a->id == RASPC_O_D ? &o->D : a->id == RASPC_O_M ? &o->M : &o->V);
  case RASPC_O_LENGTH: return raspC_int_opt("compile", a->name, v, 1, 100000L, &o->len);
  case RASPC_O_CHECK: return raspC_int_opt("compile", a->name, v, 0, 1000000000L, &o->check);
  case RASPC_O_SEED: return raspC_int_opt("compile", a->name, v, 0, 1000000000L, &o->seed);
  default: return 1; /* --max-memory, --timeout: rasp.c's */
  }
}

/* The options into o (*access gets --allow-*): 1 to compile, 0 after --help
** or --version, -1 after a message (bad usage). */
static int compile_opts(int argc, char **argv, rasp_access *access, copts *o) {
  memset(o, 0, sizeof *o);
  o->D = 2, o->M = 5, o->V = 100, o->len = 8, o->seed = 1, o->gain = 1;
  o->prec = RASPG_FP32, o->encoding = RASPG_ENC_AUTO, o->moves = RASPG_MOVES_ONE, o->require = 1;
  raspC_arg *args;
  int nargs = raspC_parse_program(RASPC_COMPILE, "compile", argc, argv, access, &args), good = 1;
  if (nargs == RASPC_DONE) return 0;
  if (nargs == RASPC_BAD) return -1;
  for (int k = 0; k < nargs && good; k++) good = compile_opt(&args[k], o);
  raspM_free(args);
  if (!good) return -1;
  if (!o->file) {
    fprintf(stderr, "rasp compile: no program file given (rasp compile --help)\n");
    return -1;
  }
  /* a compile that keeps nothing is almost always a forgotten -o */
  if (!o->stem && !o->dry_run) {
    fprintf(stderr, "rasp compile: no -o STEM given (where to write the model); --dry-run "
                    "compiles and checks without writing one\n");
    return -1;
  }
  if (!o->require && o->require_given) {
    fprintf(stderr, "rasp compile: --unproven and --require-proof contradict each other\n");
    return -1;
  }
  if (o->orders_text && !o->check) {
    fprintf(stderr, "rasp compile: --check-orders runs --check's inputs: give --check N too\n");
    return -1;
  }
  if (!o->require && o->prec != RASPG_FP32) {
    fprintf(stderr, "rasp compile: --unproven is for fp32: %s models are always proven\n",
            precs[o->prec]);
    return -1;
  }
  if (o->stem && o->dry_run) {
    fprintf(stderr, "rasp compile: -o %s and --dry-run contradict each other\n", o->stem);
    return -1;
  }
  return 1;
}

/* What a compile builds: the traced program, the model's input ids and the
** model.  The steps below return 0, an exit status after a message, or
** FAILED: err holds the error, for the driver to print. */
typedef struct cjob {
  const copts *o;
  rasp_program prog;
  rasp_ptrace tr;   /* a path-star program's trace, */
  rasp_ctx *ctx;    /*   or a plain one's context (tr.ctx for path-star) */
  int pathstar;
  char **vocab;     /* a plain program's vocabulary */
  int nvocab;
  int64_t *ids;     /* the model's input ids */
  int nids;
  int mask, ans, alen; /* --encoder: MASK's id, answer positions */
  raspG_model gm;
  rasp_error err;
} cjob;
#define FAILED (-1)

/* A path-star program traced for --D --M --V and its ids 1..V+7 (and
** MASK). */
static int trace_pathstar(cjob *j) {
  const copts *o = j->o;
  if (!raspK_trace(&j->prog, (int)o->D, (int)o->M, (int)o->V, &j->tr, &j->err)) return FAILED;
  if (j->tr.tok_map) { /* the model would read the generator's ids as its own */
    fprintf(stderr, "rasp compile: %s declares task['symbols_first'], which renumbers the "
                    "task's tokens; compiling needs them at ids 1..|V|+7\n", o->file);
    return 1;
  }
  j->ctx = j->tr.ctx;
  j->nids = raspT_vocab_size(&j->tr.opts) - 1; /* 1 .. V+7 */
  if (o->encoder && encoder_layout(&j->tr, (uint64_t)o->seed, &j->mask, &j->ans, &j->alen) != 0)
    return 2;
  j->ids = raspM_alloc(sizeof(int64_t) * (size_t)(j->nids + 1));
  for (int i = 0; i < j->nids; i++) j->ids[i] = i + 1;
  if (o->encoder) j->ids[j->nids++] = j->mask;
  return 0;
}

/* A plain program traced for --length over its vocabulary, whose symbols
** are its ids 1..|vocabulary|. */
static int trace_plain(cjob *j, const rasp_access *access) {
  const copts *o = j->o;
  memset(&j->err, 0, sizeof j->err);
  if (o->vfile) j->nvocab = raspC_read_vocab(o->vfile, &j->vocab, &j->err);
  else if (o->ivocab) j->nvocab = raspC_split(o->ivocab, &j->vocab);
  else {
    fprintf(stderr, "rasp compile: a plain program needs --input-vocab or --vocab\n");
    return 2;
  }
  if (j->nvocab <= 0) {
    if (j->nvocab < 0) raspR_print(&j->err, stderr);
    else fprintf(stderr, "rasp compile: the vocabulary is empty\n");
    return 2;
  }
  j->ctx = rasp_ctx_new((int)o->len, NULL, &j->err);
  if (!j->ctx || !rasp_set_access(j->ctx, access, &j->err) ||
      !rasp_set_vocab(j->ctx, (const char *const *)j->vocab, j->nvocab, &j->err) ||
      !rasp_load_stdlib(j->ctx, o->stdlib, &j->err) || !rasp_exec_file(j->ctx, o->file, &j->err) ||
      !rasp_trace(j->ctx, "main", &j->err))
    return FAILED;
  j->nids = j->nvocab;
  j->ids = raspM_alloc(sizeof(int64_t) * (size_t)j->nids);
  for (int i = 0; i < j->nids; i++) j->ids[i] = i + 1;
  return 0;
}

/* The model compiled from the trace, its --stats printed (save_model
** writes it, once --check has passed). */
static int compile_model(cjob *j) {
  const copts *o = j->o;
  rasp_ir *ir = rasp_ctx_ir(j->ctx);
  int nv = rasp_vocab_size(j->ctx);
  const char **names = raspM_alloc(sizeof(char *) * (size_t)(nv + 1));
  for (int i = 1; i <= nv; i++) names[i] = rasp_vocab_symbol(j->ctx, i);
  raspG_opts go = {j->ids, j->nids, nv, names, o->scale, o->prec, o->encoding, o->gain, o->moves,
                   o->require, o->ln, o->no_sdpa};
  int ok = raspG_compile(ir, &go, &j->gm, &j->err);
  raspM_free(names);
  if (!ok) return FAILED;
  /* the task's layout travels with the model (rasp-train --init and
  ** `rasp apply --program` refuse another); the compiler always writes a
  ** layout object, so this cannot fail */
  if (j->pathstar) raspN_layout_set_task(&j->gm.model, &j->tr.opts, o->encoder);
  if (o->stats) raspG_print_stats(&j->gm, stdout);
  return 0;
}

/* The model written to -o STEM: only after --check has passed, so a model
** that failed its check never reaches the disk, and a previous model at
** STEM (a good one, perhaps) is left as it was. */
static int save_model(cjob *j) {
  const copts *o = j->o;
  if (o->stem && (!raspR_mkdirs_for(o->stem, &j->err) || !raspN_save(&j->gm.model, o->stem, &j->err)))
    return FAILED;
  return 0;
}

/* What --check counted: inputs and disagreements, per class too
** (IN_NCLASS >= PS_NCLASS), the inputs whose check() passed (--encoder),
** and the assumed moves' premise. */
typedef struct ccount {
  long bad, done, passed, held, held_bad, untested;
  long cls_done[IN_NCLASS], cls_bad[IN_NCLASS];
  int ord_failed; /* --check-orders: an order disagreed */
} ccount;

/* --dump-forward: the model's logits on input tok, written atomically
** (like every file the tools write). */
static int dump_forward(cjob *j, const int64_t *tok, rasp_elem *got) {
  const rasp_model_config *cfg = &j->gm.model.cfg;
  int n = rasp_ctx_ir(j->ctx)->n;
  float *lg = raspM_alloc(sizeof(float) * (size_t)(n + 1) * cfg->n_out);
  rasp_afile af;
  if (!raspG_run(&j->gm, tok, got, lg, &j->err) || !raspR_mkdirs_for(j->o->dump, &j->err) ||
      !raspR_atomic_open(&af, j->o->dump, &j->err)) {
    raspM_free(lg);
    return FAILED;
  }
  FILE *f = af.f;
  fprintf(f, "%d %d\n", n + 1, cfg->n_out);
  fprintf(f, "%d", cfg->bos_token);
  for (int i = 0; i < n; i++) fprintf(f, " %lld", (long long)tok[i]);
  fprintf(f, "\n");
  for (int i = 0; i < (n + 1) * cfg->n_out; i++)
    fprintf(f, "%.9g%c", lg[i], (i + 1) % cfg->n_out ? ' ' : '\n');
  raspM_free(lg);
  return raspR_atomic_commit(&af, &j->err) ? 0 : FAILED;
}

/* The first disagreements, on stderr: input k (of class cls) at position
** i, and the assumed move whose premise failed there (broken >= 0). */
static void report_mismatch(const cjob *j, long k, int cls, int i, const int64_t *tok,
                            const rasp_elem *got, const rasp_elem *want, int broken, int bq) {
  rasp_ir *ir = rasp_ctx_ir(j->ctx);
  int n = ir->n;
  if (broken >= 0) {
    const rasp_ir_node *bn = &ir->nodes[broken];
    fprintf(stderr, "rasp compile: input %ld: the assumed move %%%d%s%s at %s:%d:%d sees "
            "two %s at query %d (its premise fails here)\n", k, broken,
            bn->label ? " " : "", bn->label ? bn->label : "",
            bn->pos.src ? bn->pos.src->name : "?", bn->pos.line, bn->pos.col,
            j->o->moves == RASPG_MOVES_ONE ? "selected keys" : "values", bq);
  }
  char a[128], b[128];
  raspI_elem_format(ir, got[i], a, sizeof a);
  raspI_elem_format(ir, want[i], b, sizeof b);
  fprintf(stderr, "rasp compile: input %ld (%s), position %d: model %s, interpreter %s\n  input:",
          k, j->pathstar ? ps_class_name[cls] : in_class_name[cls], i, a, b);
  for (int jj = 0; jj < n; jj++) {
    char s[128];
    rasp_format_symbolic(j->ctx, (rasp_elem){tok[jj], 1}, s, sizeof s);
    fprintf(stderr, " %s", s);
  }
  fprintf(stderr, "\n");
}

/* One --check input (tok, class cls) through the model (got) and the
** interpreter (ev), compared position by position; premise: the assumed
** moves to test (NULL: none). */
static int check_one(cjob *j, rasp_eval *ev, const unsigned char *premise, long k, int cls,
                     const int64_t *tok, rasp_elem *got, int64_t lead, int64_t target,
                     ccount *cc) {
  rasp_ir *ir = rasp_ctx_ir(j->ctx);
  if (!raspG_run(&j->gm, tok, got, NULL, &j->err)) return FAILED;
  if (j->o->encoder) {
    /* the interpreter's output and the program's verdict in one run */
    unsigned char pass = 0;
    if (!raspK_check_batch(&j->tr, ev, 1, tok, &lead, &target, &pass, &j->err)) return FAILED;
    cc->passed += pass;
  } else if (!raspE_run(ev, 1, tok, &j->err)) {
    return FAILED;
  }
  const rasp_elem *want = raspE_value(ev, ir->outputs[0], 0);
  cc->done++;
  cc->cls_done[cls]++;
  int npremise = premise != NULL;
  int broken = -1, bq = 0, known = 1; /* an assumed move whose premise fails here */
  if (premise) {
    rasp_error perr = {0}; /* (a selector too big to materialise: not tested) */
    int r = raspE_moves_hold(ev, premise, 0, &broken, &bq, &perr);
    known = r >= 0;
    if (r != 0) broken = -1;
  }
  cc->untested += npremise && !known;
  cc->held += npremise && known && broken < 0;
  for (int i = 0; i < ir->n; i++)
    if (got[i].num != want[i].num || got[i].den != want[i].den) {
      cc->held_bad += npremise && known && broken < 0;
      if (cc->bad < 5) report_mismatch(j, k, cls, i, tok, got, want, broken, bq);
      cc->bad++;
      cc->cls_bad[cls]++;
      break;
    }
  return 0;
}

/* --check N: the model against the interpreter on N inputs (and
** --dump-forward's after them). */
static int check_model(cjob *j, ccount *cc) {
  const copts *o = j->o;
  rasp_ir *ir = rasp_ctx_ir(j->ctx);
  int n = ir->n, status = 0;
  int64_t *tok = raspM_alloc(sizeof(int64_t) * (size_t)n);
  rasp_elem *got = raspM_alloc(sizeof(rasp_elem) * (size_t)n);
  rasp_eval *ev = raspE_new(ir);
  unsigned char *premise = NULL; /* per node: an assumed move (NULL: none) */
  /* --check tests the assumed moves' premise on every input (raspF_move
  ** with the kinds of raspF_values: a superset of the compiler's assumed
  ** moves, whose value sets can prove more, and where it proved one the
  ** premise holds on every input anyway) */
  if (o->check && j->gm.moves_assumed) {
    premise = raspM_alloc((size_t)ir->nnodes + 1);
    raspF_moves(ir, premise);
    for (int i = 0; i < ir->nnodes; i++)
      premise[i] = premise[i] != RASPF_MOVE_ASSUMED ? 0 : o->moves == RASPG_MOVES_ONE ? RASPE_ONE_KEY : 1;
  }
  /* --check-orders: the same inputs through the model in other orders */
  raspC_orders *ords = o->orders_text && o->check
                           ? raspC_orders_new(&j->gm, ir, o->orders_text, (uint64_t)o->seed)
                           : NULL;
  long total = o->check + (o->dump ? 1 : 0);
  for (long k = 0; k < total && !status; k++) {
    int64_t lead = 0, target = 0;
    int cls = IN_UNIFORM;
    if (j->pathstar) {
      if ((cls = pathstar_input(&j->tr, (uint64_t)o->seed, k, tok, &lead, &target, &j->err)) < 0) {
        status = FAILED;
        break;
      }
      for (int i = 0; o->encoder && i < j->alen; i++) tok[j->ans + i] = j->mask;
    } else {
      cls = plain_input((uint64_t)o->seed, k, j->ids, j->nids, tok, n);
    }
    if (o->dump && k == o->check) status = dump_forward(j, tok, got);
    else status = check_one(j, ev, premise, k, cls, tok, got, lead, target, cc);
    if (!status && ords && k < o->check &&
        !raspC_orders_run(ords, k, tok, raspE_value(ev, ir->outputs[0], 0), &j->err))
      status = FAILED;
  }
  raspE_free(ev);
  raspM_free(premise);
  raspM_free(tok);
  raspM_free(got);
  if (ords && !status) cc->ord_failed = raspC_orders_summary(ords, stdout);
  raspC_orders_free(ords);
  return status;
}

/* --check's summary lines. */
static void check_summary(const cjob *j, const ccount *cc, int npremise) {
  const copts *o = j->o;
  long done = cc->done;
  if (o->check) {
    printf("check: %ld/%ld inputs agree with the interpreter", done - cc->bad, done);
    if (o->prec != RASPG_FP32) printf(" in %s", precs[o->prec]);
    int ncls = j->pathstar ? PS_NCLASS : IN_NCLASS, any = 0;
    for (int c = 0; c < ncls; c++)
      if (cc->cls_done[c] && (c || cc->cls_done[c] < done))
        printf("%s%s %ld/%ld", any++ ? ", " : " (",
               j->pathstar ? ps_class_name[c] : in_class_name[c], cc->cls_done[c] - cc->cls_bad[c],
               cc->cls_done[c]);
    printf("%s\n", any ? ")" : "");
    if (npremise)
      printf("check: the assumed moves' premise%s held on %ld/%ld inputs; the model agrees on "
             "%ld/%ld of those%s\n", o->moves == RASPG_MOVES_ONE ? " (one key each)" : "",
             cc->held, done - cc->untested, cc->held - cc->held_bad, cc->held,
             cc->untested ? " (inputs whose selectors are too big to test left out)" : "");
  }
  if (o->check && o->encoder)
    printf("check: the program's check() passes on %ld/%ld inputs with the answer "
           "masked\n", cc->passed, done);
}

/* The command's work, after its options: 0, or an exit status after a
** message, or FAILED with j->err set. */
static int compile_job(cjob *j, rasp_access *access) {
  const copts *o = j->o;
  if (j->pathstar) {
    int st = trace_pathstar(j);
    if (st) return st;
  } else {
    int st = trace_plain(j, access);
    if (st) return st;
  }
  int st = compile_model(j);
  if (st) return st;
  ccount cc;
  memset(&cc, 0, sizeof cc);
  if ((st = check_model(j, &cc))) return st;
  check_summary(j, &cc, o->check && j->gm.moves_assumed);
  if (cc.bad || cc.ord_failed || cc.passed < (o->encoder ? cc.done : 0)) {
    if (o->stem)
      fprintf(stderr, "rasp compile: the check failed: no model written to %s (a model "
                      "already there is left as it was)\n", o->stem);
    return 1;
  }
  return save_model(j);
}

/* The command; *access (options --allow-*) is the caller's to free. */
static int compile_cmd(int argc, char **argv, rasp_access *access) {
  copts o;
  int parsed = compile_opts(argc, argv, access, &o);
  if (parsed <= 0) return parsed == 0 ? 0 : 2;
  cjob j;
  memset(&j, 0, sizeof j);
  j.o = &o;
  int status;
  if (raspK_load_with(o.file, o.stdlib, access, (int)o.D, (int)o.M, (int)o.V, &j.prog, &j.err)) {
    j.pathstar = 1;
  } else if (o.task_given || j.err.code != RASP_E_NO_TASK) {
    raspR_print(&j.err, stderr);
    raspK_program_free(&j.prog);
    return raspR_exit_status(&j.err);
  }
  if (o.encoder && !j.pathstar) {
    fprintf(stderr, "rasp compile: --encoder is for path-star programs (files that "
                    "declare `task`)\n");
    status = 2;
  } else if ((status = compile_job(&j, access)) == FAILED) {
    raspR_print(&j.err, stderr);
    status = raspR_exit_status(&j.err);
  }
  raspM_free(j.ids);
  raspG_free(&j.gm);
  if (j.pathstar) raspK_trace_free(&j.tr);
  else rasp_ctx_free(j.ctx);
  raspK_program_free(&j.prog);
  if (j.vocab) raspC_free_strings(j.vocab, j.nvocab);
  return status;
}

int rasp_cli_compile(int argc, char **argv) {
  rasp_access access = {0};
  int status = compile_cmd(argc, argv, &access);
  raspC_access_free(&access);
  return status;
}
