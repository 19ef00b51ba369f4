/*
** cli_run.c -- `rasp run`, `rasp trace` and `rasp FILE`, plus the helpers
** the other subcommands share (input splitting, vocabularies, atomic files,
** and --allow-ffi / --allow-include, which every command that runs a
** program takes: programs are untrusted unless the user says otherwise).
*/
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "rmodel.h"
#include "rmem.h"

int raspC_split(const char *text, char ***out) {
  int n = 0, cap = 0;
  char **v = NULL;
  const char *p = text;
  for (;;) {
    while (*p && isspace((unsigned char)*p)) p++;
    if (!*p) break;
    const char *s = p;
    while (*p && !isspace((unsigned char)*p)) p++;
    RASP_GROW(v, cap, n + 1);
    v[n++] = raspM_strndup(s, (size_t)(p - s));
  }
  *out = v;
  return n;
}

void raspC_free_strings(char **strs, int n) {
  for (int i = 0; i < n; i++) raspM_free(strs[i]);
  raspM_free(strs);
}

/* A symbol that is a decimal integer sorts numerically before the others. */
static int as_integer(const char *s, long long *v) {
  char *end;
  errno = 0;
  *v = strtoll(s, &end, 10);
  return *s && !*end && errno == 0;
}

static int symbol_order(const void *a, const void *b) {
  const char *x = *(char *const *)a, *y = *(char *const *)b;
  long long vx, vy;
  int nx = as_integer(x, &vx), ny = as_integer(y, &vy);
  if (nx && ny) return vx < vy ? -1 : vx > vy;
  if (nx != ny) return nx ? -1 : 1;
  return strcmp(x, y);
}

int raspC_default_vocab(char **symbols, int n, char ***out) {
  char **v = raspM_alloc(sizeof(char *) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) v[i] = symbols[i];
  qsort(v, (size_t)n, sizeof *v, symbol_order);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (m == 0 || strcmp(v[m - 1], v[i]) != 0) v[m++] = v[i];
  for (int i = 0; i < m; i++) v[i] = raspM_strdup(v[i]);
  *out = v;
  return m;
}

static size_t hash_bytes(const char *s, size_t len) {
  return (size_t)raspN_fnv1a(RASPN_FNV0, s, len);
}

/* Text inside a JSON string: quotes, backslashes and controls escaped. */
void raspC_json_fputs(const char *s, FILE *f) {
  for (const char *p = s; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if ((unsigned char)*p < 0x20) fprintf(f, "\\u%04x", (unsigned char)*p);
    else fputc(*p, f);
  }
}

/* Duplicates are found with an open hash set of the lines read so far (the
** indices into v, -1 free), so a vocabulary of n lines takes O(n), not the
** O(n^2) of comparing each line with all earlier ones. */
int raspC_read_vocab(const char *path, char ***out, rasp_error *err) {
  rasp_source *src = raspR_source_file(path, err);
  if (!src) return -1;
  int n = 0, cap = 0;
  char **v = NULL;
  size_t hcap = 0;
  int *hash = NULL;
  const char *p = src->text, *end = src->text + src->len;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    const char *q = eol;
    if (q > p && q[-1] == '\r') q--;
    size_t len = (size_t)(q - p);
    if (len) {
      if ((size_t)n * 2 >= hcap) {
        raspM_free(hash);
        hcap = hcap ? hcap * 2 : 256;
        hash = raspM_alloc(hcap * sizeof *hash);
        for (size_t j = 0; j < hcap; j++) hash[j] = -1;
        for (int i = 0; i < n; i++) {
          size_t j = hash_bytes(v[i], strlen(v[i])) & (hcap - 1);
          while (hash[j] >= 0) j = (j + 1) & (hcap - 1);
          hash[j] = i;
        }
      }
      size_t j = hash_bytes(p, len) & (hcap - 1);
      for (; hash[j] >= 0; j = (j + 1) & (hcap - 1))
        if (strlen(v[hash[j]]) == len && memcmp(v[hash[j]], p, len) == 0) {
          raspR_setnopos(err, "vocabulary file '%s': symbol '%.*s' appears twice", path,
                         (int)len, p);
          raspC_free_strings(v, n);
          raspM_free(hash);
          raspR_source_free(src);
          return -1;
        }
      RASP_GROW(v, cap, n + 1);
      hash[j] = n;
      v[n++] = raspM_strndup(p, len);
    }
    p = eol + 1;
  }
  raspM_free(hash);
  raspR_source_free(src);
  *out = v;
  return n;
}

int raspC_int_opt(const char *cmd, const char *opt, const char *text, long lo, long hi,
                  long *out) {
  char *end;
  errno = 0;
  long v = text ? strtol(text, &end, 10) : 0;
  if (!text || !*text || *end || errno || v < lo || v > hi) {
    fprintf(stderr, "rasp %s: %s: expected an integer in %ld..%ld, got '%s'\n", cmd, opt, lo,
            hi, text ? text : "");
    return 0;
  }
  *out = v;
  return 1;
}

