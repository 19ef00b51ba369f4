/*
** rtask_input.c -- one input of the path-star task read back from the text
** its samples are written as (rtask.h: raspT_token_text; `rasp gen`, the
** verifier's counterexamples).
**
** raspT_parse_input reads an input written out as tokens (what
** a counterexample or `rasp gen` prints) against the file's task: D is the
** degree of Q's s, M follows from the number of edges, and the text must
** then be exactly what the generator could have written (the layout of a
** reference sample, a path-star graph, a right answer), so l_t and t are
** determined and the verdict means what the verifier's would.
**
** The verifier's raspK_parse_input (rverify.h) is this for a program's
** task; `rasp verify --input`, `rasp run --input`, `rasp draw --input` and
** `rasp apply` read their inputs through it.
*/
#include <stdlib.h>
#include <string.h>

#include "rmem.h"
#include "rtask.h"

/* Nodes are keyed by their token ids (a number, or "s"/"t" under
** st_names); child[] is looked up by binary search on edges sorted by u. */
typedef struct iedge { int64_t u, v; int k; } iedge;

static int edge_by_u(const void *a, const void *b) {
  const iedge *x = a, *y = b;
  return x->u < y->u ? -1 : x->u > y->u;
}

static int edge_by_v(const void *a, const void *b) {
  const iedge *x = a, *y = b;
  return x->v < y->v ? -1 : x->v > y->v;
}

static const iedge *child_of(const iedge *byu, int E, int64_t u) {
  iedge key = {u, 0, 0};
  return bsearch(&key, byu, (size_t)E, sizeof *byu, edge_by_u);
}

static int is_node(const rasp_task_opts *o, int64_t id) {
  return (id >= 1 && id <= o->V) ||
         (o->st_names && (id == o->V + RASP_SP_S || id == o->V + RASP_SP_T));
}

/* text -> task token ids; counts the "|" tokens */
static int read_tokens(const rasp_task_opts *o, const char *text, rasp_input *in, int *bars,
                       rasp_error *err) {
  int cap = 0;
  *bars = 0;
  for (const char *p = text;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (!*p) break;
    const char *s = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') p++;
    char tok[32];
    size_t len = (size_t)(p - s);
    snprintf(tok, sizeof tok, "%.*s", (int)(len < sizeof tok ? len : sizeof tok - 1), s);
    int id = len < sizeof tok - 1 ? raspT_token_id(o, tok) : -1;
    if (id <= 0 || (!o->st_names && id >= o->V + RASP_SP_S)) {
      const char *why = "not a token of the task (node symbols 1..V, | / = BOS EOS, and s t "
                        "with task['st_names'])";
      if (len < 12 && tok[0] >= '1' && tok[0] <= '9' && strspn(tok, "0123456789") == len)
        why = "a node symbol above --V";
      else if (id > 0)
        why = "the program's task writes s and t as numbers (task['st_names'] is off)";
      raspR_setnoposc(err, RASP_E_USAGE, "input token %d '%s'%s: %s (V = %d)", in->n, tok,
                     len < sizeof tok - 1 ? "" : "...", why, o->V);
      return -1;
    }
    RASP_GROW(in->tokens, cap, in->n + 1);
    in->tokens[in->n++] = id;
    if (id == o->V + RASP_SP_BAR) ++*bars;
  }
  if (in->n == 0) {
    raspR_setnoposc(err, RASP_E_USAGE, "the input is empty");
    return -1;
  }
  return 0;
}

static int bad_at(rasp_error *err, const rasp_task_opts *o, const rasp_input *in, int pos,
                  const char *what) {
  char buf[64];
  if (pos >= 0 && pos < in->n) {
    raspT_token_text(o, (int)in->tokens[pos], buf, sizeof buf);
    raspR_setnoposc(err, RASP_E_USAGE, "input token %d '%s': %s", pos, buf, what);
  } else
    raspR_setnoposc(err, RASP_E_USAGE, "the input (%d tokens) ends early: %s", in->n, what);
  return -1;
}

/* Where an input's parts are: its edges (E of them, w tokens each, from
** g_start) and Q (from q_start), whose s and t. */
typedef struct ilayout {
  int E, w, q_start, g_start;
  int64_t s, t;
} ilayout;

