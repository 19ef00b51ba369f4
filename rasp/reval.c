/*
** reval.c -- the vectorised evaluator: its API and run loop.
**
** Design.  A traced program is a DAG whose nodes are whole-sequence
** operations, so the natural unit of work is "one node over the whole batch":
** each node's value is one B x n array of rasp_elem, filled by a tight loop.
** The interpreter's per-element overhead (dispatch, operand lookup) is paid
** once per node instead of once per element.
**
** Kinds.  Besides its value, every node gets a run-time *kind*: the set of
** element representations that may occur in it over the whole batch (plain
** integers, booleans, rationals, symbols).  It is exact for inputs, indices,
** constants, comparisons and counts, and an upper bound elsewhere (where
** picks from two operands and gets the union).  The static types of the IR
** are not trusted for this (min(True, 2) is True in an int-typed node).
** Operations whose operands are "int-like" (integers and booleans only, so
** num is the numeric value and equality and order are those of num) run
** tight loops without per-element representation checks, which the compiler
** can vectorise; anything else goes through the exact element routines.
** An upper bound is safe for choosing a fast path; decisions that report
** errors (symbols in aggr_mean) look at the values themselves.  What an
** operation makes of its operands' kinds and bounds is rfacts' rule
** (raspF_transfer), applied per node after its handler (node_fact); a
** handler only says what it saw, or asks for a scan where the rule leaves
** several kinds.
**
** Memory.  Value buffers and all scratch space (hash tables, sort buffers,
** selector matrices) belong to the evaluator and are reused from run to run,
** so a run allocates nothing once the sizes have been seen.  By default every
** value is kept until the next run, because counterexample reports and the
** REPL want to show intermediates.  raspE_set_keep_intermediates(ev, 0)
** instead hands a node's buffer back to a pool as soon as its last user has
** run, so memory follows the widest point of the graph, not its size; only
** the outputs can then be read.
**
** Work that does not depend on the input, values computed twice, values
** that die early, and how each head will be evaluated are decided by the
** plan (reval_plan.c), once per graph, set of outputs and batch shape; a
** run only follows it.  Heads are evaluated by the kernels of reval_kern.c;
** RASP_EVAL_REFERENCE=1 or raspE_set_reference send every head through the
** reference kernel (reval_ref.c) instead.
**
** Callbacks into the interpreter (maps, custom predicates) are memoised per
** node in hash tables owned by the evaluator, so a map over a vocabulary of
** ten tokens costs ten calls whatever the batch size.  The tables live as
** long as the evaluator: the program's functions are pure by contract.
**
** Nothing here is global, so evaluators on a shared const IR may run in
** different threads.
*/
#include "reval_int.h"
#include "rfacts.h"

static unsigned scan_kind(const rasp_elem *v, size_t n) {
  /* elem_kind without branches */
  unsigned k = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t d = v[i].den;
    k |= (unsigned)(d == 1) * K_INT | (unsigned)(d == RASP_DEN_BOOL) * K_BOOL |
         (unsigned)(d > 1) * K_RAT | (unsigned)(d == RASP_DEN_SYM) * K_SYM;
  }
  return k;
}

/* Exact representation, not numeric equality: a function may well tell
** True from 1 (str(x), say), so they are different memo keys. */
static int same_elems(const rasp_elem *a, const rasp_elem *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i].num != b[i].num || a[i].den != b[i].den) return 0;
  return 1;
}

static void memo_free(memo *m) {
  if (!m) return;
  raspM_free(m->keys);
  raspM_free(m->vals);
  raspM_free(m->used);
  raspM_free(m);
}

static void memo_grow(memo *m) {
  size_t ncap = m->cap ? m->cap * 2 : 64;
  rasp_elem *nk = raspM_alloc(ncap * (size_t)m->nargs * sizeof *nk);
  rasp_elem *nv = raspM_alloc(ncap * sizeof *nv);
  unsigned char *nu = raspM_alloc(ncap);
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->used[i]) continue;
    const rasp_elem *k = m->keys + i * (size_t)m->nargs;
    size_t j = hash_elems(k, m->nargs) & (ncap - 1);
    while (nu[j]) j = (j + 1) & (ncap - 1);
    nu[j] = 1;
    memcpy(nk + j * (size_t)m->nargs, k, (size_t)m->nargs * sizeof *k);
    nv[j] = m->vals[i];
  }
  raspM_free(m->keys);
  raspM_free(m->vals);
  raspM_free(m->used);
  m->keys = nk;
  m->vals = nv;
  m->used = nu;
  m->cap = ncap;
}

/* Errors raised inside a callback may carry their own position (inside the
** called function); otherwise blame the node. */
static void blame(rasp_error *err, const rasp_ir_node *nd) {
  if (err && !err->pos.src) raspI_blame(err, nd);
}

int raspE_call_memo(rasp_eval *ev, int id, int nargs, const rasp_elem *args,
                     rasp_elem *out, rasp_error *err) {
  const rasp_ir_node *nd = &ev->ir->nodes[id];
  memo *m = ev->memos[id];
  if (!m) {
    m = ev->memos[id] = raspM_alloc(sizeof *m);
    m->nargs = nargs;
  }
  if (m->cap) {
    size_t j = hash_elems(args, nargs) & (m->cap - 1);
    while (m->used[j]) {
      if (same_elems(m->keys + j * (size_t)nargs, args, nargs)) {
        *out = m->vals[j];
        return 1;
      }
      j = (j + 1) & (m->cap - 1);
    }
  }
  if (!ev->ir->call) {
    raspI_seterr(err, nd, "no callback to run the function of '%s'",
              raspI_op_name(nd->op));
    return 0;
  }
  rasp_elem r;
  if (!ev->ir->call(ev->ir->user, nd->fn, nargs, args, &r, err)) {
    if (err && !err->set)
      raspI_seterr(err, nd, "call of a function failed");
    blame(err, nd);
    return 0;
  }
  if ((m->count + 1) * 2 > m->cap) memo_grow(m);
  size_t j = hash_elems(args, nargs) & (m->cap - 1);
  while (m->used[j]) j = (j + 1) & (m->cap - 1);
  m->used[j] = 1;
  memcpy(m->keys + j * (size_t)nargs, args, (size_t)nargs * sizeof *args);
  m->vals[j] = r;
  m->count++;
  *out = r;
  return 1;
}

static int elem_fail(const ctx *c) {
  blame(c->err, c->nd);
  return 0;
}

static void bnd_set(rasp_eval *ev, int id, int64_t lo, int64_t hi);

static int eval_INPUT(ctx *c) {
  /* the token range comes with the copy (node_fact reads it) */
  int64_t lo = c->total ? c->tokens[0] : 0, hi = lo;
  for (size_t i = 0; i < c->total; i++) {
    int64_t t = c->tokens[i];
    c->out[i].num = t;
    c->out[i].den = 1;
    lo = t < lo ? t : lo;
    hi = t > hi ? t : hi;
  }
  if (c->total) bnd_set(c->ev, c->id, lo, hi); /* the run's token range, as if scanned */
  c->kind = KIND_RULE;
  return 1;
}

static int eval_INDICES(ctx *c) {
  int n = c->ev->n;
  c->kind = KIND_RULE;
  if (c->ev->cfill[c->id] >= c->total) return 1;
  c->ev->cfill[c->id] = c->total;
  for (int b = 0; b < c->ev->B; b++)
    for (int i = 0; i < n; i++) {
      c->out[(size_t)b * n + i].num = i;
      c->out[(size_t)b * n + i].den = 1;
    }
  return 1;
}

static int eval_FULL(ctx *c) {
  c->kind = KIND_RULE;
  if (c->ev->cfill[c->id] >= c->total) return 1;
  for (size_t i = 0; i < c->total; i++) c->out[i] = c->nd->c;
  c->ev->cfill[c->id] = c->total;
  return 1;
}

