/*
** rvalue.h -- interpreter values and the context (internal to librasp).
**
** Ownership rule: every value is owned by its context.  Values are never
** freed one by one; rasp_ctx_free releases them all.  A value allocated
** after a heap mark can be released early with raspV_release, which the
** verifier does after each output check; a write barrier (raspV_barrier)
** notices when such a value escapes into an older object and then keeps
** everything, so early release can never free a reachable value.
*/
#ifndef RASP_RVALUE_H
#define RASP_RVALUE_H

#include <gmp.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>

#include "rasp.h"
#include "rast.h"
#include "rir.h"
#include "rmem.h"

typedef enum vkind {
  V_NONE, V_BOOL, V_NUM, V_STR, V_TUPLE, V_LIST, V_DICT,
  V_FUNC, V_BUILTIN, V_CFUNC, V_SOP, V_SEL
} vkind;

typedef struct value value;
typedef struct env env;
typedef struct builtin builtin;
typedef struct rasp_cfunc rasp_cfunc;

/* Provenance tags (value.tag).  A number handed out by the vocabulary
** (d's values, reverse_d's keys) is V_ID: it keeps the tag wherever it is
** moved, and anything done with it that could tell which id a symbol got
** is recorded (raspV_ids_seen; rorder.h says why).  D_BY_ID marks the
** dicts d and reverse_d, whose order is the id order. */
enum { TAG_ID = 1, TAG_D_BY_ID = 2, TAG_REVERSE_D = 4 };

struct value {
  vkind kind;
  unsigned char tag;         /* TAG_*; 0 for every value the program makes */
  unsigned long long serial; /* allocation order, for early release */
  value *next_obj;
  union {
    int b;
    mpq_t q;
    struct { char *s; size_t len; int64_t sym; } str; /* sym -1: not interned yet */
    struct { value **items; int n, cap; } list;        /* tuple and list */
    struct { value **keys, **vals; int n, cap; int *index; int icap; } dict; /* index: open hash */
    struct { const rasp_ast *def; env *closure; value **defaults; int ndefaults; } func;
    const builtin *bi;
    rasp_cfunc *cf;
    int node;                                          /* SOP and SEL */
  } u;
};

struct env {
  env *parent;
  const char **names; /* interned */
  value **vals;
  int n, cap;
  int *hash;          /* open addressing over names, for large scopes */
  int hcap;
  unsigned long long serial;
  env *next_env;
};

/* A builtin: params "k,q,pred,causal=True" parsed at start-up. */
typedef value *(*builtin_fn)(rasp_ctx *ctx, value **args, int nargs,
                             rasp_pos pos);
struct builtin {
  const char *name;
  const char *params; /* comma-separated; '*' alone: variadic */
  builtin_fn fn;
  int pred;           /* rasp_pred for predicate builtins, else -1 */
  const char *doc;
};

struct rasp_ctx {
  rasp_limits limits;
  int n;                 /* traced length */
  rasp_ir ir;
  /* heap */
  value *objects;
  value *consts;         /* literals cached in the syntax tree: never released early */
  value *spare;          /* released value structs for reuse (next_obj chain) */
  value *spare_num;      /* the same with their mpq_t still initialised */
  int nspare;
  env *spare_env;        /* released scopes, arrays kept (next_env chain) */
  int nspare_env;
  value **intcache;      /* small integers, shared (values are immutable) */
  const char *check_name, *check_interned; /* rasp_call_check's last name */
  struct bi_sig *bisigs;  /* per builtin (raspB_table order): parsed params */
  int nbisigs;
  value **symcache;      /* one string value per symbol id */
  int64_t symcache_n;
  env *envs;
  unsigned long long serial, mark;
  int pinned;
  value none_v, true_v, false_v;
  /* globals and names */
  env *globals;
  char **interned;       /* open hash of interned strings */
  size_t ninterned, icap;
  /* symbols: id -> text */
  char **syms;
  int64_t nsyms, symcap;
  int *symhash;
  size_t symhcap;
  /* vocabulary: token id i+1 -> symbol id vocab[i] */
  int64_t *vocab;
  int nvocab;
  int64_t *token_of;     /* symbol id -> token id (0: none), for lookups */
  int64_t ntoken_of;
  /* sources kept for error messages, and parse arenas */
  rasp_source **sources;
  int nsources, srccap;
  rasp_arena ast_arena;
  /* errors */
  jmp_buf *catcher;
  rasp_error *err;
  int depth;
  rasp_pos site;         /* innermost call in user code (not the stdlib) */
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
  int input_node, indices_node;
  pthread_mutex_t lock;  /* callbacks from evaluator threads */
  char *stdlib_dir;
  /* rasp_access, resolved: include() trees are real paths */
  int allow_ffi;
  char *include_root;    /* NULL until the first rasp_exec_file */
  char **include_dirs;
  int ninclude_dirs;
  void **dl_handles;
  int ndl, dlcap;
};

