/*
** rverify.c -- the verifier: programs against path-star graphs.
**
** A program is traced once per (D, M): the IR does not depend on the graph,
** only on the sequence length and the task parameters.  Verification then
** evaluates that one IR on batches of generated inputs, on several threads
** (each with its own evaluator; the IR is shared read-only), and judges
** each output with the program's own check() function.  Inputs are indexed
** samples of a seeded generator, so every thread count sees the same graphs
** and a failure can be named by its index and replayed.
**
** Vocabulary order.  A trace numbers the vocabulary as the file declares
** (task['symbols_first']), at random per graph (--vocab-order shuffled), or
** in one of two fixed reorderings that the order analysis (rorder.h)
** retraces under; the generator's token ids reach the program through
** tr->tok_map, so the graphs are the same whatever the numbering.
**
** One input (raspK_parse_input) is read by rtask_input.c, rtask's reader
** of the text its samples are written as.
**
** The dynamic probes are rverify_probe.c's, counterexamples
** rverify_shrink.c's (rverify_int.h: what the files share).
*/
#include "rverify.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rcausal.h"
#include "rmem.h"
#include "rstage.h"
#include "rverify_int.h"

static const char *base_name(const char *path, char *buf, size_t size) {
  const char *slash = strrchr(path, '/');
  snprintf(buf, size, "%s", slash ? slash + 1 : path);
  char *dot = strrchr(buf, '.');
  if (dot && strcmp(dot, ".rasp") == 0) *dot = '\0';
  return buf;
}

/* Globals that describe the layout (rtask.h), set before the file runs. */
static void set_layout_globals(rasp_ctx *ctx, const rasp_task_opts *o, int n) {
  rasp_layout_global g[RASP_LAYOUT_NGLOBALS];
  raspT_layout_globals(o, n, g);
  for (int i = 0; i < RASP_LAYOUT_NGLOBALS; i++) {
    if (g[i].is_bool) rasp_set_bool(ctx, g[i].name, (int)g[i].value);
    else rasp_set_int(ctx, g[i].name, g[i].value);
  }
}


static int setting_bool(const char *path, const char *key, const char *text, int *out,
                        rasp_error *err) {
  if (strcmp(text, "True") == 0 || strcmp(text, "1") == 0) *out = 1;
  else if (strcmp(text, "False") == 0 || strcmp(text, "0") == 0) *out = 0;
  else {
    raspR_setnoposc(err, RASP_E_TASK, "%s: task['%s'] must be True or False, not '%s'", path, key, text);
    return 0;
  }
  return 1;
}

#define KNOWN_KEYS                                                               \
  "order, q, markers, st_names, bos, eos, answer, symbols, min_M, min_D, check, entry, " \
  "causal, expect, symbols_first, sweep_M"

typedef struct unknown_key { char *key; } unknown_key;

static void note_unknown_key(void *user, const char *key) {
  static const char *known[] = {"order", "q", "markers", "st_names", "bos", "eos",
                                "answer", "symbols", "min_M", "min_D", "check",
                                "entry", "causal", "expect", "symbols_first", "sweep_M",
                                NULL};
  unknown_key *uk = user;
  if (uk->key) return;
  for (int i = 0; known[i]; i++)
    if (strcmp(known[i], key) == 0) return;
  uk->key = raspM_strdup(key);
}

/* Reads the `task` dict into prog->base. */
static int read_settings(rasp_ctx *ctx, rasp_program *prog, rasp_error *err) {
  char buf[256];
  rasp_task_opts *o = &prog->base;
  const char *path = prog->path;
  if (!rasp_has_global(ctx, "task")) {
    raspR_setnoposc(err, RASP_E_NO_TASK, "%s: the program declares no task settings (a global dict 'task')", path);
    return 0;
  }
  /* a misspelt setting would silently keep its default: refuse it */
  unknown_key uk = {NULL};
  rasp_dict_keys(ctx, "task", note_unknown_key, &uk);
  if (uk.key) {
    raspR_setnoposc(err, RASP_E_TASK, "%s: unknown task setting '%s' (known: %s)", path, uk.key, KNOWN_KEYS);
    raspM_free(uk.key);
    return 0;
  }
  int r;
  if ((r = rasp_get_setting(ctx, "task", "order", buf, sizeof buf, err)) < 0) return 0;
  if (r) {
    if (strcmp(buf, "edge") == 0) o->order = RASP_ORDER_EDGE;
    else if (strcmp(buf, "arm") == 0) o->order = RASP_ORDER_ARM;
    else {
      raspR_setnoposc(err, RASP_E_TASK, "%s: task['order'] must be 'edge' or 'arm', not '%s'", path, buf);
      return 0;
    }
  }
  if ((r = rasp_get_setting(ctx, "task", "q", buf, sizeof buf, err)) < 0) return 0;
  if (r) {
    if (strcmp(buf, "start") == 0) o->q = RASP_Q_START;
    else if (strcmp(buf, "end") == 0) o->q = RASP_Q_END;
    else {
      raspR_setnoposc(err, RASP_E_TASK, "%s: task['q'] must be 'start' or 'end', not '%s'", path, buf);
      return 0;
    }
  }
  if ((r = rasp_get_setting(ctx, "task", "answer", buf, sizeof buf, err)) < 0) return 0;
  if (r) {
    static const char *names[] = {"none", "forward", "reverse", "lead"};
    int k = 0;
    while (k < 4 && strcmp(buf, names[k]) != 0) k++;
    if (k == 4) {
      raspR_setnoposc(err, RASP_E_TASK, "%s: task['answer'] must be none, forward, reverse or lead, not '%s'",
                     path, buf);
      return 0;
    }
    o->answer = (rasp_answer)k;
  }
  struct { const char *key; int *dst; } bools[] = {
      {"st_names", &o->st_names}, {"bos", &o->bos}, {"eos", &o->eos}, {"causal", &prog->causal},
      {"symbols_first", &prog->symbols_first}};
  for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++) {
    if ((r = rasp_get_setting(ctx, "task", bools[i].key, buf, sizeof buf, err)) < 0) return 0;
    if (r && !setting_bool(path, bools[i].key, buf, bools[i].dst, err)) return 0;
  }
  struct { const char *key; int *dst; int lo, hi; } ints[] = {
      {"markers", &o->markers, 1, 2}, {"min_M", &prog->min_M, 2, 1000000},
      {"min_D", &prog->min_D, 1, 1000000}, {"sweep_M", &prog->sweep_M, 2, 1000}};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    if ((r = rasp_get_setting(ctx, "task", ints[i].key, buf, sizeof buf, err)) < 0) return 0;
    if (!r) continue;
    char *end;
    long v = strtol(buf, &end, 10);
    if (!*buf || *end || v < ints[i].lo || v > ints[i].hi) {
      raspR_setnoposc(err, RASP_E_TASK, "%s: task['%s'] must be an integer in %d..%d, not '%s'", path,
                     ints[i].key, ints[i].lo, ints[i].hi, buf);
      return 0;
    }
    *ints[i].dst = (int)v;
  }
  if ((r = rasp_get_setting(ctx, "task", "expect", buf, sizeof buf, err)) < 0) return 0;
  if (r) {
    if (strcmp(buf, "fail") == 0) prog->expect_fail = 1;
    else if (strcmp(buf, "pass") != 0) {
      raspR_setnoposc(err, RASP_E_TASK, "%s: task['expect'] must be 'pass' or 'fail', not '%s'", path, buf);
      return 0;
    }
  }
  if ((r = rasp_get_setting(ctx, "task", "check", buf, sizeof buf, err)) < 0) return 0;
  snprintf(prog->check, sizeof prog->check, "%.63s", r ? buf : "check");
  if ((r = rasp_get_setting(ctx, "task", "entry", buf, sizeof buf, err)) < 0) return 0;
  snprintf(prog->entry, sizeof prog->entry, "%.63s", r ? buf : "main");
  return 1;
}

