/*
** ttrain.c -- trainer checkpoints (see ttrain.h for the files and the
** guarantees) and compiled models as initialisation.
**
** STEM.gNNNNNN.opt: the magic "RASPOPT2", the parameter count (uint64),
** then Adam's m and v (float32, host order: little endian everywhere we
** run).  Its size is checked against the count before anything is read.
**
** STEM.ckpt, the manifest, is text, one "key value" per line, in this
** order (read back strictly; best_val in C99 hex so it round-trips):
**     rasp-train checkpoint 2
**     generation N
**     epoch E / step S / adam_step A / best_val X / done 0|1
**     nparams P
**     params_fnv H / opt_fnv H      FNV-1a of the parameters' bytes and of
**                                   m then v, as written
**     config K                      then K lines of configuration
**     end
** Nothing in it depends on the time or the machine, so an interrupted and
** resumed run leaves the same bytes as an uninterrupted one.
*/
#include "ttrain.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmem.h"

#define OPT_MAGIC "RASPOPT2"
#define MANIFEST_MAX (1 << 20) /* bytes: a manifest is a few hundred */


/* printf into a fresh string */
static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  int n = vsnprintf(NULL, 0, f, ap);
  va_end(ap);
  char *s = raspM_alloc((size_t)(n > 0 ? n : 0) + 1);
  va_start(ap, f);
  vsnprintf(s, (size_t)(n > 0 ? n : 0) + 1, f, ap);
  va_end(ap);
  return s;
}

static int remove_gen(const char *stem, long gen);

static char *gen_stem(const char *stem, long gen) {
  return fmt("%s.g%06ld", stem, gen);
}

int train_ckpt_save(const char *stem, const rasp_model *m, const train_adamw *o,
                    train_ckpt_state *st, const char *config, rasp_error *err) {
  long gen = st->generation + 1;
  char *gs = gen_stem(stem, gen), *optp = fmt("%s.opt", gs),
       *manp = fmt("%s.ckpt", stem), *man = NULL, *pend = fmt("%s.pending", stem);
  int rc = -1;
  size_t n = m->nparams;
  /* 0. the generation about to be written, named first: a run killed
  ** before the manifest commits it leaves files a later run can prove
  ** are its own (train_ckpt_clean), and no other file is ever removed */
  char note[96];
  int nl = snprintf(note, sizeof note, "rasp-train pending generation %ld after %ld\n", gen,
                    st->generation);
  if (!raspR_write_file(pend, note, (size_t)nl, err)) goto out;
  /* 1. the generation's files, each atomically; rmodel's checksum of the
  ** parameters is the manifest's too */
  uint64_t ph;
  if (!raspN_save_fnv(m, gs, &ph, err)) goto out;
  rasp_afile af;
  if (!raspR_atomic_open(&af, optp, err)) goto out;
  uint64_t n64 = n;
  if (fwrite(OPT_MAGIC, 8, 1, af.f) != 1 || fwrite(&n64, 8, 1, af.f) != 1 ||
      fwrite(o->m, sizeof(float), n, af.f) != n ||
      fwrite(o->v, sizeof(float), n, af.f) != n) {
    int e = errno;
    raspR_atomic_abort(&af);
    raspR_setnoposc(err, RASP_E_WRITE, "cannot write '%s': %s", optp, strerror(e));
    goto out;
  }
  if (!raspR_atomic_commit(&af, err)) goto out;
  /* 2. the manifest: its rename commits the generation */
  uint64_t oh = raspN_fnv1a(raspN_fnv1a(RASPN_FNV0, o->m, n * sizeof(float)), o->v,
                        n * sizeof(float));
  int lines = 0;
  for (const char *c = config; *c; c++) lines += *c == '\n';
  if (*config && config[strlen(config) - 1] != '\n') lines++;
  man = fmt("rasp-train checkpoint 2\ngeneration %ld\nepoch %d\nstep %ld\n"
            "adam_step %ld\nbest_val %a\ndone %d\nnparams %zu\n"
            "params_fnv %016" PRIx64 "\nopt_fnv %016" PRIx64 "\nconfig %d\n%s%s"
            "end\n",
            gen, st->epoch, st->step, o->step, st->best_val, st->done, n, ph,
            oh, lines, config,
            *config && config[strlen(config) - 1] != '\n' ? "\n" : "");
  if (!raspR_write_file(manp, man, strlen(man), err)) goto out;
  /* 3. only now the generation before goes (the one the old manifest
  ** named: ours), then the note */
  if (st->generation > 0 && st->generation != gen) remove_gen(stem, st->generation);
  st->generation = gen;
  unlink(pend);
  rc = 0;
out:
  raspM_free(pend);
  raspM_free(gs);
  raspM_free(optp);
  raspM_free(manp);
  raspM_free(man);
  return rc == 0;
}

