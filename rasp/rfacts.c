/*
** rfacts.c -- the IR facts every back end reads (see rfacts.h).
**
** Predicates are defined by the element order and equality of rir.c and by
** nothing else: True == 1, a symbol equals only itself and sorts after
** every number.  The pair scan (rfacts.h, inline) keeps the short-circuit
** order of the Python builtins it implements (an equality is not asked once
** its answer is known), so a callback that can fail fails at the same place
** as the interpreter would.
**
** Value facts.  A fact is a set of kinds and an interval of integers that
** contains every number the node can hold; the transfer functions below
** are interval arithmetic done in 128 bits and saturated to 64, which is
** sound because an element whose exact value leaves 64 bits is an error
** (raspI_elem_*), not a value.  They follow rir.c's element routines case by
** case: arithmetic turns booleans into integers, & | ^ keep bool op bool a
** bool, ~ on a bool is logical not, '/' is exact, '//' and '%' are Python's,
** ** takes an integer exponent; min/max of numbers are the interval min/max,
** but a symbol sorts after every number, so with symbols around only the
** hull is safe.  Heads: a mean lies in its values' hull, a single selected
** value passes through, nothing selected gives the default.  Where nothing
** is known (a program's function) the fact is "any kind, no bound".
*/
#include "rfacts.h"

#include <string.h>

#include "rmem.h"

typedef __int128 i128;

int raspF_pred_holds(rasp_pred p, rasp_elem key, rasp_elem query) {
  switch (p) {
  case RASP_PRED_EQ: return raspI_elem_eq(key, query);
  case RASP_PRED_NE: return !raspI_elem_eq(key, query);
  case RASP_PRED_LT: return raspI_elem_cmp(key, query) < 0;
  case RASP_PRED_LE: return raspI_elem_cmp(key, query) <= 0;
  case RASP_PRED_GT: return raspI_elem_cmp(key, query) > 0;
  case RASP_PRED_GE: return raspI_elem_cmp(key, query) >= 0;
  case RASP_PRED_TRUE: return 1;
  case RASP_PRED_FALSE: return 0;
  default: return -1; /* custom: the program's function decides */
  }
}

void raspF_static(const rasp_ir *ir, int from, unsigned char *st) {
  for (int i = from < 0 ? 0 : from; i < ir->nnodes; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    int s = nd->op != RASP_OP_INPUT;
    for (int j = 0; j < nd->nin && s; j++) s = nd->in[j] >= 0 && nd->in[j] < i && st[nd->in[j]];
    /* always / never ignore the values they compare: sel_width of one is
       the length, whatever the tokens */
    if (nd->op == RASP_OP_SELECT && (nd->aux == RASP_PRED_TRUE || nd->aux == RASP_PRED_FALSE))
      s = 1;
    st[i] = (unsigned char)s;
  }
}

static uint64_t node_sig(const int *canon, const rasp_ir_node *nd) {
  uint64_t h = raspF_mix64((uint64_t)nd->op * 31 + (uint64_t)(unsigned)nd->aux);
  h = raspF_mix64(h ^ (uint64_t)nd->nin ^ ((uint64_t)nd->flags << 8));
  h = raspF_mix64(h ^ (uint64_t)nd->c.num) ^ raspF_mix64((uint64_t)nd->c.den + 7);
  h = raspF_mix64(h ^ (uint64_t)(uintptr_t)nd->fn);
  for (int j = 0; j < nd->nin; j++) h = raspF_mix64(h ^ ((uint64_t)canon[nd->in[j]] + 1) * 0x9e37u);
  return h;
}

static int same_node(const int *canon, const rasp_ir_node *a, const rasp_ir_node *b) {
  if (a->op != b->op || a->aux != b->aux || a->nin != b->nin || a->flags != b->flags ||
      a->fn != b->fn || a->c.num != b->c.num || a->c.den != b->c.den)
    return 0;
  for (int j = 0; j < a->nin; j++)
    if (canon[a->in[j]] != canon[b->in[j]]) return 0;
  return 1;
}

