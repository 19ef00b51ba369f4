/*
** rtask.c -- the path-star task: generation, tokenisation, enumeration and
** exact counts.
**
** Design.
**
** A sample is made in three steps, each a pure function of what came
** before, so that the same (options, seed, index) gives the same tokens on
** every machine and in every run, whatever the thread count:
**
**   1. draw: from the stream (seed, index), an ordered N-tuple of distinct
**      node symbols (uniform over all V!/(V-N)! tuples), the tuple's first
**      entry becoming s and the rest filling the arms in turn; then a
**      uniformly random permutation (Fisher-Yates) of the D(M-1) edges
**      (EDGE order) or of the D arms (ARM order); then the target arm.
**      Tuples come from a partial Fisher-Yates shuffle of 1..V when the
**      graph takes more than half the symbols, and otherwise from repeated
**      uniform draws with rejection of repeats (an open-addressing set), so
**      V may be large without an array of V entries.  Both give every
**      ordered tuple the same probability.
**   2. assemble: the drawn arms and order become a rasp_sample's arms[]
**      (renumbered by where each arm's s-edge is written in G, so that "arm 0"
**      means the same thing for both orders) and the written edge list.
**   3. render: a target arm turns the graph into tokens.
**
** The uniform graph with uniform target and uniform order is exactly the
** paper's distribution: every labelled (G, Q, tokenisation) triple is
** reached by the same number of draws (D! tuples per unlabelled-arm graph,
** which the target and order draws do not depend on).
**
** Structured samples re-run step 3 with other targets drawn from the same
** stream after the base sample's draws, so the base sample of a group is
** bit-identical to the plain sample with the same index.  Exhaustive
** enumeration reuses steps 2 and 3 with every permutation from Heap's
** algorithm (iterative: no recursion, one swap per permutation) and every
** target.
**
** Counts use GMP: falling factorials as C(V, N) * N!, which GMP computes
** by subquadratic algorithms, then exact division by (D-1)!.
*/
#include "rtask.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rmem.h"

/* ---- PRNG --------------------------------------------------------------- */

#define GOLDEN 0x9E3779B97F4A7C15ull

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *x) {
  *x += GOLDEN;
  return mix64(*x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void raspT_rng_seed(rasp_rng *rng, uint64_t seed, uint64_t stream) {
  uint64_t x = seed ^ mix64(stream + GOLDEN);
  for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&x);
  if (!(rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3])) rng->s[0] = 1;
}

