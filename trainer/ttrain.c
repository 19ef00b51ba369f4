/*
** ttrain.c -- trainer checkpoints (see ttrain.h).
**
** STEM.opt: the magic "RASPOPT1", a fixed little header (nparams, adam
** step, epoch, step, best_val, done), then Adam's m and v.  The model is
** written first and the .opt last: a kill between the two leaves a newer
** model with an older .opt, which resume detects by the step recorded in
** both (the model's json_extra is not touched; the step lives in .opt, and
** the model of the same step is what matters for exact resumption, so the
** .opt also stores a checksum of the parameters).
*/
#include "ttrain.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmem.h"

typedef struct opt_header {
  char magic[8];
  uint64_t nparams;
  int64_t adam_step, step;
  int32_t epoch, done;
  double best_val;
  uint64_t param_sum; /* FNV-1a of the parameters' bytes */
} opt_header;

static uint64_t fnv(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

int train_ckpt_save(const char *stem, const rasp_model *m, const train_adamw *o,
                    const train_ckpt_state *st, rasp_error *err) {
  if (raspN_save(m, stem, err)) return -1;
  size_t sl = strlen(stem);
  char *path = raspM_alloc(sl + 32);
  snprintf(path, sl + 32, "%s.opt", stem);
  opt_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, "RASPOPT1", 8);
  h.nparams = m->nparams;
  h.adam_step = o->step;
  h.step = st->step;
  h.epoch = st->epoch;
  h.done = st->done;
  h.best_val = st->best_val;
  h.param_sum = fnv(m->params, m->nparams * sizeof(float));
  int rc = -1;
  rasp_afile af;
  if (raspR_atomic_open(&af, path, err)) goto out;
  if (fwrite(&h, sizeof h, 1, af.f) != 1 ||
      fwrite(o->m, sizeof(float), m->nparams, af.f) != m->nparams ||
      fwrite(o->v, sizeof(float), m->nparams, af.f) != m->nparams) {
    int e = errno;
    raspR_atomic_abort(&af);
    raspR_setnopos(err, "cannot write '%s': %s", path, strerror(e));
    goto out;
  }
  rc = raspR_atomic_commit(&af, err);
out:
  raspM_free(path);
  return rc;
}

int train_ckpt_load(const char *stem, rasp_model *m, train_adamw *o,
                    train_ckpt_state *st, rasp_error *err) {
  memset(o, 0, sizeof *o);
  if (raspN_load(m, stem, err)) return -1;
  size_t sl = strlen(stem);
  char *path = raspM_alloc(sl + 32);
  snprintf(path, sl + 32, "%s.opt", stem);
  int rc = -1;
  FILE *f = fopen(path, "rb");
  opt_header h;
  if (!f) {
    raspR_setnopos(err, "cannot read '%s': %s", path, strerror(errno));
    goto fail;
  }
  train_adamw_init(o, m->nparams);
  if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, "RASPOPT1", 8)) {
    raspR_setnopos(err, "'%s': not an optimiser checkpoint", path);
    goto fail;
  }
  if (h.nparams != m->nparams) {
    raspR_setnopos(err, "'%s': for %llu parameters, the model has %zu", path,
                   (unsigned long long)h.nparams, m->nparams);
    goto fail;
  }
  if (fread(o->m, sizeof(float), m->nparams, f) != m->nparams ||
      fread(o->v, sizeof(float), m->nparams, f) != m->nparams ||
      fgetc(f) != EOF) {
    raspR_setnopos(err, "'%s': truncated or oversized optimiser state", path);
    goto fail;
  }
  if (h.param_sum != fnv(m->params, m->nparams * sizeof(float))) {
    raspR_setnopos(err, "'%s': does not belong to the model next to it "
                        "(interrupted checkpoint?)", path);
    goto fail;
  }
  o->step = h.adam_step;
  st->epoch = h.epoch;
  st->step = (long)h.step;
  st->best_val = h.best_val;
  st->done = h.done;
  rc = 0;
fail:
  if (f) fclose(f);
  raspM_free(path);
  if (rc) {
    train_adamw_free(o);
    raspN_free(m);
  }
  return rc;
}

/* ---- compiled models as initialisation ---------------------------------- */

