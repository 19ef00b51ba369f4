/*
** raux.h -- the builtins' view of the interpreter (internal to librasp).
**
** Lua's lauxlib idea: the functions every program sees (rbuiltin.c) are
** written against a small interface, not against the interpreter's insides
** (rinterp_int.h).  To a builtin the context is opaque; values are the
** representation of rvalue.h, which it reads directly and whose items it
** may fill in while the value is new; everything else goes through the
** functions below:
**   - making values: every allocation is the heap's, so early release and
**     the caches stay right;
**   - storing a value into an existing list or dict, or keeping one beyond
**     the call (an IR node's function): these carry the write barrier, the
**     one rule a builtin could otherwise break silently (rvalue.h);
**   - errors, which longjmp to the interpreter's catcher and never return;
**   - the tracer: IR nodes are made only here (raspH_node), so the rules
**     every node obeys hold for the builtins' nodes too; the nodes
**     themselves are read and annotated through the public rasp_ctx_ir;
**   - provenance: builtins that could show an id's number say so.
** raux.c implements them on the interpreter's insides, one call each.
** The prefix is raspH_ (helpers).
*/
#ifndef RASP_RAUX_H
#define RASP_RAUX_H

#include "rasp.h"
#include "rvalue.h"

/* ---- errors: raised at pos, never return.  raspH_error's code is
** RASP_E_RUNTIME; raspH_raise names one (rerror.h). */
_Noreturn void raspH_error(rasp_ctx *ctx, rasp_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
_Noreturn void raspH_raise(rasp_ctx *ctx, rasp_errcode code, rasp_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- making values (owned by the context, like every value) */
value *raspH_none(rasp_ctx *ctx);
value *raspH_bool(rasp_ctx *ctx, int b);
value *raspH_int(rasp_ctx *ctx, long n);
value *raspH_number(rasp_ctx *ctx); /* 0, for the caller to set (u.q initialised) */
value *raspH_str(rasp_ctx *ctx, const char *s, size_t len);
value *raspH_list(rasp_ctx *ctx, vkind kind, int n); /* V_LIST or V_TUPLE; n NULL items */
value *raspH_dict(rasp_ctx *ctx);
value *raspH_from_elem(rasp_ctx *ctx, rasp_elem e);

/* ---- storing (with the write barrier) */
void raspH_push(rasp_ctx *ctx, value *list, value *item); /* the list limit applies */
void raspH_dict_set(rasp_ctx *ctx, value *dict, value *key, value *val);
void raspH_keep(rasp_ctx *ctx, value *v); /* v outlives every early release */

/* ---- reading values */
const char *raspH_kind_name(const value *v);   /* "a list", ... */
int raspH_truth(rasp_ctx *ctx, value *v, rasp_pos pos); /* error for a sequence */
int raspH_equal(const value *a, const value *b);
int64_t raspH_to_int(rasp_ctx *ctx, value *v, rasp_pos pos, const char *what);
rasp_elem raspH_to_elem(rasp_ctx *ctx, value *v, rasp_pos pos);
char *raspH_repr(rasp_ctx *ctx, value *v); /* malloc'd (raspM_free); cut at max_string */
const rasp_limits *raspH_limits(const rasp_ctx *ctx);

/* ---- operators and calls, as the program's own (sequences make nodes) */
value *raspH_binop(rasp_ctx *ctx, rasp_binop op, value *a, value *b, rasp_pos pos);
value *raspH_unop(rasp_ctx *ctx, rasp_unop op, value *a, rasp_pos pos);
value *raspH_call(rasp_ctx *ctx, value *fn, value **args, int nargs, rasp_pos pos);

/* ---- the tracer */
/* a new IR node (raspV_add_node's rules); its id */
int raspH_node(rasp_ctx *ctx, rasp_op op, rasp_type type, int aux, const int *in, int nin,
               rasp_pos pos);
value *raspH_sop(rasp_ctx *ctx, int node, vkind kind); /* V_SOP or V_SEL naming node */
value *raspH_as_sop(rasp_ctx *ctx, value *v, rasp_pos pos); /* a scalar becomes `full` */
value *raspH_indices(rasp_ctx *ctx);

/* ---- provenance (rtrace.c): the program may be observing the ids'
** numbering through v (printing it, say), through a lookup with key, or
** by walking v when it is d or reverse_d */
void raspH_ids_in(rasp_ctx *ctx, value *v, rasp_pos pos, const char *what);
void raspH_ids_key(rasp_ctx *ctx, value *dict, value *key, rasp_pos pos);
void raspH_ids_iter(rasp_ctx *ctx, value *v, rasp_pos pos);

/* ---- include(path): runs another program file in the global scope */
value *raspH_include(rasp_ctx *ctx, value *path, rasp_pos pos);

#endif
