/*
** rapi.c -- the ways into the interpreter: the public API (rasp.h), the
** evaluator's callbacks, rstage's protected regions, and include().
**
** An interpreter error is a longjmp to the innermost catcher (raspV_error,
** below), so every way in sets one first and restores the one before it
** when it returns: PROTECT_BEGIN/END around each API entry, ir_callback
** for the evaluator's calls of program functions, run_protected for
** check() and rstage.  A way in that runs program code again and again on
** one context (check() per graph, a map's function per element) also sets
** a heap mark and releases what the run made (rheap.c), and holds the
** context's lock, since the evaluator calls back from several threads.
**
** Programs are untrusted (rasp_access in rasp.h): include() resolves the
** file with realpath and reads it only when it is a .rasp file inside an
** allowed tree, so neither '..' nor a link reaches other files, and a file
** that is not a program is refused before it is read (its content can then
** never show up in an error).  cfunc() is checked in rffi.c.
**
** rasp_symbol and rasp_vocab_id, which read the symbol table, are with it
** in rheap.c.
**
** The stdlib's directory comes from rpaths.h, which make writes from the
** configured directories; this is the one file that includes it
** (Makefile.am's explicit rapi.lo dependency).
*/
#include "rinterp_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rparse.h"

/* -------------------------------------------------------------- errors */

_Noreturn void raspV_vraise(rasp_ctx *ctx, rasp_errcode code, rasp_pos pos, const char *fmt,
                            va_list ap) {
  if (!pos.src) pos = ctx->stmt; /* no position of its own: the statement's */
  rasp_pos inner = {0};
  if (pos.src && pos.src->library && ctx->site.src) inner = pos, pos = ctx->site; /* blame the caller */
  if (ctx->err) {
    vsnprintf(ctx->err->msg, sizeof ctx->err->msg, fmt, ap);
    raspR_locate(ctx->err, pos);
    raspR_locate_inner(ctx->err, inner, ctx->site_fn); /* and say where */
    ctx->err->code = code;
    ctx->err->subject[0] = '\0';
    ctx->err->set = 1;
  }
  longjmp(*ctx->catcher, 1);
}

_Noreturn void raspV_error(rasp_ctx *ctx, rasp_pos pos, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  raspV_vraise(ctx, RASP_E_RUNTIME, pos, fmt, ap);
}

_Noreturn void raspV_raise(rasp_ctx *ctx, rasp_errcode code, rasp_pos pos, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  raspV_vraise(ctx, code, pos, fmt, ap);
}

/* An unknown name, with the name as the error's subject (front ends give
** hints about some names without reading the message). */
_Noreturn void raspV_unknown_name(rasp_ctx *ctx, rasp_pos pos, const char *fmt, const char *name) {
  if (ctx->err) {
    raspR_setc(ctx->err, RASP_E_NAME, (rasp_pos){0}, fmt, name);
    raspR_subject(ctx->err, name);
  }
  rasp_pos inner = {0};
  if (pos.src && pos.src->library && ctx->site.src) inner = pos, pos = ctx->site;
  if (ctx->err) raspR_locate(ctx->err, pos), raspR_locate_inner(ctx->err, inner, ctx->site_fn);
  longjmp(*ctx->catcher, 1);
}

/* ------------------------------------------------------------ callbacks */

