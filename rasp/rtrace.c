/*
** rtrace.c -- the tracer: what a trace records in the IR.
**
** While a program runs (rinterp.c), a sequence or a selector is a value
** that names an IR node.  An operation with one among its operands computes
** nothing: it appends a node whose operands are the nodes of its operands
** (a scalar operand becomes a constant sequence, `full`) and returns a
** value naming the new node.  The nodes' types (int, bool, any) are the
** interpreter's first guess, which the value facts (rfacts.h) refine.  The
** builtins (rbuiltin.c) make the other nodes -- select, aggregate, maps --
** through the same raspV_add_node, which is where the two rules every node
** obeys are kept: no node while a callback or check() runs (ctx->frozen:
** the evaluators hold the IR then), and a node made inside the stdlib is
** attributed to the user's call.
**
** Provenance.  The vocabulary's ids (d's values, reverse_d's keys) carry a
** tag, and the first place where the program computes with one while
** tracing, rather than moving it or testing it for equality, is recorded in
** the IR (ir.ids_what, ir.ids_pos) for the order analysis (rorder.h); see
** "provenance" below for the exact line between the two.  It only
** records: what the program does is the same with or without it.  The
** records come from wherever values are used -- arithmetic (rvalue.c),
** dict keys and `in` (rinterp.c), str() and print (rbuiltin.c).
*/
#include "rinterp_int.h"

#include <string.h>

/* ---------------------------------------------------------------- nodes */

rasp_type raspV_node_type(rasp_ctx *ctx, int node) { return ctx->ir.nodes[node].type; }

int raspV_add_node(rasp_ctx *ctx, rasp_op op, rasp_type type, int aux,
                   const int *in, int nin, rasp_pos pos) {
  /* a map's function (ir_callback) and check() (rasp_call_check) run while
  ** evaluators hold the IR (its nodes, their plans sized to them; the
  ** verifier's threads evaluate as check() runs): a node made there would
  ** move it under them */
  if (ctx->frozen)
    raspV_raise(ctx, RASP_E_IMPURE, pos, "a function called by tok_map, seq_map, select or "
                "check() may not make a sequence operation (it runs on values, not on "
                "sequences)");
  if (ctx->ir.nnodes >= ctx->limits.max_nodes)
    raspV_raise(ctx, RASP_E_LIMIT, pos, "the program makes more than %d sequence operations "
                          "(the limit); is a loop running too long?",
                ctx->limits.max_nodes);
  rasp_ir_node node;
  memset(&node, 0, sizeof node);
  node.op = op;
  node.type = type;
  node.aux = aux;
  node.nin = nin;
  for (int i = 0; i < nin; i++) node.in[i] = in[i];
  /* a node made inside the stdlib is attributed to the user's call */
  node.pos = pos;
  if (pos.src && pos.src->library && ctx->site.src) {
    node.pos = ctx->site;
    node.lib_pos = pos; /* kept for the traceback */
    node.lib_fn = ctx->site_fn;
  }
  node.c.den = 1;
  return raspI_add(&ctx->ir, &node);
}

static rasp_type elem_type(rasp_elem e) {
  return e.den == RASP_DEN_BOOL ? RASP_T_BOOL : e.den == 1 ? RASP_T_INT : RASP_T_ANY;
}

static int full_node(rasp_ctx *ctx, rasp_elem c, rasp_pos pos) {
  int id = raspV_add_node(ctx, RASP_OP_FULL, elem_type(c), 0, NULL, 0, pos);
  ctx->ir.nodes[id].c = c;
  return id;
}

value *raspV_as_sop(rasp_ctx *ctx, value *v, rasp_pos pos) {
  if (v->kind == V_SOP) return v;
  if (v->kind == V_SEL)
    raspV_raise(ctx, RASP_E_TYPE, pos, "expected a sequence, got a selector (aggregate it first)");
  return raspV_sop(ctx, full_node(ctx, raspV_to_elem(ctx, v, pos), pos), V_SOP);
}

