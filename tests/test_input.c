/*
** test_input.c -- one path-star input at a time (`rasp verify --input`,
** raspK_parse_input and raspK_run_input in rverify.h): every sample the
** generator writes, under every layout the task settings allow, reads
** back as the same tokens, D, M, l_t and t; inputs that are not the task's
** are refused with the token at fault; and the verdict on one input is
** the verifier's own verdict on that sample, passing and failing.
*/
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp.h"
#include "rtask.h"
#include "rverify.h"

#include "check_main.h"

static const char *srcdir(void) {
  const char *d = getenv("top_srcdir");
  return d ? d : ".";
}

/* tokens as the task writes them, space-separated (malloc'd) */
static char *render(const rasp_task_opts *o, const int64_t *tokens, int n) {
  char *text = malloc((size_t)n * 16 + 1), buf[32];
  size_t len = 0;
  text[0] = '\0';
  for (int i = 0; i < n; i++) {
    raspT_token_text(o, (int)tokens[i], buf, sizeof buf);
    len += (size_t)sprintf(text + len, "%s%s", i ? " " : "", buf);
  }
  return text;
}

START_TEST(test_round_trip) {
  /* every layout: order, Q first or last, markers, st_names, BOS/EOS, answer */
  int checked = 0;
  for (int setting = 0; setting < 128; setting++)
    for (int D = 1; D <= 3; D++)
      for (int M = 2; M <= 5; M += M == 3 ? 2 : 1) {
        rasp_program prog;
        memset(&prog, 0, sizeof prog);
        rasp_task_opts *o = &prog.base;
        raspT_opts_default(o);
        o->order = setting & 1 ? RASP_ORDER_ARM : RASP_ORDER_EDGE;
        o->q = setting & 2 ? RASP_Q_END : RASP_Q_START;
        o->markers = setting & 4 ? 2 : 1;
        o->st_names = (setting & 8) != 0;
        o->bos = o->eos = (setting & 16) != 0;
        o->answer = (rasp_answer)(setting >> 5);
        o->D = D;
        o->M = M;
        o->V = 30;
        for (uint64_t index = 0; index < 5; index++) {
          rasp_sample s;
          memset(&s, 0, sizeof s);
          rasp_error err = {0};
          ck_assert_int_eq(raspT_sample(o, 7, index, &s, &err), 1);
          int64_t *ids = malloc(sizeof(int64_t) * (size_t)s.ntokens);
          for (int i = 0; i < s.ntokens; i++) ids[i] = s.tokens[i];
          char *text = render(o, ids, s.ntokens);
          rasp_input in;
          ck_assert_msg(raspK_parse_input(&prog, o->V, text, &in, &err) == 1,
                        "setting %d, D=%d, M=%d: '%s': %s", setting, D, M, text, err.msg);
          ck_assert_int_eq(in.D, D);
          ck_assert_int_eq(in.M, M);
          ck_assert_int_eq(in.n, s.ntokens);
          for (int i = 0; i < s.ntokens; i++) ck_assert_int_eq(in.tokens[i], ids[i]);
          /* as raspK_sample_tokens gives them; under st_names a lead that is
             t itself (M = 2) is written 't', and that is what the input says */
          int64_t t = o->st_names ? o->V + RASP_SP_T : s.t;
          ck_assert_int_eq(in.target, t);
          ck_assert_int_eq(in.lead, o->st_names && M == 2 ? t : s.lead);
          raspK_input_free(&in);
          free(text);
          free(ids);
          raspT_sample_free(&s);
          checked++;
        }
      }
  ck_assert_int_eq(checked, 128 * 3 * 3 * 5);
}
END_TEST

typedef struct refusal {
  int setting; /* 0: the readout programs' task; 1: arm order; 2: BOS, Q last,
                  numbers for s and t, two markers, answer l_t, EOS */
  const char *text, *message;
} refusal;