/* The layout of an input with `bars` '|' tokens: D (the degree of Q's s)
** and M into *o, and every token where a sample of the task (ref, made
** here) has it.  0, or -1 with err set. */
static int read_layout(rasp_task_opts *o, const rasp_input *in, int bars, rasp_sample *ref,
                       ilayout *L, rasp_error *err) {
  if (bars == 0 || bars % o->markers) {
    raspR_setnoposc(err, RASP_E_USAGE, "the input has %d '|' tokens; a graph of E edges has %d x E (task['markers'] = %d)",
                   bars, o->markers, o->markers);
    return -1;
  }
  /* D is the degree of Q's s; everything else follows from D and E */
  int E = bars / o->markers, bos = o->bos ? 1 : 0, w = 2 + o->markers;
  int q_start = o->q == RASP_Q_START ? bos : bos + E * w, g_start = o->q == RASP_Q_START ? bos + 4 : bos;
  if (q_start + 3 >= in->n || g_start + E * w > in->n)
    return bad_at(err, o, in, in->n, "the task's layout needs more tokens");
  int64_t s = in->tokens[q_start + 1], t = in->tokens[q_start + 2];
  *L = (ilayout){E, w, q_start, g_start, s, t};
  int D = 0;
  for (int k = 0; k < E; k++) D += in->tokens[g_start + k * w] == s;
  if (D == 0 || E % D) {
    char sb[64];
    raspT_token_text(o, (int)s, sb, sizeof sb);
    raspR_setnoposc(err, RASP_E_USAGE, "the start node '%s' (token %d, in Q) has %d edges out of %d: not a "
                        "path-star graph", sb, q_start + 1, D, E);
    return -1;
  }
  o->D = D;
  o->M = E / D + 1;
  if (!raspT_opts_check(o, err)) return -1;
  int n = raspT_length(o);
  if (n != in->n) {
    raspR_setnoposc(err, RASP_E_USAGE, "the input has %d tokens; an input of this task with D=%d, M=%d "
                        "(from the graph) has %d", in->n, o->D, o->M, n);
    return -1;
  }
  /* the layout: every special where a sample of the task has it, a node
  ** wherever a sample has a node */
  if (!raspT_sample(o, 0, 0, ref, err)) return -1;
  for (int i = 0; i < n; i++) {
    int node = is_node(o, ref->tokens[i]);
    if (node && !is_node(o, in->tokens[i])) return bad_at(err, o, in, i, "the task has a node here");
    if (!node && in->tokens[i] != ref->tokens[i]) {
      char buf[64], what[96];
      raspT_token_text(o, ref->tokens[i], buf, sizeof buf);
      snprintf(what, sizeof what, "the task has '%s' here", buf);
      return bad_at(err, o, in, i, what);
    }
  }
  if (o->st_names && (s != o->V + RASP_SP_S || t != o->V + RASP_SP_T))
    return bad_at(err, o, in, s != o->V + RASP_SP_S ? q_start + 1 : q_start + 2,
                  "with task['st_names'] Q is '/ s t ='");
  return 0;
}

/* The graph's edges sorted by u (malloc'd), every node but s entered by
** exactly one edge and left by at most one; NULL with err set. */
static iedge *read_edges(const rasp_task_opts *o, const rasp_input *in, const ilayout *L,
                         rasp_error *err) {
  int E = L->E, w = L->w, g_start = L->g_start;
  iedge *edges = raspM_alloc(sizeof(iedge) * (size_t)E);
  for (int k = 0; k < E; k++) {
    edges[k] = (iedge){in->tokens[g_start + k * w], in->tokens[g_start + k * w + 1], k};
    if (edges[k].v == L->s || edges[k].u == edges[k].v) {
      bad_at(err, o, in, g_start + k * w + 1, "an edge into the start node, or a loop");
      goto fail;
    }
  }
  qsort(edges, (size_t)E, sizeof *edges, edge_by_v);
  for (int k = 1; k < E; k++)
    if (edges[k].v == edges[k - 1].v) {
      int later = edges[k].k > edges[k - 1].k ? edges[k].k : edges[k - 1].k;
      bad_at(err, o, in, g_start + later * w + 1, "a second edge into this node");
      goto fail;
    }
  qsort(edges, (size_t)E, sizeof *edges, edge_by_u);
  for (int k = 1; k < E; k++)
    if (edges[k].u == edges[k - 1].u && edges[k].u != L->s) {
      int later = edges[k].k > edges[k - 1].k ? edges[k].k : edges[k - 1].k;
      bad_at(err, o, in, g_start + later * w, "a second edge out of this node (only s branches)");
      goto fail;
    }
  return edges;
fail:
  raspM_free(edges);
  return NULL;
}