static int intish(rasp_type t) { return t == RASP_T_INT || t == RASP_T_BOOL; }

static rasp_type binop_type(rasp_binop op, rasp_type a, rasp_type b) {
  switch (op) {
  case RASP_BIN_EQ: case RASP_BIN_NE: case RASP_BIN_LT: case RASP_BIN_LE:
  case RASP_BIN_GT: case RASP_BIN_GE: case RASP_BIN_AND: case RASP_BIN_OR:
    return RASP_T_BOOL;
  case RASP_BIN_BITAND: case RASP_BIN_BITOR: case RASP_BIN_BITXOR:
  case RASP_BIN_MIN: case RASP_BIN_MAX:
    if (a == RASP_T_BOOL && b == RASP_T_BOOL) return RASP_T_BOOL;
    return intish(a) && intish(b) ? RASP_T_INT : RASP_T_ANY;
  case RASP_BIN_DIV: case RASP_BIN_POW: return RASP_T_ANY;
  default: return intish(a) && intish(b) ? RASP_T_INT : RASP_T_ANY;
  }
}

static value *sel_combine(rasp_ctx *ctx, rasp_op op, value *a, value *b, rasp_pos pos) {
  if (a->kind != V_SEL || (b && b->kind != V_SEL))
    raspV_raise(ctx, RASP_E_TYPE, pos, "cannot combine a selector with %s",
                raspV_kind_name(a->kind != V_SEL ? a : b));
  int in[2] = {a->u.node, b ? b->u.node : 0};
  int id = raspV_add_node(ctx, op, RASP_T_SEL, 0, in, b ? 2 : 1, pos);
  /* causal is contagious: the mask k <= q applies after the combination,
     so ~causal(A) is causal(~A) (rcausal.h) */
  ctx->ir.nodes[id].flags = (ctx->ir.nodes[in[0]].flags | (b ? ctx->ir.nodes[in[1]].flags : 0u)) &
                            RASP_CAUSAL;
  return raspV_sop(ctx, id, V_SEL);
}

/* Token-valued sequences hold vocabulary ids, so `tokens == "l"` would
** compare ids with a symbol and be False everywhere.  A string compared for
** equality with them becomes its id; any other operation on the two is
** refused, saying how to write it. */
static value *token_operand(rasp_ctx *ctx, rasp_binop op, value *v, value *other, rasp_pos pos) {
  if (v->kind != V_STR || other->kind != V_SOP ||
      !(ctx->ir.nodes[other->u.node].flags & RASP_TOKEN_IDS))
    return v;
  if (op != RASP_BIN_EQ && op != RASP_BIN_NE)
    raspV_error(ctx, pos, "'%s' between token ids and the string '%s': the tokens are "
                "vocabulary ids; use the id d['%s']", raspI_binop_name(op), v->u.str.s,
                v->u.str.s);
  if (ctx->nvocab == 0)
    raspV_error(ctx, pos, "the tokens are vocabulary ids and there is no vocabulary to "
                "look '%s' up in", v->u.str.s);
  int64_t id = strlen(v->u.str.s) == v->u.str.len ? rasp_vocab_id(ctx, v->u.str.s) : 0;
  if (!id)
    raspV_error(ctx, pos, "'%s' is not in the vocabulary, so no token can equal it "
                "(the tokens are vocabulary ids: d maps symbols to them)", v->u.str.s);
  return raspV_num_si(ctx, (long)id);
}

