/*
** rinterp_int.h -- the interpreter's insides, shared by its files (internal
** to librasp; not for the builtins, which have raux.h).
**
** The interpreter is five files, in layers: each builds on those above it
** in this list, except that errors (rapi.c) are raised and provenance
** records (rtrace.c) made from all of them:
**   rheap.c    the heap: values and scopes, early release and the write
**              barrier, the constant caches, interned names and symbols
**   rvalue.c   values: numbers and their size cap, conversions, equality,
**              hashing and dicts, truth, repr, scalar arithmetic
**   rtrace.c   the tracer: IR nodes for operations on sequences and
**              selectors, and the provenance of the vocabulary's ids
**   rinterp.c  evaluation: scopes, expressions, statements and calls
**   rapi.c     the entry points: the public API (rasp.h), the evaluator's
**              callback and rstage's hooks, each under an error catcher;
**              errors; include() and what programs may reach
** raux.c builds the builtins' API (raux.h) on top of them; rffi.c (cfunc())
** and rstage.c (staged checks) use these insides directly.
*/
#ifndef RASP_RINTERP_INT_H
#define RASP_RINTERP_INT_H

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>

#include "rffi.h"
#include "rvalue.h"

struct env {
  env *parent;
  const char **names; /* interned */
  value **vals;
  int n, cap;
  int *hash;          /* open addressing over names, for large scopes */
  int hcap;
  unsigned long long serial;
  env *next_env;
  unsigned char gcmark; /* the heap's: reached by the collector's mark */
};

/* The heap (rheap.c): every object in allocation order, the spare lists
** that early release fills, and the caches of constants. */
typedef struct rasp_heap {
  value *objects;
  value *consts;         /* literals cached in the syntax tree: never released early */
  value *spare;          /* released value structs for reuse (next_obj chain) */
  value *spare_num;      /* the same with their mpq_t still initialised */
  int nspare;
  env *envs;
  env *spare_env;        /* released scopes, arrays kept (next_env chain) */
  int nspare_env;
  unsigned long long serial, mark; /* the last serial given; early release's mark */
  int pinned;            /* the barrier saw an escape: release nothing */
  value **intcache;      /* small integers, shared (values are immutable) */
  value **symcache;      /* one string value per symbol id */
  int64_t symcache_n;
  /* the collector (raspV_collect): bytes made since the last collection
  ** (an estimate), the debt at which the next one runs, and the values the
  ** running top-level statements hold only on the C stack (a for loop's
  ** items) */
  size_t debt, threshold;
  value **roots;
  int nroots, rootcap;
} rasp_heap;

/* Interned names and the symbol table (rheap.c). */
typedef struct rasp_names {
  char **interned;       /* open hash of interned strings */
  size_t ninterned, icap;
  char **syms;           /* symbol id -> text */
  int64_t nsyms, symcap;
  int *symhash;          /* text -> symbol id, open hash */
  size_t symhcap;
} rasp_names;

/* rasp_access, resolved (rapi.c), and what cfunc() opened (rffi.c). */
typedef struct rasp_reach {
  int allow_ffi;
  char *include_root;    /* NULL until the first rasp_exec_file */
  char **include_dirs;   /* include() trees are real paths */
  int ninclude_dirs;
  void **dl_handles;
  int ndl, dlcap;
} rasp_reach;

struct rasp_ctx {
  rasp_limits limits;
  int n;                 /* traced length */
  rasp_ir ir;
  int input_node, indices_node;
  rasp_heap heap;
  value none_v, true_v, false_v;
  /* globals and names */
  env *globals;
  rasp_names names;
  const char *check_name, *check_interned; /* rasp_call_check's last name */
  struct bi_sig *bisigs;  /* per builtin (raspB_table order): parsed params */
  int nbisigs;
  /* vocabulary: token id i+1 -> symbol id vocab[i] */
  int64_t *vocab;
  int nvocab;
  int64_t *token_of;     /* symbol id -> token id (0: none), for lookups */
  int64_t ntoken_of;
  /* sources kept for error messages, and parse arenas */
  rasp_source **sources;
  int nsources, srccap;
  rasp_arena ast_arena;
  char *stdlib_dir;
  rasp_reach reach;
  /* errors and the run in progress */
  jmp_buf *catcher;
  rasp_error *err;
  int depth;
  rasp_pos site;         /* innermost call in user code (not the stdlib) */
  const char *site_fn;   /* the function that call called (for tracebacks) */
  rasp_pos stmt;         /* the statement running: where an error raised
                         ** without a position of its own (a list grown
                         ** past its limit deep inside `+`) is reported */
  long long steps;
  volatile sig_atomic_t interrupted; /* rasp_interrupt, from a signal handler */
  long long cb_steps;    /* steps of evaluator callbacks since the trace */
  int in_callback;
  /* While the evaluator calls a program function (tok_map, seq_map, a
  ** custom select) or the verifier calls check(): the serial of the last
  ** object made before the call, 0 otherwise.  Such a call must be a
  ** function of its arguments -- the evaluator keeps one result per
  ** argument value, the compiler builds its tables once, the verifier
  ** checks graphs in any order -- so it may not change a list or dict made
  ** before it (check_mutable in rinterp.c). */
  unsigned long long frozen;
  value *retval;
  char ids_text[128];    /* ir.ids_what when it names a use (raspV_int) */
  pthread_mutex_t lock;  /* callbacks from evaluator threads */
};

