/*
** rmodel.h -- transformer weights: the model the compiler writes, the
** trainer trains and both run.
**
** One architecture for everything: a standard decoder- or encoder-style
** transformer with token and (optional) position embeddings, n_layers
** blocks of multi-head attention then an MLP, each added to the residual
** stream, optional pre-layer-norm, and a linear readout to n_out logits.
**
**     x0 = tok_emb[token] + pos_emb[position]
**     for each layer l:
**         h = LN1(x) if layer_norm else x
**         x = x + sum_heads softmax(mask(Q K^T * attn_scale)) V W_o + b_o
**         h = LN2(x) if layer_norm else x
**         x = x + W_out act(W_in h + b_in) + b_out
**     logits = (LN_f(x) if layer_norm else x) unembed + unembed_b
**
** where LN is a layer norm (layer_norm 1: weight and bias) or an RMS norm
** (layer_norm 2: x rsqrt(mean(x^2) + eps) weight, no mean, no bias, as
** LLaMA's and torch.nn.RMSNorm).
**
** with Q = h w_q + b_q, K = h w_k + b_k, V = h w_v + b_v per head,
** attn_scale = 1/sqrt(d_head) (the standard one; compiled weights
** compensate for it), the mask keeping keys k <= q when causal, and act the
** ReLU (or GELU, tanh approximation).
**
** Tensor names and shapes (float32, row-major):
**     tok_emb                    [vocab_size, d_model]
**     pos_emb                    [max_len, d_model]       if pos_embedding
**     layers.L.ln1.weight, .bias [d_model]                if layer_norm
**                                                       (.bias: layer_norm 1)
**     layers.L.attn.w_q, w_k, w_v [n_heads, d_model, d_head]
**     layers.L.attn.b_q, b_k, b_v [n_heads, d_head]
**     layers.L.attn.w_o          [n_heads, d_head, d_model]
**     layers.L.attn.b_o          [d_model]
**     layers.L.ln2.weight, .bias [d_model]                if layer_norm
**     layers.L.mlp.w_in          [d_model, d_mlp]
**     layers.L.mlp.b_in          [d_mlp]
**     layers.L.mlp.w_out         [d_mlp, d_model]
**     layers.L.mlp.b_out         [d_model]
**     ln_f.weight, ln_f.bias     [d_model]                if layer_norm
**     unembed                    [d_model, n_out]
**     unembed_b                  [n_out]
** All tensors live in one flat buffer (params), in the order above, so an
** optimiser can treat the model as one vector.
**
** Files.  A model is two files with one stem: STEM.safetensors (the
** tensors, in the safetensors format: an 8-byte little-endian header
** length, a JSON header with dtype F32, shape and data_offsets for every
** tensor, then the raw data) and STEM.json (the config below and, for
** compiled models, the residual layout: what every dimension means, the
** embeddings and the readout).  Both are written atomically.
*/
#ifndef RASP_RMODEL_H
#define RASP_RMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "rerror.h"

typedef struct rasp_model_config {
  int vocab_size;    /* token ids 0 .. vocab_size-1 */
  int max_len;       /* positions 0 .. max_len-1 */
  int d_model, n_layers, n_heads, d_head, d_mlp;
  int n_out;         /* logits per position */
  int causal;        /* 1: every head sees only keys k <= q */
  int layer_norm;    /* RASPN_LN_*: 0 none; 1 pre-LN; 2 pre-RMSNorm */
  int pos_embedding; /* 0: none; 1: learned (or compiled) */
  int gelu;          /* 0: ReLU; 1: GELU */
  int bos_token;     /* id the model expects at position 0, or -1 */
  double norm_eps;   /* a layer norm's epsilon (layer_norm 1); 0: the default,
                        RASPN_LN_EPS.  Written to the file (config.norm_eps)
                        only where it is not the default */
} rasp_model_config;

enum { RASPN_LN_NONE, RASPN_LN_PRE, RASPN_LN_RMS };
/* The RMS norm's epsilon (layer_norm 2), as LLaMA's 1e-5. */
#define RASPN_RMS_EPS 1e-5f
/* A layer norm's default epsilon (layer_norm 1), torch.nn.LayerNorm's. */
#define RASPN_LN_EPS 1e-5
/* A layer norm's epsilon: config.norm_eps, or RASPN_LN_EPS where it is 0. */
static inline double raspN_norm_eps(const rasp_model_config *c) {
  return c->norm_eps > 0 ? c->norm_eps : RASPN_LN_EPS;
}

