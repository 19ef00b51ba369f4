/*
** rir.c -- the dataflow IR: node storage, liveness, dumping, and the exact
** element arithmetic every back end shares.
**
** Arithmetic is done on exact rationals because RASP programs are judged by
** their outputs: a float rounding difference between the evaluator and the
** compiled model would show up as a spurious mismatch.  Intermediate results
** are computed in 128 bits and checked on the way back to 64, so overflow is
** reported rather than wrapped.
*/
#include "rir.h"

#include <stdarg.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rmem.h"

/* ---- name tables, generated from rprim.h so they cannot fall out of step */

static const char *const op_names[] = {
#define X(name, text, comp, arity) [RASP_OP_##name] = text,
    RASP_OPS(X)
#undef X
};
static const rasp_component op_comps[] = {
#define X(name, text, comp, arity) [RASP_OP_##name] = RASP_COMP_##comp,
    RASP_OPS(X)
#undef X
};
static const int op_arity[] = {
#define X(name, text, comp, arity) [RASP_OP_##name] = arity,
    RASP_OPS(X)
#undef X
};
static const char *const unop_names[] = {
#define X(name, text) [RASP_UN_##name] = text,
    RASP_UNOPS(X)
#undef X
};
static const char *const binop_names[] = {
#define X(name, text) [RASP_BIN_##name] = text,
    RASP_BINOPS(X)
#undef X
};
static const char *const pred_names[] = {
#define X(name, text) [RASP_PRED_##name] = text,
    RASP_PREDS(X)
#undef X
};
_Static_assert(sizeof op_names / sizeof *op_names == RASP_OP__COUNT, "ops");
_Static_assert(sizeof unop_names / sizeof *unop_names == RASP_UN__COUNT, "un");
_Static_assert(sizeof binop_names / sizeof *binop_names == RASP_BIN__COUNT,
               "bin");
_Static_assert(sizeof pred_names / sizeof *pred_names == RASP_PRED__COUNT,
               "pred");

const char *raspI_op_name(rasp_op op) {
  return (unsigned)op < RASP_OP__COUNT ? op_names[op] : "?";
}
rasp_component raspI_op_component(rasp_op op) {
  return (unsigned)op < RASP_OP__COUNT ? op_comps[op] : RASP_COMP_MLP;
}
int raspI_op_arity(rasp_op op) {
  return (unsigned)op < RASP_OP__COUNT ? op_arity[op] : 0;
}
const char *raspI_unop_name(rasp_unop op) {
  return (unsigned)op < RASP_UN__COUNT ? unop_names[op] : "?";
}
const char *raspI_binop_name(rasp_binop op) {
  return (unsigned)op < RASP_BIN__COUNT ? binop_names[op] : "?";
}
const char *raspI_pred_name(rasp_pred pred) {
  return (unsigned)pred < RASP_PRED__COUNT ? pred_names[pred] : "?";
}

/* ---- the graph */

void raspI_init(rasp_ir *ir, int n) {
  memset(ir, 0, sizeof *ir);
  ir->n = n;
}

void raspI_free(rasp_ir *ir) {
  raspM_free(ir->nodes);
  raspM_free(ir->outputs);
  ir->nodes = NULL;
  ir->outputs = NULL;
  ir->nnodes = ir->cap = ir->noutputs = 0;
}

/* Whether a node's values are token ids, judged from its operation and
** operands only; anything computed from ids (a tok_map, arithmetic, a
** truncated mean) is not, because its numbers need not be ids.  where()
** choosing between token ids and a constant that can be an id (a positive
** integer, such as the path-star programs' full(seq, d['j'])) yields ids:
** the constant is then a token too. */
int raspI_id_const(const rasp_ir_node *nd) {
  return nd->op == RASP_OP_FULL && ((nd->c.den == 1 && nd->c.num > 0) ||
                                    (nd->c.den == RASP_DEN_SYM && nd->c.num == RASP_SYM_NONE));
}

