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

/* ---- files written atomically ------------------------------------------
** Every file the tools write (samples, models, checkpoints, logs, plots) is
** written to a temporary file in the same directory, flushed to disk and
** renamed over the target, so that a killed run leaves the old file or the
** new one, never half of one.  The temporary is made by mkstemp (a fresh
** random name, O_CREAT|O_EXCL: a link planted in the directory is never
** followed) and gets the target's permissions when it exists, else 0666
** less the umask. */
typedef struct rasp_afile {
  FILE *f;    /* write here between open and commit */
  char *tmp;  /* the temporary file */
  char *path; /* the target */
} rasp_afile;

/* 0, or -1 with err ("cannot write 'path': reason"). */
int raspR_atomic_open(rasp_afile *af, const char *path, rasp_error *err);
/* Flushes, syncs and renames; on failure removes the temporary file.
** Either way af is released.  0, or -1 with err. */
int raspR_atomic_commit(rasp_afile *af, rasp_error *err);
void raspR_atomic_abort(rasp_afile *af);
/* The whole of data as path, atomically.  0, or -1 with err. */
int raspR_write_file(const char *path, const void *data, size_t len, rasp_error *err);
/* Makes directory dir and any missing parents (mkdir -p; 0777 less the
** umask); one that exists is fine.  0, or -1 with err ("cannot create
** directory 'a/b': reason", "'a' is not a directory"). */
int raspR_mkdirs(const char *dir, rasp_error *err);
/* The same for the directory part of path (nothing when it has none). */
int raspR_mkdirs_for(const char *path, rasp_error *err);

/* The command-line convention of every front end: argv[from..] with each
** --opt=VALUE split into --opt VALUE (a fresh vector of *argcp strings
** pointing into argv, whose '=' are overwritten; free it with free()).
** Returns it, or NULL out of memory; *version is 1 when --version was
** among argv[from..] as an option. */
char **raspR_split_options(int *argcp, char **argv, int from, int *version);

/* ---- other programs ------------------------------------------------------
** The tools the commands hand work to (Graphviz's dot, gnuplot) run from an
** argument vector through posix_spawnp, never through a shell: a file name
** stays one argument whatever characters it holds.  in_fd and out_fd (-1:
** inherited) become the child's standard input and output.  Waits for the
** child.  0, or -1 with err ("cannot run 'dot': not found in PATH", "'dot'
** failed with exit status 1", "'dot' was killed by signal 11"); errno is
** then ENOENT exactly when the program was not found. */
int raspR_spawn(const char *const *argv, int in_fd, int out_fd, rasp_error *err);

/* "file:line:col: message", then the source line and a caret. */
void raspR_print(const rasp_error *err, FILE *out);

#endif
