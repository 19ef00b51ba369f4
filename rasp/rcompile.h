/*
** rcompile.h -- compiling a traced program (its IR) to transformer weights.
**
** raspG_compile turns the IR of one trace (one input length n) into a
** rasp_model (rmodel.h) that computes the program's first output exactly:
** run the model on [BOS, t_0, ..., t_{n-1}] (the program's input shifted
** right by one, BOS at position 0) and the argmax of the logits at model
** position i+1 is the index, into `out_vals`, of the program's output at
** input position i.  raspG_run does the shifting and the decoding.
**
** The input value set (`input_ids`) bounds what the compiler plans for:
** token ids outside it are never given a dimension.  The design is
** described at the top of rcompile.c and in doc/compiler.md.
*/
#ifndef RASP_RCOMPILE_H
#define RASP_RCOMPILE_H

#include <stdio.h>

#include "rir.h"
#include "rmodel.h"

typedef struct raspG_opts {
  const int64_t *input_ids; /* the token ids an input may hold */
  int ninput;
  int nvocab;               /* token ids are 1..nvocab; BOS gets nvocab+1 */
  const char *const *token_names; /* [nvocab+1], names for the JSON; may be NULL */
  /* The readout's logit margin: the right value's logit exceeds every other
  ** by this much.  0 (or less): raspG_default_logit_scale(n_out). */
  double logit_scale;
  /* The forward pass the encodings are proven for (doc/compiler.md,
  ** "Margins and precision"): RASPG_FP32 (0, the default), RASPG_FP16 or
  ** RASPG_BF16.  A numerical encoding whose margins are not proven at this
  ** precision is compiled categorically; a node that cannot be compiled
  ** exactly either way is refused (RASP_E_INEXACT, at the node). */
  int precision;
  /* RASPG_ENC_AUTO (0): the proven choice; RASPG_ENC_CATEGORICAL: no
  ** numerical encodings of integers (node ids, tokens, sums: one-hot) */
  int encoding;
  /* The attention gain F (`rasp compile --attn-gain`; 0 or less: 1): every
  ** head's scores are scaled by 2^ceil(log2(F beta sqrt(d_head))), beta =
  ** 2 (ln(n + 1) + 21), the power of two at or above F times the default
  ** gain (so a power-of-two F scales every attn.w_q by exactly F).  F = 1
  ** keeps the weight leaking past a score gap of 1/2 below 1e-9; a smaller
  ** F leaks more, which the margins and noise bounds account for. */
  double attn_gain;
  /* An aggregate (or aggr_mean) of numbers over a selector with an
  ** equality select is compiled as a move: one head writes the selected
  ** value, which is the program's mean only where the selected values are
  ** equal (doc/compiler.md, "Moves").  Where the program proves that (the
  ** keys are the indices, or the values a function of the keys), it always
  ** moves.  Elsewhere RASPG_MOVES_ASSUME (0, the default; `rasp compile
  ** --moves assume`) moves too and reports the premise as assumed: right on
  ** inputs that keep it (the path-star tasks' edges), which --check tests;
  ** RASPG_MOVES_PROVE compiles the exact mean instead (bigger, and refused
  ** where the means are too many to plan).  RASPG_MOVES_ONE (`--moves
  ** one`) compiles as ASSUME on a stronger premise: each such move selects
  ** at most one key per query (the path-star lookups: one edge per node),
  ** which the fp32 proof then uses (a lookup sums no ties, so it is not
  ** charged n/2 + 4 roundings) and --check tests instead. */
  int moves;
  /* 1: fp32 chooses its encodings by the rounding proof, as fp16 and bf16
  ** always do (`rasp compile`'s default): a numerical encoding the
  ** bound does not prove is compiled categorically, a unit proven neither
  ** way is refused (RASP_E_INEXACT, at the node).  0 (the zero default of
  ** this struct; `rasp compile --unproven`): fp32 chooses by size and the
  ** proof only counts (raspG_model.unproven; STEM.json's layout.proof
  ** then says "proven": false where a unit is not proven). */
  int require_proof;
  /* RASPG_LN_NONE (0, the default): no layer norm; RASPG_LN_PRE (`rasp
  ** compile --ln pre`): the pre-LN architecture, layer norms before every
  ** attention, every MLP and the readout, with real weights, which the
  ** construction of rcompile_ln.c makes exact identities on every
  ** dimension the model reads (doc/compiler.md, "Pre-LN models");
  ** RASPG_LN_RMS (`--ln rms`): RMS norms there instead, made exact
  ** identities in any summation order (rcompile_rms.c; "Pre-RMSNorm
  ** models"); RASPG_LN_STOCK (`--ln stock`): layer norms for stock
  ** arithmetic (eps 4^p, a balance and sink dimensions: rcompile_lnstock.c;
  ** "Stock layer norms"), not proven (the units are, as without them).
  ** fp32 only. */
  int ln;
  /* 0 (the default): every head's d_head is rounded up (zero columns) to
  ** the next of 1, 16, 256, ... (raspN_sdpa_exact), where PyTorch's
  ** scaled_dot_product_attention, which scales q and k each by
  ** d_head^(-1/4), computes the same scores as the model's own formula
  ** (doc/compiler.md, "Score formulas"); 1 (`rasp compile --no-sdpa`):
  ** d_head as the heads need it, exact under the product-first formula
  ** alone.  STEM.json's layout.attention.formulas says which hold. */
  int no_sdpa;
} raspG_opts;