static int eval_UNARY(ctx *c) {
  const rasp_elem *x = operand(c, 0);
  rasp_unop op = (rasp_unop)c->nd->aux;
  unsigned kx = operand_kind(c, 0);
  rasp_elem *o = c->out;
  size_t total = c->total;
  if ((INTLIKE(kx) && op == RASP_UN_NOT) || (kx == K_BOOL && op == RASP_UN_INVERT)) {
    /* not x; and ~ on booleans, which is numpy's logical not */
    for (size_t i = 0; i < total; i++) {
      o[i].num = x[i].num == 0;
      o[i].den = RASP_DEN_BOOL;
    }
    c->kind = KIND_RULE;
    return 1;
  }
  if (kx == K_INT) {
    int bad = 0;
    switch (op) {
    case RASP_UN_NEG:
      for (size_t i = 0; i < total; i++) {
        bad |= x[i].num == INT64_MIN;
        o[i].num = (int64_t)(0 - (uint64_t)x[i].num);
        o[i].den = 1;
      }
      break;
    case RASP_UN_POS:
      for (size_t i = 0; i < total; i++) o[i] = x[i];
      break;
    case RASP_UN_ABS:
      for (size_t i = 0; i < total; i++) {
        int64_t v = x[i].num;
        bad |= v == INT64_MIN;
        o[i].num = v < 0 ? (int64_t)(0 - (uint64_t)v) : v;
        o[i].den = 1;
      }
      break;
    case RASP_UN_INVERT:
      for (size_t i = 0; i < total; i++) {
        o[i].num = ~x[i].num;
        o[i].den = 1;
      }
      break;
    default: bad = 1; break;
    }
    if (!bad) {
      c->kind = KIND_RULE;
      return 1;
    }
  }
  for (size_t i = 0; i < total; i++) {
    if (!raspI_elem_unop(op, x[i], &o[i], c->err)) return elem_fail(c);
  }
  return 1;
}

/* Python's floor division and modulo on integers; 0 when b == 0 or the
** quotient overflows (the exact routine then reports). */
static int floordiv64(int64_t a, int64_t b, int64_t *q) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return 0;
  int64_t r = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) r--;
  *q = r;
  return 1;
}
static int mod64(int64_t a, int64_t b, int64_t *m) {
  if (b == 0) return 0;
  if (b == -1) {
    *m = 0;
    return 1;
  }
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  *m = r;
  return 1;
}


/* a / b for integers, as a normalised rational; 0 for b == 0 or overflow. */
static int div64(int64_t a, int64_t b, rasp_elem *o) {
  if (b == 0 || a == INT64_MIN || b == INT64_MIN) return 0;
  if (b < 0) {
    a = -a;
    b = -b;
  }
  uint64_t g = raspI_gcd_u64(a < 0 ? (uint64_t)-a : (uint64_t)a, (uint64_t)b);
  o->num = a / (int64_t)g;
  o->den = b / (int64_t)g;
  return 1;
}

/* Loops for int-like operands: no representation checks; errors (overflow,
** division by zero) are only flagged, and the node is then recomputed by
** the exact routine, which reports them. */
#define ARITH_LOOP(EXPR_BAD)                                                   \
  for (size_t i = 0; i < total; i++) {                                         \
    int64_t a = x[i].num, b = y[i].num, r = 0;                                 \
    bad |= EXPR_BAD;                                                           \
    o[i].num = r;                                                              \
    o[i].den = 1;                                                              \
  }

#define CMP_FAST(CMP)                                                          \
  for (size_t i = 0; i < total; i++) {                                         \
    o[i].num = (x[i].num CMP y[i].num);                                        \
    o[i].den = RASP_DEN_BOOL;                                                  \
  }

/* Int-like operands; the result's kinds are the rule's (KIND_RULE). */
static int binary_fast(ctx *c, const rasp_elem *x, const rasp_elem *y) {
  rasp_elem *o = c->out;
  size_t total = c->total;
  int bad = 0;
  switch ((rasp_binop)c->nd->aux) {
  case RASP_BIN_ADD: ARITH_LOOP(__builtin_add_overflow(a, b, &r)) break;
  case RASP_BIN_SUB: ARITH_LOOP(__builtin_sub_overflow(a, b, &r)) break;
  case RASP_BIN_MUL: ARITH_LOOP(__builtin_mul_overflow(a, b, &r)) break;
  case RASP_BIN_FLOORDIV: ARITH_LOOP(!floordiv64(a, b, &r)) break;
  case RASP_BIN_MOD: ARITH_LOOP(!mod64(a, b, &r)) break;
  case RASP_BIN_DIV:
    for (size_t i = 0; i < total; i++) bad |= !div64(x[i].num, y[i].num, &o[i]);
    if (bad) return 0;
    c->kind = KIND_SCAN;
    return 1;
  case RASP_BIN_EQ: CMP_FAST(==) c->kind = KIND_RULE; return 1;
  case RASP_BIN_NE: CMP_FAST(!=) c->kind = KIND_RULE; return 1;
  case RASP_BIN_LT: CMP_FAST(<) c->kind = KIND_RULE; return 1;
  case RASP_BIN_LE: CMP_FAST(<=) c->kind = KIND_RULE; return 1;
  case RASP_BIN_GT: CMP_FAST(>) c->kind = KIND_RULE; return 1;
  case RASP_BIN_GE: CMP_FAST(>=) c->kind = KIND_RULE; return 1;
  case RASP_BIN_AND:
    for (size_t i = 0; i < total; i++) {
      o[i].num = (x[i].num != 0) & (y[i].num != 0);
      o[i].den = RASP_DEN_BOOL;
    }
    c->kind = KIND_RULE;
    return 1;
  case RASP_BIN_OR:
    for (size_t i = 0; i < total; i++) {
      o[i].num = (x[i].num != 0) | (y[i].num != 0);
      o[i].den = RASP_DEN_BOOL;
    }
    c->kind = KIND_RULE;
    return 1;
  case RASP_BIN_BITAND:
  case RASP_BIN_BITOR:
  case RASP_BIN_BITXOR: {
    rasp_binop op = (rasp_binop)c->nd->aux;
    for (size_t i = 0; i < total; i++) {
      int64_t a = x[i].num, b = y[i].num;
      o[i].num = op == RASP_BIN_BITAND ? (a & b)
                 : op == RASP_BIN_BITOR ? (a | b)
                                        : (a ^ b);
      /* bool op bool stays a bool (-1 & -1); anything else is an int */
      o[i].den = x[i].den & y[i].den;
    }
    c->kind = KIND_RULE;
    return 1;
  }
  /* Python's min/max return the first argument on ties. */
  case RASP_BIN_MIN:
    for (size_t i = 0; i < total; i++) o[i] = y[i].num < x[i].num ? y[i] : x[i];
    c->kind = KIND_RULE;
    return 1;
  case RASP_BIN_MAX:
    for (size_t i = 0; i < total; i++) o[i] = y[i].num > x[i].num ? y[i] : x[i];
    c->kind = KIND_RULE;
    return 1;
  default: return 0;
  }
  if (bad) return 0;
  c->kind = KIND_RULE;
  return 1;
}

/* Numbers only (no symbols): cross-multiplication, no representation
** checks beyond mapping a boolean's den to 1. */
static inline int ncmp(rasp_elem a, rasp_elem b) {
  if ((a.den | b.den) == 1) return (a.num > b.num) - (a.num < b.num);
  i128 l = (i128)a.num * (b.den < 1 ? 1 : b.den);
  i128 r = (i128)b.num * (a.den < 1 ? 1 : a.den);
  return (l > r) - (l < r);
}

#define CMP_ANY(EXPR)                                                          \
  if (!((kx | ky) & K_SYM) && (INTLIKE(kx) || INTLIKE(ky)) &&                  \
      cmp_num_int(c, x, y, INTLIKE(ky)))                                       \
    return 1;                                                                  \
  if (!((kx | ky) & K_SYM)) {                                                  \
    for (size_t i = 0; i < c->total; i++) {                                    \
      int r_ = ncmp(x[i], y[i]);                                               \
      o[i].num = (EXPR);                                                       \
      o[i].den = RASP_DEN_BOOL;                                                \
    }                                                                          \
    c->kind = KIND_RULE;                                                       \
    return 1;                                                                  \
  }                                                                            \
  for (size_t i = 0; i < c->total; i++) {                                      \
    int r_ = raspI_elem_cmp(x[i], y[i]);                                       \
    o[i].num = (EXPR);                                                         \
    o[i].den = RASP_DEN_BOOL;                                                  \
  }                                                                            \
  c->kind = KIND_RULE;                                                         \
  return 1;

/* A number (rationals unreduced too) against an integer or boolean y:
** x.num against y.num * x.den in 64 bits, no branch per element; the common
** shape of `mean < 0` and `balance == 0`.  0 (nothing decided) when a
** product overflows; the caller then cross-multiplies in 128 bits. */
#define CMP_NI_LOOP(REL)                                                       \
  for (size_t i = 0; i < total; i++) {                                         \
    int64_t m_;                                                                \
    bad |= __builtin_mul_overflow(q[i].num, p[i].den < 1 ? 1 : p[i].den, &m_); \
    o[i].num = p[i].num REL m_;                                                \
    o[i].den = RASP_DEN_BOOL;                                                  \
  }                                                                            \
  break;
/* The six comparisons as switch cases, each running LOOP(relation). */
#define CMP_CASES(LOOP)                                                        \
  case RASP_BIN_EQ: LOOP(==)                                                   \
  case RASP_BIN_NE: LOOP(!=)                                                   \
  case RASP_BIN_LT: LOOP(<)                                                    \
  case RASP_BIN_LE: LOOP(<=)                                                   \
  case RASP_BIN_GT: LOOP(>)                                                    \
  case RASP_BIN_GE: LOOP(>=)
