/*
** rerror.c -- sources, positions and error reports (their codes and the
** one mapping of codes to exit statuses), and the two ways the tools touch
** the outside world: files written atomically and other programs run
** without a shell (see rerror.h).
*/
#include "rerror.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rmem.h"

_Noreturn void raspR_assert_failed(const char *what, const char *file, int line) {
  fprintf(stderr, "rasp: internal error: %s:%d: invariant broken: %s\n", file, line, what);
  abort();
}

rasp_source *raspR_source_new(const char *name, const char *text, size_t len) {
  rasp_source *src = raspM_alloc(sizeof *src);
  src->name = raspM_strdup(name);
  src->text = raspM_strndup(text, len);
  src->len = len;
  return src;
}

/* The bounds on reading a file that is not a regular one (a FIFO, a
** device, a socket): it may send at most RASP_SOURCE_MAX bytes and must
** reach its end within the wait (RASP_READ_WAIT seconds in the
** environment, default 60), so a FIFO whose writer never writes or closes,
** or /dev/zero, ends in an error rather than a hang or an unbounded
** allocation.  Regular files are read whole. */
#define RASP_SOURCE_MAX ((size_t)64 << 20)

static int read_wait_ms(void) {
  const char *w = getenv("RASP_READ_WAIT");
  long s = w && *w ? strtol(w, NULL, 10) : 60;
  return s > 0 && s < 86400 ? (int)(s * 1000) : 60000;
}

/* All of fd (a non-regular file, non-blocking) into *buf within the
** bounds above: its length, or -1 with why set. */
static long read_stream(int fd, char **buf, size_t *cap, const char **why) {
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int wait_ms = read_wait_ms();
  size_t len = 0;
  for (;;) {
    if (len == *cap) {
      if (*cap >= RASP_SOURCE_MAX) {
        *why = "it sent more than 64 MiB (a device or a stream without end?)";
        return -1;
      }
      *cap *= 2;
      *buf = raspM_realloc(*buf, *cap);
    }
    ssize_t got = read(fd, *buf + len, *cap - len);
    if (got > 0) {
      len += (size_t)got;
      continue;
    }
    if (got == 0) return (long)len;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      *why = strerror(errno);
      return -1;
    }
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long spent = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
    struct pollfd p = {fd, POLLIN, 0};
    if (spent >= wait_ms || poll(&p, 1, (int)(wait_ms - spent)) == 0) {
      *why = "it sent no end within the wait (RASP_READ_WAIT seconds, default 60): a FIFO "
             "whose writer never closes it?";
      return -1;
    }
  }
}

/* path opened for reading without waiting (O_NONBLOCK: a FIFO does not
** wait for a writer) and *st its fstat: the descriptor, or -1 with err and
** errno (ENOENT when there is no such file). */
static int open_nonblocking(const char *path, struct stat *st, rasp_error *err) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 || fstat(fd, st) != 0) {
    int saved = errno;
    if (fd >= 0) close(fd);
    raspR_setnoposc(err, RASP_E_READ, "cannot read '%s': %s", path, strerror(saved));
    errno = saved;
    return -1;
  }
  return fd;
}

rasp_source *raspR_source_file(const char *path, rasp_error *err) {
  struct stat st;
  int fd = open_nonblocking(path, &st, err);
  if (fd < 0) return NULL;
  size_t cap = 4096;
  char *buf = raspM_alloc(cap);
  const char *why = NULL;
  long len;
  if (S_ISREG(st.st_mode)) {
    size_t n = 0;
    ssize_t got;
    while ((got = read(fd, buf + n, cap - n)) > 0 || (got < 0 && errno == EINTR)) {
      if (got > 0) n += (size_t)got;
      if (n == cap) buf = raspM_realloc(buf, cap *= 2);
    }
    len = got < 0 ? -1 : (long)n;
    if (got < 0) why = strerror(errno);
  } else {
    len = read_stream(fd, &buf, &cap, &why);
  }
  close(fd);
  if (len < 0) {
    raspM_free(buf);
    raspR_setnoposc(err, RASP_E_READ, "cannot read '%s': %s", path, why);
    return NULL;
  }
  rasp_source *src = raspR_source_new(path, buf, (size_t)len);
  raspM_free(buf);
  return src;
}

FILE *raspR_fopen_regular(const char *path, rasp_error *err) {
  struct stat st;
  int fd = open_nonblocking(path, &st, err);
  if (fd < 0) return NULL;
  FILE *f = NULL;
  if (!S_ISREG(st.st_mode) || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0 ||
      !(f = fdopen(fd, "rb"))) {
    close(fd);
    raspR_setnoposc(err, RASP_E_ACCESS, "'%s' is not a regular file", path);
    errno = EINVAL;
    return NULL;
  }
  return f;
}