/* Operands precede their users, so one forward pass sees every operand's
** canonical node before the user's; an open-addressing table keyed by the
** node's signature finds the earlier equal node. */
void raspF_canon(const rasp_ir *ir, const unsigned char *live, int *canon) {
  int nn = ir->nnodes;
  for (int i = 0; i < nn; i++) canon[i] = i;
  size_t cap = 16;
  while (cap < (size_t)nn * 2) cap *= 2;
  int *tab = raspM_alloc(cap * sizeof *tab); /* node + 1, 0 = empty */
  for (int i = 0; i < nn; i++) {
    if (live && !live[i]) continue;
    const rasp_ir_node *nd = &ir->nodes[i];
    size_t j = node_sig(canon, nd) & (cap - 1);
    for (; tab[j]; j = (j + 1) & (cap - 1))
      if (same_node(canon, &ir->nodes[tab[j] - 1], nd)) break;
    if (!tab[j]) tab[j] = i + 1;
    else canon[i] = tab[j] - 1;
  }
  raspM_free(tab);
}

/* ---- value facts */

#define K_NUM RASPF_K_NUM
#define K_INTLIKE (RASPF_K_INT | RASPF_K_BOOL)

static const raspF_value NONE = {0, INT64_MAX, INT64_MIN};
static const raspF_value ANY = {RASPF_K_ANY, INT64_MIN, INT64_MAX};

static int64_t sat(i128 v) {
  return v < INT64_MIN ? INT64_MIN : v > INT64_MAX ? INT64_MAX : (int64_t)v;
}
static i128 min128(i128 a, i128 b) { return a < b ? a : b; }
static i128 max128(i128 a, i128 b) { return a > b ? a : b; }

/* A fact from a kind and an interval (saturated); no number, no bounds. */
static raspF_value mk(unsigned kind, i128 lo, i128 hi) {
  raspF_value f = {kind, sat(lo), sat(hi)};
  if (!(kind & K_NUM)) {
    f.lo = INT64_MAX;
    f.hi = INT64_MIN;
  }
  return f;
}

static raspF_value hull(raspF_value a, raspF_value b) {
  raspF_value f = {a.kind | b.kind, a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
  return f;
}

static i128 fdiv(i128 a, i128 b) {
  i128 q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) q--;
  return q;
}
static i128 cdiv(i128 a, i128 b) { return -fdiv(-a, b); }

raspF_value raspF_elem_value(rasp_elem e) {
  unsigned k = raspF_elem_kind(e);
  if (k == RASPF_K_SYM) return mk(k, 0, 0);
  i128 d = e.den < 1 ? 1 : e.den;
  return mk(k, fdiv(e.num, d), cdiv(e.num, d));
}

int raspF_holds(raspF_value f, rasp_elem e) {
  unsigned k = raspF_elem_kind(e);
  if (k == RASPF_K_RAT && e.num % e.den == 0) k = RASPF_K_INT; /* unreduced, say 4/2 */
  if (!(f.kind & k)) return 0;
  if (k == RASPF_K_SYM) return 1;
  i128 d = e.den < 1 ? 1 : e.den;
  return (i128)f.lo * d <= e.num && e.num <= (i128)f.hi * d;
}

uint64_t raspF_magnitude(raspF_value f) {
  if (!(f.kind & K_NUM) || f.lo > f.hi) return 0;
  uint64_t a = f.lo < 0 ? (uint64_t)0 - (uint64_t)f.lo : (uint64_t)f.lo;
  uint64_t b = f.hi < 0 ? (uint64_t)0 - (uint64_t)f.hi : (uint64_t)f.hi;
  a = a > b ? a : b;
  return a > INT64_MAX ? INT64_MAX : a;
}

/* The least 2^k - 1 >= v (v >= 0): every bit pattern below v's top bit. */
static i128 bitmask(i128 v) {
  i128 m = 0;
  while (m < v) m = m * 2 + 1;
  return m;
}

