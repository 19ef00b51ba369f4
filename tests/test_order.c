/*
** test_order.c -- the order-invariance analysis (rorder.h).
**
** Small programs first: each is traced under three vocabulary orders (the
** declared one and the two probes the verifier uses) and the analysis must
** call it invariant or not, for the reason the rules give.  Then the real
** programs: every program in programs/ that the analysis calls invariant
** must produce, on random graphs, the same output (as symbols) under
** randomly shuffled vocabulary ids as under the declared ones -- and the
** faithful Listing 4, which it refuses, must be caught changing.
*/
#include <check.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp.h"
#include "rorder.h"
#include "rverify.h"

#include "check_main.h"

#define LEN 10

static const char *const base_vocab[] = {"1", "2", "3", "4", "5", "|", "j"};
enum { K = 7 };

/* the verifier's probes: rotate by one, reverse */
static int64_t probe_id(int p, int64_t v) { return p == 0 ? v % K + 1 : K + 1 - v; }

static rasp_ctx *traced(const char *text, int p) {
  const char *syms[K];
  for (int v = 1; v <= K; v++) syms[(p < 0 ? v : probe_id(p, v)) - 1] = base_vocab[v - 1];
  rasp_error err = {0};
  rasp_ctx *ctx = rasp_ctx_new(LEN, NULL, &err);
  ck_assert_ptr_nonnull(ctx);
  ck_assert_msg(rasp_set_vocab(ctx, syms, K, &err), "%s", err.msg);
  ck_assert_msg(rasp_load_stdlib(ctx, NULL, &err), "%s", err.msg);
  ck_assert_msg(rasp_exec_string(ctx, "<prog>", text, &err), "%s", err.msg);
  ck_assert_msg(rasp_trace(ctx, "main", &err), "%s: %s", text, err.msg);
  return ctx;
}

/* Analyses `text`; *why gets the reason (static buffer) when not invariant. */
static int analyse(const char *text, int *nmixing, char *why, size_t size) {
  rasp_ctx *c0 = traced(text, -1), *c[2] = {traced(text, 0), traced(text, 1)};
  int64_t perm[2][K + 1];
  rasp_order_probe pr[2];
  for (int p = 0; p < 2; p++) {
    for (int v = 0; v <= K; v++) perm[p][v] = v ? probe_id(p, v) : 0;
    pr[p].ir = rasp_ctx_ir(c[p]);
    pr[p].output = rasp_ctx_ir(c[p])->outputs[0];
    pr[p].perm = perm[p];
  }
  unsigned char node_id[K + 1] = {0, 1, 1, 1, 1, 1, 0, 0};
  rasp_idorder res;
  rasp_ir *ir = rasp_ctx_ir(c0);
  int inv = raspO_analyse(ir, ir->outputs[0], K, node_id, pr, 2, &res);
  if (nmixing) *nmixing = res.nmixing;
  if (res.invariant) snprintf(why, size, "%s", "");
  else if (res.why.pos.src) snprintf(why, size, "line %d: %.900s", res.why.pos.line, res.why.msg);
  else snprintf(why, size, "%s", res.why.msg);
  raspO_free(&res);
  rasp_ctx_free(c0);
  rasp_ctx_free(c[0]);
  rasp_ctx_free(c[1]);
  return inv;
}

static void expect_invariant(const char *text, int mixing) {
  char why[1024];
  int nm = -1;
  ck_assert_msg(analyse(text, &nm, why, sizeof why), "not invariant (%s): %s", why, text);
  ck_assert_msg(nm == mixing, "%d aggregates to watch, expected %d: %s", nm, mixing, text);
}

static void expect_not(const char *text, const char *reason) {
  char why[1024];
  ck_assert_msg(!analyse(text, NULL, why, sizeof why), "called invariant: %s", text);
  ck_assert_msg(strstr(why, reason), "reason '%s', expected '%s': %s", why, reason, text);
}

START_TEST(equality_moves_and_shifts) {
  expect_invariant("def main(x):\n    return where(x == d['j'], full(x, d['|']), x)\n", 0);
  expect_invariant("def main(x):\n    return where(x != full(x, d['j']), x, full(x, -99))\n", 0);
  /* a shift selects at most one key: it just moves ids */
  expect_invariant("def main(x):\n    return shift_right(x, 1, default=-1)\n", 0);
  /* x > 0 holds for every id, whatever the order */
  expect_invariant("def main(x):\n    return where(is_true(x), x, full(x, -1))\n", 0);
  /* positions and lengths computed beside the ids are fine */
  expect_invariant("def main(x):\n    i = indices(x)\n"
                   "    p = where(x == d['|'], i, full(i, -5))\n"
                   "    return aggregate(select(i, p + 1, equals), x, default=-7)\n", 0);
}
END_TEST