int raspI_carries_tokens(const rasp_ir *ir, const rasp_ir_node *nd) {
#define TOK(k)                                                                             \
  (nd->in[k] >= 0 && nd->in[k] < ir->nnodes && (ir->nodes[nd->in[k]].flags & RASP_TOKEN_IDS))
#define ID_CONST(k) (nd->in[k] >= 0 && nd->in[k] < ir->nnodes && raspI_id_const(&ir->nodes[nd->in[k]]))
  switch (nd->op) {
  case RASP_OP_INPUT: return 1;
  case RASP_OP_AGGREGATE:
  case RASP_OP_AGGR_MAX:
  case RASP_OP_AGGR_MIN: /* the default shows where nothing is selected */
    return nd->nin == 2 && TOK(1) && !(nd->c.den == 1 && nd->c.num > 0);
  case RASP_OP_WHERE:
    return nd->nin == 3 && (TOK(1) || TOK(2)) && (TOK(1) || ID_CONST(1)) &&
           (TOK(2) || ID_CONST(2));
  case RASP_OP_BINARY:
    return nd->nin == 2 && (nd->aux == RASP_BIN_MIN || nd->aux == RASP_BIN_MAX) && TOK(0) &&
           TOK(1);
  default: return 0;
  }
#undef ID_CONST
#undef TOK
}

void raspI_seterr(rasp_error *err, const rasp_ir_node *nd, const char *fmt, ...) {
  if (!err) return;
  va_list ap;
  va_start(ap, fmt);
  raspR_vsetc(err, RASP_E_RUNTIME, nd->pos, fmt, ap);
  va_end(ap);
  raspR_locate_inner(err, nd->lib_pos, nd->lib_fn);
}

void raspI_blame(rasp_error *err, const rasp_ir_node *nd) {
  raspR_locate(err, nd->pos);
  raspR_locate_inner(err, nd->lib_pos, nd->lib_fn);
}

int raspI_add(rasp_ir *ir, const rasp_ir_node *node) {
  for (int k = 0; k < node->nin; k++) /* rir.h: creation order is a topological order */
    RASP_ASSERT(node->in[k] >= 0 && node->in[k] < ir->nnodes, "an operand precedes its user");
  RASP_GROW(ir->nodes, ir->cap, ir->nnodes + 1);
  rasp_ir_node *nd = &ir->nodes[ir->nnodes];
  *nd = *node;
  nd->flags &= ~RASP_TOKEN_IDS;
  if (raspI_carries_tokens(ir, nd)) nd->flags |= RASP_TOKEN_IDS;
  return ir->nnodes++;
}

int raspI_is_tokens(const rasp_ir *ir, int node) {
  return node >= 0 && node < ir->nnodes && (ir->nodes[node].flags & RASP_TOKEN_IDS) != 0;
}

void raspI_live(const rasp_ir *ir, const int *roots, int nroots,
                unsigned char *live) {
  if (ir->nnodes) memset(live, 0, (size_t)ir->nnodes);
  for (int i = 0; i < nroots; i++)
    if (roots[i] >= 0 && roots[i] < ir->nnodes) live[roots[i]] = 1;
  /* Operands precede their users, so one backward sweep reaches everything. */
  for (int i = ir->nnodes - 1; i >= 0; i--) {
    if (!live[i]) continue;
    const rasp_ir_node *nd = &ir->nodes[i];
    for (int j = 0; j < nd->nin; j++)
      if (nd->in[j] >= 0 && nd->in[j] < i) live[nd->in[j]] = 1;
  }
}

static const char *type_name(rasp_type t) {
  switch (t) {
  case RASP_T_BOOL: return "bool";
  case RASP_T_INT: return "int";
  case RASP_T_ANY: return "any";
  case RASP_T_SEL: return "sel";
  }
  return "?";
}