/* The JSON string array that follows key (searched from from); *n gets its
** length.  Strings are unescaped (\" \\ \/ and \uXXXX below 128). */
static char **json_str_array(const char *from, const char *key, int *n) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\"", key);
  const char *p = strstr(from, pat);
  *n = 0;
  if (!p) return NULL;
  p += strlen(pat);
  while (*p == ' ' || *p == ':' || *p == '\n' || *p == '\t' || *p == '\r') p++;
  if (*p != '[') return NULL;
  p++;
  int cap = 16;
  char **v = raspM_alloc((size_t)cap * sizeof *v);
  for (;;) {
    while (*p == ' ' || *p == ',' || *p == '\n' || *p == '\t' || *p == '\r') p++;
    if (*p == ']' || !*p) break;
    if (*p != '"') break; /* not a string array: stop */
    p++;
    size_t len = 0, bcap = 32;
    char *b = raspM_alloc(bcap);
    while (*p && *p != '"') {
      char c = *p++;
      if (c == '\\' && *p) {
        c = *p++;
        if (c == 'n') c = '\n';
        else if (c == 't') c = '\t';
        else if (c == 'u' && p[0] && p[1] && p[2] && p[3]) {
          c = (char)strtol((char[5]){p[0], p[1], p[2], p[3], 0}, NULL, 16);
          p += 4;
        }
      }
      if (len + 2 > bcap) b = raspM_realloc(b, bcap *= 2);
      b[len++] = c;
    }
    b[len] = 0;
    if (*p == '"') p++;
    if (*n == cap) v = raspM_realloc(v, (size_t)(cap *= 2) * sizeof *v);
    v[(*n)++] = b;
  }
  return v;
}

static void free_strs(char **v, int n) {
  for (int i = 0; i < n; i++) raspM_free(v[i]);
  raspM_free(v);
}

/* The "dim" of the layout unit whose "kind" is "tokens", or -1. */
static int tokens_unit_dim(const char *js) {
  for (const char *p = js; (p = strstr(p, "\"kind\"")) != NULL;) {
    p += 6;
    while (*p == ' ' || *p == ':') p++;
    if (strncmp(p, "\"tokens\"", 8)) continue;
    /* the unit's fields: look back to its '{' and forward to its '}' */
    const char *b = p;
    while (b > js && *b != '{') b--;
    const char *e = strchr(p, '}');
    const char *d = strstr(b, "\"dim\"");
    if (!d || (e && d > e)) return -1;
    d += 5;
    while (*d == ' ' || *d == ':') d++;
    return atoi(d);
  }
  return -1;
}

int train_is_compiled(const rasp_model *m) {
  return m->cfg.bos_token >= 0 && m->json_extra &&
         strstr(m->json_extra, "\"readout\"") != NULL;
}

