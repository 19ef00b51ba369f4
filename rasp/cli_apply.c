/*
** cli_apply.c -- `rasp apply STEM --input TEXT`: runs a compiled model.
**
** The check a user makes of a model without writing code: the input's
** symbols are encoded with the model's own vocabulary (STEM.json's
** layout.vocab), BOS is put in front, rmodel's reference forward pass
** (raspN_forward, float32) runs, and the argmax of the logits at model
** position i+1 is decoded through layout.readout.values into the output at
** input position i.  --logits adds the logits of the input positions, one
** row each, at full float precision (%.9g round-trips a float), which is
** what tests/apply_parity.sh compares the Python module with.
**
** A path-star model (--program FILE, the program it was compiled from)
** takes its input as `rasp run` takes that program's: one input of the
** task, checked by the verifier's parser, or sample 0 of --seed for --D
** --M --V, the graph `rasp verify` draws first; the model's own vocabulary
** then numbers its symbols.
**
** Its model's STEM.json records the task it was compiled for (layout.task,
** rmodel.h); a program whose task differs in any setting (markers,
** st_names, D...) is refused with each difference named, before its
** tokens could be read in a layout the model does not compute on.  Models
** compiled before layout.task was recorded are not checked.
**
** A model whose layout.proof says it is not proven (`rasp compile
** --unproven`) runs with a warning on stderr.
**
** A symbol outside the vocabulary is refused by name; so is one the model
** has no input dimension for (a symbol of the program's vocabulary that
** was not an input id when it was compiled, such as the path-star
** programs' internal ones): the model would silently compute garbage.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rmem.h"
#include "rmodel.h"
#include "rmodel_task.h"
#include "rverify.h"

/* The symbol an output value stands for, as `rasp run --symbols` prints
** it: an integer that is a token id with a symbol; else the value. */
static const char *as_symbol(const char *val, char **vocab, int nvocab) {
  char *end;
  long id = strtol(val, &end, 10);
  if (*val && !*end && id > 0 && id < nvocab && *vocab[id]) return vocab[id];
  return val;
}

/* s as a JSON string, quoted. */
static void json_str(const char *s, FILE *out) {
  fputc('"', out);
  raspC_json_fputs(s, out);
  fputc('"', out);
}

static void print_float(float x, int json, FILE *out) {
  if (json && !isfinite(x))
    fputs("null", out); /* JSON has no inf or nan */
  else
    fprintf(out, "%.9g", (double)x);
}

/* --program FILE's task: the program (kept to judge the model's output),
** the settings with the input's D, M and V, and the input's l_t and t. */
typedef struct ptask {
  rasp_program prog;
  rasp_task_opts opts;
  int64_t lead, target;
} ptask;

/* The task input of --program FILE (a path-star program) as its tokens'
** text (malloc'd): --input TEXT checked as one input of the task, or
** sample 0 of seed for D, M, V; *task gets the program and the input's
** task (raspK_program_free(&task->prog) after a text).  NULL after a
** message. */
static char *task_text(const char *file, const char *stdlib, const rasp_access *access,
                       const char *input, long D, long M, long V, long seed, ptask *task) {
  rasp_program prog;
  rasp_error err = {0};
  if (!raspK_load_with(file, stdlib, access, (int)D, (int)M, (int)V, &prog, &err)) {
    raspR_print(&err, stderr);
    return NULL;
  }
  rasp_input in;
  char *text = NULL;
  if (input ? raspC_task_input("apply", &prog, (int)V, input, &in) != 0
            : !raspK_sample_input(&prog, (int)D, (int)M, (int)V, (uint64_t)seed, 0, &in, &err)) {
    if (!input) fprintf(stderr, "rasp apply: %s\n", err.msg);
    raspK_program_free(&prog);
    return NULL;
  }
  rasp_task_opts o = prog.base;
  o.D = in.D;
  o.M = in.M;
  o.V = (int)V;
  task->opts = o;
  task->lead = in.lead;
  task->target = in.target;
  size_t cap = (size_t)in.n * 24 + 1, len = 0;
  text = raspM_alloc(cap);
  text[0] = '\0';
  for (int i = 0; i < in.n; i++) {
    char buf[24];
    raspT_token_text(&o, (int)in.tokens[i], buf, sizeof buf);
    len += (size_t)snprintf(text + len, cap - len, "%s%s", i ? " " : "", buf);
  }
  raspK_input_free(&in);
  task->prog = prog;
  return text;
}