#define CMP_ZERO_LOOP(REL)                                                     \
  for (size_t i = 0; i < total; i++) {                                         \
    o[i].num = p[i].num REL 0;                                                 \
    o[i].den = RASP_DEN_BOOL;                                                  \
  }                                                                            \
  break;
static inline int rule_bounded(const rasp_eval *ev, int id);

static int cmp_num_int(ctx *c, const rasp_elem *x, const rasp_elem *y, int y_int) {
  const rasp_elem *p = y_int ? x : y, *q = y_int ? y : x;
  rasp_binop op = (rasp_binop)c->nd->aux;
  if (!y_int) /* q op p: swap the relation so p stays on the left */
    op = op == RASP_BIN_LT   ? RASP_BIN_GT
         : op == RASP_BIN_GT ? RASP_BIN_LT
         : op == RASP_BIN_LE ? RASP_BIN_GE
         : op == RASP_BIN_GE ? RASP_BIN_LE
                             : op;
  rasp_elem *o = c->out;
  size_t total = c->total;
  int bad = 0;
  int qid = c->nd->in[y_int ? 1 : 0];
  if (rule_bounded(c->ev, qid) && c->ev->rulef[qid].lo == 0 && c->ev->rulef[qid].hi == 0) {
    /* against zero (`balance < 0`): the sign of the numerator, den > 0 */
    switch (op) {
      CMP_CASES(CMP_ZERO_LOOP)
    default: return 0;
    }
    c->kind = KIND_RULE;
    return 1;
  }
  switch (op) {
    CMP_CASES(CMP_NI_LOOP)
  default: return 0;
  }
  if (bad) return 0;
  c->kind = KIND_RULE;
  return 1;
}

/* int + p/q and p/q + int need no reduction: gcd(a q + p, q) = gcd(p, q). */
static int add_int_rat(rasp_binop op, rasp_elem a, rasp_elem b, rasp_elem *o) {
  if (a.den == 1 && b.den > 1) {
    int64_t t, r;
    if (__builtin_mul_overflow(a.num, b.den, &t)) return 0;
    if (op == RASP_BIN_ADD ? __builtin_add_overflow(t, b.num, &r)
                           : __builtin_sub_overflow(t, b.num, &r))
      return 0;
    o->num = r;
    o->den = b.den;
    return 1;
  }
  if (b.den == 1 && a.den > 1) {
    int64_t t, r;
    if (__builtin_mul_overflow(b.num, a.den, &t)) return 0;
    if (op == RASP_BIN_ADD ? __builtin_add_overflow(a.num, t, &r)
                           : __builtin_sub_overflow(a.num, t, &r))
      return 0;
    o->num = r;
    o->den = a.den;
    return 1;
  }
  if (a.den == 1 && b.den == 1) {
    int64_t r;
    if (op == RASP_BIN_ADD ? __builtin_add_overflow(a.num, b.num, &r)
                           : __builtin_sub_overflow(a.num, b.num, &r))
      return 0;
    o->num = r;
    o->den = 1;
    return 1;
  }
  return 0;
}

/* An integer (or boolean) plus or minus a number, `key + i/n`: over the
** number's denominator, a*d +- p stays reduced (gcd(a d + p, d) = gcd(p, d)),
** so one branch-free loop; 0 (nothing decided) when a product overflows.
** form: 0 a + p, 1 a - p, 2 p - a. */
static inline __attribute__((always_inline)) int
add_num_int_loop(ctx *c, const rasp_elem *a, const rasp_elem *p, const int form) {
  rasp_elem *o = c->out;
  int bad = 0;
  int64_t dmin = INT64_MAX, dmax = 0;
  for (size_t i = 0; i < c->total; i++) {
    int64_t d = p[i].den < 1 ? 1 : p[i].den, t;
    bad |= __builtin_mul_overflow(a[i].num, d, &t);
    bad |= form == 0   ? __builtin_add_overflow(t, p[i].num, &o[i].num)
           : form == 1 ? __builtin_sub_overflow(t, p[i].num, &o[i].num)
                       : __builtin_sub_overflow(p[i].num, t, &o[i].num);
    o[i].den = d;
    dmin = d < dmin ? d : dmin;
    dmax = d > dmax ? d : dmax;
  }
  if (bad) return 0;
  c->kind = (dmin == 1 ? K_INT : 0) | (dmax > 1 ? K_RAT : 0);
  return 1;
}

static int add_num_int(ctx *c, const rasp_elem *x, const rasp_elem *y, int x_int) {
  if (c->nd->aux == RASP_BIN_ADD)
    return x_int ? add_num_int_loop(c, x, y, 0) : add_num_int_loop(c, y, x, 0);
  return x_int ? add_num_int_loop(c, x, y, 1) : add_num_int_loop(c, y, x, 2);
}

static int eval_BINARY(ctx *c) {
  const rasp_elem *x = operand(c, 0), *y = operand(c, 1);
  unsigned kx = operand_kind(c, 0), ky = operand_kind(c, 1);
  rasp_binop op = (rasp_binop)c->nd->aux;
  if (INTLIKE(kx) && INTLIKE(ky) && binary_fast(c, x, y)) return 1;
  c->kind = KIND_SCAN;
  rasp_elem *o = c->out;
  if ((op == RASP_BIN_LT || op == RASP_BIN_LE || op == RASP_BIN_GT || op == RASP_BIN_GE) &&
      ((kx | ky) & K_SYM))
    for (size_t i = 0; i < c->total; i++)
      if ((x[i].den == RASP_DEN_SYM && x[i].num == RASP_SYM_NONE) ||
          (y[i].den == RASP_DEN_SYM && y[i].num == RASP_SYM_NONE))
        return raspI_none_order(c->err, op), elem_fail(c);
  switch (op) {
  case RASP_BIN_EQ: CMP_ANY(r_ == 0)
  case RASP_BIN_NE: CMP_ANY(r_ != 0)
  case RASP_BIN_LT: CMP_ANY(r_ < 0)
  case RASP_BIN_LE: CMP_ANY(r_ <= 0)
  case RASP_BIN_GT: CMP_ANY(r_ > 0)
  case RASP_BIN_GE: CMP_ANY(r_ >= 0)
  default: break;
  }
  if ((op == RASP_BIN_ADD || op == RASP_BIN_SUB) && !((kx | ky) & K_SYM) &&
      (INTLIKE(kx) || INTLIKE(ky)) && add_num_int(c, x, y, INTLIKE(kx)))
    return 1;
  if (op == RASP_BIN_ADD || op == RASP_BIN_SUB) {
    for (size_t i = 0; i < c->total; i++)
      if (!add_int_rat(op, x[i], y[i], &o[i]) &&
          !raspI_elem_binop(op, x[i], y[i], &o[i], c->err))
        return elem_fail(c);
    return 1;
  }
  for (size_t i = 0; i < c->total; i++)
    if (!raspI_elem_binop(op, x[i], y[i], &o[i], c->err)) return elem_fail(c);
  return 1;
}

static int eval_WHERE(ctx *c) {
  const rasp_elem *k = operand(c, 0), *x = operand(c, 1), *y = operand(c, 2);
  rasp_elem *o = c->out;
  rasp_eval *ev = c->ev;
  int n = ev->n;
  if (ev->isstatic[c->nd->in[0]] && n > 0) {
    /* A condition that reads no token (a position mask: write_in_mask,
       idx == ans_start) is the same row for every input: copy the operand
       it mostly picks, then patch the positions where it picks the other. */
    int *flip = scratch(ev, SC_QT, ((size_t)n + 1) * sizeof *flip);
    int ntrue = 0;
    for (int i = 0; i < n; i++) ntrue += raspI_elem_truth(k[i]) != 0;
    int want = ntrue * 2 <= n ? 1 : 0; /* patch the minority */
    int nflip = 0;
    for (int i = 0; i < n; i++)
      if ((raspI_elem_truth(k[i]) != 0) == want) flip[nflip++] = i;
    const rasp_elem *base = want ? y : x, *patch = want ? x : y;
    for (int b = 0; b < ev->B; b++) {
      size_t off = (size_t)b * n;
      memcpy(o + off, base + off, (size_t)n * sizeof *o);
      for (int j = 0; j < nflip; j++) o[off + flip[j]] = patch[off + flip[j]];
    }
    c->kind = KIND_RULE;
    return 1;
  }
  if (INTLIKE(operand_kind(c, 0))) {
    /* branch-free: the condition is data and mispredicts */
    for (size_t i = 0; i < c->total; i++) {
      int64_t m = -(int64_t)(k[i].num != 0);
      o[i].num = (x[i].num & m) | (y[i].num & ~m);
      o[i].den = (x[i].den & m) | (y[i].den & ~m);
    }
  } else {
    for (size_t i = 0; i < c->total; i++)
      o[i] = raspI_elem_truth(k[i]) ? x[i] : y[i];
  }
  c->kind = KIND_RULE;
  return 1;
}

