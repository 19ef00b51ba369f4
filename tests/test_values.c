/*
** test_values.c -- the value facts of rfacts.h (raspF_transfer,
** raspF_values): what each operation does to kinds and bounds, by hand on
** cases where the answer is known, and dynamically: random graphs of every
** operation (constants of every kind, overflow, division, symbols,
** booleans, maps, means, heads with defaults) evaluated on random inputs,
** every value of every node inside its static fact; and the evaluator's
** check mode (raspE_set_check_values) catching a value that is not.  The
** distinct-values facts (raspF_distincts) the same way: by hand, on the
** random graphs (no two positions repeat a value a claim excludes), and in
** the check mode.
*/
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reval.h"
#include "rfacts.h"
#include "rir.h"

#include "check_main.h"

static rasp_elem I(int64_t v) { return (rasp_elem){v, 1}; }
static rasp_elem R(int64_t p, int64_t q) { return (rasp_elem){p, q}; }
static rasp_elem B(int v) { return (rasp_elem){v, RASP_DEN_BOOL}; }
static rasp_elem S(int64_t v) { return (rasp_elem){v, RASP_DEN_SYM}; }

static raspF_value F(unsigned kind, int64_t lo, int64_t hi) { return (raspF_value){kind, lo, hi}; }

#define KI RASPF_K_INT
#define KB RASPF_K_BOOL
#define KR RASPF_K_RAT
#define KS RASPF_K_SYM

#define ck_fact(f, K, LO, HI)                                                                    \
  do {                                                                                           \
    raspF_value f_ = (f);                                                                        \
    ck_assert_msg(f_.kind == (K) && f_.lo == (LO) && f_.hi == (HI),                              \
                  "got kinds %u [%lld, %lld], want %u [%lld, %lld]", f_.kind, (long long)f_.lo, \
                  (long long)f_.hi, (unsigned)(K), (long long)(LO), (long long)(HI));           \
  } while (0)

/* ---- a program's functions: a table of elements of every kind */

static const rasp_elem fn_tab[] = {
    {0, 1}, {1, 1}, {-2, 1}, {7, 1}, {1, 2}, {-5, 3}, {0, RASP_DEN_BOOL}, {1, RASP_DEN_BOOL},
    {0, RASP_DEN_SYM}, {2, RASP_DEN_SYM}, {INT64_MAX, 1}, {INT64_MIN + 1, 1}, {INT64_MAX, 2},
    {1000000007, 1}, {3, 1}, {-1, 1},
};
#define NTAB ((int)(sizeof fn_tab / sizeof *fn_tab))

/* fn == &fn_pred: a predicate (key < query, numerically, symbols last);
** else a lookup of fn_tab by a hash of the arguments. */
static int fn_pred;

static int call(void *user, void *fn, int nargs, const rasp_elem *args, rasp_elem *out,
                rasp_error *err) {
  (void)user;
  (void)err;
  if (fn == &fn_pred) {
    *out = B(raspI_elem_cmp(args[0], args[1]) < 0);
    return 1;
  }
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (int i = 0; i < nargs; i++) h = raspF_mix64(h ^ (uint64_t)args[i].num) + (uint64_t)args[i].den;
  *out = fn_tab[raspF_mix64(h) % NTAB];
  return 1;
}

static int add(rasp_ir *ir, rasp_op op, int a, int b, int c, int aux) {
  rasp_ir_node nd;
  memset(&nd, 0, sizeof nd);
  nd.op = op;
  nd.type = RASP_T_ANY;
  nd.nin = raspI_op_arity(op);
  nd.in[0] = a;
  nd.in[1] = b;
  nd.in[2] = c;
  nd.aux = aux;
  nd.pos.line = ir->nnodes + 1;
  return raspI_add(ir, &nd);
}

/* The fact of node id of ir computed alone, from facts of its operands. */
static raspF_value tr(const rasp_ir *ir, int id, raspF_value x, raspF_value y) {
  raspF_value in[3] = {x, y, y};
  raspF_value tok = F(KI, 0, 9);
  return raspF_transfer(ir, id, tok, in);
}

/* ---- transfer functions by hand */

