/*
** test_task.c -- the path-star task generator (rtask.c, cli_gen.c).
*/
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmem.h"
#include "rtask.h"

#include "check_main.h"

/* ---- helpers ------------------------------------------------------------ */

static rasp_task_opts mk(int D, int M, int V) {
  rasp_task_opts o;
  raspT_opts_default(&o);
  o.D = D;
  o.M = M;
  o.V = V;
  return o;
}

/* Decodes a node token back to its number (s/t symbols included). */
static int node_of(const rasp_task_opts *o, const rasp_sample *s, int tok) {
  if (tok >= 1 && tok <= o->V) return tok;
  if (tok == o->V + RASP_SP_S) return s->s;
  if (tok == o->V + RASP_SP_T) return s->t;
  return -1;
}

static int expect_node_tok(const rasp_task_opts *o, const rasp_sample *s, int v) {
  if (o->st_names && v == s->s) return o->V + RASP_SP_S;
  if (o->st_names && v == s->t) return o->V + RASP_SP_T;
  return v;
}

/* Checks everything a sample promises. */
static void check_sample(const rasp_task_opts *o, const rasp_sample *s) {
  int D = o->D, M = o->M, V = o->V, E = D * (M - 1), N = E + 1;
  ck_assert_int_eq(s->ntokens, raspT_length(o));
  ck_assert_int_eq(s->D, D);
  ck_assert_int_eq(s->M, M);
  ck_assert_int_eq(s->nedges, E);
  /* arms: shared s, all nodes distinct, in range */
  char *seen = calloc((size_t)V + 1, 1);
  int distinct = 0;
  for (int a = 0; a < D; a++) {
    ck_assert_int_eq(s->arms[a * M], s->s);
    for (int j = 0; j < M; j++) {
      int v = s->arms[a * M + j];
      ck_assert(v >= 1 && v <= V);
      if (j == 0 && a > 0) continue;
      ck_assert_msg(!seen[v], "node %d twice", v);
      seen[v] = 1;
      distinct++;
    }
  }
  ck_assert_int_eq(distinct, N);
  /* target and answer */
  ck_assert(s->target_arm >= 0 && s->target_arm < D);
  for (int j = 0; j < M; j++) ck_assert_int_eq(s->answer[j], s->arms[s->target_arm * M + j]);
  ck_assert_int_eq(s->answer[0], s->s);
  ck_assert_int_eq(s->answer[M - 1], s->t);
  ck_assert_int_eq(s->lead, s->answer[1]);

  const int *tk = s->tokens;
  int n = 0;
  if (o->bos) ck_assert_int_eq(tk[n++], V + RASP_SP_BOS);
  int qpos = o->q == RASP_Q_START ? n : n + E * (2 + o->markers);
  int gpos = o->q == RASP_Q_START ? n + 4 : n;
  ck_assert_int_eq(s->q_start, qpos);
  ck_assert_int_eq(s->g_start, gpos);
  ck_assert_int_eq(tk[qpos], V + RASP_SP_SLASH);
  ck_assert_int_eq(tk[qpos + 1], expect_node_tok(o, s, s->s));
  ck_assert_int_eq(tk[qpos + 2], expect_node_tok(o, s, s->t));
  ck_assert_int_eq(tk[qpos + 3], V + RASP_SP_EQ);

  /* G: every edge "u v |" (or "u v | |"), each (arm, step) once, degrees */
  int *deg = calloc((size_t)V + 1, sizeof *deg);
  char *used = calloc((size_t)E, 1);
  int *first_s_edge = malloc((size_t)D * sizeof(int));
  for (int k = 0; k < E; k++) {
    int p = gpos + k * (2 + o->markers);
    ck_assert_int_eq(s->edge_pos[k], p);
    int a = s->edge_arm[k], j = s->edge_step[k];
    ck_assert(a >= 0 && a < D && j >= 0 && j < M - 1);
    ck_assert(!used[a * (M - 1) + j]);
    used[a * (M - 1) + j] = 1;
    if (j == 0) first_s_edge[a] = k;
    int u = node_of(o, s, tk[p]), v = node_of(o, s, tk[p + 1]);
    ck_assert_int_eq(tk[p], expect_node_tok(o, s, s->arms[a * M + j]));
    ck_assert_int_eq(u, s->arms[a * M + j]);
    ck_assert_int_eq(v, s->arms[a * M + j + 1]);
    for (int m = 0; m < o->markers; m++) ck_assert_int_eq(tk[p + 2 + m], V + RASP_SP_BAR);
    deg[u]++;
    deg[v]++;
    if (o->order == RASP_ORDER_ARM) {
      ck_assert_int_eq(a, k / (M - 1));
      ck_assert_int_eq(j, k % (M - 1));
    }
  }
  for (int a = 1; a < D; a++) ck_assert(first_s_edge[a - 1] < first_s_edge[a]);
  ck_assert_int_eq(deg[s->s], D);
  for (int a = 0; a < D; a++) {
    ck_assert_int_eq(deg[s->arms[a * M + M - 1]], 1);
    for (int j = 1; j < M - 1; j++) ck_assert_int_eq(deg[s->arms[a * M + j]], 2);
  }
  /* R_t is a path from s to t through G's edges; l_t adjacent to s */
  for (int j = 0; j + 1 < M; j++) {
    int found = 0;
    for (int k = 0; k < E; k++) {
      int p = gpos + k * (2 + o->markers);
      if (node_of(o, s, tk[p]) == s->answer[j] && node_of(o, s, tk[p + 1]) == s->answer[j + 1])
        found = 1;
    }
    ck_assert_msg(found, "answer step %d is not an edge", j);
  }
  /* st_names: numbers of s and t never written */
  for (int i = 0; i < s->ntokens; i++) {
    if (o->st_names) {
      ck_assert_int_ne(tk[i], s->s);
      ck_assert_int_ne(tk[i], s->t);
    } else {
      ck_assert_int_ne(tk[i], V + RASP_SP_S);
      ck_assert_int_ne(tk[i], V + RASP_SP_T);
    }
  }
  /* answer */
  n = (o->bos ? 1 : 0) + 4 + E * (2 + o->markers);
  ck_assert_int_eq(s->ans_start, n);
  if (o->answer == RASP_ANS_FORWARD)
    for (int j = 0; j < M; j++) ck_assert_int_eq(tk[n++], expect_node_tok(o, s, s->answer[j]));
  else if (o->answer == RASP_ANS_REVERSE)
    for (int j = M - 1; j >= 0; j--) ck_assert_int_eq(tk[n++], expect_node_tok(o, s, s->answer[j]));
  else if (o->answer == RASP_ANS_LEAD)
    ck_assert_int_eq(tk[n++], expect_node_tok(o, s, s->lead));
  if (o->eos) ck_assert_int_eq(tk[n++], V + RASP_SP_EOS);
  ck_assert_int_eq(n, s->ntokens);
  free(seen);
  free(deg);
  free(used);
  free(first_s_edge);
}

