/*
** reval.c -- the vectorised evaluator.
**
** Design.  A traced program is a DAG whose nodes are whole-sequence
** operations, so the natural unit of work is "one node over the whole batch":
** each node's value is one B x n array of rasp_elem, filled by a tight loop.
** The interpreter's per-element overhead (dispatch, operand lookup) is paid
** once per node instead of once per element, and the inner loops have a
** fast path for plain integers that avoids the general rational code.
** Every value is kept until the next run because counterexample reports and
** the REPL want to show intermediates, and the memory is only B*n per node.
**
** Attention is where the cost lies.  A selector is never stored as a value:
** the head that consumes it (sel_width or an aggregate) looks at how the
** selector was made and picks an algorithm that does not build the n x n
** matrix when the predicate has structure:
**   - equality: a hash join.  Keys are grouped by value with running
**     statistics (count, exact sum, max, min); a query reads its group in
**     O(1).  Causal selects sweep positions in order, inserting key p before
**     answering query p, which gives exactly the keys k <= q.
**   - not_equals (non-causal), lt/leq/gt/geq (non-causal): keys are sorted
**     once and prefix/suffix statistics are built; a query's selected set is
**     a prefix, a suffix, or (for not_equals) a prefix plus a suffix of the
**     sorted keys, found by binary search.  O(n log n).
**   - not_equals, causal: running totals minus the running statistics of the
**     query's group; max/min cannot be subtracted, so heads that need them
**     fall back to the matrix.
**   - always/never: one running or global statistic.
**   - everything else (custom predicates, causal comparisons, and/or/not
**     combinations): a byte matrix per input, capped by max_selector_cells.
** All paths reduce to the same statistic record and the same finishing
** function, which is what keeps them in exact agreement (the tests compare
** the fast paths against a custom-predicate matrix on random inputs).
**
** Callbacks into the interpreter (maps, custom predicates) are memoised per
** node in hash tables owned by the evaluator, so a map over a vocabulary of
** ten tokens costs ten calls whatever the batch size.  The tables live as
** long as the evaluator: the program's functions are pure by contract.
**
** Nothing here is global, so evaluators on a shared const IR may run in
** different threads.
*/
#include "reval.h"

#include <stdlib.h>
#include <string.h>

#include "rmem.h"

typedef __int128 i128;

/* ---- memo tables for callbacks */

typedef struct memo {
  int nargs;
  size_t cap, count; /* cap is a power of two, or 0 */
  rasp_elem *keys;   /* cap * nargs */
  rasp_elem *vals;
  unsigned char *used;
} memo;

struct rasp_eval {
  const rasp_ir *ir;
  size_t max_cells;
  int B, n, nnodes; /* nnodes: size of the per-node arrays */
  int ran;          /* a run has succeeded and values are valid */
  unsigned char *live;
  rasp_elem **val;      /* per node: B*n elements, NULL for selectors */
  memo **memos;         /* per node, created on first use */
  unsigned char **selm; /* raspE_selector cache per node */
  int *selb;            /* which input selm[node] holds */
};

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

static uint64_t hash_elems(const rasp_elem *a, int n) {
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (int i = 0; i < n; i++)
    h = mix64(h ^ (uint64_t)a[i].num) + (uint64_t)a[i].den * 0x2545f4914f6cdd1dULL;
  return mix64(h);
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
  if (err && !err->pos.src) raspR_locate(err, nd->pos);
}