START_TEST(test_transfer) {
  rasp_ir ir;
  raspI_init(&ir, 6);
  int t = add(&ir, RASP_OP_INPUT, 0, 0, 0, 0);
  int ix = add(&ir, RASP_OP_INDICES, 0, 0, 0, 0);
  int node[RASP_BIN__COUNT];
  for (int op = 0; op < RASP_BIN__COUNT; op++) node[op] = add(&ir, RASP_OP_BINARY, t, ix, 0, op);
  int un[RASP_UN__COUNT];
  for (int op = 0; op < RASP_UN__COUNT; op++) un[op] = add(&ir, RASP_OP_UNARY, t, 0, 0, op);
  raspF_value x = F(KI, -3, 5), y = F(KI, 2, 4), b = F(KB, 0, 1), r = F(KI | KR, -1, 2);
  raspF_value big = F(KI, INT64_MAX - 1, INT64_MAX), any = F(RASPF_K_ANY, INT64_MIN, INT64_MAX);

  ck_fact(tr(&ir, t, x, x), KI, 0, 9); /* the token range given */
  ck_fact(tr(&ir, ix, x, x), KI, 0, 5);
  /* arithmetic: booleans become integers; overflow saturates (no value) */
  ck_fact(tr(&ir, node[RASP_BIN_ADD], x, y), KI, -1, 9);
  ck_fact(tr(&ir, node[RASP_BIN_ADD], b, b), KI, 0, 2);
  ck_fact(tr(&ir, node[RASP_BIN_ADD], big, y), KI, INT64_MAX, INT64_MAX);
  ck_fact(tr(&ir, node[RASP_BIN_SUB], x, y), KI, -7, 3);
  ck_fact(tr(&ir, node[RASP_BIN_MUL], x, y), KI, -12, 20);
  ck_fact(tr(&ir, node[RASP_BIN_MUL], x, r), KI | KR, -6, 10);
  ck_fact(tr(&ir, node[RASP_BIN_MUL], big, big), KI, INT64_MAX, INT64_MAX);
  /* division: exact and floor, bounded when the divisor keeps one sign */
  ck_fact(tr(&ir, node[RASP_BIN_DIV], x, y), KI | KR, -2, 3);
  ck_fact(tr(&ir, node[RASP_BIN_FLOORDIV], x, y), KI, -2, 2);
  ck_fact(tr(&ir, node[RASP_BIN_FLOORDIV], y, x), KI, -4, 4); /* |y // x| <= |y| */
  ck_fact(tr(&ir, node[RASP_BIN_DIV], y, r), KI | KR, INT64_MIN, INT64_MAX); /* 2 / (1/1000) */
  ck_fact(tr(&ir, node[RASP_BIN_MOD], x, y), KI, 0, 3);
  ck_fact(tr(&ir, node[RASP_BIN_MOD], y, F(KI, -5, -2)), KI, -4, 0);
  ck_fact(tr(&ir, node[RASP_BIN_MOD], F(KI, 0, 2), F(KI, 1, 10)), KI, 0, 2);
  ck_fact(tr(&ir, node[RASP_BIN_MOD], x, r), KI | KR, -1, 2);
  ck_fact(tr(&ir, node[RASP_BIN_POW], x, y), KI, -625, 625);
  ck_fact(tr(&ir, node[RASP_BIN_POW], y, F(KI, -2, 1)), KI | KR, 0, 4);
  ck_fact(tr(&ir, node[RASP_BIN_POW], y, F(KI, 0, 100)), KI, 0, INT64_MAX);
  ck_fact(tr(&ir, node[RASP_BIN_POW], y, r), KI | KR, 0, 16); /* 1 / y^k too */
  ck_assert_int_eq(tr(&ir, node[RASP_BIN_POW], y, F(KR, 0, 1)).kind, 0); /* not an integer */
  /* comparisons and logic */
  ck_fact(tr(&ir, node[RASP_BIN_LT], x, any), KB, 0, 1);
  ck_fact(tr(&ir, node[RASP_BIN_AND], any, any), KB, 0, 1);
  /* & | ^: bool op bool stays a bool; two's complement widths */
  ck_fact(tr(&ir, node[RASP_BIN_BITAND], b, b), KB, 0, 1);
  ck_fact(tr(&ir, node[RASP_BIN_BITOR], b, y), KI, 0, 7);
  ck_fact(tr(&ir, node[RASP_BIN_BITAND], x, y), KI, 0, 4);
  ck_fact(tr(&ir, node[RASP_BIN_BITXOR], x, y), KI, -8, 7);
  ck_fact(tr(&ir, node[RASP_BIN_BITOR], r, y), KI, -8, 7); /* its rationals fail */
  ck_assert_int_eq(tr(&ir, node[RASP_BIN_BITOR], F(KR, 0, 1), y).kind, 0);
  /* min/max: interval min/max of numbers, the hull when symbols sort last */
  ck_fact(tr(&ir, node[RASP_BIN_MIN], x, y), KI, -3, 4);
  ck_fact(tr(&ir, node[RASP_BIN_MAX], x, y), KI, 2, 5);
  ck_fact(tr(&ir, node[RASP_BIN_MIN], F(KI | KS, -3, 0), F(KI, 100, 100)), KI | KS, -3, 100);
  /* symbols in arithmetic fail: no value */
  ck_fact(tr(&ir, node[RASP_BIN_ADD], F(KS, INT64_MAX, INT64_MIN), y), 0, INT64_MAX, INT64_MIN);
  /* unary */
  ck_fact(tr(&ir, un[RASP_UN_NEG], x, x), KI, -5, 3);
  ck_fact(tr(&ir, un[RASP_UN_NEG], F(KI, INT64_MIN, 0), x), KI, 0, INT64_MAX);
  ck_fact(tr(&ir, un[RASP_UN_ABS], x, x), KI, 0, 5);
  ck_fact(tr(&ir, un[RASP_UN_POS], b, x), KI, 0, 1);
  ck_fact(tr(&ir, un[RASP_UN_NOT], any, x), KB, 0, 1);
  ck_fact(tr(&ir, un[RASP_UN_INVERT], x, x), KI, -6, 2);
  ck_fact(tr(&ir, un[RASP_UN_INVERT], F(KB | KI, 0, 3), x), KB | KI, -4, 1);

  /* maps are unknown; seq_map truncates */
  int m = add(&ir, RASP_OP_MAP, t, 0, 0, 0), sm = add(&ir, RASP_OP_SEQMAP, t, ix, 0, 0);
  ck_fact(tr(&ir, m, x, x), RASPF_K_ANY, INT64_MIN, INT64_MAX);
  ck_fact(tr(&ir, sm, x, x), KI | KS, INT64_MIN, INT64_MAX);
  /* where: the hull of its branches */
  int w = add(&ir, RASP_OP_WHERE, t, t, ix, 0);
  raspF_value in3[3] = {b, x, F(KS, INT64_MAX, INT64_MIN)};
  ck_fact(raspF_transfer(&ir, w, F(KI, 0, 9), in3), KI | KS, -3, 5);

  /* heads: sel_width in [0, n] (n for `length`, q + 1 for causal `always`) */
  int s = add(&ir, RASP_OP_SELECT, t, t, 0, RASP_PRED_EQ);
  int all = add(&ir, RASP_OP_SELECT, t, t, 0, RASP_PRED_TRUE);
  int call_ = add(&ir, RASP_OP_SELECT, t, t, 0, RASP_PRED_TRUE);
  ir.nodes[call_].flags = RASP_CAUSAL;
  raspF_value none = {0, INT64_MAX, INT64_MIN};
  ck_fact(tr(&ir, s, x, x), 0, INT64_MAX, INT64_MIN); /* selectors have no value */
  ck_fact(tr(&ir, add(&ir, RASP_OP_SEL_WIDTH, s, 0, 0, 0), none, none), KI, 0, 6);
  ck_fact(tr(&ir, add(&ir, RASP_OP_SEL_WIDTH, all, 0, 0, 0), none, none), KI, 6, 6);
  ck_fact(tr(&ir, add(&ir, RASP_OP_SEL_WIDTH, call_, 0, 0, 0), none, none), KI, 1, 6);
  /* means within the values' range, the default among the values */
  int mean = add(&ir, RASP_OP_AGGR_MEAN, s, t, 0, 0);
  ir.nodes[mean].c = R(-7, 2); /* truncated: -3 */
  ck_fact(tr(&ir, mean, none, y), KI, -3, 4);
  ck_fact(tr(&ir, mean, none, b), KI, -3, 1);
  int agg = add(&ir, RASP_OP_AGGREGATE, s, t, 0, 0);
  ir.nodes[agg].c = I(0);
  ck_fact(tr(&ir, agg, none, b), KB | KI | KR, 0, 1);
  ck_fact(tr(&ir, agg, none, F(KS, INT64_MAX, INT64_MIN)), KS | KI, 0, 0);
  int mx = add(&ir, RASP_OP_AGGR_MAX, s, t, 0, 0);
  ir.nodes[mx].c = S(1);
  ck_fact(tr(&ir, mx, none, y), KI | KS, 2, 4);
  /* constants: [floor, ceil] */
  int c1 = add(&ir, RASP_OP_FULL, 0, 0, 0, 0);
  ir.nodes[c1].c = R(-7, 2);
  ck_fact(tr(&ir, c1, none, none), KR, -4, -3);
  raspI_free(&ir);

  /* no positions: no values */
  raspI_init(&ir, 0);
  ix = add(&ir, RASP_OP_INDICES, 0, 0, 0, 0);
  ck_fact(tr(&ir, ix, none, none), 0, INT64_MAX, INT64_MIN);
  raspI_free(&ir);
}
END_TEST

