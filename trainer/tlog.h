/*
** tlog.h -- rasp-train's logs and small text files (trialK.csv,
** compare.csv, compare.gp, config.txt, a checkpoint's configuration): kept
** in memory and written out whole (raspR_write_file: a temporary file
** renamed over the old one) after every row, so that a run killed at any
** moment leaves the previous or the new file, never a torn one.
*/
#ifndef RASP_TLOG_H
#define RASP_TLOG_H

#include <stddef.h>

#include "rerror.h"

typedef struct train_log {
  char *s;
  size_t len, cap;
} train_log;

void train_log_printf(train_log *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Writes the whole text to path, atomically.  1, or 0 with err. */
int train_log_commit(const train_log *b, const char *path, rasp_error *err);
/* Resuming: appends the rows of the CSV log at path up to (and including)
** `upto` in its column `column` (from 0: a trial's epoch is column 1, a
** compare's step column 0), after its header, so that a run killed
** between writing its log and its checkpoint does not repeat a row.
** Returns whether a log was read (1, or 0 when there is none: not a
** failure, a fresh start). */
int train_log_resume(train_log *b, const char *path, int column, long upto);
void train_log_free(train_log *b);

#endif