/* The evaluator calls program functions (tok_map, seq_map, custom
** predicates) through this, possibly from several threads.  Values made
** during the call are released afterwards unless they escaped.  All the
** calls made for one trace share one step budget (cb_steps, reset by
** rasp_trace): a budget restarted per call would let n*n calls of a custom
** predicate run n*n times the limit. */
static int ir_callback(void *user, void *fnp, int nargs, const rasp_elem *args,
                       rasp_elem *out, rasp_error *err) {
  rasp_ctx *ctx = user;
  value *fn = fnp;
  pthread_mutex_lock(&ctx->lock);
  jmp_buf jb, *saved = ctx->catcher;
  rasp_error *saved_err = ctx->err;
  unsigned long long saved_mark = ctx->heap.mark;
  long long saved_steps = ctx->steps;
  int saved_depth = ctx->depth, saved_nroots = ctx->heap.nroots;
  rasp_pos saved_site = ctx->site;
  const char *saved_site_fn = ctx->site_fn;
  ctx->catcher = &jb;
  ctx->err = err;
  ctx->heap.mark = ctx->heap.serial;
  ctx->steps = ctx->cb_steps;
  int saved_in_callback = ctx->in_callback;
  ctx->in_callback = 1;
  unsigned long long saved_frozen = ctx->frozen;
  ctx->frozen = ctx->heap.serial;
  int ok = 0;
  if (setjmp(jb) == 0) {
    value *argv[3];
    for (int i = 0; i < nargs && i < 3; i++) argv[i] = raspV_from_elem(ctx, args[i]);
    value *r = raspV_call(ctx, fn, argv, nargs, NULL, NULL, 0, (rasp_pos){0});
    if (r->kind == V_SOP || r->kind == V_SEL)
      raspV_error(ctx, (rasp_pos){0}, "a function used by tok_map/seq_map/select must "
                                      "return a scalar, not %s", raspV_kind_name(r));
    *out = raspV_to_elem(ctx, r, (rasp_pos){0});
    ok = 1;
  }
  ctx->heap.nroots = saved_nroots; /* an error left the loops it ran */
  raspV_release(ctx, ctx->heap.mark);
  ctx->heap.mark = saved_mark;
  ctx->catcher = saved;
  ctx->err = saved_err;
  ctx->cb_steps = ctx->steps;
  ctx->steps = saved_steps;
  ctx->in_callback = saved_in_callback;
  ctx->frozen = saved_frozen;
  ctx->depth = saved_depth;
  ctx->site = saved_site;
  ctx->site_fn = saved_site_fn;
  pthread_mutex_unlock(&ctx->lock);
  return ok;
}

/* ------------------------------------------------------------------ API */

void rasp_default_limits(rasp_limits *limits) {
  limits->max_length = 1 << 20;
  limits->max_nodes = 1 << 20;
  limits->max_depth = 200;
  limits->max_steps = 10000000LL;
  limits->max_selector_cells = RASP_DEFAULT_MAX_SELECTOR_CELLS;
  limits->max_list = 10000000;
  limits->max_num_bits = (size_t)1 << 22; /* 4 Mbit: 1.26 million decimal digits */
  limits->max_string = (size_t)16 << 20;
}

int rasp_abi_version(void) { return RASP_ABI_VERSION; }

rasp_ctx *rasp_ctx_new(int n, const rasp_limits *limits, rasp_error *err) {
  rasp_limits lim;
  if (limits) lim = *limits;
  else rasp_default_limits(&lim);
  if (n < 1 || n > lim.max_length) {
    raspR_setnoposc(err, RASP_E_USAGE, "input length %d is outside 1..%d", n, lim.max_length);
    return NULL;
  }
  rasp_ctx *ctx = raspM_alloc(sizeof *ctx);
  ctx->limits = lim;
  ctx->n = n;
  ctx->heap.intcache = raspM_alloc(sizeof(value *) * (SMALL_INT_MAX - SMALL_INT_MIN + 1));
  /* the collector's first run (rheap.c); 0: before every top-level statement */
  const char *stress = getenv("RASP_GC_STRESS");
  ctx->heap.threshold = stress && !strcmp(stress, "1") ? 0 : (size_t)8 << 20;
  raspI_init(&ctx->ir, n);
  ctx->ir.call = ir_callback;
  ctx->ir.symname = raspV_symbol_name;
  ctx->ir.user = ctx;
  ctx->none_v.kind = V_NONE;
  ctx->true_v.kind = V_BOOL;
  ctx->true_v.u.b = 1;
  ctx->false_v.kind = V_BOOL;
  raspM_arena_init(&ctx->ast_arena);
  pthread_mutex_init(&ctx->lock, NULL);
  env *builtins = raspV_env_new(ctx, NULL);
  ctx->globals = raspV_env_new(ctx, builtins);
  jmp_buf jb;
  ctx->catcher = &jb;
  ctx->err = err;
  if (setjmp(jb) != 0) { /* only the node limit can fail here */
    rasp_ctx_free(ctx);
    return NULL;
  }
  ctx->input_node = raspV_add_node(ctx, RASP_OP_INPUT, RASP_T_INT, 0, NULL, 0, (rasp_pos){0});
  ctx->ir.nodes[ctx->input_node].label = raspV_intern(ctx, "tokens");
  ctx->indices_node = raspV_add_node(ctx, RASP_OP_INDICES, RASP_T_INT, 0, NULL, 0, (rasp_pos){0});
  ctx->ir.nodes[ctx->indices_node].label = raspV_intern(ctx, "indices");
  int count;
  const builtin *tab = raspB_table(&count);
  for (int i = 0; i < count; i++) {
    value *b = raspV_new(ctx, V_BUILTIN);
    b->u.bi = &tab[i];
    raspV_env_set(ctx, builtins, raspV_intern(ctx, tab[i].name), b);
  }
  raspV_env_set(ctx, ctx->globals, raspV_intern(ctx, "tokens"), raspV_sop(ctx, ctx->input_node, V_SOP));
  ctx->catcher = NULL;
  ctx->err = NULL;
  return ctx;
}