enum { RASPG_FP32, RASPG_FP16, RASPG_BF16 };
enum { RASPG_MOVES_ASSUME, RASPG_MOVES_PROVE, RASPG_MOVES_ONE };
enum { RASPG_ENC_AUTO, RASPG_ENC_CATEGORICAL };
enum { RASPG_LN_NONE, RASPG_LN_PRE, RASPG_LN_RMS, RASPG_LN_STOCK };
/* "fp32", "fp16", "bf16" */
const char *raspG_precision_name(int precision);
/* x rounded to nearest-even in that format (fp16: 11 significand bits,
** overflow to inf past 65504; bf16: 8 bits, float32's range). */
float raspG_round(int precision, float x);
/* 1 where s is a float32 and no other float32 lies in [lo, hi] (a float32
** result known to lie in [lo, hi] is then s exactly), else 0. */
int raspG_f32_pinned(double s, double lo, double hi);

typedef struct raspG_model {
  rasp_model model;        /* cfg.bos_token is the BOS id */
  int n;                   /* the input length it was compiled for */
  rasp_elem *out_vals;     /* logit j means the value out_vals[j] */
  int n_out;
  int *heads;              /* real (non-padding) heads per layer */
  int *mlp_width;          /* real hidden units per layer */
  int n_dims;              /* residual dimensions in use (= d_model) */
  double logit_scale;      /* the readout's logit margin (STEM.json's
                              layout.readout.logit_scale) */
  double attn_gain;        /* raspG_opts' F (1 by default), the power of two
                              every score is scaled by (before the model's
                              1/sqrt(d_head)), and the largest weight any
                              head can leak past its selected keys (to keys
                              it does not select, or from BOS at BOS),
                              proven over the value sets at the precision;
                              STEM.json's layout.attention */
  double score_scale, attn_leak;
  int precision;           /* raspG_run's forward pass (raspG_opts) */
  /* The smallest proven margins (doc/compiler.md, "Margins and precision"):
  ** a head's score gap between its selected keys and every other key (BOS
  ** included), in logits; an MLP hidden unit's distance from its hinge over
  ** every input combination it can see (pre-activation units), -1 when the
  ** model has none.  *_at names the node and its source location. */
  double attn_margin, mlp_margin;
  char attn_at[192], mlp_at[192];
  int fallbacks;           /* nodes compiled categorically because their
                              numerical encoding is not proven at precision */
  double cb_eps, cb_dev0, cb_dev; /* private: the composed noise bound
                              (cb_dev0 < 0: not proven) */
  int checked, unproven;   /* heads, MLP units and the readout checked
                              against rounding, and how many the bound does
                              not prove (fp32 without require_proof only:
                              elsewhere they are made categorical or
                              refused) */
  char unproven_at[320];   /* fp32: the first unit not proven (in order of
                              writing): its node, source location and why */
  int moves, moves_assumed; /* heads that move one selected number where the
                              program averages (raspG_opts.moves), and how
                              many of them rest on an assumed premise: every
                              proof above holds on inputs that keep it */
  char moves_at[192];      /* the first assumed move's node and location */
  int moves_one;           /* the premise assumed: one key (RASPG_MOVES_ONE),
                              else equal selected values */
  int sharpened;           /* heads whose scores the proof scaled beyond
                              score_scale (require_proof: their leak kept
                              a unit from being proven), and the largest */
  double gain_max;         /* such factor (a power of two; 1 when none) */
  struct raspG_fast *fast; /* private: the sparse weights raspG_run uses */
  /* --ln pre (rcompile_ln.c): the residual dimensions of the model without
  ** layer norm (its dimensions keep their places; the balance, padding and
  ** constant dimensions follow) and with them, the constants a 2^s and
  ** b 2^s, the layer norms' weight 2^q, and whether the construction is proven exact at
  ** every layer norm (ln_why: what failed, when not) */
  int ln_d0, ln_d1, ln_a, ln_b, ln_s, ln_q, ln_proven;
  double ln_T, ln_S; /* the bounds it was chosen from: sum of |x| and of x^2 */
  /* --ln rms (rcompile_rms.c): ln_nc constants ln_c[k] 2^ln_q (the squares
  ** of the ln_c summing to ln_d1), weight 2^ln_q; ln_f64: exact in float64
  ** too, not float32 alone (ln_d0, ln_d1, ln_S, ln_proven, ln_why as above) */
  int ln_nc, ln_c[4], ln_f64;
  /* --ln stock (rcompile_lnstock.c): ln_stock 1; weight 2^ln_q, eps 4^ln_q
  ** (exact scale in float64 too where ln_f64), ln_ns sink dimensions after
  ** the balance; ln_M the bound on |computed mean| it was sized for */
  int ln_stock, ln_ns;
  double ln_M;
  double ln_bos; /* ... and the bound on BOS's residual's distance from its one-hot
                    at any attention (-1: none found, the norms not proven) */
  char ln_why[160];
} raspG_model;

