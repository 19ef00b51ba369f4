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
** Counterexamples are shrunk the way property-based testing does it: first
** the smallest (D, M) for which some graph fails, then the edge order,
** sorted towards arm-by-arm order one adjacent swap at a time while the
** input keeps failing, so what is printed is as small and as regular as
** the failure allows.
**
** Vocabulary order.  A trace numbers the vocabulary as the file declares
** (task['symbols_first']), at random per graph (--vocab-order shuffled), or
** in one of two fixed reorderings that the order analysis (rorder.h)
** retraces under; the generator's token ids reach the program through
** tr->tok_map, so the graphs are the same whatever the numbering.
**
** One input.  raspK_parse_input reads an input written out as tokens (what
** a counterexample or `rasp gen` prints) against the file's task: D is the
** degree of Q's s, M follows from the number of edges, and the text must
** then be exactly what the generator could have written (the layout of a
** reference sample, a path-star graph, a right answer), so l_t and t are
** determined and the verdict means what the verifier's would.
*/
#include "rverify.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rcausal.h"
#include "rmem.h"
#include "rstage.h"

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

/* How a context numbers its vocabulary: as the file declares, in a random
** order (--vocab-order shuffled), or one of the two fixed reorderings of
** the declared ids that the order analysis retraces under (rorder.h). */
enum { IDS_DECLARED, IDS_SHUFFLED, IDS_PROBE_ROTATE, IDS_PROBE_REVERSE };

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
    ok = rasp_load_stdlib(ctx, prog->stdlib, err) && rasp_exec_file(ctx, prog->path, err);
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
  memset(prog, 0, sizeof *prog);
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

static int trace_with(const rasp_program *prog, int D, int M, int V, int kind, uint64_t seed,
                      uint64_t index, int analyse, rasp_ptrace *tr, rasp_error *err);

int raspK_trace(const rasp_program *prog, int D, int M, int V, rasp_ptrace *tr, rasp_error *err) {
  return trace_with(prog, D, M, V, IDS_DECLARED, 0, 0, 1, tr, err);
}

int raspK_trace_ids(const rasp_program *prog, int D, int M, int V, int shuffled, uint64_t seed,
                    uint64_t index, rasp_ptrace *tr, rasp_error *err) {
  return trace_with(prog, D, M, V, shuffled ? IDS_SHUFFLED : IDS_DECLARED, seed, index, 1, tr,
                    err);
}

/* The largest nodes x n for which a trace asks the compiler's planner for
** its layers (rlayers.h); beyond it, the IR rule with the reason. */
#define RASPK_PLAN_MAX 2e6

