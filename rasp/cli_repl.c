/*
** cli_repl.c -- the interactive REPL, on GNU Readline.
**
** The REPL traces for one running example (default "h e l l o"): every
** sequence expression is evaluated on it at once and shown, selectors as a
** grid.  Because a trace is tied to an input length, changing the example
** replays the session's successful entries in a fresh context of the new
** length; so variables keep their meaning for the new example.  Values the
** IR's facts call token ids (raspF_symbolic) show as the example's symbols.
**
** On a terminal, lines come through Readline's callback interface rather
** than readline(): a signal handler cannot safely leave readline(), but the
** callback loop waits in pselect, which a signal interrupts, so Ctrl-C can
** drop the line or block in progress and give a fresh prompt, and SIGTERM or
** SIGHUP can end the session through the same exit as Ctrl-D and :quit
** (which saves the history).  A Ctrl-C while an entry runs asks the
** interpreter to stop it (rasp_interrupt).  From a pipe, no prompt is
** shown; lines are read the same way (pselect, then read), SIGINT ends the
** session there, and an unindented line after a block ends the block.
** A piped session that had a failed entry exits with the status the first
** failure would give in `rasp run` (a script's caller must see it); at a
** terminal the session exits 0, the errors having been seen as they came.
**
** `:load` of a program that declares `task` (programs/) puts the session
** in path-star mode: the context is the verifier's for that program (its
** layout globals, the task's vocabulary, the program run), traced for a
** task sample (D = 2, M = 5, |V| = 100, seed 1, as `rasp run` draws one),
** and `:example` takes D=, M=, V= and seed= words for another sample, or a
** path-star input as `rasp run --input` reads it (a `rasp gen` line too).
**
** What programs may reach is as in every command (rasp_access in rasp.h),
** with the current directory as the program's tree.  Because a bare `rasp`
** takes no options, RASP_ALLOW_FFI=1 in the environment also turns C
** functions on -- for the REPL only: the batch commands run programs that
** come from others, where a variable exported once would be forgotten.
** The history file is replaced atomically through a fresh mkstemp file
** (raspR_atomic_open), never through a predictable name that a planted
** link could redirect.
*/
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "cli.h"
#include "rfacts.h"
#include "rmem.h"
#include "rparse.h"

typedef struct repl {
  rasp_ctx *ctx;
  char **example;     /* symbols of the running example */
  int n;
  int64_t *tokens;
  char **entries;     /* successful entries, replayed on a new example */
  int nentries, cap;
  const char *stdlib;
  rasp_access access;
  int symbols;        /* show token-valued sequences as symbols */
  char *buf;          /* the entry being typed (a block spans lines) */
  size_t blen;
  int failed;         /* exit status of the first entry that failed: a piped
                      ** session ends with it, so a script's caller sees it */
  /* path-star mode, after :load of a program that declares `task`: the
  ** program (its text as read, run in every context), the trace whose
  ** context the session uses (tr.ctx is r->ctx), and the example's task */
  int pathstar;
  rasp_program prog;
  char *prog_text;
  rasp_ptrace tr;
  long D, M, V, seed;
  int out_node;       /* the node of `output`, the program's output */
} repl;

static repl *completion_repl;
static volatile sig_atomic_t got_signal; /* the last SIGINT/SIGTERM/SIGHUP */
static rasp_ctx *volatile running;       /* the context running an entry */

/* Prints an entry's error and remembers the session failed. */
static void report(repl *r, const rasp_error *err) {
  raspR_print(err, stderr);
  int status = raspR_exit_status(err);
  if (!r->failed) r->failed = status ? status : 1;
}

