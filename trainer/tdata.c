/*
** tdata.c -- rasp-train's data (see tdata.h): the sets, the test set's
** dedupe against the training set by (graph, target), every epoch's order
** and permutation, and the objectives' encodings.
**
** The dedupe key of a sample is its arms as node sequences, sorted by their
** first node after the start, then the target, through FNV-1a, in an
** open-addressing set sized for the training set; edge orders do not
** matter (two samples of one graph and target are one question however
** their edges are written).
*/
#include "tdata.h"

#include <string.h>

#include "rmem.h"
#include "ttrain.h"

static uint64_t graph_key(const rasp_sample *s) {
  int D = s->D, M = s->M;
  int *ord = raspM_alloc((size_t)D * sizeof *ord);
  for (int a = 0; a < D; a++) ord[a] = a;
  for (int a = 1; a < D; a++)
    for (int b = a; b > 0 && s->arms[ord[b] * M + 1] < s->arms[ord[b - 1] * M + 1]; b--) {
      int x = ord[b];
      ord[b] = ord[b - 1];
      ord[b - 1] = x;
    }
  uint64_t h = RASPN_FNV0;
  for (int a = 0; a < D; a++)
    for (int k = 0; k < M; k++) h = (h ^ (uint64_t)s->arms[ord[a] * M + k]) * 1099511628211ull;
  h = (h ^ (uint64_t)s->t) * 1099511628211ull;
  raspM_free(ord);
  return h | 1; /* 0 marks an empty slot */
}

typedef struct keyset {
  uint64_t *k;
  size_t cap;
} keyset;

static void ks_add(keyset *s, uint64_t k) {
  size_t i = k & (s->cap - 1);
  while (s->k[i] && s->k[i] != k) i = (i + 1) & (s->cap - 1);
  s->k[i] = k;
}

static int ks_has(const keyset *s, uint64_t k) {
  size_t i = k & (s->cap - 1);
  while (s->k[i]) {
    if (s->k[i] == k) return 1;
    i = (i + 1) & (s->cap - 1);
  }
  return 0;
}

static void ds_put(train_dataset *d, int i, const rasp_sample *s) {
  memcpy(d->tok + (size_t)i * d->len, s->tokens, (size_t)d->len * sizeof(int));
  d->ans_start[i] = s->ans_start;
  for (int k = 0; k < d->nedges; k++) {
    d->edge_pos[(size_t)i * d->nedges + k] = s->edge_pos[k];
    d->edge_arm[(size_t)i * d->nedges + k] = s->edge_arm[k];
  }
}

static void ds_alloc(train_dataset *d, const rasp_task_opts *t, int n) {
  d->n = n;
  d->len = raspT_length(t);
  d->nedges = raspT_edges(t);
  d->blk = 2 + t->markers;
  d->tok = raspM_alloc((size_t)n * d->len * sizeof(int));
  d->ans_start = raspM_alloc((size_t)n * sizeof(int));
  d->edge_pos = raspM_alloc((size_t)n * d->nedges * sizeof(int));
  d->edge_arm = raspM_alloc((size_t)n * d->nedges * sizeof(int));
}

void train_data_free(train_dataset *d) {
  raspM_free(d->tok);
  raspM_free(d->ans_start);
  raspM_free(d->edge_pos);
  raspM_free(d->edge_arm);
  memset(d, 0, sizeof *d);
}

int train_data_make(const train_opts *o, train_dataset *tr, train_dataset *te,
                    int *overlap, rasp_error *err) {
  int k = o->task.structured;
  ds_alloc(tr, &o->task, o->ntrain * (k + 1));
  rasp_sample *g = raspM_alloc((size_t)(k + 1) * sizeof *g);
  keyset ks = {0};
  ks.cap = 1;
  while (ks.cap < (size_t)tr->n * 2 + 16) ks.cap *= 2;
  ks.k = raspM_alloc(ks.cap * sizeof *ks.k);
  int ok = 0;
  for (int i = 0; i < o->ntrain; i++) {
    if (raspT_sample_group(&o->task, o->train_seed, (uint64_t)i, g, err) < 0) goto out;
    for (int j = 0; j <= k; j++) {
      ds_put(tr, i * (k + 1) + j, &g[j]);
      ks_add(&ks, graph_key(&g[j]));
    }
  }
  ds_alloc(te, &o->task, o->ntest);
  *overlap = 0;
  uint64_t idx = 0;
  for (int i = 0; i < o->ntest; idx++) {
    if (!raspT_sample(&o->task, o->test_seed, idx, &g[0], err)) goto out;
    if (ks_has(&ks, graph_key(&g[0]))) {
      ++*overlap;
      continue;
    }
    ds_put(te, i++, &g[0]);
  }
  ok = 1;
out:
  for (int j = 0; j <= k; j++) raspT_sample_free(&g[j]);
  raspM_free(g);
  raspM_free(ks.k);
  return ok;
}

void train_data_order(int *ord, int n, uint64_t seed, int epoch) {
  rasp_rng r;
  raspT_rng_seed(&r, seed ^ 0x0de5, (uint64_t)epoch);
  for (int i = 0; i < n; i++) ord[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)raspT_rng_below(&r, (uint64_t)i + 1), x = ord[i];
    ord[i] = ord[j];
    ord[j] = x;
  }
}