static int eval_MAP(ctx *c) {
  const rasp_elem *x = operand(c, 0);
  memo *m = c->ev->memos[c->id];
  int in = c->nd->in[0];
  const raspF_value *f = &c->ev->rulef[in];
  if (m && operand_kind(c, 0) == K_INT && rule_bounded(c->ev, in) && f->lo >= 0 &&
      f->hi < MEMO_SMALL) {
    /* integers whose every possible value is in the direct table already
       (token ids after the first inputs): one load per element */
    int all = 1;
    for (int64_t v = f->lo; v <= f->hi && all; v++) all = m->small_set[v];
    if (all) {
      for (size_t i = 0; i < c->total; i++) c->out[i] = m->small[x[i].num];
      c->kind = m->small_kind;
      return 1;
    }
  }
  m = NULL;
  int all_small = 1; /* then the table's kinds bound the result's */
  for (size_t i = 0; i < c->total; i++) {
    rasp_elem e = x[i];
    if (e.den == 1 && (uint64_t)e.num < MEMO_SMALL) {
      if (!m) m = c->ev->memos[c->id]; /* made by the first call_memo */
      if (m && m->small_set[e.num]) {
        c->out[i] = m->small[e.num];
        continue;
      }
      if (!raspE_call_memo(c->ev, c->id, 1, &x[i], &c->out[i], c->err)) return 0;
      m = c->ev->memos[c->id];
      m->small[e.num] = c->out[i];
      m->small_set[e.num] = 1;
      m->small_kind |= elem_kind(c->out[i]);
      continue;
    }
    all_small = 0;
    if (!raspE_call_memo(c->ev, c->id, 1, &x[i], &c->out[i], c->err)) return 0;
  }
  if (all_small && m) c->kind = m->small_kind;
  return 1;
}

static int eval_SEQMAP(ctx *c) {
  const rasp_elem *x = operand(c, 0), *y = operand(c, 1);
  for (size_t i = 0; i < c->total; i++) {
    rasp_elem args[2] = {x[i], y[i]}, r;
    if (!raspE_call_memo(c->ev, c->id, 2, args, &r, c->err)) return 0;
    c->out[i] = elem_trunc(r);
  }
  return 1;
}

/* Selectors have no value of their own; the head that uses one decides how
** to evaluate it. */
static int eval_SELECT(ctx *c) { (void)c; return 1; }
static int eval_SEL_AND(ctx *c) { (void)c; return 1; }
static int eval_SEL_OR(ctx *c) { (void)c; return 1; }
static int eval_SEL_NOT(ctx *c) { (void)c; return 1; }

/* Bounds that a scan found in this run (bndrun), or found for a held static
** value that is still complete: its values have not changed since. */
static inline int bnd_current(const rasp_eval *ev, int id) {
  return ev->bndrun[id] == ev->runno ||
         (ev->bndheld[id] && ev->cfill[ev->plan.canon[id]] >= (size_t)ev->B * (size_t)ev->n);
}

/* The rule bounds of an int-like node (rulef, valid once the node has run
** in this run or is held): a bound on its num, not the whole range. */
static inline int rule_bounded(const rasp_eval *ev, int id) {
  return INTLIKE(ev->kind[id]) && raspF_bounded(ev->rulef[id]);
}

static void bnd_set(rasp_eval *ev, int id, int64_t lo, int64_t hi) {
  ev->bndlo[id] = lo;
  ev->bndhi[id] = hi;
  ev->bndrun[id] = ev->runno;
}

void raspE_node_bounds(rasp_eval *ev, int id, int64_t *lo, int64_t *hi) {
  if (ev->bndrun[id] != ev->runno) { /* not scanned in this run (the input is) */
    if (rule_bounded(ev, id)) { /* the rule's, without looking */
      *lo = ev->rulef[id].lo;
      *hi = ev->rulef[id].hi;
      return;
    }
  }
  if (!bnd_current(ev, id)) {
    const rasp_elem *v = ev->val[id];
    size_t total = (size_t)ev->B * ev->n;
    int64_t a = total ? v[0].num : 0, b = a;
    for (size_t i = 1; i < total; i++) {
      int64_t x = v[i].num;
      a = x < a ? x : a;
      b = x > b ? x : b;
    }
    bnd_set(ev, id, a, b);
    ev->bndheld[id] = ev->plan.hold[id] && ev->cfill[id] >= total; /* valid as long as it is */
  }
  *lo = ev->bndlo[id];
  *hi = ev->bndhi[id];
}

/* Node id's kinds and bounds in this run, after its handler: the rule of
** rfacts (raspF_transfer) on the operands' kinds of this run, their rule
** bounds and the run's token range, met with the plan's static fact, and
** then with what the handler saw (seen: K_* bits, KIND_SCAN or KIND_RULE).
** The rule is the only place that knows what an operation does to kinds and
** ranges; a scan only narrows it, and only where it leaves several kinds.
** So most heads never scan their keys (raspE_node_bounds answers with the
** rule's bounds, and scans only where they are the whole range), and
** int-like loops are chosen from the same rules as the static fact.
**
** The token range the rules see (ev->tok) is the hull of the runs' ranges
** since the plan was made, not the run's own: after a few runs it is the
** vocabulary's and stops changing.  A run repeats the last one's rules
** unless an operand's fact changed since it was made (frun: the run in which
** an operand's last did; rrun: the run that made the rule; all of them after
** the graph or the length changed): the rule facts (rulef) read no value, so
** the same operand facts give the same fact, and a batch of one input per
** run pays a few loads per node.  Scanned
** bounds (raspE_node_bounds, and the input's own range) go to bndlo/bndhi
** for the kernels only, never into rulef, so what a rule saw is always a
** rule's result, valid for every run of the plan. */
static inline __attribute__((always_inline)) void
node_fact(rasp_eval *ev, int id, unsigned seen, const rasp_elem *out, size_t total) {
  const rasp_ir_node *nd = &ev->ir->nodes[id];
  unsigned run = ev->runno;
  unsigned k = ev->rulef[id].kind;
  unsigned since = ev->rrun[id]; /* its rule was made then */
  if (ev->fany > since || ev->fforce > since) { /* maybe not the rule it made */
    int dirty = ev->fforce > since;
    for (int j = 0; j < nd->nin && !dirty; j++) dirty = ev->frun[nd->in[j]] > since;
    ev->rrun[id] = run;
    if (dirty) {
      raspF_value in[3];
      for (int j = 0; j < nd->nin; j++) {
        int o = nd->in[j];
        in[j] = ev->rulef[o];
        in[j].kind = ev->kind[o];
      }
      raspF_value f = raspF_meet(raspF_transfer(ev->ir, id, ev->tok, in), ev->plan.vf[id]);
      raspF_value old = ev->rulef[id];
      if (f.kind != old.kind || f.lo != old.lo || f.hi != old.hi) {
        ev->rulef[id] = f;
        ev->frun[id] = ev->fany = run;
      }
      k = f.kind;
    }
  }
  if (nd->op == RASP_OP_INPUT && ev->bndrun[id] == run &&
      (ev->bndlo[id] < ev->tok.lo || ev->bndhi[id] > ev->tok.hi)) {
    /* eval_INPUT's range widens the range of the tokens seen since the
       plan was made: the vocabulary's after a few runs, and from then on
       the rules give what they gave */
    ev->tok.lo = ev->bndlo[id] < ev->tok.lo ? ev->bndlo[id] : ev->tok.lo;
    ev->tok.hi = ev->bndhi[id] > ev->tok.hi ? ev->bndhi[id] : ev->tok.hi;
    raspF_value none[3] = {{0, INT64_MAX, INT64_MIN}}; /* no operands */
    ev->rulef[id] = raspF_meet(raspF_transfer(ev->ir, id, ev->tok, none), ev->plan.vf[id]);
    ev->frun[id] = ev->fany = run;
    k = ev->rulef[id].kind;
  }
  if (seen != KIND_RULE) {
    if (seen != KIND_SCAN) k &= seen;
    else if (k & (k - 1)) k &= scan_kind(out, total);
  }
  if (__builtin_expect(!total, 0)) k = 0;
  if (k != ev->kind[id]) {
    ev->kind[id] = (unsigned char)k;
    ev->frun[id] = ev->fany = run;
  }
}