/* m^e saturated at 2^63 (m >= 1, e >= 0); the loop stops after 64 steps at
** most, since m >= 2 reaches the cap by then. */
static i128 satpow(i128 m, int64_t e) {
  i128 r = 1;
  if (m == 1) return 1;
  for (int64_t i = 0; i < e; i++) {
    r *= m;
    if (r > INT64_MAX) return (i128)INT64_MAX + 1;
  }
  return r;
}

static raspF_value unary(rasp_unop op, raspF_value x) {
  i128 a = x.lo, b = x.hi;
  /* numbers come out as integers, or rationals from rationals */
  unsigned num = ((x.kind & K_INTLIKE) ? RASPF_K_INT : 0) | (x.kind & RASPF_K_RAT);
  switch (op) {
  case RASP_UN_NOT: return mk(RASPF_K_BOOL, 0, 1);
  case RASP_UN_INVERT: { /* logical not on booleans, -v - 1 on integers */
    raspF_value f = NONE;
    if (x.kind & RASPF_K_BOOL) f = mk(RASPF_K_BOOL, 0, 1);
    if (x.kind & RASPF_K_INT) f = hull(f, mk(RASPF_K_INT, -b - 1, -a - 1));
    return f;
  }
  case RASP_UN_NEG: return mk(num, -b, -a);
  case RASP_UN_POS: return mk(num, a, b);
  case RASP_UN_TRUNC: /* integers within the operand's (integer) bounds */
  case RASP_UN_ROUND:
    return x.kind & K_NUM ? mk(RASPF_K_INT, a, b) : NONE;
  case RASP_UN_ABS:
    if (a >= 0) return mk(num, a, b);
    if (b <= 0) return mk(num, -b, -a);
    return mk(num, 0, max128(-a, b));
  default: return ANY;
  }
}