START_TEST(order_comparisons_are_caught) {
  expect_not("def main(x):\n    return where(is_true(x, full(x, d['j'])), x, full(x, -1))\n",
             "compared by order");
  expect_not("def main(x):\n    return where(x < 3, x, full(x, -1))\n", "compared by order");
  expect_not("def main(x):\n    return x + 1\n", "arithmetic");
  expect_not("def main(x):\n    return where(x == d['j'], indices(x), x)\n", "mixes token ids");
  expect_not("def main(x):\n    return indices(x)\n", "output");
  expect_not("def main(x):\n    return tok_map(x, lambda v: v)\n", "tok_map");
}
END_TEST

START_TEST(constants_are_classified) {
  /* an id computed at trace time is no id */
  expect_not("def main(x):\n    return where(x == d['j'] + 1, x, full(x, 0))\n",
             "line 2: the program computes with token ids while tracing (arithmetic");
  /* naming a node symbol breaks relabelling */
  expect_not("def main(x):\n    return where(x == d['3'], x, full(x, 0))\n", "names a node");
  /* the trace itself branches on an id */
  expect_not("def main(x):\n    if d['j'] > 5:\n        return x\n"
             "    return where(x == x, x, x)\n", "line 2: the program computes with token ids");
  /* the number 3 is not the id of a symbol: x == 3 depends on the order */
  expect_not("def main(x):\n    return where(x == 3, x, full(x, 0))\n", "not an id");
}
END_TEST

START_TEST(averaging_is_watched) {
  /* keys equal the values: a query only ever sees one value */
  expect_invariant("def main(x):\n    return aggregate(select(x, x, equals), x)\n", 1);
  expect_invariant("def main(x):\n    return aggr_max(select(x, x, always), x)\n", 1);
  char why[1024];
  int nm = 0;
  const char *prefix = "def main(x):\n    i = indices(x)\n"
                       "    return aggregate(select(i, i, leq), x)\n";
  ck_assert(analyse(prefix, &nm, why, sizeof why));
  ck_assert_int_eq(nm, 1);
  /* on an input with different tokens, the running mean averages ids */
  rasp_ctx *c0 = traced(prefix, -1);
  rasp_ctx *c[2] = {traced(prefix, 0), traced(prefix, 1)};
  int64_t perm[2][K + 1];
  rasp_order_probe pr[2];
  for (int p = 0; p < 2; p++) {
    for (int v = 0; v <= K; v++) perm[p][v] = v ? probe_id(p, v) : 0;
    pr[p].ir = rasp_ctx_ir(c[p]);
    pr[p].output = rasp_ctx_ir(c[p])->outputs[0];
    pr[p].perm = perm[p];
  }
  unsigned char node_id[K + 1] = {0};
  rasp_idorder res;
  rasp_ir *ir = rasp_ctx_ir(c0);
  ck_assert(raspO_analyse(ir, ir->outputs[0], K, node_id, pr, 2, &res));
  rasp_eval *ev = raspE_new(ir);
  rasp_error err = {0};
  int64_t same[LEN], mixed[LEN];
  for (int i = 0; i < LEN; i++) {
    same[i] = 4;
    mixed[i] = 1 + i % 3;
  }
  ck_assert(raspE_run(ev, 1, same, &err));
  ck_assert_int_eq(raspO_mixes(&res, ir, ev, 0), 0);
  ck_assert(raspE_run(ev, 1, mixed, &err));
  ck_assert_int_eq(raspO_mixes(&res, ir, ev, 0), 1);
  raspE_free(ev);
  raspO_free(&res);
  rasp_ctx_free(c0);
  rasp_ctx_free(c[0]);
  rasp_ctx_free(c[1]);
}
END_TEST

/* ---- what the program computes from ids while tracing (rtrace.c's
** provenance tags).  `dihedral` agrees under both probes -- the ids of '|'
** and 'j' stay cyclically adjacent under a rotation and a reversal -- but
** not under most other numberings: the probes alone called it invariant. */
static const char *const dihedral =
    "def main(x):\n"
    "    gap = (d['j'] - d['|']) % vocab_size\n"
    "    if gap == 1 or gap == vocab_size - 1:\n"
    "        return x\n"
    "    return where(x == d['j'], full(x, d['|']), x)\n";