/* A token sequence as a malloc'd text key. */
static char *key_of(const rasp_task_opts *o, const rasp_sample *s) {
  size_t cap = (size_t)s->ntokens * 12 + 1, len = 0;
  char *k = malloc(cap);
  k[0] = 0;
  for (int i = 0; i < s->ntokens; i++) {
    char buf[32];
    raspT_token_text(o, s->tokens[i], buf, sizeof buf);
    len += (size_t)snprintf(k + len, cap - len, "%s%s", i ? " " : "", buf);
  }
  return k;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct {
  char **keys;
  size_t n, cap;
  const rasp_task_opts *o;
  int check;
} keyset;

static void keyset_add(keyset *ks, char *k) {
  if (ks->n == ks->cap) {
    ks->cap = ks->cap ? ks->cap * 2 : 1024;
    ks->keys = realloc(ks->keys, ks->cap * sizeof *ks->keys);
  }
  ks->keys[ks->n++] = k;
}

/* Sorts the keys; returns the number of distinct ones, counts[] (if
** non-NULL, size n) gets each run's length. */
static size_t keyset_distinct(keyset *ks, size_t *counts) {
  qsort(ks->keys, ks->n, sizeof *ks->keys, cmp_str);
  size_t d = 0;
  for (size_t i = 0; i < ks->n; i++) {
    if (i == 0 || strcmp(ks->keys[i], ks->keys[i - 1]) != 0) {
      if (counts) counts[d] = 0;
      d++;
    }
    if (counts) counts[d - 1]++;
  }
  return d;
}

static void keyset_free(keyset *ks) {
  for (size_t i = 0; i < ks->n; i++) free(ks->keys[i]);
  free(ks->keys);
  memset(ks, 0, sizeof *ks);
}

static int collect_cb(const rasp_sample *s, void *user) {
  keyset *ks = user;
  if (ks->check) check_sample(ks->o, s);
  keyset_add(ks, key_of(ks->o, s));
  return 0;
}

static double chi2(const double *obs, int k, double expected) {
  double c = 0;
  for (int i = 0; i < k; i++) c += (obs[i] - expected) * (obs[i] - expected) / expected;
  return c;
}

static uint64_t fact(int n) {
  uint64_t r = 1;
  for (int i = 2; i <= n; i++) r *= (uint64_t)i;
  return r;
}

/* ---- PRNG --------------------------------------------------------------- */

START_TEST(test_rng_determinism) {
  rasp_rng a, b, c;
  raspT_rng_seed(&a, 42, 7);
  raspT_rng_seed(&b, 42, 7);
  raspT_rng_seed(&c, 42, 8);
  int differ = 0;
  for (int i = 0; i < 100; i++) {
    uint64_t x = raspT_rng_next(&a), y = raspT_rng_next(&b), z = raspT_rng_next(&c);
    ck_assert(x == y);
    differ += x != z;
  }
  ck_assert_int_ge(differ, 99);
  /* pinned values: the same on every machine */
  raspT_rng_seed(&a, 0, 0);
  uint64_t first = raspT_rng_next(&a);
  raspT_rng_seed(&b, 0, 0);
  ck_assert(first == raspT_rng_next(&b));
  ck_assert(raspT_rng_below(&a, 0) == 0);
  ck_assert(raspT_rng_below(&a, 1) == 0);
}
END_TEST

START_TEST(test_rng_below_uniform) {
  rasp_rng r;
  raspT_rng_seed(&r, 123, 0);
  double obs[7] = {0};
  for (int i = 0; i < 70000; i++) {
    uint64_t v = raspT_rng_below(&r, 7);
    ck_assert(v < 7);
    obs[v]++;
  }
  ck_assert(chi2(obs, 7, 10000) < 30);
  /* a bound near 2^63, where a biased modulo would be far off */
  uint64_t n = (UINT64_C(1) << 63) + (UINT64_C(1) << 62);
  int low = 0;
  for (int i = 0; i < 20000; i++) {
    uint64_t v = raspT_rng_below(&r, n);
    ck_assert(v < n);
    low += v < n / 2;
  }
  ck_assert(low > 9400 && low < 10600);
}
END_TEST

/* ---- options, vocabulary, length ---------------------------------------- */

START_TEST(test_opts_check) {
  rasp_error err = {0};
  rasp_task_opts o = mk(3, 4, 5);
  ck_assert_int_eq(raspT_opts_check(&o, &err), 0);
  ck_assert(strstr(err.msg, "V = 5") && strstr(err.msg, "10"));
  o = mk(2, 3, 10);
  o.structured = 2;
  memset(&err, 0, sizeof err);
  ck_assert_int_eq(raspT_opts_check(&o, &err), 0);
  ck_assert(strstr(err.msg, "structured"));
  o.structured = 1;
  ck_assert_int_eq(raspT_opts_check(&o, NULL), 1);
  o.markers = 3;
  ck_assert_int_eq(raspT_opts_check(&o, NULL), 0);
  o = mk(0, 3, 10);
  ck_assert_int_eq(raspT_opts_check(&o, NULL), 0);
  o = mk(2, 1, 10);
  ck_assert_int_eq(raspT_opts_check(&o, NULL), 0);
  o = mk(1, 2, 2);
  ck_assert_int_eq(raspT_opts_check(&o, NULL), 1);
  o = mk(2, 5, 100);
  rasp_sample s = {0};
  ck_assert_int_eq(raspT_sample(&o, 0, 0, &s, NULL), 1);
  o.V = 3;
  memset(&err, 0, sizeof err);
  ck_assert_int_eq(raspT_sample(&o, 0, 0, &s, &err), 0);
  ck_assert(err.set);
  raspT_sample_free(&s);
}
END_TEST

START_TEST(test_vocab) {
  rasp_task_opts o = mk(3, 4, 10);
  ck_assert_int_eq(raspT_vocab_size(&o), 18);
  const char *names[] = {"|", "/", "=", "BOS", "EOS", "s", "t"};
  char buf[32];
  for (int k = 1; k <= RASP_SP_COUNT; k++) {
    ck_assert_int_ge(raspT_token_text(&o, 10 + k, buf, sizeof buf), 1);
    ck_assert_str_eq(buf, names[k - 1]);
    ck_assert_int_eq(raspT_token_id(&o, names[k - 1]), 10 + k);
  }
  for (int v = 1; v <= 10; v++) {
    raspT_token_text(&o, v, buf, sizeof buf);
    ck_assert_int_eq(atoi(buf), v);
    ck_assert_int_eq(raspT_token_id(&o, buf), v);
  }
  ck_assert_int_eq(raspT_token_text(&o, 18, buf, sizeof buf), -1);
  ck_assert_int_eq(raspT_token_text(&o, -1, buf, sizeof buf), -1);
  ck_assert_int_eq(raspT_token_id(&o, "11"), -1);
  ck_assert_int_eq(raspT_token_id(&o, "0"), -1);
  ck_assert_int_eq(raspT_token_id(&o, "x"), -1);
  ck_assert_int_eq(raspT_token_id(&o, "01"), -1);
}
END_TEST

START_TEST(test_length) {
  rasp_task_opts o = mk(3, 4, 10);
  ck_assert_int_eq(raspT_length(&o), 1 + 4 + 27 + 4 + 1); /* the paper's figure */
  o.answer = RASP_ANS_LEAD;
  o.bos = 0;
  o.markers = 2;
  ck_assert_int_eq(raspT_length(&o), 4 + 36 + 1 + 1);
  o.answer = RASP_ANS_NONE;
  o.eos = 0;
  ck_assert_int_eq(raspT_length(&o), 40);
  o.V = 2;
  ck_assert_int_eq(raspT_length(&o), -1);
}
END_TEST

/* ---- structure ---------------------------------------------------------- */

START_TEST(test_structure_all_options) {
  int shapes[][3] = {{1, 2, 2}, {1, 5, 9}, {2, 2, 3}, {2, 5, 100}, {3, 4, 10},
                     {5, 3, 11}, {4, 6, 20000}, {8, 2, 9}};
  rasp_sample s = {0};
  for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++)
    for (int mask = 0; mask < 128; mask++) {
      rasp_task_opts o = mk(shapes[sh][0], shapes[sh][1], shapes[sh][2]);
      o.order = mask & 1 ? RASP_ORDER_ARM : RASP_ORDER_EDGE;
      o.q = mask & 2 ? RASP_Q_END : RASP_Q_START;
      o.answer = (rasp_answer)((mask >> 2) & 3);
      o.bos = !(mask & 16);
      o.eos = !(mask & 32);
      o.st_names = !!(mask & 64);
      o.markers = 1 + (int)(sh % 2);
      for (uint64_t i = 0; i < 8; i++) {
        ck_assert_int_eq(raspT_sample(&o, 99, i + (uint64_t)mask * 8, &s, NULL), 1);
        check_sample(&o, &s);
      }
    }
  raspT_sample_free(&s);
}
END_TEST