static raspF_value binary(rasp_binop op, raspF_value x, raspF_value y) {
  i128 a = x.lo, b = x.hi, c = y.lo, d = y.hi;
  unsigned nx = x.kind & K_NUM, ny = y.kind & K_NUM;
  unsigned rat = (nx | ny) & RASPF_K_RAT;
  switch (op) {
  case RASP_BIN_EQ: case RASP_BIN_NE: case RASP_BIN_LT: case RASP_BIN_LE:
  case RASP_BIN_GT: case RASP_BIN_GE: case RASP_BIN_AND: case RASP_BIN_OR:
    return mk(RASPF_K_BOOL, 0, 1);
  case RASP_BIN_BITAND:
  case RASP_BIN_BITOR:
  case RASP_BIN_BITXOR: { /* integers and booleans only */
    unsigned ix = x.kind & K_INTLIKE, iy = y.kind & K_INTLIKE;
    if (!ix || !iy) return NONE;
    unsigned k = (ix & iy & RASPF_K_BOOL) | ((ix | iy) & RASPF_K_INT);
    if (op == RASP_BIN_BITAND && (a >= 0 || c >= 0)) /* x & y is within a non-negative operand */
      return mk(k, 0, a >= 0 && c >= 0 ? min128(b, d) : a >= 0 ? b : d);
    /* two's complement: operands of k bits (sign included) give k bits */
    i128 m = bitmask(max128(max128(b, d), max128(a < 0 ? -a - 1 : 0, c < 0 ? -c - 1 : 0)));
    return mk(k, a < 0 || c < 0 ? -m - 1 : 0, m);
  }
  case RASP_BIN_MIN:
  case RASP_BIN_MAX:
    /* a symbol sorts after every number: then the number that comes out
       may be either operand's */
    if (((x.kind | y.kind) & RASPF_K_SYM) || !nx || !ny) return hull(x, y);
    if (op == RASP_BIN_MIN) return mk(x.kind | y.kind, min128(a, c), min128(b, d));
    return mk(x.kind | y.kind, max128(a, c), max128(b, d));
  default: break;
  }
  if (!nx || !ny) return NONE; /* arithmetic on symbols fails */
  switch (op) {
  case RASP_BIN_ADD: return mk(RASPF_K_INT | rat, a + c, b + d);
  case RASP_BIN_SUB: return mk(RASPF_K_INT | rat, a - d, b - c);
  case RASP_BIN_MUL: {
    i128 p[4] = {a * c, a * d, b * c, b * d};
    return mk(RASPF_K_INT | rat, min128(min128(p[0], p[1]), min128(p[2], p[3])),
              max128(max128(p[0], p[1]), max128(p[2], p[3])));
  }
  case RASP_BIN_DIV:
  case RASP_BIN_FLOORDIV: {
    unsigned k = op == RASP_BIN_DIV ? RASPF_K_INT | RASPF_K_RAT : RASPF_K_INT;
    if (c >= 1 || d <= -1) { /* |y| >= 1, one sign: monotone, the corners bound it */
      i128 lo = fdiv(a, c), hi = lo;
      i128 q[4][2] = {{a, c}, {a, d}, {b, c}, {b, d}};
      for (int i = 0; i < 4; i++) {
        lo = min128(lo, fdiv(q[i][0], q[i][1]));
        hi = max128(hi, op == RASP_BIN_DIV ? cdiv(q[i][0], q[i][1]) : fdiv(q[i][0], q[i][1]));
      }
      return mk(k, lo, hi);
    }
    if (!(ny & RASPF_K_RAT)) { /* a non-zero integer divisor: |x / y| <= |x| */
      i128 m = max128(a < 0 ? -a : a, b < 0 ? -b : b);
      return mk(k, -m, m);
    }
    return mk(k, INT64_MIN, INT64_MAX);
  }
  case RASP_BIN_MOD: { /* the sign of the divisor, |r| < |y| */
    i128 lo = rat ? min128(c, 0) : min128(c + 1, 0), hi = rat ? max128(d, 0) : max128(d - 1, 0);
    if (a >= 0 && c >= 1) hi = min128(hi, b); /* 0 <= x < ... : r <= x */
    return mk(RASPF_K_INT | rat, lo, hi);
  }
  case RASP_BIN_POW: { /* an integer exponent; negative ones give 1 / x^k */
    if (!(y.kind & K_INTLIKE)) return NONE;
    raspF_value f = NONE;
    if (d >= 0) {
      i128 p = satpow(max128(max128(a < 0 ? -a : a, b < 0 ? -b : b), 1), (int64_t)d);
      f = mk(RASPF_K_INT | rat, a >= 0 ? 0 : -p, p);
    }
    if (c < 0)
      f = hull(f, (nx & RASPF_K_RAT) ? mk(RASPF_K_INT | RASPF_K_RAT, INT64_MIN, INT64_MAX)
                                      : mk(RASPF_K_INT | RASPF_K_RAT, a >= 0 ? 0 : -1, 1));
    return f;
  }
  default: return ANY;
  }
}

raspF_value raspF_transfer(const rasp_ir *ir, int id, raspF_value tok, const raspF_value *in) {
  const rasp_ir_node *nd = &ir->nodes[id];
  int n = ir->n;
  if (n < 1) return NONE; /* no positions, no elements */
  switch (nd->op) {
  case RASP_OP_INPUT: return tok;
  case RASP_OP_INDICES: return mk(RASPF_K_INT, 0, n - 1);
  case RASP_OP_FULL: return raspF_elem_value(nd->c);
  case RASP_OP_UNARY: return in[0].kind ? unary((rasp_unop)nd->aux, in[0]) : NONE;
  case RASP_OP_BINARY:
    return in[0].kind && in[1].kind ? binary((rasp_binop)nd->aux, in[0], in[1]) : NONE;
  case RASP_OP_WHERE: return in[0].kind ? hull(in[1], in[2]) : NONE;
  case RASP_OP_MAP: return in[0].kind ? ANY : NONE; /* the program's function */
  case RASP_OP_SEQMAP: /* truncated: numbers become integers */
    return in[0].kind && in[1].kind ? mk(RASPF_K_INT | RASPF_K_SYM, INT64_MIN, INT64_MAX) : NONE;
  case RASP_OP_SELECT:
  case RASP_OP_SEL_AND:
  case RASP_OP_SEL_OR:
  case RASP_OP_SEL_NOT: return NONE; /* no value of their own */
  case RASP_OP_SEL_WIDTH: {
    const rasp_ir_node *s = nd->in[0] >= 0 && nd->in[0] < id ? &ir->nodes[nd->in[0]] : NULL;
    if (s && s->op == RASP_OP_SELECT && s->aux == RASP_PRED_TRUE) /* causal: q + 1 keys */
      return mk(RASPF_K_INT, s->flags & RASP_CAUSAL ? 1 : n, n);
    if (s && s->op == RASP_OP_SELECT && s->aux == RASP_PRED_FALSE) return mk(RASPF_K_INT, 0, 0);
    return mk(RASPF_K_INT, 0, n);
  }
  case RASP_OP_AGGR_MEAN: { /* the truncated mean lies in the values' range */
    raspF_value f = raspF_elem_value(raspI_elem_trunc(nd->c));
    if (in[1].kind & K_NUM) f = hull(f, mk(RASPF_K_INT, in[1].lo, in[1].hi));
    return f;
  }
  case RASP_OP_AGGREGATE: { /* one value passes through; a mean of several */
    raspF_value f = hull(raspF_elem_value(nd->c), in[1]);
    if (in[1].kind & K_NUM) f = hull(f, mk(RASPF_K_INT | RASPF_K_RAT, in[1].lo, in[1].hi));
    return f;
  }
  case RASP_OP_AGGR_MAX:
  case RASP_OP_AGGR_MIN: return hull(raspF_elem_value(nd->c), in[1]);
  default: return ANY;
  }
}

