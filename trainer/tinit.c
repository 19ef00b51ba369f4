/*
** tinit.c -- compiled models as initialisation (see tinit.h): a compiled
** model's readout adapted to the trainer's ids for the decoder or the
** encoder objective, and --widen's embedding of it in a wider model whose
** old circuit stays intact.
**
** The layout is read through rmodel's JSON parser (raspN_layout_*), never
** by searching its text: a name or a string that happens to contain
** "readout" or "kind" must not be taken for the key.
*/
#include "tinit.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmem.h"
#include "tnet.h"

int train_is_compiled(const rasp_model *m) {
  return m->cfg.bos_token >= 0 && raspN_layout_has(m, "readout");
}

int *train_compiled_out_vals(const rasp_model *m, int *nvals, rasp_error *err) {
  int n = 0;
  char **s = raspN_layout_strings(m, "readout.values", &n);
  if (!s || n != m->cfg.n_out) {
    raspR_setnoposc(err, RASP_E_USAGE, "the model's layout has no readout values for its %d "
                        "logits (%d found)", m->cfg.n_out, n);
    raspN_free_strings(s, n);
    return NULL;
  }
  int *v = raspM_alloc((size_t)n * sizeof *v);
  for (int j = 0; j < n; j++) {
    char *e;
    errno = 0;
    long x = strtol(s[j], &e, 10);
    v[j] = (*s[j] && !*e && !errno && x > INT32_MIN && x < INT32_MAX) ? (int)x
                                                                       : INT32_MIN;
  }
  raspN_free_strings(s, n);
  *nvals = n;
  return v;
}

int train_mask_id(const rasp_task_opts *task) { return raspT_vocab_size(task); }

/* The residual dimension of dims[] named want ("tokens=x"), or -1. */
static int named_dim(char **dims, int nd, int shift, const char *want) {
  for (int k = 0; k < nd; k++)
    if (!strcmp(dims[k], want)) return k + shift;
  return -1;
}

/* A compiled model the task can run on: BOS and a layout, causal for the
** decoder, and as many positions as the task writes (a causal model's
** outputs do not depend on later positions, so a longer one serves a
** shorter task; a non-causal one only its own length). */
static int fits_task(const rasp_model *m, const char *name, int encoder, int T,
                     rasp_error *err) {
  const rasp_model_config *c = &m->cfg;
  if (!train_is_compiled(m)) {
    raspR_setnoposc(err, RASP_E_USAGE, "'%s': not a compiled model (no BOS token or layout)", name);
    return 0;
  }
  if (!encoder && !c->causal) {
    raspR_setnoposc(err, RASP_E_USAGE, "'%s': the compiled model is not causal; the decoder "
                        "needs a causal program (e.g. readout6_causal)", name);
    return 0;
  }
  if (c->causal ? c->max_len < T + 1 : c->max_len != T + 1) {
    raspR_setnoposc(err, RASP_E_USAGE, "'%s': compiled for %d positions (BOS included); the "
                        "task needs %s%d (BOS + %d tokens): train with the task "
                        "settings it was compiled for (--D, --M, --V, --answer, "
                        "--no-bos --no-eos)", name, c->max_len,
                   c->causal ? "at least " : "exactly ", T + 1, T);
    return 0;
  }
  return 1;
}

