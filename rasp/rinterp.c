/*
** rinterp.c -- the interpreter, which is also the tracer.
**
** RASP programs are Python-like code, but what they compute is a dataflow
** graph.  This file walks the syntax tree once per trace.  Scalars (exact
** rationals in GMP, booleans, strings, containers, functions) are computed
** on the spot: loops unroll, ifs pick a branch, functions are called.  Any
** operation whose operand is a sequence (SOp) or a selector does not compute
** anything; it appends a node to the context's IR and returns a value that
** names that node.  So after `main(tokens)` returns, the IR holds exactly
** the operations the program performs on its input, for the one input
** length n the context was made for, and nothing of the Python scaffolding.
**
** Because a sequence's elements are unknown while tracing, anything that
** would need them -- an `if` on a sequence, `range` of a sequence, the truth
** of a sequence -- is an error that points to `where`.
**
** Errors longjmp to the innermost catcher (set by every API entry point and
** by the evaluator callback, rapi.c).  That is safe because the context owns
** every allocation made while interpreting: values, environments and syntax
** trees are released together by rasp_ctx_free, never individually
** (rheap.c).
**
** This file is evaluation: scopes, expressions, statements, and calls of
** program functions and builtins.  What it computes with is in rvalue.c,
** the nodes it makes in rtrace.c, where it allocates in rheap.c, and the
** ways in (the public API, the evaluator's callbacks, include()) in rapi.c;
** rinterp_int.h is the map.
*/
#include "rinterp_int.h"

#include <stdlib.h>
#include <string.h>

#include "rlex.h"

/* A list or dict about to change in place: refused while ctx->frozen if it
** was made before the call (it outlives the call, so a change would make the
** call's result depend on the calls before it). */
static void check_mutable(rasp_ctx *ctx, const value *obj, rasp_pos pos) {
  if (ctx->frozen && obj->serial && obj->serial <= ctx->frozen)
    raspV_raise(ctx, RASP_E_IMPURE, pos, "a function called by tok_map, seq_map, select or "
                "check() may not change %s made outside it (its result must depend on its "
                "arguments alone)", raspV_kind_name(obj));
}

/* --------------------------------------------------------- environments */

static int env_find(const env *e, const char *name) {
  if (e->hash) {
    size_t j = ((uintptr_t)name >> 4) & (size_t)(e->hcap - 1);
    while (e->hash[j] >= 0) {
      if (e->names[e->hash[j]] == name) return e->hash[j];
      j = (j + 1) & (size_t)(e->hcap - 1);
    }
    return -1;
  }
  for (int i = 0; i < e->n; i++)
    if (e->names[i] == name) return i;
  return -1;
}

static void env_rehash(env *e) {
  int ncap = e->hcap ? e->hcap * 2 : 64;
  raspM_free(e->hash);
  e->hash = raspM_alloc(sizeof(int) * (size_t)ncap);
  e->hcap = ncap;
  for (int i = 0; i < ncap; i++) e->hash[i] = -1;
  for (int i = 0; i < e->n; i++) {
    size_t j = ((uintptr_t)e->names[i] >> 4) & (size_t)(ncap - 1);
    while (e->hash[j] >= 0) j = (j + 1) & (size_t)(ncap - 1);
    e->hash[j] = i;
  }
}

/* Appends a binding the scope does not have yet. */
static void env_push(env *e, const char *name, value *v) {
  int cap = e->cap;
  RASP_GROW(e->names, cap, e->n + 1);
  RASP_GROW(e->vals, e->cap, e->n + 1);
  e->names[e->n] = name;
  e->vals[e->n] = v;
  e->n++;
  if (e->n > 16 && e->n * 2 > e->hcap) env_rehash(e);
  else if (e->hash) {
    size_t j = ((uintptr_t)name >> 4) & (size_t)(e->hcap - 1);
    while (e->hash[j] >= 0) j = (j + 1) & (size_t)(e->hcap - 1);
    e->hash[j] = e->n - 1;
  }
}

static void env_set(rasp_ctx *ctx, env *e, const char *name, value *v) {
  int i = env_find(e, name);
  if (i >= 0) e->vals[i] = v;
  else env_push(e, name, v);
  raspV_barrier(ctx, e->serial, v);
}

/* A parameter into a fresh scope: the parser rejects duplicate parameter
** names, so there is nothing to look up first. */
static void env_append(rasp_ctx *ctx, env *e, const char *name, value *v) {
  env_push(e, name, v);
  raspV_barrier(ctx, e->serial, v);
}

static value *env_get(env *e, const char *name) {
  for (; e; e = e->parent) {
    int i = env_find(e, name);
    if (i >= 0) return e->vals[i];
  }
  return NULL;
}

/* ------------------------------------------------------------ evaluation */

typedef enum flow { FLOW_NORMAL, FLOW_RETURN, FLOW_BREAK, FLOW_CONTINUE } flow;

static value *eval(rasp_ctx *ctx, env *e, const rasp_ast *x);
static flow exec_block(rasp_ctx *ctx, env *e, rasp_ast **body, int n);

/* A literal's value, made once and kept with the tree. */
static value *const_value(rasp_ctx *ctx, const rasp_ast *x, value *v) {
  ((rasp_ast *)x)->cache = raspV_make_const(ctx, v);
  return v;
}

