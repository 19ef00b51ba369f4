/*
** test_causal.c -- causality (rcausal.h): the semantics of ~ & | on causal
** selectors in the evaluator, the static analysis per position (x[i],
** length, shifts, combinations), the analysis confirmed dynamically by
** changing later tokens (on these programs and on the fuzz harness's seed
** corpus), and the verifier's static and dynamic checks on every causal
** program in programs/ and on the look-ahead program.
*/
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp.h"
#include "rcausal.h"
#include "rtask.h"
#include "rverify.h"

#include "check_main.h"

static const char *const abc[] = {"a", "b", "c"};

static const char *srcdir(void) {
  const char *d = getenv("top_srcdir");
  return d ? d : ".";
}

/* Traces src's main at length n over vocab; NULL with *err when it fails. */
static rasp_ctx *trace(const char *src, const char *const *vocab, int nvocab, int n,
                       rasp_error *err) {
  rasp_ctx *ctx = rasp_ctx_new(n, NULL, err);
  ck_assert_ptr_nonnull(ctx);
  ck_assert(rasp_set_vocab(ctx, vocab, nvocab, err));
  ck_assert_msg(rasp_load_stdlib(ctx, NULL, err), "%s", err->msg);
  if (!rasp_exec_string(ctx, "test", src, err) || !rasp_trace(ctx, "main", err)) {
    rasp_ctx_free(ctx);
    return NULL;
  }
  return ctx;
}

/* ---- the semantics: each combinator against its definition */

typedef int (*ref_sel)(int k, int q, const int64_t *t);

static int r_not_eq_c(int k, int q, const int64_t *t) { (void)t; return k <= q && k != q; }
static int r_not_tok_c(int k, int q, const int64_t *t) { return k <= q && t[k] != t[q]; }
static int r_or_mixed(int k, int q, const int64_t *t) { return k <= q && (k == q || t[k] == t[q]); }
static int r_and_mixed(int k, int q, const int64_t *t) { return k < q && t[k] == t[q]; }
static int r_and_not(int k, int q, const int64_t *t) { return k < q && t[k] == t[q]; }
static int r_not_or(int k, int q, const int64_t *t) { return k <= q && t[k] != t[q]; }
static int r_or_plain(int k, int q, const int64_t *t) { return t[k] != t[q] || k == q; }
static int r_not_plain(int k, int q, const int64_t *t) { (void)k; (void)q; return t[k] != t[q]; }
static int r_not_always_c(int k, int q, const int64_t *t) { (void)k; (void)q; (void)t; return 0; }
static int r_not_not_c(int k, int q, const int64_t *t) { return k <= q && t[k] < t[q]; }

