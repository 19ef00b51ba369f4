/*
** cli_repl.c -- the interactive REPL, on GNU Readline.
**
** The REPL traces for one running example (default "h e l l o"): every
** sequence expression is evaluated on it at once and shown, selectors as a
** grid.  Because a trace is tied to an input length, changing the example
** replays the session's successful entries in a fresh context of the new
** length; so variables keep their meaning for the new example.
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
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "cli.h"
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
} repl;

static repl *completion_repl;

static int repl_entry_quiet(repl *r, const char *text, rasp_error *err) {
  int node, is_sel;
  char *shown;
  int ok = rasp_repl_entry(r->ctx, text, &node, &is_sel, &shown, err);
  free(shown);
  return ok;
}

/* Makes a context for the example and replays the entries. */
static int repl_reset(repl *r, char **example, int n) {
  rasp_error err = {0};
  rasp_ctx *ctx = rasp_ctx_new(n, NULL, &err);
  if (!ctx || !rasp_set_access(ctx, &r->access, &err)) {
    raspR_print(&err, stderr);
    rasp_ctx_free(ctx);
    return 0;
  }
  char **vocab;
  int nvocab = raspC_default_vocab(example, n, &vocab);
  int ok = rasp_set_vocab(ctx, (const char *const *)vocab, nvocab, &err) &&
           rasp_load_stdlib(ctx, r->stdlib, &err);
  if (!ok) {
    raspR_print(&err, stderr);
    raspC_free_strings(vocab, nvocab);
    rasp_ctx_free(ctx);
    return 0;
  }
  int64_t *tokens = raspM_alloc(sizeof(int64_t) * (size_t)n);
  for (int i = 0; i < n; i++) tokens[i] = rasp_vocab_id(ctx, example[i]);
  raspC_free_strings(vocab, nvocab);
  rasp_ctx *old = r->ctx;
  r->ctx = ctx;
  for (int i = 0; i < r->nentries; i++) {
    err.set = 0;
    if (!repl_entry_quiet(r, r->entries[i], &err)) {
      fprintf(stderr, "(replaying an earlier entry for the new example failed)\n");
      raspR_print(&err, stderr);
    }
  }
  rasp_ctx_free(old);
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
    raspR_print(&err, stderr);
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
    raspR_print(&err, stderr);
  } else if (is_sel) {
    show_selector(r, ev, node);
  } else {
    raspC_print_values(r->ctx, ev, node, 0, 0, stdout);
  }
  raspE_free(ev);
  ir->outputs = saved;
  ir->noutputs = nsaved;
}

static void show_layers(repl *r, const char *expr) {
  rasp_error err = {0};
  int node, is_sel;
  char *shown;
  if (!rasp_repl_entry(r->ctx, expr, &node, &is_sel, &shown, &err)) {
    raspR_print(&err, stderr);
    return;
  }
  free(shown);
  if (node < 0 || is_sel) {
    printf("layers apply to a sequence expression\n");
    return;
  }
  rasp_layers layers;
  raspL_analyse(rasp_ctx_ir(r->ctx), &node, 1, &layers);
  raspL_print(&layers, stdout);
  raspL_free(&layers);
}

static const char *help_text =
    "Enter statements or expressions in RASP (a Python subset).  A sequence\n"
    "expression shows its value on the running example; a selector shows as a\n"
    "grid (rows: queries, columns: keys).  Blocks continue with '...' until an\n"
    "empty line.\n"
    "\n"
    "  :example SYMBOLS   set the running example (default: h e l l o)\n"
    "  :layers EXPR       transformer layers and heads the expression needs\n"
    "  :load FILE         run a file in this session\n"
    "  :doc NAME          describe a function or value\n"
    "  :ir                show the traced IR so far\n"
    "  :help              this text\n"
    "  :quit              leave (also Ctrl-D)\n"
    "\n"
    "Input tokens are `tokens`; d maps symbols to ids; try\n"
    "  reverse = aggregate(select(indices(tokens), len(tokens) - indices(tokens) - 1, equals), tokens)\n";

static void remember(repl *r, const char *text) {
  RASP_GROW(r->entries, r->cap, r->nentries + 1);
  r->entries[r->nentries++] = raspM_strdup(text);
}