void raspF_values(const rasp_ir *ir, raspF_value tok, raspF_value *out) {
  for (int i = 0; i < ir->nnodes; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    raspF_value in[3] = {ANY, ANY, ANY};
    for (int j = 0; j < nd->nin && j < 3; j++)
      if (nd->in[j] >= 0 && nd->in[j] < i) in[j] = out[nd->in[j]];
    out[i] = raspF_transfer(ir, i, tok, in);
  }
}

/* ---- moves */

/* Scratch for the searches below: a visit stamp per node (a new stamp per
** search, so nothing is cleared) and one explicit stack, since selector
** trees and element-wise chains can be as deep as the graph. */
struct raspF_movescan {
  const rasp_ir *ir;
  int *seen, stamp, *stack; /* stack: 2 nnodes entries */
  int *eqs;                 /* the and-reached equality selects: nnodes */
  unsigned *kinds;          /* raspF_values' kinds (NULL until asked) */
};

raspF_movescan *raspF_moves_new(const rasp_ir *ir) {
  size_t nn = (size_t)(ir->nnodes > 0 ? ir->nnodes : 1);
  raspF_movescan *m = raspM_alloc(sizeof *m);
  m->ir = ir;
  m->seen = raspM_alloc(sizeof(int) * nn);
  m->stack = raspM_alloc(sizeof(int) * 2 * nn);
  m->eqs = raspM_alloc(sizeof(int) * nn);
  return m;
}

void raspF_moves_free(raspF_movescan *m) {
  if (!m) return;
  raspM_free(m->seen);
  raspM_free(m->stack);
  raspM_free(m->eqs);
  raspM_free(m->kinds);
  raspM_free(m);
}

static int is_elementwise(rasp_op op) {
  return op == RASP_OP_UNARY || op == RASP_OP_BINARY || op == RASP_OP_WHERE ||
         op == RASP_OP_MAP || op == RASP_OP_SEQMAP;
}

/* Whether value node v is computed from node k and constants by
** element-wise operations alone (so equal k means equal v). */
static int computed_from(raspF_movescan *m, int v, int k) {
  int sp = 0, stamp = ++m->stamp;
  m->stack[sp++] = v;
  m->seen[v] = stamp;
  while (sp) {
    int x = m->stack[--sp];
    const rasp_ir_node *nd = &m->ir->nodes[x];
    if (x == k || nd->op == RASP_OP_FULL) continue;
    if (!is_elementwise(nd->op)) return 0;
    for (int i = 0; i < nd->nin; i++) {
      int y = nd->in[i];
      if (y < 0 || y >= x) return 0; /* not a well-formed graph: claim nothing */
      if (m->seen[y] != stamp) {
        m->seen[y] = stamp;
        m->stack[sp++] = y;
      }
    }
  }
  return 1;
}