START_TEST(test_refusals) {
  static const refusal cases[] = {
      {0, "/ s t = s 3 | 3 t | s 5 | 5 7 | s 3 t", NULL}, /* the one good input */
      {0, "", "the input is empty"},
      {0, "/ s t = s 3 | 3 t | s 5 | 5 7 | s 3 x", "input token 18 'x': not a token of the task"},
      {0, "/ s t = s 3 | 3 t | s 5 | 5 77 | s 3 t", "input token 14 '77': a node symbol above --V"},
      {0, "/ s t = s 3 | 3 t | s 5 | 5 7 | s 3 PAD", "input token 18 'PAD': not a token"},
      {0, "/ s t = s 3 | 3 t | s 5 | 5 7 | s 3 5", "input token 18 '5': the answer has 't' here"},
      {0, "/ s t = s 3 | 3 t | s 5 | 5 7 | s 5 t", "input token 17 '5': the answer has '3' here"},
      {0, "/ s t = s 3 | 3 t | s 5 | 5 7 | s 3 t 7", "has 20 tokens; an input of this task with D=2, M=3"},
      {0, "/ s t = s 3 | 3 t | s 5 | 5 7 s 3 t |", "input token 15 's': the task has '|' here"},
      {0, "/ s t = s 3 | 3 t | s 5 | 5 3 | s 3 t", "input token 14 '3': a second edge into this node"},
      {0, "/ s t = s 3 | 3 t | s 5 | 5 s | s 3 t", "input token 14 's': an edge into the start node"},
      {0, "/ s t = s 3 | 3 t | s 5 | 7 8 | s 3 t", "the arm that starts at '5' has 1 edge, not M-1 = 2"},
      {0, "/ s t = s 3 | 3 t | s 5 | 3 7 | s 3 t", "a second edge out of this node (only s branches)"},
      {0, "/ s t = s 3 | 3 5 | s 5 | 5 t | s 3 5", "a second edge into this node"},
      {0, "/ s t = s 3 | 3 t | s 5 | 5 7 | 7 8 | s 3 t", "the start node 's' (token 1, in Q) has 2 edges out of 5"},
      {0, "/ s t = s 3 | 3 t | s 5 | 5 7 | 8 9 | 9 8 | s 3 t 8", "the arm that starts at '3' has 2 edges, not M-1 = 3"},
      {0, "/ s t = s 3 | 3 t | s 5 | 5 7 | s 8 | 8 9 | 10 11 | s 3 t", "edges out of 7"},
      {0, "/ s 9 = s 3 | 3 t | s 5 | 5 7 | s 3 t", "input token 2 '9': with task['st_names'] Q is '/ s t ='"},
      {0, "/ s t = s 3 | 3 9 | s 5 | 5 7 | s 3 t", "input token 2 't': the target is not the last node of an arm"},
      {0, "/ 4 t = 4 3 | 3 t | 4 5 | 5 7 | 4 3 t", "input token 1 '4': with task['st_names']"},
      {0, "/ s t = s 3 | 3 t | 3 5 | 5 7 | s 3 t", "has 19 tokens; an input of this task with D=1, M=5"},
      {0, "/ s t = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15", "the input has 0 '|' tokens"},
      {0, "/ s |", "ends early: the task's layout needs more tokens"},
      {1, "/ s t = s 5 | 5 7 | s 3 | 3 t | s 3 t", NULL},
      {1, "/ s t = s 5 | s 3 | 5 7 | 3 t | s 3 t", "input token 7 's': task['order'] = 'arm'"},
      {2, "BOS 4 3 | | 3 9 | | 4 5 | | 5 7 | | / 4 9 = 3 EOS", NULL},
      {2, "4 3 | | 3 9 | | 4 5 | | 5 7 | | / 4 9 = 3 EOS EOS", "input token 0 '4': the task has 'BOS' here"},
      {2, "BOS 4 3 | | 3 9 | | 4 5 | | 5 7 | | / 4 9 = 5 EOS", "input token 21 '5': the answer has '3' here"},
      {2, "BOS s 3 | | 3 t | | s 5 | | 5 7 | | / s t = 3 EOS", "input token 1 's': the program's task writes s and t as numbers"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    rasp_program prog;
    memset(&prog, 0, sizeof prog);
    rasp_task_opts *o = &prog.base;
    raspT_opts_default(o);
    o->st_names = 1;
    o->bos = o->eos = 0;
    if (cases[k].setting == 1) o->order = RASP_ORDER_ARM;
    if (cases[k].setting == 2) {
      o->st_names = 0;
      o->bos = o->eos = 1;
      o->q = RASP_Q_END;
      o->markers = 2;
      o->answer = RASP_ANS_LEAD;
    }
    rasp_input in;
    rasp_error err = {0};
    int r = raspK_parse_input(&prog, 20, cases[k].text, &in, &err);
    if (!cases[k].message) {
      ck_assert_msg(r == 1, "'%s': %s", cases[k].text, err.msg);
      ck_assert_int_eq(in.D, 2);
      ck_assert_int_eq(in.M, 3);
      ck_assert_int_eq(in.lead, 3);
      raspK_input_free(&in);
    } else {
      ck_assert_msg(r == 0, "'%s' was accepted", cases[k].text);
      ck_assert_int_eq(err.code, RASP_E_USAGE); /* a bad --input: exit status 2 */
      ck_assert_msg(strstr(err.msg, cases[k].message), "'%s': got '%s', wanted '%s'",
                    cases[k].text, err.msg, cases[k].message);
      ck_assert_ptr_null(in.tokens);
    }
  }
}
END_TEST

static void load(const char *rel, rasp_program *prog) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", srcdir(), rel);
  static char lib[1024]; /* prog keeps the pointer */
  snprintf(lib, sizeof lib, "%s/stdlib", srcdir());
  rasp_error err = {0};
  ck_assert_msg(raspK_load(path, lib, 2, 5, 100, prog, &err), "%s: %s", rel, err.msg);
}