/* The id that the declared numbering's id v gets in a probe (1..K). */
static int64_t probe_id(int kind, int64_t v, int64_t K) {
  return kind == IDS_PROBE_ROTATE ? v % K + 1 : K + 1 - v;
}

/* ids[c] = the program's id of canonical symbol c (task tokens 1..nv are
** c = 0..nv-1, then the extra symbols). */
static void number_ids(const rasp_program *prog, int nv, int K, int kind, uint64_t seed,
                       uint64_t index, int64_t *ids) {
  for (int c = 0; c < K; c++)
    ids[c] = prog->symbols_first ? (c < nv ? c + 1 + (K - nv) : c - nv + 1) : c + 1;
  if (kind == IDS_PROBE_ROTATE || kind == IDS_PROBE_REVERSE)
    for (int c = 0; c < K; c++) ids[c] = probe_id(kind, ids[c], K);
  if (kind == IDS_SHUFFLED) { /* Fisher-Yates on its own stream of the seed */
    rasp_rng rng;
    raspT_rng_seed(&rng, seed ^ 0x766f636162756c61ULL, index);
    for (int c = K - 1; c > 0; c--) {
      int r = (int)raspT_rng_below(&rng, (uint64_t)c + 1);
      int64_t t = ids[c];
      ids[c] = ids[r];
      ids[r] = t;
    }
  }
}

/* Builds a context for (D, M, V): vocabulary, globals, stdlib, the file.
** tok_map (may be NULL) gets a malloc'd map from task token ids to the
** program's ids, or NULL when they are the same. */
static rasp_ctx *program_context(const rasp_program *prog, const rasp_task_opts *o, int n,
                                 char ***extra, int *nextra, int kind, uint64_t seed,
                                 uint64_t index, int64_t **tok_map, rasp_error *err) {
  if (tok_map) *tok_map = NULL;
  rasp_ctx *ctx = rasp_ctx_new(n, NULL, err);
  if (!ctx) return NULL;
  if (!rasp_set_access(ctx, &prog->access, err)) {
    rasp_ctx_free(ctx);
    return NULL;
  }
  int nv = raspT_vocab_size(o) - 1; /* ids 1 .. V+7 */
  size_t cap = (size_t)(nv + (extra ? *nextra : 0) + 1);
  char **canon = raspM_alloc(sizeof(char *) * cap), **syms = raspM_alloc(sizeof(char *) * cap);
  char buf[64];
  for (int id = 1; id <= nv; id++) {
    raspT_token_text(o, id, buf, sizeof buf);
    canon[id - 1] = raspM_strdup(buf);
  }
  int total = nv;
  if (extra)
    for (int i = 0; i < *nextra; i++) {
      int dup = 0;
      for (int k = 0; k < total && !dup; k++) dup = strcmp(canon[k], (*extra)[i]) == 0;
      if (!dup) canon[total++] = raspM_strdup((*extra)[i]);
    }
  int64_t *ids = raspM_alloc(sizeof(int64_t) * cap);
  number_ids(prog, nv, total, kind, seed, index, ids);
  int same = 1;
  for (int c = 0; c < total; c++) {
    syms[ids[c] - 1] = canon[c];
    if (ids[c] != c + 1) same = 0;
  }
  if (tok_map && !same) {
    *tok_map = raspM_alloc(sizeof(int64_t) * (size_t)(nv + 1));
    (*tok_map)[0] = 0;
    for (int t = 1; t <= nv; t++) (*tok_map)[t] = ids[t - 1];
  }
  int ok = rasp_set_vocab(ctx, (const char *const *)syms, total, err);
  for (int i = 0; i < total; i++) raspM_free(canon[i]);
  raspM_free(canon);
  raspM_free(syms);
  raspM_free(ids);
  if (ok) {
    set_layout_globals(ctx, o, n);
    ok = rasp_load_stdlib(ctx, prog->stdlib, err) &&
         (prog->text ? rasp_exec_string(ctx, prog->path, prog->text, err)
                     : rasp_exec_file(ctx, prog->path, err));
  }
  if (!ok) {
    if (tok_map) {
      raspM_free(*tok_map);
      *tok_map = NULL;
    }
    rasp_ctx_free(ctx);
    return NULL;
  }
  return ctx;
}