START_TEST(test_st_names_and_markers) {
  rasp_task_opts o = mk(3, 4, 10);
  o.st_names = 1;
  o.markers = 2;
  o.q = RASP_Q_START;
  rasp_sample s = {0};
  ck_assert_int_eq(raspT_sample(&o, 5, 5, &s, NULL), 1);
  char *k = key_of(&o, &s);
  /* BOS / s t = ... */
  ck_assert(strncmp(k, "BOS / s t = ", 12) == 0);
  ck_assert(strstr(k, " | | "));
  int nst = 0;
  for (int i = 0; i < s.ntokens; i++) nst += s.tokens[i] == 10 + RASP_SP_S;
  ck_assert_int_eq(nst, 1 + 3 + 1); /* Q, three s-edges, the answer */
  ck_assert(s.s >= 1 && s.s <= 10 && s.t >= 1 && s.t <= 10);
  free(k);
  raspT_sample_free(&s);
}
END_TEST

typedef struct {
  const rasp_task_opts *o;
  int want[64], n, found;
} match_state;

static int match_cb(const rasp_sample *s, void *user) {
  match_state *m = user;
  if (s->ntokens == m->n && memcmp(s->tokens, m->want, (size_t)m->n * sizeof(int)) == 0) {
    check_sample(m->o, s);
    m->found++;
  }
  return 0;
}

