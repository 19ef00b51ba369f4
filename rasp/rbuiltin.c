/*
** rbuiltin.c -- the functions every program sees.
**
** Two families.  The RASP primitives (full, indices, select, aggregate, ...)
** build IR nodes; they are the C side of the language, and rprim.h says
** which transformer component each node stands for.  Everything that can be
** written in the language itself (kqv, shift_right, cumsum, is_true, ...)
** lives in stdlib/core.rasp instead.  The Python builtins (len, range, min,
** ...) work on scalars at trace time; a few of them (abs, min, max) also
** accept sequences, where they are element-wise.  Those that could show a
** token id's number (str, print, a walk over d) tell the interpreter's
** provenance tracking (raspH_ids_*); int() of an id is the id.
**
** Argument conventions: each builtin declares its parameters as a string
** ("k,q,pred,causal=True"); the interpreter binds positional and keyword
** arguments and fills defaults before calling, so every function below
** receives exactly its declared parameters in order.
**
** The interpreter is reached through raux.h and the public rasp.h only:
** the context is opaque here, values are made and stored through raspH_
** functions (which carry the heap's write barrier), and nodes are made by
** raspH_node and annotated through rasp_ctx_ir.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp.h"
#include "raux.h"
#include "rfacts.h"
#include "rffi.h"

#define A(i) args[i]

/* The IR's nodes, through the public API: a node is made by raspH_node and
** then annotated here (its function, flags, constant). */
static rasp_ir_node *node_at(rasp_ctx *ctx, int id) { return &rasp_ctx_ir(ctx)->nodes[id]; }
static rasp_type node_type(rasp_ctx *ctx, int id) { return node_at(ctx, id)->type; }

static int is_seq(const value *v) { return v->kind == V_SOP; }

static value *need_sel(rasp_ctx *ctx, value *v, rasp_pos pos, const char *fname) {
  if (v->kind != V_SEL)
    raspH_error(ctx, pos, "%s() needs a selector (from select) as its first argument, not %s",
                fname, raspH_kind_name(v));
  return v;
}

/* A program function kept by an IR node must outlive early heap releases. */
static void *keep_fn(rasp_ctx *ctx, value *fn, rasp_pos pos, const char *what) {
  if (fn->kind != V_FUNC && fn->kind != V_BUILTIN && fn->kind != V_CFUNC)
    raspH_error(ctx, pos, "%s must be a function, not %s", what, raspH_kind_name(fn));
  raspH_keep(ctx, fn);
  return fn;
}

static rasp_type join_type(rasp_type a, rasp_type b) { return a == b ? a : RASP_T_ANY; }

/* full(x, const) */
static value *b_full(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  if (A(0)->kind == V_LIST || A(0)->kind == V_TUPLE) {
    value *r = raspH_list(ctx, A(0)->kind, A(0)->u.list.n);
    for (int i = 0; i < r->u.list.n; i++) r->u.list.items[i] = A(1);
    return r;
  }
  if (!is_seq(A(0)))
    raspH_error(ctx, pos, "full() takes a sequence to copy the shape of, not %s",
                raspH_kind_name(A(0)));
  if (is_seq(A(1))) raspH_error(ctx, pos, "full() needs a constant, not a sequence");
  return raspH_as_sop(ctx, A(1), pos);
}

/* indices(x) */
static value *b_indices(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  if (!is_seq(A(0)))
    raspH_error(ctx, pos, "indices() takes a sequence, not %s", raspH_kind_name(A(0)));
  return raspH_indices(ctx);
}

/* select(k, q, pred, causal=True) */
static value *b_select(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  value *k = raspH_as_sop(ctx, A(0), pos), *q = raspH_as_sop(ctx, A(1), pos);
  int pred = RASP_PRED_CUSTOM;
  void *fn = NULL;
  if (A(2)->kind == V_BUILTIN && A(2)->u.bi->pred >= 0) pred = A(2)->u.bi->pred;
  else fn = keep_fn(ctx, A(2), pos, "the predicate");
  int causal = raspH_truth(ctx, A(3), pos);
  int in[2] = {k->u.node, q->u.node};
  int id = raspH_node(ctx, RASP_OP_SELECT, RASP_T_SEL, pred, in, 2, pos);
  node_at(ctx, id)->fn = fn;
  node_at(ctx, id)->flags = causal ? RASP_CAUSAL : 0;
  return raspH_sop(ctx, id, V_SEL);
}