int raspK_load(const char *path, const char *stdlib, int D, int M, int V, rasp_program *prog,
               rasp_error *err) {
  return raspK_load_with(path, stdlib, NULL, D, M, V, prog, err);
}

int raspK_load_with(const char *path, const char *stdlib, const rasp_access *access, int D,
                    int M, int V, rasp_program *prog, rasp_error *err) {
  return raspK_load_text(path, NULL, stdlib, access, D, M, V, prog, err);
}

int raspK_load_text(const char *path, const char *text, const char *stdlib,
                    const rasp_access *access, int D, int M, int V, rasp_program *prog,
                    rasp_error *err) {
  memset(prog, 0, sizeof *prog);
  prog->text = text;
  if (access) prog->access = *access;
  prog->path = raspM_strdup(path);
  char buf[256];
  prog->name = raspM_strdup(base_name(path, buf, sizeof buf));
  prog->stdlib = stdlib;
  prog->min_M = 2;
  prog->min_D = 1;
  raspT_opts_default(&prog->base);
  prog->base.bos = prog->base.eos = 0;
  prog->base.answer = RASP_ANS_NONE;
  prog->base.D = D;
  prog->base.M = M;
  prog->base.V = V;
  /* settings pass: the layout globals for the defaults, length 1 */
  rasp_ctx *ctx = program_context(prog, &prog->base, 1, NULL, NULL, IDS_DECLARED, 0, 0, NULL, err);
  if (!ctx) goto fail;
  int ok = read_settings(ctx, prog, err);
  rasp_ctx_free(ctx);
  if (!ok) goto fail;
  return 1;
fail:
  raspK_program_free(prog);
  return 0;
}

void raspK_program_free(rasp_program *prog) {
  raspM_free(prog->path);
  raspM_free(prog->name);
  memset(prog, 0, sizeof *prog);
}

/* A program that declares itself causal must not look ahead: its output at
** every position q may depend only on tokens 0..q.  Checked on the IR with
** the causality analysis (rcausal.h), so it holds for the code as written,
** not just for the inputs tried; the error points at the node that leaks. */
static int check_causal(rasp_ptrace *tr, rasp_error *err) {
  rasp_causal ca;
  raspA_analyse(rasp_ctx_ir(tr->ctx), &ca);
  int ok = raspA_check(&ca, tr->output, "the program declares task['causal'] = True", err);
  raspA_free(&ca);
  return ok;
}

int raspK_trace(const rasp_program *prog, int D, int M, int V, rasp_ptrace *tr, rasp_error *err) {
  return raspK_trace_kind(prog, D, M, V, IDS_DECLARED, 0, 0, 1, tr, err);
}

int raspK_trace_ids(const rasp_program *prog, int D, int M, int V, int shuffled, uint64_t seed,
                    uint64_t index, rasp_ptrace *tr, rasp_error *err) {
  return raspK_trace_kind(prog, D, M, V, shuffled ? IDS_SHUFFLED : IDS_DECLARED, seed, index, 1, tr,
                    err);
}

/* The largest nodes x n for which a trace asks the compiler's planner for
** its layers (rlayers.h); beyond it, the IR rule with the reason. */
#define RASPK_PLAN_MAX 2e6

int raspK_trace_kind(const rasp_program *prog, int D, int M, int V, int kind, uint64_t seed,
                     uint64_t index, int analyse, rasp_ptrace *tr, rasp_error *err) {
  memset(tr, 0, sizeof *tr);
  tr->opts = prog->base;
  tr->opts.D = D;
  tr->opts.M = M;
  tr->opts.V = V;
  tr->opts.structured = 0;
  if (M < prog->min_M || D < prog->min_D) {
    raspR_setnoposc(err, RASP_E_USAGE, "%s needs M >= %d and D >= %d (asked for D=%d, M=%d)", prog->path,
                   prog->min_M, prog->min_D, D, M);
    return 0;
  }
  if (!raspT_opts_check(&tr->opts, err)) return 0;
  tr->n = raspT_length(&tr->opts);
  /* The extra symbols may depend on M: read them from a settings run at the
  ** right length, then build the real context with them. */
  rasp_ctx *probe = program_context(prog, &tr->opts, tr->n, NULL, NULL, IDS_DECLARED, 0, 0, NULL,
                                    err);
  if (!probe) return 0;
  char buf[8192];
  int r = rasp_get_setting(probe, "task", "symbols", buf, sizeof buf, err);
  rasp_ctx_free(probe);
  if (r < 0) return 0;
  char **extra = NULL;
  int nextra = 0;
  if (r) {
    char *save = NULL;
    int cap = 0;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
      RASP_GROW(extra, cap, nextra + 1);
      extra[nextra++] = raspM_strdup(tok);
    }
  }
  tr->ntask_ids = raspT_vocab_size(&tr->opts) - 1;
  tr->ctx = program_context(prog, &tr->opts, tr->n, &extra, &nextra, kind, seed, index,
                            &tr->tok_map, err);
  for (int i = 0; i < nextra; i++) raspM_free(extra[i]);
  raspM_free(extra);
  if (!tr->ctx) return 0;
  if (!rasp_trace(tr->ctx, prog->entry, err)) {
    raspK_trace_free(tr);
    return 0;
  }
  rasp_ir *ir = rasp_ctx_ir(tr->ctx);
  tr->output = ir->outputs[0];
  snprintf(tr->check, sizeof tr->check, "%s", prog->check);
  tr->nvocab = rasp_vocab_size(tr->ctx);
  tr->vocab_sym = raspM_alloc(sizeof(int64_t) * (size_t)(tr->nvocab + 1));
  for (int id = 1; id <= tr->nvocab; id++)
    tr->vocab_sym[id] = rasp_symbol(tr->ctx, rasp_vocab_symbol(tr->ctx, id));
  /* the layers the compiled model has (rlayers.h): `rasp compile` builds
     for the task's ids 1..ntask_ids and refuses a renumbering tok_map */
  if (analyse && tr->tok_map) {
    raspL_analyse(ir, &tr->output, 1, &tr->layers);
    snprintf(tr->layers.why, sizeof tr->layers.why, "the compiler refuses: task['symbols_first'] renumbers the tokens");
  } else if (analyse && (double)ir->nnodes * tr->n > RASPK_PLAN_MAX) {
    /* the planner keeps a table of n values per node: at verify's large
       sizes (D = 100, M = 50: a gigabyte) it would cost more than the run */
    raspL_analyse(ir, &tr->output, 1, &tr->layers);
    snprintf(tr->layers.why, sizeof tr->layers.why,
             "too large to plan cheaply (%d nodes x n = %d is over %.0f); rasp compile "
             "--dry-run --stats gives the compiled count", ir->nnodes, tr->n, (double)RASPK_PLAN_MAX);
  } else if (analyse) {
    int64_t *ids = raspM_alloc(sizeof(int64_t) * (size_t)(tr->ntask_ids + 1));
    for (int i = 0; i < tr->ntask_ids; i++) ids[i] = i + 1;
    raspL_analyse_compiled(ir, tr->output, ids, tr->ntask_ids, tr->nvocab, &tr->layers);
    raspM_free(ids);
  }
  tr->unstaged = "--interpret-check";
  if (!prog->interpret_check) tr->staged = raspS_stage(tr->ctx, tr->check, tr->n, &tr->unstaged);
  tr->probe_causal = prog->causal;
  if (prog->causal && !check_causal(tr, err)) {
    raspK_trace_free(tr);
    return 0;
  }
  return 1;
}

