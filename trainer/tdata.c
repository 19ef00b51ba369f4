/*
** tdata.c -- rasp-train's data (see tdata.h): the sets, the test set held
** out by what the model reads, every epoch's order and permutation, and
** the objectives' encodings.
**
** The held-out key of a sample is its token sequence with the blocks that
** training permutes (edges, or whole arms with --order arm) sorted, so
** that two samples the model cannot tell apart in any epoch are one
** question: under --st-names two graphs that differ only in the ids of s
** and t are one.  The answer is part of the sequence, and so is every
** other option's effect on the tokens (BOS, EOS, --q, markers).  Keys are
** 64-bit hashes (FNV-1a, then splitmix64's finaliser) in open-addressing
** sets; a collision can only drop a test candidate that was unseen (about
** n^2 / 2^65 of them for n keys), never keep a seen one.
*/
#include "tdata.h"

#include <string.h>

#include <gmp.h>

#include "rmem.h"
#include "tlog.h"
#include "tinit.h"

/* ---- what the model reads ------------------------------------------- */

/* Whether block a of the graph region sorts before block b (each bl
** tokens at g + a*bl and g + b*bl): lexicographic order of the ids. */
static int block_before(const int *g, int bl, int a, int b) {
  const int *x = g + (size_t)a * bl, *y = g + (size_t)b * bl;
  for (int i = 0; i < bl; i++)
    if (x[i] != y[i]) return x[i] < y[i];
  return a < b;
}

/* Sorts idx[0..n) by the blocks they name (a merge sort: stable, n log n
** whatever the edge count; tmp holds n ints). */
static void sort_blocks(int *idx, int *tmp, int n, const int *g, int bl) {
  if (n < 2) return;
  int h = n / 2;
  sort_blocks(idx, tmp, h, g, bl);
  sort_blocks(idx + h, tmp, n - h, g, bl);
  int i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = block_before(g, bl, idx[j], idx[i]) ? idx[j++] : idx[i++];
  while (i < h) tmp[k++] = idx[i++];
  while (j < n) tmp[k++] = idx[j++];
  memcpy(idx, tmp, (size_t)n * sizeof *idx);
}

static uint64_t fnv_int(uint64_t h, int v) {
  for (int b = 0; b < 4; b++) h = (h ^ ((uint64_t)(unsigned)v >> (8 * b) & 0xff)) * 1099511628211ull;
  return h;
}

uint64_t train_question_key(const rasp_task_opts *t, const int *tok, int len,
                            const int *edge_pos, int E) {
  int blk = 2 + t->markers, gs = edge_pos[0];
  for (int k = 1; k < E; k++)
    if (edge_pos[k] < gs) gs = edge_pos[k];
  /* the blocks training permutes: edges (EDGE order) or arms (ARM order) */
  int arm = t->order == RASP_ORDER_ARM;
  int nb = arm ? t->D : E, bl = arm ? (t->M - 1) * blk : blk;
  int *idx = raspM_alloc(2 * (size_t)nb * sizeof *idx);
  for (int b = 0; b < nb; b++) idx[b] = b;
  sort_blocks(idx, idx + nb, nb, tok + gs, bl);
  uint64_t h = RASPN_FNV0;
  for (int i = 0; i < gs; i++) h = fnv_int(h, tok[i]);
  for (int b = 0; b < nb; b++)
    for (int i = 0; i < bl; i++) h = fnv_int(h, tok[gs + idx[b] * bl + i]);
  for (int i = gs + nb * bl; i < len; i++) h = fnv_int(h, tok[i]);
  raspM_free(idx);
  /* splitmix64's finaliser: the set below indexes by the low bits */
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h ? h : 1; /* 0 marks an empty slot */
}

static uint64_t sample_key(const rasp_task_opts *t, const rasp_sample *s) {
  return train_question_key(t, s->tokens, s->ntokens, s->edge_pos, s->nedges);
}

/* An open-addressing set of 64-bit keys (never 0), sized once for at most
** n keys (load at most a half). */
typedef struct keyset {
  uint64_t *k;
  size_t cap;
} keyset;

static void ks_init(keyset *s, size_t n) {
  s->cap = 16;
  while (s->cap < 2 * n + 16) s->cap *= 2;
  s->k = raspM_alloc(s->cap * sizeof *s->k);
  memset(s->k, 0, s->cap * sizeof *s->k);
}

/* Adds k; returns 1 if it was new. */
static int ks_add(keyset *s, uint64_t k) {
  size_t i = k & (s->cap - 1);
  while (s->k[i] && s->k[i] != k) i = (i + 1) & (s->cap - 1);
  if (s->k[i]) return 0;
  s->k[i] = k;
  return 1;
}

