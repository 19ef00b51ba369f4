/*
** raux.c -- the builtins' interface (raux.h) on top of the interpreter.
**
** Each function is one call into the interpreter's insides
** (rinterp_int.h); what it adds is the wall: rbuiltin.c compiles without
** seeing the context or the heap, so a builtin cannot store past the write
** barrier or make a node by hand, and the interpreter can change its
** insides without touching the builtins.  Wrapping costs one direct call;
** nothing here allocates or checks anything of its own.
*/
#include "raux.h"

#include "rinterp_int.h"

_Noreturn void raspH_error(rasp_ctx *ctx, rasp_pos pos, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  raspV_vraise(ctx, RASP_E_RUNTIME, pos, fmt, ap);
}

_Noreturn void raspH_raise(rasp_ctx *ctx, rasp_errcode code, rasp_pos pos, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  raspV_vraise(ctx, code, pos, fmt, ap);
}

/* ---------------------------------------------------------- making values */

value *raspH_none(rasp_ctx *ctx) { return &ctx->none_v; }
value *raspH_bool(rasp_ctx *ctx, int b) { return raspV_bool(ctx, b); }
value *raspH_int(rasp_ctx *ctx, long n) { return raspV_num_si(ctx, n); }
value *raspH_number(rasp_ctx *ctx) { return raspV_new(ctx, V_NUM); }
value *raspH_str(rasp_ctx *ctx, const char *s, size_t len) { return raspV_str(ctx, s, len); }
value *raspH_list(rasp_ctx *ctx, vkind kind, int n) { return raspV_list(ctx, kind, n); }
value *raspH_dict(rasp_ctx *ctx) { return raspV_new(ctx, V_DICT); }
value *raspH_from_elem(rasp_ctx *ctx, rasp_elem e) { return raspV_from_elem(ctx, e); }

/* ---------------------------------------------------------------- storing */

void raspH_push(rasp_ctx *ctx, value *list, value *item) { raspV_list_push(ctx, list, item); }

void raspH_dict_set(rasp_ctx *ctx, value *dict, value *key, value *val) {
  raspV_dict_set(ctx, dict, key, val);
}

/* held by something older than any mark (serial 0), such as an IR node */
void raspH_keep(rasp_ctx *ctx, value *v) { raspV_barrier(ctx, 0, v); }

/* ---------------------------------------------------------- reading values */

const char *raspH_kind_name(const value *v) { return raspV_kind_name(v); }
int raspH_truth(rasp_ctx *ctx, value *v, rasp_pos pos) { return raspV_truth(ctx, v, pos); }
int raspH_equal(const value *a, const value *b) { return raspV_equal(a, b); }

int64_t raspH_to_int(rasp_ctx *ctx, value *v, rasp_pos pos, const char *what) {
  return raspV_int(ctx, v, pos, what);
}

rasp_elem raspH_to_elem(rasp_ctx *ctx, value *v, rasp_pos pos) {
  return raspV_to_elem(ctx, v, pos);
}

char *raspH_repr(rasp_ctx *ctx, value *v) { return raspV_repr(ctx, v); }
const rasp_limits *raspH_limits(const rasp_ctx *ctx) { return &ctx->limits; }

/* ------------------------------------------------------ operators, calls */

value *raspH_binop(rasp_ctx *ctx, rasp_binop op, value *a, value *b, rasp_pos pos) {
  return raspV_binop(ctx, op, a, b, pos);
}

value *raspH_unop(rasp_ctx *ctx, rasp_unop op, value *a, rasp_pos pos) {
  return raspV_unop(ctx, op, a, pos);
}

value *raspH_call(rasp_ctx *ctx, value *fn, value **args, int nargs, rasp_pos pos) {
  return raspV_call(ctx, fn, args, nargs, NULL, NULL, 0, pos);
}

/* ------------------------------------------------------------- the tracer */

int raspH_node(rasp_ctx *ctx, rasp_op op, rasp_type type, int aux, const int *in, int nin,
               rasp_pos pos) {
  return raspV_add_node(ctx, op, type, aux, in, nin, pos);
}

value *raspH_sop(rasp_ctx *ctx, int node, vkind kind) { return raspV_sop(ctx, node, kind); }
value *raspH_as_sop(rasp_ctx *ctx, value *v, rasp_pos pos) { return raspV_as_sop(ctx, v, pos); }
value *raspH_indices(rasp_ctx *ctx) { return raspV_sop(ctx, ctx->indices_node, V_SOP); }

/* ------------------------------------------------------------- provenance */

void raspH_ids_in(rasp_ctx *ctx, value *v, rasp_pos pos, const char *what) {
  raspV_ids_in(ctx, v, pos, what);
}

void raspH_ids_key(rasp_ctx *ctx, value *dict, value *key, rasp_pos pos) {
  raspV_ids_key(ctx, dict, key, pos);
}

void raspH_ids_iter(rasp_ctx *ctx, value *v, rasp_pos pos) { raspV_ids_iter(ctx, v, pos); }

value *raspH_include(rasp_ctx *ctx, value *path, rasp_pos pos) {
  return raspV_include(ctx, path, pos);
}