/* The paper's figure: both example tokenisations are among the enumerated
** ones of its graph. */
START_TEST(test_paper_figure) {
  int graph[] = {4, 9, 1, 3, 4, 8, 2, 7, 4, 5, 10, 6};
  const char *want[2] = {
      "BOS 9 1 | 10 6 | 8 2 | 2 7 | 1 3 | 4 8 | 4 5 | 5 10 | 4 9 | / 4 7 = 4 8 2 7 EOS",
      "BOS 4 9 | 9 1 | 1 3 | 4 8 | 8 2 | 2 7 | 4 5 | 5 10 | 10 6 | / 4 7 = 4 8 2 7 EOS"};
  for (int ord = 0; ord < 2; ord++) {
    rasp_task_opts o = mk(3, 4, 10);
    o.q = RASP_Q_END;
    o.order = ord ? RASP_ORDER_ARM : RASP_ORDER_EDGE;
    match_state m = {0};
    m.o = &o;
    char *copy = strdup(want[ord]), *save = NULL;
    for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
      m.want[m.n++] = raspT_token_id(&o, t);
    free(copy);
    ck_assert_int_eq(m.n, raspT_length(&o));
    uint64_t count = 0;
    ck_assert_int_eq(raspT_enumerate(&o, graph, 2000000, match_cb, &m, &count, NULL), 0);
    ck_assert(count == (ord ? 6u * 3 : 362880u * 3));
    ck_assert_int_eq(m.found, 1);
  }
}
END_TEST

/* ---- determinism -------------------------------------------------------- */

START_TEST(test_determinism) {
  rasp_task_opts o = mk(3, 5, 50);
  rasp_sample a = {0}, b = {0};
  for (uint64_t i = 0; i < 50; i++) {
    raspT_sample(&o, 7, i, &a, NULL);
    raspT_sample(&o, 7, i, &b, NULL);
    ck_assert_int_eq(a.ntokens, b.ntokens);
    ck_assert(memcmp(a.tokens, b.tokens, (size_t)a.ntokens * sizeof(int)) == 0);
    raspT_sample(&o, 7, i + 1, &b, NULL);
    ck_assert(memcmp(a.tokens, b.tokens, (size_t)a.ntokens * sizeof(int)) != 0);
    raspT_sample(&o, 8, i, &b, NULL);
    ck_assert(memcmp(a.tokens, b.tokens, (size_t)a.ntokens * sizeof(int)) != 0);
  }
  /* generation order does not matter: backwards gives the same samples */
  char *fw[20];
  for (int i = 0; i < 20; i++) {
    raspT_sample(&o, 3, (uint64_t)i, &a, NULL);
    fw[i] = key_of(&o, &a);
  }
  for (int i = 19; i >= 0; i--) {
    raspT_sample(&o, 3, (uint64_t)i, &a, NULL);
    char *k = key_of(&o, &a);
    ck_assert_str_eq(k, fw[i]);
    free(k);
    free(fw[i]);
  }
  /* pinned: the same text on every machine (regression guard) */
  rasp_task_opts p = mk(3, 4, 10);
  p.q = RASP_Q_END;
  raspT_sample(&p, 0, 0, &a, NULL);
  char *k = key_of(&p, &a);
  ck_assert_str_eq(k, "BOS 8 7 | 9 4 | 1 10 | 5 3 | 4 5 | 9 8 | 2 1 | 9 2 | 7 6 | / 9 3 = 9 4 5 3 EOS");
  free(k);
  raspT_sample_free(&a);
  raspT_sample_free(&b);
}
END_TEST

/* ---- structured samples ------------------------------------------------- */

START_TEST(test_structured) {
  rasp_task_opts o = mk(4, 3, 30);
  o.structured = 3;
  rasp_sample g[4] = {{0}}, plain = {0};
  for (uint64_t i = 0; i < 200; i++) {
    ck_assert_int_eq(raspT_sample_group(&o, 11, i, g, NULL), 4);
    raspT_sample(&o, 11, i, &plain, NULL);
    ck_assert(memcmp(plain.tokens, g[0].tokens, (size_t)plain.ntokens * sizeof(int)) == 0);
    int seen[4] = {0};
    for (int v = 0; v < 4; v++) {
      check_sample(&o, &g[v]);
      ck_assert_int_eq(g[v].variant, v);
      ck_assert(!seen[g[v].target_arm]);
      seen[g[v].target_arm] = 1;
      /* same graph, same edge order: G's tokens identical (no st_names) */
      ck_assert(memcmp(g[v].arms, g[0].arms, 12 * sizeof(int)) == 0);
      ck_assert(memcmp(g[v].tokens + g[v].g_start, g[0].tokens + g[0].g_start,
                       8 * 3 * sizeof(int)) == 0);
      ck_assert_int_eq(g[v].s, g[0].s);
    }
  }
  /* k = 1 of D = 4: the extra target is uniform over the 3 other arms */
  o.structured = 1;
  double obs[3] = {0};
  for (uint64_t i = 0; i < 15000; i++) {
    raspT_sample_group(&o, 12, i, g, NULL);
    int d = (g[1].target_arm - g[0].target_arm + 4) % 4;
    ck_assert(d >= 1 && d <= 3);
    obs[d - 1]++;
  }
  ck_assert(chi2(obs, 3, 5000) < 25);
  /* st_names: the graph's tokens change only where t moves */
  o.st_names = 1;
  o.structured = 3;
  raspT_sample_group(&o, 1, 1, g, NULL);
  for (int v = 0; v < 4; v++) check_sample(&o, &g[v]);
  for (int v = 0; v < 4; v++) raspT_sample_free(&g[v]);
  raspT_sample_free(&plain);
}
END_TEST

/* ---- distributions ------------------------------------------------------ */