/* ---- rheap.c: the heap */

/* the cached small integers: intcache[i - SMALL_INT_MIN] */
#define SMALL_INT_MIN (-128)
#define SMALL_INT_MAX 4096

value *raspV_new(rasp_ctx *ctx, vkind kind);
value *raspV_num_si(rasp_ctx *ctx, long v);
static inline value *raspV_bool(rasp_ctx *ctx, int b) { return b ? &ctx->true_v : &ctx->false_v; }
value *raspV_str(rasp_ctx *ctx, const char *s, size_t len);
value *raspV_list(rasp_ctx *ctx, vkind kind, int n); /* n NULL items */
void raspV_list_push(rasp_ctx *ctx, value *list, value *item);
value *raspV_sop(rasp_ctx *ctx, int node, vkind kind);
/* v, stored into an object whose serial is holder_serial (0: something
** that outlives every release, such as an IR node), pins the heap if it is
** younger than the mark and the holder older */
void raspV_barrier(rasp_ctx *ctx, unsigned long long holder_serial, value *v);
/* releases what was made after mark, unless the barrier pinned the heap */
void raspV_release(rasp_ctx *ctx, unsigned long long mark);
/* v, just made, becomes a constant: never released early */
value *raspV_make_const(rasp_ctx *ctx, value *v);
value *raspV_small_int(rasp_ctx *ctx, long n); /* NULL outside the cached range */
value *raspV_from_elem(rasp_ctx *ctx, rasp_elem e);
env *raspV_env_new(rasp_ctx *ctx, env *parent);
/* The collector: frees every object that the globals, the IR's functions,
** ctx->retval and the roots do not reach.  Only between top-level
** statements (raspV_collect_due says when): deeper, the C stack holds
** values the collector cannot see. */
void raspV_collect(rasp_ctx *ctx);
static inline int raspV_collect_due(const rasp_ctx *ctx);
static inline void raspV_debt(rasp_ctx *ctx, size_t bytes) { ctx->heap.debt += bytes; }
void raspV_root_push(rasp_ctx *ctx, value *v); /* until raspV_root_pop */
static inline void raspV_root_pop(rasp_ctx *ctx) { ctx->heap.nroots--; }
void raspV_heap_free(rasp_ctx *ctx); /* everything the heap owns, at rasp_ctx_free */
const char *raspV_intern(rasp_ctx *ctx, const char *s);
int64_t raspV_symbol_of(rasp_ctx *ctx, value *str);
const char *raspV_symbol_name(void *user, int64_t id); /* rasp_ir's symname */

/* At a statement boundary: whether this is a top-level statement (no call
** running: its arguments and partial results live on the C stack; no early
** release region or evaluator callback) and the debt is due. */
static inline int raspV_collect_due(const rasp_ctx *ctx) {
  return ctx->heap.debt >= ctx->heap.threshold && ctx->depth == 0 && !ctx->in_callback &&
         !ctx->heap.mark && !ctx->frozen;
}

/* ---- rvalue.c: values */

static inline int raspV_is_num(const value *v) { return v->kind == V_NUM || v->kind == V_BOOL; }
value *raspV_parse_number(rasp_ctx *ctx, const char *text, rasp_pos pos);
const char *raspV_kind_name(const value *v);
int raspV_truth(rasp_ctx *ctx, value *v, rasp_pos pos);
int raspV_equal(const value *a, const value *b);
/* raspV_equal for the program's == and `in`: too deep is an error at pos */
int raspV_equal_checked(rasp_ctx *ctx, const value *a, const value *b, rasp_pos pos);
int64_t raspV_int(rasp_ctx *ctx, value *v, rasp_pos pos, const char *what);
rasp_elem raspV_to_elem(rasp_ctx *ctx, value *v, rasp_pos pos);
value *raspV_dict_get(value *dict, value *key);
void raspV_dict_set(rasp_ctx *ctx, value *dict, value *key, value *val);
char *raspV_repr(rasp_ctx *ctx, value *v); /* malloc'd; cut at max_string bytes + "..." */
value *raspV_scalar_binop(rasp_ctx *ctx, rasp_binop op, value *a, value *b, rasp_pos pos);
value *raspV_scalar_unop(rasp_ctx *ctx, rasp_unop op, value *a, rasp_pos pos);