/* Sample i of the set with its edge (or arm) blocks permuted by rng. */
static void permuted(const train_dataset *d, const train_opts *o, int i,
                     rasp_rng *rng, int *out) {
  const int *src = d->tok + (size_t)i * d->len;
  memcpy(out, src, (size_t)d->len * sizeof *out);
  const int *ep = d->edge_pos + (size_t)i * d->nedges;
  int E = d->nedges, blk = d->blk, gs = ep[0];
  for (int k = 1; k < E; k++)
    if (ep[k] < gs) gs = ep[k];
  int perm[4096];
  if (o->task.order == RASP_ORDER_EDGE) {
    if (E > 4096) return;
    for (int k = 0; k < E; k++) perm[k] = k;
    for (int k = E - 1; k > 0; k--) {
      int j = (int)raspT_rng_below(rng, (uint64_t)k + 1), x = perm[k];
      perm[k] = perm[j];
      perm[j] = x;
    }
    for (int k = 0; k < E; k++)
      memcpy(out + gs + k * blk, src + ep[perm[k]], (size_t)blk * sizeof *out);
  } else {
    /* arms in written order; each arm's edges are consecutive blocks */
    int D = o->task.D, per = o->task.M - 1;
    if (D > 4096) return;
    for (int a = 0; a < D; a++) perm[a] = a;
    for (int a = D - 1; a > 0; a--) {
      int j = (int)raspT_rng_below(rng, (uint64_t)a + 1), x = perm[a];
      perm[a] = perm[j];
      perm[j] = x;
    }
    for (int a = 0; a < D; a++)
      memcpy(out + gs + a * per * blk, src + gs + perm[a] * per * blk,
             (size_t)per * blk * sizeof *out);
  }
}

int train_answer_len(const train_opts *o) {
  return o->task.answer == RASP_ANS_LEAD ? 1 : o->task.M;
}

int train_lead_index(const train_opts *o) {
  switch (o->task.answer) {
  case RASP_ANS_FORWARD: return 1;
  case RASP_ANS_REVERSE: return o->task.M - 2;
  default: return 0;
  }
}

int train_model_len(const train_opts *o, int len) { return o->encoder ? len : len - 1; }

/* Builds one example: input (T ids), target and weight per position, and
** apos.  eval: the encoder masks every answer position (1-step NAR
** inference, as in the paper). */
static void encode(const train_opts *o, const int *seq, int len, int ans,
                   int eval, rasp_rng *rng, int *in, int *tgt, float *w,
                   int *apos, int prefix) {
  int A = train_answer_len(o), T = train_model_len(o, len);
  if (prefix >= 0) {
    /* compiled models: BOS at position 0 (no target), the rest shifted */
    in[0] = prefix;
    tgt[0] = 0;
    w[0] = 0;
    apos[0] = -1;
    in++, tgt++, w++, apos++;
  }
  if (!o->encoder) {
    for (int i = 0; i < T; i++) {
      in[i] = seq[i];
      tgt[i] = seq[i + 1];
      int k = i + 1 - ans;
      apos[i] = (k >= 0 && k < A) ? k : -1;
      w[i] = apos[i] >= 0;
    }
    return;
  }
  int mask = train_mask_id(&o->task);
  double rate = 1.0;
  if (o->obj == TRAIN_OBJ_IAR && !eval)
    rate = (double)(raspT_rng_next(rng) >> 11) / 9007199254740992.0;
  int any = 0;
  for (int i = 0; i < T; i++) {
    in[i] = seq[i];
    tgt[i] = seq[i];
    w[i] = 0;
    apos[i] = -1;
    int k = i - ans;
    if (k >= 0 && k < A) {
      int m = rate >= 1.0 || (double)(raspT_rng_next(rng) >> 11) / 9007199254740992.0 < rate;
      if (m) {
        in[i] = mask;
        w[i] = 1;
        apos[i] = k;
        any = 1;
      }
    }
  }
  if (!any) { /* at least one masked position, so every sample teaches */
    int k = (int)raspT_rng_below(rng, (uint64_t)A), i = ans + k;
    in[i] = mask;
    w[i] = 1;
    apos[i] = k;
  }
}

void train_batch_init(train_batch *b, int rows, int T, int len) {
  size_t n = (size_t)rows * T;
  b->rows = rows;
  b->T = T;
  b->in = raspM_alloc(n * sizeof *b->in);
  b->tgt = raspM_alloc(n * sizeof *b->tgt);
  b->apos = raspM_alloc(n * sizeof *b->apos);
  b->w = raspM_alloc(n * sizeof *b->w);
  b->seq = raspM_alloc((size_t)len * sizeof *b->seq);
}

void train_batch_free(train_batch *b) {
  raspM_free(b->in);
  raspM_free(b->tgt);
  raspM_free(b->apos);
  raspM_free(b->w);
  raspM_free(b->seq);
  memset(b, 0, sizeof *b);
}

void train_batch_put(train_batch *b, int row, const train_opts *o,
                     const train_dataset *d, int i, int epoch, int eval,
                     int prefix) {
  rasp_rng r;
  const int *seq = d->tok + (size_t)i * d->len;
  if (epoch >= 0) {
    /* the permutation, then the masks, from one stream per (epoch, sample) */
    raspT_rng_seed(&r, o->seed, ((uint64_t)epoch << 32) + (uint64_t)i);
    permuted(d, o, i, &r, b->seq);
    seq = b->seq;
  } else {
    raspT_rng_seed(&r, o->seed ^ 0xe7a1, (uint64_t)i);
  }
  size_t off = (size_t)row * b->T;
  encode(o, seq, d->len, d->ans_start[i], eval, &r, b->in + off, b->tgt + off,
         b->w + off, b->apos + off, prefix);
}