static int eval_SEL_WIDTH(ctx *c) { return raspE_eval_head(c); }
static int eval_AGGR_MEAN(ctx *c) { return raspE_eval_head(c); }
static int eval_AGGREGATE(ctx *c) { return raspE_eval_head(c); }
static int eval_AGGR_MAX(ctx *c) { return raspE_eval_head(c); }
static int eval_AGGR_MIN(ctx *c) { return raspE_eval_head(c); }

/* One handler per operation; an operation added to rprim.h without an
** eval_NAME here is an undeclared identifier, i.e. a compile error. */
typedef int (*eval_fn)(ctx *c);
static const eval_fn handlers[] = {
#define X(name, text, comp, arity) [RASP_OP_##name] = eval_##name,
    RASP_OPS(X)
#undef X
};
_Static_assert(sizeof handlers / sizeof *handlers == RASP_OP__COUNT,
               "every operation needs an evaluator");

/* ---- the evaluator */

rasp_eval *raspE_new(const rasp_ir *ir) {
  rasp_eval *ev = raspM_alloc(sizeof *ev);
  ev->ir = ir;
  ev->max_cells = RASP_DEFAULT_MAX_SELECTOR_CELLS;
  ev->keep = 1;
  const char *ref = getenv("RASP_EVAL_REFERENCE");
  ev->reference = ref && strcmp(ref, "1") == 0;
  const char *chk = getenv("RASP_EVAL_CHECK_VALUES");
  ev->check_values = chk && strcmp(chk, "1") == 0;
  return ev;
}

void raspE_pool_put(rasp_eval *ev, rasp_elem *buf, size_t cap) {
  if (!buf) return;
  RASP_GROW(ev->pool.buf, ev->pool.size, ev->pool.n + 1);
  ev->pool.cap = raspM_realloc(ev->pool.cap, (size_t)ev->pool.size * sizeof *ev->pool.cap);
  ev->pool.buf[ev->pool.n] = buf;
  ev->pool.cap[ev->pool.n] = cap;
  ev->pool.n++;
}

static void free_buffers(rasp_eval *ev) {
  for (int i = 0; i < ev->nnodes; i++) {
    if (ev->plan.canon[i] == i) raspM_free(ev->val[i]);
    ev->val[i] = NULL;
    ev->valcap[i] = 0;
    ev->cfill[i] = 0;
    raspM_free(ev->selm[i]);
    ev->selm[i] = NULL;
    ev->selb[i] = -1;
  }
  for (int i = 0; i < ev->pool.n; i++) raspM_free(ev->pool.buf[i]);
  ev->pool.n = 0;
  ev->ran = 0;
}

void raspE_free(rasp_eval *ev) {
  if (!ev) return;
  free_buffers(ev);
  for (int i = 0; i < ev->nnodes; i++) memo_free(ev->memos[i]);
  raspM_free(ev->val);
  raspM_free(ev->valcap);
  raspM_free(ev->cfill);
  raspM_free(ev->isstatic);
  raspM_free(ev->checked);
  raspM_free(ev->plan.canon);
  raspM_free(ev->plan.raw);
  raspM_free(ev->issel);
  raspM_free(ev->plan.hold);
  raspM_free(ev->bndheld);
  raspM_free(ev->plan.steps);
  raspM_free(ev->plan.dsteps);
  raspM_free(ev->plan.twin);
  raspM_free(ev->plan.vf);
  raspM_free(ev->plan.hplans);
  raspM_free(ev->hits);
  raspM_free(ev->early);
  raspM_free(ev->bndlo);
  raspM_free(ev->bndhi);
  raspM_free(ev->bndrun);
  raspM_free(ev->frun);
  raspM_free(ev->rrun);
  raspM_free(ev->rulef);
  raspM_free(ev->scr.dacc);
  raspM_free(ev->plan.outputs);
  raspM_free(ev->kind);
  raspM_free(ev->memos);
  raspM_free(ev->selm);
  raspM_free(ev->selb);
  raspM_free(ev->plan.live);
  raspM_free(ev->plan.lastuse);
  raspM_free(ev->plan.relstart);
  raspM_free(ev->plan.rel);
  raspM_free(ev->pool.buf);
  raspM_free(ev->pool.cap);
  for (int i = 0; i < SC__COUNT; i++) raspM_free(ev->scr.sc[i]);
  raspM_free(ev->scr.dtab);
  raspM_free(ev);
}

void raspE_set_reference(rasp_eval *ev, int on) {
  ev->reference = on != 0;
  ev->ran = 0;
  ev->plan.valid = 0;
}

void raspE_set_check_values(rasp_eval *ev, int on) { ev->check_values = on != 0; }

void raspE_set_max_selector_cells(rasp_eval *ev, size_t cells) {
  ev->max_cells = cells;
}

void raspE_set_keep_intermediates(rasp_eval *ev, int keep) {
  ev->keep = keep != 0;
  ev->ran = 0;
  ev->plan.valid = 0;
}

/* Whether the liveness and release plan of the last run still hold. */
static int plan_current(const rasp_eval *ev, size_t total) {
  const rasp_ir *ir = ev->ir;
  if (!ev->plan.valid || ev->plan.nnodes != ir->nnodes || ev->plan.n != ir->n || ev->plan.noutputs != ir->noutputs ||
      ev->plan.keep != ev->keep || (!ev->keep && ev->plan.total != total))
    return 0;
  return ir->noutputs == 0 ||
         memcmp(ev->plan.outputs, ir->outputs, sizeof(int) * (size_t)ir->noutputs) == 0;
}

static void plan_remember(rasp_eval *ev, size_t total) {
  const rasp_ir *ir = ev->ir;
  ev->plan.outputs = raspM_realloc(ev->plan.outputs, sizeof(int) * (size_t)(ir->noutputs + 1));
  if (ir->noutputs) memcpy(ev->plan.outputs, ir->outputs, sizeof(int) * (size_t)ir->noutputs);
  ev->plan.nnodes = ir->nnodes;
  ev->plan.n = ir->n;
  ev->plan.noutputs = ir->noutputs;
  ev->plan.keep = ev->keep;
  ev->plan.total = total;
  ev->plan.valid = 1;
}

/* The IR may have grown since the evaluator was made (the REPL traces more
** into the same graph), so the per-node arrays follow it. */

static void fit_nodes(rasp_eval *ev) {
  int nn = ev->ir->nnodes;
  if (nn <= ev->nnodes) return;
  ev->val = raspM_realloc(ev->val, (size_t)nn * sizeof *ev->val);
  ev->valcap = raspM_realloc(ev->valcap, (size_t)nn * sizeof *ev->valcap);
  ev->cfill = raspM_realloc(ev->cfill, (size_t)nn * sizeof *ev->cfill);
  ev->isstatic = raspM_realloc(ev->isstatic, (size_t)nn);
  ev->issel = raspM_realloc(ev->issel, (size_t)nn);
  ev->plan.hold = raspM_realloc(ev->plan.hold, (size_t)nn);
  ev->bndheld = raspM_realloc(ev->bndheld, (size_t)nn);
  ev->plan.steps = raspM_realloc(ev->plan.steps, (size_t)nn * sizeof *ev->plan.steps);
  ev->plan.dsteps = raspM_realloc(ev->plan.dsteps, (size_t)nn * sizeof *ev->plan.dsteps);
  ev->plan.twin = raspM_realloc(ev->plan.twin, (size_t)nn * sizeof *ev->plan.twin);
  ev->plan.vf = raspM_realloc(ev->plan.vf, (size_t)nn * sizeof *ev->plan.vf);
  ev->plan.hplans = raspM_realloc(ev->plan.hplans, (size_t)nn * sizeof *ev->plan.hplans);
  ev->hits = raspM_realloc(ev->hits, (size_t)nn * RASPE_NKERNELS * sizeof *ev->hits);
  memset(ev->hits + (size_t)ev->nnodes * RASPE_NKERNELS, 0,
         (size_t)(nn - ev->nnodes) * RASPE_NKERNELS * sizeof *ev->hits);
  ev->early = raspM_realloc(ev->early, (size_t)nn * sizeof *ev->early);
  ev->plan.dsteps_ok = 0;
  ev->checked = raspM_realloc(ev->checked, (size_t)nn);
  ev->plan.canon = raspM_realloc(ev->plan.canon, (size_t)nn * sizeof *ev->plan.canon);
  ev->plan.raw = raspM_realloc(ev->plan.raw, (size_t)nn);
  ev->bndlo = raspM_realloc(ev->bndlo, (size_t)nn * sizeof *ev->bndlo);
  ev->bndhi = raspM_realloc(ev->bndhi, (size_t)nn * sizeof *ev->bndhi);
  ev->bndrun = raspM_realloc(ev->bndrun, (size_t)nn * sizeof *ev->bndrun);
  ev->frun = raspM_realloc(ev->frun, (size_t)nn * sizeof *ev->frun);
  ev->rrun = raspM_realloc(ev->rrun, (size_t)nn * sizeof *ev->rrun);
  ev->rulef = raspM_realloc(ev->rulef, (size_t)nn * sizeof *ev->rulef);
  ev->kind = raspM_realloc(ev->kind, (size_t)nn);
  ev->memos = raspM_realloc(ev->memos, (size_t)nn * sizeof *ev->memos);
  ev->selm = raspM_realloc(ev->selm, (size_t)nn * sizeof *ev->selm);
  ev->selb = raspM_realloc(ev->selb, (size_t)nn * sizeof *ev->selb);
  ev->plan.live = raspM_realloc(ev->plan.live, (size_t)nn);
  ev->plan.lastuse = raspM_realloc(ev->plan.lastuse, (size_t)nn * sizeof *ev->plan.lastuse);
  ev->plan.relstart = raspM_realloc(ev->plan.relstart, ((size_t)nn + 1) * sizeof *ev->plan.relstart);
  ev->plan.rel = raspM_realloc(ev->plan.rel, (size_t)nn * sizeof *ev->plan.rel);
  for (int i = ev->nnodes; i < nn; i++) {
    ev->val[i] = NULL;
    ev->valcap[i] = 0;
    ev->cfill[i] = 0;
    ev->kind[i] = 0;
    ev->memos[i] = NULL;
    ev->selm[i] = NULL;
    ev->selb[i] = -1;
    ev->bndrun[i] = 0;
    ev->frun[i] = ev->rrun[i] = 0;
    ev->rulef[i] = (raspF_value){0, INT64_MAX, INT64_MIN};
    ev->checked[i] = 0;
    ev->plan.canon[i] = i;
    ev->plan.raw[i] = 0;
    ev->plan.hold[i] = 0;
    ev->bndheld[i] = 0;
    ev->plan.twin[i] = -1;
    ev->early[i] = 0;
    ev->issel[i] = (unsigned char)raspE_is_selector(ev->ir, i);
  }
  /* A node that reads no token (indices, constants, and everything computed
     from them alone: position masks, x[i] windows) has the same value for
     every input of the length, so a run can keep it. */
  raspF_static(ev->ir, ev->nnodes, ev->isstatic);
  ev->nnodes = nn;
}