static const char *ast_name(rasp_ctx *ctx, const rasp_ast *x) {
  if (!x->cache) ((rasp_ast *)x)->cache = raspV_intern(ctx, x->str);
  return x->cache;
}

static rasp_binop tok_binop(int tk) {
  switch (tk) {
  case TK_PLUS: case TK_PLUSEQ: return RASP_BIN_ADD;
  case TK_MINUS: case TK_MINUSEQ: return RASP_BIN_SUB;
  case TK_STAR: case TK_STAREQ: return RASP_BIN_MUL;
  case TK_SLASH: case TK_SLASHEQ: return RASP_BIN_DIV;
  case TK_DSLASH: case TK_DSLASHEQ: return RASP_BIN_FLOORDIV;
  case TK_PERCENT: case TK_PERCENTEQ: return RASP_BIN_MOD;
  case TK_DSTAR: return RASP_BIN_POW;
  case TK_AMP: case TK_AMPEQ: return RASP_BIN_BITAND;
  case TK_PIPE: case TK_PIPEEQ: return RASP_BIN_BITOR;
  case TK_CARET: return RASP_BIN_BITXOR;
  case TK_EQ: return RASP_BIN_EQ;
  case TK_NE: return RASP_BIN_NE;
  case TK_LT: return RASP_BIN_LT;
  case TK_LE: return RASP_BIN_LE;
  case TK_GT: return RASP_BIN_GT;
  case TK_GE: return RASP_BIN_GE;
  default: return RASP_BIN__COUNT;
  }
}

/* The rare paths of check_steps, out of line so that it stays inlined. */
static __attribute__((noinline)) void steps_rare(rasp_ctx *ctx, rasp_pos pos) {
  if (ctx->interrupted) { /* rasp_interrupt: Ctrl-C in the REPL */
    ctx->interrupted = 0;
    raspV_raise(ctx, RASP_E_INTERRUPTED, pos, "interrupted");
  }
  const char *why = raspM_over_budget(); /* --max-memory, --timeout */
  if (why) raspV_raise(ctx, RASP_E_LIMIT, pos, "%s", why);
  if (ctx->steps <= ctx->limits.max_steps) return;
  if (ctx->in_callback)
    raspV_raise(ctx, RASP_E_LIMIT, pos, "the functions given to tok_map/seq_map/select ran more than "
                          "%lld steps together (the limit per trace); is a loop not "
                          "terminating?", ctx->limits.max_steps);
  raspV_raise(ctx, RASP_E_LIMIT, pos, "the program ran more than %lld steps (the limit); "
                        "is a loop not terminating?", ctx->limits.max_steps);
}

/* Counts a step and polls the budgets. */
static inline void check_steps(rasp_ctx *ctx, rasp_pos pos) {
  if (++ctx->steps > ctx->limits.max_steps || raspM_exhausted || ctx->interrupted)
    steps_rare(ctx, pos);
}

/* Items of an iterable scalar value, as a list or tuple value. */
static value *iterate(rasp_ctx *ctx, value *v, rasp_pos pos) {
  switch (v->kind) {
  case V_LIST:
  case V_TUPLE: return v;
  case V_DICT: {
    raspV_ids_iter(ctx, v, pos);
    value *r = raspV_list(ctx, V_LIST, 0);
    for (int i = 0; i < v->u.dict.n; i++) raspV_list_push(ctx, r, v->u.dict.keys[i]);
    return r;
  }
  case V_STR: {
    value *r = raspV_list(ctx, V_LIST, 0);
    for (size_t i = 0; i < v->u.str.len; i++)
      raspV_list_push(ctx, r, raspV_str(ctx, v->u.str.s + i, 1));
    return r;
  }
  case V_SOP:
    raspV_error(ctx, pos, "cannot iterate over a sequence while tracing: its "
                          "values depend on the input (use sequence operations, "
                          "or x[i] for a fixed position i)");
  default:
    raspV_raise(ctx, RASP_E_TYPE, pos, "cannot iterate over %s", raspV_kind_name(v));
  }
}

static int64_t index_of(rasp_ctx *ctx, value *idx, int64_t len, rasp_pos pos) {
  int64_t i = raspV_int(ctx, idx, pos, "the index");
  if (i < 0) i += len;
  if (i < 0 || i >= len)
    raspV_error(ctx, pos, "index %lld out of range for length %lld",
                (long long)raspV_int(ctx, idx, pos, "the index"), (long long)len);
  return i;
}
static void slice_bounds(rasp_ctx *ctx, env *e, const rasp_ast *sl, int64_t len,
                         int64_t *start, int64_t *stop, int64_t *step) {
  *step = sl->c ? raspV_int(ctx, eval(ctx, e, sl->c), sl->pos, "the slice step") : 1;
  if (*step == 0) raspV_error(ctx, sl->pos, "slice step cannot be zero");
  int64_t lo = *step > 0 ? 0 : -1, hi = *step > 0 ? len : len - 1;
  for (int k = 0; k < 2; k++) {
    const rasp_ast *b = k ? sl->b : sl->a;
    int64_t *dst = k ? stop : start;
    if (!b || eval(ctx, e, b)->kind == V_NONE) {
      *dst = k ? (*step > 0 ? len : -1) : (*step > 0 ? 0 : len - 1);
      continue;
    }
    int64_t v = raspV_int(ctx, eval(ctx, e, b), b->pos, "a slice bound");
    if (v < 0) v += len;
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    *dst = v;
  }
}