/* sel_width(A) */
static value *b_sel_width(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  int in[1] = {need_sel(ctx, A(0), pos, "sel_width")->u.node};
  return raspH_sop(ctx, raspH_node(ctx, RASP_OP_SEL_WIDTH, RASP_T_INT, 0, in, 1, pos), V_SOP);
}

static value *aggregate_like(rasp_ctx *ctx, rasp_op op, const char *name, value **args,
                             rasp_pos pos) {
  value *sel = need_sel(ctx, A(0), pos, name);
  value *v = raspH_as_sop(ctx, A(1), pos);
  if (is_seq(A(2)) || A(2)->kind == V_SEL)
    raspH_error(ctx, pos, "the default of %s() must be a constant, not %s", name,
                raspH_kind_name(A(2)));
  rasp_elem dflt = raspH_to_elem(ctx, A(2), pos);
  rasp_type tv = node_type(ctx, v->u.node);
  rasp_type td = dflt.den == RASP_DEN_BOOL ? RASP_T_BOOL : dflt.den == 1 ? RASP_T_INT : RASP_T_ANY;
  rasp_type t = op == RASP_OP_AGGR_MEAN ? RASP_T_INT
              : op == RASP_OP_AGGREGATE ? RASP_T_ANY : join_type(tv, td);
  int in[2] = {sel->u.node, v->u.node};
  int id = raspH_node(ctx, op, t, 0, in, 2, pos);
  rasp_ir_node *nd = node_at(ctx, id);
  nd->c = dflt; /* a default that could be an id makes the values not tokens */
  if (!raspI_carries_tokens(rasp_ctx_ir(ctx), nd)) nd->flags &= ~RASP_TOKEN_IDS;
  return raspH_sop(ctx, id, V_SOP);
}

static value *b_aggr_mean(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  return aggregate_like(ctx, RASP_OP_AGGR_MEAN, "aggr_mean", args, pos);
}
static value *b_aggregate(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  return aggregate_like(ctx, RASP_OP_AGGREGATE, "aggregate", args, pos);
}
static value *b_aggr_max(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  return aggregate_like(ctx, RASP_OP_AGGR_MAX, "aggr_max", args, pos);
}
static value *b_aggr_min(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  return aggregate_like(ctx, RASP_OP_AGGR_MIN, "aggr_min", args, pos);
}

/* tok_map(x, f) */
static value *b_tok_map(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  if (!is_seq(A(0))) return raspH_call(ctx, A(1), &A(0), 1, pos);
  void *fn = keep_fn(ctx, A(1), pos, "tok_map's function");
  int in[1] = {A(0)->u.node};
  int id = raspH_node(ctx, RASP_OP_MAP, RASP_T_ANY, 0, in, 1, pos);
  node_at(ctx, id)->fn = fn;
  return raspH_sop(ctx, id, V_SOP);
}

/* seq_map(x, y, f) */
static value *b_seq_map(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  if (!is_seq(A(0)) && !is_seq(A(1))) {
    value *r = raspH_call(ctx, A(2), &A(0), 2, pos);
    if (r->tag & TAG_ID) return r; /* an integer already: keep its provenance */
    return raspH_from_elem(ctx, raspI_elem_trunc(raspH_to_elem(ctx, r, pos)));
  }
  void *fn = keep_fn(ctx, A(2), pos, "seq_map's function");
  value *x = raspH_as_sop(ctx, A(0), pos), *y = raspH_as_sop(ctx, A(1), pos);
  int in[2] = {x->u.node, y->u.node};
  int id = raspH_node(ctx, RASP_OP_SEQMAP, RASP_T_ANY, 0, in, 2, pos);
  node_at(ctx, id)->fn = fn;
  return raspH_sop(ctx, id, V_SOP);
}