START_TEST(test_holds) {
  raspF_value f = F(KI | KR, -1, 2);
  ck_assert(raspF_holds(f, I(2)));
  ck_assert(raspF_holds(f, R(5, 2)) == 0); /* 2.5 > 2 */
  ck_assert(raspF_holds(f, R(-1, 2)));
  ck_assert(raspF_holds(f, R(4, 2)));       /* unreduced 2 */
  ck_assert(raspF_holds(f, B(1)) == 0);     /* not a boolean */
  ck_assert(raspF_holds(f, S(0)) == 0);
  ck_assert(raspF_holds(F(KS, INT64_MAX, INT64_MIN), S(0)));
  ck_assert(raspF_holds(F(KI, INT64_MIN, INT64_MAX), I(INT64_MIN)));
  ck_assert(raspF_holds(F(KR, 0, 1), I(1)) == 0);
  ck_assert(raspF_magnitude(F(KI, -7, 3)) == 7);
  ck_assert(raspF_magnitude(F(KI, INT64_MIN, 0)) == INT64_MAX);
  ck_assert(raspF_magnitude(F(KS, INT64_MAX, INT64_MIN)) == 0);
  ck_assert(raspF_bounded(F(KI, -7, 3)) && !raspF_bounded(F(KI, 0, INT64_MAX)));
  ck_fact(raspF_meet(F(KI | KB, -7, 3), F(KI | KS, 0, 10)), KI, 0, 3);
  ck_fact(raspF_meet(F(KB, 0, 1), F(KS, 0, 10)), 0, INT64_MAX, INT64_MIN);
  ck_fact(raspF_elem_value(R(7, 2)), KR, 3, 4);
  ck_fact(raspF_elem_value(B(1)), KB, 1, 1);
}
END_TEST