/* Every id the task writes (and MASK, for the encoder) must be the
** compiled model's id for that text: the residual dimension the layout
** names for it (dims, nd of them) has its embedding nonzero.  A program
** written for st_names reads 's' and 't' as symbols. */
static int check_tokens(rasp_model *m, const char *name, const rasp_task_opts *task,
                        int encoder, char **dims, int nd, rasp_error *err) {
  const rasp_model_config *c = &m->cfg;
  const float *te = raspN_data(m, "tok_emb");
  /* dims[k] names residual dimension k; where the list leaves some out,
  ** the tokens unit's "dim" anchors its first "tokens=" entry */
  int k0 = -1, udim = raspN_layout_unit_dim(m, "tokens");
  for (int k = 0; k < nd && k0 < 0; k++)
    if (!strncmp(dims[k], "tokens=", 7)) k0 = k;
  int shift = (k0 >= 0 && udim >= 0) ? udim - k0 : 0;
  /* a numerical tokens unit (many symbols: "tokens=x", "tokens=x^2") holds
  ** the id itself; the layout's vocab then names the ids */
  int nvoc = 0, ok = 0;
  char **voc = NULL;
  int xdim = named_dim(dims, nd, shift, "tokens=x");
  if (xdim >= 0) voc = raspN_layout_strings(m, "vocab", &nvoc);
  if (!voc) nvoc = 0;
  for (int id = 1; id <= task->V + RASP_SP_COUNT; id++) {
    int sp = id - task->V;
    if ((sp == RASP_SP_BOS && !task->bos) || (sp == RASP_SP_EOS && !task->eos) ||
        ((sp == RASP_SP_S || sp == RASP_SP_T) && !task->st_names))
      continue;
    char text[64], want[80];
    raspT_token_text(task, id, text, sizeof text);
    snprintf(want, sizeof want, "tokens=%s", text);
    int d = named_dim(dims, nd, shift, want);
    if (d < 0 && xdim >= 0 && id < nvoc && !strcmp(voc[id], text))
      d = xdim; /* numerical token ids: the symbol by the vocabulary, the
                   embedding nonzero (the id) for every compiled input */
    if (d < 0 || d >= c->d_model || id >= c->vocab_size || te[(size_t)id * c->d_model + d] == 0.0f) {
      raspR_setnoposc(err, RASP_E_USAGE, "'%s': token '%s' (id %d) is not in the compiled "
                          "model's vocabulary%s; train with the task settings "
                          "the program was compiled for (e.g. --st-names "
                          "--no-bos --no-eos --q start, same --V)", name, text, id,
                     d >= 0 ? " under that id" : "");
      goto out;
    }
  }
  if (encoder) {
    /* the encoder writes MASK at the answer positions it predicts */
    int id = train_mask_id(task), d = named_dim(dims, nd, shift, "tokens=MASK");
    if (d < 0 && xdim >= 0 && id < nvoc && !strcmp(voc[id], "MASK")) d = xdim;
    if (d < 0 || d >= c->d_model || id >= c->vocab_size ||
        te[(size_t)id * c->d_model + d] == 0.0f) {
      raspR_setnoposc(err, RASP_E_USAGE, "'%s': the encoder writes MASK (id %d) at the answer "
                          "positions, and it is not among the compiled model's "
                          "inputs%s; compile an encoder readout (e.g. "
                          "programs/encoder2_backward_targets.rasp) with "
                          "`rasp compile --encoder`", name, id,
                     d >= 0 ? " under that id" : "");
      goto out;
    }
  }
  if (!task->st_names) {
    for (int k = 0; k < nd; k++)
      if (!strcmp(dims[k], "tokens=s") || !strcmp(dims[k], "tokens=t")) {
        raspR_setnoposc(err, RASP_E_USAGE, "'%s': the program reads the symbols 's' and 't'; "
                            "train with --st-names", name);
        goto out;
      }
  }
  ok = 1;
out:
  if (voc) raspN_free_strings(voc, nvoc);
  return ok;
}

/* m with the new readout: n_out outputs, output v the compiled readout's
** column for value v (vals[j] is column j's value; the first column of a
** value wins), or no weights and bias floor for a value it never writes. */
static int swap_readout(rasp_model *m, const int *vals, int nv, int n_out, float floor,
                        rasp_error *err) {
  const rasp_model_config *c = &m->cfg;
  size_t D = (size_t)c->d_model;
  const float *U = raspN_data(m, "unembed"), *Ub = raspN_data(m, "unembed_b");
  float *nu = raspM_alloc(D * (size_t)n_out * sizeof *nu);
  float *nb = raspM_alloc((size_t)n_out * sizeof *nb);
  int *src = raspM_alloc((size_t)n_out * sizeof *src);
  for (int v = 0; v < n_out; v++) src[v] = -1;
  for (int j = 0; j < nv; j++)
    if (vals[j] >= 0 && vals[j] < n_out && src[vals[j]] < 0) src[vals[j]] = j;
  for (int v = 0; v < n_out; v++) {
    nb[v] = src[v] >= 0 ? Ub[src[v]] : floor;
    if (src[v] >= 0)
      for (size_t d = 0; d < D; d++) nu[d * n_out + v] = U[d * (size_t)c->n_out + src[v]];
  }
  rasp_model nm;
  rasp_model_config nc = *c;
  nc.n_out = n_out;
  int ok = raspN_init(&nm, &nc, err);
  if (ok) {
    for (int k = 0; k < nm.ntensors; k++) {
      rasp_tensor *t = &nm.tensors[k];
      float *dst = nm.params + t->offset;
      if (!strcmp(t->name, "unembed")) memcpy(dst, nu, t->size * sizeof *dst);
      else if (!strcmp(t->name, "unembed_b")) memcpy(dst, nb, t->size * sizeof *dst);
      else memcpy(dst, raspN_data(m, t->name), t->size * sizeof *dst);
    }
  }
  raspM_free(nu);
  raspM_free(nb);
  raspM_free(src);
  if (!ok) return 0;
  raspN_free(m);
  *m = nm;
  return 1;
}