static const struct {
  const char *sel; /* a selector over seq and idx */
  ref_sel ref;     /* its definition */
  int causal;      /* whether the analysis must call sel_width of it causal */
} cases[] = {
    {"~select(idx, idx, equals, causal=True)", r_not_eq_c, 1},
    {"not select(seq, seq, equals, causal=True)", r_not_tok_c, 1},
    {"select(idx, idx, equals, causal=True) | select(seq, seq, equals, causal=False)", r_or_mixed, 1},
    {"select(seq, seq, equals, causal=False) or select(idx, idx, equals, causal=True)", r_or_mixed, 1},
    {"select(idx, idx, lt, causal=True) & select(seq, seq, equals, causal=False)", r_and_mixed, 1},
    {"select(seq, seq, equals, causal=False) and ~select(idx, idx, equals, causal=True)", r_and_not, 1},
    {"~(select(seq, seq, equals, causal=True) | select(idx, idx, gt, causal=False))", r_not_or, 1},
    {"select(seq, seq, not_equals, causal=False) | select(idx, idx, equals, causal=False)", r_or_plain, 0},
    {"~select(seq, seq, equals, causal=False)", r_not_plain, 0},
    {"~select(idx, idx, always, causal=True)", r_not_always_c, 1},
    {"~~select(seq, seq, lt, causal=True)", r_not_not_c, 1},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

START_TEST(test_combinators) {
  enum { N = 6 };
  for (int c = 0; c < NCASES; c++) {
    char src[512];
    snprintf(src, sizeof src,
             "def main(seq):\n"
             "    idx = indices(seq)\n"
             "    s = %s\n"
             "    return sel_width(s) * 100 + aggr_max(s, idx, default=-1)\n",
             cases[c].sel);
    rasp_error err = {0};
    rasp_ctx *ctx = trace(src, abc, 3, N, &err);
    ck_assert_msg(ctx, "%s: %s", cases[c].sel, err.msg);
    rasp_ir *ir = rasp_ctx_ir(ctx);
    rasp_eval *ev = raspE_new(ir);
    for (int trial = 0; trial < 40; trial++) {
      int64_t t[N];
      rasp_rng rng;
      raspT_rng_seed(&rng, 3, (uint64_t)trial);
      for (int i = 0; i < N; i++) t[i] = 1 + (int64_t)raspT_rng_below(&rng, 3);
      ck_assert_msg(raspE_run(ev, 1, t, &err), "%s", err.msg);
      const rasp_elem *got = raspE_value(ev, ir->outputs[0], 0);
      for (int q = 0; q < N; q++) {
        int w = 0, mk = -1;
        for (int k = 0; k < N; k++)
          if (cases[c].ref(k, q, t)) {
            w++;
            mk = k;
          }
        ck_assert_msg(got[q].num == w * 100 + mk && got[q].den == 1,
                      "%s at %d: got %lld, want %d", cases[c].sel, q, (long long)got[q].num,
                      w * 100 + mk);
      }
    }
    raspE_free(ev);
    rasp_causal ca;
    raspA_analyse(ir, &ca);
    ck_assert_msg((raspA_first_causal(&ca, ir->outputs[0]) == 0) == cases[c].causal, "%s",
                  cases[c].sel);
    raspA_free(&ca);
    rasp_ctx_free(ctx);
  }
}
END_TEST

/* ---- static against dynamic */

/* For every q, inputs that keep tokens 0..q and change the rest: every
** output position p <= q that the analysis calls causal must keep its
** value.  Returns the number of positions that changed although called
** causal (0), and counts in *changed those that changed at all. */
static int prefix_mismatches(rasp_ctx *ctx, int nvocab, uint64_t seed, int *changed) {
  rasp_ir *ir = rasp_ctx_ir(ctx);
  int n = ir->n, bad = 0;
  rasp_causal ca;
  raspA_analyse(ir, &ca);
  rasp_eval *ev = raspE_new(ir);
  int64_t *t = malloc(sizeof(int64_t) * (size_t)n * 2);
  for (int trial = 0; trial < 30; trial++) {
    rasp_rng rng;
    raspT_rng_seed(&rng, seed, (uint64_t)trial);
    int q = n > 1 ? (int)raspT_rng_below(&rng, (uint64_t)(n - 1)) : 0;
    for (int i = 0; i < n; i++) {
      t[i] = 1 + (int64_t)raspT_rng_below(&rng, (uint64_t)nvocab);
      t[n + i] = i <= q ? t[i] : 1 + (int64_t)raspT_rng_below(&rng, (uint64_t)nvocab);
    }
    rasp_error err = {0};
    if (!raspE_run(ev, 2, t, &err)) continue; /* the program may reject inputs */
    for (int o = 0; o < ir->noutputs; o++) {
      const rasp_elem *a = raspE_value(ev, ir->outputs[o], 0);
      const rasp_elem *b = raspE_value(ev, ir->outputs[o], 1);
      for (int p = 0; p <= q; p++)
        if (a[p].num != b[p].num || a[p].den != b[p].den) {
          (*changed)++;
          if (raspA_causal_at(&ca, ir->outputs[o], p)) bad++;
        }
    }
  }
  free(t);
  raspE_free(ev);
  raspA_free(&ca);
  return bad;
}

START_TEST(test_positions) {
  /* program, first causal position of the output at n = 6 */
  static const struct {
    const char *body;
    int first;
  } progs[] = {
      {"return seq[2]", 2},
      {"return seq[0]", 0},
      {"return seq[-1]", 5},
      {"return length", 5},
      {"return seq + len(seq)", 0}, /* n is the trace's constant */
      {"return shift_left(seq, 1)", 5},
      {"return shift_right(seq, 1)", 0}, /* not masked, but reads k = q - 1 */
      {"return shift_right(seq, 2, causal=True) + seq", 0},
      {"return aggregate(select(idx, idx + 2, leq, causal=False), seq)", 5},
      {"return aggregate(select(idx, full(idx, 3), leq, causal=False), idx)", 3},
      {"return sel_width(select(seq, seq, equals, causal=True)) + seq[1]", 1},
      {"return aggregate(select(idx, idx, equals, causal=True), seq[3])", 3},
      {"return cumsum(where(seq == 1, full(seq, 1), full(seq, 0)))", 0},
      {"return kqv(seq, seq, idx, equals, causal=False)", 5},
      {"return kqv(seq, seq, idx, equals)", 0},
      {"return tok_map(seq, lambda x: x + 1) * seq", 0},
  };
  for (size_t i = 0; i < sizeof progs / sizeof *progs; i++) {
    char src[512];
    snprintf(src, sizeof src, "def main(seq):\n    idx = indices(seq)\n    %s\n", progs[i].body);
    rasp_error err = {0};
    rasp_ctx *ctx = trace(src, abc, 3, 6, &err);
    ck_assert_msg(ctx, "%s: %s", progs[i].body, err.msg);
    rasp_ir *ir = rasp_ctx_ir(ctx);
    rasp_causal ca;
    raspA_analyse(ir, &ca);
    int out = ir->outputs[0];
    ck_assert_msg(raspA_first_causal(&ca, out) == progs[i].first, "%s: first causal %d, want %d",
                  progs[i].body, raspA_first_causal(&ca, out), progs[i].first);
    for (int q = 0; q < 6; q++)
      ck_assert_int_eq(raspA_causal_at(&ca, out, q), q >= progs[i].first);
    /* refused with the node that leaks, located in the program */
    rasp_error e2 = {0};
    int ok = raspA_check(&ca, out, "declared causal", &e2);
    ck_assert_int_eq(ok, progs[i].first == 0);
    if (!ok) {
      ck_assert_ptr_nonnull(strstr(e2.msg, "reads later positions"));
      /* `length` is made by the stdlib itself (core.rasp) */
      if (!strstr(progs[i].body, "length")) ck_assert_int_eq(e2.pos.line, 3);
    }
    raspA_free(&ca);
    int changed = 0;
    ck_assert_int_eq(prefix_mismatches(ctx, 3, 11, &changed), 0);
    rasp_ctx_free(ctx);
  }
}
END_TEST

START_TEST(test_positions_dynamic) {
  /* x[i] really leaks where the analysis says: position 1 sees token 2 */
  rasp_error err = {0};
  rasp_ctx *ctx = trace("def main(seq):\n    return seq[2]\n", abc, 3, 6, &err);
  ck_assert_ptr_nonnull(ctx);
  int changed = 0;
  ck_assert_int_eq(prefix_mismatches(ctx, 3, 5, &changed), 0);
  ck_assert_int_gt(changed, 0);
  rasp_ctx_free(ctx);
}
END_TEST

/* Every program of the fuzz harness's seed corpus, and every combinator
** case: the analysis never calls a position causal that later tokens
** change. */
START_TEST(test_fuzz_corpus_prefix) {
  static const char *const fv[] = {"a", "b", "c", "(", ")"};
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/fuzz_trace_corpus", srcdir());
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int traced = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    rasp_error err = {0};
    rasp_ctx *ctx = rasp_ctx_new(5, NULL, &err);
    ck_assert(rasp_set_vocab(ctx, fv, 5, &err));
    ck_assert(rasp_load_stdlib(ctx, NULL, &err));
    if (rasp_exec_file(ctx, path, &err) && rasp_has_global(ctx, "main") &&
        rasp_trace(ctx, "main", &err)) {
      int changed = 0;
      ck_assert_msg(prefix_mismatches(ctx, 5, 17, &changed) == 0, "%s", path);
      traced++;
    }
    rasp_ctx_free(ctx);
  }
  closedir(d);
  ck_assert_int_ge(traced, 5);
  for (int c = 0; c < NCASES; c++) {
    char src[512];
    snprintf(src, sizeof src,
             "def main(seq):\n    idx = indices(seq)\n    s = %s\n"
             "    return aggregate(s, seq * 10 + idx), sel_width(s)\n",
             cases[c].sel);
    rasp_error err = {0};
    rasp_ctx *ctx = trace(src, abc, 3, 7, &err);
    ck_assert_msg(ctx, "%s", err.msg);
    int changed = 0;
    ck_assert_msg(prefix_mismatches(ctx, 3, 23, &changed) == 0, "%s", cases[c].sel);
    rasp_ctx_free(ctx);
  }
}
END_TEST