/* ---- random graphs */

static const rasp_elem consts[] = {
    {0, 1}, {1, 1}, {2, 1}, {-3, 1}, {5, 1}, {1, 2}, {-7, 3}, {0, RASP_DEN_BOOL},
    {1, RASP_DEN_BOOL}, {1, RASP_DEN_SYM}, {INT64_MAX, 1}, {INT64_MIN, 1}, {INT64_MAX - 1, 5},
    {4000000000000000000LL, 1}, {-1, 1}, {63, 1},
};
#define NCONST ((int)(sizeof consts / sizeof *consts))

static uint64_t rng;
static unsigned rnd(unsigned m) {
  rng = raspF_mix64(rng + 0x9e3779b97f4a7c15ULL);
  return (unsigned)(rng >> 33) % m;
}

static int is_sel(const rasp_ir *ir, int id) {
  return raspI_op_component(ir->nodes[id].op) == RASP_COMP_SELECTOR;
}

/* A random earlier node that has a value (or a selector when sel). */
static int pick(const rasp_ir *ir, int sel) {
  for (int tries = 0; tries < 64; tries++) {
    int id = (int)rnd((unsigned)ir->nnodes);
    if (is_sel(ir, id) == sel) return id;
  }
  return -1;
}

/* One random node appended to ir, or -1 when there was nothing to build on. */
static int random_node(rasp_ir *ir) {
  int r = (int)rnd(100), a = pick(ir, 0), b = pick(ir, 0), c = pick(ir, 0);
  int id;
  if (r < 10) {
    id = add(ir, RASP_OP_FULL, 0, 0, 0, 0);
    ir->nodes[id].c = consts[rnd(NCONST)];
  } else if (r < 20) {
    id = add(ir, RASP_OP_UNARY, a, 0, 0, (int)rnd(RASP_UN__COUNT));
  } else if (r < 50) {
    id = add(ir, RASP_OP_BINARY, a, b, 0, (int)rnd(RASP_BIN__COUNT));
  } else if (r < 55) {
    id = add(ir, RASP_OP_WHERE, a, b, c, 0);
  } else if (r < 60) {
    id = add(ir, RASP_OP_MAP, a, 0, 0, 0);
    ir->nodes[id].fn = (void *)fn_tab;
  } else if (r < 63) {
    id = add(ir, RASP_OP_SEQMAP, a, b, 0, 0);
    ir->nodes[id].fn = (void *)fn_tab;
  } else if (r < 75) {
    rasp_pred p = (rasp_pred)rnd(RASP_PRED__COUNT);
    if (p == RASP_PRED_EQ && rnd(2)) b = 1; /* queries that differ: the indices */
    id = add(ir, RASP_OP_SELECT, a, b, 0, (int)p);
    ir->nodes[id].flags = rnd(2) ? RASP_CAUSAL : 0;
    if (p == RASP_PRED_CUSTOM) ir->nodes[id].fn = &fn_pred;
  } else if (r < 80) {
    int s = pick(ir, 1), s2 = pick(ir, 1);
    if (s < 0 || s2 < 0) return -1;
    int op = (int)rnd(3);
    id = add(ir, op == 0 ? RASP_OP_SEL_AND : op == 1 ? RASP_OP_SEL_OR : RASP_OP_SEL_NOT, s, s2, 0,
             0);
    ir->nodes[id].flags = (ir->nodes[s].flags | (op < 2 ? ir->nodes[s2].flags : 0)) & RASP_CAUSAL;
  } else {
    static const rasp_op heads[] = {RASP_OP_SEL_WIDTH, RASP_OP_AGGR_MEAN, RASP_OP_AGGREGATE,
                                    RASP_OP_AGGREGATE, RASP_OP_AGGR_MAX, RASP_OP_AGGR_MIN};
    int s = pick(ir, 1);
    if (s < 0) return -1;
    /* a head over an equality select averaging its own keys: the result
    ** is the query's value where anything is selected (raspF_distincts) */
    if (rnd(3) == 0) { /* an equality select to build one on, queries distinct */
      s = add(ir, RASP_OP_SELECT, a, rnd(2) ? 1 : b, 0, RASP_PRED_EQ);
      ir->nodes[s].flags = rnd(2) ? RASP_CAUSAL : 0;
    }
    const rasp_ir_node *sn = &ir->nodes[s];
    int own = sn->op == RASP_OP_SELECT && sn->aux == RASP_PRED_EQ && rnd(2);
    if (own) a = sn->in[0];
    id = add(ir, own ? heads[1 + rnd(3)] : heads[rnd(6)], s, a, 0, 0);
    ir->nodes[id].c = own && rnd(2) ? (rasp_elem){(int64_t)rnd(9) - 4, 1} : consts[rnd(NCONST)];
  }
  return id;
}