/* A colon command's complaint (status 2 for a usage error, 1 otherwise),
** remembered as report's are. */
static void complain(repl *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void complain(repl *r, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (!r->failed) r->failed = status;
}

/* rasp_repl_entry, which Ctrl-C can stop (see on_signal). */
static int repl_entry(repl *r, const char *text, rasp_repl_value *v, rasp_error *err) {
  rasp_interrupt(r->ctx, 0);
  running = r->ctx;
  int ok = rasp_repl_entry(r->ctx, text, v, err);
  running = NULL;
  return ok;
}

/* An entry's sequence or selector node (-1: another value). */
static int repl_node(repl *r, const char *text, int *node, int *is_sel, rasp_error *err) {
  rasp_repl_value v;
  int ok = repl_entry(r, text, &v, err);
  free(v.shown);
  *node = ok ? v.node : -1;
  *is_sel = ok && v.is_sel;
  return ok;
}

static int repl_entry_quiet(repl *r, const char *text, rasp_error *err) {
  rasp_repl_value v;
  int ok = repl_entry(r, text, &v, err);
  free(v.shown);
  return ok;
}

/* Frees the session's context (a path-star trace's, or its own). */
static void free_context(repl *r) {
  if (r->pathstar) raspK_trace_free(&r->tr);
  else rasp_ctx_free(r->ctx);
  r->ctx = NULL;
}

/* Replays the entries in r->ctx, just made for a new example. */
static void replay(repl *r) {
  rasp_error err = {0};
  for (int i = 0; i < r->nentries; i++) {
    err.set = 0;
    if (!repl_entry_quiet(r, r->entries[i], &err)) {
      fprintf(stderr, "(replaying an earlier entry for the new example failed)\n");
      report(r, &err);
    }
  }
}

/* Makes a context for the example and replays the entries. */
static int repl_reset(repl *r, char **example, int n) {
  rasp_error err = {0};
  rasp_ctx *ctx = rasp_ctx_new(n, NULL, &err);
  if (!ctx || !rasp_set_access(ctx, &r->access, &err)) {
    report(r, &err);
    rasp_ctx_free(ctx);
    return 0;
  }
  char **vocab;
  int nvocab = raspC_default_vocab(example, n, &vocab);
  int ok = rasp_set_vocab(ctx, (const char *const *)vocab, nvocab, &err) &&
           rasp_load_stdlib(ctx, r->stdlib, &err);
  if (!ok) {
    report(r, &err);
    raspC_free_strings(vocab, nvocab);
    rasp_ctx_free(ctx);
    return 0;
  }
  int64_t *tokens = raspM_alloc(sizeof(int64_t) * (size_t)n);
  for (int i = 0; i < n; i++) tokens[i] = rasp_vocab_id(ctx, example[i]);
  raspC_free_strings(vocab, nvocab);
  free_context(r);
  r->pathstar = 0;
  r->ctx = ctx;
  replay(r);
  raspM_free(r->tokens);
  if (r->example != example) raspC_free_strings(r->example, r->n);
  r->example = example;
  r->n = n;
  r->tokens = tokens;
  return 1;
}

static void show_selector(repl *r, rasp_eval *ev, int node) {
  rasp_error err = {0};
  const unsigned char *m = raspE_selector(ev, node, 0, &err);
  if (!m) {
    report(r, &err);
    return;
  }
  int n = r->n;
  size_t w = 1;
  for (int i = 0; i < n; i++)
    if (strlen(r->example[i]) > w) w = strlen(r->example[i]);
  /* rows are queries, columns keys, both labelled with the example */
  printf("%*s   keys:", (int)w, "");
  for (int k = 0; k < n; k++) printf(" %s", r->example[k]);
  printf("\n");
  for (int q = 0; q < n; q++) {
    printf("%*s |      ", (int)w, r->example[q]);
    for (int k = 0; k < n; k++)
      printf(" %*s", (int)strlen(r->example[k]), m[(size_t)q * (size_t)n + (size_t)k] ? "1" : ".");
    printf("\n");
  }
}

/* Evaluates node on the example and shows it. */
static void show_node(repl *r, int node, int is_sel) {
  rasp_ir *ir = rasp_ctx_ir(r->ctx);
  int *saved = ir->outputs, nsaved = ir->noutputs;
  int out[1] = {node};
  ir->outputs = out;
  ir->noutputs = 1;
  (void)is_sel;
  rasp_eval *ev = raspE_new(ir);
  rasp_error err = {0};
  if (!raspE_run(ev, 1, r->tokens, &err)) {
    report(r, &err);
  } else if (is_sel) {
    show_selector(r, ev, node);
  } else {
    /* only values the IR knows to be token ids stand for symbols */
    int symbolic = r->symbols && (raspE_symbolic(ev, node, 0) ||
                                  (r->pathstar && node == r->out_node)); /* next tokens */
    raspC_print_values(r->ctx, ev, node, 0, symbolic, stdout);
  }
  raspE_free(ev);
  ir->outputs = saved;
  ir->noutputs = nsaved;
}

/* The compiled model's schedule with expr as its output (as `rasp layers`
** gives for a program whose output it is) into L, and expr's node: 1, or
** 0 after a message (cmd names the colon command). */
static int expr_layers(repl *r, const char *cmd, const char *expr, int *node, rasp_layers *L) {
  rasp_error err = {0};
  int is_sel;
  if (!repl_node(r, expr, node, &is_sel, &err)) {
    report(r, &err);
    return 0;
  }
  if (*node < 0 || is_sel) {
    complain(r, 1, ":%s: '%s' is not a sequence expression\n", cmd, expr);
    return 0;
  }
  rasp_ir *ir = rasp_ctx_ir(r->ctx);
  int *saved = ir->outputs, nsaved = ir->noutputs;
  ir->outputs = node;
  ir->noutputs = 1;
  raspC_compiled_layers(r->ctx, *node, L);
  ir->outputs = saved;
  ir->noutputs = nsaved;
  return 1;
}

static void show_layers(repl *r, const char *expr) {
  int node;
  rasp_layers layers;
  if (!expr_layers(r, "layers", expr, &node, &layers)) return;
  raspL_print(&layers, stdout);
  raspL_free(&layers);
}

/* :draw [-o FILE] EXPR: the dataflow graph of EXPR as `rasp draw` draws a
** program's (DOT on stdout; -o FILE by its extension: .dot, .json, .svg,
** .png, .pdf). */
static void draw_expr(repl *r, const char *args) {
  char *file = NULL;
  const char *expr = args;
  if (strncmp(args, "-o", 2) == 0 && (args[2] == ' ' || args[2] == '\t')) {
    const char *f = args + 2;
    while (*f == ' ' || *f == '\t') f++;
    const char *end = f;
    while (*end && *end != ' ' && *end != '\t') end++;
    file = raspM_strndup(f, (size_t)(end - f));
    expr = end;
    while (*expr == ' ' || *expr == '\t') expr++;
  }
  if (!*expr || (file && !*file)) {
    complain(r, 2, "usage: :draw [-o FILE] EXPR\n");
    raspM_free(file);
    return;
  }
  const char *format = raspC_draw_format(0, NULL, file);
  int node;
  rasp_layers layers;
  if (!format) {
    if (!r->failed) r->failed = 2;
  } else if (expr_layers(r, "draw", expr, &node, &layers)) {
    raspC_dgraph g = {rasp_ctx_ir(r->ctx), &node, 1, layers.sublayer};
    int status = raspC_draw_write(&g, expr, format, file);
    if (status && !r->failed) r->failed = status;
    else if (!status && file) printf("wrote %s\n", file);
    raspL_free(&layers);
  }
  raspM_free(file);
}

/* The IR so far (no expression: every node traced in the session), or the
** nodes one expression needs. */
static void show_ir(repl *r, const char *expr) {
  rasp_ir *ir = rasp_ctx_ir(r->ctx);
  int node = -1;
  if (*expr) {
    rasp_error err = {0};
    int is_sel;
    if (!repl_node(r, expr, &node, &is_sel, &err)) {
      report(r, &err);
      return;
    }
    if (node < 0) {
      complain(r, 1, ":ir: '%s' is not a sequence or a selector\n", expr);
      return;
    }
  }
  int *saved = ir->outputs, nsaved = ir->noutputs;
  int *all = NULL;
  if (node >= 0) {
    ir->outputs = &node;
    ir->noutputs = 1;
  } else {
    all = raspM_alloc(sizeof(int) * (size_t)(ir->nnodes + 1));
    for (int i = 0; i < ir->nnodes; i++) all[i] = i;
    ir->outputs = all;
    ir->noutputs = ir->nnodes;
  }
  raspI_dump(ir, stdout);
  ir->outputs = saved;
  ir->noutputs = nsaved;
  raspM_free(all);
}

static const char *help_text =
    "Enter statements or expressions in RASP (a Python subset).  A sequence\n"
    "expression shows its value on the running example; a selector shows as a\n"
    "grid (rows: queries, columns: keys).  Blocks continue with '...' until an\n"
    "empty line.  Ctrl-C cancels the line or block (or stops a running entry).\n"
    "\n"
    "  :example SYMBOLS   set the running example (default: h e l l o); after\n"
    "                     :load of a path-star program, D=2 M=5 V=100 seed=1\n"
    "                     words draw a task sample, or give a path-star input\n"
    "  :layers EXPR       transformer layers and heads the expression needs\n"
    "  :draw [-o F] EXPR  its dataflow graph by layer, as rasp draw: DOT, or\n"
    "                     F by its extension (.dot .json .svg .png .pdf)\n"
    "  :load FILE         run a .rasp file of this tree in this session (one\n"
    "                     that declares `task` runs on a task sample)\n"
    "  :doc NAME          describe a function or value\n"
    "  :ir [EXPR]         the traced IR so far, or the nodes EXPR needs\n"
    "  :symbols [on|off]  show token ids as their symbols (default on)\n"
    "  :help              this text\n"
    "  :quit, :q          leave (also Ctrl-D)\n"
    "\n"
    "select() is causal by default: a query sees only keys at or before it (the\n"
    "paper's library); causal=False sees every key (Weiss's RASP).\n"
    "Input tokens are `tokens` (vocabulary ids, shown as symbols; token_ints()\n"
    "reads them as the integers they spell); d maps\n"
    "symbols to ids, and tokens == \"l\" compares with d[\"l\"].  Try\n"
    "  reverse = aggregate(select(indices(tokens), len(tokens) - indices(tokens) - 1, equals, "
    "causal=False), tokens)\n";

/* Path-star mode's example: the program traced for in's D and M (its
** context becomes the session's), the entries replayed, the example the
** input's tokens.  Takes in's tokens.  0 after a message (nothing changed). */
static int pathstar_reset(repl *r, rasp_input *in) {
  rasp_ptrace tr;
  rasp_error err = {0};
  if (!raspK_trace(&r->prog, in->D, in->M, (int)r->V, &tr, &err)) {
    report(r, &err);
    raspK_input_free(in);
    return 0;
  }
  int n = tr.n;
  if (tr.tok_map) /* task['symbols_first'] renumbers the generator's ids */
    for (int i = 0; i < n; i++) in->tokens[i] = tr.tok_map[in->tokens[i]];
  char **example = raspM_alloc(sizeof(char *) * (size_t)n);
  for (int i = 0; i < n; i++) {
    const char *sym = rasp_vocab_symbol(tr.ctx, (int)in->tokens[i]);
    example[i] = raspM_strdup(sym ? sym : "?");
  }
  free_context(r);
  r->pathstar = 1;
  r->tr = tr;
  r->ctx = tr.ctx;
  r->D = in->D, r->M = in->M;
  /* `output`, the program's output on the example: shown as symbols (the
  ** task's next tokens) */
  char def[96];
  snprintf(def, sizeof def, "output = %s(tokens)", r->prog.entry);
  int is_sel;
  r->out_node = -1;
  if (!repl_node(r, def, &r->out_node, &is_sel, &err) ||
      !repl_node(r, "output", &r->out_node, &is_sel, &err))
    report(r, &err);
  replay(r);
  raspM_free(r->tokens);
  raspC_free_strings(r->example, r->n);
  r->example = example;
  r->n = n;
  r->tokens = in->tokens;
  in->tokens = NULL;
  raspK_input_free(in);
  return 1;
}

static void show_example(const repl *r) {
  printf("example:");
  for (int i = 0; i < r->n; i++) printf(" %s", r->example[i]);
  printf("\n");
  if (r->pathstar && r->seed >= 0)
    printf("(a sample of %s's task: D=%ld M=%ld V=%ld seed=%ld, n=%d; the program's output "
           "is `output`, %s(tokens))\n", r->prog.name, r->D, r->M, r->V, r->seed, r->n,
           r->prog.entry);
  else if (r->pathstar)
    printf("(an input of %s's task: D=%ld M=%ld V=%ld, n=%d; the program's output is "
           "`output`, %s(tokens))\n", r->prog.name, r->D, r->M, r->V, r->n, r->prog.entry);
}

/* Path-star :example: words D=, M=, V=, seed= draw a task sample (the
** others keep their values); anything else is a path-star input as `rasp
** run --input` reads it. */
static void pathstar_example(repl *r, const char *text) {
  long v[4] = {r->D, r->M, r->V, r->seed < 0 ? 1 : r->seed};
  static const char *const keys[4] = {"D=", "M=", "V=", "seed="};
  static const long lo[4] = {1, 2, 1, 0}, hi[4] = {100, 1000, 100000, 1000000000L};
  char **w;
  int nw = raspC_split(text, &w), sized = 1;
  for (int i = 0; i < nw && sized; i++) {
    int k = 0;
    while (k < 4 && strncmp(w[i], keys[k], strlen(keys[k]))) k++;
    if (k == 4) {
      sized = 0;
      break;
    }
    char *end;
    errno = 0;
    long x = strtol(w[i] + strlen(keys[k]), &end, 10);
    if (!w[i][strlen(keys[k])] || *end || errno || x < lo[k] || x > hi[k]) {
      complain(r, 2, ":example: %s expects a number in %ld..%ld, not '%s'\n", keys[k], lo[k],
               hi[k], w[i] + strlen(keys[k]));
      raspC_free_strings(w, nw);
      return;
    } else v[k] = x;
  }
  raspC_free_strings(w, nw);
  rasp_input in;
  rasp_error err = {0};
  if (sized) {
    if (!raspK_sample_input(&r->prog, (int)v[0], (int)v[1], (int)v[2], (uint64_t)v[3], 0, &in,
                            &err)) {
      complain(r, 2, ":example: %s\n", err.msg);
      return;
    }
  } else if (*text == '{') { /* a `rasp gen` line */
    if (raspC_task_input("repl", &r->prog, (int)v[2], text, &in) != 0) {
      if (!r->failed) r->failed = 2;
      return;
    }
  } else if (!raspK_parse_input(&r->prog, (int)v[2], text, &in, &err)) {
    complain(r, 2, ":example: %s (for %s's task)\n", err.msg, r->prog.name);
    return;
  }
  long old_V = r->V, old_seed = r->seed;
  r->V = v[2], r->seed = sized ? v[3] : -1; /* -1: an input given */
  if (pathstar_reset(r, &in)) show_example(r);
  else r->V = old_V, r->seed = old_seed;
}

/* Whether text assigns `task` at its top level (a path-star program), read
** from its syntax tree: nothing runs. */
static int declares_task(const char *path, const char *text) {
  rasp_source *src = raspR_source_new(path, text, strlen(text));
  rasp_arena arena;
  raspM_arena_init(&arena);
  rasp_error err = {0};
  rasp_ast *mod = raspP_parse(src, &arena, &err);
  int found = 0;
  for (int i = 0; mod && i < mod->nitems && !found; i++) {
    const rasp_ast *st = mod->items[i];
    for (int t = 0; st->kind == AST_ASSIGN && t < st->nitems; t++)
      found |= st->items[t]->kind == AST_NAME && strcmp(st->items[t]->str, "task") == 0;
  }
  raspM_arena_free(&arena);
  raspR_source_free(src);
  return found;
}

/* :load of a path-star program: its sample for D = 2, M = 5, |V| = 100,
** seed 1 (as `rasp run`), the entries so far dropped (they were typed for
** another vocabulary). */
static void pathstar_load(repl *r, const char *path, char *text) {
  rasp_program prog;
  rasp_error err = {0};
  if (!raspK_load_text(path, text, r->stdlib, &r->access, 2, 5, 100, &prog, &err)) {
    report(r, &err);
    free(text);
    return;
  }
  rasp_program old = r->prog;
  char *old_text = r->prog_text;
  int was = r->pathstar;
  r->prog = prog;
  r->prog_text = text;
  long saved[4] = {r->D, r->M, r->V, r->seed};
  r->V = 100, r->seed = 1;
  rasp_input in;
  if (!raspK_sample_input(&r->prog, 2, 5, 100, 1, 0, &in, &err)) {
    complain(r, 2, ":load: %s\n", err.msg);
  } else {
    int nkept = r->nentries;
    r->nentries = 0; /* not replayed in the program's context */
    int pathstar_ok = pathstar_reset(r, &in);
    r->nentries = nkept;
    if (pathstar_ok) {
      for (int i = 0; i < r->nentries; i++) raspM_free(r->entries[i]);
      r->nentries = 0;
      if (was) {
        raspK_program_free(&old);
        free(old_text);
      }
      show_example(r);
      return;
    }
  }
  /* the session stays as it was */
  raspK_program_free(&r->prog);
  free(r->prog_text);
  r->prog = old;
  r->prog_text = old_text;
  r->D = saved[0], r->M = saved[1], r->V = saved[2], r->seed = saved[3];
}

static void remember(repl *r, const char *text) {
  RASP_GROW(r->entries, r->cap, r->nentries + 1);
  r->entries[r->nentries++] = raspM_strdup(text);
}

/* :load FILE: a program file run as include() runs one (a .rasp file in
** the session's tree or an --allow-include tree, opened once), its text
** remembered for :example as it ran (the file may change before). */
static void load_file(repl *r, const char *path) {
  rasp_error err = {0};
  char *text;
  if (!rasp_read_program(r->ctx, path, &text, &err)) {
    report(r, &err);
    return;
  }
  if (declares_task(path, text)) {
    pathstar_load(r, path, text);
    return;
  }
  free(text);
  rasp_interrupt(r->ctx, 0);
  running = r->ctx;
  int ok = rasp_load_file(r->ctx, path, &text, &err);
  running = NULL;
  if (!ok) {
    report(r, &err);
    return;
  }
  if (text) remember(r, text);
  free(text);
}

/* Runs a colon command (text starts after the ':', with no trailing white
** space).  Returns 1 when the REPL is to end. */
static int run_command(repl *r, const char *text) {
  char cmd[32];
  int len = 0;
  const char *p = text;
  while (*p && *p != ' ' && *p != '\t' && len < 31) cmd[len++] = *p++;
  cmd[len] = '\0';
  while (*p == ' ' || *p == '\t') p++;
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "h") == 0 || strcmp(cmd, "?") == 0) {
    fputs(help_text, stdout);
  } else if (strcmp(cmd, "quit") == 0 || strcmp(cmd, "q") == 0 || strcmp(cmd, "exit") == 0) {
    return 1;
  } else if (strcmp(cmd, "example") == 0) {
    char **syms;
    int n = raspC_split(p, &syms);
    if (n == 0) {
      show_example(r);
      raspC_free_strings(syms, n);
    } else if (r->pathstar) {
      raspC_free_strings(syms, n);
      pathstar_example(r, p);
    } else if (!repl_reset(r, syms, n)) {
      raspC_free_strings(syms, n);
    }
  } else if (strcmp(cmd, "layers") == 0) {
    if (*p) show_layers(r, p);
    else complain(r, 2, "usage: :layers EXPR\n");
  } else if (strcmp(cmd, "draw") == 0) {
    if (*p) draw_expr(r, p);
    else complain(r, 2, "usage: :draw [-o FILE] EXPR\n");
  } else if (strcmp(cmd, "load") == 0) {
    if (*p) load_file(r, p);
    else complain(r, 2, "usage: :load FILE\n");
  } else if (strcmp(cmd, "doc") == 0) {
    if (*p) {
      char *d = rasp_describe(r->ctx, p);
      if (!d) complain(r, 1, ":doc: unknown name '%s'\n", p);
      else printf("%s\n", d);
      raspM_free(d);
    } else {
      complain(r, 2, "usage: :doc NAME\n");
    }
  } else if (strcmp(cmd, "ir") == 0) {
    show_ir(r, p);
  } else if (strcmp(cmd, "symbols") == 0) {
    if (strcmp(p, "on") == 0) r->symbols = 1;
    else if (strcmp(p, "off") == 0) r->symbols = 0;
    else if (*p) {
      complain(r, 2, "usage: :symbols [on|off], not '%s'\n", p);
      return 0;
    }
    printf("symbols %s\n", r->symbols ? "on" : "off");
  } else {
    complain(r, 2, "unknown command ':%s' (try :help)\n", cmd);
  }
  return 0;
}

