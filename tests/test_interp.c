/*
** test_interp.c -- Check unit tests of the interpreter through the public
** API (rasp.h): exact scalar arithmetic, Python semantics of the statement
** and expression forms, errors with positions, tracing into IR nodes,
** rasp_call_check, token-valued nodes (RASP_TOKEN_IDS) with strings compared
** to them, and rasp_interrupt.
*/
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp.h"

#include "check_main.h"

static rasp_ctx *ctx;
static rasp_error err;

static void setup(void) {
  memset(&err, 0, sizeof err);
  ctx = rasp_ctx_new(4, NULL, &err);
  ck_assert_ptr_nonnull(ctx);
}

static void teardown(void) {
  rasp_ctx_free(ctx);
  ctx = NULL;
}

/* Runs statements; fails the test with the message on error. */
static void exec_ok(const char *text) {
  memset(&err, 0, sizeof err);
  if (!rasp_exec_string(ctx, "<test>", text, &err))
    ck_abort_msg("unexpected error %d:%d: %s", err.pos.line, err.pos.col, err.msg);
}

/* Runs statements that must fail; returns the message ("L:C: msg"). */
static const char *exec_err(const char *text) {
  static char buf[1200];
  memset(&err, 0, sizeof err);
  ck_assert_msg(!rasp_exec_string(ctx, "<test>", text, &err), "no error for: %s", text);
  ck_assert(err.set);
  snprintf(buf, sizeof buf, "%d:%d: %s", err.pos.line, err.pos.col, err.msg);
  return buf;
}

/* The text of an expression's value, as the REPL shows it. */
static const char *show(const char *expr) {
  static char buf[4096];
  rasp_repl_value v;
  memset(&err, 0, sizeof err);
  if (!rasp_repl_entry(ctx, expr, &v, &err))
    ck_abort_msg("error in '%s': %s", expr, err.msg);
  snprintf(buf, sizeof buf, "%s", v.shown ? v.shown : "None");
  free(v.shown);
  return buf;
}

static int64_t get_int(const char *name) {
  int64_t v = 0;
  memset(&err, 0, sizeof err);
  if (!rasp_get_int(ctx, name, &v, &err)) ck_abort_msg("%s: %s", name, err.msg);
  return v;
}

/* ---- exact arithmetic */

START_TEST(test_rationals) {
  ck_assert_str_eq(show("1/3 + 1/6"), "1/2");
  ck_assert_str_eq(show("1/3 + 1/6 == 1/2"), "True");
  ck_assert_str_eq(show("0.1 + 0.2 == 0.3"), "True");
  ck_assert_str_eq(show("0.1 + 0.2"), "3/10");
  ck_assert_str_eq(show("2.5e-3"), "1/400");
  ck_assert_str_eq(show("(1/3) * 3 == 1"), "True");
  ck_assert_str_eq(show("int(-7/2)"), "-3");
}
END_TEST

START_TEST(test_bigint) {
  ck_assert_str_eq(show("2**100"), "1267650600228229401496703205376");
  ck_assert_str_eq(show("2**100 - 2**100 + 1"), "1");
  ck_assert_str_eq(show("(2**100) // (2**98)"), "4");
  ck_assert_str_eq(show("(2**100 + 1) % 7"), "3");
  ck_assert_str_eq(show("2**-2"), "1/4");
}
END_TEST

START_TEST(test_floor_div_mod) {
  ck_assert_str_eq(show("-7 // 2"), "-4");
  ck_assert_str_eq(show("-7 % 2"), "1");
  ck_assert_str_eq(show("7 // -2"), "-4");
  ck_assert_str_eq(show("7 % -2"), "-1");
  ck_assert_str_eq(show("-7 // -2"), "3");
  ck_assert_str_eq(show("-7 % -2"), "-1");
  ck_assert_str_eq(show("(-7/2) // 1"), "-4");
  ck_assert_str_eq(show("7 // 2 * 2 + 7 % 2"), "7");
  ck_assert_str_eq(exec_err("x = 1\ny = 1 // 0\n"), "2:7: division by zero");
}
END_TEST

/* ---- statements and expressions */