/* The model's output judged by the program's check() (as `rasp run`
** judges the interpreter's): "ok (check() passed)", "FAIL (check()
** failed)", or why it was not judged, into buf. */
static const char *task_verdict(ptask *t, char **vals, const int *best, int n, char *buf,
                                size_t size) {
  rasp_ptrace tr;
  rasp_error err = {0};
  if (!raspK_trace(&t->prog, t->opts.D, t->opts.M, t->opts.V, &tr, &err)) {
    snprintf(buf, size, "not judged (%s)", err.msg);
    return buf;
  }
  rasp_elem *out = raspM_alloc(sizeof(rasp_elem) * (size_t)(n ? n : 1));
  int ok = tr.n == n, pass = 0;
  for (int i = 0; i < n && ok; i++) { /* the readout's values are the ids it predicts */
    char *end;
    long long v = strtoll(vals[best[i]], &end, 10);
    ok = *vals[best[i]] && !*end;
    out[i] = (rasp_elem){v, 1};
  }
  if (!ok)
    snprintf(buf, size, "not judged (the output is not %d token ids)", tr.n);
  else if (!raspK_check_output(&tr, out, t->lead, t->target, &pass, &err))
    snprintf(buf, size, "not judged (%s)", err.msg);
  else
    snprintf(buf, size, "%s", pass ? "ok (check() passed)" : "FAIL (check() failed)");
  raspM_free(out);
  raspK_trace_free(&tr);
  return buf;
}

/* Whether the model's layout.task (none: a plain program's model, or one
** compiled before it was recorded) agrees with the task of --program FILE;
** each difference is named with what would fix it.  1 or 0. */
static int task_agrees(const rasp_model *m, const char *stem, const char *file,
                       const rasp_task_opts *task) {
  raspN_task_diff d[RASPN_TASK_NKEYS];
  int n = raspN_layout_task_diff(m, task, -1, d);
  for (int i = 0; i < n; i++) {
    const char *k = d[i].key;
    int size = !strcmp(k, "D") || !strcmp(k, "M") || !strcmp(k, "V");
    fprintf(stderr, "rasp apply: '%s' was compiled for %s = %s, %s's task has %s = %s", stem,
            k, d[i].model, file, k, d[i].ours);
    if (size && strcmp(k, "V"))
      fprintf(stderr, " (give --%s %s, or an --input whose graph has %s = %s)\n", k,
              d[i].model, k, d[i].model);
    else if (size)
      fprintf(stderr, " (give --V %s)\n", d[i].model);
    else
      fprintf(stderr, " (the model needs task['%s'] = %s)\n", k, d[i].model);
  }
  return n <= 0;
}

/* A compiled model and the lists of its layout that apply reads. */
typedef struct amodel {
  rasp_model m;
  char **vocab, **vals, **dims; /* layout.vocab, .readout.values, .dims */
  int nvocab, nvals, ndims;
  int token_out; /* the output is token ids (layout.readout.tokens) */
} amodel;