/* Runs a complete entry of code. */
static void run_code(repl *r, const char *text) {
  rasp_error err = {0};
  rasp_repl_value v;
  int ok = repl_entry(r, text, &v, &err);
  if (!ok) {
    report(r, &err);
    return;
  }
  /* A sequence or selector expression only traces nodes: replaying it for
  ** a new example would change nothing but could fail there (a symbol the
  ** new example lacks), so only other entries (assignments among them,
  ** which also show what they bound) are kept. */
  if (v.node < 0 || v.assigned) remember(r, text);
  if (v.shown) {
    printf("%s\n", v.shown);
    free(v.shown);
  } else if (v.node >= 0) {
    show_node(r, v.node, v.is_sel);
  }
}

/* Whether line, unindented after a block, starts the next entry (as in a
** file) instead of being a syntax error: it must not continue the block
** (else, elif, ...) and the block must be complete without it. */
static int ends_block(repl *r, const char *line) {
  static const char *const continuations[] = {"else", "elif", "except", "finally", NULL};
  if (!*line || isspace((unsigned char)*line) || *line == '#' || *line == ')' ||
      *line == ']' || *line == '}')
    return 0;
  for (int i = 0; continuations[i]; i++) {
    size_t l = strlen(continuations[i]);
    if (strncmp(line, continuations[i], l) == 0 && !isalnum((unsigned char)line[l]) &&
        line[l] != '_')
      return 0;
  }
  r->buf = raspM_realloc(r->buf, r->blen + 2);
  r->buf[r->blen] = '\n'; /* the empty line that would end the block */
  r->buf[r->blen + 1] = '\0';
  int done = !raspP_incomplete(r->buf);
  r->buf[r->blen] = '\0';
  return done;
}