/* ---- the verifier */

static int load(const char *rel, rasp_program *prog) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", srcdir(), rel);
  static char lib[1024]; /* prog keeps the pointer */
  snprintf(lib, sizeof lib, "%s/stdlib", srcdir());
  rasp_error err = {0};
  int ok = raspK_load(path, lib, 2, 5, 100, prog, &err);
  ck_assert_msg(ok, "%s: %s", rel, err.msg);
  return ok;
}

START_TEST(test_causal_programs) {
  /* every program in programs/ that declares causal passes the static check
     and the dynamic one finds nothing */
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/programs", srcdir());
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int causal = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".rasp")) continue;
    char rel[512];
    snprintf(rel, sizeof rel, "programs/%s", e->d_name);
    rasp_program prog;
    load(rel, &prog);
    if (prog.causal) {
      causal++;
      for (int D = 2; D <= 3; D++) {
        rasp_ptrace tr;
        rasp_error err = {0};
        ck_assert_msg(raspK_trace(&prog, D, 5, 100, &tr, &err), "%s: %s", rel, err.msg);
        ck_assert(tr.probe_causal);
        rasp_vresult res;
        ck_assert(raspK_verify_random(&tr, 256, 1, 1, &res)); /* probes: 16 of batch 0 */
        ck_assert_uint_eq(res.probes, 16);
        ck_assert_msg(res.leaks == 0, "%s leaks", rel);
        raspK_trace_free(&tr);
      }
    }
    raspK_program_free(&prog);
  }
  closedir(d);
  ck_assert_int_ge(causal, 3); /* listing6_causal, its fix, readout6_causal */
}
END_TEST

