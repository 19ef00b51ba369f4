/*
** cli_common.c -- what the `rasp` commands share.
**
** Every command that runs a program takes --allow-ffi and --allow-include
** DIR (programs are untrusted unless the user says otherwise), splits
** input text into symbols, reads vocabularies and writes JSON strings; the
** helpers for those are here, once.  So is what `rasp verify`, `layers`
** and `draw` have in common: their one options structure (raspC_vopts,
** parsed from cli_opts.c's table), ranges such as "2..5", the heads-per-
** layer text, one path-star --input (its tokens or a `rasp gen` JSON line),
** plain programs' vocabularies and traces, and the compiled model's
** schedule that layers, draw, trace and the REPL print.
**
** Like every command, these print their own messages ("rasp CMD: ...")
** when they fail: a failure here ends the command.
*/
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "rmem.h"
#include "rmodel.h"
#include "rparse.h"
#include "rverify.h"

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
int raspC_as_integer(const char *s, long long *v) {
  char *end;
  errno = 0;
  *v = strtoll(s, &end, 10);
  return *s && !*end && errno == 0;
}

static int symbol_order(const void *a, const void *b) {
  const char *x = *(char *const *)a, *y = *(char *const *)b;
  long long vx, vy;
  int nx = raspC_as_integer(x, &vx), ny = raspC_as_integer(y, &vy);
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
          raspR_setnoposc(err, RASP_E_USAGE, "vocabulary file '%s': symbol '%.*s' appears twice", path,
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

/* DIR for --allow-include: an existing directory, added to acc's list. */
static int add_include(const char *cmd, const char *dir, rasp_access *acc) {
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

/* --allow-ffi and --allow-include DIR as raspC_parse gives them: 1 handled,
** 0 not one of them, -1 a bad value (message printed). */
static int access_arg(const char *cmd, const raspC_arg *a, rasp_access *acc) {
  if (a->id == RASPC_O_ALLOW_FFI) {
    acc->allow_ffi = 1;
    return 1;
  }
  return a->id == RASPC_O_ALLOW_INCLUDE ? add_include(cmd, a->val, acc) : 0;
}

int raspC_parse_program(unsigned cmd, const char *name, int argc, char **argv, rasp_access *acc,
                        raspC_arg **args) {
  int n = raspC_parse(cmd, argc, argv, args), kept = 0;
  for (int k = 0; k < n; k++) {
    int r = access_arg(name, &(*args)[k], acc);
    if (r < 0) {
      raspM_free(*args);
      return RASPC_BAD;
    }
    if (!r) (*args)[kept++] = (*args)[k];
  }
  return n < 0 ? n : kept;
}

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
  return add_include(cmd, argv[++*i], acc);
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

/* ------------------------------------ the options of verify, layers, draw */

/* "2..5", "3", or "2,3,5" */
int raspC_range(const char *cmd, const char *opt, const char *text, long lo, long hi,
                int **out, int *count) {
  int cap = 0;
  *count = 0;
  *out = NULL;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", text);
  char *save = NULL;
  for (char *part = strtok_r(buf, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
    char *dots = strstr(part, "..");
    long a, b;
    if (dots) {
      *dots = '\0';
      if (!raspC_int_opt(cmd, opt, part, lo, hi, &a) || !raspC_int_opt(cmd, opt, dots + 2, lo, hi, &b))
        goto bad;
      if (b < a) {
        fprintf(stderr, "rasp %s: %s: empty range '%s'\n", cmd, opt, text);
        goto bad;
      }
    } else {
      if (!raspC_int_opt(cmd, opt, part, lo, hi, &a)) goto bad;
      b = a;
    }
    if (b - a > 10000) {
      fprintf(stderr, "rasp %s: %s: range '%s' is too long\n", cmd, opt, text);
      goto bad;
    }
    for (long v = a; v <= b; v++) {
      RASP_GROW(*out, cap, *count + 1);
      (*out)[(*count)++] = (int)v;
    }
  }
  if (*count == 0) {
    fprintf(stderr, "rasp %s: %s: expected a value or a range like 2..5, got '%s'\n", cmd, opt, text);
    goto bad;
  }
  return 1;
bad:
  raspM_free(*out);
  *out = NULL;
  return 0;
}

/* Options into o for command cmd (name its name): 1 parsed, 0 after --help
** or --version, -1 bad usage (message printed). */
int raspC_vopts_parse(unsigned cmd, const char *name, int argc, char **argv,
                      raspC_vopts *o) {
  raspC_arg *args;
  int n = raspC_parse_program(cmd, name, argc, argv, &o->access, &args), ok = 1;
  if (n == RASPC_DONE) return 0;
  if (n == RASPC_BAD) return -1;
  for (int k = 0; k < n && ok; k++) {
    const raspC_arg *a = &args[k];
    const char *opt = a->name, *val = a->val;
    switch (a->id) {
    case RASPC_OPERAND: o->programs[o->nprograms++] = val; break;
    case RASPC_O_JSON: o->json = 1; break;
    case RASPC_O_EXHAUSTIVE: o->exhaustive = 1; break;
    case RASPC_O_QUIET: o->quiet = 1; break;
    case RASPC_O_NO_SHRINK: o->no_shrink = 1; break;
    case RASPC_O_STRICT: o->strict = 1; break;
    case RASPC_O_INTERPRET_CHECK: o->interpret_check = 1; break;
    case RASPC_O_SWEEP: o->sweep = 1; break;
    case RASPC_O_VERBOSE: o->verbose = 1; break;
    case RASPC_O_D:
      raspM_free(o->Ds);
      ok = raspC_range(name, opt, val, 1, 1000000, &o->Ds, &o->nD);
      o->sized = opt;
      break;
    case RASPC_O_M:
      raspM_free(o->Ms);
      ok = raspC_range(name, opt, val, 2, 1000000, &o->Ms, &o->nM);
      o->sized = opt;
      break;
    case RASPC_O_V:
      ok = raspC_int_opt(name, opt, val, 2, 1 << 30, &o->V);
      o->sized = opt;
      break;
    case RASPC_O_GRAPHS: ok = raspC_int_opt(name, opt, val, 1, 1L << 40, &o->graphs); break;
    case RASPC_O_JOBS: ok = raspC_int_opt(name, opt, val, 1, 1024, &o->jobs); break;
    case RASPC_O_CAP: ok = raspC_int_opt(name, opt, val, 1, 1L << 40, &o->cap); break;
    case RASPC_O_SEED: {
      long sd;
      ok = raspC_int_opt(name, opt, val, 0, 0x7fffffffffffffffL, &sd);
      o->seed = (unsigned long long)sd;
      break;
    }
    case RASPC_O_STDLIB: o->stdlib = val; break;
    case RASPC_O_OUT: o->out_file = val; break;
    case RASPC_O_FORMAT: o->format = val; break;
    case RASPC_O_VOCAB_ORDER: o->vocab_order = val; break;
    case RASPC_O_INPUT: o->input = val; break;
    case RASPC_O_INPUT_VOCAB: o->input_vocab = val; break;
    case RASPC_O_VOCAB: o->vocab_file = val; break;
    case RASPC_O_LENGTH:
      raspM_free(o->Ls);
      ok = raspC_range(name, opt, val, 1, 100000, &o->Ls, &o->nL);
      break;
    case RASPC_O_CHECKPOINT: o->checkpoint = val; break;
    case RASPC_O_CHECKPOINT_EVERY:
      ok = raspC_int_opt(name, opt, val, 0, 86400, &o->ckpt_every);
      o->ckpt_every_given = 1;
      break;
    case RASPC_O_RESUME: o->resume = 1; break;
    case RASPC_O_PROGRESS: o->progress = 1; break;
    case RASPC_O_PLAN: o->plan = 1; break;
    default: break; /* --max-memory, --timeout: rasp.c's */
    }
  }
  raspM_free(args);
  if (ok && o->nprograms == 0) {
    fprintf(stderr, "rasp %s: no program given\n", name);
    ok = 0;
  }
  return ok ? 1 : -1;
}

void raspC_vopts_free(raspC_vopts *o) {
  raspM_free(o->Ls);
  raspM_free(o->Ds);
  raspM_free(o->Ms);
  raspM_free(o->programs);
  raspC_access_free(&o->access);
}

void raspC_vopts_init(raspC_vopts *o, int argc) {
  memset(o, 0, sizeof *o);
  o->V = 100;
  o->graphs = 1000;
  o->seed = 1;
  o->cap = 2000000;
  o->ckpt_every = 10;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  o->jobs = cores > 0 ? cores : 1;
  o->programs = raspM_alloc(sizeof(char *) * (size_t)(argc + 1));
}

void raspC_heads_text(const rasp_layers *L, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int l = 0; l < L->nlayers && used + 8 < size; l++)
    used += (size_t)snprintf(buf + used, size - used, "%s%d", l ? " " : "", L->heads[l]);
}

/* The "tokens" array of a `rasp gen` JSON line as space-separated text
** (malloc'd), or NULL with a message.  Token strings never need escapes,
** so a backslash is refused rather than decoded. */
static char *json_tokens(const char *cmd, const char *line) {
  const char *p = strstr(line, "\"tokens\"");
  if (p) p += strlen("\"tokens\"");
  while (p && (*p == ' ' || *p == '\t')) p++;
  if (p && *p == ':') p++;
  while (p && (*p == ' ' || *p == '\t')) p++;
  if (!p || *p != '[') {
    fprintf(stderr, "rasp %s: --input: a JSON input needs a \"tokens\" array, as `rasp gen` "
                    "writes it\n", cmd);
    return NULL;
  }
  size_t cap = strlen(p) + 1, len = 0;
  char *text = raspM_alloc(cap);
  for (p++;;) {
    while (*p == ' ' || *p == '\t' || *p == ',' || *p == '\n' || *p == '\r') p++;
    if (*p == ']') break;
    const char *q = *p == '"' ? strpbrk(p + 1, "\"\\") : NULL;
    if (!q || *q != '"') {
      fprintf(stderr, "rasp %s: --input: the \"tokens\" array must hold plain strings, "
                      "near '%.20s'\n", cmd, p);
      raspM_free(text);
      return NULL;
    }
    len += (size_t)snprintf(text + len, cap - len, "%s%.*s", len ? " " : "", (int)(q - p - 1), p + 1);
    p = q + 1;
  }
  text[len] = '\0';
  return text;
}

/* Where an input is not in a program's task layout, what differs that the
** input shows outright (a BOS or EOS the task has not, or lacks), and the
** `rasp gen` flags that write the task's inputs, into buf. */
static void layout_hint(const rasp_program *prog, int V, const char *text, char *buf,
                        size_t size) {
  const rasp_task_opts *o = &prog->base;
  size_t len = strlen(text), at = 0;
  while (len && (text[len - 1] == ' ' || text[len - 1] == '\n')) len--;
  int has_bos = !strncmp(text, "BOS", 3) && (text[3] == ' ' || !text[3]);
  int has_eos = len >= 3 && !strncmp(text + len - 3, "EOS", 3) && (len == 3 || text[len - 4] == ' ');
  buf[0] = '\0';
  if (has_bos != (o->bos != 0))
    at += (size_t)snprintf(buf + at, size - at, "the input %s BOS and the task %s; ",
                           has_bos ? "starts with" : "has no", o->bos ? "does" : "has none");
  if (has_eos != (o->eos != 0) && at < size)
    at += (size_t)snprintf(buf + at, size - at, "the input %s EOS and the task %s; ",
                           has_eos ? "ends in" : "has no", o->eos ? "does" : "has none");
  static const char *const ans[] = {"none", "forward", "reverse", "lead"};
  if (at < size)
    snprintf(buf + at, size - at,
             "`rasp gen --V %d%s%s%s%s%s%s --answer %s` writes its inputs", V,
             o->bos ? "" : " --no-bos", o->eos ? "" : " --no-eos",
             o->st_names ? " --st-names" : "", o->q == RASP_Q_END ? " --q end" : "",
             o->order == RASP_ORDER_ARM ? " --order arm" : "", o->markers == 2 ? " --markers 2" : "",
             (unsigned)o->answer < 4 ? ans[o->answer] : "?");
}

int raspC_task_input(const char *cmd, const rasp_program *prog, int V, const char *text,
                     rasp_input *in) {
  char *own = NULL;
  rasp_error err = {0};
  while (*text == ' ' || *text == '\t' || *text == '\n') text++;
  if (*text == '{' && !(text = own = json_tokens(cmd, text))) return 2;
  int status = 0;
  if (!raspK_parse_input(prog, V, text, in, &err)) {
    char hint[512];
    layout_hint(prog, V, text, hint, sizeof hint);
    fprintf(stderr, "rasp %s: --input: %s (for %s's task; %s)\n", cmd, err.msg, prog->name, hint);
    status = 2;
  }
  raspM_free(own);
  return status;
}

/* ------------------------------------------- plain programs (layers, draw) */

/* Whether a load failed only because the file declares no task (a plain
** program). */
int raspC_is_plain(const rasp_error *err) {
  return err->code == RASP_E_NO_TASK;
}

/* 0 after a message when a path-star program's option (--D, --M, --V) was
** given for a plain program, which would not use it. */
int raspC_plain_opts_only(const char *cmd, const raspC_vopts *o, const char *file) {
  if (!o->sized) return 1;
  fprintf(stderr, "rasp %s: %s is for programs that declare `task`; %s does not (its inputs "
                  "come from --input, --input-vocab or --vocab and --length)\n", cmd, o->sized,
          file);
  return 0;
}

/* 0 after a message when a plain program's option was given for a
** path-star program, which would not use it (draw takes one --input of
** the task: with_input). */
int raspC_task_opts_only(const char *cmd, const raspC_vopts *o, const char *name,
                         int with_input) {
  const char *opt = o->nL ? "--length" : o->input && !with_input ? "--input"
                  : o->input_vocab ? "--input-vocab" : o->vocab_file ? "--vocab" : NULL;
  if (!opt) return 1;
  fprintf(stderr, "rasp %s: %s is for plain programs; %s declares a task (its inputs come from "
                  "--D, --M and --V)\n", cmd, opt, name);
  return 0;
}

/* The vocabulary of plain programs: --vocab FILE, --input-vocab TEXT or the
** distinct symbols of --input TEXT; *input_len gets --input's length (0
** without it).  The count, or -1 after a message (bad usage). */
int raspC_plain_vocab(const char *cmd, const raspC_vopts *o, char ***vocab,
                      int *input_len) {
  rasp_error err = {0};
  int n = 0;
  *input_len = 0;
  *vocab = NULL;
  if (o->input) {
    char **syms;
    int k = raspC_split(o->input, &syms);
    *input_len = k;
    if (!o->vocab_file && !o->input_vocab) n = raspC_default_vocab(syms, k, vocab);
    raspC_free_strings(syms, k);
    if (k == 0) {
      fprintf(stderr, "rasp %s: --input: the input is empty\n", cmd);
      raspC_free_strings(*vocab, n);
      return -1;
    }
  }
  if (o->vocab_file) {
    n = raspC_read_vocab(o->vocab_file, vocab, &err);
    if (n < 0) {
      raspR_print(&err, stderr);
      return -1;
    }
  } else if (o->input_vocab) {
    n = raspC_split(o->input_vocab, vocab);
  } else if (!o->input) {
    fprintf(stderr, "rasp %s: a plain program (no `task`) needs --input TEXT, --input-vocab "
                    "TEXT or --vocab FILE\n", cmd);
    return -1;
  }
  if (n <= 0) {
    fprintf(stderr, "rasp %s: the vocabulary is empty\n", cmd);
    raspC_free_strings(*vocab, n);
    *vocab = NULL;
    return -1;
  }
  return n;
}

/* A plain program traced (entry main) for inputs of length n, or NULL with
** err set. */
rasp_ctx *raspC_plain_trace(const raspC_vopts *o, const char *file, char **vocab, int nvocab,
                            int n, rasp_error *err) {
  rasp_ctx *ctx = rasp_ctx_new(n, NULL, err);
  if (!ctx) return NULL;
  if (!rasp_set_access(ctx, &o->access, err) ||
      !rasp_set_vocab(ctx, (const char *const *)vocab, nvocab, err) ||
      !rasp_load_stdlib(ctx, o->stdlib, err) || !rasp_exec_file(ctx, file, err) ||
      !rasp_trace(ctx, "main", err)) {
    rasp_ctx_free(ctx);
    return NULL;
  }
  return ctx;
}

/* The file name without its directory and .rasp, as rasp_program's name. */
char *raspC_plain_name(const char *file) {
  const char *b = strrchr(file, '/');
  b = b ? b + 1 : file;
  size_t len = strlen(b);
  if (len > 5 && strcmp(b + len - 5, ".rasp") == 0) len -= 5;
  char *name = raspM_alloc(len + 1);
  memcpy(name, b, len);
  name[len] = '\0';
  return name;
}

void raspC_compiled_layers(rasp_ctx *ctx, int root, rasp_layers *L) {
  rasp_ir *ir = rasp_ctx_ir(ctx);
  if (root < 0 && !ir->noutputs) {
    raspL_analyse(ir, NULL, 0, L);
    snprintf(L->why, sizeof L->why, "the program has no output");
    return;
  }
  int nids = rasp_vocab_size(ctx);
  int64_t *ids = raspM_alloc(sizeof(int64_t) * (size_t)(nids + 1));
  for (int i = 0; i < nids; i++) ids[i] = i + 1;
  raspL_analyse_compiled(ir, root < 0 ? ir->outputs[0] : root, ids, nids, nids, L);
  raspM_free(ids);
}