const char raspC_access_help[] =
    "  --allow-ffi      let the program call C functions (cfunc): native code that\n"
    "                   can do anything you can, so only for programs you trust\n"
    "  --allow-include DIR  let include() read .rasp files under DIR as well as\n"
    "                   the program's own directory tree and the stdlib\n";

int raspC_access_opt(const char *cmd, int argc, char **argv, int *i, rasp_access *acc) {
  const char *a = argv[*i];
  if (strcmp(a, "--allow-ffi") == 0) {
    acc->allow_ffi = 1;
    return 1;
  }
  if (strcmp(a, "--allow-include") != 0) return 0;
  if (*i + 1 >= argc) {
    fprintf(stderr, "rasp %s: %s needs a value\n", cmd, a);
    return -1;
  }
  const char *dir = argv[++*i];
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "rasp %s: --allow-include: '%s' is not a directory\n", cmd, dir);
    return -1;
  }
  const char **dirs = raspM_realloc((void *)acc->include_dirs,
                                    sizeof(char *) * (size_t)(acc->ninclude_dirs + 1));
  dirs[acc->ninclude_dirs++] = dir;
  acc->include_dirs = dirs;
  return 1;
}

void raspC_access_free(rasp_access *acc) {
  raspM_free((void *)acc->include_dirs);
  acc->include_dirs = NULL;
  acc->ninclude_dirs = 0;
}

void raspC_print_values(rasp_ctx *ctx, rasp_eval *ev, int node, int b, int symbolic, FILE *out) {
  const rasp_elem *vals = raspE_value(ev, node, b);
  int n = rasp_ctx_length(ctx);
  char buf[256];
  for (int i = 0; i < n; i++) {
    if (symbolic) rasp_format_symbolic(ctx, vals[i], buf, sizeof buf);
    else raspI_elem_format(rasp_ctx_ir(ctx), vals[i], buf, sizeof buf);
    fprintf(out, "%s%s", i ? " " : "", buf);
  }
  fputc('\n', out);
}

/* ------------------------------------------------------------ rasp run */

typedef struct run_opts {
  const char *file, *input, *entry, *vocab_file, *stdlib;
  int symbols, from_stdin, explain;
  char **sets;
  int nsets;
  rasp_access access;
} run_opts;

static void run_usage(FILE *out, const char *cmd) {
  fprintf(out,
          "usage: rasp %s FILE [--input TEXT | --stdin] [options]\n"
          "  --input TEXT     the input: symbols separated by spaces\n"
          "  --stdin          read the input from standard input\n"
          "  --entry NAME     the function to trace (default main)\n"
          "  --symbols        print token-valued outputs as the symbols they stand for\n"
          "  --vocab FILE     vocabulary, one symbol per line (id = line number)\n"
          "  --set NAME=VAL   set a global before the program runs (integer,\n"
          "                   True/False, or a string)\n"
          "  --stdlib DIR     use another stdlib directory\n"
          "%s%s",
          cmd,
          strcmp(cmd, "trace") == 0
              ? "  --explain        also evaluate the input and print, per head, the kernels\n"
                "                   that evaluated it and for how many inputs\n"
              : "",
          raspC_access_help);
}

static int parse_run_opts(const char *cmd, int argc, char **argv, run_opts *o) {
  memset(o, 0, sizeof *o);
  o->entry = "main";
  o->sets = raspM_alloc(sizeof(char *) * (size_t)argc);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char **dst = NULL;
    int acc = raspC_access_opt(cmd, argc, argv, &i, &o->access);
    if (acc < 0) return 0;
    if (acc) continue;
    if (strcmp(a, "--input") == 0) dst = &o->input;
    else if (strcmp(a, "--entry") == 0) dst = &o->entry;
    else if (strcmp(a, "--vocab") == 0) dst = &o->vocab_file;
    else if (strcmp(a, "--stdlib") == 0) dst = &o->stdlib;
    else if (strcmp(a, "--symbols") == 0) { o->symbols = 1; continue; }
    else if (strcmp(a, "--stdin") == 0) { o->from_stdin = 1; continue; }
    else if (strcmp(a, "--explain") == 0 && strcmp(cmd, "trace") == 0) {
      o->explain = 1;
      continue;
    }
    else if (strcmp(a, "--set") == 0) {
      if (i + 1 >= argc || !strchr(argv[i + 1], '=')) {
        fprintf(stderr, "rasp %s: --set: expected NAME=VALUE, got '%s'\n", cmd,
                i + 1 < argc ? argv[i + 1] : "");
        return 0;
      }
      o->sets[o->nsets++] = argv[++i];
      continue;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      run_usage(stdout, cmd);
      exit(0);
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "rasp %s: unknown option '%s'\n", cmd, a);
      return 0;
    } else if (!o->file) {
      o->file = a;
      continue;
    } else {
      fprintf(stderr, "rasp %s: unexpected argument '%s'\n", cmd, a);
      return 0;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "rasp %s: %s needs a value\n", cmd, a);
      return 0;
    }
    *dst = argv[++i];
  }
  if (!o->file) {
    fprintf(stderr, "rasp %s: no program file given\n", cmd);
    return 0;
  }
  return 1;
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
  if (as_integer(val, &v)) rasp_set_int(ctx, name, v);
  else if (strcmp(val, "True") == 0) rasp_set_bool(ctx, name, 1);
  else if (strcmp(val, "False") == 0) rasp_set_bool(ctx, name, 0);
  else rasp_set_string(ctx, name, val);
}

