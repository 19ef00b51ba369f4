/*
** test_eval.c -- element arithmetic, the evaluator and layer analysis, on
** IRs built by hand.
*/
#include <check.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reval.h"
#include "rfacts.h"
#include "rir.h"
#include "rlayers.h"
#include "rverify.h"

#include "check_main.h"

/* ---- helpers */

typedef enum { F_PRED, F_DOUBLE, F_HALFSUM, F_SYM, F_BOOM, F_TABLE } fkind;
typedef struct tfn {
  fkind kind;
  rasp_pred pred; /* F_PRED: which comparison the custom predicate does */
} tfn;

typedef struct tuser {
  long calls;
} tuser;

/* Rational keys: sorted paths (integers over a common denominator, or the
** element comparator when that does not fit or symbols occur) and the
** element-wise comparisons, against the matrix and raspI_elem_cmp.  Keys
** come from a table: small denominators (one common denominator), huge
** numerators and denominators (no common denominator in 64 bits, or
** scaled numerators that overflow), and symbols. */
#define BIGM INT64_MAX
static const rasp_elem key_tab[] = {
    /* 0-7: small */
    {1, 2}, {-3, 4}, {5, 3}, {2, 7}, {1, RASP_DEN_BOOL}, {-1, 1}, {0, 1},
    {7, 6},
    /* 8-15: near overflow */
    {BIGM, 2}, {-BIGM, 3}, {BIGM, 5}, {BIGM - 2, BIGM}, {1, BIGM},
    {-4611686018427387903LL, 5}, {BIGM, 1}, {-BIGM, 1},
    /* 16-23: symbols among numbers */
    {3, RASP_DEN_SYM}, {1, 3}, {0, RASP_DEN_SYM}, {-2, 1}, {0, RASP_DEN_BOOL},
    {3, RASP_DEN_SYM}, {9, 4}, {-5, 2},
    /* 24-31: one large common denominator, scaled values near the limit */
    {4611686018427387905LL, 7}, {1, 4611686018427387905LL},
    {2305843009213693952LL, 3}, {-2305843009213693953LL, 2}, {BIGM, 6},
    {-BIGM, 4}, {1, 1}, {0, RASP_DEN_BOOL},
};
#undef BIGM

static int test_call(void *user, void *fn, int nargs, const rasp_elem *args,
                     rasp_elem *out, rasp_error *err) {
  tuser *u = user;
  const tfn *f = fn;
  __atomic_add_fetch(&u->calls, 1, __ATOMIC_RELAXED);
  switch (f->kind) {
  case F_PRED: {
    ck_assert_int_eq(nargs, 2);
    int c = raspI_elem_cmp(args[0], args[1]), r = 0;
    switch (f->pred) {
    case RASP_PRED_EQ: r = c == 0; break;
    case RASP_PRED_NE: r = c != 0; break;
    case RASP_PRED_LT: r = c < 0; break;
    case RASP_PRED_LE: r = c <= 0; break;
    case RASP_PRED_GT: r = c > 0; break;
    case RASP_PRED_GE: r = c >= 0; break;
    case RASP_PRED_TRUE: r = 1; break;
    default: r = 0; break;
    }
    out->num = r;
    out->den = RASP_DEN_BOOL;
    return 1;
  }
  case F_DOUBLE:
    out->num = args[0].num * 2;
    out->den = 1;
    return 1;
  case F_HALFSUM: /* (x + y) / 2, exact, for seq_map truncation */
    return raspI_elem_binop(RASP_BIN_DIV,
                            (rasp_elem){args[0].num + args[1].num, 1},
                            (rasp_elem){2, 1}, out, err);
  case F_SYM:
    out->num = args[0].num;
    out->den = RASP_DEN_SYM;
    return 1;
  case F_BOOM:
    raspR_setnopos(err, "boom");
    return 0;
  case F_TABLE: {
    int64_t i = args[0].num % 32; /* x -> key_tab[x mod 32] */
    *out = key_tab[i < 0 ? i + 32 : i];
    return 1;
  }
  }
  return 0;
}

static const char *test_symname(void *user, int64_t id) {
  (void)user;
  static const char *names[] = {"a", "b", "c"};
  return id >= 0 && id < 3 ? names[id] : NULL;
}

static tuser g_user_unused;

static void ir_setup(rasp_ir *ir, int n, tuser *u) {
  raspI_init(ir, n);
  ir->call = test_call;
  ir->symname = test_symname;
  ir->user = u ? u : &g_user_unused;
}

static int add(rasp_ir *ir, rasp_op op, rasp_type t, int a, int b, int c) {
  rasp_ir_node nd;
  memset(&nd, 0, sizeof nd);
  nd.op = op;
  nd.type = t;
  nd.nin = raspI_op_arity(op);
  nd.in[0] = a;
  nd.in[1] = b;
  nd.in[2] = c;
  nd.pos.line = ir->nnodes + 1; /* lets tests see which node an error names */
  return raspI_add(ir, &nd);
}

/* A fresh IR of length n with the input tokens (*t) and indices (*ix). */
static void ir_with_input(rasp_ir *ir, int n, tuser *u, int *t, int *ix) {
  ir_setup(ir, n, u);
  *t = add(ir, RASP_OP_INPUT, RASP_T_INT, 0, 0, 0);
  *ix = add(ir, RASP_OP_INDICES, RASP_T_INT, 0, 0, 0);
}

static rasp_elem I(int64_t v) { return (rasp_elem){v, 1}; }
static rasp_elem R(int64_t p, int64_t q) { return (rasp_elem){p, q}; }
static rasp_elem BOOLV(int v) { return (rasp_elem){v, RASP_DEN_BOOL}; }
static rasp_elem SYM(int64_t v) { return (rasp_elem){v, RASP_DEN_SYM}; }

static int n_input(rasp_ir *ir) { return add(ir, RASP_OP_INPUT, RASP_T_INT, 0, 0, 0); }
static int n_indices(rasp_ir *ir) {
  return add(ir, RASP_OP_INDICES, RASP_T_INT, 0, 0, 0);
}
static int n_full(rasp_ir *ir, rasp_elem c) {
  int id = add(ir, RASP_OP_FULL, RASP_T_ANY, 0, 0, 0);
  ir->nodes[id].c = c;
  return id;
}
static int n_bin(rasp_ir *ir, rasp_binop op, int a, int b) {
  int id = add(ir, RASP_OP_BINARY, RASP_T_ANY, a, b, 0);
  ir->nodes[id].aux = op;
  return id;
}
static int n_select(rasp_ir *ir, int keys, int queries, rasp_pred p,
                    int causal, const tfn *fn) {
  int id = add(ir, RASP_OP_SELECT, RASP_T_SEL, keys, queries, 0);
  ir->nodes[id].aux = p;
  ir->nodes[id].flags = causal ? RASP_CAUSAL : 0;
  ir->nodes[id].fn = (void *)fn;
  return id;
}
static int n_head(rasp_ir *ir, rasp_op op, int sel, int vals, rasp_elem dflt) {
  int id = add(ir, op, RASP_T_ANY, sel, vals, 0);
  ir->nodes[id].c = dflt;
  return id;
}
static int n_fn(rasp_ir *ir, rasp_op op, const tfn *fn, int a, int b) {
  int id = add(ir, op, RASP_T_ANY, a, b, 0);
  ir->nodes[id].fn = (void *)fn;
  return id;
}
static void set_outputs(rasp_ir *ir, int nout, const int *outs) {
  ir->outputs = realloc(ir->outputs, sizeof(int) * (size_t)nout);
  memcpy(ir->outputs, outs, sizeof(int) * (size_t)nout);
  ir->noutputs = nout;
}
static void out1(rasp_ir *ir, int id) { set_outputs(ir, 1, &id); }

#define ck_elem(e, N, D)                                                       \
  do {                                                                         \
    rasp_elem e_ = (e);                                                        \
    ck_assert_msg(e_.num == (N) && e_.den == (D),                              \
                  "got %lld/%lld, want %lld/%lld", (long long)e_.num,          \
                  (long long)e_.den, (long long)(N), (long long)(D));          \
  } while (0)

static rasp_elem bin(rasp_binop op, rasp_elem a, rasp_elem b) {
  rasp_error err = {0};
  rasp_elem r = {0, 0};
  ck_assert_msg(raspI_elem_binop(op, a, b, &r, &err), "%s", err.msg);
  return r;
}
static const char *bin_err(rasp_binop op, rasp_elem a, rasp_elem b) {
  static rasp_error err;
  memset(&err, 0, sizeof err);
  rasp_elem r;
  ck_assert(!raspI_elem_binop(op, a, b, &r, &err));
  ck_assert(err.set);
  return err.msg;
}

/* ---- element arithmetic */