/* The operation table, local: raspE_run consults it for every node. */
static const unsigned char op_comp[] = {
#define RASP_OP_COMP(name, text, comp, arity) RASP_COMP_##comp,
    RASP_OPS(RASP_OP_COMP)
#undef RASP_OP_COMP
};
static const unsigned char op_arity[] = {
#define RASP_OP_ARITY(name, text, comp, arity) arity,
    RASP_OPS(RASP_OP_ARITY)
#undef RASP_OP_ARITY
};

static int op_is_sel(rasp_op op) {
  return (unsigned)op < RASP_OP__COUNT && op_comp[op] == RASP_COMP_SELECTOR;
}

static int valid_node(const rasp_ir *ir, int id, rasp_error *err) {
  const rasp_ir_node *nd = &ir->nodes[id];
  if ((unsigned)nd->op >= RASP_OP__COUNT) {
    raspI_seterr(err, nd, "internal error: bad operation %d", (int)nd->op);
    return 0;
  }
  if (nd->nin != op_arity[nd->op]) {
    raspI_seterr(err, nd, "internal error: '%s' with %d operands",
              raspI_op_name(nd->op), nd->nin);
    return 0;
  }
  rasp_component comp = (rasp_component)op_comp[nd->op];
  for (int j = 0; j < nd->nin; j++) {
    int in = nd->in[j];
    if (in < 0 || in >= id) {
      raspI_seterr(err, nd, "internal error: bad operand %d", in);
      return 0;
    }
    int insel = op_is_sel(ir->nodes[in].op);
    /* Selectors feed exactly: select takes values, combinators and heads'
       first operand take selectors. */
    int wantsel = (comp == RASP_COMP_SELECTOR && nd->op != RASP_OP_SELECT) ||
                  (comp == RASP_COMP_ATTN && j == 0);
    if (insel != wantsel) {
      raspI_seterr(err, nd, "internal error: operand %d of '%s' is %sa "
                "selector", j + 1, raspI_op_name(nd->op), insel ? "" : "not ");
      return 0;
    }
  }
  return 1;
}

int raspE_is_selector(const rasp_ir *ir, int id) {
  return op_is_sel(ir->nodes[id].op);
}

static rasp_elem rat_reduce(rasp_elem e) {
  uint64_t a = e.num < 0 ? (uint64_t)0 - (uint64_t)e.num : (uint64_t)e.num;
  uint64_t g = raspI_gcd_u64(a, (uint64_t)e.den);
  if (g > 1) {
    e.num = e.num < 0 ? -(int64_t)(a / g) : (int64_t)(a / g);
    e.den = (int64_t)((uint64_t)e.den / g);
  }
  return e;
}

static rasp_elem *node_buffer(rasp_eval *ev, int id, size_t total) {
  size_t need = total ? total : 1;
  if (ev->val[id] && ev->valcap[id] >= need) return ev->val[id];
  if (ev->val[id]) {
    raspM_free(ev->val[id]);
    ev->val[id] = NULL;
  }
  /* best fit from the pool */
  int best = -1;
  for (int i = 0; i < ev->pool.n; i++)
    if (ev->pool.cap[i] >= need && (best < 0 || ev->pool.cap[i] < ev->pool.cap[best]))
      best = i;
  if (best >= 0) {
    ev->val[id] = ev->pool.buf[best];
    ev->valcap[id] = ev->pool.cap[best];
    ev->cfill[id] = 0;
    ev->pool.n--;
    ev->pool.buf[best] = ev->pool.buf[ev->pool.n];
    ev->pool.cap[best] = ev->pool.cap[ev->pool.n];
    return ev->val[id];
  }
  ev->val[id] = raspM_alloc(need * sizeof(rasp_elem));
  ev->valcap[id] = need;
  ev->cfill[id] = 0;
  return ev->val[id];
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* RASP_EVAL_CHECK_VALUES=1: every value this run still holds lies within
** its node's static fact (raspF_values for tokens in this run's range), and
** its kinds within the run-time kind bits the fast paths trusted, and no
** two positions of one input share a value that its node's distinct-values
** fact (raspF_distincts) excludes.  A value
** outside is a bug in a transfer function or in the evaluator: an internal
** error naming the node, the value and the fact. */
static int check_values(rasp_eval *ev, const int64_t *tokens, size_t total, rasp_error *err) {
  const rasp_ir *ir = ev->ir;
  raspF_value tok = {K_INT, INT64_MAX, INT64_MIN};
  for (size_t i = 0; i < total; i++) {
    tok.lo = tokens[i] < tok.lo ? tokens[i] : tok.lo;
    tok.hi = tokens[i] > tok.hi ? tokens[i] : tok.hi;
  }
  raspF_value *vf = raspM_alloc(sizeof *vf * (size_t)(ir->nnodes + 1));
  raspF_values(ir, tok, vf);
  int ok = 1;
  for (int id = 0; id < ir->nnodes && ok; id++) {
    /* an alias's own pointer may outlive its canonical node's buffer
       (keep == 0); the canonical one is NULL once handed back */
    const rasp_elem *v = ev->val[ev->plan.canon[id]];
    if (!ev->plan.live[id] || ev->issel[id] || !v) continue;
    for (size_t i = 0; i < total && ok; i++) {
      unsigned k = elem_kind(v[i]);
      if (raspF_holds(vf[id], v[i]) && (ev->kind[id] & k)) continue;
      char buf[64];
      rasp_elem e = v[i].den > 1 ? rat_reduce(v[i]) : v[i];
      raspI_elem_format(ir, e, buf, sizeof buf);
      raspI_seterr(err, &ir->nodes[id],
                "internal error: %s of node %d ('%s') outside its value fact "
                "(kinds %u, [%lld, %lld]; run kinds %u)",
                buf, id, raspI_op_name(ir->nodes[id].op), vf[id].kind, (long long)vf[id].lo,
                (long long)vf[id].hi, (unsigned)ev->kind[id]);
      ok = 0;
    }
  }
  /* and every distinct-values claim (raspF_distincts): within one input,
  ** no two positions share a value outside the claim's exceptions */
  raspF_distinct *dist = raspM_alloc(sizeof *dist * (size_t)(ir->nnodes + 1));
  raspF_distincts(ir, vf, dist);
  int64_t *seen = raspM_alloc(sizeof *seen * (size_t)(ir->n + 1));
  size_t nb = ir->n > 0 ? total / (size_t)ir->n : 0;
  for (int id = 0; id < ir->nnodes && ok; id++) {
    const rasp_elem *v = ev->val[ev->plan.canon[id]];
    if (!ev->plan.live[id] || ev->issel[id] || !v || !dist[id].holds) continue;
    for (size_t b = 0; b < nb && ok; b++) {
      size_t m = 0;
      for (int i = 0; i < ir->n; i++) {
        rasp_elem e = v[b * (size_t)ir->n + (size_t)i];
        if (!raspF_distinct_may_repeat(dist[id], e.num)) seen[m++] = e.num;
      }
      qsort(seen, m, sizeof *seen, cmp_i64);
      for (size_t i = 1; i < m && ok; i++)
        if (seen[i] == seen[i - 1]) {
          raspI_seterr(err, &ir->nodes[id],
                    "internal error: %lld held twice by node %d ('%s'), whose values its "
                    "distinct-values fact says differ outside [%lld, %lld]",
                    (long long)seen[i], id, raspI_op_name(ir->nodes[id].op),
                    (long long)dist[id].lo, (long long)dist[id].hi);
          ok = 0;
        }
    }
  }
  /* and the symbols rule (raspF_symbolic): where a node it calls token ids
  ** holds a positive integer (a value that would print as a symbol), that
  ** is one of its input's tokens or a positive integer constant of the
  ** program (where() may choose one, d['j']); an aggregate's default that
  ** is no id (-99, 0) prints as a number anyway */
  unsigned char *sym = raspM_alloc((size_t)ir->nnodes + 1);
  raspF_symbolic(ir, sym);
  for (int id = 0; id < ir->nnodes && ok; id++) {
    const rasp_elem *v = ev->val[ev->plan.canon[id]];
    if (!ev->plan.live[id] || ev->issel[id] || !v || !sym[id]) continue;
    for (size_t b = 0; b < nb && ok; b++)
      for (int i = 0; i < ir->n && ok; i++) {
        rasp_elem e = v[b * (size_t)ir->n + (size_t)i];
        int found = e.den != 1 || e.num <= 0;
        for (int j = 0; j < ir->n && !found; j++)
          found = e.num == tokens[b * (size_t)ir->n + (size_t)j];
        for (int j = 0; j < ir->nnodes && !found; j++)
          found = ir->nodes[j].op == RASP_OP_FULL && ir->nodes[j].c.den == 1 &&
                  ir->nodes[j].c.num == e.num;
        for (int j = 0; j < ir->nnodes && !found; j++)
          found = ir->nodes[j].op == RASP_OP_FULL && e.den == 1 && ir->nodes[j].c.den == 1 &&
                  e.num > 0 && ir->nodes[j].c.num == e.num;
        if (found) continue;
        char buf[64];
        raspI_elem_format(ir, e, buf, sizeof buf);
        raspI_seterr(err, &ir->nodes[id],
                  "internal error: %s of node %d ('%s') is not a token of its input, though "
                  "the symbols rule says it prints as one", buf, id,
                  raspI_op_name(ir->nodes[id].op));
        ok = 0;
      }
  }
  raspM_free(sym);
  raspM_free(seen);
  raspM_free(dist);
  raspM_free(vf);
  return ok;
}