/* Adds one line (without its newline) to the entry in progress and runs
** the entry once it is complete: a colon command at once, code when the
** parser no longer wants more (a block ends with an empty line or with an
** unindented line that starts the next entry).  Returns
** 1 when the REPL is to end. */
static int feed(repl *r, const char *line) {
  if (r->blen > 0 && ends_block(r, line)) { /* as if an empty line came first */
    run_code(r, r->buf);
    r->blen = 0;
  }
  if (r->blen == 0) {
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '\0') return 0;
    if (*p == ':') {
      size_t l = strlen(p);
      while (l > 1 && isspace((unsigned char)p[l - 1])) l--;
      char *cmd = raspM_strndup(p + 1, l - 1);
      int quit = run_command(r, cmd);
      raspM_free(cmd);
      return quit;
    }
  }
  if (r->blen == 0)
    while (*line == ' ' || *line == '\t') line++; /* a stray indent before a lone entry */
  size_t l = strlen(line);
  r->buf = raspM_realloc(r->buf, r->blen + l + 2);
  memcpy(r->buf + r->blen, line, l);
  r->blen += l;
  r->buf[r->blen++] = '\n';
  r->buf[r->blen] = '\0';
  if (raspP_incomplete(r->buf)) return 0;
  run_code(r, r->buf);
  r->blen = 0;
  return 0;
}