void raspI_dump(const rasp_ir *ir, FILE *out) {
  unsigned char *live = raspM_alloc((size_t)ir->nnodes + 1);
  raspI_live(ir, ir->outputs, ir->noutputs, live);
  char buf[256];
  for (int i = 0; i < ir->nnodes; i++) {
    if (!live[i]) continue;
    const rasp_ir_node *nd = &ir->nodes[i];
    fprintf(out, "%%%d = %s", i, raspI_op_name(nd->op));
    if (nd->op == RASP_OP_UNARY) fprintf(out, "[%s]", raspI_unop_name(nd->aux));
    if (nd->op == RASP_OP_BINARY)
      fprintf(out, "[%s]", raspI_binop_name(nd->aux));
    if (nd->op == RASP_OP_SELECT)
      fprintf(out, "[%s%s]", raspI_pred_name(nd->aux),
              (nd->flags & RASP_CAUSAL) ? ", causal" : "");
    else if (nd->type == RASP_T_SEL && (nd->flags & RASP_CAUSAL))
      fprintf(out, "[causal]"); /* masked after combining (rcausal.h) */
    fputc('(', out);
    for (int j = 0; j < nd->nin; j++)
      fprintf(out, "%s%%%d", j ? ", " : "", nd->in[j]);
    if (nd->op == RASP_OP_FULL || nd->op == RASP_OP_AGGR_MEAN ||
        nd->op == RASP_OP_AGGREGATE || nd->op == RASP_OP_AGGR_MAX ||
        nd->op == RASP_OP_AGGR_MIN) {
      raspI_elem_format(ir, nd->c, buf, sizeof buf);
      fprintf(out, "%s%s%s", nd->nin ? ", " : "",
              nd->op == RASP_OP_FULL ? "" : "default=", buf);
    }
    fprintf(out, ") : %s", type_name(nd->type));
    if (nd->label) fprintf(out, "  # %s", nd->label);
    if (nd->pos.src)
      fprintf(out, "  @%s:%d:%d", nd->pos.src->name, nd->pos.line,
              nd->pos.col);
    fputc('\n', out);
  }
  fprintf(out, "outputs:");
  for (int i = 0; i < ir->noutputs; i++) fprintf(out, " %%%d", ir->outputs[i]);
  fputc('\n', out);
  raspM_free(live);
}

/* ---- exact arithmetic */

typedef __int128 i128;

static int overflow(rasp_error *err) {
  raspR_setnopos(err, "integer overflow (value does not fit in 64 bits)");
  return 0;
}

/* Normalises num/den (den != 0) into a 64-bit number element. */
static int make_num(i128 num, i128 den, rasp_elem *out, rasp_error *err) {
  if (den < 0) {
    num = -num;
    den = -den;
  }
  i128 g = raspI_gcd128(num, den);
  if (g > 1) {
    num /= g;
    den /= g;
  }
  if (num < INT64_MIN || num > INT64_MAX || den > INT64_MAX)
    return overflow(err);
  out->num = (int64_t)num;
  out->den = (int64_t)den;
  return 1;
}

static int is_number(rasp_elem a) { return a.den != RASP_DEN_SYM; }
static int64_t den_of(rasp_elem a) { return a.den < 0 ? 1 : a.den; }
static int is_integer(rasp_elem a) { return a.den == 1 || a.den == -1; }

static int is_none(rasp_elem a) { return a.den == RASP_DEN_SYM && a.num == RASP_SYM_NONE; }

int raspI_none_order(rasp_error *err, rasp_binop op) {
  raspR_setnopos(err, "'%s' with None: None has no order", raspI_binop_name(op));
  return 0;
}
#define none_order raspI_none_order

static int symbol_arith(rasp_error *err, rasp_elem a, rasp_elem b) {
  int none = is_none(a) || is_none(b);
  raspR_setnopos(err, none ? "arithmetic on None" : "arithmetic on a symbol");
  return 0;
}

static int div_zero(rasp_error *err) {
  raspR_setnopos(err, "division by zero");
  return 0;
}

static rasp_elem mkbool(int v) {
  rasp_elem e = {v != 0, RASP_DEN_BOOL};
  return e;
}


/* Symbols are true, like non-empty strings in Python. */
int raspI_elem_truth(rasp_elem a) { return a.den == RASP_DEN_SYM || a.num != 0; }

rasp_elem raspI_elem_trunc(rasp_elem a) {
  rasp_elem r = a;
  if (a.den == RASP_DEN_BOOL) {
    r.den = 1;
  } else if (a.den > 1) {
    r.num = a.num / a.den; /* C division truncates toward zero */
    r.den = 1;
  }
  return r;
}

/* floor(n / d) for d > 0. */
static i128 floordiv128(i128 n, i128 d) {
  i128 q = n / d;
  if ((n % d != 0) && ((n < 0) != (d < 0))) q--;
  return q;
}

