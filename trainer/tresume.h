/*
** tresume.h -- rasp-train's run directory (--out DIR) and its checkpoint
** policy.
**
** A run locks DIR (DIR/rasp-train.lock, one run per directory; the kernel
** releases it however the run ends), removes what killed runs left there
** and records every option in DIR/config.txt.  It removes only files it
** can prove it made: its writes' temporaries live in DIR/.rasp-train.tmp
** (raspR_atomic_tmpdir), and a checkpoint names the generation it is about
** to write in STEM.pending before writing it (tckpt.h); a file of the
** user's in DIR is never removed, whatever its name.  After every epoch,
** DIR/trialK.ckpt commits a generation of model and optimiser files
** (tckpt.h) with the trial's configuration (train_config_text: every
** option that shapes its trajectory); --resume loads the committed
** generation and refuses one made with other options, naming each.  A
** fresh run numbers its generations after any committed one, so that the
** old checkpoint stays whole until the new one commits.
*/
#ifndef RASP_TRESUME_H
#define RASP_TRESUME_H

#include "tlog.h"
#include "tnet.h"
#include "topts.h"
#include "tckpt.h"

/* Creates o->out (and its parents), locks it for the rest of the process,
** sends its temporaries to o->out/.rasp-train.tmp and removes those a
** killed run left there (saying how many), and writes config.txt.  1, or
** 0 with err. */
int train_dir_open(const train_opts *o, rasp_error *err);

/* Adds to DIR/config.txt (a comment line) what `who` ("arm random",
** "trial 0") ran: m's architecture and size, whether a BOS position comes
** first (prefix >= 0), and extra (NULL or text: its start, its recipe).
** Nothing without --out.  1, or 0 with err. */
int train_config_ran(const char *who, const rasp_model *m, int prefix, const char *extra,
                     rasp_error *err);

/* The checkpoint's configuration: every option that shapes a trial's
** trajectory, one "--name value" line each, in the form the command line
** takes (floats in the shortest form that reads back exactly, so equal
** means equal).  init_fnv: FNV-1a of the --init model's parameters (0: a
** random init). */
void train_config_text(train_log *b, const train_opts *o, uint64_t init_fnv);

/* One trial's checkpoint and log. */
typedef struct train_resume {
  int on;               /* --out given: checkpoints and a log */
  char stem[4096];      /* DIR/trialK */
  char csv_path[4200];  /* DIR/trialK.csv */
  train_log cfg;        /* the trial's configuration */
  train_log csv;        /* its log: the rows of the epochs resumed, or empty */
  train_ckpt_state st;  /* progress (zero, best_val infinite, when fresh) */
} train_resume;

/* Opens trial `trial`'s checkpoint under o->out (nothing without): with
** --resume, a committed checkpoint made with the same options is loaded
** into m and opt (initialised already: its parameters and moments replace
** theirs), and r->st says where it stopped (done: it needs more epochs or
** steps to go on).  init_fnv as for train_config_text.  1, or 0 with err
** (r freed). */
int train_resume_open(train_resume *r, const train_opts *o, int trial,
                      uint64_t init_fnv, rasp_model *m, train_adamw *opt,
                      rasp_error *err);
/* Commits the next generation: m, opt and r->st.  1, or 0 with err. */
int train_resume_save(train_resume *r, const rasp_model *m,
                      const train_adamw *opt, rasp_error *err);
void train_resume_free(train_resume *r);

/* compare's checkpoints (--out): after every evaluation, every arm's
** weights and optimiser state at that step, in one of two slots
** (DIR/arm_NAME.slot0 and .slot1, checkpoints as a trial's), then
** DIR/compare.state naming the step, the slot and each arm's stop: its
** atomic rename commits the save, and the other slot keeps the save
** before, whole, so a run killed at any moment resumes (--resume) from a
** step at which every arm was saved.  The caller keeps ck (zeroed at the
** start) across saves. */
struct train_arm;
typedef struct train_compare_ckpt {
  int saves;
  long gen[TRAIN_MAX_ARMS][2];
  int known[TRAIN_MAX_ARMS][2];
} train_compare_ckpt;
int train_compare_save(train_compare_ckpt *ck, const train_opts *o, struct train_arm *arms,
                       char names[][33], int n, long step, rasp_error *err);
/* With --resume and a saved state in o->out: every arm's weights,
** optimiser state and stop from the committed slot (each refused, naming
** what differs, when saved with other options), *step the step saved;
** else *step 0 and nothing changes.  1, or 0 with err. */
int train_compare_resume(train_compare_ckpt *ck, const train_opts *o, struct train_arm *arms,
                         char names[][33], int n, long *step, rasp_error *err);

#endif