/* The plan: the model fits the task, its layout names every token the
** task writes, then the readout is rebuilt for the task's outputs. */
int train_adapt_compiled(rasp_model *m, const char *name,
                         const rasp_task_opts *task, int encoder, int n_out,
                         int T, float floor, rasp_error *err) {
  if (!fits_task(m, name, encoder, T, err)) return 0;
  int nd = 0, ok = 0;
  char **dims = raspN_layout_strings(m, "dims", &nd);
  int nv = 0;
  int *vals = train_compiled_out_vals(m, &nv, err);
  if (!vals) goto out;
  if (nd > m->cfg.d_model) {
    raspR_setnoposc(err, RASP_E_USAGE, "'%s': the layout names %d dimensions, d_model is %d",
                   name, nd, m->cfg.d_model);
    goto out;
  }
  ok = check_tokens(m, name, task, encoder, dims, nd, err) &&
       swap_readout(m, vals, nv, n_out, floor, err);
out:
  raspN_free_strings(dims, nd);
  raspM_free(vals);
  return ok;
}

/* ---- widening ------------------------------------------------------------ */

/* W_WIRE: a zero that joins added capacity to the compiled dimensions
** (marked TRAIN_WIDEN_WIRE: --freeze compiled keeps it 0) */
typedef enum { W_RAND, W_ZERO, W_WIRE } wfill;

/* Fills dst [r2, c2] (a block of the widened tensor) from src [r1, c1]:
** entry (i, j) with i < r1 and j < c1 is copied (and marked
** TRAIN_WIDEN_COMPILED in mask); the others are filled as their kind says:
** old row and new column (old_new), new row and old column (new_old), both
** new (new_new).  A new head's block passes r1 = 0: all its rows are new. */
static void widen_2d(float *dst, unsigned char *mask, const float *src,
                     size_t r1, size_t c1, size_t r2, size_t c2, wfill old_new,
                     wfill new_old, wfill new_new, float scale, rasp_rng *r) {
  for (size_t i = 0; i < r2; i++)
    for (size_t j = 0; j < c2; j++) {
      size_t k = i * c2 + j;
      int ni = i >= r1, nj = j >= c1;
      if (!ni && !nj) {
        dst[k] = src[i * c1 + j];
        mask[k] = TRAIN_WIDEN_COMPILED;
        continue;
      }
      wfill f = ni && nj ? new_new : ni ? new_old : old_new;
      dst[k] = f == W_RAND ? (float)(scale * train_normal(r)) : 0.0f;
      if (f == W_WIRE) mask[k] = TRAIN_WIDEN_WIRE;
    }
}