START_TEST(test_tuple_unpacking) {
  exec_ok("a, b = 1, 2\na, b = b, a\n(c, (e, f)) = (3, (4, 5))\n"
          "for i, v in enumerate([10, 20]):\n    g = i * 100 + v\n");
  ck_assert_int_eq(get_int("a"), 2);
  ck_assert_int_eq(get_int("b"), 1);
  ck_assert_int_eq(get_int("c") * 100 + get_int("e") * 10 + get_int("f"), 345);
  ck_assert_int_eq(get_int("g"), 120);
}
END_TEST

START_TEST(test_default_and_keyword_args) {
  exec_ok("def f(x, y=10, z=100):\n    return x + y + z\n"
          "r1 = f(1)\nr2 = f(1, 2)\nr3 = f(1, z=5)\nr4 = f(z=1, y=2, x=3)\n");
  ck_assert_int_eq(get_int("r1"), 111);
  ck_assert_int_eq(get_int("r2"), 103);
  ck_assert_int_eq(get_int("r3"), 16);
  ck_assert_int_eq(get_int("r4"), 6);
  const char *m = exec_err("f()\n");
  ck_assert_msg(strstr(m, "1:1: f() missing required argument 'x'"), "%s", m);
}
END_TEST

START_TEST(test_lambdas_and_closures) {
  exec_ok("def make_adder(k):\n    return lambda x: x + k\n"
          "add3 = make_adder(3)\nadd5 = make_adder(5)\n"
          "r = add3(4) * 100 + add5(4)\n"
          "def counter():\n    box = [0]\n    def inc():\n        box[0] += 1\n"
          "        return box[0]\n    return inc\n"
          "c = counter()\nc()\nc()\nn = c()\n"
          "sq = lambda x, p=2: x ** p\nq = sq(3) + sq(2, p=3)\n");
  ck_assert_int_eq(get_int("r"), 709);
  ck_assert_int_eq(get_int("n"), 3);
  ck_assert_int_eq(get_int("q"), 17);
}
END_TEST

START_TEST(test_comprehensions_and_containers) {
  ck_assert_str_eq(show("[i * i for i in range(6) if i % 2 == 1]"), "[1, 9, 25]");
  ck_assert_str_eq(show("sum([x * y for x, y in zip(range(4), range(4))])"), "14");
  exec_ok("dd = {'a': 1}\ndd['b'] = 2\nr = dd['a'] + dd['b'] * 10 + len(dd) * 100\n"
          "has = 'b' in dd\nl = [3, 1, 2]\nl[0] = 4\nm = sorted(l)[0] + l[-1] * 10\n");
  ck_assert_int_eq(get_int("r"), 221);
  ck_assert_str_eq(show("has"), "True");
  ck_assert_int_eq(get_int("m"), 21);
  ck_assert_str_eq(show("(1, 2) + (3,)"), "(1, 2, 3)");
  ck_assert_str_eq(show("[1, 2][::-1]"), "[2, 1]");
}
END_TEST

START_TEST(test_loops) {
  exec_ok("t = 0\nfor i in range(10):\n    if i == 7:\n        break\n"
          "    if i % 2:\n        continue\n    t += i\n"
          "w = 0\nk = 0\nwhile True:\n    k += 1\n    if k > 5:\n        break\n"
          "    if k == 3:\n        continue\n    w += k\n");
  ck_assert_int_eq(get_int("t"), 0 + 2 + 4 + 6);
  ck_assert_int_eq(get_int("w"), 1 + 2 + 4 + 5);
}
END_TEST

START_TEST(test_assert) {
  exec_ok("assert 1 + 1 == 2\nassert True, 'fine'\n");
  ck_assert_str_eq(exec_err("x = 1\nassert x == 2, 'x is ' + str(x)\n"),
                   "2:1: assertion failed: x is 1");
}
END_TEST

START_TEST(test_recursion) {
  exec_ok("def fact(n):\n    return 1 if n <= 1 else n * fact(n - 1)\nr = fact(20)\n");
  ck_assert_str_eq(show("r"), "2432902008176640000");
  const char *m = exec_err("def f(x):\n    return f(x + 1)\nf(0)\n");
  ck_assert_msg(strstr(m, "2:12: recursion too deep"), "%s", m);
  /* the context stays usable after an error */
  ck_assert_str_eq(show("fact(5)"), "120");
}
END_TEST

