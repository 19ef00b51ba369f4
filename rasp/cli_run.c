/*
** cli_run.c -- `rasp run`, `rasp trace` and `rasp FILE` (the helpers every
** command shares are cli_common.c's).
**
** A program that declares `task` (a top-level assignment to `task`, found
** by parsing the file, not by running it) is run the way `rasp verify
** PROGRAM --input TEXT` runs it, through the verifier's own functions
** (rverify.h): the layout globals and the vocabulary of its task for the
** input's D and M, and the output, check()'s verdict and the named
** intermediate values printed as a counterexample prints them.  The input
** is one path-star input (--input, --stdin) or sample 0 of --seed for --D
** --M --V.  Options that only plain programs use (--vocab, --set, --entry,
** --symbols) are refused for it, and --D --M --V --seed for a plain one.
*/
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rfacts.h"
#include "rmem.h"
#include "rparse.h"
#include "rverify.h"
#include "rtask.h"

/* ------------------------------------------------------------ rasp run */

typedef struct run_opts {
  const char *file, *input, *entry, *vocab_file, *stdlib;
  int symbols, from_stdin, explain;
  char **sets;
  int nsets;
  rasp_access access;
  long D, M, V, seed;
  /* the options given that only one kind of program uses (NULL: none):
  ** the first of --vocab --set --entry --symbols, of --D --M --V --seed,
  ** and of --D --M --seed (which a path-star --input replaces) */
  const char *plain_only, *task_only, *sample_only;
} run_opts;

/* 1 parsed, 0 after --help or --version (status 0), -1 bad usage (message
** printed).  o->sets must be freed, and o->access, whatever it returns. */
static int parse_run_opts(unsigned cmd, const char *name, int argc, char **argv, run_opts *o) {
  memset(o, 0, sizeof *o);
  o->entry = "main";
  o->D = 2;
  o->M = 5;
  o->V = 100;
  o->seed = 1;
  o->sets = raspM_alloc(sizeof(char *) * (size_t)argc);
  raspC_arg *args;
  int n = raspC_parse_program(cmd, name, argc, argv, &o->access, &args), ok = 1;
  if (n == RASPC_DONE) return 0;
  if (n == RASPC_BAD) return -1;
  for (int k = 0; k < n && ok; k++) {
    const raspC_arg *a = &args[k];
    const char *v = a->val;
    switch (a->id) {
    case RASPC_OPERAND:
      if (o->file) {
        fprintf(stderr, "rasp %s: unexpected argument '%s'\n", name, v);
        ok = 0;
      }
      o->file = v;
      break;
    case RASPC_O_INPUT: o->input = v; break;
    case RASPC_O_STDIN: o->from_stdin = 1; break;
    case RASPC_O_ENTRY: o->entry = v; break;
    case RASPC_O_VOCAB: o->vocab_file = v; break;
    case RASPC_O_STDLIB: o->stdlib = v; break;
    case RASPC_O_SYMBOLS: o->symbols = 1; break;
    case RASPC_O_EXPLAIN: o->explain = 1; break;
    case RASPC_O_SET:
      if (!strchr(v, '=')) {
        fprintf(stderr, "rasp %s: --set: expected NAME=VALUE, got '%s'\n", name, v);
        ok = 0;
      }
      o->sets[o->nsets++] = (char *)v;
      break;
    case RASPC_O_D: ok = raspC_int_opt(name, a->name, v, 1, 100000, &o->D); break;
    case RASPC_O_M: ok = raspC_int_opt(name, a->name, v, 2, 100000, &o->M); break;
    case RASPC_O_V: ok = raspC_int_opt(name, a->name, v, 2, 1 << 30, &o->V); break;
    case RASPC_O_SEED: ok = raspC_int_opt(name, a->name, v, 0, 0x7fffffffffffffffL, &o->seed); break;
    default: break; /* --max-memory, --timeout: rasp.c's */
    }
    switch (a->id) {
    case RASPC_O_VOCAB: case RASPC_O_SET: case RASPC_O_ENTRY: case RASPC_O_SYMBOLS:
      if (!o->plain_only) o->plain_only = a->name;
      break;
    case RASPC_O_D: case RASPC_O_M: case RASPC_O_SEED:
      if (!o->sample_only) o->sample_only = a->name;
      /* fall through */
    case RASPC_O_V:
      if (!o->task_only) o->task_only = a->name;
      break;
    default: break;
    }
  }
  raspM_free(args);
  if (ok && !o->file) {
    fprintf(stderr, "rasp %s: no program file given\n", name);
    ok = 0;
  }
  return ok ? 1 : -1;
}