void rasp_ctx_free(rasp_ctx *ctx) {
  if (!ctx) return;
  raspV_heap_free(ctx);
  raspM_free(ctx->vocab);
  raspM_free(ctx->token_of);
  raspM_free(ctx->bisigs);
  for (int i = 0; i < ctx->nsources; i++) raspR_source_free(ctx->sources[i]);
  raspM_free(ctx->sources);
  raspM_arena_free(&ctx->ast_arena);
  raspI_free(&ctx->ir);
  pthread_mutex_destroy(&ctx->lock);
  raspM_free(ctx->stdlib_dir);
  raspM_free(ctx->reach.include_root);
  for (int i = 0; i < ctx->reach.ninclude_dirs; i++) raspM_free(ctx->reach.include_dirs[i]);
  raspM_free(ctx->reach.include_dirs);
  for (int i = 0; i < ctx->reach.ndl; i++) dlclose(ctx->reach.dl_handles[i]);
  raspM_free(ctx->reach.dl_handles);
  raspM_free(ctx);
}

int rasp_ctx_length(const rasp_ctx *ctx) { return ctx->n; }
rasp_ir *rasp_ctx_ir(rasp_ctx *ctx) { return &ctx->ir; }

/* Every API entry runs its body under a catcher. */
#define PROTECT_BEGIN(ctx, errp)                                               \
  jmp_buf jb_, *saved_catcher_ = (ctx)->catcher;                               \
  rasp_error *saved_err_ = (ctx)->err;                                         \
  int saved_nroots_ = (ctx)->heap.nroots;                                      \
  (ctx)->catcher = &jb_;                                                       \
  (ctx)->err = (errp);                                                         \
  volatile int ok_ = 0;                                                        \
  if (setjmp(jb_) == 0) {
#define PROTECT_END(ctx)                                                       \
  ok_ = 1;                                                                     \
  }                                                                            \
  (ctx)->catcher = saved_catcher_;                                             \
  (ctx)->err = saved_err_;                                                     \
  (ctx)->heap.nroots = saved_nroots_; /* an error left the loops it ran */     \
  (ctx)->depth = 0;                                                            \
  (ctx)->site = (rasp_pos){0};                                                 \
  (ctx)->stmt = (rasp_pos){0};                                                 \
  return ok_;

int rasp_set_vocab(rasp_ctx *ctx, const char *const *symbols, int count, rasp_error *err) {
  PROTECT_BEGIN(ctx, err)
  raspM_free(ctx->token_of);
  ctx->token_of = NULL;
  ctx->ntoken_of = 0;
  raspM_free(ctx->vocab);
  ctx->vocab = raspM_alloc(sizeof(int64_t) * (size_t)(count ? count : 1));
  ctx->nvocab = count;
  value *d = raspV_new(ctx, V_DICT), *rd = raspV_new(ctx, V_DICT);
  d->tag = TAG_D_BY_ID;
  rd->tag = TAG_REVERSE_D;
  for (int i = 0; i < count; i++) {
    value *s = raspV_str(ctx, symbols[i], strlen(symbols[i]));
    ctx->vocab[i] = raspV_symbol_of(ctx, s);
    if (raspV_dict_get(d, s))
      raspV_raise(ctx, RASP_E_USAGE, (rasp_pos){0}, "vocabulary symbol '%s' appears twice", symbols[i]);
    value *id = raspV_new(ctx, V_NUM); /* its own object: the tag is not shared */
    mpq_set_si(id->u.q, i + 1, 1);
    id->tag = TAG_ID;
    raspV_dict_set(ctx, d, s, id);
    raspV_dict_set(ctx, rd, id, s);
  }
  ctx->ntoken_of = ctx->names.nsyms;
  ctx->token_of = raspM_alloc(sizeof(int64_t) * (size_t)(ctx->names.nsyms ? ctx->names.nsyms : 1));
  for (int i = 0; i < count; i++) ctx->token_of[ctx->vocab[i]] = i + 1;
  raspV_env_set(ctx, ctx->globals, raspV_intern(ctx, "d"), d);
  raspV_env_set(ctx, ctx->globals, raspV_intern(ctx, "reverse_d"), rd);
  raspV_env_set(ctx, ctx->globals, raspV_intern(ctx, "vocab_size"), raspV_num_si(ctx, count));
  PROTECT_END(ctx)
}

int rasp_vocab_size(const rasp_ctx *ctx) { return ctx->nvocab; }