/* ---------------------------------------------------------- completion */

typedef struct names { char **v; int n, cap; } names;

static void collect(void *user, const char *name) {
  names *ns = user;
  RASP_GROW(ns->v, ns->cap, ns->n + 1);
  ns->v[ns->n++] = strdup(name);
}

static char *complete_name(const char *text, int state) {
  static names ns;
  static int next;
  if (state == 0) {
    for (int i = next; i < ns.n; i++) free(ns.v[i]);
    ns.n = 0;
    next = 0;
    rasp_complete(completion_repl->ctx, text, collect, &ns);
  }
  if (next < ns.n) return ns.v[next++]; /* readline frees it */
  raspM_free(ns.v);
  memset(&ns, 0, sizeof ns);
  next = 0;
  return NULL;
}

static char *complete_command(const char *text, int state) {
  static const char *const cmds[] = {":example", ":layers", ":draw", ":load", ":doc", ":ir",
                                     ":symbols", ":help", ":quit", NULL};
  static int next;
  if (state == 0) next = 0;
  size_t len = strlen(text);
  while (cmds[next])
    if (strncmp(cmds[next++], text, len) == 0) return strdup(cmds[next - 1]);
  return NULL;
}

static char **complete(const char *text, int start, int end) {
  (void)end;
  rl_attempted_completion_over = 1;
  rl_completion_append_character = '\0'; /* names are usually followed by '(' or '.' */
  if (start == 0 && text[0] == ':') {
    rl_completion_append_character = ' ';
    return rl_completion_matches(text, complete_command);
  }
  return rl_completion_matches(text, complete_name);
}