/* Programs that only move ids, compare them with == / != or look reverse_d
** up with them: still proven. */
static const char *const only_moved[] = {
    "def main(x):\n    a, b = d['j'], d['|']\n    ids = [a, b]\n"
    "    return where(x == ids[0], full(x, ids[1]), x)\n",
    "def pick(p, q):\n    return (q, p)\n"
    "def main(x):\n    u, v = pick(d['j'], d['|'])\n"
    "    if u == v or d['j'] != d['j']:\n        return full(x, -1)\n"
    "    return where(x == u, full(x, v), x)\n",
    "def main(x):\n    s = reverse_d[d['j']]\n    t = d[s]\n"
    "    if s == 'j' and d['j'] in [d['|'], t] and d['j'] != 'j':\n"
    "        return where(x == t, full(x, d['|']), x)\n"
    "    return full(x, -1)\n",
    "def main(x):\n    i = int(abs(d['j']))\n"
    "    if d['j'] and not (i == d['|']):\n        return where(x == i, x, full(x, d['|']))\n"
    "    return x\n",
    "def main(x):\n    keep = {'j': d['j'], '|': d['|']}\n"
    "    return where(x == keep['j'], full(x, keep['|']), x)\n",
};

/* Each kind of observation, refused where it happens. */
static const struct {
  const char *text, *reason;
} observed[] = {
    {"def main(x):\n    n = d['j'] + 1\n    return where(x == n, x, x)\n", "line 2: the program computes with token ids while tracing (arithmetic"},
    {"def main(x):\n    n = -d['j']\n    return x\n", "line 2: the program computes with token ids while tracing (arithmetic"},
    {"def main(x):\n    if d['j'] < d['|']:\n        return x\n    return x\n", "line 2: the program computes with token ids while tracing (an id compared by order"},
    {"def main(x):\n    m = max(d['j'], d['|'])\n    return x\n", "line 2: the program computes with token ids while tracing (an id compared by order"},
    {"def main(x):\n    s = sorted([d['j'], d['|']])\n    return x\n", "line 2: the program computes with token ids while tracing (an id compared by order"},
    {"def main(x):\n    for s in d:\n        pass\n    return x\n", "line 2: the program computes with token ids while tracing (iterating d"},
    {"def main(x):\n    s = list(d)[0]\n    return x\n", "line 2: the program computes with token ids while tracing (iterating d"},
    {"def main(x):\n    m = d.values()\n    return x\n", "line 2: the program computes with token ids while tracing (iterating d"},
    {"def main(x):\n    m = [k for k in reverse_d]\n    return x\n", "line 2: the program computes with token ids while tracing (iterating d"},
    {"def main(x):\n    r = range(d['j'])\n    return x\n", "line 2: the program computes with token ids while tracing (an id used as range()"},
    {"def main(x):\n    v = [0, 1, 2, 3, 4, 5, 6, 7, 8][d['j']]\n    return x\n", "line 2: the program computes with token ids while tracing (an id used as the index"},
    {"def main(x):\n    v = x[d['j']]\n    return x\n", "line 2: the program computes with token ids while tracing (an id used as the index"},
    {"def main(x):\n    t = str(d['j'])\n    return x\n", "line 2: the program computes with token ids while tracing (an id turned into text"},
    {"def main(x):\n    print(d['j'])\n    return x\n", "line 2: the program computes with token ids while tracing (an id printed"},
    {"def main(x):\n    if d['j'] == 7:\n        return x\n    return x\n", "line 2: the program computes with token ids while tracing (an id compared with a number"},
    {"def main(x):\n    if (d['j'],) == (7,):\n        return x\n    return x\n", "line 2: the program computes with token ids while tracing (an id compared with a number"},
    {"def main(x):\n    s = reverse_d[7]\n    return x\n", "line 2: the program computes with token ids while tracing (reverse_d looked up"},
    {"def main(x):\n    m = {d['j']: 1}\n    return x\n", "line 2: the program computes with token ids while tracing (an id used as the key"},
    /* moved through a function and a list first: the tag travels along */
    {"def f(v):\n    return [v]\ndef main(x):\n    w = f(d['j'])[0]\n    n = w * 2\n    return x\n", "line 5: the program computes with token ids while tracing (arithmetic"},
};

