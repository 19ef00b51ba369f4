/*
** test_error.c -- the error convention (rerror.h, rasp.h) through the public
** API only: this test links librasp.so, so it also shows that what a caller
** needs to act on an error is exported.
**
** Representative errors of every kind carry their code (err.code), the
** unknown-name error its subject, and raspR_exit_status maps the codes to
** the exit statuses rasp(1) documents.  Functions that can fail return 1 or
** 0 (with err), never 0 or -1.  The exit statuses through the binary are in
** tests/errors.sh.
*/
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rasp.h"
#include "rmodel.h"
#include "rtask.h"
#include "rverify.h"

#include "check_main.h"

static const char *srcdir(void) {
  const char *d = getenv("top_srcdir");
  return d ? d : ".";
}

static const char *stdlib_dir(void) {
  static char lib[1024];
  snprintf(lib, sizeof lib, "%s/stdlib", srcdir());
  return lib;
}

/* A context of length 3 with the stdlib, small limits (fast LIMIT errors). */
static rasp_ctx *context(void) {
  rasp_limits lim;
  rasp_default_limits(&lim);
  lim.max_list = 1000;
  lim.max_depth = 50;
  rasp_error err = {0};
  rasp_ctx *ctx = rasp_ctx_new(3, &lim, &err);
  ck_assert_msg(ctx != NULL, "%s", err.msg);
  ck_assert_msg(rasp_load_stdlib(ctx, stdlib_dir(), &err) == 1, "%s", err.msg);
  return ctx;
}

/* Runs text in a fresh context; it must fail with code (and exit status). */
static rasp_error run_failing(const char *text, rasp_errcode code, int status) {
  rasp_ctx *ctx = context();
  rasp_error err = {0};
  int r = rasp_exec_string(ctx, "<test>", text, &err);
  ck_assert_msg(r == 0, "'%s' ran", text);
  ck_assert_msg(err.set, "'%s': no error set", text);
  ck_assert_msg(err.code == code, "'%s': code %d (%s), wanted %d (%s): %s", text, (int)err.code,
                raspR_code_name(err.code), (int)code, raspR_code_name(code), err.msg);
  ck_assert_int_eq(raspR_exit_status(&err), status);
  rasp_ctx_free(ctx);
  return err;
}

START_TEST(test_program_errors) {
  rasp_error e = run_failing("def f(:\n    pass\n", RASP_E_SYNTAX, 1);
  ck_assert(e.pos.src != NULL && e.pos.line == 1); /* still located */
  run_failing("x = \"a\" @ 1\n", RASP_E_SYNTAX, 1); /* the lexer's */
  e = run_failing("x = 1\ny = undefined_thing + x\n", RASP_E_NAME, 1);
  ck_assert_str_eq(e.subject, "undefined_thing");
  ck_assert_int_eq(e.pos.line, 2);
  run_failing("x = 1 + 'a'\n", RASP_E_TYPE, 1);
  run_failing("x = 3\nx()\n", RASP_E_TYPE, 1);
  e = run_failing("assert 1 == 2\n", RASP_E_RUNTIME, 1);
  ck_assert_str_eq(e.subject, ""); /* only NAME has one */
  run_failing("x = 1 // 0\n", RASP_E_RUNTIME, 1);
  run_failing("x = list(range(5000))\n", RASP_E_LIMIT, 1);
  run_failing("def f(n):\n    return f(n + 1)\nf(0)\n", RASP_E_LIMIT, 1);
  run_failing("cfunc('libm.so.6', 'cos', 'double(double)')\n", RASP_E_FFI_REFUSED, 1);
  run_failing("include('notes.txt')\n", RASP_E_ACCESS, 1);
}
END_TEST

START_TEST(test_interrupt) {
  rasp_ctx *ctx = context();
  rasp_error err = {0};
  rasp_interrupt(ctx, 1);
  ck_assert_int_eq(rasp_exec_string(ctx, "<test>", "while True:\n    pass\n", &err), 0);
  ck_assert_int_eq(err.code, RASP_E_INTERRUPTED);
  rasp_ctx_free(ctx);
}
END_TEST

/* The entry function and the REPL's :doc: an unknown name is a code or a
** NULL, never a text to compare. */
START_TEST(test_names) {
  rasp_ctx *ctx = context();
  rasp_error err = {0};
  ck_assert_int_eq(rasp_exec_string(ctx, "<test>", "def main(s):\n    return s\n", &err), 1);
  ck_assert_int_eq(rasp_trace(ctx, "nope", &err), 0);
  ck_assert_int_eq(err.code, RASP_E_NAME);
  ck_assert_str_eq(err.subject, "nope");
  ck_assert_ptr_null(rasp_describe(ctx, "nope"));
  char *d = rasp_describe(ctx, "main");
  ck_assert_ptr_nonnull(d);
  free(d);
  rasp_error later = err;
  raspR_set(&later, (rasp_pos){0}, "another");
  ck_assert_int_eq(later.code, RASP_E_RUNTIME); /* a new error forgets the old code */
  ck_assert_str_eq(later.subject, "");
  rasp_ctx_free(ctx);
  /* the layout globals that rasp run's hint names, from rtask's one list */
  ck_assert(raspT_is_layout_global("arm_len") && raspT_is_layout_global("ans_start"));
  ck_assert(!raspT_is_layout_global("arm") && !raspT_is_layout_global("main"));
}
END_TEST