value *raspV_binop(rasp_ctx *ctx, rasp_binop op, value *a, value *b, rasp_pos pos) {
  if (a->kind == V_SEL || b->kind == V_SEL) {
    if (op == RASP_BIN_AND || op == RASP_BIN_BITAND)
      return sel_combine(ctx, RASP_OP_SEL_AND, a, b, pos);
    if (op == RASP_BIN_OR || op == RASP_BIN_BITOR)
      return sel_combine(ctx, RASP_OP_SEL_OR, a, b, pos);
    raspV_error(ctx, pos, "operator '%s' is not defined on selectors (only & | ~ and/or/not)",
                raspI_binop_name(op));
  }
  if (a->kind != V_SOP && b->kind != V_SOP) return raspV_scalar_binop(ctx, op, a, b, pos);
  a = token_operand(ctx, op, a, b, pos);
  b = token_operand(ctx, op, b, a, pos);
  value *sa = raspV_as_sop(ctx, a, pos), *sb = raspV_as_sop(ctx, b, pos);
  int in[2] = {sa->u.node, sb->u.node};
  rasp_type t = binop_type(op, raspV_node_type(ctx, in[0]), raspV_node_type(ctx, in[1]));
  return raspV_sop(ctx, raspV_add_node(ctx, RASP_OP_BINARY, t, op, in, 2, pos), V_SOP);
}

value *raspV_unop(rasp_ctx *ctx, rasp_unop op, value *a, rasp_pos pos) {
  if (a->kind == V_SEL) {
    if (op == RASP_UN_NOT || op == RASP_UN_INVERT)
      return sel_combine(ctx, RASP_OP_SEL_NOT, a, NULL, pos);
    raspV_error(ctx, pos, "operator '%s' is not defined on selectors", raspI_unop_name(op));
  }
  if (a->kind == V_SOP) {
    rasp_type ta = raspV_node_type(ctx, a->u.node), t;
    if (op == RASP_UN_NOT) t = RASP_T_BOOL;
    else if (op == RASP_UN_INVERT) t = ta == RASP_T_BOOL ? RASP_T_BOOL : intish(ta) ? RASP_T_INT : RASP_T_ANY;
    else t = intish(ta) ? RASP_T_INT : RASP_T_ANY;
    int in[1] = {a->u.node};
    return raspV_sop(ctx, raspV_add_node(ctx, RASP_OP_UNARY, t, op, in, 1, pos), V_SOP);
  }
  return raspV_scalar_unop(ctx, op, a, pos);
}

/* x[i] on a sequence, i static: an attention head that broadcasts. */
value *raspV_sop_index(rasp_ctx *ctx, value *sop, int64_t i, rasp_pos pos) {
  int q = full_node(ctx, (rasp_elem){i, 1}, pos);
  int in_sel[2] = {ctx->indices_node, q};
  int sel = raspV_add_node(ctx, RASP_OP_SELECT, RASP_T_SEL, RASP_PRED_EQ, in_sel, 2, pos);
  int in_agg[2] = {sel, sop->u.node};
  int agg = raspV_add_node(ctx, RASP_OP_AGGREGATE, raspV_node_type(ctx, sop->u.node), 0,
                           in_agg, 2, pos);
  ctx->ir.nodes[agg].c = (rasp_elem){0, 1};
  return raspV_sop(ctx, agg, V_SOP);
}

/* x[i] = v on a sequence, i static: sequences are values, so x is not
** changed; the caller binds the name to where(indices == i, v, x). */
value *raspV_sop_store(rasp_ctx *ctx, value *sop, int64_t i, value *v, rasp_pos pos) {
  value *at = raspV_binop(ctx, RASP_BIN_EQ, raspV_sop(ctx, ctx->indices_node, V_SOP),
                          raspV_num_si(ctx, (long)i), pos);
  value *nv = raspV_as_sop(ctx, v, pos);
  int in[3] = {at->u.node, nv->u.node, sop->u.node};
  rasp_type ta = raspV_node_type(ctx, in[1]), tb = raspV_node_type(ctx, in[2]);
  int w = raspV_add_node(ctx, RASP_OP_WHERE, ta == tb ? ta : RASP_T_ANY, 0, in, 3, pos);
  return raspV_sop(ctx, w, V_SOP);
}