/* where(cond, x, y) */
static value *b_where(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  if (!is_seq(A(0))) return raspH_truth(ctx, A(0), pos) ? A(1) : A(2);
  value *x = raspH_as_sop(ctx, A(1), pos), *y = raspH_as_sop(ctx, A(2), pos);
  int in[3] = {A(0)->u.node, x->u.node, y->u.node};
  rasp_type t = join_type(node_type(ctx, in[1]), node_type(ctx, in[2]));
  return raspH_sop(ctx, raspH_node(ctx, RASP_OP_WHERE, t, 0, in, 3, pos), V_SOP);
}

/* The comparison predicates double as element-wise comparisons. */
#define PRED_BUILTIN(fname, binop)                                             \
  static value *b_##fname(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) { \
    (void)nargs;                                                               \
    return raspH_binop(ctx, binop, A(0), A(1), pos);                           \
  }
PRED_BUILTIN(equals, RASP_BIN_EQ)
PRED_BUILTIN(not_equals, RASP_BIN_NE)
PRED_BUILTIN(lt, RASP_BIN_LT)
PRED_BUILTIN(leq, RASP_BIN_LE)
PRED_BUILTIN(gt, RASP_BIN_GT)
PRED_BUILTIN(geq, RASP_BIN_GE)

static value *b_always(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)args; (void)nargs; (void)pos;
  return raspH_bool(ctx, 1);
}
static value *b_never(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)args; (void)nargs; (void)pos;
  return raspH_bool(ctx, 0);
}

/* ---------------------------------------------------- Python builtins */

static value *b_len(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  switch (A(0)->kind) {
  case V_SOP: return raspH_int(ctx, rasp_ctx_length(ctx));
  case V_LIST:
  case V_TUPLE: return raspH_int(ctx, A(0)->u.list.n);
  case V_STR: return raspH_int(ctx, (long)A(0)->u.str.len);
  case V_DICT: return raspH_int(ctx, A(0)->u.dict.n);
  default: raspH_error(ctx, pos, "len() of %s", raspH_kind_name(A(0)));
  }
}