START_TEST(test_target_uniform) {
  rasp_task_opts o = mk(4, 3, 50);
  rasp_sample s = {0};
  double arm[4] = {0}, edge_rank[4] = {0};
  for (uint64_t i = 0; i < 20000; i++) {
    raspT_sample(&o, 1, i, &s, NULL);
    arm[s.target_arm]++;
    /* rank of t's edge among the final edges in G */
    int r = 0, tpos = -1;
    for (int k = 0; k < s.nedges; k++)
      if (s.edge_step[k] == 1) {
        if (s.edge_arm[k] == s.target_arm) tpos = r;
        r++;
      }
    edge_rank[tpos]++;
  }
  ck_assert(chi2(arm, 4, 5000) < 25);
  ck_assert(chi2(edge_rank, 4, 5000) < 25);
  raspT_sample_free(&s);
}
END_TEST

static void node_uniformity(int V) {
  rasp_task_opts o = mk(3, 4, V); /* N = 10 */
  rasp_sample s = {0};
  double *all = calloc((size_t)V, sizeof *all), *start = calloc((size_t)V, sizeof *start),
         *target = calloc((size_t)V, sizeof *target);
  int n = 20000;
  for (int i = 0; i < n; i++) {
    raspT_sample(&o, 2, (uint64_t)i, &s, NULL);
    for (int a = 0; a < 3; a++)
      for (int j = a ? 1 : 0; j < 4; j++) all[s.arms[a * 4 + j] - 1]++;
    start[s.s - 1]++;
    target[s.t - 1]++;
  }
  double df = V - 1, lim = df + 6 * (df > 1 ? sqrt(2 * df) : 2) + 10;
  ck_assert_msg(chi2(all, V, n * 10.0 / V) < lim, "node symbols not uniform");
  ck_assert_msg(chi2(start, V, (double)n / V) < lim, "s not uniform");
  ck_assert_msg(chi2(target, V, (double)n / V) < lim, "t not uniform");
  free(all);
  free(start);
  free(target);
  raspT_sample_free(&s);
}

START_TEST(test_nodes_uniform_dense) { node_uniformity(15); }
END_TEST
START_TEST(test_nodes_uniform_sparse) { node_uniformity(40); }
END_TEST

/* Every (G, Q, tokenisation) equally likely: the distinct sequences are as
** many as raspT_count says, and their frequencies pass chi-square. */
static void sequence_uniformity(int D, int M, int V, rasp_order ord, int n) {
  rasp_task_opts o = mk(D, M, V);
  o.order = ord;
  o.answer = RASP_ANS_NONE;
  keyset ks = {0};
  rasp_sample s = {0};
  for (int i = 0; i < n; i++) {
    raspT_sample(&o, 77, (uint64_t)i, &s, NULL);
    keyset_add(&ks, key_of(&o, &s));
  }
  mpz_t gq, tok;
  mpz_inits(gq, tok, NULL);
  raspT_count(&o, gq, tok);
  mpz_mul(gq, gq, tok);
  size_t classes = mpz_get_ui(gq);
  size_t *counts = calloc(ks.n, sizeof *counts);
  size_t d = keyset_distinct(&ks, counts);
  ck_assert_msg(d == classes, "%zu distinct sequences, expected %zu", d, classes);
  double *obs = malloc(d * sizeof *obs);
  for (size_t i = 0; i < d; i++) obs[i] = (double)counts[i];
  double df = (double)classes - 1;
  double c = chi2(obs, (int)d, (double)n / (double)classes);
  ck_assert_msg(c < df + 6 * sqrt(2 * df), "chi2 %g with %g df", c, df);
  free(obs);
  free(counts);
  mpz_clears(gq, tok, NULL);
  keyset_free(&ks);
  raspT_sample_free(&s);
}

START_TEST(test_sequences_uniform_edge) {
  sequence_uniformity(3, 2, 4, RASP_ORDER_EDGE, 20000);  /* 12 * 3! = 72 */
  sequence_uniformity(1, 4, 4, RASP_ORDER_EDGE, 20000);  /* 24 * 3! = 144 */
  sequence_uniformity(2, 3, 5, RASP_ORDER_EDGE, 40000);  /* 120 * 4! = 2880 */
}
END_TEST

START_TEST(test_sequences_uniform_arm) {
  sequence_uniformity(3, 2, 4, RASP_ORDER_ARM, 20000);   /* 12 * 3! = 72 */
  sequence_uniformity(2, 3, 5, RASP_ORDER_ARM, 20000);   /* 120 * 2! = 240 */
}
END_TEST

/* ---- counts vs brute force ---------------------------------------------- */

/* Visits every ordered N-tuple of distinct values in 1..V (iterative
** odometer), builds the graph and enumerates it; returns the number of
** distinct token sequences. */
static size_t brute_force(const rasp_task_opts *o, int check, uint64_t *inputs) {
  int D = o->D, M = o->M, V = o->V, N = D * (M - 1) + 1;
  int *idx = calloc((size_t)N, sizeof *idx);
  int *g = malloc((size_t)D * M * sizeof *g);
  keyset ks = {0};
  ks.o = o;
  ks.check = check;
  *inputs = 0;
  for (;;) {
    int ok = 1;
    for (int i = 0; i < N && ok; i++)
      for (int j = 0; j < i; j++)
        if (idx[i] == idx[j]) ok = 0;
    if (ok) {
      for (int a = 0; a < D; a++) {
        g[a * M] = idx[0] + 1;
        for (int j = 1; j < M; j++) g[a * M + j] = idx[1 + a * (M - 1) + j - 1] + 1;
      }
      uint64_t c;
      ck_assert_int_eq(raspT_enumerate(o, g, 1000000, collect_cb, &ks, &c, NULL), 0);
      *inputs += c;
    }
    int p = N - 1;
    while (p >= 0 && ++idx[p] == V) idx[p--] = 0;
    if (p < 0) break;
  }
  size_t d = keyset_distinct(&ks, NULL);
  keyset_free(&ks);
  free(idx);
  free(g);
  return d;
}