START_TEST(trace_time_ids_are_seen) {
  expect_not(dihedral, "line 2: the program computes with token ids while tracing (arithmetic");
  for (size_t i = 0; i < sizeof only_moved / sizeof only_moved[0]; i++)
    expect_invariant(only_moved[i], 0);
  for (size_t i = 0; i < sizeof observed / sizeof observed[0]; i++)
    expect_not(observed[i].text, observed[i].reason);
}
END_TEST

/* A small random generator of our own, for reproducible permutations. */
static uint64_t rng_next(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 33;
}

/* How many of `trials` random numberings change the output of `text` on a
** random input, compared (as symbols) with the declared numbering. */
static int numberings_changing(const char *text, int trials, uint64_t seed) {
  int changed = 0;
  for (int t = 0; t < trials; t++) {
    int64_t perm[K + 1];
    for (int v = 1; v <= K; v++) perm[v] = v;
    for (int v = K; v > 1; v--) {
      int r = 1 + (int)(rng_next(&seed) % (uint64_t)v);
      int64_t tmp = perm[v];
      perm[v] = perm[r];
      perm[r] = tmp;
    }
    const char *syms[K];
    for (int v = 1; v <= K; v++) syms[perm[v] - 1] = base_vocab[v - 1];
    rasp_ctx *c[2] = {traced(text, -1), NULL};
    rasp_error err = {0};
    c[1] = rasp_ctx_new(LEN, NULL, &err);
    ck_assert_msg(rasp_set_vocab(c[1], syms, K, &err), "%s", err.msg);
    ck_assert_msg(rasp_load_stdlib(c[1], NULL, &err), "%s", err.msg);
    ck_assert_msg(rasp_exec_string(c[1], "<prog>", text, &err), "%s", err.msg);
    ck_assert_msg(rasp_trace(c[1], "main", &err), "%s", err.msg);
    int64_t tok[2][LEN];
    for (int i = 0; i < LEN; i++) {
      tok[0][i] = 1 + (int64_t)(rng_next(&seed) % K);
      tok[1][i] = perm[tok[0][i]];
    }
    const rasp_elem *out[2];
    rasp_eval *ev[2];
    for (int k = 0; k < 2; k++) {
      rasp_ir *ir = rasp_ctx_ir(c[k]);
      ev[k] = raspE_new(ir);
      ck_assert_msg(raspE_run(ev[k], 1, tok[k], &err), "%s", err.msg);
      out[k] = raspE_value(ev[k], ir->outputs[0], 0);
    }
    int differs = 0;
    for (int i = 0; i < LEN; i++) {
      rasp_elem e = out[0][i];
      if (e.den == 1 && e.num >= 1 && e.num <= K) e.num = perm[e.num]; /* ids move */
      differs |= e.num != out[1][i].num || e.den != out[1][i].den;
    }
    changed += differs;
    for (int k = 0; k < 2; k++) {
      raspE_free(ev[k]);
      rasp_ctx_free(c[k]);
    }
  }
  return changed;
}

/* The dynamic side of the proof: whatever the analysis calls invariant
** keeps its output under random numberings, and the dihedral program it
** now refuses really does change (so this check can fail). */
START_TEST(invariant_means_unchanged_under_random_numberings) {
  for (size_t i = 0; i < sizeof only_moved / sizeof only_moved[0]; i++)
    ck_assert_msg(numberings_changing(only_moved[i], 20, 7 + i) == 0,
                  "called invariant, but a numbering changed it: %s", only_moved[i]);
  const char *also[] = {
      "def main(x):\n    return where(x == d['j'], full(x, d['|']), x)\n",
      "def main(x):\n    return shift_right(x, 1, default=-1)\n",
      "def main(x):\n    return aggregate(select(x, x, equals), x)\n",
  };
  for (size_t i = 0; i < sizeof also / sizeof also[0]; i++) {
    char why[1024];
    ck_assert_msg(analyse(also[i], NULL, why, sizeof why), "%s: %s", why, also[i]);
    ck_assert_int_eq(numberings_changing(also[i], 20, 31 + i), 0);
  }
  ck_assert_msg(numberings_changing(dihedral, 20, 3) > 0,
                "the dihedral program never changed: the test cannot tell");
}
END_TEST