typedef struct rasp_tensor {
  char name[64];
  int ndim;
  int64_t shape[4];
  size_t offset, size; /* in floats, into params */
} rasp_tensor;

typedef struct rasp_model {
  rasp_model_config cfg;
  float *params;
  size_t nparams;
  rasp_tensor *tensors;
  int ntensors;
  char *json_extra;    /* compiled models: the layout object, as JSON text */
} rasp_model;

/* Lays out the tensors for cfg and allocates zeroed params.  Here and below:
** 1, or 0 with err (rerror.h's convention). */
int raspN_init(rasp_model *m, const rasp_model_config *cfg, rasp_error *err);
void raspN_free(rasp_model *m);
/* A tensor by name, or NULL. */
rasp_tensor *raspN_tensor(rasp_model *m, const char *name);
float *raspN_data(rasp_model *m, const char *name);

/* Writes STEM.safetensors and then STEM.json, each atomically.  The two
** are one model only together, and a kill between the renames would pair
** new tensors with an old config; so STEM.json, written last, records the
** FNV-1a checksum of the parameters ("params_fnv"), and raspN_load refuses
** a pair whose checksums differ.  A set is thus never read half-written. */
int raspN_save(const rasp_model *m, const char *stem, rasp_error *err);
/* raspN_save, and *fnv gets the checksum it recorded (callers that keep
** one of their own need not read the parameters again). */
int raspN_save_fnv(const rasp_model *m, const char *stem, uint64_t *fnv,
                   rasp_error *err);
/* FNV-1a (64-bit) of n bytes, continuing from h (RASPN_FNV0 to start). */
#define RASPN_FNV0 1469598103934665603ull
uint64_t raspN_fnv1a(uint64_t h, const void *p, size_t n);
/* Reads them back; a truncated, inconsistent or foreign file is an error
** that names the file and what is wrong with it.  Every size the files
** claim is checked against limits (rmodel.c: dimensions, layers,
** parameters, header and config bytes) and against the .safetensors' real
** size before the parameters are allocated, and the tensors are read
** straight into place, so a small file cannot make it allocate much.
** STEM.json's params_fnv, when present (files written before it was added
** have none), must match the parameters read. */
int raspN_load(rasp_model *m, const char *stem, rasp_error *err);
/* raspN_load, and *fnv gets the parameters' checksum (the pass that checks
** params_fnv computes it; also given for files without one). */
int raspN_load_fnv(rasp_model *m, const char *stem, uint64_t *fnv,
                   rasp_error *err);

/* Softmax of one row of attention scores, in place but unnormalised:
** att[j] = exp(att[j] - max); returns the sum.  The dense and the sparse
** forward passes share it, so their logits stay bit-identical. */
float raspN_softmax_exp(float *att, int nk);

/* The forward passes' layer norm of one row of d values: the mean and the
** variance summed in double, in index order, eps (raspN_norm_eps), the reciprocal
** square root rounded to float once, out[i] = (float)((x[i] - mean) rs)
** w[i] + b[i].  Shared by raspN_forward and the compiler's sparse pass, so
** that they stay bit-identical (compiled pre-LN models are exact only in
** this arithmetic: doc/compiler.md, "Pre-LN models"). */
void raspN_layer_norm(const float *x, const float *w, const float *b, int d, double eps,
                      float *out);
/* The forward passes' RMS norm of one row: the sum of squares in float32
** in index order, rs = 1 / sqrtf(sum / d + RASPN_RMS_EPS), out[i] =
** (x[i] rs) w[i] (what torch computes for x * torch.rsqrt(x.pow(2).mean(-1)
** + eps) * w, up to the order of the sum; compiled pre-RMSNorm models are
** exact in any order: doc/compiler.md, "Pre-RMSNorm models"). */
void raspN_rms_norm(const float *x, const float *w, int d, float *out);
/* n rows of d, each normed by kind's norm (RASPN_LN_PRE: raspN_layer_norm
** with w, b and eps; RASPN_LN_RMS: raspN_rms_norm with w). */
void raspN_norm_rows(int kind, const float *x, const float *w, const float *b, int n, int d,
                     double eps, float *out);

/* The checks every forward pass makes of its input: n in 1..max_len and
** every token below vocab_size.  1, or 0 with err (RASP_E_USAGE). */
int raspN_check_input(const rasp_model_config *c, const int *tokens, int n, rasp_error *err);