START_TEST(test_counts_brute_force) {
  int cases[][3] = {{2, 2, 4}, {2, 2, 5}, {2, 3, 5}, {3, 2, 4}, {3, 2, 5},
                    {1, 3, 4}, {1, 2, 3}, {2, 2, 3}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
    for (int mode = 0; mode < 4; mode++) {
      rasp_task_opts o = mk(cases[c][0], cases[c][1], cases[c][2]);
      o.order = mode & 1 ? RASP_ORDER_ARM : RASP_ORDER_EDGE;
      o.st_names = !!(mode & 2);
      o.q = c % 2 ? RASP_Q_END : RASP_Q_START;
      o.answer = (rasp_answer)(c % 4);
      int D = o.D, M = o.M, V = o.V, N = D * (M - 1) + 1, E = D * (M - 1);
      uint64_t inputs;
      size_t distinct = brute_force(&o, mode == 0 || c < 2, &inputs);
      /* independent arithmetic */
      uint64_t labelled = fact(V) / fact(V - N) / fact(D);
      uint64_t gq = labelled * (uint64_t)D;
      ck_assert(gq == fact(V) / (fact(V - N) * fact(D - 1)));
      uint64_t tok = o.order == RASP_ORDER_EDGE ? fact(E) : fact(D);
      /* each labelled graph was visited once per arm ordering (D! tuples) */
      ck_assert(inputs == (fact(V) / fact(V - N)) * tok * (uint64_t)D);
      mpz_t a, b;
      mpz_inits(a, b, NULL);
      ck_assert_int_eq(raspT_count(&o, a, b), 1);
      ck_assert(mpz_cmp_ui(a, gq) == 0);
      ck_assert(mpz_cmp_ui(b, tok) == 0);
      mpz_mul(a, a, b);
      if (!o.st_names) {
        ck_assert_msg(mpz_cmp_ui(a, distinct) == 0, "case %zu mode %d: %zu distinct", c,
                      mode, distinct);
      } else {
        raspT_count_st_names(&o, a);
        ck_assert(mpz_cmp_ui(a, fact(V) / (fact(V - N + 2) * fact(D - 1))) == 0);
        mpz_mul(a, a, b);
        ck_assert_msg(mpz_cmp_ui(a, distinct) == 0, "case %zu mode %d (st): %zu distinct",
                      c, mode, distinct);
      }
      mpz_clears(a, b, NULL);
    }
}
END_TEST

START_TEST(test_counts_large) {
  rasp_task_opts o = mk(5, 20, 1000);
  mpz_t a, b, f;
  mpz_inits(a, b, f, NULL);
  ck_assert_int_eq(raspT_count(&o, a, b), 1);
  /* V!/((V-N)!(D-1)!) via factorials */
  mpz_fac_ui(f, 1000);
  mpz_t g;
  mpz_init(g);
  mpz_fac_ui(g, 1000 - 96);
  mpz_divexact(f, f, g);
  mpz_divexact_ui(f, f, 24);
  ck_assert(mpz_cmp(a, f) == 0);
  mpz_fac_ui(f, 95);
  ck_assert(mpz_cmp(b, f) == 0);
  o.order = RASP_ORDER_ARM;
  raspT_count(&o, a, b);
  ck_assert(mpz_cmp_ui(b, 120) == 0);
  o.V = 10;
  ck_assert_int_eq(raspT_count(&o, a, b), 0);
  mpz_clears(a, b, f, g, NULL);
}
END_TEST

/* ---- enumeration -------------------------------------------------------- */

static int stop_at_5(const rasp_sample *s, void *user) {
  (void)s;
  int *n = user;
  return ++*n == 5 ? 7 : 0;
}

/* raspT_enumerate_range: any range, reached by unranking Heap's sequence,
** is exactly that slice of the whole enumeration (in order), whatever the
** split; a range past the end is refused. */
START_TEST(test_enumerate_range) {
  struct { int D, M; rasp_order ord; } cases[] = {
      {2, 3, RASP_ORDER_EDGE}, {3, 3, RASP_ORDER_ARM}, {1, 2, RASP_ORDER_EDGE},
      {2, 4, RASP_ORDER_EDGE}, {5, 3, RASP_ORDER_ARM}, {3, 3, RASP_ORDER_EDGE},
      {1, 8, RASP_ORDER_EDGE}};
  uint64_t steps[] = {1, 2, 3, 7, 64, 1000};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    rasp_task_opts o = mk(cases[c].D, cases[c].M, 20);
    o.order = cases[c].ord;
    keyset all = {0};
    all.o = &o;
    uint64_t total = 0;
    ck_assert_int_eq(raspT_enumerate(&o, NULL, 100000, collect_cb, &all, &total, NULL), 0);
    for (size_t st = 0; st < sizeof steps / sizeof *steps; st++) {
      keyset part = {0};
      part.o = &o;
      for (uint64_t first = 0; first < total; first += steps[st]) {
        uint64_t n = total - first < steps[st] ? total - first : steps[st], got = 0;
        ck_assert_int_eq(raspT_enumerate_range(&o, NULL, first, n, collect_cb, &part, &got, NULL), 0);
        ck_assert(got == n);
      }
      ck_assert(part.n == total);
      for (size_t i = 0; i < total; i++) ck_assert_str_eq(part.keys[i], all.keys[i]);
      keyset_free(&part);
    }
    keyset_free(&all);
    rasp_error err = {0};
    keyset none = {0};
    none.o = &o;
    ck_assert_int_eq(raspT_enumerate_range(&o, NULL, total, 1, collect_cb, &none, NULL, &err), -1);
    ck_assert(err.set && strstr(err.msg, "outside"));
    ck_assert_int_eq(raspT_enumerate_range(&o, NULL, total, 0, collect_cb, &none, NULL, NULL), 0);
    ck_assert(none.n == 0);
  }
}
END_TEST