/* Checks that a's model is a compiled one whose layout has what apply
** reads (and, task not NULL, that it was compiled for the task of
** --program FILE), and reads its lists.  0, or 2 after a message. */
static int read_layout(amodel *a, const char *stem, const char *file,
                       const rasp_task_opts *task) {
  rasp_model *m = &a->m;
  if (!m->json_extra) {
    fprintf(stderr, "rasp apply: '%s': not a compiled model (STEM.json has no layout)\n", stem);
    return 2;
  }
  if (raspN_layout_has(m, "trained_by") == 1 && raspN_layout_has(m, "vocab") != 1) {
    /* rasp-train's checkpoints record the task, not a compiled layout */
    fprintf(stderr, "rasp apply: '%s': a model trained by rasp-train, not a compiled one (its "
            "layout records only the task; rasp apply runs the STEM.json + "
            "STEM.safetensors of rasp compile)\n", stem);
    return 2;
  }
  if (task && !task_agrees(m, stem, file, task)) return 2;
  static const char *const lists[] = {"vocab", "readout.values", "dims"};
  char ***into[] = {&a->vocab, &a->vals, &a->dims};
  int *len[] = {&a->nvocab, &a->nvals, &a->ndims};
  for (int i = 0; i < 3; i++)
    if (!(*into[i] = raspN_layout_strings(m, lists[i], len[i]))) {
      fprintf(stderr, "rasp apply: '%s': the layout has no list of strings \"%s\"%s\n", stem,
              lists[i], i ? "" : " (a model compiled by an older rasp: compile it again)");
      return 2;
    }
  /* as `rasp run --symbols`: only an output of token ids stands for symbols
  ** (files from before readout.tokens: every id, as then) */
  a->token_out = raspN_layout_bool(m, "readout.tokens") != 0;
  /* a model compiled by size (`rasp compile --unproven`) with a unit the
  ** rounding proof does not cover runs, with a warning (files from before
  ** layout.proof: none) */
  if (raspN_layout_bool(m, "proof.proven") == 0)
    fprintf(stderr, "rasp apply: warning: '%s' is not proven exact (compiled with --unproven; "
            "STEM.json's layout.proof names the first unit not proven): its outputs may be "
            "wrong\n", stem);
  const rasp_model_config *c = &m->cfg;
  if (a->nvals != c->n_out || a->nvocab != c->vocab_size || c->bos_token < 0) {
    fprintf(stderr,
            "rasp apply: '%s': the layout has %d readout values and %d vocabulary "
            "entries for %d logits and %d token ids\n",
            stem, a->nvals, a->nvocab, c->n_out, c->vocab_size);
    return 2;
  }
  return 0;
}

/* The input's symbols (*syms, *n of them) as the model's token ids after
** BOS (*tokens, malloc'd): every symbol in the vocabulary and compiled as
** an input.  0, or 2 after a message. */
static int input_tokens(amodel *a, const char *input, char ***syms, int *n,
                        int **tokens) {
  const rasp_model_config *c = &a->m.cfg;
  char **vocab = a->vocab, **dims = a->dims;
  int nvocab = a->nvocab, ndims = a->ndims;
  /* the symbols the model has input dimensions for (none listed: the
  ** program does not read its tokens, and any symbol will do) */
  int any_tok = 0;
  for (int k = 0; k < ndims; k++)
    if (!strncmp(dims[k], "tokens=", 7)) any_tok = 1;
  *n = raspC_split(input, syms);
  if (*n != c->max_len - 1) {
    fprintf(stderr,
            "rasp apply: the model was compiled for inputs of %d symbols; the input "
            "has %d\n",
            c->max_len - 1, *n);
    return 2;
  }
  int *tok = *tokens = raspM_alloc(sizeof *tok * (size_t)(*n + 1));
  tok[0] = c->bos_token;
  for (int i = 0; i < *n; i++) {
    const char *sym = (*syms)[i];
    int id = 0;
    for (int t = 1; t < nvocab && !id; t++)
      if (t != c->bos_token && *vocab[t] && !strcmp(vocab[t], sym)) id = t;
    if (!id) {
      fprintf(stderr,
              "rasp apply: input symbol '%s' (position %d) is not in the model's "
              "vocabulary:",
              sym, i);
      for (int t = 1; t < nvocab; t++)
        if (*vocab[t] && t != c->bos_token) fprintf(stderr, " %s", vocab[t]);
      fputc('\n', stderr);
      return 2;
    }
    int known = !any_tok;
    for (int k = 0; k < ndims && !known; k++) {
      known = !strncmp(dims[k], "tokens=", 7) && !strcmp(dims[k] + 7, sym);
      /* numerical token ids ("tokens=x"): every compiled input has its id
         (nonzero) there */
      if (!known && !strcmp(dims[k], "tokens=x") && k < c->d_model)
        known = raspN_data(&a->m, "tok_emb")[(size_t)id * c->d_model + k] != 0.0f;
    }
    if (!known) {
      fprintf(stderr,
              "rasp apply: input symbol '%s' (position %d) is in the vocabulary but "
              "the model was not compiled with it as an input\n",
              sym, i);
      return 2;
    }
    tok[i + 1] = id;
  }
  return 0;
}