/* raspE_run in four steps: run_begin (the run's number and what a new
** batch or length invalidates), run_plan (the plan, built again when the
** graph, the length or the batch outgrew it), run_buffers (values handed
** back to the pool, or dropped with nodes that left the graph), then
** run_step for every step of the plan. */

/* The start of a run of B inputs: 0 with err for a bad size. */
static int run_begin(rasp_eval *ev, int B, rasp_error *err) {
  const rasp_ir *ir = ev->ir;
  fit_nodes(ev);
  ev->ran = 0;
  if (ev->selb_dirty) {
    for (int i = 0; i < ev->nnodes; i++) ev->selb[i] = -1;
    ev->selb_dirty = 0;
  }
  if (B < 0 || ir->n < 0) {
    raspR_setnopos(err, "bad batch size %d or length %d", B, ir->n);
    return 0;
  }
  if (ev->n != ir->n) { /* kept values are for one length */
    for (int i = 0; i < ev->nnodes; i++) ev->cfill[i] = 0;
    ev->plan.dsteps_ok = 0;
  }
  ev->B = B;
  ev->n = ir->n;
  if (++ev->runno == 0) { /* wrapped: no bounds or twin results may look current */
    for (int i = 0; i < ev->nnodes; i++)
      ev->bndrun[i] = ev->early[i] = ev->frun[i] = ev->rrun[i] = 0;
    ev->runno = 1;
    ev->fforce = 1; /* every rule again */
    ev->fany = 0;
  }
  return 1;
}

/* The plan for total = B n values per node, made again unless current
** (*replan says which): the live nodes in order, each validated once, then
** the planner's passes.  0 with err for an invalid node. */
static int run_plan(rasp_eval *ev, size_t total, int *replan, rasp_error *err) {
  const rasp_ir *ir = ev->ir;
  *replan = !plan_current(ev, total);
  if (!*replan) return 1;
  ev->plan.valid = 0;
  ev->plan.dsteps_ok = 0;
  raspI_live(ir, ir->outputs, ir->noutputs, ev->plan.live);
  if (ev->vf_nnodes != ir->nnodes || ev->vf_n != ir->n) { /* a new graph or length */
    raspF_value anytok = {K_INT, INT64_MIN, INT64_MAX};
    raspF_values(ir, anytok, ev->plan.vf);
    ev->vf_nnodes = ir->nnodes;
    ev->vf_n = ir->n;
    ev->fforce = ev->runno; /* every rule again */
    ev->tok = (raspF_value){K_INT, INT64_MAX, INT64_MIN};
  }
  ev->plan.nsteps = 0;
  for (int id = 0; id < ir->nnodes; id++) {
    if (!ev->plan.live[id]) continue;
    if (!ev->checked[id]) { /* nodes never change: validated once */
      if (!valid_node(ir, id, err)) return 0;
      ev->checked[id] = 1;
    }
    ev->plan.steps[ev->plan.nsteps++] = id;
  }
  raspE_plan_canon(ev);
  raspE_plan_raw(ev);
  raspE_plan_hold(ev, total);
  raspE_plan_twins(ev);
  raspE_plan_heads(ev);
  return 1;
}

/* Node i's value buffer back to the pool (a shared one stays with its
** canonical node). */
static void drop_value(rasp_eval *ev, int i) {
  if (ev->plan.canon[i] == i) raspE_pool_put(ev, ev->val[i], ev->valcap[i]);
  ev->val[i] = NULL;
  ev->valcap[i] = 0;
  ev->cfill[i] = 0;
}

/* The buffers before the steps: without keep, every one back to the pool
** but the static values this run holds (values are handed out again in
** order); with keep, those of nodes that left the graph. */
static void run_buffers(rasp_eval *ev, size_t total, int replan) {
  if (replan && ev->keep) plan_remember(ev, total);
  if (!ev->keep) {
    for (int i = 0; i < ev->nnodes; i++) {
      if (ev->plan.live[i] && ev->plan.hold[i]) continue;
      drop_value(ev, i);
    }
    if (replan) {
      raspE_plan_release(ev);
      plan_remember(ev, total);
    }
  } else if (replan) { /* values of nodes that left the graph */
    for (int i = 0; i < ev->nnodes; i++)
      if (!ev->plan.live[i] && ev->val[i]) drop_value(ev, i);
  }
}

/* A node with the same value as an earlier one (canon) shares it: the
** buffer, the kind, the rule facts and the bounds where still current. */
static void share_canon(rasp_eval *ev, int id, int canon) {
  ev->val[id] = ev->val[canon];
  ev->valcap[id] = 0;
  ev->kind[id] = ev->kind[canon];
  ev->rulef[id] = ev->rulef[canon];
  ev->frun[id] = ev->frun[canon]; /* changed in this run only with it: fany is set */
  ev->bndlo[id] = ev->bndlo[canon];
  ev->bndhi[id] = ev->bndhi[canon];
  ev->bndrun[id] = bnd_current(ev, canon) ? ev->runno : 0;
  ev->bndheld[id] = ev->bndheld[canon] && bnd_current(ev, canon); /* copies still valid */
}