/* round(a), Python's: the nearest integer, ties to the even one. */
static rasp_elem elem_round(rasp_elem a) {
  if (a.den == RASP_DEN_BOOL) return (rasp_elem){a.num, 1};
  if (a.den == 1) return a;
  i128 q = floordiv128(a.num, a.den), r2 = 2 * ((i128)a.num - q * a.den);
  if (r2 > a.den || (r2 == a.den && (q & 1))) q++;
  return (rasp_elem){(int64_t)q, 1}; /* |round(a)| <= |a| + 1/2: no overflow */
}

/* x**k for a normalised rational; the result stays normalised since
** gcd(p^k, q^k) = 1. */
static int rpow(rasp_elem base, int64_t k, rasp_elem *out, rasp_error *err) {
  int64_t p = base.num, q = den_of(base);
  int neg = k < 0;
  uint64_t e = neg ? (uint64_t)0 - (uint64_t)k : (uint64_t)k;
  int64_t rp = 1, rq = 1;
  while (e) {
    if (e & 1) {
      if (__builtin_mul_overflow(rp, p, &rp) ||
          __builtin_mul_overflow(rq, q, &rq))
        return overflow(err);
    }
    e >>= 1;
    if (e) {
      if (__builtin_mul_overflow(p, p, &p) || __builtin_mul_overflow(q, q, &q))
        return overflow(err);
    }
  }
  if (neg) {
    if (rp == 0) return div_zero(err);
    return make_num(rq, rp, out, err);
  }
  return make_num(rp, rq, out, err);
}

int raspI_elem_binop(rasp_binop op, rasp_elem a, rasp_elem b, rasp_elem *out,
                     rasp_error *err) {
  switch (op) {
  case RASP_BIN_EQ: *out = mkbool(raspI_elem_eq(a, b)); return 1;
  case RASP_BIN_NE: *out = mkbool(!raspI_elem_eq(a, b)); return 1;
  case RASP_BIN_LT:
  case RASP_BIN_LE:
  case RASP_BIN_GT:
  case RASP_BIN_GE: {
    if (is_none(a) || is_none(b)) return none_order(err, op);
    int r = raspI_elem_cmp(a, b);
    *out = mkbool(op == RASP_BIN_LT ? r < 0 : op == RASP_BIN_LE ? r <= 0 : op == RASP_BIN_GT ? r > 0 : r >= 0);
    return 1;
  }
  case RASP_BIN_AND:
    *out = mkbool(raspI_elem_truth(a) && raspI_elem_truth(b));
    return 1;
  case RASP_BIN_OR:
    *out = mkbool(raspI_elem_truth(a) || raspI_elem_truth(b));
    return 1;
  /* Python's min/max return the first argument on ties. */
  case RASP_BIN_MIN: *out = raspI_elem_cmp(b, a) < 0 ? b : a; return 1;
  case RASP_BIN_MAX: *out = raspI_elem_cmp(b, a) > 0 ? b : a; return 1;
  case RASP_BIN_BITAND:
  case RASP_BIN_BITOR:
  case RASP_BIN_BITXOR: {
    if (!is_integer(a) || !is_integer(b)) {
      raspR_setnopos(err, "bitwise '%s' needs integers or booleans",
                     raspI_binop_name(op));
      return 0;
    }
    int64_t r = op == RASP_BIN_BITAND  ? (a.num & b.num)
                : op == RASP_BIN_BITOR ? (a.num | b.num)
                                       : (a.num ^ b.num);
    out->num = r;
    /* numpy keeps bool & bool a bool; mixed with an int it is an int. */
    out->den = (a.den == RASP_DEN_BOOL && b.den == RASP_DEN_BOOL)
                   ? RASP_DEN_BOOL
                   : 1;
    return 1;
  }
  default: break;
  }
  if (!is_number(a) || !is_number(b)) return symbol_arith(err, a, b);
  i128 an = a.num, ad = den_of(a), bn = b.num, bd = den_of(b);
  switch (op) {
  case RASP_BIN_ADD:
  case RASP_BIN_SUB: {
    if (ad == 1 && bd == 1) {
      int64_t r;
      if (op == RASP_BIN_ADD ? __builtin_add_overflow(a.num, b.num, &r)
                             : __builtin_sub_overflow(a.num, b.num, &r))
        return overflow(err);
      out->num = r;
      out->den = 1;
      return 1;
    }
    i128 l = an * bd, r = bn * ad, s;
    if (op == RASP_BIN_ADD ? __builtin_add_overflow(l, r, &s)
                           : __builtin_sub_overflow(l, r, &s))
      return overflow(err);
    return make_num(s, ad * bd, out, err);
  }
  case RASP_BIN_MUL:
    return make_num(an * bn, ad * bd, out, err);
  case RASP_BIN_DIV:
    if (bn == 0) return div_zero(err);
    return make_num(an * bd, ad * bn, out, err);
  case RASP_BIN_FLOORDIV:
  case RASP_BIN_MOD: {
    if (bn == 0) {
      raspR_setnopos(err, op == RASP_BIN_MOD ? "modulo by zero"
                                             : "division by zero");
      return 0;
    }
    /* a/b = (an*bd) / (ad*bn) */
    i128 n = an * bd, d = ad * bn;
    if (d < 0) {
      n = -n;
      d = -d;
    }
    i128 q = floordiv128(n, d);
    if (op == RASP_BIN_FLOORDIV) return make_num(q, 1, out, err);
    /* a - b*q = (an*bd - bn*q*ad) / (ad*bd); q fits in ~127 bits only when
       the operands are extreme, so guard the products. */
    i128 t, u, v;
    if (__builtin_mul_overflow(bn, q, &t) || __builtin_mul_overflow(t, ad, &u) ||
        __builtin_sub_overflow(an * bd, u, &v))
      return overflow(err);
    return make_num(v, ad * bd, out, err);
  }
  case RASP_BIN_POW:
    if (!is_integer(b)) {
      raspR_setnopos(err, "exponent must be an integer");
      return 0;
    }
    return rpow(a, b.num, out, err);
  default: break;
  }
  raspR_setnopos(err, "unknown binary operator %d", (int)op);
  return 0;
}