START_TEST(test_lookahead) {
  rasp_program prog;
  load("tests/verify/lookahead.rasp", &prog);
  ck_assert(prog.causal);
  rasp_ptrace tr;
  rasp_error err = {0};
  /* refused statically, at the select that reads ahead */
  ck_assert(!raspK_trace(&prog, 2, 5, 100, &tr, &err));
  ck_assert_ptr_nonnull(strstr(err.msg, "task['causal'] = True, but this select (equals, not causal) "
                                        "reads later positions"));
  ck_assert_int_eq(err.pos.line, 13);
  ck_assert_int_eq(err.pos.col, 30);
  /* with the static check bypassed it passes every graph, and the dynamic
     check finds the leak */
  prog.causal = 0;
  ck_assert_msg(raspK_trace(&prog, 2, 5, 100, &tr, &err), "%s", err.msg);
  tr.probe_causal = 1;
  rasp_vresult res;
  ck_assert(raspK_verify_random(&tr, 512, 1, 2, &res));
  ck_assert_uint_eq(res.passed, res.total);
  ck_assert_uint_gt(res.probes, 0);
  ck_assert_uint_gt(res.leaks, 0);
  ck_assert_int_ge(res.first_leak, 0);
  char *buf = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&buf, &size);
  raspK_print_leak(&tr, 1, &res, f);
  fclose(f);
  ck_assert_ptr_nonnull(strstr(buf, "causal leak (graph "));
  ck_assert_ptr_nonnull(strstr(buf, "changed:  "));
  free(buf);
  raspK_trace_free(&tr);
  raspK_program_free(&prog);

  /* the form, ~ of a causal select, no longer reads ahead */
  load("tests/verify/lookahead_not.rasp", &prog);
  ck_assert_msg(raspK_trace(&prog, 2, 5, 100, &tr, &err), "%s", err.msg);
  ck_assert(raspK_verify_random(&tr, 256, 1, 2, &res));
  ck_assert_uint_eq(res.passed, 0);
  ck_assert_uint_eq(res.leaks, 0);
  raspK_trace_free(&tr);
  raspK_program_free(&prog);
}
END_TEST

static Suite *causal_suite(void) {
  Suite *s = suite_create("causal");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_combinators);
  tcase_add_test(tc, test_positions);
  tcase_add_test(tc, test_positions_dynamic);
  tcase_add_test(tc, test_fuzz_corpus_prefix);
  tcase_add_test(tc, test_causal_programs);
  tcase_add_test(tc, test_lookahead);
  suite_add_tcase(s, tc);
  return s;
}

RASP_CHECK_MAIN(causal_suite())
