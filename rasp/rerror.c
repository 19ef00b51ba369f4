/*
** rerror.c -- sources, positions and error reports.
*/
#include "rerror.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "rmem.h"

rasp_source *raspR_source_new(const char *name, const char *text, size_t len) {
  rasp_source *src = raspM_alloc(sizeof *src);
  src->name = raspM_strdup(name);
  src->text = raspM_strndup(text, len);
  src->len = len;
  return src;
}

rasp_source *raspR_source_file(const char *path, rasp_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    raspR_setnopos(err, "cannot read '%s': %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 4096, len = 0;
  char *buf = raspM_alloc(cap);
  size_t got;
  while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
    len += got;
    if (len == cap) {
      cap *= 2;
      buf = raspM_realloc(buf, cap);
    }
  }
  int bad = ferror(f);
  int saved = errno;
  fclose(f);
  if (bad) {
    raspM_free(buf);
    raspR_setnopos(err, "cannot read '%s': %s", path, strerror(saved));
    return NULL;
  }
  rasp_source *src = raspR_source_new(path, buf, len);
  raspM_free(buf);
  return src;
}

void raspR_source_free(rasp_source *src) {
  if (!src) return;
  raspM_free(src->name);
  raspM_free(src->text);
  raspM_free(src);
}

/* Copies the file name and the line at pos into err. */
static void copy_location(rasp_error *err, rasp_pos pos) {
  err->pos = pos;
  err->file[0] = err->line[0] = '\0';
  const rasp_source *src = pos.src;
  if (!src) return;
  snprintf(err->file, sizeof err->file, "%s", src->name);
  const char *p = src->text, *end = src->text + src->len;
  for (int line = 1; line < pos.line && p < end; p++)
    if (*p == '\n') line++;
  const char *eol = p;
  while (eol < end && *eol != '\n' && *eol != '\r') eol++;
  snprintf(err->line, sizeof err->line, "%.*s", (int)(eol - p), p);
}

void raspR_set(rasp_error *err, rasp_pos pos, const char *fmt, ...) {
  if (!err) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  copy_location(err, pos);
  err->set = 1;
}

void raspR_locate(rasp_error *err, rasp_pos pos) { copy_location(err, pos); }

void raspR_setnopos(rasp_error *err, const char *fmt, ...) {
  if (!err) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  memset(&err->pos, 0, sizeof err->pos);
  err->file[0] = err->line[0] = '\0';
  err->set = 1;
}

void raspR_print(const rasp_error *err, FILE *out) {
  if (!err->pos.src) {
    fprintf(out, "rasp: %s\n", err->msg);
    return;
  }
  fprintf(out, "%s:%d:%d: %s\n", err->file, err->pos.line, err->pos.col, err->msg);
  /* quote the line, tabs kept so that the caret lines up */
  fprintf(out, "    %s\n    ", err->line);
  for (int i = 1; i < err->pos.col && err->line[i - 1]; i++)
    fputc(err->line[i - 1] == '\t' ? '\t' : ' ', out);
  fputs("^\n", out);
}