int raspF_move(raspF_movescan *m, int agg, const unsigned *kinds) {
  const rasp_ir *ir = m->ir;
  if (agg < 0 || agg >= ir->nnodes) return RASPF_MOVE_NONE;
  const rasp_ir_node *an = &ir->nodes[agg];
  if (an->op != RASP_OP_AGGREGATE && an->op != RASP_OP_AGGR_MEAN) return RASPF_MOVE_NONE;
  int sel = an->in[0], vals = an->in[1];
  if (sel < 0 || sel >= agg || vals < 0 || vals >= agg) return RASPF_MOVE_NONE;
  /* the equality selects: any in the tree makes it a move; those reached
  ** through `and`s alone can prove it (an `and` selects a subset of either
  ** operand's keys; an `or` or a `not` keys neither need select) */
  int has_eq = 0, neq = 0, sp = 0, stamp = ++m->stamp;
  m->stamp++; /* stamp + 1: reached through ands alone */
  m->stack[sp++] = sel * 2 + 1; /* node * 2 + (reached through ands alone) */
  m->seen[sel] = stamp + 1;
  while (sp) {
    int top = m->stack[--sp], x = top / 2, via_and = top & 1;
    const rasp_ir_node *nd = &ir->nodes[x];
    if (nd->op == RASP_OP_SELECT) {
      if (nd->aux != RASP_PRED_EQ) continue;
      has_eq = 1;
      if (via_and) m->eqs[neq++] = x;
      continue;
    }
    int keep = via_and && nd->op == RASP_OP_SEL_AND;
    for (int i = 0; i < nd->nin; i++) {
      int y = nd->in[i];
      if (y < 0 || y >= x) continue;
      /* a node is pushed at most twice: once reached, once reached
      ** through ands alone */
      if (m->seen[y] == stamp + 1 || (m->seen[y] == stamp && !keep)) continue;
      m->seen[y] = keep ? stamp + 1 : stamp;
      m->stack[sp++] = y * 2 + keep;
    }
  }
  if (!has_eq) return RASPF_MOVE_NONE;
  if (!kinds) {
    if (!m->kinds) {
      raspF_value *f = raspM_alloc(sizeof(raspF_value) * (size_t)(ir->nnodes ? ir->nnodes : 1));
      raspF_values(ir, (raspF_value){RASPF_K_INT, INT64_MIN, INT64_MAX}, f);
      m->kinds = raspM_alloc(sizeof(unsigned) * (size_t)(ir->nnodes ? ir->nnodes : 1));
      for (int i = 0; i < ir->nnodes; i++) m->kinds[i] = f[i].kind;
      raspM_free(f);
    }
    kinds = m->kinds;
  }
  for (int i = 0; i < neq; i++) {
    int key = ir->nodes[m->eqs[i]].in[0];
    if (key < 0 || key >= m->eqs[i]) continue;
    if (ir->nodes[key].op == RASP_OP_INDICES) return RASPF_MOVE_PROVEN;
    /* True == 1: keys that mix booleans and numbers select both, which the
    ** values (or a mean against a move) can tell apart */
    unsigned kk = kinds[key];
    if ((kk & RASPF_K_BOOL) && (kk & (RASPF_K_INT | RASPF_K_RAT))) continue;
    if (computed_from(m, vals, key)) return RASPF_MOVE_PROVEN;
  }
  return RASPF_MOVE_ASSUMED;
}

void raspF_moves(const rasp_ir *ir, unsigned char *out) {
  raspF_movescan *m = raspF_moves_new(ir);
  for (int i = 0; i < ir->nnodes; i++) out[i] = (unsigned char)raspF_move(m, i, NULL);
  raspF_moves_free(m);
}

/* ---- symbols */

void raspF_symbolic(const rasp_ir *ir, unsigned char *out) {
  raspF_symbolic_run(ir, NULL, NULL, out);
}