static value *subscript(rasp_ctx *ctx, env *e, const rasp_ast *x) {
  value *obj = eval(ctx, e, x->a);
  if (x->b->kind == AST_SLICE) {
    int64_t len;
    if (obj->kind == V_LIST || obj->kind == V_TUPLE) len = obj->u.list.n;
    else if (obj->kind == V_STR) len = (int64_t)obj->u.str.len;
    else raspV_error(ctx, x->pos, "cannot slice %s", raspV_kind_name(obj));
    int64_t start, stop, step;
    slice_bounds(ctx, e, x->b, len, &start, &stop, &step);
    if (obj->kind == V_STR) {
      strbuf b = {0};
      raspV_sb_puts(&b, "");
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
        raspV_sb_add(&b, obj->u.str.s + i, 1);
      value *r = raspV_str(ctx, b.s, b.n);
      raspM_free(b.s);
      return r;
    }
    int64_t count = 0;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) count++;
    value *r = raspV_list(ctx, obj->kind, (int)count); /* count <= len */
    count = 0;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
      r->u.list.items[count++] = obj->u.list.items[i];
    return r;
  }
  value *idx = eval(ctx, e, x->b);
  switch (obj->kind) {
  case V_LIST:
  case V_TUPLE: return obj->u.list.items[index_of(ctx, idx, obj->u.list.n, x->b->pos)];
  case V_STR: {
    int64_t i = index_of(ctx, idx, (int64_t)obj->u.str.len, x->b->pos);
    return raspV_str(ctx, obj->u.str.s + i, 1);
  }
  case V_DICT: {
    raspV_ids_key(ctx, obj, idx, x->b->pos);
    value *v = raspV_dict_get(obj, idx);
    if (!v) {
      /* copy to the stack so that nothing leaks across the longjmp */
      char *k = raspV_repr(ctx, idx), msg[200];
      snprintf(msg, sizeof msg, "%s", k);
      raspM_free(k);
      raspV_error(ctx, x->b->pos, "key %s is not in the dict", msg);
    }
    return v;
  }
  case V_SOP:
    return raspV_sop_index(ctx, obj, index_of(ctx, idx, ctx->n, x->b->pos), x->pos);
  default:
    raspV_raise(ctx, RASP_E_TYPE, x->pos, "%s cannot be subscripted", raspV_kind_name(obj));
  }
}

static void assign(rasp_ctx *ctx, env *e, const rasp_ast *target, value *v);

/* x[i] = v: lists and dicts change in place; a sequence is replaced by a
** new one (element-wise: where(indices == i, v, x)) bound to the same name. */
static void assign_subscript(rasp_ctx *ctx, env *e, const rasp_ast *target, value *v) {
  value *obj = eval(ctx, e, target->a);
  if (target->b->kind == AST_SLICE)
    raspV_error(ctx, target->pos, "slice assignment is not supported");
  value *idx = eval(ctx, e, target->b);
  if (obj->kind == V_LIST || obj->kind == V_DICT) check_mutable(ctx, obj, target->pos);
  if (obj->kind == V_LIST) {
    obj->u.list.items[index_of(ctx, idx, obj->u.list.n, target->b->pos)] = v;
    raspV_barrier(ctx, obj->serial, v);
  } else if (obj->kind == V_DICT) {
    raspV_ids_key(ctx, obj, idx, target->b->pos);
    raspV_dict_set(ctx, obj, idx, v);
  } else if (obj->kind == V_SOP) {
    int64_t i = index_of(ctx, idx, ctx->n, target->b->pos);
    assign(ctx, e, target->a, raspV_sop_store(ctx, obj, i, v, target->pos));
  } else {
    raspV_error(ctx, target->pos, "%s does not support item assignment",
                raspV_kind_name(obj));
  }
}

static void assign(rasp_ctx *ctx, env *e, const rasp_ast *target, value *v) {
  switch (target->kind) {
  case AST_NAME: {
    const char *name = ast_name(ctx, target);
    if ((v->kind == V_SOP || v->kind == V_SEL) && !ctx->ir.nodes[v->u.node].label)
      ctx->ir.nodes[v->u.node].label = name;
    env_set(ctx, e, name, v);
    return;
  }
  case AST_TUPLE:
  case AST_LIST: {
    value *items = iterate(ctx, v, target->pos);
    if (items->u.list.n != target->nitems)
      raspV_error(ctx, target->pos, "cannot unpack %d values into %d targets",
                  items->u.list.n, target->nitems);
    for (int i = 0; i < target->nitems; i++)
      assign(ctx, e, target->items[i], items->u.list.items[i]);
    return;
  }
  case AST_SUBSCRIPT: assign_subscript(ctx, e, target, v); return;
  default: raspV_error(ctx, target->pos, "cannot assign to this expression");
  }
}

