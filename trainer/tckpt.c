/*
** tckpt.c -- trainer checkpoints (see tckpt.h for the files and the
** guarantees), the run directory's housekeeping, and the comparison of a
** run's configuration with a checkpoint's.
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
#include "tckpt.h"

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

/* Values train_config_text (tresume.c) once wrote under another name: a
** checkpoint saved by an older rasp-train resumes under a newer one that
** spells the same option value differently.  Add a row whenever a
** spelling there changes. */
static const struct {
  const char *name, *old, *now;
} renamed[] = {{"--answer", "fwd", "forward"}, {"--answer", "rev", "reverse"}};

/* value as train_config_text spells it today (v itself, or a row's now) */
static const char *config_spelling(const char *name, const char *v) {
  for (size_t i = 0; v && i < sizeof renamed / sizeof renamed[0]; i++)
    if (!strcmp(name, renamed[i].name) && !strcmp(v, renamed[i].old)) return renamed[i].now;
  return v;
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
      if (!vb || (!only_missing &&
                  strcmp(config_spelling(name, va), config_spelling(name, vb)))) {
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