const char *rasp_vocab_symbol(const rasp_ctx *ctx, int64_t id) {
  if (id < 1 || id > ctx->nvocab) return NULL;
  return ctx->names.syms[ctx->vocab[id - 1]];
}

void rasp_set_int(rasp_ctx *ctx, const char *name, int64_t v) {
  raspV_env_set(ctx, ctx->globals, raspV_intern(ctx, name), raspV_num_si(ctx, (long)v));
}

void rasp_set_bool(rasp_ctx *ctx, const char *name, int v) {
  raspV_env_set(ctx, ctx->globals, raspV_intern(ctx, name), raspV_bool(ctx, v));
}

void rasp_set_string(rasp_ctx *ctx, const char *name, const char *text) {
  raspV_env_set(ctx, ctx->globals, raspV_intern(ctx, name), raspV_str(ctx, text, strlen(text)));
}

static rasp_source *keep_source(rasp_ctx *ctx, rasp_source *src) {
  RASP_GROW(ctx->sources, ctx->srccap, ctx->nsources + 1);
  ctx->sources[ctx->nsources++] = src;
  return src;
}

static int run_source(rasp_ctx *ctx, rasp_source *src, rasp_error *err) {
  keep_source(ctx, src);
  ctx->site = (rasp_pos){0};
  rasp_ast *mod = raspP_parse(src, &ctx->ast_arena, err);
  if (!mod) return 0;
  ctx->steps = 0;
  PROTECT_BEGIN(ctx, err)
  raspV_exec_block(ctx, ctx->globals, mod->items, mod->nitems);
  PROTECT_END(ctx)
}

/* The real path of an existing directory, malloc'd; NULL with err. */
static char *real_dir(const char *dir, rasp_error *err) {
  char buf[PATH_MAX];
  struct stat st;
  if (!realpath(dir, buf) || stat(buf, &st) != 0) {
    raspR_setnoposc(err, RASP_E_USAGE, "include directory '%s': %s", dir, strerror(errno));
    return NULL;
  }
  if (!S_ISDIR(st.st_mode)) {
    raspR_setnoposc(err, RASP_E_USAGE, "include directory '%s': not a directory", dir);
    return NULL;
  }
  return raspM_strdup(buf);
}