static char *read_stdin(void) {
  size_t cap = 4096, len = 0;
  char *buf = raspM_alloc(cap);
  size_t got;
  while ((got = fread(buf + len, 1, cap - len - 1, stdin)) > 0) {
    len += got;
    if (len + 1 == cap) buf = raspM_realloc(buf, cap *= 2);
  }
  buf[len] = '\0';
  return buf;
}

static void apply_set(rasp_ctx *ctx, const char *assignment) {
  const char *eq = strchr(assignment, '=');
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)(eq - assignment), assignment);
  const char *val = eq + 1;
  long long v;
  if (raspC_as_integer(val, &v)) rasp_set_int(ctx, name, v);
  else if (strcmp(val, "True") == 0) rasp_set_bool(ctx, name, 1);
  else if (strcmp(val, "False") == 0) rasp_set_bool(ctx, name, 0);
  else rasp_set_string(ctx, name, val);
}

/* A path-star program (programs/) reads the layout globals that only the
** verifier sets (rtask.h); `rasp run` stops at the first of them.  Say where
** to go. */
static void path_star_hint(const char *cmd, const char *file, const rasp_error *err) {
  if (err->code != RASP_E_NAME || !err->pos.src || !raspT_is_layout_global(err->subject)) return;
  fprintf(stderr, "rasp %s: '%s' is a layout global of path-star programs; to run one "
                  "on one input: rasp verify %s --input TEXT\n", cmd, err->subject, file);
}

/* Traces o->file (a plain program) for o->input; on success *ctx_out and
** token ids are set. */
static int trace_input(const char *cmd, run_opts *o, rasp_ctx **ctx_out, int64_t **tokens_out) {
  rasp_error err = {0};
  const char *text = o->input;
  if (o->task_only) {
    fprintf(stderr, "rasp %s: %s is for programs that declare `task`; %s does not (give its "
                    "input with --input)\n", cmd, o->task_only, o->file);
    return 2;
  }
  if (!text) {
    fprintf(stderr, "rasp %s: no input: give --input TEXT or --stdin\n", cmd);
    return 2;
  }
  char **syms;
  int n = raspC_split(text, &syms);
  if (n == 0) {
    fprintf(stderr, "rasp %s: the input is empty\n", cmd);
    raspC_free_strings(syms, n);
    return 2;
  }
  char **vocab;
  int nvocab;
  if (o->vocab_file) {
    nvocab = raspC_read_vocab(o->vocab_file, &vocab, &err);
    if (nvocab < 0) {
      raspR_print(&err, stderr);
      raspC_free_strings(syms, n);
      return 2;
    }
  } else {
    nvocab = raspC_default_vocab(syms, n, &vocab);
  }
  rasp_ctx *ctx = rasp_ctx_new(n, NULL, &err);
  int status = 1;
  int64_t *tokens = raspM_alloc(sizeof(int64_t) * (size_t)n);
  if (!ctx) goto fail;
  if (!rasp_set_access(ctx, &o->access, &err)) goto fail;
  if (!rasp_set_vocab(ctx, (const char *const *)vocab, nvocab, &err)) goto fail;
  for (int i = 0; i < n; i++) {
    tokens[i] = rasp_vocab_id(ctx, syms[i]);
    if (!tokens[i]) {
      fprintf(stderr, "rasp %s: input symbol '%s' is not in the vocabulary '%s'\n", cmd, syms[i],
              o->vocab_file);
      status = 2;
      goto fail_quiet;
    }
  }
  for (int i = 0; i < o->nsets; i++) apply_set(ctx, o->sets[i]);
  if (!rasp_load_stdlib(ctx, o->stdlib, &err)) goto fail;
  if (!rasp_exec_file(ctx, o->file, &err)) goto fail;
  if (!rasp_trace(ctx, o->entry, &err)) goto fail;
  raspC_free_strings(syms, n);
  raspC_free_strings(vocab, nvocab);
  *ctx_out = ctx;
  *tokens_out = tokens;
  return 0;
fail:
  raspR_print(&err, stderr);
  path_star_hint(cmd, o->file, &err);
  status = raspR_exit_status(&err);
fail_quiet:
  rasp_ctx_free(ctx);
  raspM_free(tokens);
  raspC_free_strings(syms, n);
  raspC_free_strings(vocab, nvocab);
  return status;
}

