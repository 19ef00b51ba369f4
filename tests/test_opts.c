/*
** test_opts.c -- the one option table of the `rasp` commands (cli_opts.c):
** every option in the table is in its commands' help and parses there,
** the help fits 79 columns,
** with its value as --opt VALUE and --opt=VALUE; every command refuses an
** option no command has and one that only other commands take; a flag
** refuses a value; a value option without one is refused.  Then the typed
** rows of ropts.h (rasp-train's table is made of them) on a small table:
** each kind stored, ranges and choices enforced, the help's defaults.
*/
#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rmem.h"

#include "check_main.h"

static const struct {
  const char *name;
  unsigned bit;
} cmds[] = {{"run", RASPC_RUN},         {"trace", RASPC_TRACE}, {"verify", RASPC_VERIFY},
            {"layers", RASPC_LAYERS},   {"draw", RASPC_DRAW},   {"gen", RASPC_GEN},
            {"compile", RASPC_COMPILE}, {"apply", RASPC_APPLY}, {"repl", RASPC_REPL}};
#define NCMDS (sizeof cmds / sizeof cmds[0])

static char *help_of(unsigned cmd) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  raspC_usage(cmd, f);
  fclose(f);
  return text;
}

/* Whether help lists name as an option: at a line's start ("  --D N") or
** as a second spelling ("  --verbose, -v"). */
static int lists(const char *help, const char *name) {
  char a[64], b[64];
  snprintf(a, sizeof a, "\n  %s", name);
  snprintf(b, sizeof b, ", %s", name);
  for (const char *p = help; (p = strstr(p, a)); p++)
    if (p[strlen(a)] == ' ' || p[strlen(a)] == '\n' || p[strlen(a)] == ',') return 1;
  for (const char *p = help; (p = strstr(p, b)); p++)
    if (p[strlen(b)] == ' ' || p[strlen(b)] == '\n') return 1;
  return 0;
}

/* Parses {cmd, a, b} (b may be NULL); returns the count or RASPC_*. */
static int parse3(unsigned cmd, const char *a, const char *b, raspC_arg *first) {
  char *argv[] = {"cmd", (char *)a, (char *)b, NULL};
  raspC_arg *args = NULL;
  int n = raspC_parse(cmd, b ? 3 : 2, argv, &args);
  if (n > 0 && first) *first = args[0];
  if (n >= 0) raspM_free(args);
  return n;
}

START_TEST(test_every_option_in_help_and_parsed) {
  int rows = raspC_option_count(), checked = 0;
  ck_assert_int_gt(rows, 40);
  for (int k = 0; k < rows; k++) {
    const char *name;
    unsigned bits;
    ck_assert(raspC_option_at(k, &name, &bits));
    for (size_t c = 0; c < NCMDS; c++) {
      if (!(bits & cmds[c].bit)) continue;
      char *help = help_of(cmds[c].bit);
      ck_assert_msg(lists(help, name), "rasp %s --help lacks %s", cmds[c].name, name);
      free(help);
      if (!strcmp(name, "--help") || !strcmp(name, "--version")) {
        ck_assert_int_eq(parse3(cmds[c].bit, name, NULL, NULL), RASPC_DONE);
        continue;
      }
      /* as a flag, or with the value after it: either way one option */
      raspC_arg got;
      int n = parse3(cmds[c].bit, name, "v1", &got);
      ck_assert_msg(n == 1 || n == 2, "rasp %s %s v1: %d", cmds[c].name, name, n);
      ck_assert_str_eq(got.name, name);
      if (n == 1) { /* it took the value */
        ck_assert_str_eq(got.val, "v1");
        char eq[96];
        snprintf(eq, sizeof eq, "%s=v2", name);
        if (name[1] == '-') {
          ck_assert_int_eq(parse3(cmds[c].bit, eq, NULL, &got), 1);
          ck_assert_str_eq(got.val, "v2");
        }
        /* no value at the end: refused */
        ck_assert_int_eq(parse3(cmds[c].bit, name, NULL, NULL), RASPC_BAD);
      } else { /* a flag: "v1" is an operand, and --flag=x is refused */
        ck_assert_ptr_null(got.val);
        char eq[96];
        snprintf(eq, sizeof eq, "%s=x", name);
        if (name[1] == '-') ck_assert_int_eq(parse3(cmds[c].bit, eq, NULL, NULL), RASPC_BAD);
      }
      checked++;
    }
  }
  ck_assert_int_gt(checked, 100);
}
END_TEST

START_TEST(test_help_fits_80_columns) {
  for (size_t c = 0; c < NCMDS; c++) {
    char *help = help_of(cmds[c].bit);
    ck_assert(strncmp(help, "usage: rasp ", 12) == 0);
    for (char *line = help, *nl; *line; line = nl + 1) {
      nl = strchr(line, '\n');
      ck_assert_ptr_nonnull(nl);
      ck_assert_msg(nl - line <= 79, "rasp %s --help: a line of %d columns", cmds[c].name,
                    (int)(nl - line));
    }
    free(help);
  }
}
END_TEST