/* The output (each position's first maximum's value) and, want_logits,
** the logits, as text or one JSON object.  The exit status. */
static int print_output(const amodel *a, const char *input, char **syms, int n,
                        const int *tokens, const float *logits, const int *best, int symbols,
                        int want_logits, int json, int show_input, const char *verdict) {
  int O = a->m.cfg.n_out;
  if (json) {
    printf("{\"input\": [");
    for (int i = 0; i < n; i++) {
      if (i) printf(", ");
      json_str(syms[i], stdout);
    }
    printf("], \"tokens\": [");
    for (int i = 0; i <= n; i++)
      printf("%s%d", i ? ", " : "", tokens[i]);
    printf("], \"output\": [");
  } else if (show_input) {
    printf("input:  %s\noutput: ", input);
  }
  for (int i = 0; i < n; i++) {
    /* a path-star program's output is token ids by its task's contract */
    const char *v = symbols && (a->token_out || verdict)
                        ? as_symbol(a->vals[best[i]], a->vocab, a->nvocab)
                        : a->vals[best[i]];
    if (json) {
      if (i) printf(", ");
      json_str(v, stdout);
    } else {
      printf("%s%s", i ? " " : "", v);
    }
  }
  printf(json ? "]" : "\n");
  if (verdict && json) {
    printf(", \"verdict\": ");
    json_str(verdict, stdout);
  } else if (verdict) {
    printf("%s%s\n", show_input ? "verdict: " : "verdict: ", verdict);
  }
  if (want_logits) {
    if (json) printf(", \"logits\": [");
    for (int i = 0; i < n; i++) {
      const float *row = logits + (size_t)(i + 1) * O;
      if (json) printf("%s[", i ? ", " : "");
      for (int j = 0; j < O; j++) {
        if (j) fputs(json ? ", " : " ", stdout);
        print_float(row[j], json, stdout);
      }
      printf(json ? "]" : "\n");
    }
    if (json) printf("]");
  }
  if (json) printf("}\n");
  return fflush(stdout) ? 1 : 0;
}

/* Runs the model on input (symbols separated by spaces) and prints what
** the options ask for; show_input: first a line "input: ..." (a drawn
** sample); task, if not NULL: the task of --program FILE, which must be the
** model's.  The exit status. */
static int apply_model(const char *stem, const char *input, int symbols, int want_logits,
                       int json, int show_input, const char *file, ptask *task) {
  rasp_error err = {0};
  amodel a;
  memset(&a, 0, sizeof a);
  if (!raspN_load(&a.m, stem, &err)) {
    fprintf(stderr, "rasp apply: %s\n", err.msg);
    return raspR_exit_status(&err);
  }
  int n = 0, *tokens = NULL;
  char **syms = NULL;
  float *logits = NULL;
  int status = read_layout(&a, stem, file, task ? &task->opts : NULL);
  if (!status) status = input_tokens(&a, input, &syms, &n, &tokens);
  int *best = NULL;
  if (!status) {
    int O = a.m.cfg.n_out;
    logits = raspM_alloc(sizeof *logits * (size_t)(n + 1) * (size_t)O);
    if (!raspN_forward(&a.m, tokens, n + 1, logits, NULL, &err)) {
      raspR_print(&err, stderr);
      status = 1;
    } else {
      best = raspM_alloc(sizeof(int) * (size_t)(n ? n : 1));
      for (int i = 0; i < n; i++) { /* the first maximum, as raspG_run and numpy pick it */
        const float *row = logits + (size_t)(i + 1) * O;
        best[i] = 0;
        for (int j = 1; j < O; j++)
          if (row[j] > row[best[i]]) best[i] = j;
      }
      char vbuf[1200];
      const char *verdict = task ? task_verdict(task, a.vals, best, n, vbuf, sizeof vbuf) : NULL;
      status = print_output(&a, input, syms, n, tokens, logits, best, symbols, want_logits, json,
                            show_input, verdict);
    }
  }
  raspM_free(best);
  raspN_free(&a.m);
  raspN_free_strings(a.vocab, a.nvocab);
  raspN_free_strings(a.vals, a.nvals);
  raspN_free_strings(a.dims, a.ndims);
  if (syms) raspC_free_strings(syms, n);
  raspM_free(tokens);
  raspM_free(logits);
  return status;
}