void raspK_trace_free(rasp_ptrace *tr) {
  if (tr->layers.sublayer) raspL_free(&tr->layers);
  if (tr->order_done) raspO_free(&tr->order);
  raspM_free(tr->tok_map);
  raspS_free(tr->staged);
  rasp_ctx_free(tr->ctx);
  raspM_free(tr->vocab_sym);
  memset(tr, 0, sizeof *tr);
}

static int check_mapped(rasp_ptrace *tr, rasp_eval *ev, int B, const int64_t *tokens,
                        const int64_t *lead, const int64_t *target, unsigned char *pass,
                        rasp_error *err);

static rasp_elem symbolic(const rasp_ptrace *tr, rasp_elem e) {
  if (e.den == 1 && e.num >= 1 && e.num <= tr->nvocab)
    return (rasp_elem){tr->vocab_sym[e.num], RASP_DEN_SYM};
  return e;
}

int64_t *raspK_map_ids(const rasp_ptrace *tr, const int64_t *ids, size_t count) {
  if (!tr->tok_map) return NULL;
  int64_t *out = raspM_alloc(sizeof(int64_t) * (count ? count : 1));
  for (size_t i = 0; i < count; i++)
    out[i] = ids[i] >= 1 && ids[i] <= tr->ntask_ids ? tr->tok_map[ids[i]] : ids[i];
  return out;
}

int raspK_check_batch(rasp_ptrace *tr, rasp_eval *ev, int B, const int64_t *tokens_in,
                      const int64_t *lead_in, const int64_t *target_in, unsigned char *pass,
                      rasp_error *err) {
  int64_t *mtok = raspK_map_ids(tr, tokens_in, (size_t)B * (size_t)tr->n);
  int64_t *mlead = raspK_map_ids(tr, lead_in, (size_t)B), *mtarget = raspK_map_ids(tr, target_in, (size_t)B);
  const int64_t *tokens = mtok ? mtok : tokens_in, *lead = mlead ? mlead : lead_in,
                *target = mtarget ? mtarget : target_in;
  int ok = check_mapped(tr, ev, B, tokens, lead, target, pass, err);
  raspM_free(mtok);
  raspM_free(mlead);
  raspM_free(mtarget);
  return ok;
}

/* check(output, lead, target) on one output v (tr->n elements, token ids
** as the interpreter numbers them): staged when it can be, else through
** the interpreter (*scratch: a buffer kept between calls).  1 with *pass
** set, or 0 with err. */
static int check_output(rasp_ptrace *tr, const rasp_elem *v, int64_t lead, int64_t target,
                        unsigned char *pass, rasp_elem **scratch, rasp_error *err) {
  if (tr->staged) { /* no interpreter, no lock; -1: let the interpreter decide */
    int r = raspS_eval(tr->staged, v, tr->vocab_sym, tr->nvocab,
                       symbolic(tr, (rasp_elem){lead, 1}), symbolic(tr, (rasp_elem){target, 1}));
    if (r >= 0) {
      *pass = (unsigned char)r;
      return 1;
    }
  }
  if (!*scratch) *scratch = raspM_alloc(sizeof(rasp_elem) * (size_t)tr->n);
  rasp_elem *out = *scratch;
  for (int i = 0; i < tr->n; i++) out[i] = symbolic(tr, v[i]);
  rasp_arg args[3];
  memset(args, 0, sizeof args);
  args[0].elems = out;
  args[0].count = tr->n;
  args[1].elem = symbolic(tr, (rasp_elem){lead, 1});
  args[2].elem = symbolic(tr, (rasp_elem){target, 1});
  int truth = 0;
  int ok = rasp_call_check(tr->ctx, tr->check, args, 3, &truth, err);
  *pass = (unsigned char)(ok && truth);
  return ok;
}

static int check_mapped(rasp_ptrace *tr, rasp_eval *ev, int B, const int64_t *tokens,
                        const int64_t *lead, const int64_t *target, unsigned char *pass,
                        rasp_error *err) {
  if (!raspE_run(ev, B, tokens, err)) return 0;
  rasp_elem *out = NULL;
  int ok = 1;
  for (int b = 0; b < B && ok; b++)
    ok = check_output(tr, raspE_value(ev, tr->output, b), lead[b], target[b], &pass[b], &out, err);
  raspM_free(out);
  return ok;
}

