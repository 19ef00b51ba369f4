/*
** tlog.c -- logs written whole and atomically (see tlog.h).  A run's logs
** are small (a row per evaluation), so rewriting them whole costs little
** and buys atomicity without a journal.
*/
#include "tlog.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmem.h"

void train_log_printf(train_log *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (b->len + (size_t)n + 1 > b->cap) {
    while (b->len + (size_t)n + 1 > b->cap) b->cap = b->cap ? b->cap * 2 : 4096;
    b->s = raspM_realloc(b->s, b->cap);
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

int train_log_commit(const train_log *b, const char *path, rasp_error *err) {
  return raspR_write_file(path, b->s ? b->s : "", b->len, err);
}

int train_log_resume(train_log *b, const char *path, int column, long upto) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[8192];
  int first = 1;
  while (fgets(line, sizeof line, f)) {
    size_t n = strlen(line);
    if (!n || line[n - 1] != '\n') break; /* (not possible: written whole) */
    const char *c = line;
    for (int k = 0; k < column && c; k++) c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL;
    if (first || (c && atol(c) <= upto)) train_log_printf(b, "%s", line);
    first = 0;
  }
  fclose(f);
  return b->len > 0;
}

void train_log_free(train_log *b) {
  raspM_free(b->s);
  memset(b, 0, sizeof *b);
}