int *train_compiled_out_vals(const rasp_model *m, int *nvals, rasp_error *err) {
  const char *r = m->json_extra ? strstr(m->json_extra, "\"readout\"") : NULL;
  int n = 0;
  char **s = r ? json_str_array(r, "values", &n) : NULL;
  if (!s || n != m->cfg.n_out) {
    raspR_setnopos(err, "the model's layout has no readout values for its %d "
                        "logits (%d found)", m->cfg.n_out, n);
    if (s) free_strs(s, n);
    return NULL;
  }
  int *v = raspM_alloc((size_t)n * sizeof *v);
  for (int j = 0; j < n; j++) {
    char *e;
    long x = strtol(s[j], &e, 10);
    v[j] = (*s[j] && !*e && x > INT32_MIN && x < INT32_MAX) ? (int)x : INT32_MIN;
  }
  free_strs(s, n);
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

int train_adapt_compiled(rasp_model *m, const char *name,
                         const rasp_task_opts *task, int encoder, int n_out,
                         int T, float floor, rasp_error *err) {
  rasp_model_config *c = &m->cfg;
  if (!train_is_compiled(m)) {
    raspR_setnopos(err, "'%s': not a compiled model (no BOS token or layout)", name);
    return -1;
  }
  if (!encoder && !c->causal) {
    raspR_setnopos(err, "'%s': the compiled model is not causal; the decoder "
                        "needs a causal program (e.g. readout6_causal)", name);
    return -1;
  }
  /* a causal model's outputs do not depend on later positions, so a longer
  ** one serves a shorter task; a non-causal one only its own length */
  if (c->causal ? c->max_len < T + 1 : c->max_len != T + 1) {
    raspR_setnopos(err, "'%s': compiled for %d positions (BOS included); the "
                        "task needs %s%d (BOS + %d tokens): train with the task "
                        "settings it was compiled for (--D, --M, --V, --answer, "
                        "--no-bos --no-eos)", name, c->max_len,
                   c->causal ? "at least " : "exactly ", T + 1, T);
    return -1;
  }
  int nd = 0, rc = -1;
  char **dims = json_str_array(m->json_extra, "dims", &nd);
  int nv = 0;
  int *vals = train_compiled_out_vals(m, &nv, err);
  if (!vals) goto out;
  if (nd > c->d_model) {
    raspR_setnopos(err, "'%s': the layout names %d dimensions, d_model is %d",
                   name, nd, c->d_model);
    goto out;
  }
  /* every id the task writes must be the compiled model's id for that text */
  const float *te = raspN_data(m, "tok_emb");
  /* dims[k] names residual dimension k; where the list leaves some out,
  ** the tokens unit's "dim" anchors its first "tokens=" entry */
  int k0 = -1, udim = tokens_unit_dim(m->json_extra);
  for (int k = 0; k < nd && k0 < 0; k++)
    if (!strncmp(dims[k], "tokens=", 7)) k0 = k;
  int shift = (k0 >= 0 && udim >= 0) ? udim - k0 : 0;
  for (int id = 1; id <= task->V + RASP_SP_COUNT; id++) {
    int sp = id - task->V;
    if ((sp == RASP_SP_BOS && !task->bos) || (sp == RASP_SP_EOS && !task->eos) ||
        ((sp == RASP_SP_S || sp == RASP_SP_T) && !task->st_names))
      continue;
    char text[64], want[80];
    raspT_token_text(task, id, text, sizeof text);
    snprintf(want, sizeof want, "tokens=%s", text);
    int d = named_dim(dims, nd, shift, want);
    if (d < 0 || d >= c->d_model || id >= c->vocab_size || te[(size_t)id * c->d_model + d] == 0.0f) {
      raspR_setnopos(err, "'%s': token '%s' (id %d) is not in the compiled "
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
    if (d < 0 || d >= c->d_model || id >= c->vocab_size ||
        te[(size_t)id * c->d_model + d] == 0.0f) {
      raspR_setnopos(err, "'%s': the encoder writes MASK (id %d) at the answer "
                          "positions, and it is not among the compiled model's "
                          "inputs%s; compile an encoder readout (e.g. "
                          "programs/encoder2_backward_targets.rasp) with "
                          "`rasp compile --encoder`", name, id,
                     d >= 0 ? " under that id" : "");
      goto out;
    }
  }
  if (!task->st_names) {
    /* a program written for st_names reads 's' and 't' as symbols */
    for (int k = 0; k < nd; k++)
      if (!strcmp(dims[k], "tokens=s") || !strcmp(dims[k], "tokens=t")) {
        raspR_setnopos(err, "'%s': the program reads the symbols 's' and 't'; "
                            "train with --st-names", name);
        goto out;
      }
  }
  /* the new readout */
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
  if (raspN_init(&nm, &nc, err)) {
    raspM_free(nu);
    raspM_free(nb);
    raspM_free(src);
    goto out;
  }
  for (int k = 0; k < nm.ntensors; k++) {
    rasp_tensor *t = &nm.tensors[k];
    float *dst = nm.params + t->offset;
    if (!strcmp(t->name, "unembed")) memcpy(dst, nu, t->size * sizeof *dst);
    else if (!strcmp(t->name, "unembed_b")) memcpy(dst, nb, t->size * sizeof *dst);
    else memcpy(dst, raspN_data(m, t->name), t->size * sizeof *dst);
  }
  raspM_free(nu);
  raspM_free(nb);
  raspM_free(src);
  raspN_free(m);
  *m = nm;
  rc = 0;
out:
  if (dims) free_strs(dims, nd);
  raspM_free(vals);
  return rc;
}