static value *make_function(rasp_ctx *ctx, env *e, const rasp_ast *def) {
  value *f = raspV_new(ctx, V_FUNC);
  f->u.func.def = def;
  f->u.func.closure = e;
  f->u.func.ndefaults = def->nitems2;
  if (def->nitems2) {
    f->u.func.defaults = raspM_alloc(sizeof(value *) * (size_t)def->nitems2);
    for (int i = 0; i < def->nitems2; i++) f->u.func.defaults[i] = eval(ctx, e, def->items2[i]);
  }
  return f;
}

static value *compare(rasp_ctx *ctx, env *e, const rasp_ast *x) {
  value *left = eval(ctx, e, x->items[0]);
  value *acc = NULL;
  for (int i = 1; i < x->nitems; i++) {
    value *right = eval(ctx, e, x->items[i]);
    int op = x->ops[i - 1];
    value *r;
    if (op == TK_IN || op == TK_NOTIN) {
      int found = 0;
      if (right->kind == V_DICT) {
        raspV_ids_key(ctx, right, left, x->pos);
        found = raspV_dict_get(right, left) != NULL;
      }
      else if (right->kind == V_STR && left->kind == V_STR)
        found = left->u.str.len == 0 ||
                memmem(right->u.str.s, right->u.str.len, left->u.str.s, left->u.str.len) != NULL;
      else {
        value *items = iterate(ctx, right, x->items[i]->pos);
        for (int k = 0; k < items->u.list.n && !found; k++) {
          raspV_ids_eq(ctx, items->u.list.items[k], left, x->pos);
          found = raspV_equal_checked(ctx, items->u.list.items[k], left, x->pos);
        }
      }
      r = raspV_bool(ctx, op == TK_IN ? found : !found);
    } else if (op == TK_IS || op == TK_ISNOT) {
      int same = left == right || (left->kind == V_NONE && right->kind == V_NONE) ||
                 (left->kind == V_BOOL && right->kind == V_BOOL && left->u.b == right->u.b);
      r = raspV_bool(ctx, op == TK_IS ? same : !same);
    } else {
      r = raspV_binop(ctx, tok_binop(op), left, right, x->pos);
    }
    if (!acc) acc = r;
    else acc = raspV_binop(ctx, RASP_BIN_AND, acc, r, x->pos);
    if (acc->kind != V_SOP && !raspV_truth(ctx, acc, x->pos)) return acc;
    left = right;
  }
  return acc;
}

static value *list_comp(rasp_ctx *ctx, env *e, const rasp_ast *x) {
  value *items = iterate(ctx, eval(ctx, e, x->c), x->c->pos);
  value *out = raspV_list(ctx, V_LIST, 0);
  env *scope = raspV_env_new(ctx, e);
  for (int i = 0; i < items->u.list.n; i++) {
    check_steps(ctx, x->pos);
    assign(ctx, scope, x->b, items->u.list.items[i]);
    int keep = 1;
    for (int k = 0; k < x->nitems && keep; k++)
      keep = raspV_truth(ctx, eval(ctx, scope, x->items[k]), x->items[k]->pos);
    if (keep) raspV_list_push(ctx, out, eval(ctx, scope, x->a));
  }
  return out;
}

static value *method_call(rasp_ctx *ctx, value *obj, const char *name, value **args,
                          int nargs, rasp_pos pos) {
  if (obj->kind == V_LIST && strcmp(name, "append") == 0 && nargs == 1) {
    check_mutable(ctx, obj, pos);
    raspV_list_push(ctx, obj, args[0]);
    return &ctx->none_v;
  }
  if (obj->kind == V_LIST && strcmp(name, "extend") == 0 && nargs == 1) {
    check_mutable(ctx, obj, pos);
    value *items = iterate(ctx, args[0], pos);
    for (int i = 0; i < items->u.list.n; i++) raspV_list_push(ctx, obj, items->u.list.items[i]);
    return &ctx->none_v;
  }
  if ((obj->kind == V_LIST || obj->kind == V_TUPLE) && strcmp(name, "index") == 0 && nargs == 1) {
    for (int i = 0; i < obj->u.list.n; i++) {
      raspV_ids_eq(ctx, obj->u.list.items[i], args[0], pos);
      if (raspV_equal_checked(ctx, obj->u.list.items[i], args[0], pos)) return raspV_num_si(ctx, i);
    }
    raspV_error(ctx, pos, "value is not in the list");
  }
  if (obj->kind == V_DICT) {
    if (strcmp(name, "get") == 0 && (nargs == 1 || nargs == 2)) {
      raspV_ids_key(ctx, obj, args[0], pos);
      value *v = raspV_dict_get(obj, args[0]);
      return v ? v : nargs == 2 ? args[1] : &ctx->none_v;
    }
    int keys = strcmp(name, "keys") == 0, vals = strcmp(name, "values") == 0,
        items = strcmp(name, "items") == 0;
    if ((keys || vals || items) && nargs == 0) {
      raspV_ids_iter(ctx, obj, pos);
      value *r = raspV_list(ctx, V_LIST, 0);
      for (int i = 0; i < obj->u.dict.n; i++) {
        value *it;
        if (items) {
          it = raspV_list(ctx, V_TUPLE, 2);
          it->u.list.items[0] = obj->u.dict.keys[i];
          it->u.list.items[1] = obj->u.dict.vals[i];
        } else {
          it = keys ? obj->u.dict.keys[i] : obj->u.dict.vals[i];
        }
        raspV_list_push(ctx, r, it);
      }
      return r;
    }
  }
  raspV_error(ctx, pos, "%s has no method '%s' taking %d argument(s)", raspV_kind_name(obj),
              name, nargs);
}

