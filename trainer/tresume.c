/*
** tresume.c -- the run directory and the checkpoint policy (see
** tresume.h); the checkpoint files themselves are tckpt.c's.
**
** The configuration a checkpoint stores leaves out what only says where to
** stop (--epochs, --max-steps, --stop-loss: a finished run resumes when
** given more) and what does not change what a trial computes (--trials,
** --threads, --eval-every, --out); config.txt records those too.  The
** protocols appear only when not the default, so that checkpoints made
** before they existed still resume.
*/
#include "tresume.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmem.h"
#include "ropts.h"
#include "tarm.h"

/* The shortest text that reads back as f (ropts.h). */
#define ftext(buf, size, f) raspU_float_text((f), (buf), (size))

void train_config_text(train_log *b, const train_opts *o, uint64_t init_fnv) {
  char f1[32], f2[32], f3[32];
  static const char *orders[] = {"edge", "arm"}, *qs[] = {"start", "end"};
  const char *ans = o->task.answer == RASP_ANS_FORWARD   ? "forward"
                    : o->task.answer == RASP_ANS_REVERSE ? "reverse"
                                                         : "lead";
  const char *obj = o->obj == TRAIN_OBJ_TF ? "tf" : o->obj == TRAIN_OBJ_IAR ? "iar" : "nar";
  train_log_printf(b, "--D %d\n--M %d\n--V %d\n--order %s\n--q %s\n--answer %s\n"
                      "--structured %d\n--no-bos %s\n--no-eos %s\n--st-names %s\n",
                   o->task.D, o->task.M, o->task.V, orders[o->task.order == RASP_ORDER_ARM],
                   qs[o->task.q == RASP_Q_END], ans, o->task.structured,
                   o->task.bos ? "no" : "yes", o->task.eos ? "no" : "yes",
                   o->task.st_names ? "yes" : "no");
  /* taken from a compiled --init model (ttask.h), not an option */
  if (o->task.markers != 1) train_log_printf(b, "markers %d\n", o->task.markers);
  train_log_printf(b, "--model %s\n--objective %s\n--layers %d\n--d-model %d\n"
                      "--heads %d\n--d-mlp %d\n--pos %s\n--ln %s\n--act %s\n",
                   o->encoder ? "encoder" : "decoder", obj, o->arch.n_layers,
                   o->arch.d_model, o->arch.n_heads, o->arch.d_mlp,
                   o->arch.pos_embedding ? "learned" : "none",
                   o->arch.layer_norm == RASPN_LN_RMS ? "rms" : o->arch.layer_norm ? "pre" : "none", o->arch.gelu ? "gelu" : "relu");
  train_log_printf(b, "--init %s\n--init-noise %s\n--reinit-layers %s\n", o->init,
                   ftext(f1, sizeof f1, o->init_noise), o->reinit ? o->reinit : "none");
  /* init-weights fingerprints the --init model's contents, which may
  ** change under the same name */
  if (init_fnv) train_log_printf(b, "init-weights %016llx\n", (unsigned long long)init_fnv);
  if (o->init_mix > 0) train_log_printf(b, "--init-mix %s\n", ftext(f1, sizeof f1, o->init_mix));
  if (o->widen)
    train_log_printf(b, "--widen %d\n--widen-scale %s\n", o->widen,
                     ftext(f1, sizeof f1, o->widen_scale));
  if (o->freeze) train_log_printf(b, "--freeze compiled\n");
  if (o->sgd)
    train_log_printf(b, "--optim sgd\n--momentum %s\n", ftext(f1, sizeof f1, o->momentum));
  if (o->lr_rms) train_log_printf(b, "--lr-scale rms\n");
  /* the recipe, when not the default; a decay's length as it runs (a
  ** resume with another --max-steps would follow another schedule) */
  if (o->warmup) train_log_printf(b, "--warmup %ld\n", o->warmup);
  if (o->decay) {
    train_sched sc = train_sched_of(o);
    train_log_printf(b, "--decay %s\n--lr-floor %s\n--decay-steps %ld\n",
                     o->decay == TRAIN_DECAY_COSINE ? "cosine" : "linear",
                     ftext(f1, sizeof f1, o->lr_floor), sc.total);
  }
  if (o->clip > 0) train_log_printf(b, "--clip %s\n", ftext(f1, sizeof f1, o->clip));
  if (o->teacher)
    train_log_printf(b, "--teacher %s\n--teacher-weight %s\n--teacher-until %ld\n", o->teacher,
                     ftext(f1, sizeof f1, o->teacher_weight), o->teacher_until);
  if (o->teacher && o->teacher_attn > 0)
    train_log_printf(b, "--teacher-attn %s\n", ftext(f1, sizeof f1, o->teacher_attn));
  train_log_printf(b, "--lr %s\n--wd %s\n--dropout %s\n--batch %d\n--micro %d\n"
                      "--train %d\n--test %d\n--seed %llu\n--train-seed %llu\n"
                      "--test-seed %llu\n",
                   ftext(f1, sizeof f1, o->lr), ftext(f2, sizeof f2, o->wd),
                   ftext(f3, sizeof f3, o->dropout), o->batch, o->micro,
                   o->ntrain, o->ntest, (unsigned long long)o->seed,
                   (unsigned long long)o->train_seed, (unsigned long long)o->test_seed);
}