static int ks_has(const keyset *s, uint64_t k) {
  size_t i = k & (s->cap - 1);
  while (s->k[i]) {
    if (s->k[i] == k) return 1;
    i = (i + 1) & (s->cap - 1);
  }
  return 0;
}

/* ---- the sets ----------------------------------------------------------- */

static void ds_put(train_dataset *d, int i, const rasp_sample *s, uint64_t index) {
  memcpy(d->tok + (size_t)i * d->len, s->tokens, (size_t)d->len * sizeof(int));
  d->ans_start[i] = s->ans_start;
  d->index[i] = index;
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
  d->index = raspM_alloc((size_t)n * sizeof(uint64_t));
  d->edge_pos = raspM_alloc((size_t)n * d->nedges * sizeof(int));
  d->edge_arm = raspM_alloc((size_t)n * d->nedges * sizeof(int));
}

void train_data_free(train_dataset *d) {
  raspM_free(d->tok);
  raspM_free(d->ans_start);
  raspM_free(d->index);
  raspM_free(d->edge_pos);
  raspM_free(d->edge_arm);
  memset(d, 0, sizeof *d);
}

/* The task's question space: distinct (G, Q) pairs as the model reads
** them (rtask.h's exact counts; s's and t's ids vanish under --st-names). */
static void space_count(const rasp_task_opts *t, mpz_t gq) {
  mpz_t tok;
  mpz_init(tok);
  if (t->st_names) raspT_count_st_names(t, gq);
  else raspT_count(t, gq, tok);
  mpz_clear(tok);
}

/* The space into sp->space (exact decimal) and sp->space_d. */
static void count_space(const rasp_task_opts *t, train_split *sp) {
  mpz_t gq;
  mpz_init(gq);
  space_count(t, gq);
  sp->space_d = mpz_get_d(gq);
  if (mpz_sizeinbase(gq, 10) + 2 > sizeof sp->space) gmp_snprintf(sp->space, sizeof sp->space, "%.6e", sp->space_d);
  else gmp_snprintf(sp->space, sizeof sp->space, "%Zd", gq);
  mpz_clear(gq);
}

/* Unseen questions left once the training set's distinct ones are taken
** out of the space (as a double: exact below 2^53, which is all a test
** size is compared with). */
static double unseen(const rasp_task_opts *t, long distinct) {
  mpz_t gq;
  mpz_init(gq);
  space_count(t, gq);
  mpz_sub_ui(gq, gq, (unsigned long)distinct);
  double r = mpz_get_d(gq);
  mpz_clear(gq);
  return r;
}

int train_data_make(const train_opts *o, train_dataset *tr, train_dataset *te,
                    train_split *sp, rasp_error *err) {
  const rasp_task_opts *t = &o->task;
  int k = t->structured;
  memset(sp, 0, sizeof *sp);
  count_space(t, sp);
  ds_alloc(tr, t, o->ntrain * (k + 1));
  rasp_sample *g = raspM_alloc((size_t)(k + 1) * sizeof *g);
  memset(g, 0, (size_t)(k + 1) * sizeof *g);
  keyset seen, kept;
  ks_init(&seen, (size_t)tr->n);
  ks_init(&kept, (size_t)o->ntest);
  int ok = 0;
  for (int i = 0; i < o->ntrain; i++) {
    if (raspT_sample_group(t, o->train_seed, (uint64_t)i, g, err) < 0) goto out;
    for (int j = 0; j <= k; j++) {
      ds_put(tr, i * (k + 1) + j, &g[j], (uint64_t)i);
      sp->train_distinct += ks_add(&seen, sample_key(t, &g[j]));
    }
  }
  sp->train_draws = tr->n;
  sp->coverage = sp->space_d > 0 ? (double)sp->train_distinct / sp->space_d : 1;
  double left = unseen(t, sp->train_distinct);
  if (left < o->ntest) {
    raspR_setnoposc(err, RASP_E_USAGE, "--test %d: the task admits %s distinct questions and the %ld "
                        "training draws cover %ld of them (%.1f%%), so at most %.0f unseen "
                        "questions remain for a test set disjoint from training; ask for "
                        "--test %.0f or fewer, fewer --train draws, or a larger task "
                        "(--V, --M, --D)",
                   o->ntest, sp->space, sp->train_draws, sp->train_distinct,
                   100 * sp->coverage, left, left);
    goto out;
  }
  /* distinct unseen questions, drawn in index order from --test-seed; a
  ** draw budget so that a nearly exhausted space ends with the numbers */
  ds_alloc(te, t, o->ntest);
  uint64_t idx = 0, budget = 1000000 + 200 * (uint64_t)o->ntest;
  for (int i = 0; i < o->ntest; idx++) {
    if (idx == budget) {
      raspR_setnoposc(err, RASP_E_USAGE, "--test %d: after %llu draws from --test-seed only %d unseen "
                          "distinct questions were found (%ld seen in training, %ld "
                          "repeats; the task admits %s, training covers %ld); ask for "
                          "fewer test questions or a larger task",
                     o->ntest, (unsigned long long)idx, i, sp->seen_skipped,
                     sp->repeat_skipped, sp->space, sp->train_distinct);
      goto out;
    }
    if (!raspT_sample(t, o->test_seed, idx, &g[0], err)) goto out;
    uint64_t key = sample_key(t, &g[0]);
    if (ks_has(&seen, key)) sp->seen_skipped++;
    else if (!ks_add(&kept, key)) sp->repeat_skipped++;
    else ds_put(te, i++, &g[0], idx);
  }
  sp->candidates = (long)idx;
  sp->test = te->n;
  /* counted again from the stored test set, not from the draws above */
  for (int i = 0; i < te->n; i++)
    sp->test_seen += ks_has(&seen, train_question_key(t, te->tok + (size_t)i * te->len, te->len,
                                                      te->edge_pos + (size_t)i * te->nedges,
                                                      te->nedges));
  ok = 1;
out:
  for (int j = 0; j <= k; j++) raspT_sample_free(&g[j]);
  raspM_free(g);
  raspM_free(seen.k);
  raspM_free(kept.k);
  return ok;
}