int raspI_elem_unop(rasp_unop op, rasp_elem a, rasp_elem *out,
                    rasp_error *err) {
  switch (op) {
  case RASP_UN_NOT: *out = mkbool(!raspI_elem_truth(a)); return 1;
  case RASP_UN_INVERT:
    if (a.den == RASP_DEN_BOOL) {
      *out = mkbool(!a.num); /* numpy ~ on a bool array */
      return 1;
    }
    if (a.den != 1) {
      raspR_setnopos(err, "'~' needs an integer or a boolean");
      return 0;
    }
    out->num = ~a.num;
    out->den = 1;
    return 1;
  case RASP_UN_TRUNC:
  case RASP_UN_ROUND:
    if (!is_number(a)) return symbol_arith(err, a, a);
    *out = op == RASP_UN_TRUNC ? raspI_elem_trunc(a) : elem_round(a);
    return 1;
  case RASP_UN_NEG:
  case RASP_UN_POS:
  case RASP_UN_ABS: {
    if (!is_number(a)) return symbol_arith(err, a, a);
    int64_t d = den_of(a);
    int negate = op == RASP_UN_NEG || (op == RASP_UN_ABS && a.num < 0);
    if (negate) {
      if (a.num == INT64_MIN) return overflow(err);
      out->num = -a.num;
    } else {
      out->num = a.num;
    }
    out->den = d;
    return 1;
  }
  default: break;
  }
  raspR_setnopos(err, "unknown unary operator %d", (int)op);
  return 0;
}

int raspI_elem_format(const rasp_ir *ir, rasp_elem a, char *buf, size_t size) {
  if (a.den == RASP_DEN_BOOL) return snprintf(buf, size, a.num ? "True" : "False");
  if (a.den == 1) return snprintf(buf, size, "%" PRId64, a.num);
  if (a.den > 1) return snprintf(buf, size, "%" PRId64 "/%" PRId64, a.num, a.den);
  if (a.num == RASP_SYM_NONE) return snprintf(buf, size, "None");
  const char *s = (ir && ir->symname) ? ir->symname(ir->user, a.num) : NULL;
  if (s) return snprintf(buf, size, "%s", s);
  return snprintf(buf, size, "<sym %" PRId64 ">", a.num);
}