START_TEST(test_arith) {
  ck_elem(bin(RASP_BIN_FLOORDIV, I(-7), I(2)), -4, 1);
  ck_elem(bin(RASP_BIN_FLOORDIV, I(7), I(-2)), -4, 1);
  ck_elem(bin(RASP_BIN_FLOORDIV, I(-7), I(-2)), 3, 1);
  ck_elem(bin(RASP_BIN_MOD, I(-7), I(2)), 1, 1);
  ck_elem(bin(RASP_BIN_MOD, I(7), I(-2)), -1, 1);
  ck_elem(bin(RASP_BIN_MOD, I(-7), I(-2)), -1, 1);
  ck_elem(bin(RASP_BIN_MOD, R(7, 2), I(2)), 3, 2);
  ck_elem(bin(RASP_BIN_FLOORDIV, R(-1, 2), I(1)), -1, 1);
  ck_elem(bin(RASP_BIN_DIV, I(2), I(4)), 1, 2);
  ck_elem(bin(RASP_BIN_DIV, I(1), I(-2)), -1, 2);
  ck_elem(bin(RASP_BIN_DIV, I(6), I(3)), 2, 1);
  ck_elem(bin(RASP_BIN_ADD, R(1, 2), R(1, 3)), 5, 6);
  ck_elem(bin(RASP_BIN_SUB, R(1, 2), R(1, 2)), 0, 1);
  ck_elem(bin(RASP_BIN_MUL, R(2, 3), R(3, 2)), 1, 1);
  ck_elem(bin(RASP_BIN_ADD, BOOLV(1), BOOLV(1)), 2, 1);
  ck_elem(bin(RASP_BIN_POW, I(-2), I(3)), -8, 1);
  ck_elem(bin(RASP_BIN_POW, I(2), I(-2)), 1, 4);
  ck_elem(bin(RASP_BIN_POW, R(-2, 3), I(2)), 4, 9);
  ck_elem(bin(RASP_BIN_POW, I(5), I(0)), 1, 1);
  ck_elem(bin(RASP_BIN_POW, I(1), I(INT64_MAX)), 1, 1);
  ck_assert_str_eq(bin_err(RASP_BIN_POW, I(2), I(64)),
                   "integer overflow (value does not fit in 64 bits)");
  ck_assert_str_eq(bin_err(RASP_BIN_ADD, I(INT64_MAX), I(1)),
                   "integer overflow (value does not fit in 64 bits)");
  ck_assert_str_eq(bin_err(RASP_BIN_MUL, I(INT64_MIN), I(-1)),
                   "integer overflow (value does not fit in 64 bits)");
  ck_assert_str_eq(bin_err(RASP_BIN_DIV, I(1), I(0)), "division by zero");
  ck_assert_str_eq(bin_err(RASP_BIN_FLOORDIV, I(1), I(0)), "division by zero");
  ck_assert_str_eq(bin_err(RASP_BIN_ADD, SYM(1), I(1)), "arithmetic on a symbol");
  bin_err(RASP_BIN_POW, I(0), I(-1));
  bin_err(RASP_BIN_BITAND, R(1, 2), I(1));
  /* comparisons */
  ck_elem(bin(RASP_BIN_EQ, BOOLV(1), I(1)), 1, -1);
  ck_elem(bin(RASP_BIN_EQ, SYM(1), I(1)), 0, -1);
  ck_elem(bin(RASP_BIN_EQ, SYM(1), SYM(1)), 1, -1);
  ck_elem(bin(RASP_BIN_NE, SYM(1), SYM(2)), 1, -1);
  ck_elem(bin(RASP_BIN_LT, R(1, 3), R(1, 2)), 1, -1);
  ck_elem(bin(RASP_BIN_GE, I(-1), BOOLV(0)), 0, -1);
  ck_elem(bin(RASP_BIN_LT, I(1000), SYM(0)), 1, -1);
  ck_elem(bin(RASP_BIN_AND, I(2), BOOLV(1)), 1, -1);
  ck_elem(bin(RASP_BIN_OR, I(0), R(0, 1)), 0, -1);
  ck_elem(bin(RASP_BIN_BITAND, BOOLV(1), BOOLV(0)), 0, -1);
  ck_elem(bin(RASP_BIN_BITXOR, BOOLV(1), BOOLV(0)), 1, -1);
  ck_elem(bin(RASP_BIN_BITOR, I(4), I(1)), 5, 1);
  ck_elem(bin(RASP_BIN_BITAND, BOOLV(1), I(3)), 1, 1);
  ck_elem(bin(RASP_BIN_MIN, I(3), R(5, 2)), 5, 2);
  ck_elem(bin(RASP_BIN_MAX, SYM(0), I(9)), 0, 0);
  /* unary */
  rasp_error err = {0};
  rasp_elem r;
  ck_assert(raspI_elem_unop(RASP_UN_INVERT, BOOLV(1), &r, &err));
  ck_elem(r, 0, -1);
  ck_assert(raspI_elem_unop(RASP_UN_INVERT, I(5), &r, &err));
  ck_elem(r, -6, 1);
  ck_assert(raspI_elem_unop(RASP_UN_NEG, BOOLV(1), &r, &err));
  ck_elem(r, -1, 1);
  ck_assert(raspI_elem_unop(RASP_UN_ABS, R(-3, 4), &r, &err));
  ck_elem(r, 3, 4);
  ck_assert(raspI_elem_unop(RASP_UN_NOT, I(0), &r, &err));
  ck_elem(r, 1, -1);
  ck_assert(!raspI_elem_unop(RASP_UN_NEG, I(INT64_MIN), &r, &err));
  ck_assert(!raspI_elem_unop(RASP_UN_NEG, SYM(0), &r, &err));
  /* trunc, format */
  ck_elem(raspI_elem_trunc(R(-3, 2)), -1, 1);
  ck_elem(raspI_elem_trunc(R(7, 2)), 3, 1);
  ck_elem(raspI_elem_trunc(BOOLV(1)), 1, 1);
  ck_elem(raspI_elem_trunc(SYM(2)), 2, 0);
  rasp_ir ir;
  ir_setup(&ir, 1, NULL);
  char buf[64];
  raspI_elem_format(&ir, R(-1, 2), buf, sizeof buf);
  ck_assert_str_eq(buf, "-1/2");
  raspI_elem_format(&ir, I(-12), buf, sizeof buf);
  ck_assert_str_eq(buf, "-12");
  raspI_elem_format(&ir, BOOLV(1), buf, sizeof buf);
  ck_assert_str_eq(buf, "True");
  raspI_elem_format(&ir, BOOLV(0), buf, sizeof buf);
  ck_assert_str_eq(buf, "False");
  raspI_elem_format(&ir, SYM(1), buf, sizeof buf);
  ck_assert_str_eq(buf, "b");
  raspI_elem_format(&ir, SYM(7), buf, sizeof buf);
  ck_assert_str_eq(buf, "<sym 7>");
  ck_assert_int_eq(raspI_elem_cmp(SYM(0), I(5)), 1);
  ck_assert_int_eq(raspI_elem_cmp(BOOLV(1), I(1)), 0);
  ck_assert_str_eq(raspI_op_name(RASP_OP_AGGR_MEAN), "aggr_mean");
  ck_assert_str_eq(raspI_pred_name(RASP_PRED_LE), "leq");
  ck_assert_int_eq(raspI_op_component(RASP_OP_SEL_WIDTH), RASP_COMP_ATTN);
  raspI_free(&ir);
}
END_TEST

/* ---- small programs */

static rasp_eval *run_ok(rasp_ir *ir, int B, const int64_t *toks) {
  rasp_eval *ev = raspE_new(ir);
  rasp_error err = {0};
  ck_assert_msg(raspE_run(ev, B, toks, &err), "%s", err.msg);
  return ev;
}

static void check_ints(rasp_eval *ev, int node, int b, const int64_t *want,
                       int n) {
  const rasp_elem *v = raspE_value(ev, node, b);
  ck_assert_ptr_nonnull(v);
  for (int i = 0; i < n; i++) ck_elem(v[i], want[i], 1);
}

START_TEST(test_where_and_binary) {
  rasp_ir ir;
  ir_setup(&ir, 5, NULL);
  int t = n_input(&ir);
  int two = n_full(&ir, I(2));
  int cond = n_bin(&ir, RASP_BIN_GT, t, two);
  int neg = n_full(&ir, I(-1));
  int w = add(&ir, RASP_OP_WHERE, RASP_T_INT, cond, t, neg);
  int h = n_bin(&ir, RASP_BIN_DIV, t, two);
  int outs[] = {w, h};
  set_outputs(&ir, 2, outs);
  int64_t toks[] = {1, 3, 2, 5, 0, 4, 4, 4, 4, 4};
  rasp_eval *ev = run_ok(&ir, 2, toks);
  check_ints(ev, w, 0, (int64_t[]){-1, 3, -1, 5, -1}, 5);
  check_ints(ev, w, 1, (int64_t[]){4, 4, 4, 4, 4}, 5);
  const rasp_elem *c = raspE_value(ev, cond, 0);
  ck_elem(c[1], 1, -1);
  ck_elem(c[0], 0, -1);
  ck_elem(raspE_value(ev, h, 0)[0], 1, 2);
  ck_assert_ptr_null(raspE_value(ev, w, 2));
  raspE_free(ev);
  raspI_free(&ir);
}
END_TEST

/* Integers and booleans plus or minus numbers of the key table (small and
** near-overflow rationals), both ways round, against raspI_elem_binop:
** the same values, or an error from the run where an element overflows. */
START_TEST(test_int_rat_arith) {
  static const tfn ktab = {F_TABLE, 0};
  srand(99u);
  static const int blocks[] = {0, 8, 24};
  for (int rep = 0; rep < 36; rep++) {
    int n = 1 + rand() % 9;
    int64_t toks[9];
    int block = blocks[rep % 3];
    for (int i = 0; i < n; i++) toks[i] = block + rand() % 8;
    for (int op = 0; op < 2; op++)
      for (int form = 0; form < 4; form++) {
        rasp_ir ir;
        tuser u = {0};
        ir_setup(&ir, n, &u);
        int t = n_input(&ir);
        int k = n_fn(&ir, RASP_OP_MAP, &ktab, t, 0);
        int side = form < 2 ? t : n_bin(&ir, RASP_BIN_GT, t, n_full(&ir, I(block + 3)));
        rasp_binop bop = op ? RASP_BIN_SUB : RASP_BIN_ADD;
        int r = form % 2 ? n_bin(&ir, bop, side, k) : n_bin(&ir, bop, k, side);
        out1(&ir, r);
        rasp_eval *ev = raspE_new(&ir);
        rasp_error err = {0};
        int ran = raspE_run(ev, 1, toks, &err);
        const rasp_elem *kv = ran ? raspE_value(ev, k, 0) : NULL;
        const rasp_elem *sv = ran ? raspE_value(ev, side, 0) : NULL;
        const rasp_elem *rv = ran ? raspE_value(ev, r, 0) : NULL;
        int want_ok = 1;
        for (int i = 0; i < n; i++) {
          rasp_elem kk = key_tab[toks[i] % 32];
          rasp_elem ss = form < 2 ? I(toks[i]) : BOOLV(toks[i] > block + 3), w;
          rasp_error e2 = {0};
          int ok = form % 2 ? raspI_elem_binop(bop, ss, kk, &w, &e2)
                            : raspI_elem_binop(bop, kk, ss, &w, &e2);
          if (!ok) {
            want_ok = 0;
            continue;
          }
          if (!ran) continue;
          ck_assert(kv[i].num == kk.num && kv[i].den == kk.den);
          ck_assert(sv[i].num == ss.num && sv[i].den == ss.den);
          ck_assert_msg(rv[i].num == w.num && rv[i].den == w.den,
                        "%s form %d: %lld/%lld and %lld/%lld gave %lld/%lld, want %lld/%lld",
                        raspI_binop_name(bop), form, (long long)kk.num, (long long)kk.den,
                        (long long)ss.num, (long long)ss.den, (long long)rv[i].num,
                        (long long)rv[i].den, (long long)w.num, (long long)w.den);
        }
        ck_assert_msg(ran == want_ok, "run %d, elements %d: %s", ran, want_ok, err.msg);
        raspE_free(ev);
        raspI_free(&ir);
      }
  }
}
END_TEST

