/*
** rvalue.h -- what an interpreter value is (internal to librasp).
**
** The representation of the values a program computes with, which the
** interpreter (rinterp_int.h), the builtins (raux.h) and cfunc() (rffi.h)
** all read.  Nothing here says how values are made, changed or freed: the
** interpreter does that, and offers the builtins the part they need
** through raux.h, so that the context (rasp_ctx, opaque outside the
** interpreter) and its heap stay behind one wall.
**
** Ownership rule: every value is owned by its context.  Values are never
** freed one by one; rasp_ctx_free releases them all.  A value allocated
** after a heap mark can be released early (raspV_release), which the
** verifier does after each output check; a write barrier notices when such
** a value escapes into an older object and then keeps everything, so early
** release can never free a reachable value.  That is why a builtin stores
** into an object older than its item only through raux.h (raspH_push,
** raspH_dict_set, raspH_keep), and writes the items of an object it has just
** made directly (they cannot be older than it).
*/
#ifndef RASP_RVALUE_H
#define RASP_RVALUE_H

#include <gmp.h>

#include "rasp.h"
#include "rast.h"
#include "rir.h"
#include "rmem.h"

typedef enum vkind {
  V_NONE, V_BOOL, V_NUM, V_STR, V_TUPLE, V_LIST, V_DICT,
  V_FUNC, V_BUILTIN, V_CFUNC, V_SOP, V_SEL
} vkind;

typedef struct value value;
typedef struct env env;         /* a scope: rinterp_int.h */
typedef struct builtin builtin;
typedef struct rasp_cfunc rasp_cfunc; /* a bound C function: rffi.c */

/* Provenance tags (value.tag).  A number handed out by the vocabulary
** (d's values, reverse_d's keys) is V_ID: it keeps the tag wherever it is
** moved, and anything done with it that could tell which id a symbol got
** is recorded (raspV_ids_seen; rorder.h says why).  D_BY_ID marks the
** dicts d and reverse_d, whose order is the id order. */
enum { TAG_ID = 1, TAG_D_BY_ID = 2, TAG_REVERSE_D = 4 };

struct value {
  vkind kind;
  unsigned char tag;         /* TAG_*; 0 for every value the program makes */
  unsigned char gcmark;      /* the heap's: reached by the collector's mark */
  unsigned long long serial; /* the heap's: allocation order, for early release */
  value *next_obj;           /* the heap's: its list of objects */
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

/* The builtins every context binds (rbuiltin.c), in a fixed order. */
const builtin *raspB_table(int *count);

#endif