rasp_source *raspR_source_open(const char *path, size_t max_bytes, char *real, size_t real_size,
                               rasp_error *err) {
  /* a FIFO or a device opens at once, and is refused below */
  struct stat st;
  int fd = open_nonblocking(path, &st, err);
  if (fd < 0) return NULL;
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    raspR_setnoposc(err, RASP_E_ACCESS, "'%s' is not a regular file", path);
    return NULL;
  }
  if (max_bytes && (uint64_t)st.st_size > max_bytes) {
    close(fd);
    raspR_setnoposc(err, RASP_E_LIMIT, "'%s' is %lld bytes, more than the %zu a program may be",
                    path, (long long)st.st_size, max_bytes);
    return NULL;
  }
  /* what was opened, by the descriptor: no second lookup by name */
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, real, real_size - 1);
  if (n <= 0 || (size_t)n >= real_size - 1) {
    close(fd);
    raspR_setnoposc(err, RASP_E_READ, "cannot read '%s': cannot tell which file was opened", path);
    return NULL;
  }
  real[n] = '\0';
  size_t cap = (size_t)st.st_size + 1, len = 0;
  char *buf = raspM_alloc(cap + 1);
  ssize_t got = 0;
  while (len < cap && (got = read(fd, buf + len, cap - len)) > 0) len += (size_t)got;
  int bad = got < 0 || len > (size_t)st.st_size; /* grew while read: refused */
  int saved = errno;
  close(fd);
  if (bad) {
    raspM_free(buf);
    raspR_setnoposc(err, RASP_E_READ, "cannot read '%s': %s", path,
                    got < 0 ? strerror(saved) : "it changed while it was read");
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
static void copy_line(char *out, size_t size, rasp_pos pos) {
  const rasp_source *src = pos.src;
  const char *p = src->text, *end = src->text + src->len;
  for (int line = 1; line < pos.line && p < end; p++)
    if (*p == '\n') line++;
  const char *eol = p;
  while (eol < end && *eol != '\n' && *eol != '\r') eol++;
  snprintf(out, size, "%.*s", (int)(eol - p), p);
}

static void copy_location(rasp_error *err, rasp_pos pos) {
  err->pos = pos;
  err->file[0] = err->line[0] = '\0';
  memset(&err->inner, 0, sizeof err->inner);
  const rasp_source *src = pos.src;
  if (!src) return;
  snprintf(err->file, sizeof err->file, "%s", src->name);
  copy_line(err->line, sizeof err->line, pos);
}

void raspR_locate_inner(rasp_error *err, rasp_pos inner, const char *fn) {
  if (!err || !inner.src) return;
  rasp_frame *f = &err->inner;
  /* the stdlib's files are named by the folder they come from, wherever
     it is installed, so the same error reads the same everywhere */
  const char *base = strrchr(inner.src->name, '/');
  base = base ? base + 1 : inner.src->name;
  snprintf(f->file, sizeof f->file, "%s%s", inner.src->library ? "stdlib/" : "",
           inner.src->library ? base : inner.src->name);
  snprintf(f->fn, sizeof f->fn, "%s", fn && *fn ? fn : "a library function");
  f->line = inner.line;
  f->col = inner.col;
  copy_line(f->text, sizeof f->text, inner);
}

static void vset(rasp_error *err, rasp_errcode code, rasp_pos pos, const char *fmt, va_list ap) {
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  copy_location(err, pos);
  err->code = code;
  err->subject[0] = '\0';
  err->set = 1;
}

void raspR_vsetc(rasp_error *err, rasp_errcode code, rasp_pos pos, const char *fmt, va_list ap) {
  if (err) vset(err, code, pos, fmt, ap);
}

void raspR_set(rasp_error *err, rasp_pos pos, const char *fmt, ...) {
  if (!err) return;
  va_list ap;
  va_start(ap, fmt);
  vset(err, RASP_E_RUNTIME, pos, fmt, ap);
  va_end(ap);
}

void raspR_setc(rasp_error *err, rasp_errcode code, rasp_pos pos, const char *fmt, ...) {
  if (!err) return;
  va_list ap;
  va_start(ap, fmt);
  vset(err, code, pos, fmt, ap);
  va_end(ap);
}

void raspR_locate(rasp_error *err, rasp_pos pos) { copy_location(err, pos); }

void raspR_setnopos(rasp_error *err, const char *fmt, ...) {
  if (!err) return;
  va_list ap;
  va_start(ap, fmt);
  vset(err, RASP_E_RUNTIME, (rasp_pos){0}, fmt, ap);
  va_end(ap);
}

void raspR_setnoposc(rasp_error *err, rasp_errcode code, const char *fmt, ...) {
  if (!err) return;
  va_list ap;
  va_start(ap, fmt);
  vset(err, code, (rasp_pos){0}, fmt, ap);
  va_end(ap);
}

void raspR_subject(rasp_error *err, const char *subject) {
  if (err) snprintf(err->subject, sizeof err->subject, "%s", subject);
}

const char *raspR_code_name(rasp_errcode code) {
  static const char *const names[] = {
#define RASP_ERRCODE_NAME(name, text) text,
      RASP_ERRCODES(RASP_ERRCODE_NAME)
#undef RASP_ERRCODE_NAME
  };
  return (unsigned)code < RASP_E_COUNT ? names[code] : "?";
}

/* The one place that turns errors into exit statuses (rasp.1, EXIT STATUS):
** what the person typed was wrong (2), or what ran failed (1). */
int raspR_exit_status(const rasp_error *err) {
  if (!err || !err->set) return 0;
  switch (err->code) {
  case RASP_E_USAGE:
  case RASP_E_READ:
  case RASP_E_WRITE:
  case RASP_E_FORMAT:
  case RASP_E_NO_TASK:
  case RASP_E_TASK: return 2;
  default: return 1;
  }
}

/* The line, indented, and a caret under column col (tabs kept so that
** the caret lines up). */
static void print_caret(FILE *out, const char *line, int col) {
  fprintf(out, "    %s\n    ", line);
  for (int i = 1; i < col && line[i - 1]; i++) fputc(line[i - 1] == '\t' ? '\t' : ' ', out);
  fputs("^\n", out);
}

void raspR_print(const rasp_error *err, FILE *out) {
  if (!err->pos.src) {
    fprintf(out, "rasp: %s\n", err->msg);
    return;
  }
  fprintf(out, "%s:%d:%d: %s\n", err->file, err->pos.line, err->pos.col, err->msg);
  print_caret(out, err->line, err->pos.col);
  const rasp_frame *f = &err->inner;
  if (!f->file[0]) return;
  fprintf(out, "%s:%d:%d: in %s, called above\n", f->file, f->line, f->col, f->fn);
  print_caret(out, f->text, f->col);
}

/* ---- files written atomically ------------------------------------------ */

/* raspR_atomic_tmpdir's redirect: the directory (by device and inode) and
** where its temporaries go */
static struct {
  int on;
  dev_t dev;
  ino_t ino;
  char *tmpdir;
} redirect;

int raspR_atomic_tmpdir(const char *dir, const char *tmpdir, rasp_error *err) {
  raspM_free(redirect.tmpdir);
  memset(&redirect, 0, sizeof redirect);
  if (!dir) return 1;
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    raspR_setnoposc(err, RASP_E_WRITE, "cannot use '%s': %s", dir,
                    errno ? strerror(errno) : "not a directory");
    return 0;
  }
  redirect.on = 1;
  redirect.dev = st.st_dev;
  redirect.ino = st.st_ino;
  redirect.tmpdir = raspM_strdup(tmpdir);
  return 1;
}