START_TEST(test_error_position) {
  rasp_ir ir;
  ir_setup(&ir, 3, NULL);
  int t = n_input(&ir);
  int z = n_full(&ir, I(0));
  int d = n_bin(&ir, RASP_BIN_FLOORDIV, t, z);
  out1(&ir, d);
  rasp_eval *ev = raspE_new(&ir);
  rasp_error err = {0};
  int64_t toks[] = {1, 2, 3};
  ck_assert(!raspE_run(ev, 1, toks, &err));
  ck_assert_str_eq(err.msg, "division by zero");
  ck_assert_int_eq(err.pos.line, d + 1);
  ck_assert_ptr_null(raspE_value(ev, t, 0));
  raspE_free(ev);
  raspI_free(&ir);
}
END_TEST

START_TEST(test_aggr_mean) {
  rasp_ir ir;
  ir_setup(&ir, 2, NULL);
  int t = n_input(&ir);
  int all = n_select(&ir, t, t, RASP_PRED_TRUE, 0, NULL);
  int m = n_head(&ir, RASP_OP_AGGR_MEAN, all, t, I(0));
  int none = n_select(&ir, t, t, RASP_PRED_FALSE, 0, NULL);
  int d = n_head(&ir, RASP_OP_AGGR_MEAN, none, t, R(5, 2));
  int big = n_full(&ir, I(100));
  int eq = n_select(&ir, t, big, RASP_PRED_EQ, 0, NULL); /* nothing equals */
  int d2 = n_head(&ir, RASP_OP_AGGR_MEAN, eq, t, R(-7, 2));
  int exact = n_head(&ir, RASP_OP_AGGREGATE, all, t, I(0));
  int outs[] = {m, d, d2, exact};
  set_outputs(&ir, 4, outs);
  int64_t toks[] = {-1, -2, 1, 2};
  rasp_eval *ev = run_ok(&ir, 2, toks);
  check_ints(ev, m, 0, (int64_t[]){-1, -1}, 2); /* -3/2 truncates to -1 */
  check_ints(ev, m, 1, (int64_t[]){1, 1}, 2);
  check_ints(ev, d, 0, (int64_t[]){2, 2}, 2);
  check_ints(ev, d2, 1, (int64_t[]){-3, -3}, 2);
  ck_elem(raspE_value(ev, exact, 0)[0], -3, 2);
  ck_elem(raspE_value(ev, exact, 1)[1], 3, 2);
  raspE_free(ev);
  raspI_free(&ir);
}
END_TEST

START_TEST(test_causal) {
  rasp_ir ir;
  ir_setup(&ir, 4, NULL);
  int t = n_input(&ir);
  int sc = n_select(&ir, t, t, RASP_PRED_TRUE, 1, NULL);
  int sn = n_select(&ir, t, t, RASP_PRED_TRUE, 0, NULL);
  int wc = n_head(&ir, RASP_OP_SEL_WIDTH, sc, -1, I(0));
  int wn = n_head(&ir, RASP_OP_SEL_WIDTH, sn, -1, I(0));
  ir.nodes[wc].nin = ir.nodes[wn].nin = 1;
  int pm = n_head(&ir, RASP_OP_AGGR_MAX, sc, t, I(0)); /* running max */
  int ce = n_select(&ir, t, t, RASP_PRED_EQ, 1, NULL);
  int ceq = n_head(&ir, RASP_OP_SEL_WIDTH, ce, -1, I(0));
  ir.nodes[ceq].nin = 1;
  int outs[] = {wc, wn, pm, ceq};
  set_outputs(&ir, 4, outs);
  int64_t toks[] = {3, 1, 3, 4};
  rasp_eval *ev = run_ok(&ir, 1, toks);
  check_ints(ev, wc, 0, (int64_t[]){1, 2, 3, 4}, 4);
  check_ints(ev, wn, 0, (int64_t[]){4, 4, 4, 4}, 4);
  check_ints(ev, pm, 0, (int64_t[]){3, 3, 3, 4}, 4);
  check_ints(ev, ceq, 0, (int64_t[]){1, 1, 2, 1}, 4);
  rasp_error err = {0};
  const unsigned char *m = raspE_selector(ev, sc, 0, &err);
  ck_assert_ptr_nonnull(m);
  for (int q = 0; q < 4; q++)
    for (int k = 0; k < 4; k++) ck_assert_int_eq(m[q * 4 + k], k <= q);
  ck_assert_ptr_null(raspE_value(ev, sc, 0));
  ck_assert_ptr_null(raspE_selector(ev, wc, 0, &err));
  raspE_free(ev);
  raspI_free(&ir);
}
END_TEST

/* The fast paths against a custom predicate doing the same comparison,
** which always goes through the materialised matrix. */
static const rasp_op head_ops[] = {RASP_OP_SEL_WIDTH, RASP_OP_AGGR_MEAN,
                                   RASP_OP_AGGREGATE, RASP_OP_AGGR_MAX,
                                   RASP_OP_AGGR_MIN};
static tfn pred_fns[RASP_PRED__COUNT];

/* pred_fns[p]: a custom predicate doing comparison p (always the matrix) */
static void init_pred_fns(void) {
  for (int p = 0; p < RASP_PRED__COUNT; p++) {
    pred_fns[p].kind = F_PRED;
    pred_fns[p].pred = (rasp_pred)p;
  }
}

/* outs[] holds pairs (fast path, matrix path) of the same head: after a
** run of B inputs, each pair must agree on every position.  `what` says
** which run this is for the failure message. */
static void check_pairs(rasp_eval *ev, const rasp_ir *ir, const int *outs, int from, int no,
                        int B, int n, const char *what) {
  for (int h = from; h < no; h += 2)
    for (int b = 0; b < B; b++) {
      const rasp_elem *x = raspE_value(ev, outs[h], b);
      const rasp_elem *y = raspE_value(ev, outs[h + 1], b);
      const rasp_ir_node *nd = &ir->nodes[outs[h]], *sel = &ir->nodes[nd->in[0]];
      for (int i = 0; i < n; i++)
        ck_assert_msg(x[i].num == y[i].num && x[i].den == y[i].den,
                      "%s: head %s (node %d, sel %s/%s, values %d) n %d input %d: "
                      "fast %lld/%lld, matrix %lld/%lld at %d",
                      what, raspI_op_name(nd->op), outs[h], raspI_op_name(sel->op),
                      raspI_pred_name((rasp_pred)sel->aux), nd->nin > 1 ? nd->in[1] : -1,
                      n, b, (long long)x[i].num, (long long)x[i].den,
                      (long long)y[i].num, (long long)y[i].den, i);
    }
}

/* The same run in reference mode (raspE_set_reference: the matrix
** definition, reval_ref.c): every output of ev the same, element for
** element. */
static void check_reference(rasp_ir *ir, rasp_eval *ev, int B, const int64_t *toks,
                            const char *what) {
  rasp_eval *evr = raspE_new(ir);
  raspE_set_reference(evr, 1);
  rasp_error err = {0};
  ck_assert_msg(raspE_run(evr, B, toks, &err), "%s: reference mode: %s", what, err.msg);
  for (int o = 0; o < ir->noutputs; o++)
    for (int b = 0; b < B; b++) {
      const rasp_elem *x = raspE_value(ev, ir->outputs[o], b);
      const rasp_elem *y = raspE_value(evr, ir->outputs[o], b);
      ck_assert(x && y);
      for (int i = 0; i < ir->n; i++)
        ck_assert_msg(x[i].num == y[i].num && x[i].den == y[i].den,
                      "%s: node %d (%s) input %d at %d: fast %lld/%lld, reference %lld/%lld", what,
                      ir->outputs[o], raspI_op_name(ir->nodes[ir->outputs[o]].op), b, i,
                      (long long)x[i].num, (long long)x[i].den, (long long)y[i].num,
                      (long long)y[i].den);
    }
  raspE_free(evr);
}

/* The same head over a fast selector and its matrix twin: a pair of outputs
** for check_pairs. */
static void add_head_pair(rasp_ir *ir, rasp_op op, int fast, int slow, int vals,
                          rasp_elem dflt, int *outs, int *no) {
  int nin = op == RASP_OP_SEL_WIDTH ? 1 : 2;
  int a = n_head(ir, op, fast, nin == 2 ? vals : -1, dflt);
  int b = n_head(ir, op, slow, nin == 2 ? vals : -1, dflt);
  ir->nodes[a].nin = ir->nodes[b].nin = nin;
  outs[(*no)++] = a;
  outs[(*no)++] = b;
}

static void compare_paths(rasp_pred pred, int causal, unsigned seed) {
  init_pred_fns();
  srand(seed);
  static const int lens[] = {1, 2, 3, 5, 8, 13, 31};
  for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
    int n = lens[li];
    rasp_ir ir;
    tuser u = {0};
    int t, ix;
    ir_with_input(&ir, n, &u, &t, &ix);
    int three = n_full(&ir, I(3));
    int five = n_full(&ir, I(5));
    /* queries: (3 t + 1) % 5, values: t - indices (negative, so means
       exercise truncation toward zero and rational results) */
    int q = n_bin(&ir, RASP_BIN_MOD,
                  n_bin(&ir, RASP_BIN_ADD, n_bin(&ir, RASP_BIN_MUL, t, three),
                        n_full(&ir, I(1))),
                  five);
    int v = n_bin(&ir, RASP_BIN_SUB, t, ix);
    int fast = n_select(&ir, t, q, pred, causal, NULL);
    int slow = n_select(&ir, t, q, RASP_PRED_CUSTOM, causal, &pred_fns[pred]);
    int outs[10], no = 0;
    for (size_t h = 0; h < 5; h++) add_head_pair(&ir, head_ops[h], fast, slow, v, R(-9, 2), outs, &no);
    set_outputs(&ir, no, outs);
    rasp_eval *ev = raspE_new(&ir);
    for (int rep = 0; rep < 20; rep++) {
      int B = 1 + rand() % 4;
      int64_t *toks = malloc(sizeof *toks * (size_t)(B * n));
      int range = 1 + rand() % 6; /* small ranges force duplicates */
      for (int i = 0; i < B * n; i++) toks[i] = rand() % range;
      rasp_error err = {0};
      ck_assert_msg(raspE_run(ev, B, toks, &err), "%s", err.msg);
      char what[64];
      snprintf(what, sizeof what, "pred %s causal %d", raspI_pred_name(pred), causal);
      check_pairs(ev, &ir, outs, 0, no, B, n, what);
      if (rep < 4) check_reference(&ir, ev, B, toks, what);
      free(toks);
    }
    raspE_free(ev);
    raspI_free(&ir);
  }
}