/* Walks the arms from s: each must have M-1 edges; they then cover all E
** edges, so no edge lies off the star (a cycle, or a second component).
** *lead gets l_t, the first node of t's arm.  0, or -1 with err set. */
static int walk_arms(const rasp_task_opts *o, const rasp_input *in, const ilayout *L,
                     const iedge *edges, int64_t *lead, rasp_error *err) {
  int E = L->E, found_t = 0, first = 0;
  while (first < E && edges[first].u != L->s) first++;
  for (int a = 0; a < o->D; a++) {
    int64_t l = edges[first + a].v, x = l;
    int len = 1; /* edges so far; stops one past M-1 */
    const iedge *c;
    while (len < o->M && (c = child_of(edges, E, x)) != NULL) {
      x = c->v;
      len++;
    }
    if (len != o->M - 1) {
      char lb[64], what[256];
      raspT_token_text(o, (int)l, lb, sizeof lb);
      int shown = len == o->M ? o->M - 1 : len;
      snprintf(what, sizeof what, "the arm that starts at '%s' has %s%d edge%s, not M-1 = %d "
               "(M = E/D + 1 with D = %d)", lb, len == o->M ? "more than " : "", shown,
               shown == 1 ? "" : "s", o->M - 1, o->D);
      return bad_at(err, o, in, L->g_start + edges[first + a].k * L->w + 1, what);
    }
    if (x == L->t) {
      found_t = 1;
      *lead = l;
    }
  }
  if (!found_t) return bad_at(err, o, in, L->q_start + 2, "the target is not the last node of an arm");
  return 0;
}

/* Arm order: the arms one after another, each from s outward.  0, or -1
** with err set. */
static int check_arm_order(const rasp_task_opts *o, const rasp_input *in, const ilayout *L,
                           rasp_error *err) {
  if (o->order != RASP_ORDER_ARM) return 0;
  for (int k = 0; k < L->E; k++) {
    int64_t u = in->tokens[L->g_start + k * L->w];
    int64_t want = k % (o->M - 1) == 0 ? L->s : in->tokens[L->g_start + (k - 1) * L->w + 1];
    if (u != want)
      return bad_at(err, o, in, L->g_start + k * L->w, "task['order'] = 'arm' writes each arm's "
                                                       "edges in a row, from s outward");
  }
  return 0;
}

/* A written answer must be the right one (R_t, reversed, or l_t), at the
** sample ref's answer positions.  0, or -1 with err set. */
static int check_answer(const rasp_task_opts *o, const rasp_input *in, const ilayout *L,
                        const iedge *edges, int64_t lead, const rasp_sample *ref,
                        rasp_error *err) {
  if (o->answer == RASP_ANS_NONE) return 0;
  int64_t *path = raspM_alloc(sizeof(int64_t) * (size_t)o->M);
  path[0] = L->s;
  path[1] = lead; /* s branches; past it, every node has one child */
  for (int j = 2; j < o->M; j++) path[j] = child_of(edges, L->E, path[j - 1])->v;
  int len = o->answer == RASP_ANS_LEAD ? 1 : o->M, r = 0;
  for (int j = 0; j < len && !r; j++) {
    int64_t want = o->answer == RASP_ANS_FORWARD ? path[j]
                 : o->answer == RASP_ANS_REVERSE ? path[o->M - 1 - j] : lead;
    if (in->tokens[ref->ans_start + j] != want) {
      char wb[64], what[96];
      raspT_token_text(o, (int)want, wb, sizeof wb);
      snprintf(what, sizeof what, "the answer has '%s' here", wb);
      r = bad_at(err, o, in, ref->ans_start + j, what);
    }
  }
  raspM_free(path);
  return r;
}

int raspT_parse_input(const rasp_task_opts *base, int V, const char *text, rasp_input *in,
                      rasp_error *err) {
  memset(in, 0, sizeof *in);
  rasp_task_opts o = *base;
  o.V = V;
  o.structured = 0;
  int bars;
  iedge *edges = NULL;
  int64_t lead = 0;
  ilayout L = {0, 0, 0, 0, 0, 0};
  rasp_sample ref;
  memset(&ref, 0, sizeof ref);
  if (read_tokens(&o, text, in, &bars, err) || read_layout(&o, in, bars, &ref, &L, err) ||
      !(edges = read_edges(&o, in, &L, err)) || walk_arms(&o, in, &L, edges, &lead, err) ||
      check_arm_order(&o, in, &L, err) || check_answer(&o, in, &L, edges, lead, &ref, err)) {
    raspM_free(edges);
    raspT_sample_free(&ref);
    raspT_input_free(in);
    return 0;
  }
  in->D = o.D;
  in->M = o.M;
  in->lead = lead;
  in->target = L.t;
  raspM_free(edges);
  raspT_sample_free(&ref);
  return 1;
}

void raspT_input_free(rasp_input *in) {
  raspM_free(in->tokens);
  memset(in, 0, sizeof *in);
}