START_TEST(test_enumerate) {
  struct { int D, M; rasp_order ord; uint64_t want; } cases[] = {
      {2, 3, RASP_ORDER_EDGE, 24 * 2}, {3, 3, RASP_ORDER_ARM, 6 * 3},
      {1, 2, RASP_ORDER_EDGE, 1},      {2, 4, RASP_ORDER_EDGE, 720 * 2},
      {4, 3, RASP_ORDER_ARM, 24 * 4},  {3, 3, RASP_ORDER_EDGE, 720 * 3}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    rasp_task_opts o = mk(cases[c].D, cases[c].M, 20);
    o.order = cases[c].ord;
    keyset ks = {0};
    ks.o = &o;
    ks.check = 1;
    uint64_t count = 0, size = 0;
    ck_assert_int_eq(raspT_enumerate_size(&o, &size, NULL), 1);
    ck_assert(size == cases[c].want);
    ck_assert_int_eq(raspT_enumerate(&o, NULL, 100000, collect_cb, &ks, &count, NULL), 0);
    ck_assert(count == cases[c].want);
    ck_assert(ks.n == count);
    ck_assert(keyset_distinct(&ks, NULL) == count); /* every input distinct */
    keyset_free(&ks);
  }
  /* canonical graph uses nodes 1..N */
  rasp_task_opts o = mk(2, 3, 5);
  keyset ks = {0};
  ks.o = &o;
  ck_assert_int_eq(raspT_enumerate(&o, NULL, 1000, collect_cb, &ks, NULL, NULL), 0);
  ck_assert(strstr(ks.keys[0], "/ 1 "));
  keyset_free(&ks);
  /* cap */
  rasp_error err = {0};
  o = mk(3, 5, 20);
  uint64_t count = 99;
  ck_assert_int_eq(raspT_enumerate(&o, NULL, 1000000, collect_cb, &ks, &count, &err), -1);
  ck_assert(err.set && strstr(err.msg, "cap"));
  ck_assert(count == 0);
  /* stopping early */
  o = mk(2, 3, 5);
  int calls = 0;
  ck_assert_int_eq(raspT_enumerate(&o, NULL, 1000, stop_at_5, &calls, &count, NULL), 7);
  ck_assert(count == 5);
  /* a bad graph */
  int bad[] = {1, 2, 3, 1, 2, 4};
  memset(&err, 0, sizeof err);
  ck_assert_int_eq(raspT_enumerate(&o, bad, 1000, stop_at_5, &calls, NULL, &err), -1);
  ck_assert(strstr(err.msg, "twice"));
  int bad2[] = {1, 2, 3, 2, 4, 5};
  ck_assert_int_eq(raspT_enumerate(&o, bad2, 1000, stop_at_5, &calls, NULL, NULL), -1);
  int bad3[] = {1, 2, 3, 1, 4, 6};
  ck_assert_int_eq(raspT_enumerate(&o, bad3, 1000, stop_at_5, &calls, NULL, NULL), -1);
  /* far too many */
  o = mk(100, 100, 100000);
  memset(&err, 0, sizeof err);
  ck_assert_int_eq(raspT_enumerate(&o, NULL, UINT64_MAX, stop_at_5, &calls, NULL, &err), -1);
  ck_assert(err.set);
}
END_TEST

/* ---- command line ------------------------------------------------------- */