START_TEST(test_unknown_and_unused_refused) {
  for (size_t c = 0; c < NCMDS; c++) {
    ck_assert_int_eq(parse3(cmds[c].bit, "--no-such-option", NULL, NULL), RASPC_BAD);
    ck_assert_int_eq(parse3(cmds[c].bit, "--no-such-option=1", NULL, NULL), RASPC_BAD);
    ck_assert_int_eq(parse3(cmds[c].bit, "-Z", NULL, NULL), RASPC_BAD);
  }
  /* options that only other commands take */
  ck_assert_int_eq(parse3(RASPC_VERIFY, "--logits", NULL, NULL), RASPC_BAD);
  ck_assert_int_eq(parse3(RASPC_DRAW, "--graphs", "3", NULL), RASPC_BAD);
  ck_assert_int_eq(parse3(RASPC_GEN, "--stdlib", "d", NULL), RASPC_BAD);
  ck_assert_int_eq(parse3(RASPC_REPL, "--input", "a", NULL), RASPC_BAD);
  ck_assert_int_eq(parse3(RASPC_RUN, "-o", "x", NULL), RASPC_BAD);
}
END_TEST

START_TEST(test_forms) {
  raspC_arg got;
  /* a short option's value attached, and its long spelling */
  ck_assert_int_eq(parse3(RASPC_GEN, "-n10", NULL, &got), 1);
  ck_assert_int_eq(got.id, RASPC_O_COUNT_SAMPLES);
  ck_assert_str_eq(got.val, "10");
  ck_assert_int_eq(parse3(RASPC_GEN, "--count-samples=7", NULL, &got), 1);
  ck_assert_str_eq(got.val, "7");
  /* one id, spelt per command: -o is draw's FILE and gen's --output */
  ck_assert_int_eq(parse3(RASPC_DRAW, "-o", "g.dot", &got), 1);
  ck_assert_int_eq(got.id, RASPC_O_OUT);
  ck_assert_int_eq(parse3(RASPC_GEN, "--output", "s.jsonl", &got), 1);
  ck_assert_int_eq(got.id, RASPC_O_OUT);
  /* a value that looks like an option is still the value */
  ck_assert_int_eq(parse3(RASPC_RUN, "--input", "--x", &got), 1);
  ck_assert_str_eq(got.val, "--x");
  ck_assert_int_eq(parse3(RASPC_RUN, "--input=a=b", NULL, &got), 1);
  ck_assert_str_eq(got.val, "a=b");
  /* operands, "-" among them */
  ck_assert_int_eq(parse3(RASPC_RUN, "f.rasp", "-", &got), 2);
  ck_assert_int_eq(got.id, RASPC_OPERAND);
  ck_assert_str_eq(got.val, "f.rasp");
  unsigned cmd;
  ck_assert(raspC_command("compile", &cmd));
  ck_assert_uint_eq(cmd, RASPC_COMPILE);
  ck_assert(!raspC_command("nope", &cmd));
}
END_TEST

/* ---- ropts.h's typed rows (rasp-train's kind of table), on a small table */

typedef struct toy {
  int n, mode, flag;
  long big;
  uint64_t seed;
  float rate;
  double scale;
  const char *name;
} toy;
static const raspU_choice toy_modes[] = {{"fast", 1}, {"slow", 2}, {NULL, 0}};
static const raspU_choice toy_on[] = {{"", 7}};
static int toy_usages;
static void toy_usage(unsigned cmd, FILE *out) {
  (void)cmd;
  (void)out;
  toy_usages++;
}
static const raspU_option toy_rows[] = {
    {.name = "--n", .arg = "N", .kind = RASPU_INT, .off = offsetof(toy, n), .lo = 1, .hi = 10,
     .sets = 1, .id = 1, .help = "n"},
    {.name = "--big", .arg = "N", .kind = RASPU_LONG, .off = offsetof(toy, big), .lo = 0,
     .hi = 1e12, .sets = 1, .help = "big"},
    {.name = "--seed", .arg = "S", .kind = RASPU_U64, .off = offsetof(toy, seed), .lo = 0,
     .hi = 1e18, .sets = 1, .help = "seed"},
    {.name = "--rate", .arg = "X", .kind = RASPU_FLOAT, .off = offsetof(toy, rate), .lo = 0,
     .hi = 1, .hi_open = 1, .sets = 1, .help = "rate"},
    {.name = "--scale", .arg = "X", .kind = RASPU_DOUBLE, .off = offsetof(toy, scale), .lo = -1,
     .hi = 1, .sets = 1, .help = "scale"},
    {.name = "--mode", .arg = "fast|slow", .kind = RASPU_CHOICE, .off = offsetof(toy, mode),
     .choices = toy_modes, .sets = 1, .help = "mode"},
    {.name = "--flag", .kind = RASPU_FLAG, .off = offsetof(toy, flag), .choices = toy_on,
     .sets = 1, .help = "flag"},
    {.name = "--name", .arg = "S", .kind = RASPU_STRING, .off = offsetof(toy, name), .sets = 1,
     .help = "name"},
    {.name = "--other", .arg = "S", .sets = 2, .help = "only the second command's"},
    {.name = "--help", .alias = "-h", .sets = 3, .help = "help"},
    {.name = "--version", .sets = 3, .help = "version"},
};
static const char *toy_command(unsigned cmd) { return cmd == 1 ? "one" : "two"; }
static const raspU_table toy_table = {"toy", toy_rows, sizeof toy_rows / sizeof toy_rows[0],
                                      toy_command, toy_usage, 20, "*"};