START_TEST(test_step_limit) {
  const char *m = exec_err("x = 0\nwhile True:\n    pass\n");
  ck_assert_msg(strstr(m, ": the program ran more than 10000000 steps"), "%s", m);
}
END_TEST

START_TEST(test_error_positions) {
  ck_assert_str_eq(exec_err("x = 1\ny = foo + 1\n"), "2:5: unknown name 'foo'");
  ck_assert_str_eq(exec_err("x = 1 +\n"), "1:8: expected an expression but found newline");
  const char *m = exec_err("def g(s):\n    if s > 1:\n        return s\n    return s\ng(tokens)\n");
  ck_assert_msg(strstr(m, "2:8: an 'if' on a sequence"), "%s", m);
  ck_assert_ptr_nonnull(err.pos.src);
  ck_assert_str_eq(err.pos.src->name, "<test>");
  m = exec_err("for i in range(tokens):\n    pass\n");
  ck_assert_msg(strstr(m, "1:10: range()"), "%s", m);
}
END_TEST

/* ---- tracing */

START_TEST(test_trace_nodes) {
  rasp_ir *ir = rasp_ctx_ir(ctx);
  ck_assert_int_eq(ir->nnodes, 2); /* tokens and indices */
  ck_assert_int_eq(ir->nodes[0].op, RASP_OP_INPUT);
  ck_assert_int_eq(ir->nodes[1].op, RASP_OP_INDICES);
  exec_ok("def main(seq):\n"
          "    total = seq\n"
          "    for i in range(3):\n"        /* loops unroll: 3 additions */
          "        total = total + seq\n"
          "    if len(seq) == 4:\n"          /* a static if picks one branch */
          "        total = -total\n"
          "    return sel_width(select(total, seq, lt, causal=False))\n");
  ck_assert(rasp_trace(ctx, "main", &err));
  ck_assert_int_eq(ir->noutputs, 1);
  ck_assert_int_eq(ir->nnodes, 2 + 3 + 1 + 2);
  ck_assert_int_eq(ir->nodes[2].op, RASP_OP_BINARY);
  ck_assert_int_eq(ir->nodes[2].aux, RASP_BIN_ADD);
  ck_assert_int_eq(ir->nodes[5].op, RASP_OP_UNARY);
  ck_assert_int_eq(ir->nodes[5].aux, RASP_UN_NEG);
  ck_assert_int_eq(ir->nodes[6].op, RASP_OP_SELECT);
  ck_assert_int_eq(ir->nodes[6].aux, RASP_PRED_LT);
  ck_assert_uint_eq(ir->nodes[6].flags & RASP_CAUSAL, 0);
  ck_assert_int_eq(ir->nodes[7].op, RASP_OP_SEL_WIDTH);
  ck_assert_int_eq(ir->outputs[0], 7);
  ck_assert_int_eq(ir->nodes[6].pos.line, 7);

  /* and the traced program evaluates: total = -4 * seq */
  int64_t tokens[4] = {1, 2, 3, 4};
  rasp_eval *ev = raspE_new(ir);
  ck_assert(raspE_run(ev, 1, tokens, &err));
  const rasp_elem *out = raspE_value(ev, ir->outputs[0], 0);
  /* keys -4,-8,-12,-16 < query t: every key for each query */
  for (int i = 0; i < 4; i++) ck_assert_int_eq(out[i].num, 4);
  raspE_free(ev);
}
END_TEST