/* Whether a statement list assigns the global `task` (at the top level,
** or in the branches and loops there; not inside a function). */
static int assigns_task(rasp_ast **stmts, int n) {
  for (int i = 0; i < n; i++) {
    const rasp_ast *st = stmts[i];
    if (st->kind == AST_ASSIGN) {
      for (int t = 0; t < st->nitems; t++)
        if (st->items[t]->kind == AST_NAME && strcmp(st->items[t]->str, "task") == 0) return 1;
    } else if (st->kind == AST_IF || st->kind == AST_FOR || st->kind == AST_WHILE) {
      if (assigns_task(st->items, st->nitems) || assigns_task(st->items2, st->nitems2)) return 1;
    }
  }
  return 0;
}

/* Whether the file declares `task`, read off its syntax: running it to
** find out would run its top level twice.  A file that cannot be read or
** parsed is not (the plain path then reports why). */
static int declares_task(const char *path) {
  rasp_error err = {0};
  rasp_source *src = raspR_source_file(path, &err);
  if (!src) return 0;
  rasp_arena arena;
  raspM_arena_init(&arena);
  rasp_ast *mod = raspP_parse(src, &arena, &err);
  int yes = mod && assigns_task(mod->items, mod->nitems);
  raspM_arena_free(&arena);
  raspR_source_free(src);
  return yes;
}

/* --explain: evaluates the input once and prints, per live head, which
** kernels evaluated it (reval.h's counters), or the node whose value it
** shares. */
static int explain(const rasp_ir *ir, const int64_t *tokens) {
  rasp_eval *ev = raspE_new(ir);
  rasp_error err = {0};
  if (!raspE_run(ev, 1, tokens, &err)) {
    raspR_print(&err, stderr);
    raspE_free(ev);
    return 1;
  }
  printf("kernels (per head: kernel x inputs it evaluated)\n");
  for (int id = 0; id < ir->nnodes; id++) {
    const rasp_ir_node *nd = &ir->nodes[id];
    int canon = raspE_shared_with(ev, id);
    if (raspI_op_component(nd->op) != RASP_COMP_ATTN || canon < 0) continue;
    printf("%%%d = %s", id, raspI_op_name(nd->op));
    if (nd->label) printf("  # %s", nd->label);
    if (canon != id) {
      printf(": the value of %%%d\n", canon);
      continue;
    }
    printf(": kernel");
    const char *sep = " ";
    for (int k = 0; k < raspE_kernel_count(); k++) {
      uint64_t h = raspE_kernel_hits(ev, id, k);
      if (!h) continue;
      printf("%s%s x%llu", sep, raspE_kernel_name(k), (unsigned long long)h);
      sep = ", ";
    }
    printf("\n");
  }
  raspE_free(ev);
  return 0;
}

/* run and trace for a program that declares `task`: the verifier's
** context for one input (rverify.h), as `rasp verify --input` makes it. */
static int run_task(unsigned cmd, const char *name, const run_opts *o) {
  if (o->plain_only) {
    fprintf(stderr, "rasp %s: %s is for plain programs; %s declares `task` (the verifier "
                    "sets its vocabulary and layout globals)\n", name, o->plain_only, o->file);
    return 2;
  }
  if (o->input && o->sample_only) {
    fprintf(stderr, "rasp %s: %s draws a sample; with --input%s, D and M come from the "
                    "input's graph\n", name, o->sample_only, o->from_stdin ? " (--stdin)" : "");
    return 2;
  }
  rasp_program prog;
  rasp_error err = {0};
  if (!raspK_load_with(o->file, o->stdlib, &o->access, (int)o->D, (int)o->M, (int)o->V, &prog,
                       &err)) {
    raspR_print(&err, stderr);
    return raspR_exit_status(&err);
  }
  rasp_input in;
  int status = 0;
  if (o->input) status = raspC_task_input(name, &prog, (int)o->V, o->input, &in);
  else if (!raspK_sample_input(&prog, (int)o->D, (int)o->M, (int)o->V, (uint64_t)o->seed, 0, &in,
                              &err)) {
    fprintf(stderr, "rasp %s: %s\n", name, err.msg);
    status = 2;
  }
  if (status) {
    raspK_program_free(&prog);
    return status;
  }
  if (cmd == RASPC_RUN) {
    /* the verdict is printed; only an error is a failure of `run` */
    int r = raspK_run_input(&prog, (int)o->V, &in, stdout, &err);
    if (r == -2) raspR_print(&err, stderr);
    status = r >= 0 ? 0 : 1;
  } else {
    rasp_ptrace tr;
    if (!raspK_trace(&prog, in.D, in.M, (int)o->V, &tr, &err)) {
      raspR_print(&err, stderr);
      status = 1;
    } else {
      raspI_dump(rasp_ctx_ir(tr.ctx), stdout);
      raspL_print(&tr.layers, stdout);
      if (o->explain) status = explain(rasp_ctx_ir(tr.ctx), in.tokens);
      raspK_trace_free(&tr);
    }
  }
  raspK_input_free(&in);
  raspK_program_free(&prog);
  return status;
}