/* The manifest, parsed. */
typedef struct manifest {
  long generation, step, adam_step;
  int epoch, done;
  double best_val;
  size_t nparams;
  uint64_t params_fnv, opt_fnv;
  char *config;
} manifest;

/* Reads STEM.ckpt: 1 when read, 0 when there is none, -1 (err set) when it
** is unreadable or malformed. */
static int read_manifest(const char *stem, manifest *mf, rasp_error *err) {
  memset(mf, 0, sizeof *mf);
  char *path = fmt("%s.ckpt", stem), *text = NULL;
  int rc = -1;
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT) rc = 0;
    else raspR_setnoposc(err, RASP_E_READ, "cannot read '%s': %s", path, strerror(errno));
    goto out;
  }
  struct stat sb;
  if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode) || sb.st_size > MANIFEST_MAX) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': not a checkpoint manifest (not a regular file "
                        "of at most %d bytes)", path, MANIFEST_MAX);
    goto out;
  }
  size_t len = (size_t)sb.st_size;
  text = raspM_alloc(len + 1);
  if (fread(text, 1, len, f) != len) {
    raspR_setnoposc(err, RASP_E_READ, "cannot read '%s': I/O error", path);
    goto out;
  }
  text[len] = 0;
  if (memchr(text, 0, len)) goto bad;
  /* the fixed lines, in order */
  const char *p = text;
  int cl = -1, used = 0;
  unsigned long long ph, oh;
  if (sscanf(p, "rasp-train checkpoint 2\ngeneration %ld\nepoch %d\nstep %ld\n"
                "adam_step %ld\nbest_val %la\ndone %d\nnparams %zu\n"
                "params_fnv %16llx\nopt_fnv %16llx\nconfig %d\n%n",
             &mf->generation, &mf->epoch, &mf->step, &mf->adam_step,
             &mf->best_val, &mf->done, &mf->nparams, &ph, &oh, &cl, &used) != 10 ||
      !used || mf->generation < 1 || mf->generation > 999999999 ||
      mf->epoch < 0 || mf->step < 0 || mf->adam_step < 0 ||
      (mf->done != 0 && mf->done != 1) || cl < 0)
    goto bad;
  mf->params_fnv = ph;
  mf->opt_fnv = oh;
  p += used;
  const char *cfg = p;
  for (int k = 0; k < cl; k++) {
    const char *nl = strchr(p, '\n');
    if (!nl) goto bad;
    p = nl + 1;
  }
  if (strcmp(p, "end\n")) goto bad;
  mf->config = raspM_strndup(cfg, (size_t)(p - cfg));
  rc = 1;
  goto out;
bad:
  raspR_setnoposc(err, RASP_E_FORMAT, "'%s': not a rasp-train checkpoint manifest (or a "
                      "damaged one)", path);
out:
  if (f) fclose(f);
  raspM_free(text);
  raspM_free(path);
  return rc;
}

long train_ckpt_generation(const char *stem, rasp_error *err) {
  manifest mf;
  int r = read_manifest(stem, &mf, err);
  raspM_free(mf.config);
  return r < 0 ? -1 : r ? mf.generation : 0;
}