int train_widen(rasp_model *m, int K, float scale, uint64_t seed,
                unsigned char **mask, rasp_error *err) {
  rasp_model_config c = m->cfg, nc = c;
  *mask = NULL;
  if (c.layer_norm) {
    raspR_setnoposc(err, RASP_E_USAGE, "--widen: the model has layer norm, which would mix "
                        "the added dimensions into the compiled ones");
    return 0;
  }
  int He = K > 0 ? (K + c.d_head - 1) / c.d_head : 0;
  nc.d_model = c.d_model + K;
  nc.n_heads = c.n_heads + He;
  nc.d_mlp = c.d_mlp + 4 * K;
  rasp_model nm;
  if (!raspN_init(&nm, &nc, err)) return 0;
  unsigned char *mk = raspM_alloc(nm.nparams ? nm.nparams : 1);
  memset(mk, 0, nm.nparams);
  rasp_rng r;
  raspT_rng_seed(&r, seed, 0x3d1de);
  size_t D = (size_t)c.d_model, D2 = (size_t)nc.d_model, H = (size_t)c.n_heads,
         H2 = (size_t)nc.n_heads, Dh = (size_t)c.d_head, F = (size_t)c.d_mlp,
         F2 = (size_t)nc.d_mlp;
  for (int k = 0; k < nm.ntensors; k++) {
    rasp_tensor *t = &nm.tensors[k];
    float *dst = nm.params + t->offset;
    unsigned char *mt = mk + t->offset;
    const float *src = raspN_data(m, t->name);
    const char *n = t->name;
    const char *dot = strrchr(n, '.');
    const char *leaf = dot ? dot + 1 : n;
    if (!strcmp(n, "tok_emb") || !strcmp(n, "pos_emb")) {
      size_t rows = (size_t)t->shape[0];
      widen_2d(dst, mt, src, rows, D, rows, D2, W_RAND, W_RAND, W_RAND, scale, &r);
    } else if (!strcmp(leaf, "w_q") || !strcmp(leaf, "w_k") || !strcmp(leaf, "w_v")) {
      /* [H, D, Dh]: old heads read only the old dimensions */
      for (size_t h = 0; h < H2; h++)
        widen_2d(dst + h * D2 * Dh, mt + h * D2 * Dh, src + (h < H ? h : 0) * D * Dh,
                 h < H ? D : 0, Dh, D2, Dh, W_RAND, h < H ? W_WIRE : W_RAND, W_RAND,
                 scale, &r);
    } else if (!strcmp(leaf, "b_q") || !strcmp(leaf, "b_k") || !strcmp(leaf, "b_v")) {
      widen_2d(dst, mt, src, H, Dh, H2, Dh, W_ZERO, W_ZERO, W_ZERO, scale, &r);
    } else if (!strcmp(leaf, "w_o")) {
      /* [H, Dh, D]: new heads write only the new dimensions */
      for (size_t h = 0; h < H2; h++)
        widen_2d(dst + h * Dh * D2, mt + h * Dh * D2, src + (h < H ? h : 0) * Dh * D,
                 h < H ? Dh : 0, D, Dh, D2, W_RAND, W_WIRE, W_RAND, scale, &r);
    } else if (!strcmp(leaf, "b_o") || !strcmp(leaf, "b_out") || !strcmp(leaf, "b_in") ||
               !strcmp(n, "unembed_b")) {
      widen_2d(dst, mt, src, 1, (size_t)raspN_tensor(m, n)->size, 1, t->size, W_ZERO,
               W_ZERO, W_ZERO, scale, &r);
    } else if (!strcmp(leaf, "w_in")) {
      /* [D, F]: old units read only the old dimensions */
      widen_2d(dst, mt, src, D, F, D2, F2, W_RAND, W_WIRE, W_RAND, scale, &r);
    } else if (!strcmp(leaf, "w_out")) {
      /* [F, D]: new units write only the new dimensions */
      widen_2d(dst, mt, src, F, D, F2, D2, W_RAND, W_WIRE, W_RAND, scale, &r);
    } else if (!strcmp(n, "unembed")) {
      /* [D, n_out]: the logits read only the old dimensions at step 0;
      ** the readout's rows for the new ones are how added capacity reaches
      ** the output, so they are no wires: they train under --freeze */
      widen_2d(dst, mt, src, D, (size_t)c.n_out, D2, (size_t)c.n_out, W_ZERO,
               W_ZERO, W_ZERO, scale, &r);
    } else {
      raspR_setnoposc(err, RASP_E_USAGE, "--widen: unexpected tensor '%s'", n);
      raspM_free(mk);
      raspN_free(&nm);
      return 0;
    }
  }
  raspN_free(m);
  *m = nm;
  *mask = mk;
  return 1;
}