/* A callee's name, for the traceback of an error inside the stdlib. */
static const char *callee_name(const value *fn) {
  if (fn->kind == V_FUNC) return fn->u.func.def->kind == AST_DEF ? fn->u.func.def->str : "<lambda>";
  if (fn->kind == V_BUILTIN) return fn->u.bi->name;
  return "";
}

static value *call_expr(rasp_ctx *ctx, env *e, const rasp_ast *x) {
  value *argv_small[8], *kwv_small[8];
  int nargs = x->nitems, nkw = x->nitems2;
  /* Arguments live in the context's objects only; the arrays are on the
  ** stack or in a list value so an error cannot leak them. */
  value **args = argv_small, **kwvals = kwv_small;
  if (nargs > 8) args = raspV_list(ctx, V_TUPLE, nargs)->u.list.items;
  if (nkw > 8) kwvals = raspV_list(ctx, V_TUPLE, nkw)->u.list.items;
  value *obj = NULL;
  value *fn = NULL;
  if (x->a->kind == AST_ATTR) {
    obj = eval(ctx, e, x->a->a);
    if (obj->kind == V_DICT) {
      value *key = raspV_str(ctx, x->a->str, strlen(x->a->str));
      fn = raspV_dict_get(obj, key);
      if (fn && (fn->kind == V_FUNC || fn->kind == V_BUILTIN || fn->kind == V_CFUNC)) obj = NULL;
      else fn = NULL;
    }
  } else {
    fn = eval(ctx, e, x->a);
  }
  for (int i = 0; i < nargs; i++) args[i] = eval(ctx, e, x->items[i]);
  for (int i = 0; i < nkw; i++) kwvals[i] = eval(ctx, e, x->items2[i]);
  if (!fn) {
    if (nkw) raspV_error(ctx, x->pos, "methods take no keyword arguments");
    return method_call(ctx, obj, x->a->str, args, nargs, x->pos);
  }
  const char *kwnames_small[8];
  const char **kwnames = kwnames_small;
  if (nkw > 8) kwnames = (const char **)raspV_list(ctx, V_TUPLE, nkw)->u.list.items;
  for (int i = 0; i < nkw; i++) kwnames[i] = raspV_intern(ctx, x->names[i]);
  if (!x->pos.src || x->pos.src->library) return raspV_call(ctx, fn, args, nargs, kwnames, kwvals, nkw, x->pos);
  rasp_pos saved = ctx->site;
  const char *saved_fn = ctx->site_fn;
  ctx->site = x->pos;
  ctx->site_fn = callee_name(fn);
  value *r = raspV_call(ctx, fn, args, nargs, kwnames, kwvals, nkw, x->pos);
  ctx->site = saved;
  ctx->site_fn = saved_fn;
  return r;
}