int rasp_cli_apply(int argc, char **argv) {
  const char *stem = NULL, *input = NULL, *program = NULL, *stdlib = NULL;
  /* the first of --D --M --V --seed given, and of those that draw (not --V) */
  const char *sample_opt = NULL, *draw_opt = NULL;
  long D = 2, M = 5, V = 100, seed = 1;
  int symbols = 0, want_logits = 0, json = 0;
  rasp_access access = {0};
  char *own_input = NULL;
  ptask task;
  raspC_arg *args;
  int nargs = raspC_parse_program(RASPC_APPLY, "apply", argc, argv, &access, &args), bad = 0,
      status = 2;
  if (nargs < 0) raspC_access_free(&access);
  if (nargs == RASPC_DONE) return 0;
  if (nargs == RASPC_BAD) return 2;
  for (int k = 0; k < nargs && !bad; k++) {
    const char *v = args[k].val;
    switch (args[k].id) {
    case RASPC_O_PROGRAM: program = v; break;
    case RASPC_O_STDLIB: stdlib = v; break;
    case RASPC_O_D: bad = !raspC_int_opt("apply", args[k].name, v, 1, 100000, &D); break;
    case RASPC_O_M: bad = !raspC_int_opt("apply", args[k].name, v, 2, 100000, &M); break;
    case RASPC_O_V: bad = !raspC_int_opt("apply", args[k].name, v, 2, 1 << 30, &V); break;
    case RASPC_O_SEED:
      bad = !raspC_int_opt("apply", args[k].name, v, 0, 0x7fffffffffffffffL, &seed);
      break;
    case RASPC_OPERAND:
      if (stem) {
        fprintf(stderr, "rasp apply: unexpected argument '%s'\n", v);
        bad = 1;
      }
      stem = v;
      break;
    case RASPC_O_INPUT: input = v; break;
    case RASPC_O_SYMBOLS: symbols = 1; break;
    case RASPC_O_LOGITS: want_logits = 1; break;
    case RASPC_O_JSON: json = 1; break;
    default: break; /* --max-memory, --timeout: rasp.c's */
    }
    if (!sample_opt && (args[k].id == RASPC_O_D || args[k].id == RASPC_O_M ||
                        args[k].id == RASPC_O_V || args[k].id == RASPC_O_SEED))
      sample_opt = args[k].name;
    if (!draw_opt && (args[k].id == RASPC_O_D || args[k].id == RASPC_O_M ||
                      args[k].id == RASPC_O_SEED))
      draw_opt = args[k].name;
  }
  raspM_free(args);
  if (!bad && !stem) fprintf(stderr, "rasp apply: no model STEM given (rasp apply --help)\n");
  else if (!bad && !program && sample_opt)
    fprintf(stderr, "rasp apply: %s is for a path-star model: give --program FILE, the "
                    "program it was compiled from\n", sample_opt);
  else if (!bad && !program && !input)
    fprintf(stderr, "rasp apply: no --input given (rasp apply --help)\n");
  else if (!bad && input && draw_opt)
    fprintf(stderr, "rasp apply: %s draws a sample; with --input, D and M come from the "
                    "input's graph\n", draw_opt);
  else if (!bad && program &&
           !(own_input = task_text(program, stdlib, &access, input, D, M, V, seed, &task)))
    status = 2;
  else if (!bad)
    status = apply_model(stem, own_input ? own_input : input, symbols, want_logits, json,
                         program && !input, program, own_input ? &task : NULL);
  if (own_input) raspK_program_free(&task.prog);
  raspC_access_free(&access);
  raspM_free(own_input);
  return status;
}
