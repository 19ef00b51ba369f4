/*
** test_stage.c -- staged check() functions (rstage.h) against the
** interpreter: for checks of every stageable shape, the residual predicate
** must give the verdict rasp_call_check gives, on random outputs mixing
** vocabulary tokens, other numbers, booleans, rationals and symbols, or -1
** exactly where the interpreter raises an error.  Checks that cannot be
** staged must say so instead of being approximated.
*/
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp.h"
#include "rstage.h"

#include "check_main.h"

#define LEN 12

static const char *const vocab[] = {"1", "2", "3", "4", "5", "t", "s", "|"};
enum { NVOCAB = 8 };

static rasp_ctx *ctx;
static int64_t vocab_sym[NVOCAB + 1];

static void setup(void) {
  rasp_error err = {0};
  ctx = rasp_ctx_new(LEN, NULL, &err);
  ck_assert_ptr_nonnull(ctx);
  ck_assert_msg(rasp_set_vocab(ctx, vocab, NVOCAB, &err), "%s", err.msg);
  for (int id = 1; id <= NVOCAB; id++)
    vocab_sym[id] = rasp_symbol(ctx, rasp_vocab_symbol(ctx, id));
  ck_assert_msg(rasp_exec_string(ctx, "<globals>",
                                 "g_start = 1\nedge_width = 3\ndegree = 2\narm_len = 2\n"
                                 "def ends(a, b):\n    return a == b\n", &err),
                "%s", err.msg);
}

static void teardown(void) {
  rasp_ctx_free(ctx);
  ctx = NULL;
}

static rasp_elem sym_of(int id) { return (rasp_elem){vocab_sym[id], RASP_DEN_SYM}; }

/* A random output element: mostly vocabulary tokens (which check() sees as
** symbols), sometimes other numbers, booleans, a rational or a symbol. */
static rasp_elem random_elem(void) {
  switch (rand() % 8) {
  case 0: return (rasp_elem){rand() % 3 - 1, 1}; /* 0, -1: not tokens */
  case 1: return (rasp_elem){rand() % 2, RASP_DEN_BOOL};
  case 2: return (rasp_elem){1, 2};
  case 3: return sym_of(1 + rand() % 3);
  default: return (rasp_elem){1 + rand() % 4, 1}; /* tokens 1..4 */
  }
}

static rasp_elem symbolic(rasp_elem e) {
  if (e.den == 1 && e.num >= 1 && e.num <= NVOCAB) return sym_of((int)e.num);
  return e;
}

/* Stages `check` from text, then compares with the interpreter on random
** graphs; returns how many graphs the residual decided. */
static int agree(const char *text, int graphs) {
  rasp_error err = {0};
  ck_assert_msg(rasp_exec_string(ctx, "<check>", text, &err), "%s", err.msg);
  const char *why = NULL;
  rasp_staged *st = raspS_stage(ctx, "check", LEN, &why);
  ck_assert_msg(st != NULL, "not staged (%s): %s", why ? why : "?", text);
  int decided = 0;
  for (int g = 0; g < graphs; g++) {
    rasp_elem out[LEN], shown[LEN];
    for (int i = 0; i < LEN; i++) {
      out[i] = random_elem();
      shown[i] = symbolic(out[i]);
    }
    rasp_elem lead = g % 5 ? sym_of(1 + rand() % 4) : (rasp_elem){rand() % 4, 1};
    rasp_elem target = g % 7 ? sym_of(6) : sym_of(1 + rand() % 4);
    int r = raspS_eval(st, out, vocab_sym, NVOCAB, lead, target);
    rasp_arg args[3];
    memset(args, 0, sizeof args);
    args[0].elems = shown;
    args[0].count = LEN;
    args[1].elem = lead;
    args[2].elem = target;
    int truth = -1;
    rasp_error e2 = {0};
    int ok = rasp_call_check(ctx, "check", args, 3, &truth, &e2);
    if (r < 0) {
      ck_assert_msg(!ok, "staged undecided where the interpreter said %d: %s", truth, text);
    } else {
      ck_assert_msg(ok, "staged %d where the interpreter failed (%s): %s", r, e2.msg, text);
      ck_assert_msg(r == truth, "graph %d: staged %d, interpreted %d: %s", g, r, truth, text);
      decided++;
    }
  }
  raspS_free(st);
  return decided;
}

static const char *unstaged(const char *text) {
  rasp_error err = {0};
  ck_assert_msg(rasp_exec_string(ctx, "<check>", text, &err), "%s", err.msg);
  const char *why = NULL;
  rasp_staged *st = raspS_stage(ctx, "check", LEN, &why);
  ck_assert_msg(st == NULL, "staged, but should not be: %s", text);
  ck_assert_ptr_nonnull(why);
  return why;
}