/* Every value of every live node of a run within its fact, and no two
** positions of one input holding a value its distinct-values fact
** excludes (*claims: the nodes with such a fact, per input). */
static int check_run(const rasp_ir *ir, rasp_eval *ev, int nb, const raspF_value *vf,
                     const raspF_distinct *dist, long *claims) {
  int checked = 0;
  for (int id = 0; id < ir->nnodes; id++) {
    if (is_sel(ir, id)) continue;
    for (int b = 0; b < nb; b++) {
      const rasp_elem *v = raspE_value(ev, id, b);
      ck_assert_msg(v != NULL, "no value for node %d", id);
      *claims += dist[id].holds;
      for (int i = 0; i < ir->n && dist[id].holds; i++)
        for (int j = i + 1; j < ir->n; j++)
          ck_assert_msg(!raspI_elem_eq(v[i], v[j]) || raspF_distinct_may_repeat(dist[id], v[i].num),
                        "node %d (%s): %lld at positions %d and %d, outside [%lld, %lld]", id,
                        raspI_op_name(ir->nodes[id].op), (long long)v[i].num, i, j,
                        (long long)dist[id].lo, (long long)dist[id].hi);
      for (int i = 0; i < ir->n; i++) {
        ck_assert_msg(raspF_holds(vf[id], v[i]),
                      "node %d (%s): %lld/%lld outside kinds %u [%lld, %lld]", id,
                      raspI_op_name(ir->nodes[id].op), (long long)v[i].num, (long long)v[i].den,
                      vf[id].kind, (long long)vf[id].lo, (long long)vf[id].hi);
        checked++;
      }
    }
  }
  return checked;
}