START_TEST(test_paths_agree) {
  rasp_pred preds[] = {RASP_PRED_EQ, RASP_PRED_NE, RASP_PRED_LT, RASP_PRED_LE,
                       RASP_PRED_GT, RASP_PRED_GE, RASP_PRED_TRUE,
                       RASP_PRED_FALSE};
  rasp_pred p = preds[_i / 2];
  compare_paths(p, _i % 2, 1234u + (unsigned)_i);
}
END_TEST

/* Conjunctions, windows and value kinds: fast selectors against the same
** selectors made of custom predicates (always the matrix), on values of
** every kind (integers, booleans, both mixed, rationals, symbols). */
static int n_un(rasp_ir *ir, rasp_unop op, int a) {
  int id = add(ir, RASP_OP_UNARY, RASP_T_ANY, a, 0, 0);
  ir->nodes[id].aux = op;
  return id;
}
static int n_and(rasp_ir *ir, int a, int b) {
  return add(ir, RASP_OP_SEL_AND, RASP_T_SEL, a, b, 0);
}

START_TEST(test_paths_agree_kinds) {
  static const tfn sym = {F_SYM, 0};
  init_pred_fns();
  srand(777u + (unsigned)_i);
  static const int lens[] = {1, 2, 3, 7, 16, 33};
  for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
    int n = lens[li];
    rasp_ir ir;
    tuser u = {0};
    int t, ix;
    ir_with_input(&ir, n, &u, &t, &ix);
    int two = n_full(&ir, I(2));
    /* keys and queries of several kinds */
    int tq = n_bin(&ir, RASP_BIN_MOD, n_bin(&ir, RASP_BIN_ADD, t, ix), n_full(&ir, I(3)));
    int big = n_bin(&ir, RASP_BIN_SUB, n_bin(&ir, RASP_BIN_MUL, t, n_full(&ir, I(1000003))),
                    n_full(&ir, I(5000000))); /* wide range, negative */
    int bigq = n_bin(&ir, RASP_BIN_SUB, n_bin(&ir, RASP_BIN_MUL, tq, n_full(&ir, I(1000003))),
                     n_full(&ir, I(5000000)));
    int tb = n_bin(&ir, RASP_BIN_GT, t, two);            /* bools */
    int one = n_full(&ir, I(1));                           /* True == 1 */
    int trat = n_bin(&ir, RASP_BIN_DIV, t, two);          /* rationals */
    int tqr = n_bin(&ir, RASP_BIN_DIV, tq, two);
    /* values of every kind */
    int vint = n_bin(&ir, RASP_BIN_SUB, t, ix);
    int vbool = n_bin(&ir, RASP_BIN_LT, t, n_full(&ir, I(3)));
    int vmix = n_bin(&ir, RASP_BIN_MIN, vbool, n_bin(&ir, RASP_BIN_SUB, t, two));
    int vrat = n_bin(&ir, RASP_BIN_DIV, vint, n_full(&ir, I(3)));
    int vsym = n_fn(&ir, RASP_OP_MAP, &sym, t, 0);
    int vneg = n_un(&ir, RASP_UN_NEG, vint);
    /* 0 or 4e18: sums of two overflow int64 (the direct path's fallback) */
    int vhuge = n_bin(&ir, RASP_BIN_MUL, n_bin(&ir, RASP_BIN_MOD, t, two),
                      n_full(&ir, I(4000000000000000000)));
    int vals[] = {vint, vbool, vmix, vrat, vsym, vneg, vhuge};
    /* selector pairs: fast, matrix */
    int pairs[96][2], np = 0;
#define SEL(k, q, pr, c) n_select(&ir, k, q, pr, c, NULL)
#define CSEL(k, q, pr, c) n_select(&ir, k, q, RASP_PRED_CUSTOM, c, &pred_fns[pr])
#define PAIR(F, S) (pairs[np][0] = (F), pairs[np][1] = (S), np++)
    for (int c = 0; c < 2; c++) {
      PAIR(SEL(t, tq, RASP_PRED_EQ, c), CSEL(t, tq, RASP_PRED_EQ, c));
      PAIR(SEL(big, bigq, RASP_PRED_EQ, c), CSEL(big, bigq, RASP_PRED_EQ, c));
      PAIR(SEL(tb, one, RASP_PRED_EQ, c), CSEL(tb, one, RASP_PRED_EQ, c));
      PAIR(SEL(trat, tqr, RASP_PRED_EQ, c), CSEL(trat, tqr, RASP_PRED_EQ, c));
      PAIR(SEL(vsym, vsym, RASP_PRED_EQ, c), CSEL(vsym, vsym, RASP_PRED_EQ, c));
      /* keys = indices (x[q] gathers): queries in and out of range, booleans
         (True selects position 1), rationals, symbols */
      PAIR(SEL(ix, tq, RASP_PRED_EQ, c), CSEL(ix, tq, RASP_PRED_EQ, c));
      PAIR(SEL(ix, vint, RASP_PRED_EQ, c), CSEL(ix, vint, RASP_PRED_EQ, c));
      PAIR(SEL(ix, tb, RASP_PRED_EQ, c), CSEL(ix, tb, RASP_PRED_EQ, c));
      PAIR(SEL(ix, tqr, RASP_PRED_EQ, c), CSEL(ix, tqr, RASP_PRED_EQ, c));
      PAIR(SEL(ix, bigq, RASP_PRED_EQ, c), CSEL(ix, bigq, RASP_PRED_EQ, c));
      PAIR(SEL(ix, vsym, RASP_PRED_EQ, c), CSEL(ix, vsym, RASP_PRED_EQ, c));
    }
    /* keys whose bounds the evaluator derives instead of scanning (a bound
       too tight would misplace keys in the direct table) */
    {
      int kneg = n_un(&ir, RASP_UN_NEG, vint);
      int kmul = n_bin(&ir, RASP_BIN_MUL, t, n_bin(&ir, RASP_BIN_SUB, ix, two));
      int kmin = n_bin(&ir, RASP_BIN_MIN, t, n_bin(&ir, RASP_BIN_SUB, two, ix));
      int kmax = n_bin(&ir, RASP_BIN_MAX, vneg, n_full(&ir, I(-2)));
      int kw = n_bin(&ir, RASP_BIN_ADD, vbool, vint); /* bools and ints */
      int ksw = n_head(&ir, RASP_OP_SEL_WIDTH, n_select(&ir, t, t, RASP_PRED_EQ, 0, NULL), -1,
                       I(0));
      ir.nodes[ksw].nin = 1;
      int kagg = n_head(&ir, RASP_OP_AGGR_MAX, n_select(&ir, t, tq, RASP_PRED_EQ, 0, NULL),
                        vneg, I(-7));
      int keys[] = {tq, kneg, kmul, kmin, kmax, kw, ksw, kagg};
      for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        int c = (int)(k % 2);
        PAIR(SEL(keys[k], keys[k], RASP_PRED_EQ, c), CSEL(keys[k], keys[k], RASP_PRED_EQ, c));
        PAIR(SEL(keys[k], vint, RASP_PRED_EQ, 1 - c), CSEL(keys[k], vint, RASP_PRED_EQ, 1 - c));
      }
    }
    rasp_pred wp[] = {RASP_PRED_EQ, RASP_PRED_NE, RASP_PRED_LT, RASP_PRED_LE,
                      RASP_PRED_GT, RASP_PRED_GE, RASP_PRED_TRUE, RASP_PRED_FALSE};
    int c = _i % 2;
    for (size_t w = 0; w < sizeof wp / sizeof *wp; w++) {
      /* a window alone, and with one or two equalities */
      PAIR(SEL(ix, ix, wp[w], c), CSEL(ix, ix, wp[w], c));
      PAIR(n_and(&ir, SEL(t, tq, RASP_PRED_EQ, 0), SEL(ix, ix, wp[w], c)),
           n_and(&ir, CSEL(t, tq, RASP_PRED_EQ, 0), CSEL(ix, ix, wp[w], c)));
      PAIR(n_and(&ir, SEL(ix, ix, wp[w], c),
                 n_and(&ir, SEL(trat, tqr, RASP_PRED_EQ, 1), SEL(tb, one, RASP_PRED_EQ, 0))),
           n_and(&ir, CSEL(ix, ix, wp[w], c),
                 n_and(&ir, CSEL(trat, tqr, RASP_PRED_EQ, 1), CSEL(tb, one, RASP_PRED_EQ, 0))));
    }
    PAIR(n_and(&ir, SEL(t, t, RASP_PRED_EQ, c), SEL(big, bigq, RASP_PRED_EQ, 0)),
         n_and(&ir, CSEL(t, t, RASP_PRED_EQ, c), CSEL(big, bigq, RASP_PRED_EQ, 0)));
    PAIR(n_and(&ir, SEL(t, tq, RASP_PRED_EQ, c), SEL(tq, t, RASP_PRED_LT, 0)),
         n_and(&ir, CSEL(t, tq, RASP_PRED_EQ, c), CSEL(tq, t, RASP_PRED_LT, 0)));
    PAIR(SEL(trat, trat, RASP_PRED_LT, 0), CSEL(trat, trat, RASP_PRED_LT, 0));
    PAIR(SEL(trat, tqr, RASP_PRED_GE, 0), CSEL(trat, tqr, RASP_PRED_GE, 0));
    PAIR(SEL(t, tq, RASP_PRED_NE, 1), CSEL(t, tq, RASP_PRED_NE, 1));
    PAIR(SEL(t, t, RASP_PRED_LE, 1), CSEL(t, t, RASP_PRED_LE, 1));
