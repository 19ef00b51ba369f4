/*
** ttask.h -- rasp-train's task held against the one an --init model was
** compiled for.
**
** `rasp compile` records in STEM.json the settings that place every token
** of a path-star sequence (layout.task, rmodel.h).  A compiled model
** computes its program only on that layout: on another one it reads the
** wrong positions and is wrong from step 0, silently.  So before any data
** is drawn, rasp-train reads STEM.json alone and, for each setting that
** differs from its own options, says which option fixes it and exits 2
** (all but "model": a decoder given as an encoder, or the reverse, is
** refused by the loader, which says how to compile it);
** the edge markers, for which it has no option, it takes from the model
** (its generator writes either layout).  rasp-train's own checkpoints
** record layout.task too (tarm.c), so a trained model given to --init is
** held against its task the same way; models without layout.task
** (compiled or trained before it was recorded) are not checked.
*/
#ifndef RASP_TTASK_H
#define RASP_TTASK_H

#include "topts.h"

/* o against --init o->init (not "random"): 0 when they agree (o->task.markers
** then the model's), else 2 after a message per difference.  A STEM that
** cannot be read is left to the loader, which names the problem (0). */
int train_task_match(train_opts *o);

#endif