/* ------------------------------------------------------------- signals */

/* SIGINT, SIGTERM and SIGHUP only set got_signal (and ask a running entry
** to stop); the loops below act on it, so every way out passes through the
** same clean-up, history saving included. */
static void on_signal(int sig) {
  got_signal = sig;
  rasp_ctx *ctx = running;
  if (ctx) rasp_interrupt(ctx, 1);
}

static const int handled[] = {SIGINT, SIGTERM, SIGHUP};
#define NHANDLED ((int)(sizeof handled / sizeof handled[0]))

/* No SA_RESTART: a read or select waiting for input returns with EINTR.  A
** signal ignored when the REPL started (nohup, a background job) stays
** ignored. */
static void catch_signals(struct sigaction *old) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < NHANDLED; i++) {
    sigaction(handled[i], NULL, &old[i]);
    if (old[i].sa_handler != SIG_IGN) sigaction(handled[i], &sa, NULL);
  }
}

static void restore_signals(const struct sigaction *old) {
  for (int i = 0; i < NHANDLED; i++) sigaction(handled[i], &old[i], NULL);
}

/* ---------------------------------------------------------------- input */

static char *cb_line;
static int cb_done;

static void on_line(char *line) {
  cb_line = line;
  cb_done = 1;
  rl_callback_handler_remove(); /* the entry runs with the terminal as it was */
}