/* heap */
value *raspV_new(rasp_ctx *ctx, vkind kind);
value *raspV_num_si(rasp_ctx *ctx, long v);
value *raspV_bool(rasp_ctx *ctx, int b);
value *raspV_str(rasp_ctx *ctx, const char *s, size_t len);
value *raspV_list(rasp_ctx *ctx, vkind kind, int n); /* n NULL items */
void raspV_list_push(rasp_ctx *ctx, value *list, value *item);
value *raspV_sop(rasp_ctx *ctx, int node, vkind kind);
void raspV_barrier(rasp_ctx *ctx, unsigned long long holder_serial, value *v);
const char *raspV_intern(rasp_ctx *ctx, const char *s);

/* errors: longjmp to the innermost catcher; raspV_error's code is
** RASP_E_RUNTIME, raspV_raise names one (rerror.h) */
_Noreturn void raspV_error(rasp_ctx *ctx, rasp_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
_Noreturn void raspV_raise(rasp_ctx *ctx, rasp_errcode code, rasp_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* provenance: records (first place only, never during evaluator
** callbacks) that the program observed the numbering of the ids at pos;
** raspV_ids_in records it if v holds an id (in a list, tuple or dict too)
** or is d or reverse_d.  Neither changes what the program does. */
void raspV_ids_seen(rasp_ctx *ctx, rasp_pos pos, const char *what);
void raspV_ids_in(rasp_ctx *ctx, value *v, rasp_pos pos, const char *what);
/* The same for a dict operation with key: an id as the key of any dict
** but reverse_d, or a number that is not an id as reverse_d's key. */
void raspV_ids_key(rasp_ctx *ctx, value *dict, value *key, rasp_pos pos);
/* iterating d or reverse_d (their order is the id order) */
static inline void raspV_ids_iter(rasp_ctx *ctx, value *v, rasp_pos pos) {
  if (v->tag & (TAG_D_BY_ID | TAG_REVERSE_D))
    raspV_ids_seen(ctx, pos, "iterating d or reverse_d, whose order is the id order");
}

/* conversions and helpers shared by the builtins */
const char *raspV_kind_name(const value *v);
int raspV_truth(rasp_ctx *ctx, value *v, rasp_pos pos);
int raspV_equal(const value *a, const value *b);
int64_t raspV_int(rasp_ctx *ctx, value *v, rasp_pos pos, const char *what);
rasp_elem raspV_to_elem(rasp_ctx *ctx, value *v, rasp_pos pos);
value *raspV_from_elem(rasp_ctx *ctx, rasp_elem e);
char *raspV_repr(rasp_ctx *ctx, value *v); /* malloc'd; cut at max_string bytes + "..." */
int64_t raspV_symbol_of(rasp_ctx *ctx, value *str);
value *raspV_call(rasp_ctx *ctx, value *fn, value **args, int nargs,
                  const char **kwnames, value **kwvals, int nkw, rasp_pos pos);
value *raspV_dict_get(value *dict, value *key);
void raspV_dict_set(rasp_ctx *ctx, value *dict, value *key, value *val);

/* tracing: node construction */
int raspV_add_node(rasp_ctx *ctx, rasp_op op, rasp_type type, int aux,
                   const int *in, int nin, rasp_pos pos);
value *raspV_as_sop(rasp_ctx *ctx, value *v, rasp_pos pos); /* scalars -> full */
value *raspV_binop(rasp_ctx *ctx, rasp_binop op, value *a, value *b, rasp_pos pos);
value *raspV_unop(rasp_ctx *ctx, rasp_unop op, value *a, rasp_pos pos);
rasp_type raspV_node_type(rasp_ctx *ctx, int node);

value *raspV_include(rasp_ctx *ctx, value *path, rasp_pos pos);

/* for staging (rstage.c): evaluation in a scope, scopes, globals, and a
** protected region (lock held, errors caught, its values released) */
value *raspV_eval(rasp_ctx *ctx, env *e, const rasp_ast *x);
env *raspV_env_new(rasp_ctx *ctx, env *parent);
void raspV_env_set(rasp_ctx *ctx, env *e, const char *name, value *v);
value *raspV_global(rasp_ctx *ctx, const char *name);
int raspV_protected(rasp_ctx *ctx, rasp_error *err, void (*body)(rasp_ctx *, void *),
                    void *arg);

/* builtins table (rbuiltin.c) and ffi (rffi.c) */
const builtin *raspB_table(int *count);
value *raspF_bind(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos);
value *raspF_call(rasp_ctx *ctx, rasp_cfunc *cf, value **args, int nargs,
                  rasp_pos pos);
void raspF_free(rasp_cfunc *cf);

#endif