void train_split_text(const train_split *sp, const train_opts *o, char *buf, size_t size) {
  snprintf(buf, size,
           "the task admits %s distinct questions; %ld training sequences (%d draws "
           "of --train-seed %llu%s) hold %ld of them (%.2f%% of the space); %ld test "
           "questions, distinct and unseen (%ld candidates of --test-seed %llu skipped as "
           "seen in training, %ld as repeats); test questions seen in training: %ld",
           sp->space, sp->train_draws, o->ntrain, (unsigned long long)o->train_seed,
           o->task.structured ? " with their structured variants" : "", sp->train_distinct,
           100 * sp->coverage, sp->test, sp->seen_skipped, (unsigned long long)o->test_seed,
           sp->repeat_skipped, sp->test_seen);
}

int train_split_write(const train_split *sp, const train_opts *o, const train_dataset *te,
                      const char *dir, rasp_error *err) {
  char path[4200];
  train_log b = {0};
  train_log_printf(&b,
                   "{\"question_space\":\"%s\",\"question_space_exact\":true,"
                   "\"train_seed\":%llu,\"train_draws\":%d,\"structured\":%d,"
                   "\"train_sequences\":%ld,\"train_distinct\":%ld,\"coverage\":%.6g,"
                   "\"test_seed\":%llu,\"test\":%ld,\"test_candidates\":%ld,"
                   "\"test_skipped_seen\":%ld,\"test_skipped_repeat\":%ld,"
                   "\"test_seen_in_training\":%ld,\"test_questions\":\"test_questions.jsonl\"}\n",
                   sp->space, (unsigned long long)o->train_seed, o->ntrain,
                   o->task.structured, sp->train_draws, sp->train_distinct, sp->coverage,
                   (unsigned long long)o->test_seed, sp->test, sp->candidates,
                   sp->seen_skipped, sp->repeat_skipped, sp->test_seen);
  snprintf(path, sizeof path, "%s/split.json", dir);
  int ok = train_log_commit(&b, path, err);
  train_log_free(&b);
  if (!ok) return 0;
  /* the test questions as rasp gen writes them (its "index": the sample
  ** index under --test-seed), regenerated from their indices */
  rasp_sample s;
  memset(&s, 0, sizeof s);
  char *line = NULL;
  size_t cap = 0;
  for (int i = 0; ok && i < te->n; i++) {
    if (!raspT_sample(&o->task, o->test_seed, te->index[i], &s, err)) {
      ok = 0;
      break;
    }
    size_t need = raspT_sample_json(&o->task, &s, te->index[i], line, cap);
    if (need + 1 > cap) {
      cap = need + 1;
      line = raspM_realloc(line, cap);
      raspT_sample_json(&o->task, &s, te->index[i], line, cap);
    }
    train_log_printf(&b, "%s\n", line);
  }
  raspT_sample_free(&s);
  raspM_free(line);
  snprintf(path, sizeof path, "%s/test_questions.jsonl", dir);
  if (ok) ok = train_log_commit(&b, path, err);
  train_log_free(&b);
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