int train_ckpt_load(const char *stem, rasp_model *m, train_adamw *o,
                    train_ckpt_state *st, char **config, rasp_error *err) {
  memset(o, 0, sizeof *o);
  memset(m, 0, sizeof *m);
  if (config) *config = NULL;
  manifest mf;
  int r = read_manifest(stem, &mf, err);
  if (r <= 0) {
    if (!r) raspR_setnoposc(err, RASP_E_READ, "no checkpoint '%s.ckpt'", stem);
    return 0;
  }
  char *gs = gen_stem(stem, mf.generation), *optp = fmt("%s.opt", gs);
  int rc = -1;
  FILE *f = NULL;
  uint64_t ph;
  if (!raspN_load_fnv(m, gs, &ph, err)) goto fail;
  size_t n = m->nparams;
  if (n != mf.nparams || ph != mf.params_fnv) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s.ckpt': the parameters in '%s.safetensors' are "
                        "not the ones it committed", stem, gs);
    goto fail;
  }
  f = fopen(optp, "rb");
  struct stat sb;
  if (!f || fstat(fileno(f), &sb)) {
    raspR_setnoposc(err, RASP_E_READ, "cannot read '%s': %s", optp, strerror(errno));
    goto fail;
  }
  /* the size first: nothing is allocated for a file that cannot hold it */
  char magic[8];
  uint64_t n64 = 0;
  if ((uint64_t)sb.st_size != 16 + (uint64_t)n * 8 || fread(magic, 8, 1, f) != 1 ||
      memcmp(magic, OPT_MAGIC, 8) || fread(&n64, 8, 1, f) != 1 || n64 != n) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': not the optimiser state of a %zu-parameter "
                        "model (%lld bytes)", optp, n, (long long)sb.st_size);
    goto fail;
  }
  train_adamw_init(o, n);
  if (fread(o->m, sizeof(float), n, f) != n || fread(o->v, sizeof(float), n, f) != n) {
    raspR_setnoposc(err, RASP_E_READ, "cannot read '%s': truncated while reading", optp);
    goto fail;
  }
  if (raspN_fnv1a(raspN_fnv1a(RASPN_FNV0, o->m, n * sizeof(float)), o->v, n * sizeof(float)) !=
      mf.opt_fnv) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s.ckpt': the optimiser state in '%s' is not the one "
                        "it committed", stem, optp);
    goto fail;
  }
  o->step = mf.adam_step;
  st->epoch = mf.epoch;
  st->step = mf.step;
  st->best_val = mf.best_val;
  st->done = mf.done;
  st->generation = mf.generation;
  if (config) {
    *config = mf.config;
    mf.config = NULL;
  }
  rc = 0;
fail:
  if (f) fclose(f);
  raspM_free(gs);
  raspM_free(optp);
  raspM_free(mf.config);
  if (rc) {
    train_adamw_free(o);
    raspN_free(m);
  }
  return rc == 0;
}

int train_ckpt_clean(const char *stem) {
  rasp_error e = {0};
  long keep = train_ckpt_generation(stem, &e);
  char *pend = fmt("%s.pending", stem);
  int removed = 0;
  FILE *f = fopen(pend, "r");
  long g = 0, before = 0;
  if (f) {
    if (fscanf(f, "rasp-train pending generation %ld after %ld", &g, &before) < 1) g = 0;
    fclose(f);
  }
  /* a manifest that cannot be read may still be repaired by hand: keep all;
  ** else of the save's two generations, the one the manifest does not
  ** name: the new one (killed before the commit) or the one it replaced
  ** (killed after, before that one was removed) */
  if (keep >= 0) {
    if (g > 0 && g != keep) removed += remove_gen(stem, g);
    if (before > 0 && before != keep) removed += remove_gen(stem, before);
    unlink(pend);
  }
  raspM_free(pend);
  return removed;
}

/* Removes STEM's generation gen: its three files, by name.  Returns how
** many there were. */
static int remove_gen(const char *stem, long gen) {
  static const char *const ext[] = {".safetensors", ".json", ".opt"};
  char *gs = gen_stem(stem, gen);
  int removed = 0;
  for (int k = 0; k < 3; k++) {
    char *p = fmt("%s%s", gs, ext[k]);
    struct stat sb;
    if (!lstat(p, &sb) && S_ISREG(sb.st_mode)) removed += unlink(p) == 0;
    raspM_free(p);
  }
  raspM_free(gs);
  return removed;
}

int train_clean_tmp(const char *dir) {
  int removed = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    const char *t = strstr(de->d_name, ".tmp.");
    /* the last ".tmp." followed by exactly six alphanumerics */
    while (t && strstr(t + 1, ".tmp.")) t = strstr(t + 1, ".tmp.");
    if (!t || t == de->d_name || strlen(t + 5) != 6) continue;
    int ok = 1;
    for (int i = 5; i < 11; i++) ok &= isalnum((unsigned char)t[i]) != 0;
    if (!ok) continue;
    char *p = fmt("%s/%s", dir, de->d_name);
    struct stat sb;
    if (!lstat(p, &sb) && S_ISREG(sb.st_mode)) removed += unlink(p) == 0;
    raspM_free(p);
  }
  closedir(d);
  return removed;
}

/* The value of option name in a config ("--name value" lines), as a fresh
** string, or NULL. */
static char *config_get(const char *cfg, const char *name, size_t nl) {
  for (const char *p = cfg; *p;) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len > nl && !strncmp(p, name, nl) && p[nl] == ' ')
      return raspM_strndup(p + nl + 1, len - nl - 1);
    if (len == nl && !strncmp(p, name, nl)) return raspM_strdup("");
    p += len + (e != NULL);
  }
  return NULL;
}