/* run and trace for a plain program. */
static int run_plain(unsigned cmd, const char *name, run_opts *o) {
  rasp_ctx *ctx = NULL;
  int64_t *tokens = NULL;
  int status = trace_input(name, o, &ctx, &tokens);
  if (status) return status;
  rasp_ir *ir = rasp_ctx_ir(ctx);
  if (cmd == RASPC_RUN) {
    rasp_eval *ev = raspE_new(ir);
    rasp_error err = {0};
    if (!raspE_run(ev, 1, tokens, &err)) {
      raspR_print(&err, stderr);
      status = raspR_exit_status(&err);
    } else {
      for (int k = 0; k < ir->noutputs; k++) /* only token ids stand for symbols */
        raspC_print_values(ctx, ev, ir->outputs[k], 0,
                           o->symbols && raspE_symbolic(ev, ir->outputs[k], 0), stdout);
    }
    raspE_free(ev);
  } else {
    raspI_dump(ir, stdout);
    rasp_layers layers;
    raspC_compiled_layers(ctx, -1, &layers);
    raspL_print(&layers, stdout);
    raspL_free(&layers);
    if (o->explain) status = explain(ir, tokens);
  }
  raspM_free(tokens);
  rasp_ctx_free(ctx);
  return status;
}

static int run_cmd(unsigned cmd, const char *name, int argc, char **argv) {
  run_opts o;
  int status = parse_run_opts(cmd, name, argc, argv, &o);
  if (status > 0) {
    char *stdin_text = o.from_stdin ? read_stdin() : NULL;
    if (stdin_text) o.input = stdin_text;
    status = declares_task(o.file) ? run_task(cmd, name, &o) : run_plain(cmd, name, &o);
    raspM_free(stdin_text);
  } else {
    status = status == 0 ? 0 : 2;
  }
  raspM_free(o.sets);
  raspC_access_free(&o.access);
  return status;
}

int rasp_cli_run(int argc, char **argv) { return run_cmd(RASPC_RUN, "run", argc, argv); }

int rasp_cli_trace(int argc, char **argv) { return run_cmd(RASPC_TRACE, "trace", argc, argv); }

/* `rasp [--allow-ffi] [--allow-include DIR] FILE [ARGS]`: run the file's
** top level as a script (no input); what follows FILE is the script's. */
int rasp_cli_script(int argc, char **argv) {
  rasp_access access = {0};
  int i = 0;
  for (int acc; i < argc && (acc = raspC_access_opt("script", argc, argv, &i, &access)); i++)
    if (acc < 0) {
      raspC_access_free(&access);
      return 2;
    }
  if (i >= argc) {
    fprintf(stderr, "rasp: no program file given\n");
    raspC_access_free(&access);
    return 2;
  }
  rasp_error err = {0};
  rasp_ctx *ctx = rasp_ctx_new(1, NULL, &err);
  int status = 0;
  if (!ctx || !rasp_set_access(ctx, &access, &err) || !rasp_load_stdlib(ctx, NULL, &err) ||
      !rasp_exec_file(ctx, argv[i], &err)) {
    raspR_print(&err, stderr);
    status = raspR_exit_status(&err);
  }
  rasp_ctx_free(ctx);
  raspC_access_free(&access);
  return status;
}
