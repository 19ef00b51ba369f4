/*
** tdata.h -- rasp-train's data: the training and test sets of path-star
** samples, the order of every epoch, and the encoding of a sample into
** model inputs, targets and loss weights for each objective.
**
** Training samples are indices 0..N-1 of --train-seed (with --structured
** variants), test samples indices of --test-seed; a test sample whose
** (graph, target) also occurs in the training set is skipped (and
** counted).  Every epoch each training sample's edge blocks (EDGE order) or
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
} train_dataset;

/* The training set (with structured variants) and a test set disjoint from
** it; *overlap gets the number of test samples skipped.  1, or 0 with
** err. */
int train_data_make(const train_opts *o, train_dataset *tr, train_dataset *te,
                    int *overlap, rasp_error *err);
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