static int call_memo(rasp_eval *ev, int id, int nargs, const rasp_elem *args,
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
    raspR_set(err, nd->pos, "no callback to run the function of '%s'",
              raspI_op_name(nd->op));
    return 0;
  }
  rasp_elem r;
  if (!ev->ir->call(ev->ir->user, nd->fn, nargs, args, &r, err)) {
    if (err && !err->set)
      raspR_set(err, nd->pos, "call of a function failed");
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

/* ---- element-wise nodes */

typedef struct ctx {
  rasp_eval *ev;
  int id;
  const rasp_ir_node *nd;
  const int64_t *tokens;
  size_t total; /* B*n */
  rasp_elem *out;
  rasp_error *err;
} ctx;

static const rasp_elem *operand(const ctx *c, int j) {
  return c->ev->val[c->nd->in[j]];
}

static int elem_fail(const ctx *c) {
  blame(c->err, c->nd);
  return 0;
}

static int eval_INPUT(ctx *c) {
  for (size_t i = 0; i < c->total; i++) {
    c->out[i].num = c->tokens[i];
    c->out[i].den = 1;
  }
  return 1;
}

static int eval_INDICES(ctx *c) {
  int n = c->ev->n;
  for (int b = 0; b < c->ev->B; b++)
    for (int i = 0; i < n; i++) {
      c->out[(size_t)b * n + i].num = i;
      c->out[(size_t)b * n + i].den = 1;
    }
  return 1;
}

static int eval_FULL(ctx *c) {
  for (size_t i = 0; i < c->total; i++) c->out[i] = c->nd->c;
  return 1;
}

static int eval_UNARY(ctx *c) {
  const rasp_elem *x = operand(c, 0);
  rasp_unop op = (rasp_unop)c->nd->aux;
  for (size_t i = 0; i < c->total; i++) {
    if (op == RASP_UN_NEG && x[i].den == 1 && x[i].num != INT64_MIN) {
      c->out[i].num = -x[i].num;
      c->out[i].den = 1;
    } else if (!raspI_elem_unop(op, x[i], &c->out[i], c->err)) {
      return elem_fail(c);
    }
  }
  return 1;
}

/* The integer fast path: one switch per node, then a loop that handles
** plain integers inline and hands anything else to the exact routine. */
#define INT_LOOP(EXPR_OK)                                                      \
  for (size_t i = 0; i < c->total; i++) {                                      \
    rasp_elem a = x[i], b = y[i];                                              \
    if (a.den == 1 && b.den == 1) {                                            \
      int64_t r;                                                               \
      if (EXPR_OK) {                                                           \
        c->out[i].num = r;                                                     \
        c->out[i].den = 1;                                                     \
        continue;                                                              \
      }                                                                        \
    }                                                                          \
    if (!raspI_elem_binop(op, a, b, &c->out[i], c->err)) return elem_fail(c);  \
  }

#define CMP_LOOP(CMP)                                                          \
  for (size_t i = 0; i < c->total; i++) {                                      \
    rasp_elem a = x[i], b = y[i];                                              \
    if (a.den == 1 && b.den == 1) {                                            \
      c->out[i].num = (a.num CMP b.num);                                       \
      c->out[i].den = RASP_DEN_BOOL;                                           \
    } else if (!raspI_elem_binop(op, a, b, &c->out[i], c->err)) {              \
      return elem_fail(c);                                                     \
    }                                                                          \
  }

static int eval_BINARY(ctx *c) {
  const rasp_elem *x = operand(c, 0), *y = operand(c, 1);
  rasp_binop op = (rasp_binop)c->nd->aux;
  switch (op) {
  case RASP_BIN_ADD: INT_LOOP(!__builtin_add_overflow(a.num, b.num, &r)) break;
  case RASP_BIN_SUB: INT_LOOP(!__builtin_sub_overflow(a.num, b.num, &r)) break;
  case RASP_BIN_MUL: INT_LOOP(!__builtin_mul_overflow(a.num, b.num, &r)) break;
  case RASP_BIN_EQ: CMP_LOOP(==) break;
  case RASP_BIN_NE: CMP_LOOP(!=) break;
  case RASP_BIN_LT: CMP_LOOP(<) break;
  case RASP_BIN_LE: CMP_LOOP(<=) break;
  case RASP_BIN_GT: CMP_LOOP(>) break;
  case RASP_BIN_GE: CMP_LOOP(>=) break;
  default:
    for (size_t i = 0; i < c->total; i++)
      if (!raspI_elem_binop(op, x[i], y[i], &c->out[i], c->err))
        return elem_fail(c);
    break;
  }
  return 1;
}

static int eval_WHERE(ctx *c) {
  const rasp_elem *k = operand(c, 0), *x = operand(c, 1), *y = operand(c, 2);
  for (size_t i = 0; i < c->total; i++)
    c->out[i] = raspI_elem_truth(k[i]) ? x[i] : y[i];
  return 1;
}

static int eval_MAP(ctx *c) {
  const rasp_elem *x = operand(c, 0);
  for (size_t i = 0; i < c->total; i++)
    if (!call_memo(c->ev, c->id, 1, &x[i], &c->out[i], c->err)) return 0;
  return 1;
}

static int eval_SEQMAP(ctx *c) {
  const rasp_elem *x = operand(c, 0), *y = operand(c, 1);
  for (size_t i = 0; i < c->total; i++) {
    rasp_elem args[2] = {x[i], y[i]}, r;
    if (!call_memo(c->ev, c->id, 2, args, &r, c->err)) return 0;
    c->out[i] = raspI_elem_trunc(r);
  }
  return 1;
}

/* Selectors have no value of their own; the head that uses one decides how
** to evaluate it. */
static int eval_SELECT(ctx *c) { (void)c; return 1; }
static int eval_SEL_AND(ctx *c) { (void)c; return 1; }
static int eval_SEL_OR(ctx *c) { (void)c; return 1; }
static int eval_SEL_NOT(ctx *c) { (void)c; return 1; }

/* ---- statistics of a selected set */

/* Which parts of the statistics a head needs: computing an exact sum that a
** max never uses could only raise a spurious overflow. */
#define NEED_SUM 1u
#define NEED_EXT 2u /* max and min */

typedef struct rsum {
  i128 num, den; /* den >= 1 */
} rsum;

typedef struct rstat {
  int64_t count, nsym, nbool;
  rsum sum;
  rasp_elem max, min; /* valid when count > 0 and NEED_EXT */
} rstat;

static const rstat empty_stat = {0, 0, 0, {0, 1}, {0, 0}, {0, 0}};

static i128 gcd128(i128 a, i128 b) {
  if (a < 0) a = -a;
  while (b) {
    i128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* a += sign * b, exactly; 0 on overflow. */
static int rsum_addsub(rsum *a, i128 bn, i128 bd, int sign) {
  if (a->den == 1 && bd == 1) {
    return sign > 0 ? !__builtin_add_overflow(a->num, bn, &a->num)
                    : !__builtin_sub_overflow(a->num, bn, &a->num);
  }
  i128 l, r, s, d;
  if (__builtin_mul_overflow(a->num, bd, &l) ||
      __builtin_mul_overflow(bn, a->den, &r) ||
      __builtin_mul_overflow(a->den, bd, &d))
    return 0;
  if (sign > 0 ? __builtin_add_overflow(l, r, &s)
               : __builtin_sub_overflow(l, r, &s))
    return 0;
  i128 g = gcd128(s, d);
  if (g > 1) {
    s /= g;
    d /= g;
  }
  /* Denominators beyond 64 bits mean the mean cannot be represented
     either, and bounding them keeps den * count within 128 bits. */
  if (d > INT64_MAX) return 0;
  a->num = s;
  a->den = d;
  return 1;
}

static int stat_add(rstat *s, rasp_elem v, unsigned need) {
  s->count++;
  if (v.den == RASP_DEN_SYM) {
    s->nsym++;
  } else {
    if (v.den == RASP_DEN_BOOL) s->nbool++;
    if ((need & NEED_SUM) && v.num &&
        !rsum_addsub(&s->sum, v.num, v.den < 0 ? 1 : v.den, 1))
      return 0;
  }
  if (need & NEED_EXT) {
    if (s->count == 1) {
      s->max = s->min = v;
    } else {
      /* Strict comparisons keep the first of equal elements, as a scan in
         key order would. */
      if (raspI_elem_cmp(v, s->max) > 0) s->max = v;
      if (raspI_elem_cmp(v, s->min) < 0) s->min = v;
    }
  }
  return 1;
}

/* a = a + b (disjoint sets). */
static int stat_merge(rstat *a, const rstat *b, unsigned need) {
  if (!b->count) return 1;
  if ((need & NEED_SUM) && !rsum_addsub(&a->sum, b->sum.num, b->sum.den, 1))
    return 0;
  if (need & NEED_EXT) {
    if (!a->count) {
      a->max = b->max;
      a->min = b->min;
    } else {
      if (raspI_elem_cmp(b->max, a->max) > 0) a->max = b->max;
      if (raspI_elem_cmp(b->min, a->min) < 0) a->min = b->min;
    }
  }
  a->count += b->count;
  a->nsym += b->nsym;
  a->nbool += b->nbool;
  return 1;
}

/* a - b for b a subset of a; only count and sum are meaningful after. */
static int stat_sub(rstat *out, const rstat *a, const rstat *b, unsigned need) {
  *out = *a;
  out->count -= b->count;
  out->nsym -= b->nsym;
  out->nbool -= b->nbool;
  if ((need & NEED_SUM) && !rsum_addsub(&out->sum, b->sum.num, b->sum.den, -1))
    return 0;
  return 1;
}

static unsigned head_needs(rasp_op op) {
  switch (op) {
  case RASP_OP_AGGR_MEAN: return NEED_SUM;
  case RASP_OP_AGGREGATE: return NEED_SUM | NEED_EXT;
  case RASP_OP_AGGR_MAX:
  case RASP_OP_AGGR_MIN: return NEED_EXT;
  default: return 0;
  }
}

static int overflow_at(const rasp_ir_node *nd, rasp_error *err) {
  raspR_set(err, nd->pos, "integer overflow (value does not fit in 64 bits)");
  return 0;
}

static int fits64(i128 v) { return v >= INT64_MIN && v <= INT64_MAX; }

/* Turns the statistics of one query's selected set into the head's output. */
static int finish(const rasp_ir_node *nd, const rstat *s, rasp_elem *out,
                  rasp_error *err) {
  switch (nd->op) {
  case RASP_OP_SEL_WIDTH:
    out->num = s->count;
    out->den = 1;
    return 1;
  case RASP_OP_AGGR_MEAN: {
    if (!s->count) {
      *out = raspI_elem_trunc(nd->c);
      return 1;
    }
    i128 q = s->sum.num / (s->sum.den * s->count); /* truncates toward 0 */
    if (!fits64(q)) return overflow_at(nd, err);
    out->num = (int64_t)q;
    out->den = 1;
    return 1;
  }
  case RASP_OP_AGGREGATE: {
    if (!s->count) {
      *out = nd->c;
      return 1;
    }
    if (s->nsym) {
      if (s->nsym == s->count && s->max.den == RASP_DEN_SYM &&
          s->min.den == RASP_DEN_SYM && s->max.num == s->min.num) {
        *out = s->max;
        return 1;
      }
      raspR_set(err, nd->pos, "mean of symbols (the selected values differ)");
      return 0;
    }
    if (s->nbool == s->count) {
      if (s->sum.num == 0) {
        out->num = 0;
        out->den = RASP_DEN_BOOL;
        return 1;
      }
      if (s->sum.den == 1 && s->sum.num == s->count) {
        out->num = 1;
        out->den = RASP_DEN_BOOL;
        return 1;
      }
    }
    i128 num = s->sum.num, den = s->sum.den * s->count;
    i128 g = gcd128(num, den);
    if (g > 1) {
      num /= g;
      den /= g;
    }
    if (!fits64(num) || !fits64(den)) return overflow_at(nd, err);
    out->num = (int64_t)num;
    out->den = (int64_t)den;
    return 1;
  }
  case RASP_OP_AGGR_MAX:
    *out = s->count ? s->max : nd->c;
    return 1;
  case RASP_OP_AGGR_MIN:
    *out = s->count ? s->min : nd->c;
    return 1;
  default: break;
  }
  raspR_set(err, nd->pos, "internal error: '%s' is not a head",
            raspI_op_name(nd->op));
  return 0;
}

/* ---- materialised selectors */

static int cells_ok(rasp_eval *ev, const rasp_ir_node *sel, rasp_error *err) {
  size_t n = (size_t)ev->n;
  if (n && n > ev->max_cells / n) {
    raspR_set(err, sel->pos,
              "selector of %d x %d exceeds the limit of %zu cells", ev->n,
              ev->n, ev->max_cells);
    return 0;
  }
  return 1;
}

static int pred_holds(rasp_eval *ev, int id, rasp_pred p, rasp_elem key,
                      rasp_elem query, int *res, rasp_error *err) {
  switch (p) {
  case RASP_PRED_EQ: *res = raspI_elem_eq(key, query); return 1;
  case RASP_PRED_NE: *res = !raspI_elem_eq(key, query); return 1;
  case RASP_PRED_LT: *res = raspI_elem_cmp(key, query) < 0; return 1;
  case RASP_PRED_LE: *res = raspI_elem_cmp(key, query) <= 0; return 1;
  case RASP_PRED_GT: *res = raspI_elem_cmp(key, query) > 0; return 1;
  case RASP_PRED_GE: *res = raspI_elem_cmp(key, query) >= 0; return 1;
  case RASP_PRED_TRUE: *res = 1; return 1;
  case RASP_PRED_FALSE: *res = 0; return 1;
  case RASP_PRED_CUSTOM: {
    rasp_elem args[2] = {key, query}, r;
    if (!call_memo(ev, id, 2, args, &r, err)) return 0;
    *res = raspI_elem_truth(r);
    return 1;
  }
  default: break;
  }
  raspR_set(err, ev->ir->nodes[id].pos, "unknown predicate %d", (int)p);
  return 0;
}

/* Fills m (n*n, row q, column k) with selector id for input b. */
static int build_matrix(rasp_eval *ev, int id, int b, unsigned char *m,
                        rasp_error *err) {
  const rasp_ir_node *nd = &ev->ir->nodes[id];
  int n = ev->n;
  size_t nn = (size_t)n * n;
  switch (nd->op) {
  case RASP_OP_SELECT: {
    const rasp_elem *keys = ev->val[nd->in[0]] + (size_t)b * n;
    const rasp_elem *qs = ev->val[nd->in[1]] + (size_t)b * n;
    int causal = (nd->flags & RASP_CAUSAL) != 0;
    for (int q = 0; q < n; q++)
      for (int k = 0; k < n; k++) {
        int r = 0;
        if (!causal || k <= q)
          if (!pred_holds(ev, id, (rasp_pred)nd->aux, keys[k], qs[q], &r, err))
            return 0;
        m[(size_t)q * n + k] = (unsigned char)r;
      }
    return 1;
  }
  case RASP_OP_SEL_NOT:
    if (!build_matrix(ev, nd->in[0], b, m, err)) return 0;
    for (size_t i = 0; i < nn; i++) m[i] = !m[i];
    return 1;
  case RASP_OP_SEL_AND:
  case RASP_OP_SEL_OR: {
    if (!build_matrix(ev, nd->in[0], b, m, err)) return 0;
    unsigned char *t = raspM_alloc(nn ? nn : 1);
    int ok = build_matrix(ev, nd->in[1], b, t, err);
    if (ok) {
      if (nd->op == RASP_OP_SEL_AND)
        for (size_t i = 0; i < nn; i++) m[i] &= t[i];
      else
        for (size_t i = 0; i < nn; i++) m[i] |= t[i];
    }
    raspM_free(t);
    return ok;
  }
  default: break;
  }
  raspR_set(err, nd->pos, "'%s' is not a selector", raspI_op_name(nd->op));
  return 0;
}

/* ---- heads */

typedef struct head {
  rasp_eval *ev;
  const rasp_ir_node *nd;  /* the head */
  const rasp_ir_node *sel; /* its selector */
  unsigned need;
  int n;
  rasp_error *err;
} head;

static int head_matrix(head *h, int b, unsigned char *m, const rasp_elem *vals,
                       rasp_elem *out) {
  int n = h->n;
  if (!build_matrix(h->ev, h->nd->in[0], b, m, h->err)) return 0;
  for (int q = 0; q < n; q++) {
    rstat s = empty_stat;
    const unsigned char *row = m + (size_t)q * n;
    if (!vals) {
      for (int k = 0; k < n; k++) s.count += row[k];
    } else {
      for (int k = 0; k < n; k++)
        if (row[k] && !stat_add(&s, vals[k], h->need))
          return overflow_at(h->nd, h->err);
    }
    if (!finish(h->nd, &s, &out[q], h->err)) return 0;
  }
  return 1;
}

/* Hash join for equality; keys are grouped by numeric value (True == 1). */
typedef struct groups {
  int *slot;       /* cap entries: group index or -1 */
  size_t cap;
  rasp_elem *key;  /* per group */
  rstat *stat;     /* per group */
  int ngroups;
} groups;

static rasp_elem eq_key(rasp_elem e) {
  if (e.den == RASP_DEN_BOOL) e.den = 1;
  return e;
}

static void groups_init(groups *g, int n) {
  g->cap = 16;
  while (g->cap < (size_t)n * 2) g->cap *= 2;
  g->slot = raspM_alloc(g->cap * sizeof *g->slot);
  g->key = raspM_alloc(((size_t)n + 1) * sizeof *g->key);
  g->stat = raspM_alloc(((size_t)n + 1) * sizeof *g->stat);
}

static void groups_reset(groups *g) {
  memset(g->slot, 0xff, g->cap * sizeof *g->slot);
  g->ngroups = 0;
}

static void groups_free(groups *g) {
  raspM_free(g->slot);
  raspM_free(g->key);
  raspM_free(g->stat);
}

/* Group of e, or -1; with insert, creates it. */
static int groups_find(groups *g, rasp_elem e, int insert) {
  e = eq_key(e);
  size_t j = hash_elems(&e, 1) & (g->cap - 1);
  while (g->slot[j] >= 0) {
    rasp_elem k = g->key[g->slot[j]];
    if (k.num == e.num && k.den == e.den) return g->slot[j];
    j = (j + 1) & (g->cap - 1);
  }
  if (!insert) return -1;
  int gi = g->ngroups++;
  g->slot[j] = gi;
  g->key[gi] = e;
  g->stat[gi] = empty_stat;
  return gi;
}

static int head_eq(head *h, groups *g, const rasp_elem *keys,
                   const rasp_elem *qs, const rasp_elem *vals, rasp_elem *out) {
  int n = h->n, causal = (h->sel->flags & RASP_CAUSAL) != 0;
  int ne = h->sel->aux == RASP_PRED_NE; /* causal only, count/sum heads */
  rstat total = empty_stat;
  rasp_elem one = {1, 1};
  groups_reset(g);
  if (causal) {
    for (int p = 0; p < n; p++) {
      int gi = groups_find(g, keys[p], 1);
      rasp_elem v = vals ? vals[p] : one;
      if (!stat_add(&g->stat[gi], v, h->need) ||
          (ne && !stat_add(&total, v, h->need)))
        return overflow_at(h->nd, h->err);
      int gq = groups_find(g, qs[p], 0);
      rstat s;
      if (ne) {
        if (!stat_sub(&s, &total, gq >= 0 ? &g->stat[gq] : &empty_stat,
                      h->need))
          return overflow_at(h->nd, h->err);
      } else {
        s = gq >= 0 ? g->stat[gq] : empty_stat;
      }
      if (!finish(h->nd, &s, &out[p], h->err)) return 0;
    }
    return 1;
  }
  for (int k = 0; k < n; k++) {
    int gi = groups_find(g, keys[k], 1);
    if (!stat_add(&g->stat[gi], vals ? vals[k] : one, h->need))
      return overflow_at(h->nd, h->err);
  }
  for (int q = 0; q < n; q++) {
    int gq = groups_find(g, qs[q], 0);
    if (!finish(h->nd, gq >= 0 ? &g->stat[gq] : &empty_stat, &out[q], h->err))
      return 0;
  }
  return 1;
}

/* Sorted keys with prefix and suffix statistics, for non-causal
** comparisons and not_equals. */
typedef struct keyix {
  rasp_elem key;
  int idx;
} keyix;

static int keyix_cmp(const void *a, const void *b) {
  const keyix *x = a, *y = b;
  int c = raspI_elem_cmp(x->key, y->key);
  if (c) return c;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

typedef struct sorted {
  keyix *ks;
  rstat *pre, *suf; /* n+1 each: pre[i] = first i keys, suf[i] = keys i.. */
} sorted;

/* First i with ks[i].key >= q (strict = 0) or > q (strict = 1). */
static int bound(const keyix *ks, int n, rasp_elem q, int strict) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    int c = raspI_elem_cmp(ks[mid].key, q);
    if (c < 0 || (strict && c == 0))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int head_sorted(head *h, sorted *st, const rasp_elem *keys,
                       const rasp_elem *qs, const rasp_elem *vals,
                       rasp_elem *out) {
  int n = h->n;
  rasp_elem one = {1, 1};
  for (int k = 0; k < n; k++) {
    st->ks[k].key = keys[k];
    st->ks[k].idx = k;
  }
  /* Sorting by (key, index) makes the scan order, and so which of two
     equal-comparing elements max/min keep, deterministic. */
  qsort(st->ks, (size_t)n, sizeof *st->ks, keyix_cmp);
  st->pre[0] = empty_stat;
  for (int i = 0; i < n; i++) {
    st->pre[i + 1] = st->pre[i];
    rasp_elem v = vals ? vals[st->ks[i].idx] : one;
    if (!stat_add(&st->pre[i + 1], v, h->need))
      return overflow_at(h->nd, h->err);
  }
  st->suf[n] = empty_stat;
  for (int i = n - 1; i >= 0; i--) {
    st->suf[i] = st->suf[i + 1];
    rasp_elem v = vals ? vals[st->ks[i].idx] : one;
    if (!stat_add(&st->suf[i], v, h->need)) return overflow_at(h->nd, h->err);
  }
  for (int q = 0; q < n; q++) {
    int lo = bound(st->ks, n, qs[q], 0), hi = bound(st->ks, n, qs[q], 1);
    rstat s;
    switch ((rasp_pred)h->sel->aux) {
    case RASP_PRED_LT: s = st->pre[lo]; break;   /* key < query */
    case RASP_PRED_LE: s = st->pre[hi]; break;   /* key <= query */
    case RASP_PRED_GT: s = st->suf[hi]; break;   /* key > query */
    case RASP_PRED_GE: s = st->suf[lo]; break;   /* key >= query */
    default:                                     /* NE */
      s = st->pre[lo];
      if (!stat_merge(&s, &st->suf[hi], h->need))
        return overflow_at(h->nd, h->err);
      break;
    }
    if (!finish(h->nd, &s, &out[q], h->err)) return 0;
  }
  return 1;
}

/* always (non-causal: everything; causal: a running prefix). */
static int head_true(head *h, const rasp_elem *vals, rasp_elem *out) {
  int n = h->n, causal = (h->sel->flags & RASP_CAUSAL) != 0;
  rasp_elem one = {1, 1};
  rstat s = empty_stat;
  for (int p = 0; p < n; p++) {
    if (!stat_add(&s, vals ? vals[p] : one, h->need))
      return overflow_at(h->nd, h->err);
    if (causal && !finish(h->nd, &s, &out[p], h->err)) return 0;
  }
  if (!causal)
    for (int q = 0; q < n; q++)
      if (!finish(h->nd, &s, &out[q], h->err)) return 0;
  return 1;
}

enum strategy { S_MATRIX, S_HASH, S_SORT, S_TRUE, S_FALSE };

static enum strategy choose(const rasp_ir_node *nd, const rasp_ir_node *sel,
                            int values_have_sym) {
  if (sel->op != RASP_OP_SELECT) return S_MATRIX;
  int causal = (sel->flags & RASP_CAUSAL) != 0;
  switch ((rasp_pred)sel->aux) {
  case RASP_PRED_EQ: return S_HASH;
  case RASP_PRED_TRUE: return S_TRUE;
  case RASP_PRED_FALSE: return S_FALSE;
  case RASP_PRED_NE:
    if (!causal) return S_SORT;
    /* Causal not_equals subtracts from running totals, which works for
       counts and sums but not for max/min (needed by symbol pass-through). */
    if (nd->op == RASP_OP_SEL_WIDTH || nd->op == RASP_OP_AGGR_MEAN ||
        (nd->op == RASP_OP_AGGREGATE && !values_have_sym))
      return S_HASH;
    return S_MATRIX;
  case RASP_PRED_LT:
  case RASP_PRED_LE:
  case RASP_PRED_GT:
  case RASP_PRED_GE: return causal ? S_MATRIX : S_SORT;
  default: return S_MATRIX;
  }
}

static int eval_head(ctx *c) {
  rasp_eval *ev = c->ev;
  const rasp_ir_node *nd = c->nd;
  const rasp_ir_node *sel = &ev->ir->nodes[nd->in[0]];
  head h = {ev, nd, sel, head_needs(nd->op), ev->n, c->err};
  int n = ev->n, ok = 1;
  const rasp_elem *allvals = nd->op == RASP_OP_SEL_WIDTH ? NULL : operand(c, 1);
  int has_sym = 0;
  if (allvals)
    for (size_t i = 0; i < c->total && !has_sym; i++)
      has_sym = allvals[i].den == RASP_DEN_SYM;
  if (has_sym && nd->op == RASP_OP_AGGR_MEAN) {
    raspR_set(c->err, nd->pos,
              "aggr_mean needs numbers or booleans, not symbols");
    return 0;
  }
  enum strategy strat = choose(nd, sel, has_sym);
  if (strat == S_HASH && sel->aux == RASP_PRED_NE) h.need &= ~NEED_EXT;
  unsigned char *m = NULL;
  groups g = {0};
  sorted st = {0};
  if (strat == S_MATRIX) {
    if (!cells_ok(ev, sel, c->err)) return 0;
    m = raspM_alloc((size_t)n * n + 1);
  } else if (strat == S_HASH) {
    groups_init(&g, n);
  } else if (strat == S_SORT) {
    st.ks = raspM_alloc(((size_t)n + 1) * sizeof *st.ks);
    st.pre = raspM_alloc(((size_t)n + 1) * sizeof *st.pre);
    st.suf = raspM_alloc(((size_t)n + 1) * sizeof *st.suf);
  }
  for (int b = 0; ok && b < ev->B; b++) {
    size_t off = (size_t)b * n;
    const rasp_elem *vals = allvals ? allvals + off : NULL;
    rasp_elem *out = c->out + off;
    const rasp_elem *keys = NULL, *qs = NULL;
    if (sel->op == RASP_OP_SELECT) {
      keys = ev->val[sel->in[0]] + off;
      qs = ev->val[sel->in[1]] + off;
    }
    switch (strat) {
    case S_MATRIX: ok = head_matrix(&h, b, m, vals, out); break;
    case S_HASH: ok = head_eq(&h, &g, keys, qs, vals, out); break;
    case S_SORT: ok = head_sorted(&h, &st, keys, qs, vals, out); break;
    case S_TRUE: ok = head_true(&h, vals, out); break;
    case S_FALSE:
      for (int q = 0; ok && q < n; q++)
        ok = finish(nd, &empty_stat, &out[q], c->err);
      break;
    }
  }
  raspM_free(m);
  groups_free(&g);
  raspM_free(st.ks);
  raspM_free(st.pre);
  raspM_free(st.suf);
  return ok;
}

static int eval_SEL_WIDTH(ctx *c) { return eval_head(c); }
static int eval_AGGR_MEAN(ctx *c) { return eval_head(c); }
static int eval_AGGREGATE(ctx *c) { return eval_head(c); }
static int eval_AGGR_MAX(ctx *c) { return eval_head(c); }
static int eval_AGGR_MIN(ctx *c) { return eval_head(c); }

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
  return ev;
}

static void drop_values(rasp_eval *ev) {
  for (int i = 0; i < ev->nnodes; i++) {
    raspM_free(ev->val[i]);
    ev->val[i] = NULL;
    raspM_free(ev->selm[i]);
    ev->selm[i] = NULL;
  }
  ev->ran = 0;
}

void raspE_free(rasp_eval *ev) {
  if (!ev) return;
  drop_values(ev);
  for (int i = 0; i < ev->nnodes; i++) memo_free(ev->memos[i]);
  raspM_free(ev->val);
  raspM_free(ev->memos);
  raspM_free(ev->selm);
  raspM_free(ev->selb);
  raspM_free(ev->live);
  raspM_free(ev);
}

void raspE_set_max_selector_cells(rasp_eval *ev, size_t cells) {
  ev->max_cells = cells;
}

/* The IR may have grown since the evaluator was made (the REPL traces more
** into the same graph), so the per-node arrays follow it. */
static void fit_nodes(rasp_eval *ev) {
  int nn = ev->ir->nnodes;
  if (nn <= ev->nnodes) return;
  ev->val = raspM_realloc(ev->val, (size_t)nn * sizeof *ev->val);
  ev->memos = raspM_realloc(ev->memos, (size_t)nn * sizeof *ev->memos);
  ev->selm = raspM_realloc(ev->selm, (size_t)nn * sizeof *ev->selm);
  ev->selb = raspM_realloc(ev->selb, (size_t)nn * sizeof *ev->selb);
  ev->live = raspM_realloc(ev->live, (size_t)nn);
  for (int i = ev->nnodes; i < nn; i++) {
    ev->val[i] = NULL;
    ev->memos[i] = NULL;
    ev->selm[i] = NULL;
    ev->selb[i] = -1;
  }
  ev->nnodes = nn;
}

static int valid_node(const rasp_ir *ir, int id, rasp_error *err) {
  const rasp_ir_node *nd = &ir->nodes[id];
  if ((unsigned)nd->op >= RASP_OP__COUNT) {
    raspR_set(err, nd->pos, "internal error: bad operation %d", (int)nd->op);
    return 0;
  }
  if (nd->nin != raspI_op_arity(nd->op)) {
    raspR_set(err, nd->pos, "internal error: '%s' with %d operands",
              raspI_op_name(nd->op), nd->nin);
    return 0;
  }
  rasp_component comp = raspI_op_component(nd->op);
  for (int j = 0; j < nd->nin; j++) {
    int in = nd->in[j];
    if (in < 0 || in >= id) {
      raspR_set(err, nd->pos, "internal error: bad operand %d", in);
      return 0;
    }
    int insel = raspI_op_component(ir->nodes[in].op) == RASP_COMP_SELECTOR;
    /* Selectors feed exactly: select takes values, combinators and heads'
       first operand take selectors. */
    int wantsel = (comp == RASP_COMP_SELECTOR && nd->op != RASP_OP_SELECT) ||
                  (comp == RASP_COMP_ATTN && j == 0);
    if (insel != wantsel) {
      raspR_set(err, nd->pos, "internal error: operand %d of '%s' is %sa "
                "selector", j + 1, raspI_op_name(nd->op), insel ? "" : "not ");
      return 0;
    }
  }
  return 1;
}

int raspE_run(rasp_eval *ev, int B, const int64_t *tokens, rasp_error *err) {
  const rasp_ir *ir = ev->ir;
  fit_nodes(ev);
  drop_values(ev);
  if (B < 0 || ir->n < 0) {
    raspR_setnopos(err, "bad batch size %d or length %d", B, ir->n);
    return 0;
  }
  ev->B = B;
  ev->n = ir->n;
  raspI_live(ir, ir->outputs, ir->noutputs, ev->live);
  size_t total = (size_t)B * (size_t)ir->n;
  for (int id = 0; id < ir->nnodes; id++) {
    if (!ev->live[id]) continue;
    if (!valid_node(ir, id, err)) {
      drop_values(ev);
      return 0;
    }
    const rasp_ir_node *nd = &ir->nodes[id];
    ctx c = {ev, id, nd, tokens, total, NULL, err};
    if (raspI_op_component(nd->op) != RASP_COMP_SELECTOR)
      c.out = ev->val[id] = raspM_alloc((total ? total : 1) * sizeof *c.out);
    if (!handlers[nd->op](&c)) {
      drop_values(ev);
      return 0;
    }
  }
  ev->ran = 1;
  return 1;
}

const rasp_elem *raspE_value(rasp_eval *ev, int node, int b) {
  if (!ev->ran || node < 0 || node >= ev->nnodes || b < 0 || b >= ev->B ||
      !ev->val[node])
    return NULL;
  return ev->val[node] + (size_t)b * ev->n;
}

const unsigned char *raspE_selector(rasp_eval *ev, int node, int b,
                                    rasp_error *err) {
  if (!ev->ran || node < 0 || node >= ev->nnodes || b < 0 || b >= ev->B) {
    raspR_setnopos(err, "no value for node %d of input %d", node, b);
    return NULL;
  }
  const rasp_ir_node *nd = &ev->ir->nodes[node];
  if (raspI_op_component(nd->op) != RASP_COMP_SELECTOR) {
    raspR_set(err, nd->pos, "'%s' is not a selector", raspI_op_name(nd->op));
    return NULL;
  }
  if (!ev->live[node]) {
    raspR_set(err, nd->pos, "selector was not part of the evaluated program");
    return NULL;
  }
  if (ev->selm[node] && ev->selb[node] == b) return ev->selm[node];
  if (!cells_ok(ev, nd, err)) return NULL;
  size_t nn = (size_t)ev->n * ev->n;
  unsigned char *m = ev->selm[node];
  if (!m) m = raspM_alloc(nn + 1);
  ev->selm[node] = m;
  ev->selb[node] = -1;
  if (!build_matrix(ev, node, b, m, err)) return NULL;
  ev->selb[node] = b;
  return m;
}