/* Runs rasp_cli_gen with stderr captured; returns the status and the text. */
static int run_gen(char *captured, size_t size, ...) {
  char *argv[40];
  int argc = 0;
  argv[argc++] = "gen";
  va_list ap;
  va_start(ap, size);
  const char *a;
  while ((a = va_arg(ap, const char *)) != NULL) argv[argc++] = (char *)a;
  va_end(ap);
  argv[argc] = NULL;
  char path[] = "/tmp/rasp_test_stderr_XXXXXX";
  int fd = mkstemp(path);
  ck_assert(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  int rc = rasp_cli_gen(argc, argv);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  lseek(fd, 0, SEEK_SET);
  ssize_t n = read(fd, captured, size - 1);
  captured[n > 0 ? n : 0] = 0;
  close(fd);
  unlink(path);
  return rc;
}

START_TEST(test_cli_bad_options) {
  char msg[4096];
  struct { const char *args[4]; const char *expect; } cases[] = {
      {{"--D", "x"}, "--D: expected an integer >= 1, got 'x'"},
      {{"--D", "0"}, "--D"},
      {{"--D=3x"}, "'3x'"},
      {{"--M", "1"}, "--M"},
      {{"--V", "-3"}, "--V"},
      {{"--D", "3", "--V", "5"}, "V = 5"},
      {{"--structured", "2"}, "--structured"},
      {{"--order", "foo"}, "--order"},
      {{"--q", "middle"}, "'middle'"},
      {{"--answer", "all"}, "--answer"},
      {{"--format", "xml"}, "--format"},
      {{"--markers", "3"}, "--markers"},
      {{"--seed", "-1"}, "--seed"},
      {{"--seed", "0xzz"}, "--seed"},
      {{"-n", "-1"}, "-n"},
      {{"--count-samples", "ten"}, "--count-samples"},
      {{"--bogus"}, "unknown option"},
      {{"-x"}, "unknown option"},
      {{"--D"}, "needs a value"},
      {{"--bos=1"}, "takes no value"},
      {{"extra"}, "unexpected argument"},
      {{"--V", "99999999999999999999"}, "--V"},
      {{"-o", ""}, "-o"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const char **a = cases[c].args;
    int rc = run_gen(msg, sizeof msg, a[0], a[1], a[2], a[3], (const char *)NULL);
    ck_assert_msg(rc == 2, "case %zu: status %d", c, rc);
    ck_assert_msg(strstr(msg, "rasp gen: ") && strstr(msg, cases[c].expect),
                  "case %zu: message '%s'", c, msg);
  }
  /* an unwritable output: a file the command line names (RASP_E_WRITE) */
  int rc = run_gen(msg, sizeof msg, "-o", "/nonexistent-dir/x.jsonl", (const char *)NULL);
  ck_assert_int_eq(rc, 2);
  ck_assert(strstr(msg, "cannot write"));
}
END_TEST

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  ck_assert(f != NULL);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

START_TEST(test_cli_output) {
  char msg[4096], out[] = "/tmp/rasp_test_gen_XXXXXX";
  int fd = mkstemp(out);
  close(fd);
  int rc = run_gen(msg, sizeof msg, "--D", "3", "--M", "4", "--V", "10", "-n", "4",
                   "--structured", "2", "--seed", "5", "-o", out, (const char *)NULL);
  ck_assert_msg(rc == 0, "%s", msg);
  char *text = slurp(out);
  int lines = 0;
  for (char *p = text; *p; p++) lines += *p == '\n';
  ck_assert_int_eq(lines, 12);
  ck_assert(strncmp(text, "{\"tokens\":[\"BOS\",\"/\",", 21) == 0);
  ck_assert(strstr(text, "\"D\":3,\"M\":4,\"s\":"));
  ck_assert(strstr(text, "\"g_start\":5,\"q_start\":1"));
  ck_assert(strstr(text, "\"variant\":2"));
  /* the first line matches the library's sample */
  rasp_task_opts o = mk(3, 4, 10);
  rasp_sample s = {0};
  raspT_sample(&o, 5, 0, &s, NULL);
  char want[128];
  snprintf(want, sizeof want, "\"s\":%d,\"t\":%d,\"lead\":%d,\"target_arm\":%d", s.s, s.t,
           s.lead, s.target_arm);
  char *nl = strchr(text, '\n');
  *nl = 0;
  ck_assert(strstr(text, want));
  raspT_sample_free(&s);

  /* text format, --q end, --no-bos, answer lead, st-names, 2 markers */
  rc = run_gen(msg, sizeof msg, "--format=text", "--q", "end", "--no-bos", "--answer",
               "lead", "--st-names", "--markers", "2", "-n3", "-o", out, (const char *)NULL);
  ck_assert_int_eq(rc, 0);
  text = slurp(out);
  ck_assert(strstr(text, "| | / s t = "));
  ck_assert(strncmp(text, "BOS", 3) != 0);
  int toks = 0;
  for (char *p = text; *p != '\n'; p++) toks += *p == ' ';
  o = mk(2, 5, 100);
  o.bos = 0;
  o.answer = RASP_ANS_LEAD;
  o.markers = 2;
  ck_assert_int_eq(toks + 1, raspT_length(&o));

  /* counts */
  rc = run_gen(msg, sizeof msg, "--count", "--D", "3", "--M", "4", "--V", "10", "-o", out,
               (const char *)NULL);
  ck_assert_int_eq(rc, 0);
  text = slurp(out);
  ck_assert(strstr(text, "distinct (G, Q) pairs, V!/((V-N)!(D-1)!): 1814400\n"));
  ck_assert(strstr(text, "tokenisations per (G, Q), (D(M-1))!: 362880\n"));
  ck_assert(strstr(text, "distinct (G, Q, tokenisation): 658409472000\n"));
  rc = run_gen(msg, sizeof msg, "--count", "--order", "arm", "--D", "3", "--M", "4", "--V",
               "10", "-o", out, (const char *)NULL);
  text = slurp(out);
  ck_assert(strstr(text, "D!: 6\n"));
  /* no temporary left behind */
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)getpid());
  ck_assert(access(tmp, F_OK) != 0);
  unlink(out);
  /* help */
  fflush(stdout);
  int saved = dup(1), null = open("/dev/null", O_WRONLY);
  dup2(null, 1);
  rc = run_gen(msg, sizeof msg, "--help", (const char *)NULL);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(null);
  ck_assert_int_eq(rc, 0);
}
END_TEST

/* ---- suite -------------------------------------------------------------- */

static Suite *task_suite(void) {
  Suite *s = suite_create("task");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_rng_determinism);
  tcase_add_test(tc, test_rng_below_uniform);
  tcase_add_test(tc, test_opts_check);
  tcase_add_test(tc, test_vocab);
  tcase_add_test(tc, test_length);
  tcase_add_test(tc, test_structure_all_options);
  tcase_add_test(tc, test_st_names_and_markers);
  tcase_add_test(tc, test_paper_figure);
  tcase_add_test(tc, test_determinism);
  tcase_add_test(tc, test_structured);
  tcase_add_test(tc, test_target_uniform);
  tcase_add_test(tc, test_nodes_uniform_dense);
  tcase_add_test(tc, test_nodes_uniform_sparse);
  tcase_add_test(tc, test_sequences_uniform_edge);
  tcase_add_test(tc, test_sequences_uniform_arm);
  tcase_add_test(tc, test_counts_brute_force);
  tcase_add_test(tc, test_counts_large);
  tcase_add_test(tc, test_enumerate);
  tcase_add_test(tc, test_enumerate_range);
  tcase_add_test(tc, test_cli_bad_options);
  tcase_add_test(tc, test_cli_output);
  suite_add_tcase(s, tc);
  return s;
}

RASP_CHECK_MAIN(task_suite())
