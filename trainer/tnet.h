/*
** tnet.h -- the trainer's network: forward and backward passes over a batch
** of sequences, in flat buffers, for the architecture of rmodel.h.
**
** Parameters live in a rasp_model (so that raspN_save/raspN_load and
** raspN_forward apply unchanged); gradients, Adam moments and activations
** are flat float buffers laid out like the parameters (gradients, moments)
** or per layer (activations).  One forward and one backward function per
** layer type (embedding, layer norm, RMS norm, attention, MLP, readout with
** cross entropy), llm.c style: matmuls through tkern_sgemm (tkern.h: the
** trainer's own AVX-512/AVX2 kernels, cblas elsewhere), attention one
** (batch, head) tile at a time, loops over batch and heads through OpenMP.
*/
#ifndef RASP_TNET_H
#define RASP_TNET_H

#include <stddef.h>

#include "rmodel.h"
#include "rtask.h"

typedef struct train_layer_acts {
  float *ln1, *ln1_mean, *ln1_rstd; /* NULL without layer norm (an RMS
                                    ** norm leaves mean unused) */
  float *q, *k, *v;                 /* (B*T, H*Dh), row stride 3*H*Dh: one
                                    ** buffer (q), see tnet.c */
  float *att;                       /* (B, H, T, T) probabilities */
  float *atty;                      /* (B*T, H*Dh) */
  float *ao_mask;                   /* dropout mask (scaled) or NULL */
  float *mid;                       /* residual after attention */
  float *ln2, *ln2_mean, *ln2_rstd;
  float *act;                       /* (B*T, F): activation */
  float *dact;                      /* its derivative (GELU; else NULL) */
  float *mo_mask;
  float *out;                       /* residual after the MLP */
} train_layer_acts;

typedef struct train_net {
  rasp_model *m; /* not owned */
  float *grad;   /* nparams, accumulated by train_backward */
  int B, T;      /* capacity: sequences and positions */
  float dropout; /* on embeddings and on sublayer outputs; attention 0 */
  int training;  /* dropout on */
  rasp_rng rng;  /* dropout masks */
  /* activations */
  float *emb, *emb_mask;
  train_layer_acts *L;
  float *lnf, *lnf_mean, *lnf_rstd;
  float *logits; /* (B*T, n_out) */
  float *dlogits;
  /* backward scratch */
  float *dx, *dh, *dt, *daty, *dfc;
  float *dq, *dk, *dv; /* one buffer (dq), laid out like q, k, v */
  float *wpack, *gpack; /* w_q, w_k, w_v (or their gradients) as one
                        ** (D, 3*H*Dh) matrix: see tnet.c */
  int b, t;      /* shape of the last forward */
  const int *tokens;
  /* extra gradients on the residual stream (a teacher's, tteach.h):
  ** NULL, or per layer a (b*t, D) buffer or NULL, added to d(after the
  ** attention) and d(after the MLP) of that layer by train_backward */
  float **aux_mid, **aux_out;
  int aux_on; /* they apply to the next backward */
  /* attention targets (tteach.h, --teacher-attn): NULL, or per layer a
  ** (b, H, t, t) buffer of target probabilities, pulled toward with
  ** att_coef * (KL per query row); applies to the next backward while
  ** att_coef != 0 */
  const float **att_target;
  double att_coef;
  /* 1: the model is a compiled pre-LN one (`rasp compile --ln pre`, its
  ** layout's layer_norm), whose layer norms are the identity only in
  ** rmodel.c's arithmetic: the forward pass uses raspN_layer_norm */
  int exact_ln;
} train_net;

/* Buffers for batches of B sequences of length T: 1, or 0 with err when
** they do not fit the model. */
int train_net_init(train_net *n, rasp_model *m, int B, int T, float dropout,
                   rasp_error *err);
void train_net_free(train_net *n);