int raspK_check_output(rasp_ptrace *tr, const rasp_elem *output, int64_t lead, int64_t target,
                       int *pass, rasp_error *err) {
  int64_t ids[2] = {lead, target}, *m = raspK_map_ids(tr, ids, 2);
  rasp_elem *v = raspM_alloc(sizeof(rasp_elem) * (size_t)tr->n), *scratch = NULL;
  for (int i = 0; i < tr->n; i++) {
    v[i] = output[i];
    if (tr->tok_map && v[i].den == 1 && v[i].num >= 1 && v[i].num <= tr->ntask_ids)
      v[i].num = tr->tok_map[v[i].num];
  }
  unsigned char p = 0;
  int ok = check_output(tr, v, m ? m[0] : lead, m ? m[1] : target, &p, &scratch, err);
  *pass = p;
  raspM_free(m);
  raspM_free(v);
  raspM_free(scratch);
  return ok;
}

int raspK_sample_into(const rasp_ptrace *tr, uint64_t seed, uint64_t index, int64_t *tokens,
                      int64_t *lead, int64_t *target, rasp_sample *scratch, rasp_error *err) {
  rasp_sample own;
  rasp_sample *s = scratch ? scratch : &own;
  if (!scratch) memset(&own, 0, sizeof own);
  int ok = raspT_sample(&tr->opts, seed, index, s, err);
  if (ok) {
    for (int i = 0; i < s->ntokens; i++) tokens[i] = s->tokens[i];
    *lead = s->lead;
    *target = tr->opts.st_names ? tr->opts.V + RASP_SP_T : s->t;
  }
  if (!scratch) raspT_sample_free(&own);
  return ok;
}

int raspK_sample_tokens(const rasp_ptrace *tr, uint64_t seed, uint64_t index, int64_t *tokens,
                        int64_t *lead, int64_t *target, rasp_error *err) {
  return raspK_sample_into(tr, seed, index, tokens, lead, target, NULL, err);
}

/* ------------------------------------------------------- order analysis */

int raspK_order(const rasp_program *prog, rasp_ptrace *tr) {
  if (tr->order_done) raspO_free(&tr->order);
  tr->order_done = 1;
  memset(&tr->order, 0, sizeof tr->order);
  rasp_ptrace probe[2];
  int kinds[2] = {IDS_PROBE_ROTATE, IDS_PROBE_REVERSE};
  int ok = 1;
  rasp_error err = {0};
  for (int p = 0; p < 2; p++) {
    memset(&probe[p], 0, sizeof probe[p]);
    if (ok && !raspK_trace_kind(prog, tr->opts.D, tr->opts.M, tr->opts.V, kinds[p], 0, 0, 0, &probe[p],
                          &err)) {
      ok = 0;
      raspR_setnopos(&tr->order.why,
                     "the program fails to trace when the symbols get other ids: %s", err.msg);
    }
  }
  if (ok) {
    int64_t K = tr->nvocab;
    int64_t *perm[2];
    unsigned char *node_id = raspM_alloc((size_t)K + 1);
    memset(node_id, 0, (size_t)K + 1);
    for (int v = 1; v <= tr->opts.V; v++) node_id[tr->tok_map ? tr->tok_map[v] : v] = 1;
    rasp_order_probe pr[2];
    for (int p = 0; p < 2; p++) {
      perm[p] = raspM_alloc(sizeof(int64_t) * (size_t)(K + 1));
      perm[p][0] = 0;
      for (int64_t v = 1; v <= K; v++) perm[p][v] = probe_id(kinds[p], v, K);
      pr[p].ir = rasp_ctx_ir(probe[p].ctx);
      pr[p].output = probe[p].output;
      pr[p].perm = perm[p];
    }
    raspO_analyse(rasp_ctx_ir(tr->ctx), tr->output, K, node_id, pr, K > 1 ? 2 : 1, &tr->order);
    /* check() sees symbols, but it could still read `d`: its staged form
       must not change with the ids, and an interpreted one is not trusted */
    if (tr->order.invariant) {
      char a[2048], b[2048];
      if (!tr->staged) {
        tr->order.invariant = 0;
        raspR_setnopos(&tr->order.why, "check() is interpreted (%s), so it is not analysed",
                       tr->unstaged ? tr->unstaged : "not staged");
      } else {
        raspS_describe(tr->staged, a, sizeof a);
        for (int p = 0; p < 2 && tr->order.invariant; p++) {
          b[0] = '\0';
          if (probe[p].staged) raspS_describe(probe[p].staged, b, sizeof b);
          if (strcmp(a, b) != 0) {
            tr->order.invariant = 0;
            raspR_setnopos(&tr->order.why, "check() changes when the symbols get other ids");
          }
        }
      }
    }
    for (int p = 0; p < 2; p++) raspM_free(perm[p]);
    raspM_free(node_id);
  }
  for (int p = 0; p < 2; p++) raspK_trace_free(&probe[p]);
  return 1;
}

/* ------------------------------------------------------ random, threaded */

/* Wakes the reporting thread when a worker finishes, so that a short run
** does not wait out the reporter's sleep. */
typedef struct vdone {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int finished;
} vdone;

typedef struct vjob {
  vdone *all;
  rasp_ptrace *tr;
  uint64_t begin, end, seed;
  uint64_t passed, done;
  int finished;
  int64_t first_fail;
  rasp_error err;
  int failed_error;
  raspK_probes pr; /* the causal probes' counts */
} vjob;

int *raspK_start_workers(void *(*fn)(void *), void *jobs, size_t size, int n, pthread_t *th,
                         pthread_attr_t *attr) {
  int *ran_here = raspM_alloc(sizeof(int) * (size_t)n);
  for (int j = 0; j < n; j++)
    ran_here[j] = pthread_create(&th[j], attr, fn, (char *)jobs + (size_t)j * size) != 0;
  for (int j = 0; j < n; j++)
    if (ran_here[j]) fn((char *)jobs + (size_t)j * size);
  return ran_here;
}