int rasp_set_access(rasp_ctx *ctx, const rasp_access *access, rasp_error *err) {
  rasp_access none = {0};
  if (!access) access = &none;
  char *root = NULL;
  char **dirs = raspM_alloc(sizeof(char *) * (size_t)(access->ninclude_dirs + 1));
  int n = 0;
  if (access->root && !(root = real_dir(access->root, err))) goto fail;
  for (; n < access->ninclude_dirs; n++)
    if (!(dirs[n] = real_dir(access->include_dirs[n], err))) goto fail;
  ctx->reach.allow_ffi = access->allow_ffi != 0;
  if (root) {
    raspM_free(ctx->reach.include_root);
    ctx->reach.include_root = root;
  }
  for (int i = 0; i < ctx->reach.ninclude_dirs; i++) raspM_free(ctx->reach.include_dirs[i]);
  raspM_free(ctx->reach.include_dirs);
  ctx->reach.include_dirs = dirs;
  ctx->reach.ninclude_dirs = n;
  return 1;
fail:
  raspM_free(root);
  for (int i = 0; i < n; i++) raspM_free(dirs[i]);
  raspM_free(dirs);
  return 0;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Whether the real path p lies in the tree of the real directory dir. */
static int inside(const char *dir, const char *p) {
  size_t n = strlen(dir);
  if (n == 1 && dir[0] == '/') return 1;
  return strncmp(dir, p, n) == 0 && (p[n] == '/' || p[n] == '\0');
}

/* The program file `full` (named `name` by its caller, for messages) as
** include() may read it: a regular .rasp text file inside the trees
** rasp_access allows, opened once and checked as opened (its real path as
** the kernel names the descriptor), so swapping a directory for a link
** between a check and the read cannot bring another file in.  `who` names
** the caller in messages ("include()", ":load") and `verb` what it does
** ("included", "loaded").  The source is kept with the context; errors are
** raised at pos. */
static rasp_source *open_program(rasp_ctx *ctx, const char *who, const char *verb,
                                 const char *full, const char *name, rasp_pos pos) {
  if (!ends_with(full, ".rasp"))
    raspV_raise(ctx, RASP_E_ACCESS, pos, "%s: '%s' is not a program; only .rasp files can be %s", who,
                name, verb);
  char real[PATH_MAX], dir[PATH_MAX];
  rasp_error inner = {0};
  rasp_source *src = raspR_source_open(full, 64u << 20, real, sizeof real, &inner);
  if (!src) {
    if (inner.code == RASP_E_ACCESS || inner.code == RASP_E_LIMIT)
      raspV_raise(ctx, inner.code, pos, "%s: %s", who, inner.msg);
    raspV_error(ctx, pos, "%s: %s", who, inner.msg);
  }
  keep_source(ctx, src); /* freed with the context, whatever is raised below */
  const char *root = ctx->reach.include_root;
  if (!root && !(root = realpath(".", dir)))
    raspV_error(ctx, pos, "%s: cannot resolve the current directory: %s", who, strerror(errno));
  int ok = inside(root, real);
  for (int i = 0; !ok && i < ctx->reach.ninclude_dirs; i++)
    ok = inside(ctx->reach.include_dirs[i], real);
  if (!ok && ctx->stdlib_dir && realpath(ctx->stdlib_dir, dir)) ok = inside(dir, real);
  if (!ok)
    raspV_raise(ctx, RASP_E_ACCESS, pos, "%s: '%s' is outside the program's directory tree '%s'; "
                "--allow-include DIR allows another tree", who, full, root);
  /* a link named x.rasp inside the tree may still point at another file */
  if (!ends_with(real, ".rasp"))
    raspV_raise(ctx, RASP_E_ACCESS, pos, "%s: '%s' is not a program (it is '%s'); only .rasp files can "
                "be %s", who, full, real, verb);
  if (memchr(src->text, '\0', src->len))
    raspV_raise(ctx, RASP_E_ACCESS, pos, "%s: '%s' is not a program (it is not text)", who, full);
  return src;
}

/* Parses src and runs it in the global scope, one level deeper. */
static void run_included(rasp_ctx *ctx, rasp_source *src) {
  rasp_error inner = {0};
  rasp_ast *mod = raspP_parse(src, &ctx->ast_arena, &inner);
  if (!mod) {
    *ctx->err = inner;
    longjmp(*ctx->catcher, 1);
  }
  ctx->depth++;
  raspV_exec_block(ctx, ctx->globals, mod->items, mod->nitems);
  ctx->depth--;
}

/* include('file.rasp'): runs another file in the global scope, its path
** relative to the including file's directory.  Only programs inside the
** trees rasp_access allows are read (see the top of this file). */
value *raspV_include(rasp_ctx *ctx, value *path, rasp_pos pos) {
  if (path->kind != V_STR) raspV_error(ctx, pos, "include() needs a file name");
  const char *name = path->u.str.s;
  char full[4096];
  const char *base = pos.src ? pos.src->name : "";
  const char *slash = strrchr(base, '/');
  if (name[0] == '/' || !slash)
    snprintf(full, sizeof full, "%s", name);
  else
    snprintf(full, sizeof full, "%.*s/%s", (int)(slash - base), base, name);
  if (ctx->depth >= ctx->limits.max_depth)
    raspV_raise(ctx, RASP_E_LIMIT, pos, "include() nested too deeply");
  run_included(ctx, open_program(ctx, "include()", "included", full, name, pos));
  return &ctx->none_v;
}

int rasp_read_program(rasp_ctx *ctx, const char *path, char **text, rasp_error *err) {
  *text = NULL;
  PROTECT_BEGIN(ctx, err)
  rasp_source *src = open_program(ctx, ":load", "loaded", path, path, (rasp_pos){0});
  if ((*text = malloc(src->len + 1))) { /* the caller's free() */
    memcpy(*text, src->text, src->len);
    (*text)[src->len] = '\0';
  }
  PROTECT_END(ctx)
}

int rasp_load_file(rasp_ctx *ctx, const char *path, char **text, rasp_error *err) {
  if (text) *text = NULL;
  ctx->site = (rasp_pos){0};
  ctx->steps = 0;
  PROTECT_BEGIN(ctx, err)
  rasp_source *src = open_program(ctx, ":load", "loaded", path, path, (rasp_pos){0});
  run_included(ctx, src);
  if (text && (*text = malloc(src->len + 1))) { /* the caller's free() */
    memcpy(*text, src->text, src->len);
    (*text)[src->len] = '\0';
  }
  PROTECT_END(ctx)
}

int rasp_exec_string(rasp_ctx *ctx, const char *name, const char *text, rasp_error *err) {
  return run_source(ctx, raspR_source_new(name, text, strlen(text)), err);
}

int rasp_exec_file(rasp_ctx *ctx, const char *path, rasp_error *err) {
  rasp_source *src = raspR_source_file(path, err);
  if (!src) return 0;
  if (!ctx->reach.include_root) { /* the top-level program's tree */
    const char *slash = strrchr(path, '/');
    char *dir = slash ? raspM_strndup(path, slash == path ? 1 : (size_t)(slash - path))
                      : raspM_strdup(".");
    char buf[PATH_MAX];
    if (realpath(dir, buf)) ctx->reach.include_root = raspM_strdup(buf);
    raspM_free(dir);
  }
  return run_source(ctx, src, err);
}

/* The build's rpaths.h gives the installed stdlib and the source tree's;
   a compile without it (the fuzzers) uses ./stdlib or -DRASP_STDLIB_DIR. */
#ifdef RASP_HAVE_RPATHS_H
#include "rpaths.h"
#endif
#ifndef RASP_STDLIB_DIR
#define RASP_STDLIB_DIR "stdlib"
#endif

int rasp_load_stdlib(rasp_ctx *ctx, const char *dir, rasp_error *err) {
  if (!dir) dir = getenv("RASP_STDLIB");
  char path[4096];
  if (!dir) {
    /* installed copy first; an uninstalled build finds the source tree's */
    dir = RASP_STDLIB_DIR;
    snprintf(path, sizeof path, "%s/core.rasp", dir);
#ifdef RASP_SRC_STDLIB_DIR
    if (access(path, R_OK) != 0) dir = RASP_SRC_STDLIB_DIR;
#endif
  }
  raspM_free(ctx->stdlib_dir);
  ctx->stdlib_dir = raspM_strdup(dir);
  static const char *files[] = {"core.rasp", "pathstar.rasp"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    rasp_source *src = raspR_source_file(path, err);
    if (!src) return 0;
    src->library = 1;
    if (!run_source(ctx, src, err)) return 0;
  }
  return 1;
}

static void add_output(rasp_ctx *ctx, value *v, rasp_pos pos) {
  if (v->kind != V_SOP)
    raspV_error(ctx, pos, "the entry function must return a sequence or a tuple of "
                          "sequences, not %s", raspV_kind_name(v));
  ctx->ir.outputs = raspM_realloc(ctx->ir.outputs, sizeof(int) * (size_t)(ctx->ir.noutputs + 1));
  ctx->ir.outputs[ctx->ir.noutputs++] = v->u.node;
}

int rasp_trace(rasp_ctx *ctx, const char *entry, rasp_error *err) {
  ctx->steps = 0;
  ctx->cb_steps = 0;
  ctx->site = (rasp_pos){0};
  PROTECT_BEGIN(ctx, err)
  value *fn = raspV_env_get(ctx->globals, raspV_intern(ctx, entry));
  if (!fn) raspV_unknown_name(ctx, (rasp_pos){0}, "the program defines no function '%s'", entry);
  value *input = raspV_sop(ctx, ctx->input_node, V_SOP);
  value *r = raspV_call(ctx, fn, &input, 1, NULL, NULL, 0,
                        fn->kind == V_FUNC ? fn->u.func.def->pos : (rasp_pos){0});
  ctx->ir.noutputs = 0;
  rasp_pos pos = fn->kind == V_FUNC ? fn->u.func.def->pos : (rasp_pos){0};
  if (r->kind == V_TUPLE) {
    for (int i = 0; i < r->u.list.n; i++) add_output(ctx, r->u.list.items[i], pos);
  } else {
    add_output(ctx, r, pos);
  }
  PROTECT_END(ctx)
}

int rasp_has_global(rasp_ctx *ctx, const char *name) {
  return raspV_env_has(ctx->globals, raspV_intern(ctx, name));
}

int rasp_get_int(rasp_ctx *ctx, const char *name, int64_t *out, rasp_error *err) {
  PROTECT_BEGIN(ctx, err)
  value *v = raspV_env_get(ctx->globals, raspV_intern(ctx, name));
  if (!v) raspV_unknown_name(ctx, (rasp_pos){0}, "the program defines no '%s'", name);
  *out = raspV_int(ctx, v, (rasp_pos){0}, name);
  PROTECT_END(ctx)
}

/* Runs body(ctx, arg) with errors caught into err and releases the values
** it made; the caller holds the context's lock. */
static int run_protected(rasp_ctx *ctx, rasp_error *err, void (*body)(rasp_ctx *, void *),
                         void *arg) {
  ctx->steps = 0;
  unsigned long long saved_mark = ctx->heap.mark;
  ctx->heap.mark = ctx->heap.serial;
  volatile int result;
  {
    PROTECT_BEGIN(ctx, err)
    body(ctx, arg);
    ok_ = 1;
    }
    ctx->catcher = saved_catcher_;
    ctx->err = saved_err_;
    ctx->heap.nroots = saved_nroots_;
    ctx->depth = 0;
    result = ok_;
  }
  raspV_release(ctx, ctx->heap.mark);
  ctx->heap.mark = saved_mark;
  return result;
}