/* Reads a line with Readline's callback interface, so that a signal can end
** the wait: the signals stay blocked except inside pselect, so one that
** arrives between the check and the wait is not lost.  Returns 1 and the
** line (malloc'd), 0 at end of input, -1 on a signal (got_signal). */
static int read_tty_line(const char *prompt, char **out) {
  sigset_t block, orig;
  sigemptyset(&block);
  for (int i = 0; i < NHANDLED; i++) sigaddset(&block, handled[i]);
  sigprocmask(SIG_BLOCK, &block, &orig);
  cb_line = NULL;
  cb_done = 0;
  rl_callback_handler_install(prompt, on_line);
  int fd = fileno(rl_instream), status = 0;
  while (!cb_done) {
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(fd, &fds);
    int rc = got_signal ? -1 : pselect(fd + 1, &fds, NULL, NULL, NULL, &orig);
    if (got_signal) { /* drop the half-typed line and its editing state */
      rl_point = rl_end;
      rl_redisplay();
      rl_free_line_state();
      rl_callback_sigcleanup();
      rl_callback_handler_remove();
      using_history();
      status = -1;
      break;
    }
    if (rc < 0 && errno != EINTR) {
      rl_callback_handler_remove();
      break;
    }
    if (rc > 0) rl_callback_read_char();
  }
  sigprocmask(SIG_SETMASK, &orig, NULL);
  if (status < 0) return -1;
  *out = cb_line;
  return cb_line != NULL;
}

/* Piped input is read with read(2) after pselect, like the terminal, so that
** a signal ends the wait (stdio's getline would sleep in read through it). */
typedef struct pipe_in {
  char *buf;
  size_t start, len, cap; /* the unread bytes are buf[start..len) */
  int eof;
} pipe_in;

/* A line from a pipe or file, without its newline (valid until the next
** call).  Same returns as read_tty_line. */
static int read_pipe_line(pipe_in *in, char **out) {
  sigset_t block, orig;
  sigemptyset(&block);
  for (int i = 0; i < NHANDLED; i++) sigaddset(&block, handled[i]);
  sigprocmask(SIG_BLOCK, &block, &orig);
  int status;
  for (;;) {
    if (got_signal) {
      status = -1;
      break;
    }
    char *nl = in->len > in->start ? memchr(in->buf + in->start, '\n', in->len - in->start)
                                   : NULL;
    if (nl || (in->eof && in->len > in->start)) { /* the last line may lack '\n' */
      size_t end = nl ? (size_t)(nl - in->buf) : in->len; /* cap > len: room for '\0' */
      in->buf[end] = '\0';
      if (end > in->start && in->buf[end - 1] == '\r') in->buf[end - 1] = '\0';
      *out = in->buf + in->start;
      in->start = nl ? end + 1 : end;
      status = 1;
      break;
    }
    if (in->eof) {
      status = 0;
      break;
    }
    if (in->start) { /* keep the partial line, drop what was read */
      memmove(in->buf, in->buf + in->start, in->len - in->start);
      in->len -= in->start;
      in->start = 0;
    }
    if (in->len + 1 >= in->cap) {
      in->cap = in->cap ? in->cap * 2 : 4096;
      in->buf = raspM_realloc(in->buf, in->cap);
    }
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(0, &fds);
    if (pselect(1, &fds, NULL, NULL, NULL, &orig) < 0) {
      if (errno != EINTR) in->eof = 1;
      continue;
    }
    ssize_t got = read(0, in->buf + in->len, in->cap - in->len - 1);
    if (got > 0) in->len += (size_t)got;
    else if (got == 0 || errno != EINTR) in->eof = 1;
  }
  sigprocmask(SIG_SETMASK, &orig, NULL);
  return status;
}