void raspF_symbolic_run(const rasp_ir *ir, int (*holds)(void *user, int agg), void *user,
                        unsigned char *out) {
  raspF_movescan *m = NULL;
  for (int i = 0; i < ir->nnodes; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    int ok = 1;
    for (int j = 0; j < nd->nin; j++) ok &= nd->in[j] >= 0 && nd->in[j] < i;
    /* an operand's verdict, and whether it is a constant that can be an id */
#define SYM(k) (out[nd->in[k]])
#define ID_CONST(k) raspI_id_const(&ir->nodes[nd->in[k]])
    /* a default that can be an id (aggr_mean truncates its default too:
    ** 9223372036854775806/5 becomes the integer 1844674407370955161) */
    rasp_elem dflt = nd->op == RASP_OP_AGGR_MEAN ? raspI_elem_trunc(nd->c) : nd->c;
    int dflt_id = dflt.den == 1 && dflt.num > 0;
    switch (ok ? nd->op : RASP_OP__COUNT) {
    case RASP_OP_INPUT: out[i] = 1; break;
    case RASP_OP_AGGREGATE:
    case RASP_OP_AGGR_MEAN:
      out[i] = 0;
      if (nd->nin == 2 && SYM(1) && !dflt_id) {
        if (!m) m = raspF_moves_new(ir);
        int mv = raspF_move(m, i, NULL);
        out[i] = mv == RASPF_MOVE_PROVEN || (mv == RASPF_MOVE_ASSUMED && holds && holds(user, i));
      }
      break;
    case RASP_OP_AGGR_MAX:
    case RASP_OP_AGGR_MIN: out[i] = nd->nin == 2 && SYM(1) && !dflt_id; break;
    case RASP_OP_WHERE:
      out[i] = nd->nin == 3 && (SYM(1) || SYM(2)) && (SYM(1) || ID_CONST(1)) &&
               (SYM(2) || ID_CONST(2));
      break;
    case RASP_OP_BINARY:
      out[i] = nd->nin == 2 && (nd->aux == RASP_BIN_MIN || nd->aux == RASP_BIN_MAX) && SYM(0) &&
               SYM(1);
      break;
    default: out[i] = 0; break;
    }
#undef SYM
#undef ID_CONST
  }
  raspF_moves_free(m);
}

int raspF_is_symbolic(const rasp_ir *ir, int node) {
  if (node < 0 || node >= ir->nnodes) return 0;
  unsigned char *sym = raspM_alloc((size_t)ir->nnodes);
  raspF_symbolic(ir, sym);
  int r = sym[node];
  raspM_free(sym);
  return r;
}

/* ---- distinct values */

static const raspF_distinct NO_CLAIM = {0, INT64_MAX, INT64_MIN};

static raspF_distinct distinct(i128 lo, i128 hi) {
  raspF_distinct d = {1, INT64_MAX, INT64_MIN};
  if (lo <= hi) d.lo = sat(lo), d.hi = sat(hi); /* saturating widens: still sound */
  return d;
}

/* Exceptions of both (an empty one has lo > hi). */
static raspF_distinct distinct_hull(raspF_distinct a, i128 lo, i128 hi) {
  if (a.lo > a.hi) return distinct(lo, hi);
  if (lo > hi) return a;
  return distinct(min128(a.lo, lo), max128(a.hi, hi));
}

static void and_eqs(const rasp_ir *ir, int sel, int *out, int max, int *n, int depth) {
  if (sel < 0 || sel >= ir->nnodes || depth > 64 || *n >= max) return;
  const rasp_ir_node *s = &ir->nodes[sel];
  if (s->op == RASP_OP_SELECT) {
    if (s->aux == RASP_PRED_EQ && s->in[0] >= 0 && s->in[0] < sel && s->in[1] >= 0 && s->in[1] < sel)
      out[(*n)++] = sel;
    return;
  }
  if (s->op != RASP_OP_SEL_AND) return;
  for (int j = 0; j < 2; j++)
    if (s->in[j] < sel) and_eqs(ir, s->in[j], out, max, n, depth + 1);
}