uint64_t raspT_rng_next(rasp_rng *rng) {
  uint64_t *s = rng->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

uint64_t raspT_rng_below(rasp_rng *rng, uint64_t n) {
  if (n <= 1) return 0;
  /* Reject the lowest 2^64 mod n values: what remains is a whole number of
  ** copies of 0..n-1.  That threshold is below n, so it needs computing (a
  ** division) only for the rare draw below n. */
  for (;;) {
    uint64_t r = raspT_rng_next(rng);
    if (r >= n || r >= (0 - n) % n) return r % n;
  }
}

static void shuffle(rasp_rng *rng, int *a, int n) {
  for (int i = n - 1; i > 0; i--) {
    int j = (int)raspT_rng_below(rng, (uint64_t)i + 1);
    int t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

/* ---- options ------------------------------------------------------------ */

void raspT_opts_default(rasp_task_opts *o) {
  memset(o, 0, sizeof *o);
  o->D = 2;
  o->M = 5;
  o->V = 100;
  o->order = RASP_ORDER_EDGE;
  o->q = RASP_Q_START;
  o->answer = RASP_ANS_FORWARD;
  o->bos = 1;
  o->eos = 1;
  o->markers = 1;
  o->st_names = 0;
  o->structured = 0;
}

int raspT_opts_check(const rasp_task_opts *o, rasp_error *err) {
  if (o->D < 1) {
    raspR_setnoposc(err, RASP_E_USAGE, "D = %d: the degree must be at least 1", o->D);
    return 0;
  }
  if (o->M < 2) {
    raspR_setnoposc(err, RASP_E_USAGE, "M = %d: the arm length (counting s) must be at least 2",
                   o->M);
    return 0;
  }
  int64_t edges = (int64_t)o->D * (o->M - 1);
  if (edges > RASP_TASK_MAX_EDGES) {
    raspR_setnoposc(err, RASP_E_USAGE,
                   "D = %d, M = %d: D(M-1) = %lld edges, more than the limit %d",
                   o->D, o->M, (long long)edges, RASP_TASK_MAX_EDGES);
    return 0;
  }
  if (o->V < 1 || o->V > RASP_TASK_MAX_V) {
    raspR_setnoposc(err, RASP_E_USAGE, "V = %d: the number of node symbols must be between 1 and %d",
                   o->V, RASP_TASK_MAX_V);
    return 0;
  }
  if ((int64_t)o->V < edges + 1) {
    raspR_setnoposc(err, RASP_E_USAGE,
                   "V = %d node symbols are fewer than the N = D(M-1)+1 = %lld "
                   "nodes of a graph with D = %d, M = %d",
                   o->V, (long long)(edges + 1), o->D, o->M);
    return 0;
  }
  if (o->order != RASP_ORDER_EDGE && o->order != RASP_ORDER_ARM) {
    raspR_setnoposc(err, RASP_E_USAGE, "unknown edge order %d", (int)o->order);
    return 0;
  }
  if (o->q != RASP_Q_START && o->q != RASP_Q_END) {
    raspR_setnoposc(err, RASP_E_USAGE, "unknown Q placement %d", (int)o->q);
    return 0;
  }
  if (o->answer < RASP_ANS_NONE || o->answer > RASP_ANS_LEAD) {
    raspR_setnoposc(err, RASP_E_USAGE, "unknown answer kind %d", (int)o->answer);
    return 0;
  }
  if (o->markers != 1 && o->markers != 2) {
    raspR_setnoposc(err, RASP_E_USAGE, "markers = %d: expected 1 or 2", o->markers);
    return 0;
  }
  if (o->structured < 0 || o->structured > o->D - 1) {
    raspR_setnoposc(err, RASP_E_USAGE,
                   "structured = %d: the number of structured samples must be "
                   "between 0 and D-1 = %d",
                   o->structured, o->D - 1);
    return 0;
  }
  return 1;
}

int raspT_edges(const rasp_task_opts *o) { return o->D * (o->M - 1); }
int raspT_nodes(const rasp_task_opts *o) { return o->D * (o->M - 1) + 1; }

static int answer_len(const rasp_task_opts *o) {
  switch (o->answer) {
  case RASP_ANS_FORWARD:
  case RASP_ANS_REVERSE: return o->M;
  case RASP_ANS_LEAD: return 1;
  default: return 0;
  }
}

int raspT_length(const rasp_task_opts *o) {
  if (!raspT_opts_check(o, NULL)) return -1;
  /* At most 2^22 edges of 4 tokens plus a 2^22+1 node answer: fits. */
  return (o->bos ? 1 : 0) + 4 + raspT_edges(o) * (2 + o->markers) +
         answer_len(o) + (o->eos ? 1 : 0);
}

/* ---- vocabulary --------------------------------------------------------- */

static const char *const special_text[RASP_SP_COUNT + 1] = {
    NULL, "|", "/", "=", "BOS", "EOS", "s", "t"};

int raspT_vocab_size(const rasp_task_opts *o) { return o->V + RASP_SP_COUNT + 1; }

int raspT_token_text(const rasp_task_opts *o, int id, char *buf, size_t size) {
  if (id >= 1 && id <= o->V) return snprintf(buf, size, "%d", id);
  if (id == 0) return snprintf(buf, size, "PAD");
  if (id > o->V && id - o->V <= RASP_SP_COUNT)
    return snprintf(buf, size, "%s", special_text[id - o->V]);
  if (size) snprintf(buf, size, "?");
  return -1;
}

int raspT_token_id(const rasp_task_opts *o, const char *text) {
  for (int k = 1; k <= RASP_SP_COUNT; k++)
    if (strcmp(text, special_text[k]) == 0) return o->V + k;
  if (strcmp(text, "PAD") == 0) return 0;
  if (text[0] < '1' || text[0] > '9') return -1;
  long v = 0;
  for (const char *p = text; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    v = v * 10 + (*p - '0');
    if (v > o->V) return -1;
  }
  return (int)v;
}

/* ---- assembling and rendering ------------------------------------------- */

static void grow_int(int **p, size_t *cap, size_t n) {
  if (n <= *cap && *p) return;
  *p = raspM_realloc(*p, (n ? n : 1) * sizeof **p);
  *cap = n;
}

static void sample_alloc(const rasp_task_opts *o, rasp_sample *out) {
  int E = raspT_edges(o);
  size_t ecap = out->cap_edges;
  grow_int(&out->tokens, &out->cap_tokens, (size_t)raspT_length(o));
  grow_int(&out->answer, &out->cap_answer, (size_t)o->M);
  grow_int(&out->arms, &out->cap_arms, (size_t)o->D * (size_t)o->M);
  grow_int(&out->edge_arm, &ecap, (size_t)E);
  ecap = out->cap_edges;
  grow_int(&out->edge_step, &ecap, (size_t)E);
  grow_int(&out->edge_pos, &out->cap_edges, (size_t)E);
  out->D = o->D;
  out->M = o->M;
  out->nedges = E;
}

void raspT_sample_free(rasp_sample *s) {
  if (!s) return;
  raspM_free(s->tokens);
  raspM_free(s->answer);
  raspM_free(s->arms);
  raspM_free(s->edge_arm);
  raspM_free(s->edge_step);
  raspM_free(s->edge_pos);
  raspM_free(s->work);
  memset(s, 0, sizeof *s);
}

/* Fills arms[], edge_arm[], edge_step[] of out (already sized) from the
** drawn arms gen (D*M) and the written order perm: edge ids a*(M-1)+j for
** EDGE, arm ids for ARM.  rank is scratch of D ints. */
static void assemble(const rasp_task_opts *o, const int *gen, const int *perm,
                     int *rank, rasp_sample *out) {
  int D = o->D, M = o->M, E = raspT_edges(o);
  if (o->order == RASP_ORDER_EDGE) {
    int next = 0;
    for (int k = 0; k < E; k++)
      if (perm[k] % (M - 1) == 0) rank[perm[k] / (M - 1)] = next++;
    for (int k = 0; k < E; k++) {
      out->edge_arm[k] = rank[perm[k] / (M - 1)];
      out->edge_step[k] = perm[k] % (M - 1);
    }
    for (int a = 0; a < D; a++)
      memcpy(out->arms + (size_t)rank[a] * M, gen + (size_t)a * M,
             (size_t)M * sizeof *gen);
  } else {
    int k = 0;
    for (int r = 0; r < D; r++) {
      memcpy(out->arms + (size_t)r * M, gen + (size_t)perm[r] * M,
             (size_t)M * sizeof *gen);
      for (int j = 0; j < M - 1; j++, k++) {
        out->edge_arm[k] = r;
        out->edge_step[k] = j;
      }
    }
  }
}

static int node_token(const rasp_task_opts *o, const rasp_sample *s, int v) {
  if (o->st_names) {
    if (v == s->s) return o->V + RASP_SP_S;
    if (v == s->t) return o->V + RASP_SP_T;
  }
  return v;
}

/* Writes the tokens of out (assembled) for target arm `target`. */
static void render(const rasp_task_opts *o, rasp_sample *out, int target) {
  int M = o->M, V = o->V, E = raspT_edges(o);
  const int *arm = out->arms + (size_t)target * M;
  out->target_arm = target;
  out->s = arm[0];
  out->t = arm[M - 1];
  out->lead = arm[1];
  memcpy(out->answer, arm, (size_t)M * sizeof *arm);

  int *tk = out->tokens;
  int n = 0;
  if (o->bos) tk[n++] = V + RASP_SP_BOS;
  for (int part = 0; part < 2; part++) {
    int is_q = (part == 0) == (o->q == RASP_Q_START);
    if (is_q) {
      out->q_start = n;
      tk[n++] = V + RASP_SP_SLASH;
      tk[n++] = node_token(o, out, out->s);
      tk[n++] = node_token(o, out, out->t);
      tk[n++] = V + RASP_SP_EQ;
    } else {
      out->g_start = n;
      for (int k = 0; k < E; k++) {
        const int *u = out->arms + (size_t)out->edge_arm[k] * M + out->edge_step[k];
        out->edge_pos[k] = n;
        tk[n++] = node_token(o, out, u[0]);
        tk[n++] = node_token(o, out, u[1]);
        for (int m = 0; m < o->markers; m++) tk[n++] = V + RASP_SP_BAR;
      }
    }
  }
  out->ans_start = n;
  switch (o->answer) {
  case RASP_ANS_FORWARD:
    for (int j = 0; j < M; j++) tk[n++] = node_token(o, out, arm[j]);
    break;
  case RASP_ANS_REVERSE:
    for (int j = M - 1; j >= 0; j--) tk[n++] = node_token(o, out, arm[j]);
    break;
  case RASP_ANS_LEAD: tk[n++] = node_token(o, out, arm[1]); break;
  default: break;
  }
  if (o->eos) tk[n++] = V + RASP_SP_EOS;
  out->ntokens = n;
}

/* Copies the graph part (arms, edges) of src into dst (same options). */
static void copy_graph(const rasp_task_opts *o, rasp_sample *dst,
                       const rasp_sample *src) {
  sample_alloc(o, dst);
  size_t E = (size_t)raspT_edges(o);
  memcpy(dst->arms, src->arms, (size_t)o->D * (size_t)o->M * sizeof *dst->arms);
  memcpy(dst->edge_arm, src->edge_arm, E * sizeof *dst->edge_arm);
  memcpy(dst->edge_step, src->edge_step, E * sizeof *dst->edge_step);
}

/* ---- drawing ------------------------------------------------------------ */

/* An ordered tuple of n distinct values, uniform over 1..V. */
static int *work_area(rasp_sample *s, size_t n) {
  grow_int(&s->work, &s->cap_work, n);
  return s->work;
}

/* An ordered tuple of n distinct values, uniform over 1..V; scratch: room
** for max(V, 4n + 16) ints. */
static void draw_tuple(rasp_rng *rng, int V, int n, int *tuple, int *scratch_ints) {
  if ((int64_t)n * 2 > V) {
    int *pool = scratch_ints;
    for (int i = 0; i < V; i++) pool[i] = i + 1;
    for (int i = 0; i < n; i++) {
      int j = i + (int)raspT_rng_below(rng, (uint64_t)(V - i));
      int t = pool[i];
      pool[i] = pool[j];
      pool[j] = t;
      tuple[i] = pool[i];
    }
    return;
  }
  size_t cap = 16;
  while (cap < (size_t)n * 4) cap *= 2;
  int *set = scratch_ints; /* 0 = empty */
  memset(set, 0, cap * sizeof *set);
  for (int i = 0; i < n;) {
    int v = 1 + (int)raspT_rng_below(rng, (uint64_t)V);
    size_t h = (size_t)(mix64((uint64_t)v) & (cap - 1));
    while (set[h] && set[h] != v) h = (h + 1) & (cap - 1);
    if (set[h]) continue; /* a repeat: draw again */
    set[h] = v;
    tuple[i++] = v;
  }
}

/* Room draw_tuple needs for n values out of V. */
static size_t tuple_scratch(int V, int n) {
  size_t cap = 16;
  while (cap < (size_t)n * 4) cap *= 2;
  return (size_t)V > cap ? (size_t)V : cap;
}

/* Steps 1 and 2 of the design note, leaving rng after the target draw. */
static int draw_sample(const rasp_task_opts *o, rasp_rng *rng, rasp_sample *out,
                       rasp_error *err) {
  if (!raspT_opts_check(o, err)) return 0;
  int D = o->D, M = o->M, N = raspT_nodes(o), E = raspT_edges(o);
  sample_alloc(o, out);
  int nperm = o->order == RASP_ORDER_EDGE ? E : D;
  size_t nts = tuple_scratch(o->V, N);
  int *tuple = work_area(out, (size_t)N + (size_t)D * M + (size_t)nperm + (size_t)D + nts);
  int *gen = tuple + N;
  int *perm = gen + (size_t)D * M;
  int *rank = perm + nperm;

  draw_tuple(rng, o->V, N, tuple, rank + D);
  for (int a = 0; a < D; a++) {
    gen[(size_t)a * M] = tuple[0];
    for (int j = 1; j < M; j++)
      gen[(size_t)a * M + j] = tuple[1 + a * (M - 1) + (j - 1)];
  }
  for (int i = 0; i < nperm; i++) perm[i] = i;
  shuffle(rng, perm, nperm);
  assemble(o, gen, perm, rank, out);
  int target = (int)raspT_rng_below(rng, (uint64_t)D);
  out->variant = 0;
  render(o, out, target);
  return 1;
}

int raspT_sample(const rasp_task_opts *o, uint64_t seed, uint64_t index,
                 rasp_sample *out, rasp_error *err) {
  rasp_rng rng;
  raspT_rng_seed(&rng, seed, index);
  return draw_sample(o, &rng, out, err);
}

int raspT_sample_group(const rasp_task_opts *o, uint64_t seed, uint64_t index,
                       rasp_sample *out, rasp_error *err) {
  rasp_rng rng;
  raspT_rng_seed(&rng, seed, index);
  if (!draw_sample(o, &rng, &out[0], err)) return -1;
  int D = o->D, k = o->structured;
  if (k == 0) return 1;
  int *others = raspM_alloc((size_t)D * sizeof *others);
  int m = 0;
  for (int a = 0; a < D; a++)
    if (a != out[0].target_arm) others[m++] = a;
  for (int i = 0; i < k; i++) { /* partial Fisher-Yates: k distinct arms */
    int j = i + (int)raspT_rng_below(&rng, (uint64_t)(m - i));
    int t = others[i];
    others[i] = others[j];
    others[j] = t;
    copy_graph(o, &out[i + 1], &out[0]);
    out[i + 1].variant = i + 1;
    render(o, &out[i + 1], others[i]);
  }
  raspM_free(others);
  return k + 1;
}

/* ---- enumeration -------------------------------------------------------- */

/* snprintf onto buf at *at, counting what does not fit. */
static void json_put(char *buf, size_t size, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void json_put(char *buf, size_t size, size_t *at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(*at < size ? buf + *at : NULL, *at < size ? size - *at : 0, fmt, ap);
  va_end(ap);
  if (n > 0) *at += (size_t)n;
}

size_t raspT_sample_json(const rasp_task_opts *o, const rasp_sample *s, uint64_t index,
                         char *buf, size_t size) {
  size_t at = 0;
  char tok[32];
  if (size) buf[0] = 0;
  json_put(buf, size, &at, "{\"tokens\":[");
  for (int i = 0; i < s->ntokens; i++) {
    raspT_token_text(o, s->tokens[i], tok, sizeof tok);
    json_put(buf, size, &at, "%s\"%s\"", i ? "," : "", tok);
  }
  json_put(buf, size, &at,
           "],\"D\":%d,\"M\":%d,\"s\":%d,\"t\":%d,\"lead\":%d,\"target_arm\":%d,"
           "\"answer\":[",
           s->D, s->M, s->s, s->t, s->lead, s->target_arm);
  for (int j = 0; j < s->M; j++) json_put(buf, size, &at, "%s%d", j ? "," : "", s->answer[j]);
  json_put(buf, size, &at, "],\"g_start\":%d,\"q_start\":%d,\"index\":%llu,\"variant\":%d}",
           s->g_start, s->q_start, (unsigned long long)index, s->variant);
  return at;
}

int raspT_enumerate_size(const rasp_task_opts *o, uint64_t *n, rasp_error *err) {
  if (!raspT_opts_check(o, err)) return 0;
  int items = o->order == RASP_ORDER_EDGE ? raspT_edges(o) : o->D;
  uint64_t c = (uint64_t)o->D;
  for (int i = 2; i <= items; i++) {
    if (c > UINT64_MAX / (uint64_t)i) {
      raspR_setnoposc(err, RASP_E_LIMIT, "enumeration of D = %d, M = %d (%s order) has more "
                                         "than 2^64 inputs",
                      o->D, o->M, o->order == RASP_ORDER_EDGE ? "edge" : "arm");
      return 0;
    }
    c *= (uint64_t)i;
  }
  *n = c;
  return 1;
}

static int check_graph(const rasp_task_opts *o, const int *g, rasp_error *err) {
  int D = o->D, M = o->M;
  size_t cap = 16;
  while (cap < (size_t)raspT_nodes(o) * 2) cap *= 2;
  int *set = raspM_alloc(cap * sizeof *set);
  int rc = 0;
  for (int a = 0; a < D && rc == 0; a++) {
    for (int j = 0; j < M; j++) {
      int v = g[(size_t)a * M + j];
      if (v < 1 || v > o->V) {
        raspR_setnoposc(err, RASP_E_USAGE, "graph: arm %d node %d is %d, outside 1..V = %d", a,
                       j, v, o->V);
        rc = -1;
        break;
      }
      if (j == 0) {
        if (v != g[0]) {
          raspR_setnoposc(err, RASP_E_USAGE, "graph: arm %d starts at %d, not at s = %d", a, v,
                         g[0]);
          rc = -1;
          break;
        }
        if (a > 0) continue;
      }
      size_t h = (size_t)(mix64((uint64_t)v) & (cap - 1));
      while (set[h] && set[h] != v) h = (h + 1) & (cap - 1);
      if (set[h]) {
        raspR_setnoposc(err, RASP_E_USAGE, "graph: node %d occurs twice", v);
        rc = -1;
        break;
      }
      set[h] = v;
    }
  }
  raspM_free(set);
  return rc;
}

/* Heap's algorithm, iterative, keeps c[1..n-1] as a mixed-radix counter
** (digit i runs 0..i) that counts the permutations visited: after k steps
** c holds k's factorial-base digits.  So permutation k can be reached
** without the k - 1 before it: let G[m] be what running every state of
** digits 1..m-1 does to the positions (it touches only 0..m-1).  Then
** G[1] = identity and G[m+1] = (G[m], swap(j(m,0), m)) ... (G[m],
** swap(j(m,m-1), m)), G[m], where j(m,c) is 0 for even m and c for odd m,
** the swap Heap's algorithm makes when digit m steps from c to c+1; and
** permutation k is reached from the identity by applying, for each digit
** i from the highest down, d_i times (G[i], swap(j(i,c), i)).  A
** transformation T is an array with new[p] = old[T[p]]: "A, then B" is
** A[B[p]].  O(n^3) for n items, nothing next to the k steps it saves. */
static void heap_unrank(int n, uint64_t k, int *perm, int *c) {
  int *G = raspM_alloc((size_t)(n + 1) * (size_t)n * sizeof *G), *t = raspM_alloc((size_t)n * sizeof *t);
  int *acc = raspM_alloc((size_t)n * sizeof *acc);
  for (int p = 0; p < n; p++) G[(size_t)1 * n + p] = p;
  for (int m = 1; m < n; m++) { /* G[m+1] from G[m] */
    const int *g = G + (size_t)m * n;
    for (int p = 0; p < n; p++) acc[p] = p;
    for (int r = 0; r <= m; r++) {
      for (int p = 0; p < n; p++) t[p] = acc[g[p]]; /* acc, then G[m] */
      memcpy(acc, t, (size_t)n * sizeof *t);
      if (r == m) break;
      int j = m % 2 == 0 ? 0 : r, x = acc[j]; /* then swap(j, m) */
      acc[j] = acc[m];
      acc[m] = x;
    }
    memcpy(G + (size_t)(m + 1) * n, acc, (size_t)n * sizeof *acc);
  }
  /* the digits: c[i] = (k / i!) mod (i + 1) */
  uint64_t q = k;
  for (int i = 1; i < n; i++) {
    c[i] = (int)(q % (uint64_t)(i + 1));
    q /= (uint64_t)(i + 1);
  }
  c[0] = 0;
  for (int p = 0; p < n; p++) perm[p] = p;
  for (int i = n - 1; i >= 1; i--)
    for (int r = 0; r < c[i]; r++) {
      const int *g = G + (size_t)i * n;
      for (int p = 0; p < n; p++) t[p] = perm[g[p]];
      memcpy(perm, t, (size_t)n * sizeof *t);
      int j = i % 2 == 0 ? 0 : r, x = perm[j];
      perm[j] = perm[i];
      perm[i] = x;
    }
  raspM_free(G);
  raspM_free(t);
  raspM_free(acc);
}

int raspT_enumerate(const rasp_task_opts *o, const int *graph, uint64_t cap,
                    rasp_enum_fn fn, void *user, uint64_t *count,
                    rasp_error *err) {
  if (count) *count = 0;
  uint64_t total;
  if (!raspT_enumerate_size(o, &total, err)) return -1;
  if (total > cap) {
    raspR_setnoposc(err, RASP_E_LIMIT,
                   "exhaustive enumeration of D = %d, M = %d (%s order) has "
                   "%llu inputs, more than the cap %llu",
                   o->D, o->M, o->order == RASP_ORDER_EDGE ? "edge" : "arm",
                   (unsigned long long)total, (unsigned long long)cap);
    return -1;
  }
  return raspT_enumerate_range(o, graph, 0, total, fn, user, count, err);
}

int raspT_enumerate_range(const rasp_task_opts *o, const int *graph, uint64_t first,
                          uint64_t n_inputs, rasp_enum_fn fn, void *user,
                          uint64_t *count, rasp_error *err) {
  if (count) *count = 0;
  uint64_t total;
  if (!raspT_enumerate_size(o, &total, err)) return -1;
  if (first > total || n_inputs > total - first) {
    raspR_setnopos(err, "inputs %llu..%llu are outside the enumeration's 0..%llu",
                   (unsigned long long)first, (unsigned long long)(first + n_inputs),
                   (unsigned long long)total);
    return -1;
  }
  if (graph && check_graph(o, graph, err) != 0) return -1;
  if (n_inputs == 0) return 0;

  int D = o->D, M = o->M;
  int *gen = raspM_alloc((size_t)D * (size_t)M * sizeof *gen);
  if (graph) {
    memcpy(gen, graph, (size_t)D * (size_t)M * sizeof *gen);
  } else {
    for (int a = 0; a < D; a++) {
      gen[(size_t)a * M] = 1;
      for (int j = 1; j < M; j++) gen[(size_t)a * M + j] = 1 + a * (M - 1) + j;
    }
  }
  int n = o->order == RASP_ORDER_EDGE ? raspT_edges(o) : D;
  int *perm = raspM_alloc((size_t)n * sizeof *perm);
  int *c = raspM_alloc((size_t)n * sizeof *c);
  int *rank = raspM_alloc((size_t)D * sizeof *rank);
  /* input k is permutation k / D with target k % D */
  heap_unrank(n, first / (uint64_t)D, perm, c);
  int t0 = (int)(first % (uint64_t)D);
  rasp_sample s = {0};
  sample_alloc(o, &s);
  uint64_t done = 0;
  int rc = 0;

  /* Heap's algorithm, iterative: visit, then one swap per permutation. */
  int i = 1;
  for (;;) {
    assemble(o, gen, perm, rank, &s);
    for (int t = t0; t < D && rc == 0 && done < n_inputs; t++) {
      render(o, &s, t);
      done++;
      rc = fn(&s, user);
    }
    t0 = 0;
    if (rc != 0 || done == n_inputs) break;
    while (i < n && c[i] >= i) {
      c[i] = 0;
      i++;
    }
    if (i >= n) break;
    int j = (i % 2 == 0) ? 0 : c[i];
    int tmp = perm[j];
    perm[j] = perm[i];
    perm[i] = tmp;
    c[i]++;
    i = 1;
  }

  raspT_sample_free(&s);
  raspM_free(gen);
  raspM_free(perm);
  raspM_free(c);
  raspM_free(rank);
  if (count) *count = done;
  return rc;
}

/* ---- layout globals ----------------------------------------------------- */

/* The one list of their names; raspT_layout_globals fills them in order. */
static const char *const layout_names[RASP_LAYOUT_NGLOBALS] = {
    "arm_len", "degree", "num_symbols", "seq_len", "markers",
    "edge_width", "q_before_g", "g_start", "q_start", "ans_start"};

void raspT_layout_globals(const rasp_task_opts *o, int n, rasp_layout_global *out) {
  rasp_sample s;
  memset(&s, 0, sizeof s);
  int have = raspT_sample(o, 0, 0, &s, NULL);
  int64_t v[RASP_LAYOUT_NGLOBALS] = {
      o->M, o->D, o->V, n, o->markers, 2 + o->markers, o->q == RASP_Q_START,
      have ? s.g_start : 0, have ? s.q_start : 0, have ? s.ans_start : 0};
  for (int i = 0; i < RASP_LAYOUT_NGLOBALS; i++)
    out[i] = (rasp_layout_global){layout_names[i], v[i], i == 6};
  raspT_sample_free(&s);
}

int raspT_is_layout_global(const char *name) {
  for (int i = 0; i < RASP_LAYOUT_NGLOBALS; i++)
    if (strcmp(layout_names[i], name) == 0) return 1;
  return 0;
}

/* ---- counts ------------------------------------------------------------- */

/* r = V! / (V-k)! */
static void falling(mpz_t r, unsigned long V, unsigned long k) {
  mpz_t f;
  mpz_init(f);
  mpz_bin_uiui(r, V, k);
  mpz_fac_ui(f, k);
  mpz_mul(r, r, f);
  mpz_clear(f);
}

int raspT_count(const rasp_task_opts *o, mpz_t graphs_gq, mpz_t tokenisations) {
  if (!raspT_opts_check(o, NULL)) return 0;
  mpz_t f;
  mpz_init(f);
  falling(graphs_gq, (unsigned long)o->V, (unsigned long)raspT_nodes(o));
  mpz_fac_ui(f, (unsigned long)(o->D - 1));
  mpz_divexact(graphs_gq, graphs_gq, f);
  mpz_fac_ui(tokenisations, (unsigned long)(o->order == RASP_ORDER_EDGE
                                                ? raspT_edges(o)
                                                : o->D));
  mpz_clear(f);
  return 1;
}

int raspT_count_st_names(const rasp_task_opts *o, mpz_t distinct_gq) {
  if (!raspT_opts_check(o, NULL)) return 0;
  mpz_t f;
  mpz_init(f);
  falling(distinct_gq, (unsigned long)o->V, (unsigned long)(raspT_nodes(o) - 2));
  mpz_fac_ui(f, (unsigned long)(o->D - 1));
  mpz_divexact(distinct_gq, distinct_gq, f);
  mpz_clear(f);
  return 1;
}