/* One input's verdict is the verifier's verdict on the same sample: on a
** correct listing (all pass) and on Listing 4 as printed, which fails some
** graphs at D = 2, M = 17 (61 of the first 64). */
static void agrees(const char *rel, int D, int M, int want_fail) {
  rasp_program prog;
  load(rel, &prog);
  rasp_ptrace tr;
  rasp_error err = {0};
  ck_assert_msg(raspK_trace(&prog, D, M, 100, &tr, &err), "%s", err.msg);
  rasp_eval *ev = raspE_new(rasp_ctx_ir(tr.ctx));
  int64_t *tokens = malloc(sizeof(int64_t) * (size_t)tr.n), lead, target;
  int fails = 0;
  for (uint64_t index = 0; index < 64; index++) {
    ck_assert(raspK_sample_tokens(&tr, 1, index, tokens, &lead, &target, &err));
    unsigned char pass;
    ck_assert_msg(raspK_check_batch(&tr, ev, 1, tokens, &lead, &target, &pass, &err), "%s", err.msg);
    char *text = render(&tr.opts, tokens, tr.n);
    rasp_input in;
    ck_assert_msg(raspK_parse_input(&prog, 100, text, &in, &err) == 1, "%s", err.msg);
    ck_assert_int_eq(in.lead, lead);
    ck_assert_int_eq(in.target, target);
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    int r = raspK_run_input(&prog, 100, &in, f, &err);
    fclose(f);
    ck_assert_int_eq(r, pass);
    ck_assert_ptr_nonnull(strstr(buf, pass ? "verdict:  ok" : "verdict:  FAIL"));
    ck_assert_ptr_nonnull(strstr(buf, text)); /* the input as given */
    ck_assert_ptr_nonnull(strstr(buf, "intermediate values"));
    fails += !pass;
    free(buf);
    raspK_input_free(&in);
    free(text);
  }
  if (want_fail) ck_assert_msg(fails > 0 && fails < 64, "%s: %d of 64 failed", rel, fails);
  else ck_assert_int_eq(fails, 0);
  free(tokens);
  raspE_free(ev);
  raspK_trace_free(&tr);
  raspK_program_free(&prog);
}

START_TEST(test_verdicts_agree) {
  agrees("programs/listing1_back_target.rasp", 3, 5, 0);
  agrees("programs/readout2_backward_targets.rasp", 2, 4, 0);
  agrees("programs/listing4_log.rasp", 2, 17, 1);
}
END_TEST

START_TEST(test_trace_error) {
  /* below the program's min_M: tracing refuses, and says why */
  rasp_program prog;
  load("programs/listing1_back_target.rasp", &prog);
  rasp_input in;
  rasp_error err = {0};
  ck_assert(raspK_parse_input(&prog, 100, "/ s t = s t | s 5 |", &in, &err) == 1);
  ck_assert_int_eq(in.M, 2);
  ck_assert_int_eq(raspK_run_input(&prog, 100, &in, stdout, &err), -2);
  ck_assert_ptr_nonnull(strstr(err.msg, "needs M >= 3"));
  raspK_input_free(&in);
  raspK_program_free(&prog);
}
END_TEST

static Suite *input_suite(void) {
  Suite *s = suite_create("input");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_round_trip);
  tcase_add_test(tc, test_refusals);
  tcase_add_test(tc, test_verdicts_agree);
  tcase_add_test(tc, test_trace_error);
  suite_add_tcase(s, tc);
  return s;
}

RASP_CHECK_MAIN(input_suite())