/* Worker threads for one run: their handles, the attributes they start
** with (a stack for the interpreter's recursion in callbacks), which ran
** inline (raspK_start_workers), and what they signal when finished. */
typedef struct wpool {
  pthread_t *th;
  pthread_attr_t attr;
  int *inline_job;
  int jobs;
  vdone all;
} wpool;

static void pool_init(wpool *p, int jobs) {
  memset(p, 0, sizeof *p);
  p->jobs = jobs;
  p->th = raspM_alloc(sizeof(pthread_t) * (size_t)jobs);
  pthread_attr_init(&p->attr);
  pthread_attr_setstacksize(&p->attr, 64u << 20); /* callbacks recurse in the interpreter */
  pthread_mutex_init(&p->all.lock, NULL);
  pthread_cond_init(&p->all.cond, NULL);
  p->all.finished = 0;
}

static void pool_start(wpool *p, void *(*fn)(void *), void *jobs, size_t size) {
  p->inline_job = raspK_start_workers(fn, jobs, size, p->jobs, p->th, &p->attr);
}

static void pool_join(wpool *p, int j) {
  if (!p->inline_job[j]) pthread_join(p->th[j], NULL);
}

static void pool_free(wpool *p) {
  pthread_attr_destroy(&p->attr);
  pthread_cond_destroy(&p->all.cond);
  pthread_mutex_destroy(&p->all.lock);
  raspM_free(p->inline_job);
  raspM_free(p->th);
}

/* A worker's last act: count itself finished and wake the waiting thread. */
static void worker_done(vdone *all) {
  pthread_mutex_lock(&all->lock);
  all->finished++;
  pthread_cond_signal(&all->cond);
  pthread_mutex_unlock(&all->lock);
}

/* Waits for `jobs` workers to signal all->finished, calling progress(user,
** done, total) every 20 ms from this thread with the sum of the workers'
** counters (done[j * stride], read atomically). */
static void await_workers(vdone *all, int jobs, const uint64_t *done, size_t stride,
                          raspK_progress progress, void *user, uint64_t total) {
  pthread_mutex_lock(&all->lock);
  while (all->finished < jobs) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 20 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&all->cond, &all->lock, &until);
    if (all->finished < jobs && progress) {
      uint64_t sum = 0;
      for (int j = 0; j < jobs; j++)
        sum += __atomic_load_n((const uint64_t *)((const char *)done + (size_t)j * stride),
                               __ATOMIC_RELAXED);
      pthread_mutex_unlock(&all->lock);
      progress(user, sum, total);
      pthread_mutex_lock(&all->lock);
    }
  }
  pthread_mutex_unlock(&all->lock);
}

static void *verify_worker(void *arg) {
  vjob *job = arg;
  rasp_ptrace *tr = job->tr;
  int n = tr->n;
  rasp_eval *ev = raspE_new(rasp_ctx_ir(tr->ctx));
  raspE_set_keep_intermediates(ev, 0); /* only the output is read */
  rasp_sample scratch;
  memset(&scratch, 0, sizeof scratch);
  int64_t *tokens = raspM_alloc(sizeof(int64_t) * (size_t)n * VERIFY_BATCH);
  int64_t lead[VERIFY_BATCH], target[VERIFY_BATCH];
  unsigned char pass[VERIFY_BATCH];
  job->first_fail = -1;
  job->pr.first_leak = -1;
  /* batches end at multiples of VERIFY_BATCH, so that which inputs are
     probed depends on their index alone, not on how the run was split
     among threads or MPI ranks */
  for (uint64_t i = job->begin, next; i < job->end; i = next) {
    next = i - i % VERIFY_BATCH + VERIFY_BATCH;
    if (next > job->end) next = job->end;
    int B = (int)(next - i);
    for (int b = 0; b < B; b++)
      if (!raspK_sample_into(tr, job->seed, i + (uint64_t)b, tokens + (size_t)b * (size_t)n,
                         &lead[b], &target[b], &scratch, &job->err)) {
        job->failed_error = 1;
        goto done;
      }
    if (!raspK_check_batch(tr, ev, B, tokens, lead, target, pass, &job->err)) {
      job->failed_error = 1;
      if (job->first_fail < 0) job->first_fail = (int64_t)i;
      goto done;
    }
    for (int b = 0; b < B; b++) {
      if (pass[b]) job->passed++;
      else if (job->first_fail < 0) job->first_fail = (int64_t)(i + (uint64_t)b);
    }
    /* the inputs whose index is below VERIFY_PROBES modulo the probing
       period: the batch lies within one period, so they lead it */
    uint64_t period = (uint64_t)VERIFY_BATCH * PROBE_EVERY, p0 = i - i % period;
    if (tr->probe_causal && i < p0 + VERIFY_PROBES)
      raspK_probe_batch(tr, job->seed, ev, i,
                        (int)((p0 + VERIFY_PROBES < next ? p0 + VERIFY_PROBES : next) - i), tokens,
                        &scratch, &job->pr);
    __atomic_store_n(&job->done, job->done + (uint64_t)B, __ATOMIC_RELAXED);
  }
done:
  raspT_sample_free(&scratch);
  raspM_free(tokens);
  raspE_free(ev);
  __atomic_store_n(&job->finished, 1, __ATOMIC_RELEASE);
  worker_done(job->all);
  return NULL;
}

int raspK_verify_random(rasp_ptrace *tr, uint64_t graphs, uint64_t seed, int jobs,
                        rasp_vresult *res) {
  return raspK_verify_random_progress(tr, graphs, seed, jobs, res, NULL, NULL);
}

int raspK_verify_random_progress(rasp_ptrace *tr, uint64_t graphs, uint64_t seed, int jobs,
                                 rasp_vresult *res, raspK_progress progress, void *user) {
  return raspK_verify_random_range(tr, 0, graphs, seed, jobs, res, progress, user);
}