START_TEST(test_trace_stdlib) {
  ck_assert(rasp_load_stdlib(ctx, NULL, &err));
  const char *names[] = {"a", "b", "c"};
  ck_assert(rasp_set_vocab(ctx, names, 3, &err));
  exec_ok("def main(seq):\n"
          "    idx = indices(seq)\n"
          "    return aggregate(select(idx, length - idx - 1, equals, causal=False), seq)\n");
  ck_assert(rasp_trace(ctx, "main", &err));
  rasp_ir *ir = rasp_ctx_ir(ctx);
  int64_t tokens[8] = {1, 2, 3, 3, 3, 1, 1, 2};
  rasp_eval *ev = raspE_new(ir);
  ck_assert(raspE_run(ev, 2, tokens, &err));
  const rasp_elem *o0 = raspE_value(ev, ir->outputs[0], 0);
  const rasp_elem *o1 = raspE_value(ev, ir->outputs[0], 1);
  int64_t want0[4] = {3, 3, 2, 1}, want1[4] = {2, 1, 1, 3};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(o0[i].num, want0[i]);
    ck_assert_int_eq(o1[i].num, want1[i]);
  }
  rasp_layers layers;
  raspL_analyse(ir, NULL, 0, &layers);
  ck_assert_int_eq(layers.nlayers, 2);
  ck_assert_int_eq(layers.total_heads, 2);
  raspL_free(&layers);
  raspE_free(ev);
}
END_TEST

/* ---- rasp_call_check */

START_TEST(test_call_check) {
  exec_ok("def is_sorted_of(xs, ys):\n    return sorted(xs) == ys\n"
          "def total_is(xs, t):\n    return sum(xs) == t\n");
  rasp_elem xs[3] = {{3, 1}, {1, 1}, {2, 1}};
  rasp_elem good[3] = {{1, 1}, {2, 1}, {3, 1}};
  rasp_elem bad[3] = {{1, 1}, {2, 1}, {4, 1}};
  rasp_arg args[2] = {{xs, 3, {0, 1}}, {good, 3, {0, 1}}};
  int truth = -1;
  ck_assert(rasp_call_check(ctx, "is_sorted_of", args, 2, &truth, &err));
  ck_assert_int_eq(truth, 1);
  args[1].elems = bad;
  ck_assert(rasp_call_check(ctx, "is_sorted_of", args, 2, &truth, &err));
  ck_assert_int_eq(truth, 0);
  /* a single element argument, and an exact rational in the list */
  rasp_elem halves[2] = {{1, 2}, {1, 2}};
  rasp_arg a2[2] = {{halves, 2, {0, 1}}, {NULL, 0, {1, 1}}};
  ck_assert(rasp_call_check(ctx, "total_is", a2, 2, &truth, &err));
  ck_assert_int_eq(truth, 1);
  /* errors come back, and the context stays usable */
  memset(&err, 0, sizeof err);
  ck_assert(!rasp_call_check(ctx, "no_such_fn", a2, 2, &truth, &err));
  ck_assert(err.set);
  ck_assert(rasp_call_check(ctx, "total_is", a2, 2, &truth, &err));
  ck_assert_int_eq(truth, 1);
}
END_TEST

/* ---- token ids: which nodes carry them, and strings compared with them */

/* The node of a sequence expression. */
static int node_of(const char *expr) {
  rasp_repl_value v;
  memset(&err, 0, sizeof err);
  if (!rasp_repl_entry(ctx, expr, &v, &err))
    ck_abort_msg("error in '%s': %s", expr, err.msg);
  free(v.shown);
  ck_assert_int_ge(v.node, 0);
  return v.node;
}

static int is_tokens(const char *expr) {
  int node = node_of(expr); /* first: tracing may move the node array */
  return (rasp_ctx_ir(ctx)->nodes[node].flags & RASP_TOKEN_IDS) != 0;
}

/* An expression's values on the input a b c b, as 0/1 truths. */
static const char *truths(const char *expr) {
  static char buf[16];
  int node = node_of(expr);
  int64_t tokens[4] = {1, 2, 3, 2}; /* a b c b */
  rasp_ir *ir = rasp_ctx_ir(ctx);
  ir->outputs = &node; /* the evaluator computes what the outputs need */
  ir->noutputs = 1;
  rasp_eval *ev = raspE_new(ir);
  ck_assert(raspE_run(ev, 1, tokens, &err));
  const rasp_elem *v = raspE_value(ev, node, 0);
  ck_assert_ptr_nonnull(v);
  for (int i = 0; i < 4; i++) buf[i] = raspI_elem_truth(v[i]) ? '1' : '0';
  buf[4] = '\0';
  raspE_free(ev);
  ir->outputs = NULL;
  ir->noutputs = 0;
  return buf;
}