/* Errors about what the caller gave: options, files, task settings. */
START_TEST(test_usage_and_files) {
  rasp_error err = {0};
  ck_assert_ptr_null(rasp_ctx_new(0, NULL, &err));
  ck_assert_int_eq(err.code, RASP_E_USAGE);
  ck_assert_int_eq(raspR_exit_status(&err), 2);

  rasp_ctx *ctx = context();
  memset(&err, 0, sizeof err);
  ck_assert_int_eq(rasp_exec_file(ctx, "/nonexistent/prog.rasp", &err), 0);
  ck_assert_int_eq(err.code, RASP_E_READ);
  ck_assert_int_eq(raspR_exit_status(&err), 2);
  ck_assert_ptr_null(err.pos.src);
  rasp_ctx_free(ctx);

  rasp_task_opts o;
  raspT_opts_default(&o);
  o.D = 0;
  memset(&err, 0, sizeof err);
  ck_assert_int_eq(raspT_opts_check(&o, &err), 0);
  ck_assert_int_eq(err.code, RASP_E_USAGE);

  memset(&err, 0, sizeof err);
  ck_assert_int_eq(raspR_write_file("/nonexistent-dir/x", "x", 1, &err), 0);
  ck_assert_int_eq(err.code, RASP_E_WRITE);
  ck_assert_int_eq(raspR_exit_status(&err), 2);

  const char *const missing[] = {"rasp-no-such-program", NULL};
  memset(&err, 0, sizeof err);
  ck_assert_int_eq(raspR_spawn(missing, -1, -1, &err), 0);
  ck_assert_int_eq(err.code, RASP_E_SPAWN);
  ck_assert_int_eq(raspR_exit_status(&err), 1);
}
END_TEST

/* Files written for the test in a fresh directory. */
static char tmpdir[64];

static const char *put(const char *name, const char *text) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  return path;
}

START_TEST(test_task_and_model_files) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/rasp-test-error.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
  rasp_program prog;
  rasp_error err = {0};
  ck_assert_int_eq(raspK_load(put("plain.rasp", "def main(seq):\n    return seq\n"),
                              stdlib_dir(), 2, 5, 100, &prog, &err),
                   0);
  raspK_program_free(&prog);
  ck_assert_int_eq(err.code, RASP_E_NO_TASK); /* what rasp layers/draw/compile ask */
  ck_assert_int_eq(raspR_exit_status(&err), 2);
  memset(&err, 0, sizeof err);
  ck_assert_int_eq(raspK_load(put("bad.rasp", "task = {'order': 'diagonal'}\n"
                                              "def main(seq):\n    return seq\n"),
                              stdlib_dir(), 2, 5, 100, &prog, &err),
                   0);
  raspK_program_free(&prog);
  ck_assert_int_eq(err.code, RASP_E_TASK);
  ck_assert_int_eq(raspR_exit_status(&err), 2);

  put("m.json", "{\"config\": 3}\n");
  put("m.safetensors", "");
  rasp_model m;
  char stem[128];
  snprintf(stem, sizeof stem, "%s/m", tmpdir);
  memset(&err, 0, sizeof err);
  ck_assert_int_eq(raspN_load(&m, stem, &err), 0);
  ck_assert_msg(err.code == RASP_E_FORMAT, "%d: %s", (int)err.code, err.msg);
  snprintf(stem, sizeof stem, "%s/none", tmpdir);
  memset(&err, 0, sizeof err);
  ck_assert_int_eq(raspN_load(&m, stem, &err), 0);
  ck_assert_int_eq(err.code, RASP_E_READ);

  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The table itself: names, and the exit status of every code. */
START_TEST(test_codes) {
  for (int c = 0; c < RASP_E_COUNT; c++) {
    const char *name = raspR_code_name((rasp_errcode)c);
    ck_assert(name && *name && strcmp(name, "?") != 0);
    for (int d = 0; d < c; d++) ck_assert_str_ne(name, raspR_code_name((rasp_errcode)d));
    rasp_error e = {0};
    raspR_setnoposc(&e, (rasp_errcode)c, "x");
    int want = c == RASP_E_USAGE || c == RASP_E_READ || c == RASP_E_WRITE ||
                       c == RASP_E_FORMAT || c == RASP_E_NO_TASK || c == RASP_E_TASK
                   ? 2
                   : 1;
    ck_assert_msg(raspR_exit_status(&e) == want, "%s", name);
  }
  ck_assert_str_eq(raspR_code_name(RASP_E_COUNT), "?");
  rasp_error none = {0};
  ck_assert_int_eq(raspR_exit_status(&none), 0);
  ck_assert_int_eq(raspR_exit_status(NULL), 0);
  ck_assert_int_eq(rasp_abi_version(), RASP_ABI_VERSION);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("error");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_program_errors);
  tcase_add_test(tc, test_interrupt);
  tcase_add_test(tc, test_names);
  tcase_add_test(tc, test_usage_and_files);
  tcase_add_test(tc, test_task_and_model_files);
  tcase_add_test(tc, test_codes);
  suite_add_tcase(s, tc);
  return s;
}

RASP_CHECK_MAIN(make_suite())