static value *eval(rasp_ctx *ctx, env *e, const rasp_ast *x) {
  switch (x->kind) {
  case AST_NUM:
    if (x->cache) return (value *)x->cache;
    return const_value(ctx, x, raspV_parse_number(ctx, x->str, x->pos));
  case AST_STR:
    if (x->cache) return (value *)x->cache;
    return const_value(ctx, x, raspV_str(ctx, x->str, x->len));
  case AST_NAME: {
    value *v = env_get(e, ast_name(ctx, x));
    if (!v) raspV_unknown_name(ctx, x->pos, "unknown name '%s'", x->str);
    return v;
  }
  case AST_TRUE: return &ctx->true_v;
  case AST_FALSE: return &ctx->false_v;
  case AST_NONE: return &ctx->none_v;
  case AST_TUPLE:
  case AST_LIST: {
    value *r = raspV_list(ctx, x->kind == AST_LIST ? V_LIST : V_TUPLE, 0);
    for (int i = 0; i < x->nitems; i++) raspV_list_push(ctx, r, eval(ctx, e, x->items[i]));
    return r;
  }
  case AST_DICT: {
    value *r = raspV_new(ctx, V_DICT);
    for (int i = 0; i < x->nitems; i++) {
      value *k = eval(ctx, e, x->items[i]);
      if (k->kind == V_SOP || k->kind == V_SEL || k->kind == V_LIST || k->kind == V_DICT)
        raspV_error(ctx, x->items[i]->pos, "%s cannot be a dict key", raspV_kind_name(k));
      raspV_ids_key(ctx, r, k, x->items[i]->pos);
      raspV_dict_set(ctx, r, k, eval(ctx, e, x->items2[i]));
    }
    return r;
  }
  case AST_BINOP: {
    value *a = eval(ctx, e, x->a), *b = eval(ctx, e, x->b);
    rasp_binop op = tok_binop(x->op);
    if (op == RASP_BIN__COUNT) raspV_error(ctx, x->pos, "unsupported operator");
    return raspV_binop(ctx, op, a, b, x->pos);
  }
  case AST_UNARY: {
    value *a = eval(ctx, e, x->a);
    rasp_unop op = x->op == TK_MINUS ? RASP_UN_NEG : x->op == TK_PLUS ? RASP_UN_POS : RASP_UN_INVERT;
    return raspV_unop(ctx, op, a, x->pos);
  }
  case AST_NOT: return raspV_unop(ctx, RASP_UN_NOT, eval(ctx, e, x->a), x->pos);
  case AST_AND:
  case AST_OR: {
    value *a = eval(ctx, e, x->a);
    if (a->kind == V_SOP || a->kind == V_SEL)
      return raspV_binop(ctx, x->kind == AST_AND ? RASP_BIN_AND : RASP_BIN_OR, a,
                         eval(ctx, e, x->b), x->pos);
    int t = raspV_truth(ctx, a, x->pos);
    if (x->kind == AST_AND ? !t : t) return a;
    value *b = eval(ctx, e, x->b);
    if (b->kind == V_SOP || b->kind == V_SEL)
      return raspV_binop(ctx, x->kind == AST_AND ? RASP_BIN_AND : RASP_BIN_OR, a, b, x->pos);
    return b;
  }
  case AST_COMPARE: return compare(ctx, e, x);
  case AST_CALL: return call_expr(ctx, e, x);
  case AST_SUBSCRIPT: return subscript(ctx, e, x);
  case AST_ATTR: {
    value *obj = eval(ctx, e, x->a);
    if (obj->kind == V_DICT) {
      value *v = raspV_dict_get(obj, raspV_str(ctx, x->str, strlen(x->str)));
      if (v) return v;
    }
    raspV_error(ctx, x->pos, "%s has no attribute '%s'", raspV_kind_name(obj), x->str);
  }
  case AST_IFEXP: {
    value *c = eval(ctx, e, x->a);
    if (c->kind == V_SOP)
      raspV_error(ctx, x->a->pos, "the condition depends on the input sequence; "
                                  "use where(cond, x, y) instead of 'x if cond else y'");
    return eval(ctx, e, raspV_truth(ctx, c, x->a->pos) ? x->b : x->c);
  }
  case AST_LAMBDA: return make_function(ctx, e, x);
  case AST_LISTCOMP: return list_comp(ctx, e, x);
  case AST_SLICE: raspV_error(ctx, x->pos, "a slice is only allowed inside [ ]");
  default: raspV_error(ctx, x->pos, "this statement is not an expression");
  }
}

static flow exec_stmt_at(rasp_ctx *ctx, env *e, const rasp_ast *s);

/* One statement, with ctx->stmt at it while it runs (see rinterp_int.h). */
static flow exec_stmt(rasp_ctx *ctx, env *e, const rasp_ast *s) {
  rasp_pos outer = ctx->stmt;
  ctx->stmt = s->pos;
  flow f = exec_stmt_at(ctx, e, s);
  ctx->stmt = outer;
  return f;
}

static flow exec_stmt_at(rasp_ctx *ctx, env *e, const rasp_ast *s) {
  check_steps(ctx, s->pos);
  if (raspV_collect_due(ctx)) raspV_collect(ctx);
  switch (s->kind) {
  case AST_EXPR: eval(ctx, e, s->a); return FLOW_NORMAL;
  case AST_ASSIGN: {
    value *v = eval(ctx, e, s->a);
    for (int i = 0; i < s->nitems; i++) assign(ctx, e, s->items[i], v);
    return FLOW_NORMAL;
  }
  case AST_AUGASSIGN: {
    value *cur = eval(ctx, e, s->a);
    value *rhs = eval(ctx, e, s->b);
    rasp_binop op = tok_binop(s->op);
    value *nv;
    if (op == RASP_BIN_ADD && cur->kind == V_LIST && rhs->kind == V_LIST) {
      check_mutable(ctx, cur, s->pos);
      for (int i = 0; i < rhs->u.list.n; i++) raspV_list_push(ctx, cur, rhs->u.list.items[i]);
      nv = cur;
    } else {
      nv = raspV_binop(ctx, op, cur, rhs, s->pos);
    }
    assign(ctx, e, s->a, nv);
    return FLOW_NORMAL;
  }
  case AST_DEF: {
    value *f = make_function(ctx, e, s);
    env_set(ctx, e, raspV_intern(ctx, s->str), f);
    return FLOW_NORMAL;
  }
  case AST_RETURN:
    ctx->retval = s->a ? eval(ctx, e, s->a) : &ctx->none_v;
    return FLOW_RETURN;
  case AST_IF: {
    value *c = eval(ctx, e, s->a);
    if (c->kind == V_SOP)
      raspV_error(ctx, s->a->pos, "an 'if' on a sequence: its value depends on the "
                                  "input, which is not known while tracing; use "
                                  "where(cond, x, y)");
    if (raspV_truth(ctx, c, s->a->pos)) return exec_block(ctx, e, s->items, s->nitems);
    return exec_block(ctx, e, s->items2, s->nitems2);
  }
  case AST_FOR: {
    value *it = eval(ctx, e, s->b);
    value *items = iterate(ctx, it, s->b->pos);
    raspV_root_push(ctx, items); /* the collector cannot see this C variable */
    flow f = FLOW_NORMAL;
    for (int i = 0; i < items->u.list.n; i++) {
      assign(ctx, e, s->a, items->u.list.items[i]);
      f = exec_block(ctx, e, s->items, s->nitems);
      if (f == FLOW_RETURN || f == FLOW_BREAK) break;
    }
    raspV_root_pop(ctx);
    return f == FLOW_RETURN ? f : FLOW_NORMAL;
  }
  case AST_WHILE:
    for (;;) {
      value *c = eval(ctx, e, s->a);
      if (c->kind == V_SOP)
        raspV_error(ctx, s->a->pos, "a 'while' on a sequence: its value depends on "
                                    "the input; use where(cond, x, y)");
      if (!raspV_truth(ctx, c, s->a->pos)) break;
      flow f = exec_block(ctx, e, s->items, s->nitems);
      if (f == FLOW_RETURN) return f;
      if (f == FLOW_BREAK) break;
      check_steps(ctx, s->pos);
    }
    return FLOW_NORMAL;
  case AST_BREAK: return FLOW_BREAK;
  case AST_CONTINUE: return FLOW_CONTINUE;
  case AST_PASS: return FLOW_NORMAL;
  case AST_ASSERT: {
    value *c = eval(ctx, e, s->a);
    if (c->kind == V_SOP)
      raspV_error(ctx, s->a->pos, "assert on a sequence: its value depends on the input");
    if (!raspV_truth(ctx, c, s->a->pos)) {
      if (s->b) {
        value *m = eval(ctx, e, s->b);
        char msg[300];
        if (m->kind == V_STR) snprintf(msg, sizeof msg, "%.*s", (int)m->u.str.len, m->u.str.s);
        else {
          char *r = raspV_repr(ctx, m);
          snprintf(msg, sizeof msg, "%s", r);
          raspM_free(r);
        }
        raspV_error(ctx, s->pos, "assertion failed: %s", msg);
      }
      raspV_error(ctx, s->pos, "assertion failed");
    }
    return FLOW_NORMAL;
  }
  default:
    eval(ctx, e, s);
    return FLOW_NORMAL;
  }
}