#define NB 4

START_TEST(test_random_graphs) {
  long checked = 0, bounded = 0, nodes = 0, claims = 0, agg_claims = 0;
  for (int trial = 0; trial < 300; trial++) {
    rng = 0x51ed2701u + (uint64_t)trial * 7919u;
    int n = 1 + (int)rnd(7);
    int64_t tlo = (int64_t)rnd(4) - 2, thi = tlo + (int64_t)rnd(6);
    if (trial % 10 == 0) { /* ids near the top of the range */
      tlo = INT64_MAX - 5;
      thi = INT64_MAX;
    }
    int64_t tokens[2][NB * 8];
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < NB * n; i++)
        tokens[k][i] = tlo + (int64_t)rnd((unsigned)(thi - tlo + 1));
    tokens[0][0] = tlo; /* both ends occur */
    tokens[0][NB * n - 1] = thi;
    rasp_ir ir;
    raspI_init(&ir, n);
    ir.call = call;
    add(&ir, RASP_OP_INPUT, 0, 0, 0, 0);
    add(&ir, RASP_OP_INDICES, 0, 0, 0, 0);
    /* grow the graph, keeping only nodes that evaluate on the first batch */
    for (int step = 0; step < 40; step++) {
      int id = random_node(&ir);
      if (id < 0 || is_sel(&ir, id)) continue;
      ir.outputs = realloc(ir.outputs, sizeof(int));
      ir.outputs[0] = id;
      ir.noutputs = 1;
      rasp_eval *ev = raspE_new(&ir);
      rasp_error err;
      memset(&err, 0, sizeof err);
      int ok = raspE_run(ev, NB, tokens[0], &err);
      raspE_free(ev);
      if (!ok) ir.nnodes--; /* an error (overflow, a symbol in arithmetic): not a value */
    }
    /* every node an output, so every value stays readable */
    ir.outputs = realloc(ir.outputs, sizeof(int) * (size_t)ir.nnodes);
    ir.noutputs = 0;
    for (int id = 0; id < ir.nnodes; id++)
      if (!is_sel(&ir, id)) ir.outputs[ir.noutputs++] = id;
    raspF_value *vf = malloc(sizeof *vf * (size_t)ir.nnodes);
    raspF_values(&ir, (raspF_value){RASPF_K_INT, tlo, thi}, vf);
    raspF_distinct *dist = malloc(sizeof *dist * (size_t)ir.nnodes);
    raspF_distincts(&ir, vf, dist);
    for (int id = 0; id < ir.nnodes; id++)
      agg_claims += dist[id].holds && (ir.nodes[id].op == RASP_OP_AGGR_MEAN ||
                                       ir.nodes[id].op == RASP_OP_AGGREGATE);
    for (int id = 0; id < ir.nnodes; id++) {
      nodes += !is_sel(&ir, id);
      bounded += !is_sel(&ir, id) && raspF_bounded(vf[id]);
    }
    for (int mode = 0; mode < 4; mode++) {
      /* fast kernels, the same with its own check, reference, values dropped */
      rasp_eval *ev = raspE_new(&ir);
      raspE_set_check_values(ev, mode == 1 || mode == 3);
      raspE_set_reference(ev, mode == 2);
      raspE_set_keep_intermediates(ev, mode != 3);
      for (int k = 0; k < 2; k++) {
        rasp_error err;
        memset(&err, 0, sizeof err);
        int ok = raspE_run(ev, NB, tokens[k], &err);
        if (k == 0) ck_assert_msg(ok, "trial %d mode %d: %s", trial, mode, err.msg);
        else if (!ok) ck_assert_msg(strstr(err.msg, "internal error") == NULL, "%s", err.msg);
        if (ok && mode != 3) checked += check_run(&ir, ev, NB, vf, dist, &claims);
      }
      raspE_free(ev);
    }
    free(vf);
    free(dist);
    raspI_free(&ir);
  }
  /* the test saw many values, and most facts bound something */
  fprintf(stderr, "checked %ld bounded %ld of %ld; distinct claims %ld (aggregates %ld)\n",
          checked, bounded, nodes, claims, agg_claims);
  ck_assert_msg(claims > 1000 && agg_claims > 10, "only %ld distinct claims, %ld on aggregates",
                claims, agg_claims);
  ck_assert_msg(checked > 100000, "only %ld values checked", checked);
  ck_assert_msg(bounded * 2 > nodes, "%ld of %ld nodes bounded", bounded, nodes);
}
END_TEST