int raspK_verify_random_range(rasp_ptrace *tr, uint64_t first, uint64_t graphs, uint64_t seed,
                              int jobs, rasp_vresult *res, raspK_progress progress, void *user) {
  memset(res, 0, sizeof *res);
  res->first_fail = -1;
  res->first_leak = -1;
  if (jobs < 1) jobs = 1;
  if ((uint64_t)jobs > graphs) jobs = graphs ? (int)graphs : 1;
  vjob *job = raspM_alloc(sizeof(vjob) * (size_t)jobs);
  memset(job, 0, sizeof(vjob) * (size_t)jobs);
  wpool pool;
  pool_init(&pool, jobs);
  for (int j = 0; j < jobs; j++) {
    job[j].all = &pool.all;
    job[j].tr = tr;
    job[j].seed = seed;
    job[j].begin = first + graphs * (uint64_t)j / (uint64_t)jobs;
    job[j].end = first + graphs * (uint64_t)(j + 1) / (uint64_t)jobs;
  }
  pool_start(&pool, verify_worker, job, sizeof job[0]);
  /* the workers count what they have done; this thread reports it every
     20 ms until the last one signals that it has finished (under MPI, rank
     0 answers the other ranks' requests from the callback: they wait no
     longer than that) */
  await_workers(&pool.all, jobs, &job[0].done, sizeof job[0], progress, user, graphs);
  int ok = 1;
  for (int j = 0; j < jobs; j++) {
    pool_join(&pool, j);
    res->passed += job[j].passed;
    res->total += job[j].end - job[j].begin;
    if (job[j].first_fail >= 0 && (res->first_fail < 0 || job[j].first_fail < res->first_fail))
      res->first_fail = job[j].first_fail;
    res->probes += job[j].pr.probes;
    res->leaks += job[j].pr.leaks;
    if (job[j].pr.first_leak >= 0 &&
        (res->first_leak < 0 || job[j].pr.first_leak < res->first_leak)) {
      res->first_leak = job[j].pr.first_leak;
      res->leak_q = job[j].pr.leak_q;
    }
    if (job[j].failed_error && ok) {
      res->error = job[j].err;
      ok = 0;
    }
  }
  pool_free(&pool);
  raspM_free(job);
  return ok;
}

/* ------------------------------------------------------------ exhaustive */

typedef struct xstate {
  rasp_ptrace *tr;
  rasp_eval *ev;
  int64_t *tokens, lead[VERIFY_BATCH], target[VERIFY_BATCH];
  int B;
  uint64_t seen;
  rasp_vresult *res;
  int error;
  int watch;   /* the order analysis left aggregates to check per input */
  raspK_progress progress; /* called after every batch (may be NULL) */
  void *user;
  uint64_t size;           /* inputs in the range */
} xstate;

static int flush_exhaustive(xstate *x) {
  unsigned char pass[VERIFY_BATCH];
  if (!x->B) return 1;
  if (!raspK_check_batch(x->tr, x->ev, x->B, x->tokens, x->lead, x->target, pass, &x->res->error)) {
    x->error = 1;
    return 0;
  }
  for (int b = 0; b < x->B; b++) {
    if (pass[b]) x->res->passed++;
    else if (x->res->first_fail < 0) x->res->first_fail = (int64_t)(x->seen - (uint64_t)x->B + (uint64_t)b);
  }
  if (x->watch)
    for (int b = 0; b < x->B; b++)
      x->res->mixed += (uint64_t)raspO_mixes(&x->tr->order, rasp_ctx_ir(x->tr->ctx), x->ev, b);
  x->res->total += (uint64_t)x->B;
  x->B = 0;
  if (x->progress) x->progress(x->user, x->res->total, x->size);
  return 1;
}

static int exhaustive_visit(const rasp_sample *s, void *user) {
  xstate *x = user;
  int64_t *dst = x->tokens + (size_t)x->B * (size_t)x->tr->n;
  for (int i = 0; i < s->ntokens; i++) dst[i] = s->tokens[i];
  x->lead[x->B] = s->lead;
  x->target[x->B] = x->tr->opts.st_names ? x->tr->opts.V + RASP_SP_T : s->t;
  x->B++;
  x->seen++;
  if (x->B == VERIFY_BATCH && !flush_exhaustive(x)) return 1;
  return 0;
}

int raspK_verify_exhaustive(rasp_ptrace *tr, uint64_t cap, rasp_vresult *res, rasp_error *err) {
  return raspK_verify_exhaustive_progress(tr, cap, res, err, NULL, NULL);
}

int raspK_verify_exhaustive_progress(rasp_ptrace *tr, uint64_t cap, rasp_vresult *res,
                                     rasp_error *err, raspK_progress progress, void *user) {
  uint64_t size;
  memset(res, 0, sizeof *res);
  res->first_fail = -1;
  res->first_leak = -1;
  if (!raspT_enumerate_size(&tr->opts, &size, err)) return 0;
  if (size > cap) {
    raspR_setnopos(err, "exhaustive enumeration of D = %d, M = %d (%s order) has %llu inputs, "
                   "more than the cap %llu", tr->opts.D, tr->opts.M,
                   tr->opts.order == RASP_ORDER_EDGE ? "edge" : "arm", (unsigned long long)size,
                   (unsigned long long)cap);
    return 0;
  }
  return raspK_verify_exhaustive_range(tr, 0, size, res, err, progress, user);
}