int raspF_and_eq_selects(const rasp_ir *ir, int sel, int *out, int max) {
  int n = 0;
  and_eqs(ir, sel, out, max, &n, 0);
  return n;
}

/* The query of an equality select on keys equal (canonically) to vals
** reached from selector sel through `and`s alone; -1 if none. */
static int select_on_values(const rasp_ir *ir, const int *canon, int sel, int vals) {
  int eqs[16], n = raspF_and_eq_selects(ir, sel, eqs, 16);
  for (int k = 0; k < n; k++)
    if (canon[ir->nodes[eqs[k]].in[0]] == canon[vals]) return ir->nodes[eqs[k]].in[1];
  return -1;
}

void raspF_distincts(const rasp_ir *ir, const raspF_value *facts, raspF_distinct *out) {
  int nn = ir->nnodes;
  int *canon = raspM_alloc(sizeof(int) * (size_t)(nn > 0 ? nn : 1));
  raspF_canon(ir, NULL, canon);
  for (int i = 0; i < nn; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    out[i] = NO_CLAIM;
    if (facts[i].kind != RASPF_K_INT) continue;
    int ok = 1;
    for (int j = 0; j < nd->nin; j++) ok &= nd->in[j] >= 0 && nd->in[j] < i;
    if (!ok) continue;
    switch (nd->op) {
    case RASP_OP_INDICES: out[i] = distinct(1, 0); break;
    case RASP_OP_UNARY: {
      raspF_distinct x = out[nd->in[0]];
      if (!x.holds) break;
      if (nd->aux == RASP_UN_POS) out[i] = x;
      else if (nd->aux == RASP_UN_NEG) out[i] = distinct(-(i128)x.hi, -(i128)x.lo);
      break;
    }
    case RASP_OP_BINARY: {
      /* one operand a nonzero integer constant c, the other distinct */
      int cj = -1;
      for (int j = 0; j < 2; j++) {
        const rasp_ir_node *o = &ir->nodes[nd->in[j]];
        if (o->op == RASP_OP_FULL && o->c.den == 1 && out[nd->in[1 - j]].holds) cj = j;
      }
      if (cj < 0) break;
      i128 c = ir->nodes[nd->in[cj]].c.num;
      raspF_distinct x = out[nd->in[1 - cj]];
      i128 lo = x.lo, hi = x.hi;
      if (lo > hi) { /* no exceptions stay none */
        if (nd->aux == RASP_BIN_ADD || nd->aux == RASP_BIN_SUB || (nd->aux == RASP_BIN_MUL && c))
          out[i] = distinct(1, 0);
        break;
      }
      if (nd->aux == RASP_BIN_ADD) out[i] = distinct(lo + c, hi + c);
      else if (nd->aux == RASP_BIN_SUB && cj == 1) out[i] = distinct(lo - c, hi - c);
      else if (nd->aux == RASP_BIN_SUB) out[i] = distinct(c - hi, c - lo);
      else if (nd->aux == RASP_BIN_MUL && c > 0) out[i] = distinct(lo * c, hi * c);
      else if (nd->aux == RASP_BIN_MUL && c < 0) out[i] = distinct(hi * c, lo * c);
      break;
    }
    case RASP_OP_WHERE: {
      raspF_distinct best = NO_CLAIM;
      for (int j = 1; j <= 2; j++) {
        raspF_distinct x = out[nd->in[j]];
        raspF_value other = facts[nd->in[3 - j]];
        if (!x.holds || !raspF_bounded(other)) continue;
        raspF_distinct d = distinct_hull(x, other.lo, other.hi);
        if (!best.holds || (i128)d.hi - d.lo < (i128)best.hi - best.lo) best = d;
      }
      out[i] = best;
      break;
    }
    case RASP_OP_AGGREGATE:
    case RASP_OP_AGGR_MEAN: {
      if (nd->c.den != 1) break;
      int q = select_on_values(ir, canon, nd->in[0], nd->in[1]);
      if (q < 0 || !out[q].holds) break;
      out[i] = distinct_hull(out[q], nd->c.num, nd->c.num);
      break;
    }
    default: break;
    }
  }
  raspM_free(canon);
}