/* For every option name in a (each line's first word) that b has not the
** same value for: appends to msg; swap: a is the checkpoint's. */
static int diff_one_way(const char *a, const char *b, int a_is_saved,
                        int only_missing, char *msg, size_t size, size_t *at) {
  int n = 0;
  for (const char *p = a; *p;) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    const char *sp = memchr(p, ' ', len);
    size_t nl = sp ? (size_t)(sp - p) : len;
    if (nl) {
      char *name = raspM_strndup(p, nl);
      char *va = config_get(a, name, nl), *vb = config_get(b, name, nl);
      if (!vb || (!only_missing && strcmp(va, vb))) {
        const char *now = a_is_saved ? vb : va, *saved = a_is_saved ? va : vb;
        int w = snprintf(msg + *at, *at < size ? size - *at : 0,
                         "%s%s %s (checkpoint: %s)", *at ? ", " : "", name,
                         now ? now : "not set", saved ? saved : "not set");
        if (w > 0) *at = *at + (size_t)w < size ? *at + (size_t)w : size;
        n++;
      }
      raspM_free(name);
      raspM_free(va);
      raspM_free(vb);
    }
    p += len + (e != NULL);
  }
  return n;
}

int train_config_diff(const char *saved, const char *now, char *msg,
                      size_t size) {
  size_t at = 0;
  if (size) msg[0] = 0;
  int n = diff_one_way(now, saved, 0, 0, msg, size, &at);
  n += diff_one_way(saved, now, 1, 1, msg, size, &at);
  return n;
}

/* ---- compiled models as initialisation ---------------------------------- */

/* The layout is read through rmodel's JSON parser (raspN_layout_*), never
** by searching its text: a name or a string that happens to contain
** "readout" or "kind" must not be taken for the key. */

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

int train_adapt_compiled(rasp_model *m, const char *name,
                         const rasp_task_opts *task, int encoder, int n_out,
                         int T, float floor, rasp_error *err) {
  rasp_model_config *c = &m->cfg;
  if (!train_is_compiled(m)) {
    raspR_setnoposc(err, RASP_E_USAGE, "'%s': not a compiled model (no BOS token or layout)", name);
    return 0;
  }
  if (!encoder && !c->causal) {
    raspR_setnoposc(err, RASP_E_USAGE, "'%s': the compiled model is not causal; the decoder "
                        "needs a causal program (e.g. readout6_causal)", name);
    return 0;
  }
  /* a causal model's outputs do not depend on later positions, so a longer
  ** one serves a shorter task; a non-causal one only its own length */
  if (c->causal ? c->max_len < T + 1 : c->max_len != T + 1) {
    raspR_setnoposc(err, RASP_E_USAGE, "'%s': compiled for %d positions (BOS included); the "
                        "task needs %s%d (BOS + %d tokens): train with the task "
                        "settings it was compiled for (--D, --M, --V, --answer, "
                        "--no-bos --no-eos)", name, c->max_len,
                   c->causal ? "at least " : "exactly ", T + 1, T);
    return 0;
  }
  int nd = 0, rc = -1, nvoc = 0;
  char **dims = raspN_layout_strings(m, "dims", &nd), **voc = NULL;
  int nv = 0;
  int *vals = train_compiled_out_vals(m, &nv, err);
  if (!vals) goto out;
  if (nd > c->d_model) {
    raspR_setnoposc(err, RASP_E_USAGE, "'%s': the layout names %d dimensions, d_model is %d",
                   name, nd, c->d_model);
    goto out;
  }
  /* every id the task writes must be the compiled model's id for that text */
  const float *te = raspN_data(m, "tok_emb");
  /* dims[k] names residual dimension k; where the list leaves some out,
  ** the tokens unit's "dim" anchors its first "tokens=" entry */
  int k0 = -1, udim = raspN_layout_unit_dim(m, "tokens");
  for (int k = 0; k < nd && k0 < 0; k++)
    if (!strncmp(dims[k], "tokens=", 7)) k0 = k;
  int shift = (k0 >= 0 && udim >= 0) ? udim - k0 : 0;
  /* a numerical tokens unit (many symbols: "tokens=x", "tokens=x^2") holds
  ** the id itself; the layout's vocab then names the ids */
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
    /* a program written for st_names reads 's' and 't' as symbols */
    for (int k = 0; k < nd; k++)
      if (!strcmp(dims[k], "tokens=s") || !strcmp(dims[k], "tokens=t")) {
        raspR_setnoposc(err, RASP_E_USAGE, "'%s': the program reads the symbols 's' and 't'; "
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
  if (!raspN_init(&nm, &nc, err)) {
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
  raspN_free_strings(dims, nd);
  if (voc) raspN_free_strings(voc, nvoc);
  raspM_free(vals);
  return rc == 0;
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