/* analyse = 0: no layers and no staging (a probe for the order analysis) */
static int trace_with(const rasp_program *prog, int D, int M, int V, int kind, uint64_t seed,
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

/* Task token ids as the program numbers them (tr->tok_map); NULL when they
** are the same.  Ids outside the task's vocabulary are left alone. */
static int64_t *map_ids(const rasp_ptrace *tr, const int64_t *ids, size_t count) {
  if (!tr->tok_map) return NULL;
  int64_t *out = raspM_alloc(sizeof(int64_t) * (count ? count : 1));
  for (size_t i = 0; i < count; i++)
    out[i] = ids[i] >= 1 && ids[i] <= tr->ntask_ids ? tr->tok_map[ids[i]] : ids[i];
  return out;
}

int raspK_check_batch(rasp_ptrace *tr, rasp_eval *ev, int B, const int64_t *tokens_in,
                      const int64_t *lead_in, const int64_t *target_in, unsigned char *pass,
                      rasp_error *err) {
  int64_t *mtok = map_ids(tr, tokens_in, (size_t)B * (size_t)tr->n);
  int64_t *mlead = map_ids(tr, lead_in, (size_t)B), *mtarget = map_ids(tr, target_in, (size_t)B);
  const int64_t *tokens = mtok ? mtok : tokens_in, *lead = mlead ? mlead : lead_in,
                *target = mtarget ? mtarget : target_in;
  int ok = check_mapped(tr, ev, B, tokens, lead, target, pass, err);
  raspM_free(mtok);
  raspM_free(mlead);
  raspM_free(mtarget);
  return ok;
}

static int check_mapped(rasp_ptrace *tr, rasp_eval *ev, int B, const int64_t *tokens,
                        const int64_t *lead, const int64_t *target, unsigned char *pass,
                        rasp_error *err) {
  if (!raspE_run(ev, B, tokens, err)) return 0;
  rasp_elem *out = NULL;
  int ok = 1;
  for (int b = 0; b < B && ok; b++) {
    const rasp_elem *v = raspE_value(ev, tr->output, b);
    if (tr->staged) { /* no interpreter, no lock; -1: let the interpreter decide */
      int r = raspS_eval(tr->staged, v, tr->vocab_sym, tr->nvocab,
                         symbolic(tr, (rasp_elem){lead[b], 1}),
                         symbolic(tr, (rasp_elem){target[b], 1}));
      if (r >= 0) {
        pass[b] = (unsigned char)r;
        continue;
      }
    }
    if (!out) out = raspM_alloc(sizeof(rasp_elem) * (size_t)tr->n);
    for (int i = 0; i < tr->n; i++) out[i] = symbolic(tr, v[i]);
    rasp_arg args[3];
    memset(args, 0, sizeof args);
    args[0].elems = out;
    args[0].count = tr->n;
    args[1].elem = symbolic(tr, (rasp_elem){lead[b], 1});
    args[2].elem = symbolic(tr, (rasp_elem){target[b], 1});
    int truth = 0;
    ok = rasp_call_check(tr->ctx, tr->check, args, 3, &truth, err);
    pass[b] = (unsigned char)(ok && truth);
  }
  raspM_free(out);
  return ok;
}

/* scratch: a sample whose buffers are reused from call to call, or NULL */
static int sample_tokens(const rasp_ptrace *tr, uint64_t seed, uint64_t index, int64_t *tokens,
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
  return sample_tokens(tr, seed, index, tokens, lead, target, NULL, err);
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
    if (ok && !trace_with(prog, tr->opts.D, tr->opts.M, tr->opts.V, kinds[p], 0, 0, 0, &probe[p],
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

#define VERIFY_BATCH 64

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
  uint64_t probes, leaks;
  int64_t first_leak;
  int leak_q;
} vjob;

/* ---- the dynamic causality check
** Input `index` keeps its tokens 0..q and takes the rest from a donor, an
** independent graph of the same layout (so the changed input is still a
** well-formed one); q and the donor depend only on seed and index. */

/* 16 inputs of every fourth batch of 64: 64 of 1000 graphs, a few percent
** more time for the causal programs (README.md).  Probing 8 inputs of every
** batch cost them half as much again: a run's cost hardly shrinks with its
** batch. */
#define VERIFY_PROBES 16
#define PROBE_EVERY 4
#define PROBE_SALT 0xd1b54a32d192ed03ULL

static int probe_q(const rasp_ptrace *tr, uint64_t seed, uint64_t index) {
  rasp_rng rng;
  raspT_rng_seed(&rng, seed ^ PROBE_SALT, ~index); /* not the donor's stream */
  return tr->n > 1 ? (int)raspT_rng_below(&rng, (uint64_t)(tr->n - 1)) : 0;
}

static int sample_tokens(const rasp_ptrace *tr, uint64_t seed, uint64_t index, int64_t *tokens,
                         int64_t *lead, int64_t *target, rasp_sample *scratch, rasp_error *err);

/* Input index with its tokens after q from the donor. */
static int probe_input(const rasp_ptrace *tr, uint64_t seed, uint64_t index, const int64_t *tokens,
                       int64_t *out, int *q, rasp_sample *scratch, rasp_error *err) {
  int64_t lead, target;
  if (!sample_tokens(tr, seed ^ PROBE_SALT, index, out, &lead, &target, scratch, err)) return 0;
  *q = probe_q(tr, seed, index);
  memcpy(out, tokens, sizeof(int64_t) * (size_t)(*q + 1));
  return 1;
}

/* The first position <= q where two outputs differ, or -1. */
static int prefix_change(const rasp_elem *a, const rasp_elem *b, int q) {
  for (int p = 0; p <= q; p++)
    if (a[p].num != b[p].num || a[p].den != b[p].den) return p;
  return -1;
}

/* Probes the first P inputs of a batch that ev has just run (indices first,
** first + 1, ...).  Changed inputs that the program cannot evaluate (it
** raises an error on them) are not counted as probes. */
static void probe_batch(vjob *job, rasp_eval *ev, uint64_t first, int P, const int64_t *tokens,
                        rasp_sample *scratch) {
  rasp_ptrace *tr = job->tr;
  int n = tr->n;
  rasp_elem *orig = raspM_alloc(sizeof(rasp_elem) * (size_t)n * (size_t)P);
  int64_t *changed = raspM_alloc(sizeof(int64_t) * (size_t)n * (size_t)P);
  int q[VERIFY_PROBES];
  rasp_error err = {0};
  int ok = 1;
  for (int b = 0; b < P && ok; b++) {
    memcpy(orig + (size_t)b * n, raspE_value(ev, tr->output, b), sizeof(rasp_elem) * (size_t)n);
    ok = probe_input(tr, job->seed, first + (uint64_t)b, tokens + (size_t)b * n,
                     changed + (size_t)b * n, &q[b], scratch, &err);
  }
  /* the batch ran on the program's own ids (raspK_check_batch maps them) */
  int64_t *mapped = ok ? map_ids(tr, changed, (size_t)n * (size_t)P) : NULL;
  if (ok && raspE_run(ev, P, mapped ? mapped : changed, &err)) {
    job->probes += (uint64_t)P;
    for (int b = 0; b < P; b++)
      if (prefix_change(orig + (size_t)b * n, raspE_value(ev, tr->output, b), q[b]) >= 0) {
        job->leaks++;
        if (job->first_leak < 0) {
          job->first_leak = (int64_t)(first + (uint64_t)b);
          job->leak_q = q[b];
        }
      }
  }
  raspM_free(mapped);
  raspM_free(orig);
  raspM_free(changed);
}

/* Starts n workers fn(jobs + j * size).  A worker that cannot be started
** (no memory for its stack, a thread limit) is run on this thread instead,
** after the others have started: fewer threads, the same result.  (An
** unchecked pthread_create left a wait for its finish hanging, or joined a
** thread that never was.)  Returns the flags (free with raspM_free): 1 for a
** worker that ran here and must not be joined. */
static int *start_workers(void *(*fn)(void *), void *jobs, size_t size, int n, pthread_t *th,
                          pthread_attr_t *attr) {
  int *ran_here = raspM_alloc(sizeof(int) * (size_t)n);
  for (int j = 0; j < n; j++)
    ran_here[j] = pthread_create(&th[j], attr, fn, (char *)jobs + (size_t)j * size) != 0;
  for (int j = 0; j < n; j++)
    if (ran_here[j]) fn((char *)jobs + (size_t)j * size);
  return ran_here;
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
  job->first_leak = -1;
  /* batches end at multiples of VERIFY_BATCH, so that which inputs are
     probed depends on their index alone, not on how the run was split
     among threads or MPI ranks */
  for (uint64_t i = job->begin, next; i < job->end; i = next) {
    next = i - i % VERIFY_BATCH + VERIFY_BATCH;
    if (next > job->end) next = job->end;
    int B = (int)(next - i);
    for (int b = 0; b < B; b++)
      if (!sample_tokens(tr, job->seed, i + (uint64_t)b, tokens + (size_t)b * (size_t)n,
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
      probe_batch(job, ev, i, (int)((p0 + VERIFY_PROBES < next ? p0 + VERIFY_PROBES : next) - i),
                  tokens, &scratch);
    __atomic_store_n(&job->done, job->done + (uint64_t)B, __ATOMIC_RELAXED);
  }
done:
  raspT_sample_free(&scratch);
  raspM_free(tokens);
  raspE_free(ev);
  __atomic_store_n(&job->finished, 1, __ATOMIC_RELEASE);
  pthread_mutex_lock(&job->all->lock);
  job->all->finished++;
  pthread_cond_signal(&job->all->cond);
  pthread_mutex_unlock(&job->all->lock);
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
  pthread_t *th = raspM_alloc(sizeof(pthread_t) * (size_t)jobs);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64u << 20); /* callbacks recurse in the interpreter */
  vdone all;
  pthread_mutex_init(&all.lock, NULL);
  pthread_cond_init(&all.cond, NULL);
  all.finished = 0;
  for (int j = 0; j < jobs; j++) {
    job[j].all = &all;
    job[j].tr = tr;
    job[j].seed = seed;
    job[j].begin = first + graphs * (uint64_t)j / (uint64_t)jobs;
    job[j].end = first + graphs * (uint64_t)(j + 1) / (uint64_t)jobs;
  }
  int *inline_job = start_workers(verify_worker, job, sizeof job[0], jobs, th, &attr);
  /* the workers count what they have done; this thread reports it every
     20 ms until the last one signals that it has finished (under MPI, rank
     0 answers the other ranks' requests from the callback: they wait no
     longer than that) */
  pthread_mutex_lock(&all.lock);
  while (all.finished < jobs) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 20 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&all.cond, &all.lock, &until);
    if (all.finished < jobs && progress) {
      uint64_t done = 0;
      for (int j = 0; j < jobs; j++) done += __atomic_load_n(&job[j].done, __ATOMIC_RELAXED);
      pthread_mutex_unlock(&all.lock);
      progress(user, done, graphs);
      pthread_mutex_lock(&all.lock);
    }
  }
  pthread_mutex_unlock(&all.lock);
  int ok = 1;
  for (int j = 0; j < jobs; j++) {
    if (!inline_job[j]) pthread_join(th[j], NULL);
    res->passed += job[j].passed;
    res->total += job[j].end - job[j].begin;
    if (job[j].first_fail >= 0 && (res->first_fail < 0 || job[j].first_fail < res->first_fail))
      res->first_fail = job[j].first_fail;
    res->probes += job[j].probes;
    res->leaks += job[j].leaks;
    if (job[j].first_leak >= 0 && (res->first_leak < 0 || job[j].first_leak < res->first_leak)) {
      res->first_leak = job[j].first_leak;
      res->leak_q = job[j].leak_q;
    }
    if (job[j].failed_error && ok) {
      res->error = job[j].err;
      ok = 0;
    }
  }
  pthread_attr_destroy(&attr);
  pthread_cond_destroy(&all.cond);
  pthread_mutex_destroy(&all.lock);
  raspM_free(inline_job);
  raspM_free(job);
  raspM_free(th);
  return ok;
}

/* ------------------------------------------------------- shuffled ids */

typedef struct sjob {
  const rasp_program *prog;
  rasp_ptrace *tr;
  uint64_t begin, end, seed;
  uint64_t passed, changed;
  int64_t first_fail;
  rasp_error err;
  int failed_error;
} sjob;

/* Each graph gets its own vocabulary order, so its own trace: the cost is
** one trace per graph, which is why this is a separate mode. */
static void *shuffled_worker(void *arg) {
  sjob *job = arg;
  rasp_ptrace *base = job->tr;
  int n = base->n;
  int64_t *tokens = raspM_alloc(sizeof(int64_t) * (size_t)n);
  rasp_eval *fixed = raspE_new(rasp_ctx_ir(base->ctx)); /* the same graph, ids as declared */
  raspE_set_keep_intermediates(fixed, 0);
  job->first_fail = -1;
  for (uint64_t i = job->begin; i < job->end && !job->failed_error; i++) {
    rasp_ptrace tr;
    int64_t lead, target;
    unsigned char pass = 0;
    if (!trace_with(job->prog, base->opts.D, base->opts.M, base->opts.V, IDS_SHUFFLED, job->seed,
                    i, 0, &tr, &job->err)) {
      job->failed_error = 1;
      break;
    }
    rasp_eval *ev = raspE_new(rasp_ctx_ir(tr.ctx));
    raspE_set_keep_intermediates(ev, 0);
    if (!sample_tokens(&tr, job->seed, i, tokens, &lead, &target, NULL, &job->err) ||
        !raspK_check_batch(&tr, ev, 1, tokens, &lead, &target, &pass, &job->err)) {
      job->failed_error = 1;
      if (job->first_fail < 0) job->first_fail = (int64_t)i;
    } else {
      unsigned char was = 0;
      if (!raspK_check_batch(base, fixed, 1, tokens, &lead, &target, &was, &job->err))
        job->failed_error = 1;
      if (pass != was) job->changed++;
      if (pass) job->passed++;
      else if (job->first_fail < 0) job->first_fail = (int64_t)i;
    }
    raspE_free(ev);
    raspK_trace_free(&tr);
  }
  raspE_free(fixed);
  raspM_free(tokens);
  return NULL;
}

int raspK_verify_shuffled(const rasp_program *prog, rasp_ptrace *tr, uint64_t graphs,
                          uint64_t seed, int jobs, rasp_vresult *res) {
  memset(res, 0, sizeof *res);
  res->first_fail = -1;
  if (jobs < 1) jobs = 1;
  if ((uint64_t)jobs > graphs) jobs = graphs ? (int)graphs : 1;
  sjob *job = raspM_alloc(sizeof(sjob) * (size_t)jobs);
  pthread_t *th = raspM_alloc(sizeof(pthread_t) * (size_t)jobs);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64u << 20); /* the interpreter recurses */
  for (int j = 0; j < jobs; j++) {
    memset(&job[j], 0, sizeof job[j]);
    job[j].prog = prog;
    job[j].tr = tr;
    job[j].seed = seed;
    job[j].begin = graphs * (uint64_t)j / (uint64_t)jobs;
    job[j].end = graphs * (uint64_t)(j + 1) / (uint64_t)jobs;
  }
  int *ran_here = start_workers(shuffled_worker, job, sizeof job[0], jobs, th, &attr);
  int ok = 1;
  for (int j = 0; j < jobs; j++) {
    if (!ran_here[j]) pthread_join(th[j], NULL);
    res->passed += job[j].passed;
    res->changed += job[j].changed;
    res->total += job[j].end - job[j].begin;
    if (job[j].first_fail >= 0 && (res->first_fail < 0 || job[j].first_fail < res->first_fail))
      res->first_fail = job[j].first_fail;
    if (job[j].failed_error && ok) {
      res->error = job[j].err;
      ok = 0;
    }
  }
  raspM_free(ran_here);
  pthread_attr_destroy(&attr);
  raspM_free(job);
  raspM_free(th);
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

/* -------------------------------------------------------- counterexamples */

static int fails_on(rasp_ptrace *tr, rasp_eval *ev, const int64_t *tokens, int64_t lead,
                    int64_t target) {
  unsigned char pass = 0;
  rasp_error err = {0};
  if (!raspK_check_batch(tr, ev, 1, tokens, &lead, &target, &pass, &err)) return 1;
  return !pass;
}

static void print_tokens(const rasp_ptrace *tr, const int64_t *tokens, FILE *out) {
  char buf[64];
  for (int i = 0; i < tr->n; i++) {
    raspT_token_text(&tr->opts, (int)tokens[i], buf, sizeof buf);
    fprintf(out, "%s%s", i ? " " : "", buf);
  }
  fputc('\n', out);
}

/* A node's values: token ids (raspI_is_tokens, the rule `rasp run --symbols`
** follows) as their symbols, other numbers as numbers (a position is not a
** symbol, whatever id it happens to equal).  The program's output is shown
** as check() receives it (every id as its symbol, symbolic() above): that
** is what is judged, and the task's contract makes it a token sequence. */
static void print_row(rasp_ptrace *tr, rasp_eval *ev, int node, int b, FILE *out) {
  const rasp_elem *v = raspE_value(ev, node, b);
  int symbolic_ids = node == tr->output || raspI_is_tokens(rasp_ctx_ir(tr->ctx), node);
  char buf[128];
  for (int i = 0; i < tr->n; i++) {
    if (symbolic_ids) rasp_format_symbolic(tr->ctx, v[i], buf, sizeof buf);
    else raspI_elem_format(rasp_ctx_ir(tr->ctx), v[i], buf, sizeof buf);
    fprintf(out, "%s%s", i ? " " : "", buf);
  }
  fputc('\n', out);
}

void raspK_print_leak(rasp_ptrace *tr, uint64_t seed, const rasp_vresult *res, FILE *out) {
  if (res->first_leak < 0) return;
  int n = tr->n;
  uint64_t index = (uint64_t)res->first_leak;
  int64_t *tokens = raspM_alloc(sizeof(int64_t) * (size_t)n * 2), lead, target;
  rasp_error err = {0};
  rasp_eval *ev = raspE_new(rasp_ctx_ir(tr->ctx));
  int q = 0;
  int64_t *mapped = NULL; /* the program's own ids, when they differ */
  if (!sample_tokens(tr, seed, index, tokens, &lead, &target, NULL, &err) ||
      !probe_input(tr, seed, index, tokens, tokens + n, &q, NULL, &err) ||
      !raspE_run(ev, 2, (mapped = map_ids(tr, tokens, 2 * (size_t)n)) ? mapped : tokens, &err)) {
    raspR_print(&err, out);
  } else {
    /* the batch's two rows: the input and the changed one */
    int p = prefix_change(raspE_value(ev, tr->output, 0), raspE_value(ev, tr->output, 1), q);
    fprintf(out, "  causal leak (graph %llu of seed %llu, n=%d): output position %d changed when "
                 "only the tokens after position %d did\n    input:    ",
            (unsigned long long)index, (unsigned long long)seed, n, p, q);
    print_tokens(tr, tokens, out);
    fprintf(out, "    changed:  ");
    print_tokens(tr, tokens + n, out);
    fprintf(out, "    output:   ");
    print_row(tr, ev, tr->output, 0, out);
    fprintf(out, "    now:      ");
    print_row(tr, ev, tr->output, 1, out);
  }
  raspE_free(ev);
  raspM_free(mapped);
  raspM_free(tokens);
}

/* Sorts blocks (edges, or whole arms) towards canonical order by adjacent
** swaps that keep the input failing. */
static void shrink_order(rasp_ptrace *tr, rasp_eval *ev, int64_t *tokens, int64_t lead,
                         int64_t target, int g_start) {
  const rasp_task_opts *o = &tr->opts;
  int w = 2 + o->markers;
  int E = o->D * (o->M - 1);
  int block = o->order == RASP_ORDER_ARM ? (o->M - 1) * w : w;
  int nblocks = o->order == RASP_ORDER_ARM ? o->D : E;
  int64_t *tmp = raspM_alloc(sizeof(int64_t) * (size_t)block);
  /* canonical order: blocks sorted by the ids of their first two tokens */
  for (int pass = 0; pass < nblocks; pass++) {
    int changed = 0;
    for (int k = 0; k + 1 < nblocks; k++) {
      int64_t *a = tokens + g_start + k * block, *b = a + block;
      if (a[0] < b[0] || (a[0] == b[0] && a[1] <= b[1])) continue;
      memcpy(tmp, a, sizeof(int64_t) * (size_t)block);
      memcpy(a, b, sizeof(int64_t) * (size_t)block);
      memcpy(b, tmp, sizeof(int64_t) * (size_t)block);
      if (fails_on(tr, ev, tokens, lead, target)) changed = 1;
      else { /* undo */
        memcpy(tmp, a, sizeof(int64_t) * (size_t)block);
        memcpy(a, b, sizeof(int64_t) * (size_t)block);
        memcpy(b, tmp, sizeof(int64_t) * (size_t)block);
      }
    }
    if (!changed) break;
  }
  raspM_free(tmp);
}

/* Prints one input of tr: the tokens, the output (or the error), what
** check() was asked for, the verdict when `verdict` is set, and every
** labelled node the output depends on.  1: check() passed, 0: it failed,
** -1: evaluation or check() raised an error (err). */
static int show_input(const rasp_program *prog, rasp_ptrace *tr, rasp_eval *ev,
                      const int64_t *tokens, int64_t lead, int64_t target, const char *title,
                      int verdict, FILE *out, rasp_error *err) {
  char lbuf[64], tbuf[64];
  raspT_token_text(&tr->opts, (int)lead, lbuf, sizeof lbuf);
  raspT_token_text(&tr->opts, (int)target, tbuf, sizeof tbuf);
  fprintf(out, "  %s\n    input:    ", title);
  print_tokens(tr, tokens, out);
  unsigned char pass = 0;
  err->set = 0;
  int ran = raspK_check_batch(tr, ev, 1, tokens, &lead, &target, &pass, err);
  if (!ran) {
    fprintf(out, "    error:    ");
    raspR_print(err, out);
  } else {
    fprintf(out, "    output:   ");
    print_row(tr, ev, tr->output, 0, out);
  }
  fprintf(out, "    expected: leading node l_t = %s for target t = %s (judged by %s's check)\n",
          lbuf, tbuf, prog->name);
  if (verdict)
    fprintf(out, "    verdict:  %s\n", !ran ? "ERROR (above)" : pass ? "ok (check() passed)"
                                                                 : "FAIL (check() failed)");
  /* intermediate values: every labelled node the output depends on (none
  ** when evaluation stopped with an error: no values were kept) */
  rasp_ir *ir = rasp_ctx_ir(tr->ctx);
  unsigned char *live = raspM_alloc((size_t)ir->nnodes);
  raspI_live(ir, &tr->output, 1, live);
  fprintf(out, "    intermediate values (source line, variable, sublayer):\n");
  int shown = 0;
  for (int i = 0; i < ir->nnodes && shown < 60; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    if (!live[i] || !nd->label || nd->type == RASP_T_SEL || !raspE_value(ev, i, 0)) continue;
    if (nd->op == RASP_OP_INPUT || nd->op == RASP_OP_INDICES || nd->op == RASP_OP_FULL) continue;
    fprintf(out, "      %4d %-18s %2d: ", nd->pos.line, nd->label, tr->layers.sublayer[i]);
    print_row(tr, ev, i, 0, out);
    shown++;
  }
  raspM_free(live);
  return ran ? pass : -1;
}

void raspK_counterexample(const rasp_program *prog, int D, int M, int V, uint64_t seed,
                          uint64_t index, FILE *out) {
  rasp_error err = {0};
  rasp_ptrace tr;
  int64_t *tokens = NULL, lead = 0, target = 0;
  int found = 0;
  /* smallest (D, M) first, then the one given */
  for (int m = prog->min_M; m <= M && !found; m++)
    for (int dd = prog->min_D > 2 ? prog->min_D : 2; dd <= D && !found; dd++) {
      if (m == M && dd == D) continue;
      if (!raspK_trace(prog, dd, m, V, &tr, &err)) continue;
      rasp_eval *ev = raspE_new(rasp_ctx_ir(tr.ctx));
      tokens = raspM_realloc(tokens, sizeof(int64_t) * (size_t)tr.n);
      for (uint64_t i = 0; i < 200 && !found; i++)
        if (raspK_sample_tokens(&tr, seed, i, tokens, &lead, &target, &err) &&
            fails_on(&tr, ev, tokens, lead, target))
          found = 1;
      if (found) {
        D = dd;
        M = m;
      }
      raspE_free(ev);
      raspK_trace_free(&tr);
    }
  if (!raspK_trace(prog, D, M, V, &tr, &err)) {
    raspR_print(&err, out);
    raspM_free(tokens);
    return;
  }
  tokens = raspM_realloc(tokens, sizeof(int64_t) * (size_t)tr.n);
  rasp_eval *ev = raspE_new(rasp_ctx_ir(tr.ctx));
  if (!found) raspK_sample_tokens(&tr, seed, index, tokens, &lead, &target, &err);
  rasp_sample s;
  memset(&s, 0, sizeof s);
  raspT_sample(&tr.opts, 0, 0, &s, &err);
  int g_start = s.g_start;
  raspT_sample_free(&s);
  shrink_order(&tr, ev, tokens, lead, target, g_start);
  char title[128];
  snprintf(title, sizeof title, "counterexample (D=%d, M=%d, n=%d):", D, M, tr.n);
  show_input(prog, &tr, ev, tokens, lead, target, title, 0, out, &err);
  raspE_free(ev);
  raspK_trace_free(&tr);
  raspM_free(tokens);
}

/* Input `want` of the exhaustive enumeration: its tokens, l_t and t as
** exhaustive_visit takes them. */
typedef struct xfind {
  const rasp_ptrace *tr;
  uint64_t want, seen;
  int64_t *tokens, lead, target;
} xfind;

static int find_visit(const rasp_sample *s, void *user) {
  xfind *f = user;
  if (f->seen++ != f->want) return 0;
  for (int i = 0; i < s->ntokens; i++) f->tokens[i] = s->tokens[i];
  f->lead = s->lead;
  f->target = f->tr->opts.st_names ? f->tr->opts.V + RASP_SP_T : s->t;
  return 1;
}

void raspK_counterexample_exhaustive(const rasp_program *prog, rasp_ptrace *tr, uint64_t index,
                                     FILE *out) {
  rasp_error err = {0};
  xfind f = {tr, index, 0, raspM_alloc(sizeof(int64_t) * (size_t)tr->n), 0, 0};
  if (raspT_enumerate(&tr->opts, NULL, UINT64_MAX, find_visit, &f, NULL, &err) != 1) {
    if (!err.set) raspR_setnopos(&err, "exhaustive input %llu not found", (unsigned long long)index);
    raspR_print(&err, out);
    raspM_free(f.tokens);
    return;
  }
  rasp_eval *ev = raspE_new(rasp_ctx_ir(tr->ctx));
  rasp_sample s;
  memset(&s, 0, sizeof s);
  raspT_sample(&tr->opts, 0, 0, &s, &err);
  int g_start = s.g_start;
  raspT_sample_free(&s);
  shrink_order(tr, ev, f.tokens, f.lead, f.target, g_start);
  char title[160];
  snprintf(title, sizeof title, "counterexample (D=%d, M=%d, n=%d; exhaustive input %llu, "
                                "its order sorted while it still fails):",
           tr->opts.D, tr->opts.M, tr->n, (unsigned long long)index);
  show_input(prog, tr, ev, f.tokens, f.lead, f.target, title, 0, out, &err);
  raspE_free(ev);
  raspM_free(f.tokens);
}

/* -------------------------------------------------------------- one input */

/* Nodes are keyed by their token ids (a number, or "s"/"t" under
** st_names); child[] is looked up by binary search on edges sorted by u. */
typedef struct iedge { int64_t u, v; int k; } iedge;

static int edge_by_u(const void *a, const void *b) {
  const iedge *x = a, *y = b;
  return x->u < y->u ? -1 : x->u > y->u;
}

static int edge_by_v(const void *a, const void *b) {
  const iedge *x = a, *y = b;
  return x->v < y->v ? -1 : x->v > y->v;
}

static const iedge *child_of(const iedge *byu, int E, int64_t u) {
  iedge key = {u, 0, 0};
  return bsearch(&key, byu, (size_t)E, sizeof *byu, edge_by_u);
}

static int is_node(const rasp_task_opts *o, int64_t id) {
  return (id >= 1 && id <= o->V) ||
         (o->st_names && (id == o->V + RASP_SP_S || id == o->V + RASP_SP_T));
}

/* text -> task token ids; counts the "|" tokens */
static int read_tokens(const rasp_task_opts *o, const char *text, rasp_input *in, int *bars,
                       rasp_error *err) {
  int cap = 0;
  *bars = 0;
  for (const char *p = text;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (!*p) break;
    const char *s = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') p++;
    char tok[32];
    size_t len = (size_t)(p - s);
    snprintf(tok, sizeof tok, "%.*s", (int)(len < sizeof tok ? len : sizeof tok - 1), s);
    int id = len < sizeof tok - 1 ? raspT_token_id(o, tok) : -1;
    if (id <= 0 || (!o->st_names && id >= o->V + RASP_SP_S)) {
      const char *why = "not a token of the task (node symbols 1..V, | / = BOS EOS, and s t "
                        "with task['st_names'])";
      if (len < 12 && tok[0] >= '1' && tok[0] <= '9' && strspn(tok, "0123456789") == len)
        why = "a node symbol above --V";
      else if (id > 0)
        why = "the program's task writes s and t as numbers (task['st_names'] is off)";
      raspR_setnoposc(err, RASP_E_USAGE, "input token %d '%s'%s: %s (V = %d)", in->n, tok,
                     len < sizeof tok - 1 ? "" : "...", why, o->V);
      return -1;
    }
    RASP_GROW(in->tokens, cap, in->n + 1);
    in->tokens[in->n++] = id;
    if (id == o->V + RASP_SP_BAR) ++*bars;
  }
  if (in->n == 0) {
    raspR_setnoposc(err, RASP_E_USAGE, "the input is empty");
    return -1;
  }
  return 0;
}

static int bad_at(rasp_error *err, const rasp_task_opts *o, const rasp_input *in, int pos,
                  const char *what) {
  char buf[64];
  if (pos >= 0 && pos < in->n) {
    raspT_token_text(o, (int)in->tokens[pos], buf, sizeof buf);
    raspR_setnoposc(err, RASP_E_USAGE, "input token %d '%s': %s", pos, buf, what);
  } else
    raspR_setnoposc(err, RASP_E_USAGE, "the input (%d tokens) ends early: %s", in->n, what);
  return -1;
}

int raspK_parse_input(const rasp_program *prog, int V, const char *text, rasp_input *in,
                      rasp_error *err) {
  memset(in, 0, sizeof *in);
  rasp_task_opts o = prog->base;
  o.V = V;
  o.structured = 0;
  int bars, w = 2 + o.markers;
  iedge *edges = NULL;
  rasp_sample ref;
  memset(&ref, 0, sizeof ref);
  if (read_tokens(&o, text, in, &bars, err)) goto fail;
  if (bars == 0 || bars % o.markers) {
    raspR_setnoposc(err, RASP_E_USAGE, "the input has %d '|' tokens; a graph of E edges has %d x E (task['markers'] = %d)",
                   bars, o.markers, o.markers);
    goto fail;
  }
  /* D is the degree of Q's s; everything else follows from D and E */
  int E = bars / o.markers, bos = o.bos ? 1 : 0;
  int q_start = o.q == RASP_Q_START ? bos : bos + E * w, g_start = o.q == RASP_Q_START ? bos + 4 : bos;
  if (q_start + 3 >= in->n || g_start + E * w > in->n) {
    bad_at(err, &o, in, in->n, "the task's layout needs more tokens");
    goto fail;
  }
  int64_t s = in->tokens[q_start + 1], t = in->tokens[q_start + 2];
  int D = 0;
  for (int k = 0; k < E; k++) D += in->tokens[g_start + k * w] == s;
  if (D == 0 || E % D) {
    char sb[64];
    raspT_token_text(&o, (int)s, sb, sizeof sb);
    raspR_setnoposc(err, RASP_E_USAGE, "the start node '%s' (token %d, in Q) has %d edges out of %d: not a "
                        "path-star graph", sb, q_start + 1, D, E);
    goto fail;
  }
  o.D = D;
  o.M = E / D + 1;
  if (!raspT_opts_check(&o, err)) goto fail;
  int n = raspT_length(&o);
  if (n != in->n) {
    raspR_setnoposc(err, RASP_E_USAGE, "the input has %d tokens; an input of this task with D=%d, M=%d "
                        "(from the graph) has %d", in->n, o.D, o.M, n);
    goto fail;
  }
  /* the layout: every special where a sample of the task has it, a node
  ** wherever a sample has a node */
  if (!raspT_sample(&o, 0, 0, &ref, err)) goto fail;
  for (int i = 0; i < n; i++) {
    int node = is_node(&o, ref.tokens[i]);
    if (node && !is_node(&o, in->tokens[i])) {
      bad_at(err, &o, in, i, "the task has a node here");
      goto fail;
    }
    if (!node && in->tokens[i] != ref.tokens[i]) {
      char buf[64], what[96];
      raspT_token_text(&o, ref.tokens[i], buf, sizeof buf);
      snprintf(what, sizeof what, "the task has '%s' here", buf);
      bad_at(err, &o, in, i, what);
      goto fail;
    }
  }
  if (o.st_names && (s != o.V + RASP_SP_S || t != o.V + RASP_SP_T)) {
    bad_at(err, &o, in, s != o.V + RASP_SP_S ? q_start + 1 : q_start + 2,
           "with task['st_names'] Q is '/ s t ='");
    goto fail;
  }
  /* the graph: every node but s entered by exactly one edge, left by at
  ** most one, D arms of M-1 edges from s, t the end of one of them */
  edges = raspM_alloc(sizeof(iedge) * (size_t)E);
  for (int k = 0; k < E; k++) {
    edges[k] = (iedge){in->tokens[g_start + k * w], in->tokens[g_start + k * w + 1], k};
    if (edges[k].v == s || edges[k].u == edges[k].v) {
      bad_at(err, &o, in, g_start + k * w + 1, "an edge into the start node, or a loop");
      goto fail;
    }
  }
  qsort(edges, (size_t)E, sizeof *edges, edge_by_v);
  for (int k = 1; k < E; k++)
    if (edges[k].v == edges[k - 1].v) {
      int later = edges[k].k > edges[k - 1].k ? edges[k].k : edges[k - 1].k;
      bad_at(err, &o, in, g_start + later * w + 1, "a second edge into this node");
      goto fail;
    }
  qsort(edges, (size_t)E, sizeof *edges, edge_by_u);
  for (int k = 1; k < E; k++)
    if (edges[k].u == edges[k - 1].u && edges[k].u != s) {
      int later = edges[k].k > edges[k - 1].k ? edges[k].k : edges[k - 1].k;
      bad_at(err, &o, in, g_start + later * w, "a second edge out of this node (only s branches)");
      goto fail;
    }
  /* walk the arms from s: each must have M-1 edges; they then cover all E
  ** edges, so no edge lies off the star (a cycle, or a second component) */
  int64_t lead = 0;
  int found_t = 0, first = 0;
  while (first < E && edges[first].u != s) first++;
  for (int a = 0; a < D; a++) {
    int64_t l = edges[first + a].v, x = l;
    int len = 1; /* edges so far; stops one past M-1 */
    const iedge *c;
    while (len < o.M && (c = child_of(edges, E, x)) != NULL) {
      x = c->v;
      len++;
    }
    if (len != o.M - 1) {
      char lb[64], what[256];
      raspT_token_text(&o, (int)l, lb, sizeof lb);
      int shown = len == o.M ? o.M - 1 : len;
      snprintf(what, sizeof what, "the arm that starts at '%s' has %s%d edge%s, not M-1 = %d "
               "(M = E/D + 1 with D = %d)", lb, len == o.M ? "more than " : "", shown,
               shown == 1 ? "" : "s", o.M - 1, D);
      bad_at(err, &o, in, g_start + edges[first + a].k * w + 1, what);
      goto fail;
    }
    if (x == t) {
      found_t = 1;
      lead = l;
    }
  }
  if (!found_t) {
    bad_at(err, &o, in, q_start + 2, "the target is not the last node of an arm");
    goto fail;
  }
  /* arm order: the arms one after another, each from s outward */
  if (o.order == RASP_ORDER_ARM)
    for (int k = 0; k < E; k++) {
      int64_t u = in->tokens[g_start + k * w];
      int64_t want = k % (o.M - 1) == 0 ? s : in->tokens[g_start + (k - 1) * w + 1];
      if (u != want) {
        bad_at(err, &o, in, g_start + k * w, "task['order'] = 'arm' writes each arm's edges "
                                             "in a row, from s outward");
        goto fail;
      }
    }
  /* a written answer must be the right one (R_t, reversed, or l_t) */
  if (o.answer != RASP_ANS_NONE) {
    int64_t *path = raspM_alloc(sizeof(int64_t) * (size_t)o.M);
    path[0] = s;
    path[1] = lead; /* s branches; past it, every node has one child */
    for (int j = 2; j < o.M; j++) path[j] = child_of(edges, E, path[j - 1])->v;
    int len = o.answer == RASP_ANS_LEAD ? 1 : o.M;
    for (int j = 0; j < len; j++) {
      int64_t want = o.answer == RASP_ANS_FORWARD ? path[j]
                   : o.answer == RASP_ANS_REVERSE ? path[o.M - 1 - j] : lead;
      if (in->tokens[ref.ans_start + j] != want) {
        char wb[64], what[96];
        raspT_token_text(&o, (int)want, wb, sizeof wb);
        snprintf(what, sizeof what, "the answer has '%s' here", wb);
        raspM_free(path);
        bad_at(err, &o, in, ref.ans_start + j, what);
        goto fail;
      }
    }
    raspM_free(path);
  }
  in->D = o.D;
  in->M = o.M;
  in->lead = lead;
  in->target = t;
  raspM_free(edges);
  raspT_sample_free(&ref);
  return 1;
fail:
  raspM_free(edges);
  raspT_sample_free(&ref);
  raspK_input_free(in);
  return 0;
}

void raspK_input_free(rasp_input *in) {
  raspM_free(in->tokens);
  memset(in, 0, sizeof *in);
}

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
  if (!sample_tokens(&tr, seed, index, in->tokens, &in->lead, &in->target, NULL, err)) {
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
  int r = show_input(prog, &tr, ev, in->tokens, in->lead, in->target, title, 1, out, err);
  raspE_free(ev);
  raspK_trace_free(&tr);
  return r;
}