/* config.txt as written so far (the run's options, then what each arm or
** trial ran, added as they are set up): rewritten whole at every addition.
** One run per process, so one text. */
static train_log run_config;
static char run_config_path[4200];

/* DIR/config.txt: every option of the run as the parser reads it back
** (main.c's options_text), so that `rasp-train --config DIR/config.txt`
** replays it.  1, or 0 with err. */
static int write_run_config(const train_opts *o, rasp_error *err) {
  train_log_free(&run_config);
  train_log_printf(&run_config,
                   "# rasp-train%s: every option of the run in %s, defaults included, as "
                   "the parser reads them\n# (rasp-train --help says what each means).  "
                   "Replay it: rasp-train --config THIS_FILE --out NEW_DIR\n",
                   o->compare ? " compare" : "", o->out);
  train_log_printf(&run_config, "%s", o->cmdline ? o->cmdline : "");
  snprintf(run_config_path, sizeof run_config_path, "%s/config.txt", o->out);
  return train_log_commit(&run_config, run_config_path, err);
}

int train_config_ran(const char *who, const rasp_model *m, int prefix, const char *extra,
                     rasp_error *err) {
  if (!run_config_path[0]) return 1;
  const rasp_model_config *c = &m->cfg;
  train_log_printf(&run_config,
                   "# %s ran: --layers %d --d-model %d --heads %d --d-mlp %d --ln %s "
                   "--act %s --pos %s%s, %zu parameters%s%s\n",
                   who, c->n_layers, c->d_model, c->n_heads, c->d_mlp,
                   c->layer_norm == RASPN_LN_RMS ? "rms" : c->layer_norm ? "pre" : "none", c->gelu ? "gelu" : "relu",
                   c->pos_embedding ? "learned" : "none",
                   prefix >= 0 ? " (a BOS position first)" : "", m->nparams,
                   extra && *extra ? "; " : "", extra ? extra : "");
  return train_log_commit(&run_config, run_config_path, err);
}

int train_dir_open(const train_opts *o, rasp_error *err) {
  if (!raspR_mkdirs(o->out, err)) { /* parents too, as mkdir -p */
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    raspR_setnopos(err, "--out: %s", msg);
    return 0;
  }
  /* one run per directory: the lock (released by the kernel however the
  ** run ends; its descriptor stays open until exit) makes it safe to
  ** remove what killed runs left */
  char lp[4200];
  snprintf(lp, sizeof lp, "%s/rasp-train.lock", o->out);
  int lk = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (lk < 0 || flock(lk, LOCK_EX | LOCK_NB)) {
    int e = errno;
    raspR_setnopos(err, "cannot lock '%s': %s", lp,
                   e == EWOULDBLOCK ? "another rasp-train is using the directory"
                                    : strerror(e));
    if (lk >= 0) close(lk);
    return 0;
  }
  /* the run's temporaries go into a directory of its own, so that what a
  ** killed run left is told from the user's files by where it is */
  char td[4200];
  snprintf(td, sizeof td, "%s/.rasp-train.tmp", o->out);
  struct stat tst;
  if ((mkdir(td, 0700) != 0 && (errno != EEXIST || lstat(td, &tst) || !S_ISDIR(tst.st_mode))) ||
      !raspR_atomic_tmpdir(o->out, td, err)) {
    if (!err->set) raspR_setnoposc(err, RASP_E_WRITE, "cannot create directory '%s': %s", td,
                                   strerror(errno));
    close(lk);
    return 0;
  }
  int n = train_clean_tmp(td);
  if (n)
    fprintf(stderr, "rasp-train: removed %d temporary file%s left in '%s' "
                    "by a killed run\n", n, n > 1 ? "s" : "", td);
  return write_run_config(o, err);
}