static flow exec_block(rasp_ctx *ctx, env *e, rasp_ast **body, int n) {
  for (int i = 0; i < n; i++) {
    flow f = exec_stmt(ctx, e, body[i]);
    if (f != FLOW_NORMAL) return f;
  }
  return FLOW_NORMAL;
}

/* ----------------------------------------------------------------- calls */

/* Binds call arguments to parameter names (Python's rules without *args):
** out[i] is the value for params[i], or NULL when it takes its default. */
static void bind_args(rasp_ctx *ctx, const char *fname, const char **params, int nparams,
                      int nrequired, value **args, int nargs, const char **kwnames,
                      value **kwvals, int nkw, value **out, rasp_pos pos) {
  if (nargs > nparams)
    raspV_error(ctx, pos, "%s() takes %d argument%s but %d were given", fname, nparams,
                nparams == 1 ? "" : "s", nargs);
  for (int i = 0; i < nparams; i++) out[i] = i < nargs ? args[i] : NULL;
  for (int k = 0; k < nkw; k++) {
    int i = 0;
    while (i < nparams && params[i] != kwnames[k]) i++;
    if (i == nparams)
      raspV_error(ctx, pos, "%s() got an unexpected keyword argument '%s'", fname, kwnames[k]);
    if (out[i]) raspV_error(ctx, pos, "%s() got multiple values for argument '%s'", fname, kwnames[k]);
    out[i] = kwvals[k];
  }
  for (int i = 0; i < nrequired; i++)
    if (!out[i]) raspV_error(ctx, pos, "%s() missing required argument '%s'", fname, params[i]);
}

static value *call_function(rasp_ctx *ctx, value *fn, value **args, int nargs,
                            const char **kwnames, value **kwvals, int nkw, rasp_pos pos) {
  const rasp_ast *def = fn->u.func.def;
  const char *fname = def->kind == AST_DEF ? def->str : "<lambda>";
  int np = def->nnames;
  value *small[16];
  value **bound = np <= 16 ? small : raspV_list(ctx, V_TUPLE, np)->u.list.items;
  /* the parameter names, interned once per definition (the syntax tree
     belongs to this context, like the name caches of AST_NAME) */
  if (!def->cache && np) {
    const char **interned = raspM_arena_alloc(&ctx->ast_arena, sizeof(char *) * (size_t)np);
    for (int i = 0; i < np; i++) interned[i] = raspV_intern(ctx, def->names[i]);
    ((rasp_ast *)def)->cache = interned;
  }
  const char **pnames = (const char **)def->cache;
  bind_args(ctx, fname, pnames, np, np - fn->u.func.ndefaults, args, nargs, kwnames, kwvals,
            nkw, bound, pos);
  if (ctx->depth >= ctx->limits.max_depth)
    raspV_raise(ctx, RASP_E_LIMIT, pos, "recursion too deep (more than %d nested calls)", ctx->limits.max_depth);
  env *local = raspV_env_new(ctx, fn->u.func.closure);
  for (int i = 0; i < np; i++) {
    value *v = bound[i] ? bound[i] : fn->u.func.defaults[i - (np - fn->u.func.ndefaults)];
    env_append(ctx, local, pnames[i], v);
  }
  ctx->depth++;
  value *result;
  if (def->kind == AST_LAMBDA) {
    result = eval(ctx, local, def->a);
  } else {
    flow f = exec_block(ctx, local, def->items, def->nitems);
    result = f == FLOW_RETURN ? ctx->retval : &ctx->none_v;
  }
  ctx->depth--;
  return result;
}