/* Node id computed by its handler (c: the run's context, reused across
** steps), its twin aggregate first where it has one: 0 with err set. */
static int run_compute(rasp_eval *ev, ctx *c, int id, int hold) {
  const rasp_ir *ir = ev->ir;
  const rasp_ir_node *nd = &ir->nodes[id];
  size_t total = c->total;
  if (raspM_exhausted) { /* --max-memory, --timeout */
    raspI_seterr(c->err, nd, "%s", raspM_over_budget());
    return 0;
  }
  c->id = id;
  c->nd = nd;
  c->kind = KIND_SCAN;
  c->out = NULL;
  if (!ev->issel[id]) c->out = node_buffer(ev, id, total);
  int done = ev->early[id] == ev->runno; /* its twin evaluated it */
  int tw = ev->plan.twin[id];
  if (!done && tw >= 0) { /* the twin aggregate now, with this width */
    ctx ca = {ev, tw, &ir->nodes[tw], c->tokens, total, node_buffer(ev, tw, total), c->err,
              KIND_SCAN, c->out, 0};
    if (!handlers[ir->nodes[tw].op](&ca)) return 0;
    node_fact(ev, tw, ca.kind, ca.out, total);
    ev->early[tw] = ev->runno;
    if (ca.fused) { /* the direct sweep counted for this width too */
      ev->hits[(size_t)id * RASPE_NKERNELS + RASPE_K_DIRECT] += (uint64_t)ev->B;
      done = 1;
      c->kind = KIND_RULE;
    }
  }
  if (done) c->kind = ev->early[id] == ev->runno ? ev->kind[id] : c->kind;
  else if (!handlers[nd->op](c)) return 0;
  if (hold) ev->cfill[id] = total;
  if (ev->issel[id]) {
    ev->kind[id] = 0;
  } else {
    node_fact(ev, id, c->kind, c->out, total);
    ev->bndheld[id] = 0; /* a scan of earlier values says nothing */
  }
  return 1;
}

/* One step of the plan: node id shared, kept from an earlier run or
** computed; then, without keep, the values whose last reader it was go
** back to the pool.  0 with err set. */
static int run_step(rasp_eval *ev, ctx *c, int id) {
  int hold = ev->plan.hold[id];
  int canon = ev->plan.canon[id];
  if (canon != id) {
    share_canon(ev, id, canon);
  } else if (hold && ev->val[id] && ev->cfill[id] >= c->total) {
    /* computed by an earlier run (and not in dsteps any more): its kind
       is still in ev->kind, its bounds (bndheld) still hold */
  } else if (!run_compute(ev, c, id, hold)) {
    return 0;
  }
  if (!ev->keep)
    for (int r = ev->plan.relstart[id]; r < ev->plan.relstart[id + 1]; r++) {
      int d = ev->plan.rel[r];
      raspE_pool_put(ev, ev->val[d], ev->valcap[d]);
      ev->val[d] = NULL;
      ev->valcap[d] = 0;
      ev->cfill[d] = 0;
    }
  return 1;
}

int raspE_run(rasp_eval *ev, int B, const int64_t *tokens, rasp_error *err) {
  if (!run_begin(ev, B, err)) return 0;
  size_t total = (size_t)B * (size_t)ev->ir->n;
  int replan;
  if (!run_plan(ev, total, &replan, err)) return 0;
  run_buffers(ev, total, replan);
  ctx c = {ev, 0, NULL, tokens, total, NULL, err, KIND_SCAN, NULL, 0};
  /* dsteps: the steps that still do something once the static values are
     kept (see plan_dsteps) */
  if (ev->plan.dsteps_ok && total > ev->plan.dsteps_total) ev->plan.dsteps_ok = 0;
  const int *steps = ev->plan.dsteps_ok ? ev->plan.dsteps : ev->plan.steps;
  int nsteps = ev->plan.dsteps_ok ? ev->plan.ndsteps : ev->plan.nsteps;
  for (int s = 0; s < nsteps; s++)
    if (!run_step(ev, &c, steps[s])) return 0;
  if (!ev->plan.dsteps_ok) raspE_plan_dsteps(ev, total);
  if (ev->check_values && !check_values(ev, tokens, total, err)) return 0;
  ev->ran = 1;
  return 1;
}

const rasp_elem *raspE_value(rasp_eval *ev, int node, int b) {
  if (!ev->ran || node < 0 || node >= ev->nnodes || b < 0 || b >= ev->B ||
      !ev->plan.live[node] || !ev->val[node] ||
      raspE_is_selector(ev->ir, node))
    return NULL;
  if (!ev->keep) { /* only outputs, though kept static values are there too */
    int out = 0;
    for (int i = 0; i < ev->ir->noutputs && !out; i++) out = ev->ir->outputs[i] == node;
    if (!out) return NULL;
  }
  rasp_elem *row = ev->val[node] + (size_t)b * ev->n;
  if (ev->plan.raw[node])
    for (int i = 0; i < ev->n; i++)
      if (row[i].den > 1) row[i] = rat_reduce(row[i]);
  return row;
}

/* The premise of an assumed move on input b: one value at the selected
** keys (one_key 0) or at most one selected key (one_key 1) per query. */
static int selects_one(rasp_eval *ev, int agg, int b, int one_key, int *query, rasp_error *err) {
  if (agg < 0 || agg >= ev->nnodes ||
      (ev->ir->nodes[agg].op != RASP_OP_AGGREGATE && ev->ir->nodes[agg].op != RASP_OP_AGGR_MEAN)) {
    raspR_setnopos(err, "node %d is not an aggregate", agg);
    return -1;
  }
  const rasp_ir_node *nd = &ev->ir->nodes[agg];
  const unsigned char *sel = raspE_selector(ev, nd->in[0], b, err);
  if (!sel) return -1;
  const rasp_elem *v = raspE_value(ev, nd->in[1], b);
  if (!v) {
    raspI_seterr(err, nd, "no value for the aggregate's values (not kept)");
    return -1;
  }
  int n = ev->n;
  for (int q = 0; q < n; q++)
    for (int k = 0, first = -1; k < n; k++) {
      if (!sel[(size_t)q * n + k]) continue;
      if (first < 0) first = k;
      else if (one_key || v[k].num != v[first].num || v[k].den != v[first].den) {
        if (query) *query = q;
        return 0;
      }
    }
  return 1;
}

/* raspE_symbolic: an assumed move counts where this run's selected values
** were equal. */
typedef struct sym_run {
  rasp_eval *ev;
  int b;
} sym_run;

static int run_holds(void *user, int agg) {
  sym_run *s = user;
  rasp_error err = {0};
  return raspE_selects_one_value(s->ev, agg, s->b, NULL, &err) == 1;
}

int raspE_symbolic(rasp_eval *ev, int node, int b) {
  const rasp_ir *ir = ev->ir;
  if (node < 0 || node >= ir->nnodes) return 0;
  unsigned char *sym = raspM_alloc((size_t)ir->nnodes);
  sym_run s = {ev, b};
  raspF_symbolic_run(ir, run_holds, &s, sym);
  int r = sym[node];
  raspM_free(sym);
  return r;
}

int raspE_selects_one_value(rasp_eval *ev, int agg, int b, int *query, rasp_error *err) {
  return selects_one(ev, agg, b, 0, query, err);
}

int raspE_moves_hold(rasp_eval *ev, const unsigned char *flag, int b, int *agg, int *query,
                     rasp_error *err) {
  for (int id = 0; id < ev->nnodes; id++) {
    if (!flag[id] || !ev->plan.live[id]) continue;
    int r = selects_one(ev, id, b, flag[id] == RASPE_ONE_KEY, query, err);
    if (r <= 0) {
      if (!r && agg) *agg = id;
      return r;
    }
  }
  return 1;
}

uint64_t raspE_kernel_hits(const rasp_eval *ev, int node, int k) {
  if (node < 0 || node >= ev->nnodes || k < 0 || k >= RASPE_NKERNELS) return 0;
  return ev->hits[(size_t)node * RASPE_NKERNELS + k];
}

int raspE_shared_with(const rasp_eval *ev, int node) {
  if (!ev->ran || node < 0 || node >= ev->nnodes || !ev->plan.live[node]) return -1;
  return ev->plan.canon[node];
}

const unsigned char *raspE_selector(rasp_eval *ev, int node, int b,
                                    rasp_error *err) {
  if (!ev->ran || node < 0 || node >= ev->nnodes || b < 0 || b >= ev->B) {
    raspR_setnopos(err, "no value for node %d of input %d", node, b);
    return NULL;
  }
  const rasp_ir_node *nd = &ev->ir->nodes[node];
  if (raspI_op_component(nd->op) != RASP_COMP_SELECTOR) {
    raspI_seterr(err, nd, "'%s' is not a selector", raspI_op_name(nd->op));
    return NULL;
  }
  if (!ev->plan.live[node]) {
    raspI_seterr(err, nd, "selector was not part of the evaluated program");
    return NULL;
  }
  if (ev->selm[node] && ev->selb[node] == b) return ev->selm[node];
  if (!raspE_cells_ok(ev, nd, err)) return NULL;
  size_t nn = (size_t)ev->n * ev->n;
  unsigned char *m = ev->selm[node];
  raspM_free(m);
  m = raspM_alloc(nn + 1);
  ev->selm[node] = m;
  ev->selb[node] = -1;
  if (!raspE_build_matrix(ev, node, b, m, 0, err)) return NULL;
  ev->selb[node] = b;
  ev->selb_dirty = 1;
  return m;
}