/* Parses {a, b} (b may be NULL) for command one into *t; the count or RASPU_*. */
static int toy_parse(const char *a, const char *b, toy *t) {
  char *argv[] = {"toy", (char *)a, (char *)b, NULL};
  raspU_arg *args = NULL;
  int n = raspU_parse(&toy_table, 1, "toy", b ? 3 : 2, argv, t, &args);
  if (n >= 0) raspM_free(args);
  return n;
}

START_TEST(test_typed_rows) {
  toy t = {0};
  ck_assert_int_eq(toy_parse("--n", "10", &t), 1);
  ck_assert_int_eq(t.n, 10);
  ck_assert_int_eq(toy_parse("--n=3", NULL, &t), 1);
  ck_assert_int_eq(t.n, 3);
  /* out of range, not a number, trailing text: refused, the value kept */
  ck_assert_int_eq(toy_parse("--n", "11", &t), RASPU_BAD);
  ck_assert_int_eq(toy_parse("--n", "0", &t), RASPU_BAD);
  ck_assert_int_eq(toy_parse("--n", "2x", &t), RASPU_BAD);
  ck_assert_int_eq(toy_parse("--n=", NULL, &t), RASPU_BAD);
  ck_assert_int_eq(t.n, 3);
  ck_assert_int_eq(toy_parse("--big", "1000000000000", &t), 1);
  ck_assert(t.big == 1000000000000L);
  ck_assert_int_eq(toy_parse("--seed", "123456789012345", &t), 1);
  ck_assert(t.seed == 123456789012345ULL);
  /* [0, 1): 1 itself refused */
  ck_assert_int_eq(toy_parse("--rate", "0.5", &t), 1);
  ck_assert(t.rate == 0.5f);
  ck_assert_int_eq(toy_parse("--rate", "1", &t), RASPU_BAD);
  ck_assert_int_eq(toy_parse("--rate", "nan", &t), RASPU_BAD);
  ck_assert_int_eq(toy_parse("--scale", "-1", &t), 1);
  ck_assert(t.scale == -1.0);
  ck_assert_int_eq(toy_parse("--scale", "1.5", &t), RASPU_BAD);
  ck_assert_int_eq(toy_parse("--mode", "slow", &t), 1);
  ck_assert_int_eq(t.mode, 2);
  ck_assert_int_eq(toy_parse("--mode", "medium", &t), RASPU_BAD);
  ck_assert_int_eq(toy_parse("--flag", NULL, &t), 1);
  ck_assert_int_eq(t.flag, 7);
  ck_assert_int_eq(toy_parse("--flag=1", NULL, &t), RASPU_BAD);
  ck_assert_int_eq(toy_parse("--name", "x y", &t), 1);
  ck_assert_str_eq(t.name, "x y");
  /* the second command's option, an unknown one, an operand */
  ck_assert_int_eq(toy_parse("--other", "v", &t), RASPU_BAD);
  ck_assert_int_eq(toy_parse("--nope", NULL, &t), RASPU_BAD);
  ck_assert_int_eq(toy_parse("compare", NULL, &t), 1);
  /* --help calls the table's usage; both end the parse */
  ck_assert_int_eq(toy_parse("-h", NULL, &t), RASPU_DONE);
  ck_assert_int_eq(toy_usages, 1);
  ck_assert_int_eq(toy_parse("--version", NULL, &t), RASPU_DONE);
}
END_TEST

START_TEST(test_typed_help) {
  toy d = {.n = 4, .mode = 2, .rate = 0.25f, .name = NULL};
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  raspU_help(&toy_table, 1, &d, f);
  fclose(f);
  /* ranges and defaults read off the defaulted struct; not command two's */
  ck_assert_ptr_nonnull(strstr(text, "  --n N             n (1..10; default 4)\n"));
  ck_assert_ptr_nonnull(strstr(text, "rate (0 <= X < 1; default 0.25)"));
  ck_assert_ptr_nonnull(strstr(text, "mode (default slow)"));
  ck_assert_ptr_nonnull(strstr(text, "name (default none)"));
  ck_assert_ptr_nonnull(strstr(text, "  --help, -h        help\n"));
  ck_assert_ptr_null(strstr(text, "--other"));
  free(text);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("opts");
  TCase *tc = tcase_create("table");
  tcase_add_test(tc, test_every_option_in_help_and_parsed);
  tcase_add_test(tc, test_help_fits_80_columns);
  tcase_add_test(tc, test_unknown_and_unused_refused);
  tcase_add_test(tc, test_forms);
  tcase_add_test(tc, test_typed_rows);
  tcase_add_test(tc, test_typed_help);
  suite_add_tcase(s, tc);
  return s;
}

RASP_CHECK_MAIN(make_suite())
