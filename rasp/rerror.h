/*
** rerror.h -- sources, positions and error reports.
**
** Every diagnostic in librasp is a rasp_error: a position in a source (or
** none, for errors about options and files), a code saying what kind of
** error it is, and a message.  raspR_print renders it the way compilers do:
**
**     prog.rasp:3:9: unknown name 'fo'
**         y = fo(x)
**             ^
**
** The message is for people; programs decide on the code (rasp_errcode),
** never on the text: which exit status a command ends with
** (raspR_exit_status), whether a file was a plain program (RASP_E_NO_TASK),
** which unknown name a hint is about (RASP_E_NAME and err->subject).
**
** The return convention of every librasp function that can fail (all
** headers, rasp-train's too):
**   - int: 1 on success, 0 on failure with err set;
**   - a count or a size (int, long): >= 0, or -1 on failure with err set;
**   - a pointer: NULL on failure with err set.
** Functions that answer a question (a verdict, a comparison, a truth) say
** what they return where they are declared.
**
** Sources are owned by whoever created them (usually the interpreter
** context, which keeps every file it loaded so that errors raised later,
** while evaluating, can still quote the line).
*/
#ifndef RASP_RERROR_H
#define RASP_RERROR_H

#include <stdarg.h>
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

/* What kind of error, for callers to act on (the X-macro keeps the names,
** the enum and raspR_code_name in step).  RASP_E_RUNTIME is what raspR_set
** and raspR_setnopos give; the places raising the others say so.  A kind
** is here because a caller or a test tells it apart: add one the same way. */
#define RASP_ERRCODES(X)                                                        \
  X(NONE, "no error")                                                           \
  X(RUNTIME, "error in a running program") /* the default */                    \
  X(SYNTAX, "syntax error")                /* lexer, parser */                  \
  X(NAME, "unknown name")                  /* subject: the name */              \
  X(TYPE, "wrong kind of value")                                                \
  X(LIMIT, "limit exceeded")               /* rasp_limits, memory, time, caps */ \
  X(INTERRUPTED, "interrupted")            /* rasp_interrupt */                 \
  X(ACCESS, "access refused")              /* include() outside rasp_access */  \
  X(FFI_REFUSED, "cfunc() refused")        /* allow_ffi is off */               \
  X(USAGE, "bad usage")                    /* an option or argument value */    \
  X(NO_TASK, "no task settings")           /* a plain program, not path-star */ \
  X(TASK, "bad task settings")             /* the program's task dict */        \
  X(READ, "cannot read a file")                                                 \
  X(WRITE, "cannot write a file")                                               \
  X(FORMAT, "malformed file")              /* model, checkpoint, config */      \
  X(SPAWN, "other program failed")         /* raspR_spawn */                    \
  X(INEXACT, "cannot be compiled exactly") /* rasp compile, at the node */      \
  X(IMPURE, "function is not pure")        /* a map or check() changed state */

typedef enum rasp_errcode {
#define RASP_ERRCODE_ENUM(name, text) RASP_E_##name,
  RASP_ERRCODES(RASP_ERRCODE_ENUM)
#undef RASP_ERRCODE_ENUM
  RASP_E_COUNT
} rasp_errcode;

/* An error carries copies of the file name and of the source line, so it
** can be printed after the context that owned the source is gone (pos.src
** is then only a flag saying that the error has a location). */
/* Where inside the stdlib an error reported at the caller's line arose:
** the library line and the library function the caller called (fn ""
** when none is set: file[0] is then '\0' too). */
typedef struct rasp_frame {
  char fn[64];
  char file[128];
  int line, col;
  char text[512];
} rasp_frame;

typedef struct rasp_error {
  int set;
  rasp_errcode code; /* RASP_E_NONE until set */
  char subject[128]; /* what the error is about, where the code has one
                        (RASP_E_NAME: the name); else "" */
  rasp_pos pos;
  char msg[1024];
  char file[256];
  char line[512];
  rasp_frame inner; /* set by raspR_locate_inner; cleared by every setter */
} rasp_error;

rasp_source *raspR_source_new(const char *name, const char *text, size_t len);
/* Reads a whole file; on failure NULL with err (RASP_E_READ: "cannot read
** 'x': reason").  A file that is not a regular one (a FIFO, a device) must
** reach its end within RASP_READ_WAIT seconds (default 60) and 64 MiB. */
rasp_source *raspR_source_file(const char *path, rasp_error *err);
/* fopen(path, "rb") of a regular file only, opened without blocking (a
** FIFO or a device is refused, RASP_E_ACCESS); NULL with err and errno
** (ENOENT when there is no such file). */
FILE *raspR_fopen_regular(const char *path, rasp_error *err);
/* Opens path once and reads what was opened: a regular file (else
** RASP_E_ACCESS "'x' is not a regular file": a FIFO or a device is refused
** without blocking) of at most max_bytes (0: any; else RASP_E_LIMIT), its
** real path, as the kernel names the open file, into real (real_size
** bytes), so a caller checks the file it read and not a name that may
** since point elsewhere.  NULL with err (RASP_E_READ) on failure. */
rasp_source *raspR_source_open(const char *path, size_t max_bytes, char *real, size_t real_size,
                               rasp_error *err);