#undef SEL
#undef CSEL
#undef PAIR
    int outs[8000], no = 0;
    for (int s = 0; s < np; s++)
      for (size_t h = 0; h < 5; h++)
        for (size_t vi = 0; vi < sizeof vals / sizeof *vals; vi++) {
          rasp_op op = head_ops[h];
          if (op == RASP_OP_SEL_WIDTH && vi) continue;
          if (vals[vi] == vsym && (op == RASP_OP_AGGR_MEAN || op == RASP_OP_AGGREGATE))
            continue;
          /* exact means of huge values may not fit a rational of int64s */
          if (vals[vi] == vhuge && op == RASP_OP_AGGREGATE) continue;
          rasp_elem dflt = vi == 1 ? BOOLV(1) : R(-9, 2);
          add_head_pair(&ir, op, pairs[s][0], pairs[s][1], vals[vi], dflt, outs, &no);
        }
    set_outputs(&ir, no, outs);
    rasp_eval *ev = raspE_new(&ir);
    for (int rep = 0; rep < 8; rep++) {
      int B = 1 + rand() % 3;
      int64_t *toks = malloc(sizeof *toks * (size_t)(B * n));
      int range = 1 + rand() % 6;
      for (int i = 0; i < B * n; i++) toks[i] = rand() % range - (rep & 1);
      rasp_error err = {0};
      ck_assert_msg(raspE_run(ev, B, toks, &err), "%s", err.msg);
      check_pairs(ev, &ir, outs, 0, no, B, n, "kinds");
      if (rep < 1) check_reference(&ir, ev, B, toks, "kinds");
      free(toks);
    }
    raspE_free(ev);
    raspI_free(&ir);
  }
}
END_TEST


START_TEST(test_paths_agree_rational) {
  static const tfn ktab = {F_TABLE, 0};
  init_pred_fns();
  srand(4242u + (unsigned)_i);
  static const int lens[] = {1, 2, 5, 17, 40};
  static const rasp_pred preds[] = {RASP_PRED_LT, RASP_PRED_LE, RASP_PRED_GT,
                                    RASP_PRED_GE, RASP_PRED_NE, RASP_PRED_EQ};
  static const rasp_binop cmps[] = {RASP_BIN_LT, RASP_BIN_LE, RASP_BIN_GT,
                                    RASP_BIN_GE, RASP_BIN_EQ, RASP_BIN_NE};
  for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
    int n = lens[li];
    rasp_ir ir;
    tuser u = {0};
    int t, ix;
    ir_with_input(&ir, n, &u, &t, &ix);
    int k = n_fn(&ir, RASP_OP_MAP, &ktab, t, 0);
    /* queries: the key of a neighbouring token (same table block) */
    int tq = n_bin(&ir, RASP_BIN_ADD,
                   n_bin(&ir, RASP_BIN_SUB, t,
                         n_bin(&ir, RASP_BIN_MOD, t, n_full(&ir, I(8)))),
                   n_bin(&ir, RASP_BIN_MOD, n_bin(&ir, RASP_BIN_ADD, t, ix),
                         n_full(&ir, I(8))));
    int q = n_fn(&ir, RASP_OP_MAP, &ktab, tq, 0);
    /* sort-like keys: t + i/n */
    int len = n_full(&ir, I(n));
    int sk = n_bin(&ir, RASP_BIN_ADD, t, n_bin(&ir, RASP_BIN_DIV, ix, len));
    int vint = n_bin(&ir, RASP_BIN_SUB, t, ix);
    int vrat = n_bin(&ir, RASP_BIN_DIV, vint, n_full(&ir, I(3)));
    int vals[] = {vint, vrat};
    int outs[600], no = 0;
    int cmpouts[6][2], nc = 0;
    for (size_t c = 0; c < 6; c++) {
      cmpouts[nc][0] = n_bin(&ir, cmps[c], k, q);
      cmpouts[nc][1] = n_bin(&ir, cmps[c], q, k);
      outs[no++] = cmpouts[nc][0];
      outs[no++] = cmpouts[nc][1];
      nc++;
    }
    int pairs[40][2], np = 0;
    for (size_t pi = 0; pi < sizeof preds / sizeof *preds; pi++) {
      rasp_pred pr = preds[pi];
      int kk[3][2] = {{k, k}, {k, q}, {sk, sk}};
      for (int m = 0; m < 3; m++) {
        pairs[np][0] = n_select(&ir, kk[m][0], kk[m][1], pr, 0, NULL);
        pairs[np][1] =
            n_select(&ir, kk[m][0], kk[m][1], RASP_PRED_CUSTOM, 0, &pred_fns[pr]);
        np++;
      }
    }
    int hstart = no;
    for (int s = 0; s < np; s++)
      for (size_t h = 0; h < 5; h++)
        for (int vi = 0; vi < 2; vi++) {
          rasp_op op = head_ops[h];
          if (op == RASP_OP_SEL_WIDTH && vi) continue;
          add_head_pair(&ir, op, pairs[s][0], pairs[s][1], vals[vi], R(-9, 2), outs, &no);
        }
    ck_assert_int_le(no, 600);
    set_outputs(&ir, no, outs);
    rasp_eval *ev = raspE_new(&ir);
    for (int rep = 0; rep < 24; rep++) {
      int B = 1 + rand() % 3;
      int64_t *toks = malloc(sizeof *toks * (size_t)(B * n));
      int block = rep % 5; /* 4: the whole table */
      int range = 1 + rand() % 8;
      for (int i = 0; i < B * n; i++)
        toks[i] = block == 4 ? rand() % 32 : block * 8 + rand() % range;
      rasp_error err = {0};
      ck_assert_msg(raspE_run(ev, B, toks, &err), "%s", err.msg);
      for (int b = 0; b < B; b++) {
        const rasp_elem *kv = raspE_value(ev, k, b), *qv = raspE_value(ev, q, b);
        for (int c = 0; c < nc; c++)
          for (int dir = 0; dir < 2; dir++) {
            const rasp_elem *x = raspE_value(ev, cmpouts[c][dir], b);
            for (int i = 0; i < n; i++) {
              rasp_elem l = dir ? qv[i] : kv[i], r = dir ? kv[i] : qv[i], want;
              rasp_error e2 = {0};
              ck_assert(raspI_elem_binop(cmps[c], l, r, &want, &e2));
              ck_assert_msg(x[i].num == want.num && x[i].den == want.den,
                            "%s %lld/%lld %lld/%lld: got %lld/%lld",
                            raspI_binop_name(cmps[c]), (long long)l.num,
                            (long long)l.den, (long long)r.num, (long long)r.den,
                            (long long)x[i].num, (long long)x[i].den);
            }
          }
      }
      char what[32];
      snprintf(what, sizeof what, "rational block %d", block);
      check_pairs(ev, &ir, outs, hstart, no, B, n, what);
      if (rep < 1) check_reference(&ir, ev, B, toks, what);
      free(toks);
    }
    raspE_free(ev);
    raspI_free(&ir);
  }
}
END_TEST

/* Means that are only compared are kept as unreduced fractions (the
** evaluator skips the gcd).  Each such head has a matrix twin that is an
** output (so always reduced); the comparisons must equal raspI_elem_binop on
** the twin's values, and reading the compared head itself must give the
** reduced value.  Key ranges go from a few values (ranked by counting) to
** thousands apart (sorted). */
START_TEST(test_unreduced_means) {
  init_pred_fns();
  srand(777u);
  static const int lens[] = {1, 2, 5, 17, 40};
  static const rasp_binop cmps[] = {RASP_BIN_LT, RASP_BIN_LE, RASP_BIN_GT,
                                    RASP_BIN_GE, RASP_BIN_EQ, RASP_BIN_NE};
  static const rasp_pred preds[] = {RASP_PRED_LE, RASP_PRED_EQ, RASP_PRED_LT,
                                    RASP_PRED_NE};
  for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
    int n = lens[li];
    rasp_ir ir;
    tuser u = {0};
    int t, ix;
    ir_with_input(&ir, n, &u, &t, &ix);
    int v = n_bin(&ir, RASP_BIN_SUB, n_bin(&ir, RASP_BIN_MOD, t, n_full(&ir, I(7))),
                  n_full(&ir, I(3)));
    int vrat = n_bin(&ir, RASP_BIN_DIV, v, n_full(&ir, I(4)));
    int consts[] = {n_full(&ir, I(0)), n_full(&ir, I(1)), n_full(&ir, R(1, 2)),
                    n_full(&ir, BOOLV(1))};
    int heads[16][2], nh = 0;
    for (size_t pi = 0; pi < sizeof preds / sizeof *preds; pi++)
      for (int vi = 0; vi < 2; vi++) {
        rasp_pred pr = preds[pi];
        int kq = pr == RASP_PRED_LE ? ix : t;
        int fast = n_select(&ir, kq, kq, pr, pr == RASP_PRED_LE, NULL);
        int slow = n_select(&ir, kq, kq, RASP_PRED_CUSTOM, pr == RASP_PRED_LE, &pred_fns[pr]);
        heads[nh][0] = n_head(&ir, RASP_OP_AGGREGATE, fast, vi ? vrat : v, I(0));
        heads[nh][1] = n_head(&ir, RASP_OP_AGGREGATE, slow, vi ? vrat : v, I(0));
        nh++;
      }
    int outs[512], no = 0;
    int cmp_at[16][6][5];
    for (int h = 0; h < nh; h++) {
      outs[no++] = heads[h][1];
      for (int c = 0; c < 6; c++)
        for (int k = 0; k < 5; k++) {
          /* against each constant, and against the next head (raw too) */
          int other = k < 4 ? consts[k] : heads[(h + 1) % nh][0];
          cmp_at[h][c][k] = outs[no++] = k % 2 ? n_bin(&ir, cmps[c], other, heads[h][0])
                                               : n_bin(&ir, cmps[c], heads[h][0], other);
        }
    }
    ck_assert_int_le(no, 512);
    set_outputs(&ir, no, outs);
    rasp_eval *ev = raspE_new(&ir);
    for (int rep = 0; rep < 12; rep++) {
      int B = 1 + rand() % 3;
      int64_t *toks = malloc(sizeof *toks * (size_t)(B * n));
      int64_t spread = rep % 3 == 0 ? 5 : rep % 3 == 1 ? 60 : 100000;
      for (int i = 0; i < B * n; i++) toks[i] = 1 + rand() % spread;
      rasp_error err = {0};
      ck_assert_msg(raspE_run(ev, B, toks, &err), "%s", err.msg);
      for (int b = 0; b < B; b++)
        for (int h = 0; h < nh; h++) {
          const rasp_elem *want = raspE_value(ev, heads[h][1], b);
          const rasp_elem *next = raspE_value(ev, heads[(h + 1) % nh][1], b);
          for (int c = 0; c < 6; c++)
            for (int k = 0; k < 5; k++) {
              const rasp_elem *x = raspE_value(ev, cmp_at[h][c][k], b);
              const rasp_elem *o = k < 4 ? raspE_value(ev, consts[k], b) : next;
              ck_assert_ptr_nonnull(x);
              for (int i = 0; i < n; i++) {
                rasp_elem l = k % 2 ? o[i] : want[i], r = k % 2 ? want[i] : o[i], w;
                rasp_error e2 = {0};
                ck_assert(raspI_elem_binop(cmps[c], l, r, &w, &e2));
                ck_assert_msg(x[i].num == w.num && x[i].den == w.den,
                              "n %d head %d %s %lld/%lld %lld/%lld: got %lld", n, h,
                              raspI_binop_name(cmps[c]), (long long)l.num, (long long)l.den,
                              (long long)r.num, (long long)r.den, (long long)x[i].num);
              }
            }
          /* read directly, the compared head is reduced like its twin */
          const rasp_elem *got = raspE_value(ev, heads[h][0], b);
          for (int i = 0; i < n; i++)
            ck_assert_msg(got[i].num == want[i].num && got[i].den == want[i].den,
                          "n %d head %d at %d: %lld/%lld, want %lld/%lld", n, h, i,
                          (long long)got[i].num, (long long)got[i].den,
                          (long long)want[i].num, (long long)want[i].den);
        }
      free(toks);
    }
    raspE_free(ev);
    raspI_free(&ir);
  }
}
END_TEST