/* Forward over b sequences of t tokens (tokens: b*t ids); logits in
** n->logits.  Dropout applies when n->training and n->dropout > 0. */
void train_forward(train_net *n, const int *tokens, int b, int t);
/* Cross entropy of the last forward: sum over positions of weight *
** -log p(target) (positions with weight 0 are ignored).  With want_grad,
** also sets n->dlogits to scale * d(sum)/d(logits).  pred (may be NULL,
** b*t entries) gets every position's argmax. */
double train_loss(train_net *n, const int *targets, const float *weight,
                  float scale, int want_grad, int *pred);
/* Backward of the last forward from n->dlogits (and, with n->aux_on,
** n->aux_mid and aux_out where set); adds to n->grad. */
void train_backward(train_net *n);
void train_zero_grad(train_net *n);
/* The tanh the GELU loops use (vectorisable; see tnet.c), for tests. */
float train_tanh(float u);

/* Parameter initialisation: weights N(0, 0.02^2) (output projections
** scaled by 1/sqrt(2 n_layers), GPT-2 style), biases 0, LN weights 1. */
void train_init_params(rasp_model *m, uint64_t seed);
/* Adds Gaussian noise to every tensor, of RMS rel times the tensor's own
** RMS (a tensor of zeros stays zeros). */
void train_add_noise(rasp_model *m, float rel, uint64_t seed);
/* Re-initialises the parameters of one layer as train_init_params would. */
void train_reinit_layer(rasp_model *m, int layer, uint64_t seed);
/* A standard normal draw. */
double train_normal(rasp_rng *r);

/* The optimiser: AdamW, or SGD with (heavy-ball) momentum.  Both decay
** weights decoupled: p -= lr_i * (update + wd * p).  lr_i is lr times
** scale[i] (scale NULL: 1); scale[i] == 0 freezes parameter i: it, and its
** moments, are never written, so it stays bit-identical.  SGD keeps its
** momentum buffer in m (v stays 0): buf = momentum * buf + g, update buf
** (momentum 0: plain SGD). */
typedef struct train_adamw {
  float lr, beta1, beta2, eps, wd;
  long step;
  float *m, *v;  /* nparams each */
  int sgd;       /* 0 AdamW, 1 SGD */
  float momentum;
  float *scale;  /* nparams, or NULL; owned (train_adamw_free) */
} train_adamw;

void train_adamw_init(train_adamw *o, size_t nparams);
void train_adamw_free(train_adamw *o);
void train_adamw_step(train_adamw *o, float *params, const float *grad,
                      size_t n);

/* The learning-rate schedule (--warmup, --decay, --lr-floor, --decay-steps):
** the factor on --lr at step `step` (from 1, the step about to be taken).
** Linear warm-up from lr/warmup at step 1 to lr at step `warmup`; then
** decay over steps warmup..total to floor * lr, cosine (floor + (1 - floor)
** (1 + cos(pi p)) / 2) or linear (floor + (1 - floor)(1 - p)), p the share
** of the decay done; floor * lr after `total`.  decay none: 1 after the
** warm-up. */
enum { TRAIN_DECAY_NONE, TRAIN_DECAY_COSINE, TRAIN_DECAY_LINEAR };
typedef struct train_sched {
  long warmup, total;
  int decay;   /* TRAIN_DECAY_* */
  float floor; /* the last factor, a share of lr */
} train_sched;
double train_lr_factor(const train_sched *s, long step);

/* Gradient-norm clipping (--clip): the L2 norm of g over the entries that
** train (scale NULL: all; else scale[i] != 0), summed in index order in
** double (the same on every rank and thread count); when above max_norm >
** 0, every entry of g is scaled by max_norm / norm.  Returns the norm
** before clipping. */
double train_clip_grad(float *g, size_t n, const float *scale, double max_norm);

/* Per-tensor learning-rate scales (--lr-scale rms): scale[i] is the RMS of
** the entries of i's tensor that mask marks (mask NULL: all of them), so a
** step moves each tensor by a similar fraction of its size.  A tensor whose
** marked entries are all 0 (biases, say) gets the RMS of all marked entries
** of the model, and 1 if that is 0 too.  Unmarked entries get their
** tensor's scale. */
void train_lr_scale_rms(const rasp_model *m, const unsigned char *mask,
                        float *scale);

#endif