/* A growing string for repr.  With max set it stops at max bytes and ends
** in "..." then (over is set): lists can share items, so the text of a
** small structure can be exponentially long. */
typedef struct strbuf { char *s; size_t n, cap, max; int over; } strbuf;
void raspV_sb_add(strbuf *b, const char *s, size_t len);
void raspV_sb_puts(strbuf *b, const char *s);

/* ---- rtrace.c: the tracer */

int raspV_add_node(rasp_ctx *ctx, rasp_op op, rasp_type type, int aux,
                   const int *in, int nin, rasp_pos pos);
rasp_type raspV_node_type(rasp_ctx *ctx, int node);
value *raspV_as_sop(rasp_ctx *ctx, value *v, rasp_pos pos); /* scalars -> full */
value *raspV_binop(rasp_ctx *ctx, rasp_binop op, value *a, value *b, rasp_pos pos);
value *raspV_unop(rasp_ctx *ctx, rasp_unop op, value *a, rasp_pos pos);
value *raspV_sop_index(rasp_ctx *ctx, value *sop, int64_t i, rasp_pos pos);  /* x[i] */
value *raspV_sop_store(rasp_ctx *ctx, value *sop, int64_t i, value *v, rasp_pos pos); /* x[i] = v */

/* provenance: records (first place only, never during evaluator
** callbacks) that the program observed the numbering of the ids at pos;
** raspV_ids_in records it if v holds an id (in a list, tuple or dict too)
** or is d or reverse_d.  Neither changes what the program does. */
void raspV_ids_seen(rasp_ctx *ctx, rasp_pos pos, const char *what);
void raspV_ids_in(rasp_ctx *ctx, value *v, rasp_pos pos, const char *what);
/* The same for a dict operation with key: an id as the key of any dict
** but reverse_d, or a number that is not an id as reverse_d's key. */
void raspV_ids_key(rasp_ctx *ctx, value *dict, value *key, rasp_pos pos);
/* a == b where one side holds an id and the other a number that is not one */
void raspV_ids_eq(rasp_ctx *ctx, const value *a, const value *b, rasp_pos pos);
/* iterating d or reverse_d (their order is the id order) */
static inline void raspV_ids_iter(rasp_ctx *ctx, value *v, rasp_pos pos) {
  if (v->tag & (TAG_D_BY_ID | TAG_REVERSE_D))
    raspV_ids_seen(ctx, pos, "iterating d or reverse_d, whose order is the id order");
}

/* ---- rinterp.c: evaluation */

value *raspV_eval(rasp_ctx *ctx, env *e, const rasp_ast *x);
void raspV_exec_block(rasp_ctx *ctx, env *e, rasp_ast **body, int n);
value *raspV_call(rasp_ctx *ctx, value *fn, value **args, int nargs,
                  const char **kwnames, value **kwvals, int nkw, rasp_pos pos);
void raspV_env_set(rasp_ctx *ctx, env *e, const char *name, value *v);
value *raspV_env_get(env *e, const char *name); /* e and its parents; NULL: none */
int raspV_env_has(const env *e, const char *name); /* e itself */
value *raspV_global(rasp_ctx *ctx, const char *name);

/* ---- rapi.c: errors and entry points */

/* errors: longjmp to the innermost catcher; raspV_error's code is
** RASP_E_RUNTIME, raspV_raise names one (rerror.h) */
_Noreturn void raspV_error(rasp_ctx *ctx, rasp_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
_Noreturn void raspV_raise(rasp_ctx *ctx, rasp_errcode code, rasp_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
_Noreturn void raspV_vraise(rasp_ctx *ctx, rasp_errcode code, rasp_pos pos, const char *fmt,
                            va_list ap);
/* an unknown name, which becomes the error's subject (fmt has one %s) */
_Noreturn void raspV_unknown_name(rasp_ctx *ctx, rasp_pos pos, const char *fmt, const char *name);

value *raspV_include(rasp_ctx *ctx, value *path, rasp_pos pos);
/* for staging (rstage.c): a protected region (lock held, errors caught,
** its values released) */
int raspV_protected(rasp_ctx *ctx, rasp_error *err, void (*body)(rasp_ctx *, void *),
                    void *arg);

#endif