START_TEST(test_histogram) {
  rasp_ir ir;
  ir_setup(&ir, 5, NULL);
  int t = n_input(&ir);
  int s = n_select(&ir, t, t, RASP_PRED_EQ, 0, NULL);
  int w = n_head(&ir, RASP_OP_SEL_WIDTH, s, -1, I(0));
  ir.nodes[w].nin = 1;
  out1(&ir, w);
  int64_t toks[] = {'h', 'e', 'l', 'l', 'o'};
  rasp_eval *ev = run_ok(&ir, 1, toks);
  check_ints(ev, w, 0, (int64_t[]){1, 1, 2, 2, 1}, 5);
  raspE_free(ev);
  raspI_free(&ir);
}
END_TEST

/* length = sel_width(select(tokens, tokens, TRUE));
** opp = length - indices - 1; flip = select(indices, opp, EQ);
** reverse = aggregate(flip, tokens) */
static int build_reverse(rasp_ir *ir, int *len_out) {
  int t = n_input(ir);
  int ix = n_indices(ir);
  int all = n_select(ir, t, t, RASP_PRED_TRUE, 0, NULL);
  int len = n_head(ir, RASP_OP_SEL_WIDTH, all, -1, I(0));
  ir->nodes[len].nin = 1;
  int opp = n_bin(ir, RASP_BIN_SUB, n_bin(ir, RASP_BIN_SUB, len, ix),
                  n_full(ir, I(1)));
  int flip = n_select(ir, ix, opp, RASP_PRED_EQ, 0, NULL);
  int rev = n_head(ir, RASP_OP_AGGREGATE, flip, t, I(0));
  if (len_out) *len_out = len;
  return rev;
}

START_TEST(test_reverse) {
  rasp_ir ir;
  ir_setup(&ir, 5, NULL);
  int len;
  int rev = build_reverse(&ir, &len);
  out1(&ir, rev);
  int64_t toks[] = {1, 2, 3, 4, 5, 9, 9, 8, 7, 0};
  rasp_eval *ev = run_ok(&ir, 2, toks);
  check_ints(ev, rev, 0, (int64_t[]){5, 4, 3, 2, 1}, 5);
  check_ints(ev, rev, 1, (int64_t[]){0, 7, 8, 9, 9}, 5);
  check_ints(ev, len, 1, (int64_t[]){5, 5, 5, 5, 5}, 5);
  raspE_free(ev);
  raspI_free(&ir);
}
END_TEST

/* keep_intermediates = 0: outputs are right, intermediates are gone, and
** buffers are reused across runs of different batch sizes. */
START_TEST(test_drop_intermediates) {
  rasp_ir ir;
  ir_setup(&ir, 6, NULL);
  int len;
  int rev = build_reverse(&ir, &len);
  out1(&ir, rev);
  rasp_eval *ev = raspE_new(&ir);
  raspE_set_keep_intermediates(ev, 0);
  for (int rep = 0; rep < 4; rep++) {
    int B = 1 + rep * 3;
    int64_t *toks = malloc(sizeof *toks * (size_t)(B * 6));
    for (int i = 0; i < B * 6; i++) toks[i] = (i * 7 + rep) % 11;
    rasp_error err = {0};
    ck_assert_msg(raspE_run(ev, B, toks, &err), "%s", err.msg);
    for (int b = 0; b < B; b++) {
      const rasp_elem *v = raspE_value(ev, rev, b);
      ck_assert_ptr_nonnull(v);
      for (int i = 0; i < 6; i++) ck_elem(v[i], toks[b * 6 + 5 - i], 1);
    }
    ck_assert_ptr_null(raspE_value(ev, len, 0));
    free(toks);
  }
  raspE_set_keep_intermediates(ev, 1);
  int64_t toks[6] = {1, 2, 3, 4, 5, 6};
  rasp_error err = {0};
  ck_assert_msg(raspE_run(ev, 1, toks, &err), "%s", err.msg);
  check_ints(ev, len, 0, (int64_t[]){6, 6, 6, 6, 6, 6}, 6);
  check_ints(ev, rev, 0, (int64_t[]){6, 5, 4, 3, 2, 1}, 6);
  raspE_free(ev);
  raspI_free(&ir);
}
END_TEST

START_TEST(test_aggregate_symbols) {
  static const tfn sym = {F_SYM, 0};
  static const tfn eqp = {F_PRED, RASP_PRED_EQ};
  rasp_ir ir;
  ir_setup(&ir, 4, NULL);
  int t = n_input(&ir);
  int s = n_fn(&ir, RASP_OP_MAP, &sym, t, 0);
  int eq = n_select(&ir, t, t, RASP_PRED_EQ, 0, NULL);
  int eqc = n_select(&ir, t, t, RASP_PRED_CUSTOM, 1, &eqp);
  int a = n_head(&ir, RASP_OP_AGGREGATE, eq, s, I(0));
  int b = n_head(&ir, RASP_OP_AGGREGATE, eqc, s, I(0));
  int bl = n_bin(&ir, RASP_BIN_EQ, t, n_full(&ir, I(1)));
  int all = n_select(&ir, t, t, RASP_PRED_TRUE, 0, NULL);
  int fr = n_head(&ir, RASP_OP_AGGREGATE, all, bl, I(0));   /* 1/2 */
  int pass = n_head(&ir, RASP_OP_AGGREGATE, eq, bl, I(0));  /* bools kept */
  int outs[] = {a, b, fr, pass};
  set_outputs(&ir, 4, outs);
  int64_t toks[] = {2, 1, 2, 1};
  rasp_eval *ev = run_ok(&ir, 1, toks);
  const rasp_elem *va = raspE_value(ev, a, 0), *vb = raspE_value(ev, b, 0);
  for (int i = 0; i < 4; i++) {
    ck_elem(va[i], toks[i], 0);
    ck_elem(vb[i], toks[i], 0);
  }
  ck_elem(raspE_value(ev, fr, 0)[0], 1, 2);
  ck_elem(raspE_value(ev, pass, 0)[0], 0, -1);
  ck_elem(raspE_value(ev, pass, 0)[1], 1, -1);
  raspE_free(ev);
  /* differing symbols cannot be averaged */
  int bad = n_head(&ir, RASP_OP_AGGREGATE, all, s, I(0));
  out1(&ir, bad);
  ev = raspE_new(&ir);
  rasp_error err = {0};
  ck_assert(!raspE_run(ev, 1, toks, &err));
  ck_assert_msg(strstr(err.msg, "mean of symbols"), "%s", err.msg);
  ck_assert_int_eq(err.pos.line, bad + 1);
  /* aggr_mean refuses symbols */
  int badm = n_head(&ir, RASP_OP_AGGR_MEAN, eq, s, I(0));
  out1(&ir, badm);
  memset(&err, 0, sizeof err);
  ck_assert(!raspE_run(ev, 1, toks, &err));
  raspE_free(ev);
  raspI_free(&ir);
}
END_TEST

START_TEST(test_memo) {
  static const tfn dbl = {F_DOUBLE, 0};
  static const tfn half = {F_HALFSUM, 0};
  tuser u = {0};
  rasp_ir ir;
  ir_setup(&ir, 10, &u);
  int t = n_input(&ir);
  int m = n_fn(&ir, RASP_OP_MAP, &dbl, t, 0);
  int ix = n_indices(&ir);
  int sm = n_fn(&ir, RASP_OP_SEQMAP, &half, t, n_bin(&ir, RASP_BIN_MUL, ix,
                                                      n_full(&ir, I(0))));
  int neg = n_fn(&ir, RASP_OP_SEQMAP, &half, n_bin(&ir, RASP_BIN_SUB,
                                                   n_full(&ir, I(0)), t), t);
  int outs[] = {m, sm, neg};
  set_outputs(&ir, 3, outs);
  int64_t toks[40];
  for (int i = 0; i < 40; i++) toks[i] = i % 3;
  rasp_eval *ev = run_ok(&ir, 4, toks);
  /* 3 distinct inputs for each of the three function nodes */
  ck_assert_int_eq(u.calls, 9);
  check_ints(ev, m, 0, (int64_t[]){0, 2, 4, 0, 2, 4}, 6);
  check_ints(ev, sm, 0, (int64_t[]){0, 0, 1, 0, 0, 1}, 6); /* 1/2 -> 0 */
  rasp_error err = {0};
  ck_assert(raspE_run(ev, 4, toks, &err));
  ck_assert_int_eq(u.calls, 9);
  raspE_free(ev);
  /* a failing callback reports and blames the node */
  static const tfn boom = {F_BOOM, 0};
  int b = n_fn(&ir, RASP_OP_MAP, &boom, t, 0);
  out1(&ir, b);
  ev = raspE_new(&ir);
  ck_assert(!raspE_run(ev, 1, toks, &err));
  ck_assert_str_eq(err.msg, "boom");
  ck_assert_int_eq(err.pos.line, b + 1);
  raspE_free(ev);
  raspI_free(&ir);
}
END_TEST

