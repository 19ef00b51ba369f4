/*
** test_access.c -- Check unit tests of what a program may reach beyond the
** interpreter (rasp_access in rasp.h) and of raspR_spawn (rerror.h).
**
** A context trusts a program with nothing: cfunc() is a located error that
** names --allow-ffi, include() reads only .rasp files inside the program's
** directory tree (realpath'd, so '..' and links stay inside), and the
** refusals never quote the refused file.  Each test builds its own file
** tree under a mkdtemp directory.  raspR_spawn runs a program from an
** argument vector: shell syntax in an argument arrives literally.
*/
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rasp.h"

#include "check_main.h"

static rasp_ctx *ctx;
static rasp_error err;
static char dir[] = "/tmp/test_access.XXXXXX";

static void write_text(const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

static void link_to(const char *target, const char *name) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  ck_assert_int_eq(symlink(target, path), 0);
}

/* dir/prog is the program's tree; dir/outside.rasp and dir/prog/notes.txt
** hold text that must never appear in an error. */
static void setup(void) {
  memset(&err, 0, sizeof err);
  strcpy(dir, "/tmp/test_access.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char sub[256];
  snprintf(sub, sizeof sub, "%s/prog", dir);
  ck_assert_int_eq(mkdir(sub, 0755), 0);
  write_text("outside.rasp", "SECRET_OUTSIDE = 1 +\n");
  write_text("prog/notes.txt", "SECRET_NOTES = 1 +\n");
  write_text("prog/lib.rasp", "from_lib = 2\n");
  link_to("notes.txt", "prog/notes.rasp");
  link_to("../outside.rasp", "prog/escape.rasp");
  link_to("/etc/passwd", "prog/passwd.rasp");
  ctx = rasp_ctx_new(4, NULL, &err);
  ck_assert_ptr_nonnull(ctx);
}

static void teardown(void) {
  rasp_ctx_free(ctx);
  ctx = NULL;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* Writes dir/prog/main.rasp and runs it; 1 on success. */
static int run_main(const char *text) {
  write_text("prog/main.rasp", text);
  char path[256];
  snprintf(path, sizeof path, "%s/prog/main.rasp", dir);
  memset(&err, 0, sizeof err);
  return rasp_exec_file(ctx, path, &err);
}

/* The refusal is located at the include() call and quotes only that line. */
static void assert_refused(const char *text, const char *why) {
  ck_assert_msg(!run_main(text), "no error for: %s", text);
  ck_assert_msg(strstr(err.msg, why) != NULL, "'%s' lacks '%s'", err.msg, why);
  ck_assert_int_eq(err.pos.line, 1);
  ck_assert_int_eq(err.pos.col, 1);
  ck_assert_msg(strstr(err.file, "main.rasp") != NULL, "error in %s", err.file);
  size_t first = strcspn(text, "\n");
  ck_assert_msg(strlen(err.line) == first && strncmp(err.line, text, first) == 0,
                "quoted '%s'", err.line);
  ck_assert_ptr_null(strstr(err.msg, "SECRET"));
  ck_assert_ptr_null(strstr(err.msg, "root:"));
}

START_TEST(test_cfunc_off_by_default) {
  memset(&err, 0, sizeof err);
  const char *prog = "x = 1\ncbrt = cfunc('libm.so.6', 'cbrt', 'double(double)')\n";
  ck_assert(!rasp_exec_string(ctx, "<t>", prog, &err));
  ck_assert_int_eq(err.pos.line, 2);
  ck_assert_int_eq(err.pos.col, 8);
  ck_assert_msg(strstr(err.msg, "cfunc() is off") && strstr(err.msg, "--allow-ffi"), "%s",
                err.msg);
  rasp_access a = {0};
  a.allow_ffi = 1;
  ck_assert(rasp_set_access(ctx, &a, &err));
  memset(&err, 0, sizeof err);
  ck_assert_msg(rasp_exec_string(ctx, "<t>", "cbrt = cfunc('libm.so.6', 'cbrt', 'double(double)')\n"
                                             "y = int(cbrt(27))\n", &err), "%s", err.msg);
  int64_t y = 0;
  ck_assert(rasp_get_int(ctx, "y", &y, &err));
  ck_assert_int_eq(y, 3);
  /* and off again */
  ck_assert(rasp_set_access(ctx, NULL, &err));
  ck_assert(
      !rasp_exec_string(ctx, "<t>", "f = cfunc('libm.so.6', 'cbrt', 'double(double)')\n", &err));
}
END_TEST

START_TEST(test_include_inside_tree) {
  ck_assert_msg(run_main("include('lib.rasp')\nz = from_lib + 1\n"), "%s", err.msg);
  int64_t z = 0;
  ck_assert(rasp_get_int(ctx, "z", &z, &err));
  ck_assert_int_eq(z, 3);
}
END_TEST

START_TEST(test_include_refusals) {
  assert_refused("include('../outside.rasp')\n", "outside the program's directory tree");
  assert_refused("include('escape.rasp')\n", "outside the program's directory tree");
  assert_refused("include('passwd.rasp')\n", "outside the program's directory tree");
  assert_refused("include('/etc/passwd')\n", "not a program");
  assert_refused("include('notes.txt')\n", "not a program");
  assert_refused("include('notes.rasp')\n", "not a program");
  assert_refused("include('missing.rasp')\n", "cannot read");
}
END_TEST

/* include_dirs add a tree; nothing lets a file that is not a program in. */
START_TEST(test_include_dirs) {
  const char *dirs[] = {dir};
  rasp_access a = {0};
  a.include_dirs = dirs;
  a.ninclude_dirs = 1;
  ck_assert(rasp_set_access(ctx, &a, &err));
  /* the file is read now: its syntax error is reported in it */
  ck_assert(!run_main("include('../outside.rasp')\n"));
  ck_assert_msg(strstr(err.file, "outside.rasp") != NULL, "%s: %s", err.file, err.msg);
  const char *all[] = {"/"};
  a.include_dirs = all;
  ck_assert(rasp_set_access(ctx, &a, &err));
  assert_refused("include('passwd.rasp')\n", "not a program");
  const char *bad[] = {"/nonexistent/dir"};
  a.include_dirs = bad;
  memset(&err, 0, sizeof err);
  ck_assert(!rasp_set_access(ctx, &a, &err));
  ck_assert_msg(strstr(err.msg, "/nonexistent/dir") != NULL, "%s", err.msg);
}
END_TEST

/* A root given explicitly (the REPL's current directory) replaces the
** program's directory. */
START_TEST(test_include_root) {
  rasp_access a = {0};
  a.root = dir;
  ck_assert(rasp_set_access(ctx, &a, &err));
  ck_assert(!run_main("include('../outside.rasp')\n"));
  ck_assert_msg(strstr(err.file, "outside.rasp") != NULL, "%s: %s", err.file, err.msg);
}
END_TEST

/* Reads the whole of fd from the start into buf. */
static const char *slurp(int fd, char *buf, size_t size) {
  ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
  ssize_t n = read(fd, buf, size - 1);
  ck_assert_int_ge(n, 0);
  buf[n] = '\0';
  return buf;
}

START_TEST(test_spawn) {
  char path[256], buf[256];
  snprintf(path, sizeof path, "%s/out", dir);
  int out = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
  ck_assert_int_ge(out, 0);
  /* shell syntax in an argument is just bytes */
  const char *literal = "a'b; touch pwned; $(id) `id` \"c\"";
  const char *echo[] = {"printf", "%s", literal, NULL};
  ck_assert_msg(raspR_spawn(echo, -1, out, &err) == 1, "%s", err.msg);
  ck_assert_str_eq(slurp(out, buf, sizeof buf), literal);
  ck_assert_int_ne(access("pwned", F_OK), 0);
  /* standard input */
  const char *cat[] = {"cat", NULL};
  int in = open(path, O_RDONLY);
  ck_assert_int_ge(in, 0);
  int out2 = open(dir, O_RDWR | O_TMPFILE, 0600);
  ck_assert_int_ge(out2, 0);
  ck_assert_msg(raspR_spawn(cat, in, out2, &err) == 1, "%s", err.msg);
  ck_assert_str_eq(slurp(out2, buf, sizeof buf), literal);
  close(in);
  close(out2);
  close(out);
  /* failures say what happened */
  const char *fails[] = {"sh", "-c", "exit 3", NULL};
  ck_assert_int_eq(raspR_spawn(fails, -1, -1, &err), 0);
  ck_assert_msg(strstr(err.msg, "'sh' failed with exit status 3") != NULL, "%s", err.msg);
  const char *killed[] = {"sh", "-c", "kill -9 $$", NULL};
  ck_assert_int_eq(raspR_spawn(killed, -1, -1, &err), 0);
  ck_assert_msg(strstr(err.msg, "killed by signal 9") != NULL, "%s", err.msg);
  const char *missing[] = {"rasp-no-such-program", NULL};
  errno = 0;
  ck_assert_int_eq(raspR_spawn(missing, -1, -1, &err), 0);
  ck_assert_int_eq(errno, ENOENT);
  ck_assert_msg(strstr(err.msg, "cannot run 'rasp-no-such-program': not found") != NULL, "%s",
                err.msg);
}
END_TEST

static Suite *access_suite(void) {
  Suite *s = suite_create("access");
  TCase *tc = tcase_create("access");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_cfunc_off_by_default);
  tcase_add_test(tc, test_include_inside_tree);
  tcase_add_test(tc, test_include_refusals);
  tcase_add_test(tc, test_include_dirs);
  tcase_add_test(tc, test_include_root);
  tcase_add_test(tc, test_spawn);
  suite_add_tcase(s, tc);
  return s;
}

RASP_CHECK_MAIN(access_suite())
