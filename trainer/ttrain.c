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