START_TEST(test_selector_limit) {
  static const tfn eqp = {F_PRED, RASP_PRED_EQ};
  rasp_ir ir;
  ir_setup(&ir, 100, NULL);
  int t = n_input(&ir);
  int s = n_select(&ir, t, t, RASP_PRED_CUSTOM, 0, &eqp);
  int s2 = n_select(&ir, t, t, RASP_PRED_LT, 1, NULL);
  int both = add(&ir, RASP_OP_SEL_OR, RASP_T_SEL, s, s2, 0);
  int w = n_head(&ir, RASP_OP_SEL_WIDTH, both, -1, I(0));
  ir.nodes[w].nin = 1;
  out1(&ir, w);
  int64_t toks[100];
  for (int i = 0; i < 100; i++) toks[i] = i % 7;
  rasp_eval *ev = raspE_new(&ir);
  raspE_set_max_selector_cells(ev, 5000);
  rasp_error err = {0};
  ck_assert(!raspE_run(ev, 1, toks, &err));
  ck_assert_msg(strstr(err.msg, "exceeds the limit"), "%s", err.msg);
  ck_assert_int_eq(err.pos.line, both + 1);
  raspE_set_max_selector_cells(ev, 10000);
  memset(&err, 0, sizeof err);
  ck_assert_msg(raspE_run(ev, 1, toks, &err), "%s", err.msg);
  const rasp_elem *v = raspE_value(ev, w, 0);
  /* keys equal to mine or smaller and earlier */
  for (int q = 0; q < 100; q++) {
    int want = 0;
    for (int k = 0; k < 100; k++)
      want += toks[k] == toks[q] || (k <= q && toks[k] < toks[q]);
    ck_elem(v[q], want, 1);
  }
  raspE_free(ev);
  raspI_free(&ir);
}
END_TEST