/* Parses a builtin's parameter spec "k,q,pred,causal=True". */
/* A builtin's parameter list, parsed on its first call in a context (the
** names are interned per context; the defaults are constants). */
typedef struct bi_sig {
  int ready, np, nreq;
  const char *pnames[12];
  value *defaults[12];
} bi_sig;

static bi_sig *builtin_sig(rasp_ctx *ctx, const builtin *bi, rasp_pos pos) {
  int count;
  const builtin *table = raspB_table(&count);
  if (bi < table || bi >= table + count)
    raspV_error(ctx, pos, "internal error: builtin '%s' is not in the table", bi->name);
  if (!ctx->bisigs) {
    ctx->bisigs = raspM_alloc((size_t)count * sizeof *ctx->bisigs);
    ctx->nbisigs = count;
  }
  bi_sig *sig = &ctx->bisigs[bi - table];
  if (sig->ready) return sig;
  int np = 0, nreq = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", bi->params);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && np < 12;
       tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    sig->defaults[np] = NULL;
    if (eq) {
      *eq = '\0';
      const char *d = eq + 1;
      if (strcmp(d, "True") == 0) sig->defaults[np] = &ctx->true_v;
      else if (strcmp(d, "False") == 0) sig->defaults[np] = &ctx->false_v;
      else if (strcmp(d, "None") == 0) sig->defaults[np] = &ctx->none_v;
      else sig->defaults[np] = raspV_make_const(ctx, raspV_num_si(ctx, strtol(d, NULL, 10)));
    } else {
      nreq = np + 1;
    }
    sig->pnames[np++] = raspV_intern(ctx, tok);
  }
  sig->np = np;
  sig->nreq = nreq;
  sig->ready = 1;
  return sig;
}

static value *call_builtin(rasp_ctx *ctx, const builtin *bi, value **args, int nargs,
                           const char **kwnames, value **kwvals, int nkw, rasp_pos pos) {
  if (strcmp(bi->params, "pairs=None,**") == 0) { /* dict(pairs, key=value, ...) */
    value *d = bi->fn(ctx, args, nargs > 1 ? 1 : nargs, pos);
    for (int i = 0; i < nkw; i++)
      raspV_dict_set(ctx, d, raspV_str(ctx, kwnames[i], strlen(kwnames[i])), kwvals[i]);
    return d;
  }
  if (strcmp(bi->params, "*") == 0) {
    if (nkw) raspV_error(ctx, pos, "%s() takes no keyword arguments", bi->name);
    return bi->fn(ctx, args, nargs, pos);
  }
  bi_sig *sig = builtin_sig(ctx, bi, pos);
  const char **pnames = sig->pnames;
  value **defaults = sig->defaults;
  int np = sig->np, nreq = sig->nreq;
  value *bound[12];
  bind_args(ctx, bi->name, pnames, np, nreq, args, nargs, kwnames, kwvals, nkw, bound, pos);
  int given = np;
  while (given > 0 && !bound[given - 1] && !defaults[given - 1]) given--;
  for (int i = 0; i < np; i++)
    if (!bound[i]) bound[i] = defaults[i];
  return bi->fn(ctx, bound, given, pos);
}

value *raspV_call(rasp_ctx *ctx, value *fn, value **args, int nargs, const char **kwnames,
                  value **kwvals, int nkw, rasp_pos pos) {
  switch (fn->kind) {
  case V_FUNC: return call_function(ctx, fn, args, nargs, kwnames, kwvals, nkw, pos);
  case V_BUILTIN: return call_builtin(ctx, fn->u.bi, args, nargs, kwnames, kwvals, nkw, pos);
  case V_CFUNC:
    if (nkw) raspV_error(ctx, pos, "C functions take no keyword arguments");
    for (int i = 0; i < nargs; i++) raspV_ids_in(ctx, args[i], pos, "an id passed to a C function");
    return raspD_call(ctx, fn->u.cf, args, nargs, pos);
  default: raspV_raise(ctx, RASP_E_TYPE, pos, "%s is not callable", raspV_kind_name(fn));
  }
}

/* ------------------------------------- for the entry points and rstage.c */

value *raspV_eval(rasp_ctx *ctx, env *e, const rasp_ast *x) { return eval(ctx, e, x); }

void raspV_exec_block(rasp_ctx *ctx, env *e, rasp_ast **body, int n) {
  exec_block(ctx, e, body, n);
}

void raspV_env_set(rasp_ctx *ctx, env *e, const char *name, value *v) {
  env_set(ctx, e, name, v);
}

value *raspV_env_get(env *e, const char *name) { return env_get(e, name); }

int raspV_env_has(const env *e, const char *name) { return env_find(e, name) >= 0; }

value *raspV_global(rasp_ctx *ctx, const char *name) {
  return env_get(ctx->globals, raspV_intern(ctx, name));
}