typedef struct check_call {
  const char *name;
  const rasp_arg *args;
  int nargs;
  int *truth;
} check_call;

static void check_body(rasp_ctx *ctx, void *arg) {
  const check_call *cc = arg;
  /* the verifier calls the same function for every graph */
  if (cc->name != ctx->check_name) {
    ctx->check_interned = raspV_intern(ctx, cc->name);
    ctx->check_name = cc->name;
  }
  value *fn = raspV_env_get(ctx->globals, ctx->check_interned);
  if (!fn) raspV_unknown_name(ctx, (rasp_pos){0}, "the program defines no function '%s'", cc->name);
  value *argv[8];
  if (cc->nargs > 8) raspV_error(ctx, (rasp_pos){0}, "too many arguments");
  for (int i = 0; i < cc->nargs; i++) {
    if (cc->args[i].elems) {
      value *l = raspV_list(ctx, V_LIST, cc->args[i].count);
      for (int k = 0; k < cc->args[i].count; k++)
        l->u.list.items[k] = raspV_from_elem(ctx, cc->args[i].elems[k]);
      argv[i] = l;
    } else {
      argv[i] = raspV_from_elem(ctx, cc->args[i].elem);
    }
  }
  value *r = raspV_call(ctx, fn, argv, cc->nargs, NULL, NULL, 0, (rasp_pos){0});
  *cc->truth = raspV_truth(ctx, r, fn->kind == V_FUNC ? fn->u.func.def->pos : (rasp_pos){0});
}