START_TEST(test_element_comparisons) {
  srand(11);
  ck_assert_int_eq(agree("def check(output, lead, target):\n    return output[0] == lead\n", 400),
                   400);
  agree("def check(output, lead, target):\n    return output[-1] != target\n", 400);
  agree("def check(o, l, t):\n    return o[2] == 1\n", 400);      /* True == 1 too */
  agree("def check(o, l, t):\n    return o[3] == True\n", 400);
  agree("def check(o, l, t):\n    return o[4] == 1/2\n", 400);
  agree("def check(o, l, t):\n    return o[5] == '2' and not (o[6] == t)\n", 400);
  agree("def check(o, l, t):\n    return ends(o[g_start + 1], l) or o[1] == o[2]\n", 400);
  agree("def check(o, l, t):\n    k = edge_width * 2\n    if k > 100:\n"
        "        return False\n    x = o[k]\n    return x == l\n", 400);
  agree("def check(o, l, t):\n    return (o[0] == l) if degree == 2 else (o[1] == l)\n", 400);
  agree("def check(o, l, t):\n    return 3 > 2 and o[7] == l\n", 400);
  agree("def check(o, l, t):\n    return 0 and o[7] == l\n", 400);
  agree("def check(o, l, t, extra=4):\n    return o[extra] == l\n", 400);
  agree("def check(o, l, t):\n    return lead_at(o, l, at=3)\n"
        "def lead_at(xs, x, at=0):\n    return xs[at] == x\n", 400);
}
END_TEST

START_TEST(test_scans) {
  srand(12);
  /* in range: always decided */
  ck_assert_int_eq(agree("def check(o, l, t):\n"
                         "    return has_pair(o, t, l, 1, g_start, g_start + 9, edge_width)\n",
                         600),
                   600);
  agree("def check(o, l, t):\n    return holds_both(o, l, t, 3, 0, 12, 3)\n", 600);
  agree("def check(o, l, t):\n    return holds_both(o, '1', l, 2, 1, 11, 2)\n", 600);
  agree("def check(o, l, t):\n    return not has_pair(o, l, l, 2, 0, 10, 1)\n", 600);
  /* running off the end: the interpreter raises once the scan gets there,
     the residual says -1 at the same graphs */
  int d = agree("def check(o, l, t):\n    return has_pair(o, t, l, 1, 0, 14, 3)\n", 600);
  ck_assert_int_lt(d, 600);
  d = agree("def check(o, l, t):\n    return holds_both(o, t, l, 4, 0, 12, 3)\n", 600);
  ck_assert_int_lt(d, 600);
  d = agree("def check(o, l, t):\n    return has_pair(o, t, l, 2, 1, 12, 3)\n", 600);
  ck_assert_int_lt(d, 600); /* the second element of the last pair is past the end */
}
END_TEST

START_TEST(test_not_staged) {
  ck_assert_str_eq(unstaged("def check(o, l, t):\n    return l in o\n"),
                   "a comparison other than == or !=");
  unstaged("def check(o, l, t):\n    return len(o) > 3\n");
  unstaged("def check(o, l, t):\n    for x in o:\n        pass\n    return True\n");
  unstaged("def check(o, l, t):\n    if o[0] == l:\n        return True\n    return False\n");
  unstaged("def check(o, l, t):\n    return o[0:2] == (l, t)\n");
  unstaged("def check(o, l, t):\n    return o[l] == t\n");
  unstaged("def check(o, l, t):\n    return o[50] == t\n");
  unstaged("def check(o, l, t):\n    return o[0]\n");
  unstaged("def check(o, l, t):\n    return has_pair(o, t, l, 1, 0, 9, 0)\n");
  unstaged("def check(o, l, t):\n    print(l)\n    return True\n");
  rasp_error err = {0};
  ck_assert(rasp_exec_string(ctx, "<x>", "def other(o, l, t):\n    return True\n", &err));
  const char *why = "unset";
  ck_assert_ptr_null(raspS_stage(ctx, "nothing_here", LEN, &why));
  ck_assert_ptr_null(why);
}
END_TEST

START_TEST(test_describe) {
  rasp_error err = {0};
  ck_assert(rasp_exec_string(ctx, "<c>",
                             "def check(o, l, t):\n"
                             "    return has_pair(o, t, l, 1, g_start, 10, 3) or o[0] == 7\n",
                             &err));
  rasp_staged *st = raspS_stage(ctx, "check", LEN, NULL);
  ck_assert_ptr_nonnull(st);
  char buf[256];
  raspS_describe(st, buf, sizeof buf);
  ck_assert_str_eq(buf, "(has_pair(output, target, lead, 1, 1, 10, 3)) or (output[0] == 7)");
  raspS_free(st);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("stage");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_element_comparisons);
  tcase_add_test(tc, test_scans);
  tcase_add_test(tc, test_not_staged);
  tcase_add_test(tc, test_describe);
  suite_add_tcase(s, tc);
  return s;
}

RASP_CHECK_MAIN(suite())