static value *b_range(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  if (nargs < 1 || nargs > 3) raspH_error(ctx, pos, "range() takes 1 to 3 arguments");
  int64_t start = 0, stop, step = 1;
  if (nargs == 1) stop = raspH_to_int(ctx, A(0), pos, "range()'s argument");
  else {
    start = raspH_to_int(ctx, A(0), pos, "range()'s start");
    stop = raspH_to_int(ctx, A(1), pos, "range()'s stop");
    if (nargs == 3) step = raspH_to_int(ctx, A(2), pos, "range()'s step");
  }
  if (step == 0) raspH_error(ctx, pos, "range() step must not be zero");
  uint64_t count = step > 0 ? (stop > start ? ((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1 : 0)
                             : (start > stop ? ((uint64_t)start - (uint64_t)stop - 1) / (0 - (uint64_t)step) + 1 : 0);
  if (count > raspH_limits(ctx)->max_list)
    raspH_raise(ctx, RASP_E_LIMIT, pos, "list longer than the limit of %zu elements", raspH_limits(ctx)->max_list);
  value *r = raspH_list(ctx, V_LIST, (int)count);
  for (uint64_t k = 0; k < count; k++) /* new values are younger than r: no barrier */
    r->u.list.items[k] = raspH_int(ctx, (long)(start + (int64_t)k * step));
  return r;
}

static value *b_int(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  value *x = A(0);
  if (x->kind == V_STR) {
    char *end;
    long v = strtol(x->u.str.s, &end, 10);
    if (end == x->u.str.s || *end) raspH_error(ctx, pos, "int(): not a number: '%s'", x->u.str.s);
    return raspH_int(ctx, v);
  }
  if (x->kind == V_BOOL) return raspH_int(ctx, x->u.b);
  /* numbers, and sequences element-wise (toward zero, as Python's int) */
  return raspH_unop(ctx, RASP_UN_TRUNC, x, pos);
}

/* round(x): the nearest integer, ties to the even one (Python's);
** element-wise on sequences. */
static value *b_round(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  if (A(0)->kind == V_BOOL) return raspH_int(ctx, A(0)->u.b);
  return raspH_unop(ctx, RASP_UN_ROUND, A(0), pos);
}

static value *b_abs(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  return raspH_unop(ctx, RASP_UN_ABS, A(0), pos);
}

static value *minmax(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos, rasp_binop op) {
  value **items = args;
  int n = nargs;
  if (nargs == 1 && !is_seq(A(0))) {
    if (A(0)->kind != V_LIST && A(0)->kind != V_TUPLE)
      raspH_error(ctx, pos, "%s() of %s", op == RASP_BIN_MIN ? "min" : "max",
                  raspH_kind_name(A(0)));
    items = A(0)->u.list.items;
    n = A(0)->u.list.n;
  }
  if (n == 0) raspH_error(ctx, pos, "%s() of an empty sequence", op == RASP_BIN_MIN ? "min" : "max");
  value *acc = items[0];
  for (int i = 1; i < n; i++) acc = raspH_binop(ctx, op, acc, items[i], pos);
  return acc;
}

static value *b_min(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  return minmax(ctx, args, nargs, pos, RASP_BIN_MIN);
}
static value *b_max(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  return minmax(ctx, args, nargs, pos, RASP_BIN_MAX);
}

static value *as_items(rasp_ctx *ctx, value *v, rasp_pos pos, const char *fname) {
  if (v->kind == V_LIST || v->kind == V_TUPLE) return v;
  if (v->kind == V_DICT || v->kind == V_STR) {
    raspH_ids_iter(ctx, v, pos);
    value *r = raspH_list(ctx, V_LIST, 0);
    if (v->kind == V_DICT)
      for (int i = 0; i < v->u.dict.n; i++) raspH_push(ctx, r, v->u.dict.keys[i]);
    else
      for (size_t i = 0; i < v->u.str.len; i++) raspH_push(ctx, r, raspH_str(ctx, v->u.str.s + i, 1));
    return r;
  }
  raspH_error(ctx, pos, "%s() needs a list, tuple, dict or string, not %s", fname,
              raspH_kind_name(v));
}

static value *b_sum(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  value *items = as_items(ctx, A(0), pos, "sum");
  value *acc = A(1);
  for (int i = 0; i < items->u.list.n; i++) acc = raspH_binop(ctx, RASP_BIN_ADD, acc, items->u.list.items[i], pos);
  return acc;
}

static value *b_any(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  value *items = as_items(ctx, A(0), pos, "any");
  for (int i = 0; i < items->u.list.n; i++)
    if (raspH_truth(ctx, items->u.list.items[i], pos)) return raspH_bool(ctx, 1);
  return raspH_bool(ctx, 0);
}

/* raspF_scan_pairs's element test on interpreter values. */
typedef struct value_scan {
  value *xs, *ab[2];
} value_scan;

static int value_eq(void *u, int64_t j, int which) {
  const value_scan *vs = u;
  return raspH_equal(vs->xs->u.list.items[j], vs->ab[which]);
}

/* has_pair(xs, a, b, gap, start, stop, step): some i in range(start, stop,
** step) has xs[i] == a and xs[i + gap] == b -- the verifier's usual
** criterion, "some edge holds a then b", as one call (check() runs once per
** graph, and this loop was most of it).  holds_both(xs, a, b, width, ...):
** the window xs[i:i+width] holds a and b, in any slots. */
static value *scan_pairs(rasp_ctx *ctx, value **args, rasp_pos pos, int windows) {
  static const char *const what[2][4] = {
      {"has_pair()'s gap", "has_pair()'s start", "has_pair()'s stop", "has_pair()'s step"},
      {"holds_both()'s width", "holds_both()'s start", "holds_both()'s stop",
       "holds_both()'s step"}};
  const char *fname = windows ? "holds_both" : "has_pair";
  value *xs = A(0);
  if (xs->kind != V_LIST && xs->kind != V_TUPLE)
    raspH_error(ctx, pos, "%s() needs a list or tuple, not %s", fname, raspH_kind_name(xs));
  int64_t k = raspH_to_int(ctx, A(3), pos, what[windows][0]);
  int64_t start = raspH_to_int(ctx, A(4), pos, what[windows][1]);
  int64_t stop = raspH_to_int(ctx, A(5), pos, what[windows][2]);
  int64_t step = raspH_to_int(ctx, A(6), pos, what[windows][3]);
  if (step <= 0) raspH_error(ctx, pos, "%s() step must be positive", fname);
  if (windows && k < 1) raspH_error(ctx, pos, "holds_both() width must be positive");
  /* its == could set an id against a number that is not one */
  for (int i = 0; i < 3; i++) raspH_ids_in(ctx, A(i), pos, "an id compared with a number that is not an id");
  value_scan vs = {xs, {A(1), A(2)}};
  int64_t bad = 0, n = xs->u.list.n;
  int r = raspF_scan_pairs(windows, n, k, start, stop, step, value_eq, &vs, &bad);
  if (r == -2 && windows)
    raspH_error(ctx, pos, "holds_both(): window [%lld, %lld) out of range for length %lld",
                (long long)bad, (long long)(bad + k), (long long)n);
  if (r == -2)
    raspH_error(ctx, pos, "has_pair(): index %lld out of range for length %lld",
                (long long)(bad < 0 || bad >= n ? bad : bad + k), (long long)n);
  return raspH_bool(ctx, r == 1);
}

static value *b_has_pair(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  return scan_pairs(ctx, args, pos, 0);
}

static value *b_holds_both(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  return scan_pairs(ctx, args, pos, 1);
}

static value *b_all(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  value *items = as_items(ctx, A(0), pos, "all");
  for (int i = 0; i < items->u.list.n; i++)
    if (!raspH_truth(ctx, items->u.list.items[i], pos)) return raspH_bool(ctx, 0);
  return raspH_bool(ctx, 1);
}

static value *b_print(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  for (int i = 0; i < nargs; i++) {
    raspH_ids_in(ctx, A(i), pos, "an id printed");
    if (i) fputc(' ', stdout);
    if (A(i)->kind == V_STR) fwrite(A(i)->u.str.s, 1, A(i)->u.str.len, stdout);
    else {
      char *s = raspH_repr(ctx, A(i));
      fputs(s, stdout);
      raspM_free(s);
    }
  }
  fputc('\n', stdout);
  return raspH_none(ctx);
}

static value *b_str(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  if (A(0)->kind == V_STR) return A(0);
  raspH_ids_in(ctx, A(0), pos, "an id turned into text (str)");
  char *s = raspH_repr(ctx, A(0));
  size_t len = strlen(s);
  if (len > raspH_limits(ctx)->max_string) { /* cut short by raspH_repr */
    raspM_free(s);
    raspH_raise(ctx, RASP_E_LIMIT, pos, "string too long: more than %zu bytes (the size limit for strings)",
                raspH_limits(ctx)->max_string);
  }
  value *r = raspH_str(ctx, s, len);
  raspM_free(s);
  return r;
}

static value *b_bool(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  return raspH_bool(ctx, raspH_truth(ctx, A(0), pos));
}

static value *copy_items(rasp_ctx *ctx, value *src, vkind kind) {
  value *r = raspH_list(ctx, kind, src->u.list.n); /* newer than its items: no barrier */
  memcpy(r->u.list.items, src->u.list.items, sizeof(value *) * (size_t)src->u.list.n);
  return r;
}

static value *b_list(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  if (nargs == 0 || A(0)->kind == V_NONE) return raspH_list(ctx, V_LIST, 0);
  return copy_items(ctx, as_items(ctx, A(0), pos, "list"), V_LIST);
}

static value *b_tuple(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  if (nargs == 0 || A(0)->kind == V_NONE) return raspH_list(ctx, V_TUPLE, 0);
  return copy_items(ctx, as_items(ctx, A(0), pos, "tuple"), V_TUPLE);
}

static value *b_dict(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  value *r = raspH_dict(ctx);
  if (nargs && A(0)->kind != V_NONE) {
    value *items = as_items(ctx, A(0), pos, "dict");
    for (int i = 0; i < items->u.list.n; i++) {
      value *kv = items->u.list.items[i];
      if ((kv->kind != V_TUPLE && kv->kind != V_LIST) || kv->u.list.n != 2)
        raspH_error(ctx, pos, "dict() needs (key, value) pairs");
      raspH_ids_key(ctx, r, kv->u.list.items[0], pos);
      raspH_dict_set(ctx, r, kv->u.list.items[0], kv->u.list.items[1]);
    }
  }
  return r;
}

static value *pair(rasp_ctx *ctx, value *a, value *b) {
  value *t = raspH_list(ctx, V_TUPLE, 2);
  t->u.list.items[0] = a;
  t->u.list.items[1] = b;
  return t;
}

static value *b_enumerate(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  value *items = as_items(ctx, A(0), pos, "enumerate");
  value *r = raspH_list(ctx, V_LIST, 0);
  for (int i = 0; i < items->u.list.n; i++)
    raspH_push(ctx, r, pair(ctx, raspH_int(ctx, i), items->u.list.items[i]));
  return r;
}

static value *b_zip(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  value *r = raspH_list(ctx, V_LIST, 0);
  if (nargs == 0) return r;
  int n = -1;
  for (int i = 0; i < nargs; i++) {
    A(i) = as_items(ctx, A(i), pos, "zip");
    if (n < 0 || A(i)->u.list.n < n) n = A(i)->u.list.n;
  }
  for (int k = 0; k < n; k++) {
    value *t = raspH_list(ctx, V_TUPLE, nargs);
    for (int i = 0; i < nargs; i++) t->u.list.items[i] = A(i)->u.list.items[k];
    raspH_push(ctx, r, t);
  }
  return r;
}

static value *b_sorted(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  value *r = copy_items(ctx, as_items(ctx, A(0), pos, "sorted"), V_LIST);
  /* insertion sort: stable, and comparisons may raise errors (longjmp) */
  for (int i = 1; i < r->u.list.n; i++) {
    value *x = r->u.list.items[i];
    int j = i - 1;
    while (j >= 0 && raspH_truth(ctx, raspH_binop(ctx, RASP_BIN_GT, r->u.list.items[j], x, pos), pos)) {
      r->u.list.items[j + 1] = r->u.list.items[j];
      j--;
    }
    r->u.list.items[j + 1] = x;
  }
  return r;
}

static value *b_reversed(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  value *items = as_items(ctx, A(0), pos, "reversed");
  value *r = raspH_list(ctx, V_LIST, 0);
  for (int i = items->u.list.n - 1; i >= 0; i--) raspH_push(ctx, r, items->u.list.items[i]);
  return r;
}

static value *b_cfunc(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  return raspD_bind(ctx, args, nargs, pos);
}

static value *b_include(rasp_ctx *ctx, value **args, int nargs, rasp_pos pos) {
  (void)nargs;
  return raspH_include(ctx, A(0), pos);
}

static const builtin builtins[] = {
    {"full", "x,const", b_full, -1, "a sequence like x with const at every position [constant]"},
    {"indices", "x", b_indices, -1, "0, 1, ..., n-1 [position embedding]"},
    {"select", "k,q,pred,causal=True", b_select, -1,
     "selector A[q][k] = pred(k[k], q[q]); causal keeps k <= q [attention pattern]"},
    {"sel_width", "A", b_sel_width, -1, "number of selected keys per query [attention head]"},
    {"aggr_mean", "A,v,default=0", b_aggr_mean, -1,
     "mean of selected values truncated toward zero; default where none [attention head]"},
    {"aggregate", "A,v,default=0", b_aggregate, -1,
     "exact mean of selected values (one value passes through) [attention head]"},
    {"aggr_max", "A,v,default=0", b_aggr_max, -1, "max of selected values [attention head]"},
    {"aggr_min", "A,v,default=0", b_aggr_min, -1, "min of selected values [attention head]"},
    {"tok_map", "x,f", b_tok_map, -1, "f applied to every element [MLP]"},
    {"seq_map", "x,y,f", b_seq_map, -1, "f(x_i, y_i), as integers (astype(int)) [MLP]"},
    {"where", "cond,x,y", b_where, -1, "x where cond holds, else y [MLP]"},
    {"equals", "x,y", b_equals, RASP_PRED_EQ, "x == y; as a select predicate: key == query"},
    {"not_equals", "x,y", b_not_equals, RASP_PRED_NE, "x != y; predicate key != query"},
    {"lt", "x,y", b_lt, RASP_PRED_LT, "x < y; predicate key < query"},
    {"leq", "x,y", b_leq, RASP_PRED_LE, "x <= y; predicate key <= query"},
    {"gt", "x,y", b_gt, RASP_PRED_GT, "x > y; predicate key > query"},
    {"geq", "x,y", b_geq, RASP_PRED_GE, "x >= y; predicate key >= query"},
    {"always", "k,q", b_always, RASP_PRED_TRUE, "predicate that selects everything"},
    {"never", "k,q", b_never, RASP_PRED_FALSE, "predicate that selects nothing"},
    {"len", "x", b_len, -1, "length (a sequence's is the traced length n)"},
    {"range", "*", b_range, -1, "range(stop) or range(start, stop[, step])"},
    {"has_pair", "xs,a,b,gap,start,stop,step", b_has_pair, -1,
     "whether some i in range(start, stop, step) has xs[i] == a and xs[i + gap] == b"},
    {"holds_both", "xs,a,b,width,start,stop,step", b_holds_both, -1,
     "whether some i in range(start, stop, step) has a and b in xs[i:i + width]"},
    {"int", "x", b_int, -1, "integer part, toward zero (element-wise on sequences)"},
    {"round", "x", b_round, -1, "nearest integer, ties to even (element-wise on sequences)"},
    {"abs", "x", b_abs, -1, "absolute value (element-wise on sequences)"},
    {"min", "*", b_min, -1, "smallest argument (element-wise on sequences)"},
    {"max", "*", b_max, -1, "largest argument (element-wise on sequences)"},
    {"sum", "xs,start=0", b_sum, -1, "sum of a list"},
    {"any", "xs", b_any, -1, "True if any element is true"},
    {"all", "xs", b_all, -1, "True if every element is true"},
    {"print", "*", b_print, -1, "print values at trace time"},
    {"str", "x", b_str, -1, "text of a value"},
    {"bool", "x", b_bool, -1, "truth of a value"},
    {"list", "xs=None", b_list, -1, "a list of the items"},
    {"tuple", "xs=None", b_tuple, -1, "a tuple of the items"},
    {"dict", "pairs=None,**", b_dict, -1, "a dict from (key, value) pairs and keyword arguments"},
    {"enumerate", "xs", b_enumerate, -1, "(index, item) pairs"},
    {"zip", "*", b_zip, -1, "tuples of corresponding items"},
    {"sorted", "xs", b_sorted, -1, "a sorted list"},
    {"reversed", "xs", b_reversed, -1, "the items in reverse order"},
    {"include", "path", b_include, -1,
     "run another file here (path relative to this file's directory)"},
    {"cfunc", "*", b_cfunc, -1,
     "cfunc(library, symbol, signature): bind a C function, e.g. "
     "cfunc('libm.so.6', 'cbrt', 'double(double)')"},
};

const builtin *raspB_table(int *count) {
  *count = (int)(sizeof builtins / sizeof builtins[0]);
  return builtins;
}