/* Serialised: verifier threads check outputs through one context. */
int rasp_call_check(rasp_ctx *ctx, const char *name, const rasp_arg *args, int nargs,
                    int *truth, rasp_error *err) {
  check_call cc = {name, args, nargs, truth};
  pthread_mutex_lock(&ctx->lock);
  unsigned long long saved_frozen = ctx->frozen;
  ctx->frozen = ctx->heap.serial; /* check() too: the verifier checks graphs in any order */
  int ok = run_protected(ctx, err, check_body, &cc);
  ctx->frozen = saved_frozen;
  pthread_mutex_unlock(&ctx->lock);
  return ok;
}

void rasp_interrupt(rasp_ctx *ctx, int on) { ctx->interrupted = on != 0; }

/* The name an entry binds when it is one assignment to names only
** (x = e, x = y = e: the first), else NULL. */
static const char *assigned_name(const rasp_ast *mod) {
  if (mod->nitems != 1 || mod->items[0]->kind != AST_ASSIGN) return NULL;
  const rasp_ast *s = mod->items[0];
  for (int i = 0; i < s->nitems; i++)
    if (s->items[i]->kind != AST_NAME) return NULL;
  return s->nitems ? s->items[0]->str : NULL;
}

/* Fills out with v, as the REPL shows it. */
static void repl_show(rasp_ctx *ctx, value *v, rasp_repl_value *out) {
  if (v->kind == V_SOP || v->kind == V_SEL) {
    out->node = v->u.node;
    out->is_sel = v->kind == V_SEL;
  } else if (v->kind != V_NONE && v->kind != V_FUNC && v->kind != V_BUILTIN) {
    out->shown = raspV_repr(ctx, v);
  }
}

int rasp_repl_entry(rasp_ctx *ctx, const char *text, rasp_repl_value *out, rasp_error *err) {
  memset(out, 0, sizeof *out);
  out->node = -1;
  rasp_source *src = keep_source(ctx, raspR_source_new("<repl>", text, strlen(text)));
  rasp_ast *mod = raspP_parse(src, &ctx->ast_arena, err);
  if (!mod) return 0;
  ctx->steps = 0;
  ctx->cb_steps = 0; /* each entry is evaluated anew, like a trace */
  PROTECT_BEGIN(ctx, err)
  const char *name = assigned_name(mod);
  if (mod->nitems == 1 && mod->items[0]->kind == AST_EXPR) {
    repl_show(ctx, raspV_eval(ctx, ctx->globals, mod->items[0]->a), out);
  } else {
    raspV_exec_block(ctx, ctx->globals, mod->items, mod->nitems);
    if (name) { /* echo what was bound, as Weiss's REPL does */
      repl_show(ctx, raspV_env_get(ctx->globals, raspV_intern(ctx, name)), out);
      out->assigned = 1;
    }
  }
  PROTECT_END(ctx)
}