/* The output of trace tr on task tokens, written as symbols where it holds
** ids, into buf (one line). */
static void output_text(rasp_ptrace *tr, const int64_t *task_tokens, char *buf, size_t size) {
  int64_t *tok = malloc(sizeof(int64_t) * (size_t)tr->n);
  for (int i = 0; i < tr->n; i++)
    tok[i] = tr->tok_map && task_tokens[i] >= 1 && task_tokens[i] <= tr->ntask_ids
                 ? tr->tok_map[task_tokens[i]]
                 : task_tokens[i];
  rasp_ir *ir = rasp_ctx_ir(tr->ctx);
  rasp_eval *ev = raspE_new(ir);
  rasp_error err = {0};
  ck_assert_msg(raspE_run(ev, 1, tok, &err), "%s", err.msg);
  const rasp_elem *v = raspE_value(ev, tr->output, 0);
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < tr->n && used + 64 < size; i++) {
    char e[64];
    rasp_format_symbolic(tr->ctx, v[i], e, sizeof e);
    used += (size_t)snprintf(buf + used, size - used, " %s", e);
  }
  raspE_free(ev);
  free(tok);
}

/* Returns how many of `graphs` shuffled vocabularies changed the output. */
static int shuffled_changes(const char *path, int D, int M, int graphs, int *invariant) {
  rasp_program prog;
  rasp_ptrace tr;
  rasp_error err = {0};
  ck_assert_msg(raspK_load(path, NULL, D, M, 100, &prog, &err), "%s", err.msg);
  ck_assert_msg(raspK_trace(&prog, D, M, 100, &tr, &err), "%s", err.msg);
  raspK_order(&prog, &tr);
  *invariant = tr.order.invariant;
  int changed = 0;
  int64_t *tokens = malloc(sizeof(int64_t) * (size_t)tr.n);
  char *a = malloc(65536), *b = malloc(65536);
  for (int g = 0; g < graphs; g++) {
    int64_t lead, target;
    ck_assert(raspK_sample_tokens(&tr, 11, (uint64_t)g, tokens, &lead, &target, &err));
    rasp_ptrace sh;
    ck_assert_msg(raspK_trace_ids(&prog, D, M, 100, 1, 11, (uint64_t)g, &sh, &err), "%s", err.msg);
    output_text(&tr, tokens, a, 65536);
    output_text(&sh, tokens, b, 65536);
    changed += strcmp(a, b) != 0;
    raspK_trace_free(&sh);
  }
  free(a);
  free(b);
  free(tokens);
  raspK_trace_free(&tr);
  raspK_program_free(&prog);
  return changed;
}

START_TEST(invariant_programs_ignore_shuffled_ids) {
  const char *top = getenv("top_srcdir") ? getenv("top_srcdir") : ".";
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/programs", top);
  DIR *dp = opendir(dir);
  ck_assert_ptr_nonnull(dp);
  struct dirent *de;
  int proven = 0, programs = 0;
  while ((de = readdir(dp))) {
    size_t l = strlen(de->d_name);
    if (l < 6 || strcmp(de->d_name + l - 5, ".rasp") != 0) continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    int inv = 0;
    int changed = shuffled_changes(path, 2, 4, 30, &inv);
    programs++;
    if (inv) {
      proven++;
      ck_assert_msg(changed == 0, "%s is called order-invariant, but %d of 30 shuffled "
                                  "vocabularies changed its output", de->d_name, changed);
    }
    /* the faithful Listing 4 compares ids with '>': refused, and rightly */
    if (strcmp(de->d_name, "listing4_log.rasp") == 0) {
      ck_assert_msg(!inv, "listing4_log called invariant");
      ck_assert_msg(changed > 0, "listing4_log's output never changed with the id order");
    }
    if (strcmp(de->d_name, "listing4_log_fixed.rasp") == 0 ||
        strcmp(de->d_name, "listing2_backward_targets.rasp") == 0 ||
        strcmp(de->d_name, "listing6_causal_fixed.rasp") == 0)
      ck_assert_msg(inv, "%s should be proven order-invariant", de->d_name);
  }
  closedir(dp);
  ck_assert_int_ge(programs, 17);
  ck_assert_int_ge(proven, 10);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("order");
  TCase *tc = tcase_create("analysis");
  tcase_add_test(tc, equality_moves_and_shifts);
  tcase_add_test(tc, order_comparisons_are_caught);
  tcase_add_test(tc, constants_are_classified);
  tcase_add_test(tc, averaging_is_watched);
  tcase_add_test(tc, trace_time_ids_are_seen);
  tcase_add_test(tc, invariant_means_unchanged_under_random_numberings);
  suite_add_tcase(s, tc);
  TCase *tp = tcase_create("programs");
  tcase_set_timeout(tp, 120);
  tcase_add_test(tp, invariant_programs_ignore_shuffled_ids);
  suite_add_tcase(s, tp);
  return s;
}

RASP_CHECK_MAIN(make_suite())