START_TEST(test_big) {
  int n = 15000;
  rasp_ir ir;
  ir_setup(&ir, n, NULL);
  int rev = build_reverse(&ir, NULL);
  int t = 0; /* tokens are node 0 in build_reverse */
  int e = n_select(&ir, t, t, RASP_PRED_EQ, 1, NULL);
  int hist = n_head(&ir, RASP_OP_AGGR_MEAN, e, t, I(0));
  int outs[] = {rev, hist};
  set_outputs(&ir, 2, outs);
  int64_t *toks = malloc(sizeof *toks * (size_t)n);
  for (int i = 0; i < n; i++) toks[i] = (i * 7919) % 1000;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  rasp_eval *ev = run_ok(&ir, 1, toks);
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("n = %d: evaluated in %.3f s\n", n,
         (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
  const rasp_elem *v = raspE_value(ev, rev, 0);
  for (int i = 0; i < n; i++) ck_elem(v[i], toks[n - 1 - i], 1);
  v = raspE_value(ev, hist, 0);
  for (int i = 0; i < n; i++) ck_elem(v[i], toks[i], 1);
  raspE_free(ev);
  free(toks);
  raspI_free(&ir);
}
END_TEST

typedef struct job {
  const rasp_ir *ir;
  int rev;
  int ok;
} job;

static void *thread_main(void *arg) {
  job *j = arg;
  int64_t toks[5];
  j->ok = 1;
  for (int rep = 0; rep < 200; rep++) {
    for (int i = 0; i < 5; i++) toks[i] = rep + i;
    rasp_eval *ev = raspE_new(j->ir);
    rasp_error err = {0};
    if (!raspE_run(ev, 1, toks, &err)) j->ok = 0;
    const rasp_elem *v = raspE_value(ev, j->rev, 0);
    for (int i = 0; v && i < 5; i++)
      if (v[i].num != toks[4 - i]) j->ok = 0;
    raspE_free(ev);
  }
  return NULL;
}

START_TEST(test_threads) {
  rasp_ir ir;
  ir_setup(&ir, 5, NULL);
  int rev = build_reverse(&ir, NULL);
  out1(&ir, rev);
  pthread_t th[4];
  job jobs[4];
  for (int i = 0; i < 4; i++) {
    jobs[i] = (job){&ir, rev, 0};
    pthread_create(&th[i], NULL, thread_main, &jobs[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    ck_assert(jobs[i].ok);
  }
  raspI_free(&ir);
}
END_TEST

/* ---- layers */

static void layers_str(const rasp_layers *l, char *buf, size_t size) {
  FILE *f = fmemopen(buf, size, "w");
  raspL_print(l, f);
  fclose(f);
}

START_TEST(test_layers) {
  rasp_ir ir;
  ir_setup(&ir, 4, NULL);
  int t = n_input(&ir);
  int ix = n_indices(&ir);
  /* a chain of three dependent aggregates */
  int s1 = n_select(&ir, t, t, RASP_PRED_EQ, 0, NULL);
  int a1 = n_head(&ir, RASP_OP_AGGREGATE, s1, ix, I(0));
  int s2 = n_select(&ir, a1, t, RASP_PRED_EQ, 0, NULL);
  int a2 = n_head(&ir, RASP_OP_AGGREGATE, s2, t, I(0));
  int s3 = n_select(&ir, t, t, RASP_PRED_EQ, 0, NULL);
  int a3 = n_head(&ir, RASP_OP_AGGREGATE, s3, a2, I(0));
  /* an independent head in layer 1 and an element-wise chain after it */
  int s4 = n_select(&ir, ix, ix, RASP_PRED_LT, 0, NULL);
  int w = n_head(&ir, RASP_OP_SEL_WIDTH, s4, -1, I(0));
  ir.nodes[w].nin = 1;
  int e1 = n_bin(&ir, RASP_BIN_ADD, w, t);
  int e2 = n_bin(&ir, RASP_BIN_MUL, e1, ix);
  int e3 = n_bin(&ir, RASP_BIN_ADD, e2, a1);
  int outs[] = {a3, e3};
  set_outputs(&ir, 2, outs);
  rasp_layers l;
  raspL_analyse(&ir, NULL, 0, &l);
  ck_assert_int_eq(l.sublayer[t], 0);
  ck_assert_int_eq(l.sublayer[a1], 1);
  ck_assert_int_eq(l.sublayer[w], 1);
  ck_assert_int_eq(l.sublayer[a2], 3);
  ck_assert_int_eq(l.sublayer[a3], 5);
  ck_assert_int_eq(l.sublayer[e1], 2);
  ck_assert_int_eq(l.sublayer[e2], 2);
  ck_assert_int_eq(l.sublayer[e3], 2);
  ck_assert_int_eq(l.nlayers, 3);
  ck_assert_int_eq(l.attn_layers, 3);
  ck_assert_int_eq(l.mlp_layers, 1);
  ck_assert_int_eq(l.heads[0], 2);
  ck_assert_int_eq(l.mlps[0], 3);
  ck_assert_int_eq(l.total_heads, 4);
  char buf[128];
  layers_str(&l, buf, sizeof buf);
  ck_assert_str_eq(buf, "3 layers (3 attention, 1 MLP); heads per layer: 2 1 1\n");
  raspL_free(&l);
  /* only the element-wise chain from embeddings: one MLP, its layer has no
     attention */
  int e4 = n_bin(&ir, RASP_BIN_ADD, t, ix);
  int e5 = n_bin(&ir, RASP_BIN_MUL, e4, e4);
  raspL_analyse(&ir, &e5, 1, &l);
  ck_assert_int_eq(l.sublayer[e5], 2);
  ck_assert_int_eq(l.sublayer[a1], -1);
  layers_str(&l, buf, sizeof buf);
  ck_assert_str_eq(buf, "1 layers (0 attention, 1 MLP); heads per layer: 0\n");
  raspL_free(&l);
  /* dump runs and mentions every live node */
  char big[4096];
  FILE *f = fmemopen(big, sizeof big, "w");
  raspI_dump(&ir, f);
  fclose(f);
  ck_assert_msg(strstr(big, "aggregate") && strstr(big, "select[equals]"), "%s",
                big);
  raspI_free(&ir);
}
END_TEST

/* rfacts.h: predicate semantics, static-ness, canonical nodes, the pair scan. */
static int scan_eq(void *u, int64_t j, int which) {
  const int64_t *xs = u;
  return xs[j] < 0 ? -1 : xs[j] == (which ? 2 : 1);
}

START_TEST(test_facts) {
  /* True == 1, a symbol equals only itself and sorts after numbers */
  ck_assert_int_eq(raspF_pred_holds(RASP_PRED_EQ, BOOLV(1), I(1)), 1);
  ck_assert_int_eq(raspF_pred_holds(RASP_PRED_NE, BOOLV(0), I(0)), 0);
  ck_assert_int_eq(raspF_pred_holds(RASP_PRED_EQ, SYM(3), I(3)), 0);
  ck_assert_int_eq(raspF_pred_holds(RASP_PRED_GT, SYM(0), I(1000)), 1);
  ck_assert_int_eq(raspF_pred_holds(RASP_PRED_LT, R(1, 3), R(1, 2)), 1);
  ck_assert_int_eq(raspF_pred_holds(RASP_PRED_LE, R(1, 2), R(1, 2)), 1);
  ck_assert_int_eq(raspF_pred_holds(RASP_PRED_GE, I(-1), BOOLV(0)), 0);
  ck_assert_int_eq(raspF_pred_holds(RASP_PRED_TRUE, SYM(1), I(2)), 1);
  ck_assert_int_eq(raspF_pred_holds(RASP_PRED_FALSE, I(2), I(2)), 0);
  ck_assert_int_eq(raspF_pred_holds(RASP_PRED_CUSTOM, I(2), I(2)), -1);

  rasp_ir ir;
  tuser u = {0};
  int t, ix;
  ir_with_input(&ir, 4, &u, &t, &ix);
  int one = n_full(&ir, I(1)), one2 = n_full(&ir, I(1));
  int a = n_bin(&ir, RASP_BIN_ADD, ix, one), b = n_bin(&ir, RASP_BIN_ADD, ix, one2);
  int c = n_bin(&ir, RASP_BIN_ADD, t, one);
  int w = n_head(&ir, RASP_OP_SEL_WIDTH, n_select(&ir, t, t, RASP_PRED_TRUE, 0, NULL), -1, I(0));
  ir.nodes[w].nin = 1;
  int outs[] = {a, b, c, w};
  set_outputs(&ir, 4, outs);
  unsigned char st[64];
  raspF_static(&ir, 0, st);
  ck_assert(st[ix] && st[one] && st[a] && st[b] && !st[t] && !st[c] && st[w]);
  int canon[64];
  raspF_canon(&ir, NULL, canon);
  ck_assert_int_eq(canon[one2], one);
  ck_assert_int_eq(canon[b], a);
  ck_assert_int_eq(canon[c], c);
  unsigned char live[64];
  memset(live, 1, sizeof live);
  live[one] = live[a] = 0; /* only live nodes are merged */
  raspF_canon(&ir, live, canon);
  ck_assert_int_eq(canon[b], b);
  raspI_free(&ir);

  /* has_pair: 1 then 2 at distance 2; holds_both: a window of 3 */
  int64_t xs[] = {1, 0, 2, 0, -1}, bad = 0;
  ck_assert_int_eq(raspF_scan_pairs(0, 5, 2, 0, 3, 1, scan_eq, xs, &bad), 1);
  ck_assert_int_eq(raspF_scan_pairs(0, 5, 2, 1, 3, 1, scan_eq, xs, &bad), 0);
  ck_assert_int_eq(raspF_scan_pairs(1, 5, 3, 0, 1, 1, scan_eq, xs, &bad), 1);
  ck_assert_int_eq(raspF_scan_pairs(1, 5, 2, 1, 2, 1, scan_eq, xs, &bad), 0);
  ck_assert_int_eq(raspF_scan_pairs(1, 5, 3, 2, 3, 1, scan_eq, xs, &bad), -1); /* xs[4] unknown */
  ck_assert_int_eq(raspF_scan_pairs(0, 5, 3, 1, 4, 1, scan_eq, xs, &bad), -2);
  ck_assert_int_eq(bad, 2); /* 2 + 3 runs off */
  ck_assert_int_eq(raspF_scan_pairs(1, 5, 2, -1, 3, 2, scan_eq, xs, &bad), -2);
  ck_assert_int_eq(bad, -1);
}
END_TEST

/* Kernel counters (raspE_kernel_hits): which kernel evaluated each head. */
static int kernel_id(const char *name) {
  for (int k = 0; k < raspE_kernel_count(); k++)
    if (strcmp(raspE_kernel_name(k), name) == 0) return k;
  ck_abort_msg("no kernel named %s", name);
  return -1;
}

/* The hits of kernel `name` summed over every node. */
static uint64_t kernel_total(const rasp_eval *ev, const rasp_ir *ir, const char *name) {
  uint64_t t = 0;
  int k = kernel_id(name);
  for (int i = 0; i < ir->nnodes; i++) t += raspE_kernel_hits(ev, i, k);
  return t;
}

/* Head id ran kernel `name` for all B inputs and no other kernel. */
static void ran_only(const rasp_eval *ev, int id, const char *name, uint64_t B) {
  for (int k = 0; k < raspE_kernel_count(); k++) {
    uint64_t h = raspE_kernel_hits(ev, id, k);
    ck_assert_msg(h == (strcmp(raspE_kernel_name(k), name) == 0 ? B : 0),
                  "node %d: kernel %s ran %llu times, expected only %s x%llu", id,
                  raspE_kernel_name(k), (unsigned long long)h, name, (unsigned long long)B);
  }
}

START_TEST(test_kernel_counters) {
  ck_assert_int_eq(raspE_kernel_count(), 10);
  ck_assert_ptr_null(raspE_kernel_name(-1));
  ck_assert_ptr_null(raspE_kernel_name(raspE_kernel_count()));
  /* heads whose kernel the selector's shape decides */
  init_pred_fns();
  int n = 6;
  rasp_ir ir;
  tuser u = {0};
  int t, ix;
  ir_with_input(&ir, n, &u, &t, &ix);
  int v = n_bin(&ir, RASP_BIN_SUB, t, ix);
  int heads[6];
  heads[0] = n_head(&ir, RASP_OP_AGGREGATE, n_select(&ir, t, t, RASP_PRED_CUSTOM, 0,
                                                     &pred_fns[RASP_PRED_LT]), v, I(0));
  heads[1] = n_head(&ir, RASP_OP_SEL_WIDTH, n_select(&ir, t, t, RASP_PRED_NE, 1, NULL), -1, I(0));
  heads[2] = n_head(&ir, RASP_OP_AGGR_MAX, n_select(&ir, t, v, RASP_PRED_LT, 0, NULL), v, I(0));
  heads[3] = n_head(&ir, RASP_OP_AGGREGATE, n_select(&ir, ix, v, RASP_PRED_EQ, 0, NULL), t, I(0));
  heads[4] = n_head(&ir, RASP_OP_AGGR_MEAN, n_select(&ir, ix, ix, RASP_PRED_LE, 1, NULL), t, I(0));
  heads[5] = n_head(&ir, RASP_OP_AGGR_MIN, n_select(&ir, v, t, RASP_PRED_EQ, 0, NULL), t, I(9));
  ir.nodes[heads[1]].nin = 1;
  static const char *const want[6] = {"matrix", "causal-ne", "sorted", "gather", "prefix",
                                      "hash-join"};
  set_outputs(&ir, 6, heads);
  int64_t toks[3 * 6] = {1, 3, 2, 3, 0, 5, 4, 4, 4, 1, 2, 0, 0, 1, 2, 3, 4, 5};
  rasp_eval *ev = run_ok(&ir, 3, toks);
  for (int h = 0; h < 6; h++) ran_only(ev, heads[h], want[h], 3);
  ck_assert_int_eq(raspE_run(ev, 2, toks, &(rasp_error){0}), 1); /* counts add up */
  for (int h = 0; h < 6; h++) ran_only(ev, heads[h], want[h], 5);
  raspE_free(ev);
  /* reference mode: the reference kernel alone, for every head */
  ev = raspE_new(&ir);
  raspE_set_reference(ev, 1);
  ck_assert_int_eq(raspE_run(ev, 3, toks, &(rasp_error){0}), 1);
  for (int h = 0; h < 6; h++) ran_only(ev, heads[h], "reference", 3);
  raspE_free(ev);
  raspI_free(&ir);

  /* a path-star program: the key-gather (static distinct keys), the
     direct table and the gather run; in reference mode nothing else does,
     with the same outputs */
  const char *top = getenv("top_srcdir") ? getenv("top_srcdir") : ".";
  char path[4096];
  snprintf(path, sizeof path, "%s/programs/readout6_causal.rasp", top);
  rasp_program prog;
  rasp_error err = {0};
  ck_assert_msg(raspK_load(path, NULL, 2, 4, 20, &prog, &err), "%s", err.msg);
  rasp_ptrace tr;
  ck_assert_msg(raspK_trace(&prog, 2, 4, 20, &tr, &err), "%s", err.msg);
  rasp_ir *pir = rasp_ctx_ir(tr.ctx);
  int64_t *tok = calloc((size_t)tr.n * 4, sizeof *tok);
  for (int b = 0; b < 4; b++) {
    int64_t lead, target;
    ck_assert(raspK_sample_tokens(&tr, 1, (uint64_t)b, tok + (size_t)b * tr.n, &lead, &target,
                                  &err));
  }
  rasp_eval *fast = raspE_new(pir), *ref = raspE_new(pir);
  raspE_set_reference(ref, 1);
  ck_assert_msg(raspE_run(fast, 4, tok, &err), "%s", err.msg);
  ck_assert_msg(raspE_run(ref, 4, tok, &err), "%s", err.msg);
  ck_assert_uint_gt(kernel_total(fast, pir, "key-gather"), 0);
  ck_assert_uint_gt(kernel_total(fast, pir, "direct"), 0);
  ck_assert_uint_gt(kernel_total(fast, pir, "gather"), 0);
  ck_assert_uint_eq(kernel_total(fast, pir, "reference"), 0);
  uint64_t heads_ref = kernel_total(ref, pir, "reference");
  ck_assert_uint_gt(heads_ref, 0);
  for (int k = 0; k < raspE_kernel_count(); k++)
    if (strcmp(raspE_kernel_name(k), "reference") != 0)
      ck_assert_uint_eq(kernel_total(ref, pir, raspE_kernel_name(k)), 0);
  for (int b = 0; b < 4; b++) {
    const rasp_elem *x = raspE_value(fast, tr.output, b), *y = raspE_value(ref, tr.output, b);
    ck_assert(x && y && memcmp(x, y, sizeof *x * (size_t)tr.n) == 0);
  }
  raspE_free(fast);
  raspE_free(ref);
  free(tok);
  raspK_trace_free(&tr);
  raspK_program_free(&prog);
}
END_TEST

#ifdef RASP_CHECKED
/* A checked build (RASP_ASSERT on) stops at a broken invariant: a node
** whose operand comes after it breaks the IR's topological order. */
START_TEST(test_assert_operand_order) {
  rasp_ir ir;
  raspI_init(&ir, 4);
  rasp_ir_node nd;
  memset(&nd, 0, sizeof nd);
  nd.op = RASP_OP_UNARY;
  nd.nin = 1;
  nd.in[0] = 7; /* no node 7 yet */
  raspI_add(&ir, &nd);
}
END_TEST
#endif

static Suite *suite(void) {
  Suite *s = suite_create("eval");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_arith);
#ifdef RASP_CHECKED
  tcase_add_test_raise_signal(tc, test_assert_operand_order, SIGABRT);
#endif
  tcase_add_test(tc, test_where_and_binary);
  tcase_add_test(tc, test_error_position);
  tcase_add_test(tc, test_int_rat_arith);
  tcase_add_test(tc, test_aggr_mean);
  tcase_add_test(tc, test_causal);
  tcase_add_loop_test(tc, test_paths_agree, 0, 16);
  tcase_add_loop_test(tc, test_paths_agree_kinds, 0, 2);
  tcase_add_loop_test(tc, test_paths_agree_rational, 0, 3);
  tcase_add_test(tc, test_unreduced_means);
  tcase_add_test(tc, test_drop_intermediates);
  tcase_add_test(tc, test_histogram);
  tcase_add_test(tc, test_reverse);
  tcase_add_test(tc, test_aggregate_symbols);
  tcase_add_test(tc, test_memo);
  tcase_add_test(tc, test_selector_limit);
  tcase_add_test(tc, test_big);
  tcase_add_test(tc, test_threads);
  tcase_add_test(tc, test_layers);
  tcase_add_test(tc, test_kernel_counters);
  tcase_add_test(tc, test_facts);
  suite_add_tcase(s, tc);
  return s;
}

RASP_CHECK_MAIN(suite())