/* The default logit margin for n_out output values: ln(1000 (n_out - 1)),
** so that a right output's softmax cross-entropy, ln(1 + (n_out - 1)
** e^-margin), is at most ln(1.001) < 0.001 (and 1 when n_out < 2). */
double raspG_default_logit_scale(int n_out);
/* That cross-entropy bound, ln(1 + (n_out - 1) e^-scale). */
double raspG_logit_ce_bound(int n_out, double scale);

/* Compiles ir's first output.  Returns 1, or 0 with err set (an operation
** the compiler cannot realise, or a value set too large to plan for). */
int raspG_compile(const rasp_ir *ir, const raspG_opts *opts, raspG_model *out,
                  rasp_error *err);
void raspG_free(raspG_model *g);

/* The compiler's schedule without the weights (the planner alone, cheap):
** what raspG_compile would build.  `rasp layers` and the verifier report
** this, so their counts are the compiled model's. */
typedef struct raspG_sched {
  int nlayers;      /* the compiled model's layers */
  int *heads;       /* heads[l]: heads after CSE, static heads being views */
  int *mlps;        /* mlps[l]: MLP units (materialised nodes, decodes) */
  int total_heads;
  int decodes;      /* MLP units that decode a numerical unit into one-hot for
                       a reader that needs categories (a select, a where's
                       condition, the readout), or a width or mean into an
                       integer (x, x^2) for one that reads numbers: the
                       sublayers the IR rule does not count */
  int chained;      /* MLP units that read another MLP unit (a decode of
                       one included): each waits one MLP sublayer for it,
                       where the IR rule fuses element-wise chains into one */
  int *sublayer;    /* per IR node (ir->nnodes): the sublayer after which it
                       is in the residual as its readers read it: its unit's,
                       a view (an element-wise map of one unit, a static
                       head) sharing that unit's (0: embeddings and
                       constants); a decode's when they need one; the
                       output's, the readout's.  A selector: its operands'
                       latest.  -1: the first output does not need it.
                       Numbered as rlayers.h's IR rule (odd attention, even
                       MLP). */
} raspG_sched;
/* Returns 1, or 0 with err set where raspG_compile would fail. */
int raspG_schedule(const rasp_ir *ir, const raspG_opts *opts, raspG_sched *out,
                   rasp_error *err);
void raspG_sched_free(raspG_sched *s);

/* Runs the model on one input of length g->n and decodes its output.  It
** skips the zero weights but adds the nonzero terms in raspN_forward's
** order, so the logits are bit-identical to raspN_forward's (float32);
** RASP_COMPILE_DENSE=1 in the environment makes it call raspN_forward.
** With g->precision fp16 or bf16 it emulates that format instead: every
** weight rounded to it, and every operation's result too (each dot
** product, accumulated in float32; each addition to the residual; the
** softmax's steps; the logits).
** logits may be NULL; else it receives (n+1) * n_out
** floats (row 0 is the BOS position). */
int raspG_run(const raspG_model *g, const int64_t *tokens, rasp_elem *out,
              float *logits, rasp_error *err);

/* The proven noise level (doc/compiler.md, "Noise bound"; the proofs are
** atop raspG_noise_bound in rcompile_noise.c and cb_run in
** rcompile_cbound.c): with unit roundoff u (float32: RASPG_FP32_U), *dev0 gets a bound on how far rounding alone
** moves any logit from the real-arithmetic model, and *eps the largest
** per-weight perturbation found (bisection) for which every weight moved
** by up to eps still leaves every logit within a quarter of the readout's
** margin, so every output right.  At float32 the better of two bounds: per
** residual dimension (intervals), and composed over the units (from the
** value sets, computed by raspG_compile).  Returns 1, or 0 when even
** eps = 0 is not proven (*eps = 0). */
#define RASPG_FP32_U 5.9604644775390625e-08 /* 2^-24 */
int raspG_noise_bound(const raspG_model *g, double u, double *eps, double *dev0);

/* d_model, layers, heads and MLP widths per layer, parameter count, the
** logit margin. */
void raspG_print_stats(const raspG_model *g, FILE *out);

#endif