/* A path-star program (programs/) reads the layout globals that only the
** verifier sets; `rasp run` stops at the first of them.  Say where to go. */
static void path_star_hint(const char *cmd, const char *file, const rasp_error *err) {
  static const char *const globals[] = {"arm_len", "degree", "num_symbols", "seq_len", "g_start",
                                        "q_start", "ans_start", "q_before_g", "markers",
                                        "edge_width", NULL};
  const char *prefix = "unknown name '";
  if (!err->pos.src || strncmp(err->msg, prefix, strlen(prefix)) != 0) return;
  const char *name = err->msg + strlen(prefix);
  for (int i = 0; globals[i]; i++) {
    size_t len = strlen(globals[i]);
    if (strncmp(name, globals[i], len) == 0 && name[len] == '\'' && !name[len + 1]) {
      fprintf(stderr, "rasp %s: '%s' is a layout global of path-star programs; to run one "
                      "on one input: rasp verify %s --input TEXT\n", cmd, globals[i], file);
      return;
    }
  }
}

/* Traces o->file for the input; on success *ctx_out and token ids are set. */
static int trace_input(const char *cmd, run_opts *o, rasp_ctx **ctx_out, int64_t **tokens_out) {
  rasp_error err = {0};
  char *stdin_text = NULL;
  const char *text = o->input;
  if (o->from_stdin) text = stdin_text = read_stdin();
  if (!text) {
    fprintf(stderr, "rasp %s: no input: give --input TEXT or --stdin\n", cmd);
    return 2;
  }
  char **syms;
  int n = raspC_split(text, &syms);
  raspM_free(stdin_text);
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
  if (!rasp_set_access(ctx, &o->access, &err)) {
    status = 2;
    goto fail;
  }
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
  if (!rasp_exec_file(ctx, o->file, &err)) {
    if (!err.pos.src) status = 2; /* unreadable file */
    goto fail;
  }
  if (!rasp_trace(ctx, o->entry, &err)) goto fail;
  raspC_free_strings(syms, n);
  raspC_free_strings(vocab, nvocab);
  *ctx_out = ctx;
  *tokens_out = tokens;
  return 0;
fail:
  raspR_print(&err, stderr);
  path_star_hint(cmd, o->file, &err);
fail_quiet:
  rasp_ctx_free(ctx);
  raspM_free(tokens);
  raspC_free_strings(syms, n);
  raspC_free_strings(vocab, nvocab);
  return status;
}

int rasp_cli_run(int argc, char **argv) {
  run_opts o;
  if (!parse_run_opts("run", argc, argv, &o)) {
    raspM_free(o.sets);
    raspC_access_free(&o.access);
    run_usage(stderr, "run");
    return 2;
  }
  rasp_ctx *ctx;
  int64_t *tokens;
  int status = trace_input("run", &o, &ctx, &tokens);
  raspM_free(o.sets);
  raspC_access_free(&o.access);
  if (status) return status;
  rasp_ir *ir = rasp_ctx_ir(ctx);
  rasp_eval *ev = raspE_new(ir);
  rasp_error err = {0};
  if (!raspE_run(ev, 1, tokens, &err)) {
    raspR_print(&err, stderr);
    status = 1;
  } else {
    for (int k = 0; k < ir->noutputs; k++) /* only token ids stand for symbols */
      raspC_print_values(ctx, ev, ir->outputs[k], 0,
                         o.symbols && (ir->nodes[ir->outputs[k]].flags & RASP_TOKEN_IDS), stdout);
  }
  raspE_free(ev);
  raspM_free(tokens);
  rasp_ctx_free(ctx);
  return status;
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

int rasp_cli_trace(int argc, char **argv) {
  run_opts o;
  if (!parse_run_opts("trace", argc, argv, &o)) {
    raspM_free(o.sets);
    raspC_access_free(&o.access);
    run_usage(stderr, "trace");
    return 2;
  }
  rasp_ctx *ctx;
  int64_t *tokens;
  int status = trace_input("trace", &o, &ctx, &tokens);
  raspM_free(o.sets);
  raspC_access_free(&o.access);
  if (status) return status;
  rasp_ir *ir = rasp_ctx_ir(ctx);
  raspI_dump(ir, stdout);
  rasp_layers layers;
  raspL_analyse(ir, NULL, 0, &layers);
  raspL_print(&layers, stdout);
  raspL_free(&layers);
  if (o.explain) status = explain(ir, tokens);
  raspM_free(tokens);
  rasp_ctx_free(ctx);
  return status;
}

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
    status = err.pos.src ? 1 : 2;
  }
  rasp_ctx_free(ctx);
  raspC_access_free(&access);
  return status;
}