void raspR_source_free(rasp_source *src);

/* Sets err (code RASP_E_RUNTIME, no subject); err may be NULL. */
void raspR_set(rasp_error *err, rasp_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, without a position (bad option, unreadable file). */
void raspR_setnopos(rasp_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same two with a code. */
void raspR_setc(rasp_error *err, rasp_errcode code, rasp_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void raspR_setnoposc(rasp_error *err, rasp_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* raspR_setc with a va_list. */
void raspR_vsetc(rasp_error *err, rasp_errcode code, rasp_pos pos, const char *fmt, va_list ap);
/* Sets err's subject (copied, cut to fit). */
void raspR_subject(rasp_error *err, const char *subject);

/* "unknown name", ... ("?" for a value outside the enum). */
const char *raspR_code_name(rasp_errcode code);
/* The exit status a command ends with after err: 2 for bad usage
** (RASP_E_USAGE: an option or an argument; RASP_E_READ, RASP_E_WRITE,
** RASP_E_FORMAT: a file that cannot be read or written, or is not what it
** should be; RASP_E_NO_TASK, RASP_E_TASK: a
** program without the task settings the command needs, or with wrong
** ones), 1 for every other error (the program failed), 0 when err is not
** set.  Errors inside a program (include() of a missing file, say) are
** RASP_E_RUNTIME or more specific, so they end with 1. */
int raspR_exit_status(const rasp_error *err);

/* Sets err's position (and its copies of the file name and line); clears
** its inner frame. */
void raspR_locate(rasp_error *err, rasp_pos pos);
/* Records, under an error located at the caller's line, the stdlib line
** where it arose (inner, in a library source) and the library function the
** caller called (fn): raspR_print shows it as a short traceback. */
void raspR_locate_inner(rasp_error *err, rasp_pos inner, const char *fn);

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

/* 1, or 0 with err (RASP_E_WRITE: "cannot write 'path': reason"). */
int raspR_atomic_open(rasp_afile *af, const char *path, rasp_error *err);
/* Flushes, syncs and renames; on failure removes the temporary file.
** Either way af is released.  1, or 0 with err (RASP_E_WRITE). */
int raspR_atomic_commit(rasp_afile *af, rasp_error *err);
void raspR_atomic_abort(rasp_afile *af);
/* From now on, the temporaries of files written into directory dir (the
** same directory however its path is spelled) are made in tmpdir instead,
** which must be on dir's file system (a subdirectory): a program that
** cleans up after killed runs then removes files from tmpdir, its own,
** and never a file of the user's that merely looks like a temporary.
** dir NULL ends the redirect.  Process-wide (rasp-train's --out).  1, or 0
** with err (RASP_E_WRITE) when dir is not a directory. */
int raspR_atomic_tmpdir(const char *dir, const char *tmpdir, rasp_error *err);
/* The whole of data as path, atomically.  1, or 0 with err (RASP_E_WRITE). */
int raspR_write_file(const char *path, const void *data, size_t len, rasp_error *err);
/* Makes directory dir and any missing parents (mkdir -p; 0777 less the
** umask); one that exists is fine.  1, or 0 with err (RASP_E_WRITE: "cannot create
** directory 'a/b': reason", "'a' is not a directory"). */
int raspR_mkdirs(const char *dir, rasp_error *err);
/* The same for the directory part of path (nothing when it has none). */
int raspR_mkdirs_for(const char *path, rasp_error *err);

/* ---- other programs ------------------------------------------------------
** The tools the commands hand work to (Graphviz's dot, gnuplot) run from an
** argument vector through posix_spawnp, never through a shell: a file name
** stays one argument whatever characters it holds.  in_fd and out_fd (-1:
** inherited) become the child's standard input and output.  Waits for the
** child.  1, or 0 with err (RASP_E_SPAWN: "cannot run 'dot': not found in
** PATH", "'dot' failed with exit status 1", "'dot' was killed by signal
** 11"); errno is then ENOENT exactly when the program was not found. */
int raspR_spawn(const char *const *argv, int in_fd, int out_fd, rasp_error *err);

/* "file:line:col: message", then the source line and a caret; an inner
** frame follows as "stdlib/core.rasp:L:C: in FN, called above" with its
** line and caret. */
void raspR_print(const rasp_error *err, FILE *out);

/* Assertions at the invariants the file essays state (the IR's topological
** order, the heap's allocation order, the verifier's disjoint ranges):
** checked in test builds (configure --enable-sanitizers, --enable-coverage
** or --enable-assertions define RASP_CHECKED), compiled out of release
** builds.  A failure is a bug, not bad input: it names the invariant and
** its place and aborts. */
#ifdef RASP_CHECKED
#define RASP_ASSERT(cond, what) ((cond) ? (void)0 : raspR_assert_failed((what), __FILE__, __LINE__))
#else
#define RASP_ASSERT(cond, what) ((void)sizeof(cond))
#endif
_Noreturn void raspR_assert_failed(const char *what, const char *file, int line);

#endif