int raspK_verify_exhaustive_range(rasp_ptrace *tr, uint64_t first, uint64_t count,
                                  rasp_vresult *res, rasp_error *err, raspK_progress progress,
                                  void *user) {
  memset(res, 0, sizeof *res);
  res->first_fail = -1;
  res->first_leak = -1;
  xstate x;
  memset(&x, 0, sizeof x);
  x.tr = tr;
  x.res = res;
  x.progress = progress;
  x.user = user;
  x.size = count;
  x.seen = first; /* first_fail is an index into the whole enumeration */
  x.ev = raspE_new(rasp_ctx_ir(tr->ctx));
  x.watch = tr->order_done && tr->order.invariant && tr->order.nmixing > 0;
  raspE_set_keep_intermediates(x.ev, x.watch);
  x.tokens = raspM_alloc(sizeof(int64_t) * (size_t)tr->n * VERIFY_BATCH);
  int r = raspT_enumerate_range(&tr->opts, NULL, first, count, exhaustive_visit, &x, NULL, err);
  if (r == 0) flush_exhaustive(&x);
  raspM_free(x.tokens);
  raspE_free(x.ev);
  if (r < 0) return 0;
  if (x.error) {
    *err = res->error;
    return 0;
  }
  return 1;
}

/* raspK_verify_exhaustive_range on `jobs` threads: the range cut into
** contiguous parts, one evaluator each, merged as one run gives them
** (first_fail the smallest index).  As in random runs, only this thread
** calls progress (under MPI it also serves the other ranks), every 20 ms
** from the parts' counts. */
typedef struct xjob {
  rasp_ptrace *tr;
  uint64_t first, count;
  rasp_vresult res;
  rasp_error err;
  int ok;
  uint64_t done; /* atomic: inputs checked so far */
  vdone *all;
} xjob;

static void xjob_progress(void *user, uint64_t done, uint64_t total) {
  (void)total;
  __atomic_store_n(&((xjob *)user)->done, done, __ATOMIC_RELAXED);
}

static void *exhaustive_worker(void *arg) {
  xjob *job = arg;
  job->ok = raspK_verify_exhaustive_range(job->tr, job->first, job->count, &job->res, &job->err,
                                          xjob_progress, job);
  worker_done(job->all);
  return NULL;
}

int raspK_verify_exhaustive_jobs(rasp_ptrace *tr, uint64_t first, uint64_t count, int jobs,
                                 rasp_vresult *res, rasp_error *err, raspK_progress progress,
                                 void *user) {
  /* a part smaller than a few batches is not worth a thread */
  if ((uint64_t)jobs > count / (4 * VERIFY_BATCH)) jobs = (int)(count / (4 * VERIFY_BATCH));
  if (jobs <= 1) return raspK_verify_exhaustive_range(tr, first, count, res, err, progress, user);
  xjob *job = raspM_alloc(sizeof(xjob) * (size_t)jobs);
  memset(job, 0, sizeof(xjob) * (size_t)jobs);
  wpool pool;
  pool_init(&pool, jobs);
  for (int j = 0; j < jobs; j++) {
    uint64_t b = count * (uint64_t)j / (uint64_t)jobs, e = count * (uint64_t)(j + 1) / (uint64_t)jobs;
    job[j] = (xjob){.tr = tr, .first = first + b, .count = e - b, .all = &pool.all};
  }
  pool_start(&pool, exhaustive_worker, job, sizeof job[0]);
  await_workers(&pool.all, jobs, &job[0].done, sizeof job[0], progress, user, count);
  memset(res, 0, sizeof *res);
  res->first_fail = res->first_leak = -1;
  int ok = 1;
  for (int j = 0; j < jobs; j++) {
    pool_join(&pool, j);
    const rasp_vresult *r = &job[j].res;
    res->passed += r->passed;
    res->total += r->total;
    res->mixed += r->mixed;
    if (r->first_fail >= 0 && (res->first_fail < 0 || r->first_fail < res->first_fail))
      res->first_fail = r->first_fail;
    if (!job[j].ok && ok) {
      *err = job[j].err;
      res->error = job[j].err;
      ok = 0;
    }
  }
  if (ok && progress) progress(user, res->total, count);
  pool_free(&pool);
  raspM_free(job);
  return ok;
}

/* -------------------------------------------------------------- one input */

int raspK_parse_input(const rasp_program *prog, int V, const char *text, rasp_input *in,
                      rasp_error *err) {
  return raspT_parse_input(&prog->base, V, text, in, err);
}

void raspK_input_free(rasp_input *in) { raspT_input_free(in); }

int raspK_sample_input(const rasp_program *prog, int D, int M, int V, uint64_t seed,
                       uint64_t index, rasp_input *in, rasp_error *err) {
  memset(in, 0, sizeof *in);
  if (M < prog->min_M || D < prog->min_D) {
    raspR_setnopos(err, "%s needs M >= %d and D >= %d (asked for D=%d, M=%d)", prog->path,
                   prog->min_M, prog->min_D, D, M);
    return 0;
  }
  /* sample_tokens reads only the task settings of a trace */
  rasp_ptrace tr;
  memset(&tr, 0, sizeof tr);
  tr.opts = prog->base;
  tr.opts.D = D;
  tr.opts.M = M;
  tr.opts.V = V;
  tr.opts.structured = 0;
  if (!raspT_opts_check(&tr.opts, err)) return 0;
  in->D = D;
  in->M = M;
  in->n = raspT_length(&tr.opts);
  in->tokens = raspM_alloc(sizeof(int64_t) * (size_t)in->n);
  if (!raspK_sample_into(&tr, seed, index, in->tokens, &in->lead, &in->target, NULL, err)) {
    raspK_input_free(in);
    return 0;
  }
  return 1;
}

int raspK_run_input(const rasp_program *prog, int V, const rasp_input *in, FILE *out,
                    rasp_error *err) {
  rasp_ptrace tr;
  if (!raspK_trace(prog, in->D, in->M, V, &tr, err)) return -2;
  rasp_eval *ev = raspE_new(rasp_ctx_ir(tr.ctx));
  char title[160];
  snprintf(title, sizeof title, "%s on one input (D=%d, M=%d, n=%d):", prog->name, in->D, in->M,
           tr.n);
  int r = raspK_show_input(prog, &tr, ev, in->tokens, in->lead, in->target, title, 1, out, err);
  raspE_free(ev);
  raspK_trace_free(&tr);
  return r;
}