/* The checkpoint's contents into the freshly set-up m and opt, if it was
** made with the same options.  1, or 0 with err. */
static int load_into(train_resume *r, rasp_model *m, train_adamw *opt,
                     rasp_error *err) {
  rasp_model m2;
  train_adamw o2;
  char *saved = NULL;
  if (!train_ckpt_load(r->stem, &m2, &o2, &r->st, &saved, err)) return 0;
  char diff[sizeof err->msg - 200];
  int nd = train_config_diff(saved, r->cfg.s, diff, sizeof diff);
  int bad = nd || m2.nparams != m->nparams;
  if (bad)
    raspR_setnopos(err, "'%s.ckpt': the checkpoint was made with other "
                        "options: %s; resume with the same options, or "
                        "train into another --out", r->stem,
                   nd ? diff : "(a model of another size)");
  else {
    memcpy(m->params, m2.params, m2.nparams * sizeof(float));
    memcpy(opt->m, o2.m, m2.nparams * sizeof(float));
    memcpy(opt->v, o2.v, m2.nparams * sizeof(float));
    opt->step = o2.step;
  }
  raspM_free(saved);
  raspN_free(&m2);
  train_adamw_free(&o2);
  return !bad;
}

int train_resume_open(train_resume *r, const train_opts *o, int trial,
                      uint64_t init_fnv, rasp_model *m, train_adamw *opt,
                      rasp_error *err) {
  memset(r, 0, sizeof *r);
  r->st.best_val = INFINITY;
  if (!o->out) return 1;
  r->on = 1;
  snprintf(r->stem, sizeof r->stem, "%s/trial%d", o->out, trial);
  snprintf(r->csv_path, sizeof r->csv_path, "%s/trial%d.csv", o->out, trial);
  train_config_text(&r->cfg, o, init_fnv);
  /* generations written but never committed (a kill between the two) */
  train_ckpt_clean(r->stem);
  long gen = train_ckpt_generation(r->stem, err);
  if (gen < 0 && o->resume) goto fail;
  if (gen < 0) { /* a fresh run replaces what it cannot read: say so, then go on */
    fprintf(stderr, "rasp-train: %s; trial %d starts afresh\n", err->msg, trial);
    memset(err, 0, sizeof *err);
  }
  /* a fresh run numbers its generations after any committed one */
  r->st.generation = gen > 0 ? gen : 0;
  if (o->resume && gen > 0) {
    if (!load_into(r, m, opt, err)) goto fail;
    /* a finished run resumes when given more epochs or steps */
    r->st.done = r->st.best_val < o->stop_loss || r->st.epoch >= o->epochs ||
                 (o->max_steps && r->st.step >= o->max_steps);
    fprintf(stderr, "trial %d: resumed after epoch %d (step %ld)\n", trial,
            r->st.epoch, r->st.step);
  }
  if (r->st.epoch) train_log_resume(&r->csv, r->csv_path, 1, r->st.epoch);
  return 1;
fail:
  train_resume_free(r);
  return 0;
}

int train_resume_save(train_resume *r, const rasp_model *m,
                      const train_adamw *opt, rasp_error *err) {
  return train_ckpt_save(r->stem, m, opt, &r->st, r->cfg.s, err);
}

void train_resume_free(train_resume *r) {
  train_log_free(&r->cfg);
  train_log_free(&r->csv);
}

/* ---- compare's checkpoints ---------------------------------------------- */

/* Every arm's stem in slot `slot`: DIR/arm_NAME.slotS. */
static void slot_stem(char *buf, size_t size, const char *dir, const char *name, int slot) {
  snprintf(buf, size, "%s/arm_%s.slot%d", dir, name, slot);
}

static const char *const diverged_names[] = {"loss", "gradient", "weights"};

int train_compare_save(train_compare_ckpt *ck, const train_opts *o, train_arm *arms,
                       char names[][33], int n, long step, rasp_error *err) {
  if (!o->out) return 1;
  int slot = ck->saves % 2;
  char stem[4300];
  train_log state = {0};
  train_log_printf(&state, "rasp-train compare state 1\nstep %ld\nslot %d\narms %d\n", step,
                   slot, n);
  for (int k = 0; k < n; k++) {
    slot_stem(stem, sizeof stem, o->out, names[k], slot);
    if (!ck->known[k][slot]) { /* a generation left by an earlier run: numbered after */
      long g = train_ckpt_generation(stem, err);
      memset(err, 0, sizeof *err);
      ck->gen[k][slot] = g > 0 ? g : 0;
      ck->known[k][slot] = 1;
    }
    train_ckpt_state st = {.step = step, .best_val = INFINITY, .generation = ck->gen[k][slot]};
    train_log cfg = {0};
    train_config_text(&cfg, arms[k].o, arms[k].init_fnv);
    int ok = train_ckpt_save(stem, &arms[k].m, &arms[k].opt, &st, cfg.s ? cfg.s : "", err);
    train_log_free(&cfg);
    if (!ok) {
      train_log_free(&state);
      return 0;
    }
    ck->gen[k][slot] = st.generation;
    train_log_printf(&state, "arm %s %ld %s\n", names[k], arms[k].stopped,
                     arms[k].diverged ? arms[k].diverged : "-");
  }
  /* the state names the slot whose every arm is written: its rename
  ** commits the save (the other slot holds the one before, whole) */
  train_log_printf(&state, "end\n");
  char path[4300];
  snprintf(path, sizeof path, "%s/compare.state", o->out);
  int ok = train_log_commit(&state, path, err);
  train_log_free(&state);
  if (ok) ck->saves++;
  return ok;
}