/* Where path's temporary goes: "path.tmp.XXXXXX", or under the redirect's
** directory when path's directory is the redirected one. */
static char *tmp_name(const char *path) {
  size_t len = strlen(path);
  if (redirect.on) {
    const char *slash = strrchr(path, '/');
    char *dir = slash ? raspM_strndup(path, slash == path ? 1 : (size_t)(slash - path))
                      : raspM_strdup(".");
    struct stat st;
    int same = stat(dir, &st) == 0 && st.st_dev == redirect.dev && st.st_ino == redirect.ino;
    raspM_free(dir);
    if (same) {
      const char *base = slash ? slash + 1 : path;
      size_t n = strlen(redirect.tmpdir) + strlen(base) + 16;
      char *t = raspM_alloc(n);
      snprintf(t, n, "%s/%s.tmp.XXXXXX", redirect.tmpdir, base);
      return t;
    }
  }
  char *t = raspM_alloc(len + 16);
  snprintf(t, len + 16, "%s.tmp.XXXXXX", path);
  return t;
}

int raspR_atomic_open(rasp_afile *af, const char *path, rasp_error *err) {
  af->path = raspM_strdup(path);
  af->tmp = tmp_name(path);
  int fd = mkstemp(af->tmp);
  af->f = fd >= 0 ? fdopen(fd, "wb") : NULL;
  if (!af->f) {
    int e = errno;
    if (fd >= 0) {
      close(fd);
      unlink(af->tmp);
    }
    raspR_setnoposc(err, RASP_E_WRITE, "cannot write '%s': %s", path, strerror(e));
    raspM_free(af->tmp);
    raspM_free(af->path);
    af->tmp = af->path = NULL;
    return 0;
  }
  /* mkstemp makes 0600 files: a rewritten file keeps its permissions (a
  ** private file stays private), a new one is an ordinary file */
  struct stat st;
  mode_t mode;
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
    mode = st.st_mode & 0777;
  } else {
    mode_t um = umask(0);
    umask(um);
    mode = 0666 & ~um;
  }
  fchmod(fd, mode);
  return 1;
}