/* The check mode fails a run whose values leave their facts: a kept
** static value changed behind the evaluator's back is not recomputed. */
START_TEST(test_check_mode) {
  rasp_ir ir;
  raspI_init(&ir, 4);
  add(&ir, RASP_OP_INPUT, 0, 0, 0, 0);
  int ix = add(&ir, RASP_OP_INDICES, 0, 0, 0, 0);
  int one = add(&ir, RASP_OP_FULL, 0, 0, 0, 0);
  ir.nodes[one].c = I(1);
  int sum = add(&ir, RASP_OP_BINARY, ix, one, 0, RASP_BIN_ADD); /* 1..4 */
  ir.outputs = malloc(sizeof(int));
  ir.outputs[0] = sum;
  ir.noutputs = 1;
  rasp_eval *ev = raspE_new(&ir);
  raspE_set_check_values(ev, 1);
  int64_t tok[4] = {1, 2, 3, 4};
  rasp_error err;
  memset(&err, 0, sizeof err);
  ck_assert_msg(raspE_run(ev, 1, tok, &err), "%s", err.msg);
  rasp_elem *v = (rasp_elem *)raspE_value(ev, sum, 0);
  ck_assert(v && v[3].num == 4);
  v[3] = I(5);
  ck_assert(!raspE_run(ev, 1, tok, &err));
  ck_assert_msg(strstr(err.msg, "outside its value fact") != NULL, "%s", err.msg);
  raspE_set_check_values(ev, 0); /* without the check, the run does not look */
  memset(&err, 0, sizeof err);
  ck_assert_msg(raspE_run(ev, 1, tok, &err), "%s", err.msg);
  raspE_free(ev);
  /* RASP_EVAL_CHECK_VALUES=1 starts an evaluator in the mode */
  setenv("RASP_EVAL_CHECK_VALUES", "1", 1);
  ev = raspE_new(&ir);
  unsetenv("RASP_EVAL_CHECK_VALUES");
  ck_assert(raspE_run(ev, 1, tok, &err));
  v = (rasp_elem *)raspE_value(ev, sum, 0);
  v[0] = I(0);
  ck_assert(!raspE_run(ev, 1, tok, &err));
  ck_assert_msg(strstr(err.msg, "outside its value fact") != NULL, "%s", err.msg);
  raspE_free(ev);
  raspI_free(&ir);
}
END_TEST

#define ck_distinct(d, H, LO, HI)                                                          \
  do {                                                                                     \
    raspF_distinct d_ = (d);                                                               \
    ck_assert_msg(d_.holds == (H) && (!(H) || (d_.lo == (LO) && d_.hi == (HI))),           \
                  "got holds %d [%lld, %lld], want %d [%lld, %lld]", d_.holds,             \
                  (long long)d_.lo, (long long)d_.hi, (H), (long long)(LO), (long long)(HI)); \
  } while (0)