/* Line `want` ("step", "slot", "arms") of the state as a number: 1, or 0. */
static int state_num(const char *text, const char *want, long *v) {
  char key[16];
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (sscanf(l, "%15s %ld", key, v) == 2 && !strcmp(key, want)) return 1;
  return 0;
}

int train_compare_resume(train_compare_ckpt *ck, const train_opts *o, train_arm *arms,
                         char names[][33], int n, long *step, rasp_error *err) {
  *step = 0;
  if (!o->out || !o->resume) return 1;
  char path[4300], stem[4300];
  snprintf(path, sizeof path, "%s/compare.state", o->out);
  FILE *f = fopen(path, "r");
  if (!f) return 1; /* nothing saved yet: a fresh start */
  char text[8192];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = '\0';
  long st_step, slot, narms;
  if (strncmp(text, "rasp-train compare state 1\n", 27) || !strstr(text, "\nend\n") ||
      !state_num(text, "step", &st_step) || !state_num(text, "slot", &slot) ||
      !state_num(text, "arms", &narms) || slot < 0 || slot > 1 || st_step < 0) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': not a compare state file (or a damaged one)",
                    path);
    return 0;
  }
  if (narms != n) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': saved %ld arms, the command line has %d; "
                    "resume with the same --arm options", path, narms, n);
    return 0;
  }
  const char *l = strstr(text, "\narm ");
  for (int k = 0; k < n; k++) {
    char name[64], why[16];
    long stopped;
    if (!l || sscanf(l + 1, "arm %63s %ld %15s", name, &stopped, why) != 3 ||
        strcmp(name, names[k])) {
      raspR_setnoposc(err, RASP_E_FORMAT, "'%s': its arm %d is not '%s'; resume with the "
                      "same --arm options", path, k + 1, names[k]);
      return 0;
    }
    l = strstr(l + 1, "\narm ");
    slot_stem(stem, sizeof stem, o->out, names[k], (int)slot);
    rasp_model m2;
    train_adamw o2;
    train_ckpt_state cs;
    char *saved = NULL;
    if (!train_ckpt_load(stem, &m2, &o2, &cs, &saved, err)) return 0;
    train_log now = {0};
    train_config_text(&now, arms[k].o, arms[k].init_fnv);
    char diff[sizeof err->msg - 300];
    int nd = train_config_diff(saved, now.s ? now.s : "", diff, sizeof diff);
    int bad = nd || m2.nparams != arms[k].m.nparams || cs.step != st_step;
    if (bad)
      raspR_setnoposc(err, RASP_E_FORMAT, "'%s.ckpt': arm %s was saved with other options: "
                      "%s; resume with the same options, or compare into another --out",
                      stem, names[k],
                      nd ? diff : cs.step != st_step ? "(another step)" : "(a model of another size)");
    else {
      memcpy(arms[k].m.params, m2.params, m2.nparams * sizeof(float));
      memcpy(arms[k].opt.m, o2.m, m2.nparams * sizeof(float));
      memcpy(arms[k].opt.v, o2.v, m2.nparams * sizeof(float));
      arms[k].opt.step = o2.step;
      arms[k].stopped = stopped;
      for (int d = 0; d < 3; d++)
        if (!strcmp(why, diverged_names[d])) arms[k].diverged = diverged_names[d];
      ck->gen[k][slot] = cs.generation;
      ck->known[k][slot] = 1;
    }
    train_log_free(&now);
    raspM_free(saved);
    raspN_free(&m2);
    train_adamw_free(&o2);
    if (bad) return 0;
  }
  ck->saves = (int)slot + 1; /* the next save goes to the other slot */
  *step = st_step;
  return 1;
}