static void run_entry(repl *r, const char *text) {
  while (*text == ' ' || *text == '\t') text++;
  if (text[0] == ':') {
    char cmd[32];
    int len = 0;
    const char *p = text + 1;
    while (*p && *p != ' ' && len < 31) cmd[len++] = *p++;
    cmd[len] = '\0';
    while (*p == ' ') p++;
    if (strcmp(cmd, "help") == 0) fputs(help_text, stdout);
    else if (strcmp(cmd, "example") == 0) {
      char **syms;
      int n = raspC_split(p, &syms);
      if (n == 0) {
        printf("example: ");
        for (int i = 0; i < r->n; i++) printf("%s ", r->example[i]);
        printf("\n");
        raspC_free_strings(syms, n);
      } else if (!repl_reset(r, syms, n)) {
        raspC_free_strings(syms, n);
      }
    } else if (strcmp(cmd, "layers") == 0) show_layers(r, p);
    else if (strcmp(cmd, "load") == 0) {
      rasp_error err = {0};
      char buf[4200];
      snprintf(buf, sizeof buf, "%s", p);
      if (rasp_exec_file(r->ctx, buf, &err)) {
        rasp_source *src = raspR_source_file(buf, &err);
        if (src) {
          remember(r, src->text);
          raspR_source_free(src);
        }
      } else {
        raspR_print(&err, stderr);
      }
    } else if (strcmp(cmd, "doc") == 0) {
      char *d = rasp_describe(r->ctx, p);
      printf("%s\n", d);
      raspM_free(d);
    } else if (strcmp(cmd, "ir") == 0) raspI_dump(rasp_ctx_ir(r->ctx), stdout);
    else if (strcmp(cmd, "quit") == 0 || strcmp(cmd, "q") == 0) exit(0);
    else printf("unknown command ':%s' (try :help)\n", cmd);
    return;
  }
  rasp_error err = {0};
  int node, is_sel;
  char *shown;
  if (!rasp_repl_entry(r->ctx, text, &node, &is_sel, &shown, &err)) {
    raspR_print(&err, stderr);
    return;
  }
  remember(r, text);
  if (shown) {
    printf("%s\n", shown);
    free(shown);
  } else if (node >= 0) {
    show_node(r, node, is_sel);
  }
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

static char **complete(const char *text, int start, int end) {
  (void)start;
  (void)end;
  rl_attempted_completion_over = 1;
  rl_completion_append_character = '\0'; /* names are usually followed by '(' or '.' */
  return rl_completion_matches(text, complete_name);
}

/* The history, one entry a line as readline writes it, replaced whole. */
static void save_history(const char *path) {
  rasp_afile af;
  rasp_error err = {0};
  if (raspR_atomic_open(&af, path, &err)) return; /* best effort, as before */
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
  char histfile[4096] = "";
  const char *home = getenv("HOME");
  if (home) {
    snprintf(histfile, sizeof histfile, "%s/.rasp_history", home);
    read_history(histfile);
  }
  int interactive = isatty(0);
  if (interactive)
    printf("rasp %s -- RASP REPL.  :help for help, Ctrl-D to quit.\n"
           "running example: h e l l o\n", RASP_VERSION);
  char *buf = NULL;
  size_t blen = 0;
  for (;;) {
    char *line = readline(blen ? "... " : ">>> ");
    if (!line) break;
    if (*line) add_history(line);
    size_t l = strlen(line);
    buf = raspM_realloc(buf, blen + l + 2);
    memcpy(buf + blen, line, l);
    blen += l;
    buf[blen++] = '\n';
    buf[blen] = '\0';
    int blank = l == 0;
    free(line);
    if (buf[0] != ':' && raspP_incomplete(buf) && !(blank && blen > 1 && buf[0] != '\n' &&
                                                     raspP_incomplete(buf) == 0))
      continue;
    if (blen > 1 || buf[0] != '\n') run_entry(&r, buf);
    blen = 0;
    buf[0] = '\0';
    fflush(stdout);
  }
  if (blen) run_entry(&r, buf);
  raspM_free(buf);
  if (interactive) printf("\n");
  if (*histfile) save_history(histfile);
  for (int i = 0; i < r.nentries; i++) raspM_free(r.entries[i]);
  raspM_free(r.entries);
  raspC_free_strings(r.example, r.n);
  raspM_free(r.tokens);
  rasp_ctx_free(r.ctx);
  return 0;
}

int rasp_cli_repl(int argc, char **argv) {
  repl r;
  memset(&r, 0, sizeof r);
  int status = 0;
  for (int i = 1; i < argc && !status; i++) {
    int acc = raspC_access_opt("repl", argc, argv, &i, &r.access);
    if (acc < 0) status = 2;
    else if (acc) continue;
    else if (strcmp(argv[i], "--stdlib") == 0 && i + 1 < argc) r.stdlib = argv[++i];
    else {
      fprintf(stderr, "rasp repl: unknown option '%s'\n", argv[i]);
      status = 2;
    }
  }
  if (!status) status = repl_main(&r);
  raspC_access_free(&r.access);
  return status;
}
