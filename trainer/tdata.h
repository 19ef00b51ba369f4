/*
** tdata.h -- rasp-train's data: the training and test sets of path-star
** samples, the order of every epoch, and the encoding of a sample into
** model inputs, targets and loss weights for each objective.
**
** Training samples are indices 0..N-1 of --train-seed (with --structured
** variants), test samples indices of --test-seed.  The test set is held
** out by what the model reads: a candidate is skipped when its question
** (its tokens with the edges, or arms, as a set, and its answer: see
** train_question_key) is one the training set holds, or one the test set
** already holds.  The task's question space is counted exactly (rtask.h's
** counts), and a test set that the unseen questions cannot fill is
** refused with the numbers.  Every epoch each training sample's edge blocks (EDGE order) or
** arm blocks (ARM order) are permuted anew with the trainer's own RNG,
** seeded from (seed, epoch, sample), and so are the encoder's masks: an
** example is a pure function of (seed, epoch, sample), so a resumed run
** sees exactly the data an uninterrupted one would and compare's arms see
** the same batches.
**
** Token ids are rtask.h's (0 unused, 1..V nodes, V+1.. specials); the
** encoder's MASK token is V+8 (train_mask_id), so vocab_size = n_out = V+9.
** The decoder predicts token i+1 at position i; the encoder reads every
** answer position as MASK at evaluation (NAR; IAR training masks a random
** share of them, at least one) and predicts each masked token at its own
** position.  A compiled model gets its BOS (prefix) in front of every
** sequence, targets and weights moving with the tokens.
*/
#ifndef RASP_TDATA_H
#define RASP_TDATA_H

#include "rerror.h"
#include "topts.h"

typedef struct train_dataset {
  int n, len;       /* samples, tokens each */
  int *tok;         /* n * len */
  int *ans_start;   /* n */
  int *edge_pos;    /* n * nedges: where each written edge block starts */
  int *edge_arm;    /* n * nedges */
  int nedges, blk;  /* edges per sample, tokens per edge block */
  uint64_t *index;  /* n: each sample's index under its seed */
} train_dataset;

/* How the split came out. */
typedef struct train_split {
  char space[48];       /* distinct questions the task admits, exact (decimal;
                        ** "%.6e" past 46 digits) */
  double space_d;
  long train_draws;     /* training sequences (structured variants included) */
  long train_distinct;  /* distinct questions among them */
  double coverage;      /* train_distinct / space */
  long test;            /* test questions kept: distinct, unseen */
  long candidates;      /* --test-seed draws it took */
  long seen_skipped, repeat_skipped;
  long test_seen;       /* test questions the training set holds, counted
                        ** again from the stored test set: 0 */
} train_split;

/* The question the model reads in a sequence of len tokens of task t whose
** E edge blocks start at edge_pos: a 64-bit key of the tokens with the
** graph's blocks (edges, or arms under --order arm: what training
** permutes) in sorted order.  Never 0. */
uint64_t train_question_key(const rasp_task_opts *t, const int *tok, int len,
                            const int *edge_pos, int E);

/* The training set (with structured variants) and a test set of distinct
** questions none of which the training set holds; *sp says how it went.
** 1, or 0 with err (RASP_E_USAGE when too few unseen questions remain:
** the message names the numbers). */
int train_data_make(const train_opts *o, train_dataset *tr, train_dataset *te,
                    train_split *sp, rasp_error *err);
/* One line of text saying how the split came out (for the log). */
void train_split_text(const train_split *sp, const train_opts *o, char *buf, size_t size);
/* dir/split.json (sp's numbers) and dir/test_questions.jsonl (the test
** set as `rasp gen --seed TEST_SEED` writes those samples, "index" their
** indices), each atomically.  1, or 0 with err. */
int train_split_write(const train_split *sp, const train_opts *o, const train_dataset *te,
                      const char *dir, rasp_error *err);
void train_data_free(train_dataset *d);
/* The order of the n training samples in epoch `epoch`: a permutation
** drawn from (seed, epoch). */
void train_data_order(int *ord, int n, uint64_t seed, int epoch);

/* Answer tokens per sample; the index of the leading node l_t within the
** answer (1 of fwd, M-2 of rev, 0 of lead); the model's positions for a
** sample of len tokens (the decoder reads all but the last). */
int train_answer_len(const train_opts *o);
int train_lead_index(const train_opts *o);
int train_model_len(const train_opts *o, int len);

/* Encoded examples, one row of T positions each: input ids, targets, loss
** weights and apos (the answer index a position predicts, or -1). */
typedef struct train_batch {
  int *in, *tgt, *apos;
  float *w;
  int *seq; /* one sample's tokens, permuted */
  int rows, T;
} train_batch;

void train_batch_init(train_batch *b, int rows, int T, int len);
void train_batch_free(train_batch *b);
/* Row `row` of b: sample i of d, permuted for epoch `epoch` (-1: as
** written), encoded for training (eval 0: the encoder's random masks) or
** evaluation (eval 1: every answer position masked), prefix the BOS id to
** put first or -1.  o gives the task, the objective and the seed. */
void train_batch_put(train_batch *b, int row, const train_opts *o,
                     const train_dataset *d, int i, int epoch, int eval,
                     int prefix);

#endif