/* 1 when d_head^(-1/4) is a power of two (d_head 1, 16, 256, ...; at most
** 2^28): then PyTorch's scaled_dot_product_attention, which multiplies q
** and k each by float32(d_head^(-1/4)) before the product, forms the same
** float32 scores as the formula below (the product, then times
** float32(1/sqrt(d_head))), but where a product or sum is subnormal
** (doc/compiler.md, "Score formulas").  0 otherwise. */
int raspN_sdpa_exact(int d_head);
/* The smallest d_head' >= d_head with raspN_sdpa_exact(d_head'). */
int raspN_sdpa_round(int d_head);

/* Reference forward pass (float32, one sequence): logits is n * n_out.
** residual, if not NULL, receives the residual stream after the embedding
** and after every sublayer: (1 + 2*n_layers) * n * d_model floats. */
int raspN_forward(const rasp_model *m, const int *tokens, int n, float *logits,
                  float *residual, rasp_error *err);

/* ---- the layout of a compiled model -------------------------------------
** json_extra read through the same bounded JSON parser as the files (never
** by searching its text).  A path is object keys joined by dots, from the
** layout object: "dims", "readout.values". */
/* 1 if the layout has a value at path, else 0 (also without a layout). */
int raspN_layout_has(const rasp_model *m, const char *path);
/* Whether the layout's value at path is the string str. */
int raspN_layout_is(const rasp_model *m, const char *path, const char *str);
/* Whether m's layer norms are the compiled exact-identity construction
** (rasp compile --ln pre: rcompile_ln.c), which returns the residual only in
** raspN_layer_norm's arithmetic; a stock layer norm (--ln stock, a trained
** or a random model) runs in any. */
int raspN_ln_exact(const rasp_model *m);
/* The array of strings at path: fresh strings in a fresh array (free with
** raspN_free_strings), *n its length; NULL (*n = 0) when there is no
** such array or an item is not a string. */
char **raspN_layout_strings(const rasp_model *m, const char *path, int *n);
/* The boolean at path: 1 or 0; -1 when there is none. */
int raspN_layout_bool(const rasp_model *m, const char *path);
void raspN_free_strings(char **v, int n);
/* The integer "dim" of the first object in the layout's "units" array
** whose "kind" is kind, or -1. */
int raspN_layout_unit_dim(const rasp_model *m, const char *kind);

/* One entry of the layout's "units": a value the program computes, held
** in residual dimensions dim .. dim+size-1 from the sublayer of layer
** `layer` that writes it (kind "head": attention; "mlp": the MLP; -1 for
** the embeddings). */
typedef struct rasp_layout_unit {
  char name[64], kind[16];
  int categorical; /* 1: one-hot over size values; 0: numerical */
  int dim, size, layer;
} rasp_layout_unit;
/* The units of the layout whose fields are all present and in range
** (0 <= dim, dim + size <= d_model, layer < n_layers), as a fresh array
** (raspM_free it), *n its length; NULL (*n = 0) when there are none. */
rasp_layout_unit *raspN_layout_units(const rasp_model *m, int *n);

/* ---- settings objects in the layout -----------------------------------
** An object of the layout (layout.NAME) whose members are settings: each
** an integer, a string or a boolean, written in the order given and
** compared as text, so that a file can say what its model was made for
** and a reader can refuse a difference (layout.task: rmodel_task.h). */
enum { RASPN_SET_INT, RASPN_SET_STR, RASPN_SET_BOOL };
typedef struct raspN_setting {
  const char *key;
  int kind;      /* RASPN_SET_* */
  char text[48]; /* the value as text: "12", "arm", "true" */
} raspN_setting;
/* One setting that differs (the name is layout.task's, the first object of
** settings). */
typedef struct raspN_task_diff {
  const char *key;       /* "D", "markers", "model", ... */
  char model[48], ours[48]; /* the model's value ("(missing)" when the
                            ** layout lacks it) and the caller's, as text */
} raspN_task_diff;
/* Adds layout.name with the settings s[0..n) to m's layout; 1, or 0 when m
** has no layout object to add it to. */
int raspN_layout_set_object(rasp_model *m, const char *name, const raspN_setting *s, int n);
/* Compares layout.name with s[0..n): -1 when the layout has no such object,
** else the number of settings that differ, each described in d[0..] (room
** for n). */
int raspN_layout_object_diff(const rasp_model *m, const char *name, const raspN_setting *s,
                             int n, raspN_task_diff *d);
/* Reads STEM.json alone: m->cfg and m->json_extra, no parameters (the
** checks above, before the tensors are worth reading).  1, or 0 with err;
** raspN_free frees it. */
int raspN_load_config(rasp_model *m, const char *stem, rasp_error *err);

#endif