START_TEST(test_token_ids) {
  /* without a vocabulary a string has no id to compare with */
  ck_assert_str_eq(exec_err("x = tokens == 'a'"),
                   "1:5: the tokens are vocabulary ids and there is no vocabulary to look 'a' "
                   "up in");
  const char *names[] = {"a", "b", "c"};
  ck_assert(rasp_set_vocab(ctx, names, 3, &err));
  exec_ok("rev = aggregate(select(indices(tokens), 3 - indices(tokens), equals, "
          "causal=False), tokens)\n");
  ck_assert(is_tokens("tokens"));
  ck_assert(is_tokens("rev"));
  ck_assert(is_tokens("where(tokens == d['a'], tokens, rev)"));
  ck_assert(is_tokens("aggr_max(select(tokens, tokens, leq, causal=False), tokens)"));
  ck_assert(is_tokens("min(tokens, rev)"));
  /* computed from ids, or mixed with numbers that may be ids: not tokens */
  ck_assert(!is_tokens("indices(tokens)"));
  ck_assert(!is_tokens("tokens + 0"));
  ck_assert(!is_tokens("tok_map(tokens, lambda t: t)"));
  ck_assert(!is_tokens("where(tokens == d['a'], tokens, 0)"));
  ck_assert(!is_tokens("aggregate(select(tokens, tokens, equals), tokens, default=2)"));
  ck_assert(!is_tokens("aggr_mean(select(tokens, tokens, equals), tokens)"));
  /* a string compared for equality with token ids means its id */
  ck_assert_str_eq(truths("tokens == 'b'"), "0101");
  ck_assert_str_eq(truths("'b' != tokens"), "1010");
  ck_assert_str_eq(truths("rev == 'a'"), "0001"); /* rev: b c b a */
  ck_assert_str_eq(truths("tokens == d['b']"), "0101");
  /* sequences of strings still compare as strings */
  ck_assert_str_eq(truths("where(tokens == 'c', 'x', 'y') == 'x'"), "0010");
  /* anything else is refused, saying how */
  ck_assert_str_eq(exec_err("x = tokens < 'b'"),
                   "1:5: '<' between token ids and the string 'b': the tokens are vocabulary "
                   "ids; use the id d['b']");
  ck_assert_str_eq(exec_err("x = rev == 'zz'"),
                   "1:5: 'zz' is not in the vocabulary, so no token can equal it (the tokens "
                   "are vocabulary ids: d maps symbols to them)");
}
END_TEST

START_TEST(test_interrupt) {
  rasp_interrupt(ctx, 1);
  ck_assert_str_eq(exec_err("for i in range(3):\n    x = i\n"), "1:1: interrupted");
  exec_ok("for i in range(3):\n    x = i\n"); /* one request stops one run */
  ck_assert_int_eq(get_int("x"), 2);
  rasp_interrupt(ctx, 1);
  rasp_interrupt(ctx, 0); /* withdrawn */
  exec_ok("y = 1\n");
  ck_assert_int_eq(get_int("y"), 1);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("interp");
  TCase *tc = tcase_create("interp");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_rationals);
  tcase_add_test(tc, test_bigint);
  tcase_add_test(tc, test_floor_div_mod);
  tcase_add_test(tc, test_tuple_unpacking);
  tcase_add_test(tc, test_default_and_keyword_args);
  tcase_add_test(tc, test_lambdas_and_closures);
  tcase_add_test(tc, test_comprehensions_and_containers);
  tcase_add_test(tc, test_loops);
  tcase_add_test(tc, test_assert);
  tcase_add_test(tc, test_recursion);
  tcase_add_test(tc, test_step_limit);
  tcase_add_test(tc, test_error_positions);
  tcase_add_test(tc, test_trace_nodes);
  tcase_add_test(tc, test_trace_stdlib);
  tcase_add_test(tc, test_call_check);
  tcase_add_test(tc, test_token_ids);
  tcase_add_test(tc, test_interrupt);
  suite_add_tcase(s, tc);
  return s;
}

RASP_CHECK_MAIN(suite())