/* The directory entry must reach the disk too (best effort). */
static void sync_parent(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? raspM_strndup(path, slash == path ? 1 : (size_t)(slash - path))
                    : raspM_strdup(".");
  int fd = open(dir, O_RDONLY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  raspM_free(dir);
}

int raspR_atomic_commit(rasp_afile *af, rasp_error *err) {
  int e = 0;
  if (fflush(af->f) != 0 || ferror(af->f) || fsync(fileno(af->f)) != 0) e = errno ? errno : EIO;
  if (fclose(af->f) != 0 && !e) e = errno;
  af->f = NULL;
  if (!e && rename(af->tmp, af->path) != 0) e = errno;
  if (e) {
    unlink(af->tmp);
    raspR_setnoposc(err, RASP_E_WRITE, "cannot write '%s': %s", af->path, strerror(e));
  } else {
    sync_parent(af->path);
  }
  raspM_free(af->tmp);
  raspM_free(af->path);
  af->tmp = af->path = NULL;
  return !e;
}

void raspR_atomic_abort(rasp_afile *af) {
  if (af->f) fclose(af->f);
  if (af->tmp) unlink(af->tmp);
  raspM_free(af->tmp);
  raspM_free(af->path);
  af->f = NULL;
  af->tmp = af->path = NULL;
}

int raspR_write_file(const char *path, const void *data, size_t len, rasp_error *err) {
  rasp_afile af;
  if (!raspR_atomic_open(&af, path, err)) return 0;
  if (len && fwrite(data, 1, len, af.f) != len) {
    int e = errno;
    raspR_atomic_abort(&af);
    raspR_setnoposc(err, RASP_E_WRITE, "cannot write '%s': %s", path, strerror(e));
    return 0;
  }
  return raspR_atomic_commit(&af, err);
}

/* Each prefix of dir ending before a '/' (and dir itself) in turn: mkdir,
** where EEXIST is fine only for a directory. */
int raspR_mkdirs(const char *dir, rasp_error *err) {
  size_t len = strlen(dir);
  char *buf = raspM_alloc(len + 1);
  memcpy(buf, dir, len + 1);
  int ok = 1;
  for (size_t i = 1; i <= len && ok; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    if (buf[i - 1] == '/') continue; /* "a//b", or a trailing slash */
    char c = buf[i];
    buf[i] = '\0';
    struct stat st;
    if (mkdir(buf, 0777) != 0) {
      int e = errno;
      if (e != EEXIST) {
        raspR_setnoposc(err, RASP_E_WRITE, "cannot create directory '%s': %s", buf, strerror(e));
        ok = 0;
      } else if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
        raspR_setnoposc(err, RASP_E_WRITE, "cannot create directory '%s': '%s' exists and is not a directory", dir, buf);
        ok = 0;
      }
    }
    buf[i] = c;
  }
  raspM_free(buf);
  return ok;
}

int raspR_mkdirs_for(const char *path, rasp_error *err) {
  const char *slash = strrchr(path, '/');
  if (!slash || slash == path) return 1;
  size_t len = (size_t)(slash - path);
  char *dir = raspM_alloc(len + 1);
  memcpy(dir, path, len);
  dir[len] = '\0';
  int r = raspR_mkdirs(dir, err);
  raspM_free(dir);
  return r;
}

/* ---- other programs ------------------------------------------------------ */

extern char **environ;

int raspR_spawn(const char *const *argv, int in_fd, int out_fd, rasp_error *err) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (in_fd >= 0 && in_fd != 0) posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
  if (out_fd >= 0 && out_fd != 1) posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  pid_t pid;
  int e = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (e) {
    if (e == ENOENT) raspR_setnoposc(err, RASP_E_SPAWN, "cannot run '%s': not found in PATH", argv[0]);
    else raspR_setnoposc(err, RASP_E_SPAWN, "cannot run '%s': %s", argv[0], strerror(e));
    errno = e;
    return 0;
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) {
      e = errno;
      raspR_setnoposc(err, RASP_E_SPAWN, "waiting for '%s': %s", argv[0], strerror(e));
      errno = e;
      return 0;
    }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 1;
  if (WIFEXITED(st))
    raspR_setnoposc(err, RASP_E_SPAWN, "'%s' failed with exit status %d", argv[0], WEXITSTATUS(st));
  else
    raspR_setnoposc(err, RASP_E_SPAWN, "'%s' was killed by signal %d", argv[0], WTERMSIG(st));
  errno = ECHILD;
  return 0;
}
