/*
** rerror.h -- sources, positions and error reports.
**
** Every diagnostic in librasp is a rasp_error: a position in a source (or
** none, for errors about options and files) and a message.  raspR_print
** renders it the way compilers do:
**
**     prog.rasp:3:9: unknown name 'fo'
**         y = fo(x)
**             ^
**
** Sources are owned by whoever created them (usually the interpreter
** context, which keeps every file it loaded so that errors raised later,
** while evaluating, can still quote the line).
*/
#ifndef RASP_RERROR_H
#define RASP_RERROR_H

#include <stddef.h>
#include <stdio.h>

typedef struct rasp_source {
  char *name; /* file name, or "<stdin>", "<repl>", ... */
  char *text; /* NUL-terminated contents */
  size_t len;
  int library; /* part of the stdlib: messages point at the caller instead */
} rasp_source;

typedef struct rasp_pos {
  const rasp_source *src; /* NULL: no source location */
  int line, col;          /* 1-based; col counts bytes */
} rasp_pos;

/* An error carries copies of the file name and of the source line, so it
** can be printed after the context that owned the source is gone (pos.src
** is then only a flag saying that the error has a location). */
typedef struct rasp_error {
  int set;
  rasp_pos pos;
  char msg[1024];
  char file[256];
  char line[512];
} rasp_error;

rasp_source *raspR_source_new(const char *name, const char *text, size_t len);
/* Reads a whole file; on failure sets err ("cannot read 'x': reason"). */
rasp_source *raspR_source_file(const char *path, rasp_error *err);
void raspR_source_free(rasp_source *src);

void raspR_set(rasp_error *err, rasp_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, without a position (bad option, unreadable file). */
void raspR_setnopos(rasp_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Sets err's position (and its copies of the file name and line). */
void raspR_locate(rasp_error *err, rasp_pos pos);

/* "file:line:col: message", then the source line and a caret. */
void raspR_print(const rasp_error *err, FILE *out);

#endif
