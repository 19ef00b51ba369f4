/*
** rmodel_task.h -- the task of a compiled path-star model: where the model
** format (rmodel.h, which knows no task) meets the path-star task
** (rtask.h).
**
** `rasp compile` records in the layout, as layout.task (an object of
** settings, rmodel.h), the settings of the task that define where every
** token of a sequence sits: D, M, V, order, q, answer, bos, eos, markers,
** st_names and model ("encoder" for --encoder, else "decoder").  A model
** only computes its program on sequences of that layout, so rasp-train
** --init and `rasp apply --program` compare their own settings with these
** and refuse a difference.  Files written before layout.task existed have
** none, and nothing is compared.
*/
#ifndef RASP_RMODEL_TASK_H
#define RASP_RMODEL_TASK_H

#include "rmodel.h"
#include "rtask.h"

#define RASPN_TASK_NKEYS 11
/* Adds layout.task for o (encoder: 1 for --encoder) to m's layout; 1, or 0
** when m has no layout object to add it to. */
int raspN_layout_set_task(rasp_model *m, const rasp_task_opts *o, int encoder);
/* Compares layout.task with o (and encoder, unless it is -1): -1 when the
** layout records no task, else the number of settings that differ, each
** described in d[0..] (room for RASPN_TASK_NKEYS). */
int raspN_layout_task_diff(const rasp_model *m, const rasp_task_opts *o, int encoder,
                           raspN_task_diff *d);

#endif