/* Called on every way out of the REPL: the history, one entry a line as
** readline writes it, replaced whole. */
static void save_history(const char *path) {
  if (!*path) return;
  rasp_afile af;
  rasp_error err = {0};
  if (!raspR_atomic_open(&af, path, &err)) return; /* best effort, as before */
  HIST_ENTRY **list = history_list();
  for (int i = 0; list && list[i]; i++) fprintf(af.f, "%s\n", list[i]->line);
  if (ferror(af.f)) raspR_atomic_abort(&af);
  else raspR_atomic_commit(&af, &err);
}

/* The session, once the options are in r. */
static int repl_main(repl *rp) {
  repl r = *rp;
  const char *env = getenv("RASP_ALLOW_FFI");
  if (env && strcmp(env, "1") == 0) r.access.allow_ffi = 1;
  r.access.root = ".";
  char **ex;
  int n = raspC_split("h e l l o", &ex);
  if (!repl_reset(&r, ex, n)) {
    raspC_free_strings(ex, n);
    return 1;
  }
  completion_repl = &r;
  rl_attempted_completion_function = complete;
  rl_basic_word_break_characters = " \t\n\"\\'`@$><=;|&{(,[+-*/%";
  rl_catch_signals = 0; /* ours: see on_signal */
  char histfile[4096] = "";
  const char *home = getenv("HOME");
  if (home) {
    snprintf(histfile, sizeof histfile, "%s/.rasp_history", home);
    read_history(histfile);
  }
  int interactive = isatty(0);
  if (interactive)
    printf("rasp %s -- RASP REPL.  :help for help, Ctrl-D to quit.\n"
           "running example: h e l l o\n"
           "select() is causal by default (keys at or before the query), as in the paper's\n"
           "library; causal=False selects every key, as Weiss's RASP does.\n",
           RASP_VERSION);
  fflush(stdout);
  struct sigaction old[NHANDLED];
  got_signal = 0;
  catch_signals(old);
  char *line = NULL; /* a line from Readline, or one in piped.buf */
  pipe_in piped = {0};
  int status = 0;
  for (;;) {
    int got;
    if (interactive) {
      free(line);
      line = NULL;
      got = read_tty_line(r.blen ? "... " : ">>> ", &line);
    } else {
      got = read_pipe_line(&piped, &line);
    }
    if (got < 0 && got_signal == SIGINT && interactive) { /* cancel, like Python */
      got_signal = 0;
      r.blen = 0;
      printf("\nKeyboardInterrupt\n");
      fflush(stdout);
      continue;
    }
    if (got < 0) { /* SIGTERM, SIGHUP, or SIGINT on piped input: leave */
      status = 128 + got_signal;
      break;
    }
    if (got == 0) {
      if (r.blen) run_code(&r, r.buf); /* the last block needs no empty line */
      if (interactive) printf("\n");
      break;
    }
    if (*line) add_history(line);
    int quit = feed(&r, line);
    fflush(stdout);
    if (got_signal == SIGINT && interactive) got_signal = 0; /* it stopped the entry */
    if (quit) break;
    if (got_signal) {
      status = 128 + got_signal;
      break;
    }
  }
  restore_signals(old);
  fflush(stdout);
  /* a script piped in fails as `rasp run` would; at a terminal the errors
  ** were seen as they came */
  if (!interactive && status == 0) status = r.failed;
  if (interactive) free(line);
  raspM_free(piped.buf);
  save_history(histfile);
  raspM_free(r.buf);
  for (int i = 0; i < r.nentries; i++) raspM_free(r.entries[i]);
  raspM_free(r.entries);
  raspC_free_strings(r.example, r.n);
  raspM_free(r.tokens);
  free_context(&r);
  if (r.prog.path) raspK_program_free(&r.prog);
  free(r.prog_text);
  return status;
}

int rasp_cli_repl(int argc, char **argv) {
  repl r;
  memset(&r, 0, sizeof r);
  r.symbols = 1;
  int status = -1;
  raspC_arg *args;
  int n = raspC_parse_program(RASPC_REPL, "repl", argc, argv, &r.access, &args);
  if (n < 0) raspC_access_free(&r.access);
  if (n == RASPC_DONE) return 0;
  if (n == RASPC_BAD) return 2;
  for (int k = 0; k < n && status < 0; k++) {
    if (args[k].id == RASPC_O_STDLIB) r.stdlib = args[k].val;
    else if (args[k].id == RASPC_OPERAND) {
      fprintf(stderr, "rasp repl: unexpected argument '%s'\n", args[k].val);
      status = 2;
    }
  }
  raspM_free(args);
  if (status < 0) status = repl_main(&r);
  raspC_access_free(&r.access);
  return status;
}