int rasp_dict_keys(rasp_ctx *ctx, const char *dict, void (*fn)(void *, const char *),
                   void *user) {
  value *d = raspV_env_get(ctx->globals, raspV_intern(ctx, dict));
  if (!d || d->kind != V_DICT) return 0;
  for (int i = 0; i < d->u.dict.n; i++) {
    value *k = d->u.dict.keys[i];
    fn(user, k->kind == V_STR ? k->u.str.s : "?");
  }
  return 1;
}

void rasp_complete(rasp_ctx *ctx, const char *prefix, void (*fn)(void *, const char *),
                   void *user) {
  size_t len = strlen(prefix);
  for (env *e = ctx->globals; e; e = e->parent)
    for (int i = 0; i < e->n; i++)
      if (strncmp(e->names[i], prefix, len) == 0) fn(user, e->names[i]);
}

char *rasp_describe(rasp_ctx *ctx, const char *name) {
  value *v = raspV_env_get(ctx->globals, raspV_intern(ctx, name));
  if (!v) return NULL;
  strbuf b = {0};
  raspV_sb_puts(&b, "");
  if (v->kind == V_BUILTIN) {
    raspV_sb_puts(&b, v->u.bi->name);
    raspV_sb_puts(&b, "(");
    raspV_sb_puts(&b, v->u.bi->params);
    raspV_sb_puts(&b, ") -- ");
    raspV_sb_puts(&b, v->u.bi->doc);
  } else if (v->kind == V_FUNC) {
    const rasp_ast *def = v->u.func.def;
    raspV_sb_puts(&b, name);
    raspV_sb_puts(&b, "(");
    for (int i = 0; i < def->nnames; i++) {
      if (i) raspV_sb_puts(&b, ", ");
      raspV_sb_puts(&b, def->names[i]);
    }
    raspV_sb_puts(&b, ")");
    if (def->pos.src) {
      char tmp[300];
      snprintf(tmp, sizeof tmp, " -- defined at %s:%d", def->pos.src->name, def->pos.line);
      raspV_sb_puts(&b, tmp);
    }
  } else {
    char *r = raspV_repr(ctx, v);
    raspV_sb_puts(&b, r);
    raspM_free(r);
  }
  return b.s;
}

int rasp_format_symbolic(const rasp_ctx *ctx, rasp_elem e, char *buf, size_t size) {
  if (e.den == 1) {
    const char *s = rasp_vocab_symbol(ctx, e.num);
    if (s) return snprintf(buf, size, "%s", s);
  }
  return raspI_elem_format(&ctx->ir, e, buf, size);
}

int rasp_get_setting(rasp_ctx *ctx, const char *dict, const char *key, char *buf, size_t size,
                     rasp_error *err) {
  buf[0] = '\0';
  value *d = raspV_env_get(ctx->globals, raspV_intern(ctx, dict));
  if (!d || d->kind != V_DICT) return 0;
  value *k = raspV_str(ctx, key, strlen(key));
  value *v = raspV_dict_get(d, k);
  if (!v) return 0;
  strbuf b = {0};
  raspV_sb_puts(&b, "");
  value *items = v;
  int n = 1;
  if (v->kind == V_LIST || v->kind == V_TUPLE) n = v->u.list.n;
  for (int i = 0; i < n; i++) {
    value *it = (items->kind == V_LIST || items->kind == V_TUPLE) ? items->u.list.items[i] : v;
    if (i) raspV_sb_puts(&b, " ");
    if (it->kind == V_STR) raspV_sb_add(&b, it->u.str.s, it->u.str.len);
    else {
      char *r = raspV_repr(ctx, it);
      raspV_sb_puts(&b, r);
      raspM_free(r);
    }
  }
  int ok = 1;
  if (b.n + 1 > size) {
    raspR_setnoposc(err, RASP_E_TASK, "setting %s['%s'] is too long", dict, key);
    ok = -1;
  } else {
    memcpy(buf, b.s, b.n + 1);
  }
  raspM_free(b.s);
  return ok;
}

/* ---------------------------------------------------------- for rstage.c */

/* Runs body under an error catcher, with the context's lock held (so no
** evaluator callback runs meanwhile), and releases the values it made. */
int raspV_protected(rasp_ctx *ctx, rasp_error *err, void (*body)(rasp_ctx *, void *),
                    void *arg) {
  pthread_mutex_lock(&ctx->lock);
  int ok = run_protected(ctx, err, body, arg);
  pthread_mutex_unlock(&ctx->lock);
  return ok;
}