/* ------------------------------------------------------------ provenance
** What may be done with an id (a TAG_ID number) without looking at the
** numbering: move it anywhere (the value object, and so its tag, is
** shared); compare it with == / != to another id or to a non-number;
** test its truth (every id is at least 1); take abs(), +x or int() of it
** (the id itself); look reverse_d up with it; hand it to a sequence
** operation (the IR analysis judges those).  Everything else -- and
** every walk over d or reverse_d, whose order is the id order -- is
** recorded here, at its first place, for rorder.  Callbacks from the
** evaluator are left out: their results are judged on the IR (tok_map,
** seq_map and custom predicates are never invariant there). */
void raspV_ids_seen(rasp_ctx *ctx, rasp_pos pos, const char *what) {
  if (ctx->ir.ids_what || ctx->in_callback) return;
  ctx->ir.ids_what = what;
  ctx->ir.ids_pos = pos.src ? pos : ctx->site;
}

/* Whether v holds an id or is d / reverse_d, searching lists, tuples and
** dicts.  A list can hold itself, so the search goes at most 64 deep and
** visits at most *budget values, and past either answers yes, which only
** ever costs a proof. */
static int holds_id_in(const value *v, long *budget, int depth) {
  if (v->tag || --*budget < 0) return 1;
  if (v->kind == V_LIST || v->kind == V_TUPLE) {
    if (v->u.list.n && depth > 64) return 1;
    for (int i = 0; i < v->u.list.n; i++)
      if (holds_id_in(v->u.list.items[i], budget, depth + 1)) return 1;
  } else if (v->kind == V_DICT) {
    if (v->u.dict.n && depth > 64) return 1;
    for (int i = 0; i < v->u.dict.n; i++)
      if (holds_id_in(v->u.dict.keys[i], budget, depth + 1) ||
          holds_id_in(v->u.dict.vals[i], budget, depth + 1))
        return 1;
  }
  return 0;
}

static int holds_id(const value *v) {
  long budget = 1L << 22;
  return holds_id_in(v, &budget, 0);
}

void raspV_ids_in(rasp_ctx *ctx, value *v, rasp_pos pos, const char *what) {
  if (!ctx->ir.ids_what && !ctx->in_callback && holds_id(v)) raspV_ids_seen(ctx, pos, what);
}

/* A number that is not an id, anywhere in v (reverse_d's keys are ids). */
static int holds_plain_number(const value *v) {
  if (raspV_is_num(v)) return !(v->tag & TAG_ID);
  if (v->kind == V_TUPLE)
    for (int i = 0; i < v->u.list.n; i++)
      if (holds_plain_number(v->u.list.items[i])) return 1;
  return 0;
}

void raspV_ids_key(rasp_ctx *ctx, value *dict, value *key, rasp_pos pos) {
  if (ctx->ir.ids_what || ctx->in_callback) return;
  if (dict->tag & TAG_REVERSE_D) {
    if (holds_plain_number(key))
      raspV_ids_seen(ctx, pos, "reverse_d looked up with a number that is not an id from d");
  } else if (holds_id(key)) {
    raspV_ids_seen(ctx, pos, "an id used as the key of a dict other than reverse_d");
  }
}

/* a == b says nothing about the numbering unless it sets an id against a
** number that is not one (d['a'] == 3), here or inside tuples and lists. */
static void ids_eq_in(rasp_ctx *ctx, const value *a, const value *b, rasp_pos pos, int depth) {
  if (raspV_is_num(a) && raspV_is_num(b)) {
    if ((a->tag ^ b->tag) & TAG_ID)
      raspV_ids_seen(ctx, pos, "an id compared with a number that is not an id");
    return;
  }
  if ((a->kind == V_LIST || a->kind == V_TUPLE) && a->kind == b->kind &&
      a->u.list.n == b->u.list.n && a != b) {
    if (depth > 64) { /* lists that hold themselves: assume the worst */
      raspV_ids_seen(ctx, pos, "an id compared with a number that is not an id");
      return;
    }
    for (int i = 0; i < a->u.list.n && !ctx->ir.ids_what; i++)
      ids_eq_in(ctx, a->u.list.items[i], b->u.list.items[i], pos, depth + 1);
  }
}

void raspV_ids_eq(rasp_ctx *ctx, const value *a, const value *b, rasp_pos pos) {
  ids_eq_in(ctx, a, b, pos, 0);
}