/* raspF_distincts by hand: Listing 4's k1_nodes_pos chain (indices, a
** where with a constant, + 2, an aggr_mean of the indices over an equality
** select on them), the rules' refusals, and the check mode catching a value
** held twice where the fact says it cannot be. */
START_TEST(test_distinct) {
  rasp_ir ir;
  raspI_init(&ir, 4);
  ir.call = call;
  int tok = add(&ir, RASP_OP_INPUT, 0, 0, 0, 0);
  int ix = add(&ir, RASP_OP_INDICES, 0, 0, 0, 0);
  int k99 = add(&ir, RASP_OP_FULL, 0, 0, 0, 0), k2 = add(&ir, RASP_OP_FULL, 0, 0, 0, 0);
  ir.nodes[k99].c = I(-99);
  ir.nodes[k2].c = I(2);
  int cond = add(&ir, RASP_OP_BINARY, tok, k2, 0, RASP_BIN_NE);
  int pos = add(&ir, RASP_OP_WHERE, cond, ix, k99, 0);        /* idx or -99 */
  int q = add(&ir, RASP_OP_BINARY, pos, k2, 0, RASP_BIN_ADD); /* idx + 2 or -97 */
  int sel = add(&ir, RASP_OP_SELECT, ix, q, 0, RASP_PRED_EQ);
  int mv = add(&ir, RASP_OP_AGGR_MEAN, sel, ix, 0, 0); /* q, or -89 */
  ir.nodes[mv].c = I(-89);
  int neg = add(&ir, RASP_OP_UNARY, mv, 0, 0, RASP_UN_NEG);
  int sub = add(&ir, RASP_OP_BINARY, k2, q, 0, RASP_BIN_SUB);  /* 2 - q */
  int mul = add(&ir, RASP_OP_BINARY, q, k99, 0, RASP_BIN_MUL); /* -99 q */
  int both = add(&ir, RASP_OP_WHERE, cond, ix, sub, 0);        /* the narrower side */
  int other = add(&ir, RASP_OP_AGGR_MEAN, sel, tok, 0, 0);    /* values not the keys */
  ir.nodes[other].c = I(0);
  int tsq = add(&ir, RASP_OP_BINARY, ix, ix, 0, RASP_BIN_MUL); /* no constant */
  int map = add(&ir, RASP_OP_MAP, ix, 0, 0, 0);
  ir.nodes[map].fn = (void *)fn_tab;
  int isb = add(&ir, RASP_OP_BINARY, ix, k2, 0, RASP_BIN_LT); /* booleans */
  int st = add(&ir, RASP_OP_BINARY, ix, k2, 0, RASP_BIN_ADD);  /* static: kept */
  int n = ir.nnodes;
  raspF_value *vf = malloc(sizeof *vf * (size_t)n);
  raspF_distinct *d = malloc(sizeof *d * (size_t)n);
  raspF_values(&ir, F(KI, 0, 9), vf);
  raspF_distincts(&ir, vf, d);
  ck_distinct(d[ix], 1, INT64_MAX, INT64_MIN); /* no exceptions */
  ck_distinct(d[pos], 1, -99, -99);
  ck_distinct(d[q], 1, -97, -97);
  ck_distinct(d[mv], 1, -97, -89);
  ck_distinct(d[neg], 1, 89, 97);
  ck_distinct(d[sub], 1, 99, 99);
  ck_distinct(d[mul], 1, 9603, 9603);
  /* where(cond, idx, 2 - q): idx's none and 2 - q's range [-3, 99], or
  ** 2 - q's {99} and idx's [0, 3]: the narrower */
  ck_distinct(d[both], 1, 0, 99);
  ck_distinct(d[other], 0, 0, 0);
  ck_distinct(d[tsq], 0, 0, 0);
  ck_distinct(d[map], 0, 0, 0);
  ck_distinct(d[isb], 0, 0, 0);
  ck_distinct(d[tok], 0, 0, 0);
  ck_distinct(d[st], 1, INT64_MAX, INT64_MIN);
  /* the check mode: mv's values at one input, then a kept static value
  ** made a repeat behind the evaluator's back */
  ir.outputs = malloc(sizeof(int) * 2);
  ir.outputs[0] = mv;
  ir.outputs[1] = st;
  ir.noutputs = 2;
  rasp_eval *ev = raspE_new(&ir);
  raspE_set_check_values(ev, 1);
  int64_t tk[4] = {1, 2, 3, 4}; /* position 1 holds 2: pos -99 there */
  rasp_error err;
  memset(&err, 0, sizeof err);
  ck_assert_msg(raspE_run(ev, 1, tk, &err), "%s", err.msg);
  rasp_elem *v = (rasp_elem *)raspE_value(ev, mv, 0);
  ck_assert(v && v[0].num == 2 && v[1].num == -89 && v[2].num == -89 && v[3].num == -89);
  v = (rasp_elem *)raspE_value(ev, st, 0);
  ck_assert(v && v[0].num == 2 && v[3].num == 5);
  v[3] = I(2); /* within its value fact [2, 5], but a repeat */
  ck_assert(!raspE_run(ev, 1, tk, &err));
  ck_assert_msg(strstr(err.msg, "held twice") != NULL, "%s", err.msg);
  raspE_free(ev);
  free(vf);
  free(d);
  raspI_free(&ir);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("values");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_transfer);
  tcase_add_test(tc, test_holds);
  tcase_add_test(tc, test_random_graphs);
  tcase_add_test(tc, test_check_mode);
  tcase_add_test(tc, test_distinct);
  suite_add_tcase(s, tc);
  return s;
}

RASP_CHECK_MAIN(make_suite())
