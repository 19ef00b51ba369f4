/*
** rwork.c -- verification runs split into ranges (rwork.h): the ledger of
** one cell, its checkpoint file, and the loop that every rank runs.
**
** The ledger hands ranges out in index order, so everything below `next`
** is done or in flight and the only ranges it must skip are those a
** resumed checkpoint brought; ranges come back in any order and are merged
** with their neighbours as they arrive.  A range that raised an error is
** kept apart (the lowest one wins, as a single run stops at its first
** error) and stops the handing out; it is never written to the checkpoint,
** so a resumed run checks it again.
**
** The checkpoint is a text file rewritten whole every --checkpoint-every
** seconds at most (it holds a few lines per
** cell: the merged ranges, plus one per range in flight at most), through
** raspR_atomic_*, so a kill at any moment leaves the previous version or
** the new one.
*/
#include "rwork.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rasp.h" /* RASP_VERSION */
#include "rmem.h"
#include "rmodel.h"

static const raspW_transport *transport;

void raspW_set_transport(const raspW_transport *t) { transport = t; }
const raspW_transport *raspW_get_transport(void) { return transport; }

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------ checkpoints */

typedef struct ccell {
  char *key;
  raspW_part *done;
  int ndone, cap;
} ccell;

struct raspW_checkpoint {
  char *path;
  ccell *cells;
  int ncells, cap;
  double last_save, every; /* seconds between writes */
};

#define CKPT_MAGIC "rasp-verify-checkpoint 1"

static int bad_line(rasp_error *err, const char *path, int line, const char *what) {
  raspR_setnopos(err, "%s:%d: %s (not a checkpoint that `rasp verify --checkpoint` wrote?)", path,
                 line, what);
  return 0;
}

/* The checksum that binds a "done" line to its cell (the program's name,
** the FNV-1a of its text, the sizes and options: cell_key) and to this
** build.  It catches a line edited by hand or copied from another program's
** or another build's checkpoint; it does not stop a forger who recomputes
** it, so a checkpoint stays trusted input (the verdict says when counts
** came from one). */
static uint64_t line_sum(const char *key, const char *line) {
  static const char build[] = RASP_VERSION " " __DATE__ " " __TIME__;
  uint64_t h = raspN_fnv1a(RASPN_FNV0, CKPT_MAGIC "\n", sizeof CKPT_MAGIC);
  h = raspN_fnv1a(h, key, strlen(key) + 1);
  h = raspN_fnv1a(h, line, strlen(line) + 1);
  return raspN_fnv1a(h, build, sizeof build);
}

/* One "done ..." line into p; 1, or 0 when it is not one. */
static int parse_done(const char *s, raspW_part *p) {
  unsigned long long f, c, pa, mi, pr, le;
  long long ff, fl;
  int q, used = 0;
  memset(p, 0, sizeof *p);
  if (sscanf(s, "done %llu %llu passed=%llu mixed=%llu probes=%llu leaks=%llu first_fail=%lld "
                "first_leak=%lld leak_q=%d%n",
             &f, &c, &pa, &mi, &pr, &le, &ff, &fl, &q, &used) != 9 ||
      s[used] != '\0' || c == 0 || pa > c || f + c < f || ff < -1 || fl < -1 ||
      (ff >= 0 && ((unsigned long long)ff < f || (unsigned long long)ff >= f + c)))
    return 0;
  *p = (raspW_part){.first = f, .count = c, .passed = pa, .mixed = mi, .probes = pr,
                    .leaks = le, .first_fail = ff, .first_leak = fl, .leak_q = q};
  return 1;
}

static int read_checkpoint(raspW_checkpoint *c, FILE *f, rasp_error *err) {
  char buf[4096];
  int line = 0;
  ccell *cell = NULL;
  while (fgets(buf, sizeof buf, f)) {
    line++;
    size_t len = strlen(buf);
    if (len == 0 || buf[len - 1] != '\n') return bad_line(err, c->path, line, "an unfinished or overlong line");
    buf[--len] = '\0';
    if (line == 1) {
      if (strcmp(buf, CKPT_MAGIC) != 0) return bad_line(err, c->path, line, "expected '" CKPT_MAGIC "'");
    } else if (strncmp(buf, "cell ", 5) == 0 && buf[5]) {
      RASP_GROW(c->cells, c->cap, c->ncells + 1);
      cell = &c->cells[c->ncells++];
      memset(cell, 0, sizeof *cell);
      cell->key = raspM_strdup(buf + 5);
    } else if (strncmp(buf, "done ", 5) == 0 && cell) {
      raspW_part p;
      char *sum = strstr(buf, " sum=");
      uint64_t want = 0;
      int used = 0;
      if (!sum || sscanf(sum, " sum=%16" SCNx64 "%n", &want, &used) != 1 || sum[used] != '\0')
        return bad_line(err, c->path, line, "a 'done' line without its checksum");
      *sum = '\0';
      if (!parse_done(buf, &p)) return bad_line(err, c->path, line, "a malformed 'done' line");
      if (line_sum(cell->key, buf) != want) {
        raspR_setnopos(err, "%s:%d: a 'done' line whose checksum does not match its counts "
                            "(edited by hand, or written for another program, options or "
                            "build of rasp)", c->path, line);
        return 0;
      }
      /* sorted, disjoint: the order the writer keeps */
      if (cell->ndone && cell->done[cell->ndone - 1].first + cell->done[cell->ndone - 1].count > p.first)
        return bad_line(err, c->path, line, "ranges out of order or overlapping");
      RASP_GROW(cell->done, cell->cap, cell->ndone + 1);
      cell->done[cell->ndone++] = p;
    } else {
      return bad_line(err, c->path, line, "expected a 'cell' or 'done' line");
    }
  }
  if (line == 0) return bad_line(err, c->path, 1, "the file is empty");
  return 1;
}

void raspW_checkpoint_free(raspW_checkpoint *c) {
  if (!c) return;
  for (int i = 0; i < c->ncells; i++) {
    raspM_free(c->cells[i].key);
    raspM_free(c->cells[i].done);
  }
  raspM_free(c->cells);
  raspM_free(c->path);
  raspM_free(c);
}

raspW_checkpoint *raspW_checkpoint_open(const char *path, int resume, double every,
                                        rasp_error *err) {
  raspW_checkpoint *c = raspM_alloc(sizeof *c);
  memset(c, 0, sizeof *c);
  c->path = raspM_strdup(path);
  c->every = every;
  rasp_error oerr = {0};
  FILE *f = raspR_fopen_regular(path, &oerr);
  if (!f && errno != ENOENT) {
    raspR_setnopos(err, "checkpoint: %s", oerr.msg);
    raspW_checkpoint_free(c);
    return NULL;
  }
  if (f && !resume) {
    fclose(f);
    raspR_setnopos(err, "checkpoint '%s' exists; --resume continues the run it records (or "
                        "remove it to start afresh)", path);
    raspW_checkpoint_free(c);
    return NULL;
  }
  if (f) {
    int ok = read_checkpoint(c, f, err);
    fclose(f);
    if (!ok) {
      raspW_checkpoint_free(c);
      return NULL;
    }
  }
  return c;
}

static void write_part(FILE *f, const raspW_part *p, const char *key) {
  char line[512];
  snprintf(line, sizeof line,
           "done %" PRIu64 " %" PRIu64 " passed=%" PRIu64 " mixed=%" PRIu64 " probes=%" PRIu64
           " leaks=%" PRIu64 " first_fail=%" PRId64 " first_leak=%" PRId64 " leak_q=%d",
           p->first, p->count, p->passed, p->mixed, p->probes, p->leaks, p->first_fail,
           p->first_leak, (int)p->leak_q);
  fprintf(f, "%s sum=%016" PRIx64 "\n", line, line_sum(key, line));
}

/* Writes every cell, the ledger's as it stands.  0, or -1 with err. */
static int save(raspW_ledger *L, rasp_error *err) {
  raspW_checkpoint *c = L->ckpt;
  rasp_afile af;
  if (!raspR_atomic_open(&af, c->path, err)) return 0;
  fprintf(af.f, "%s\n", CKPT_MAGIC);
  for (int i = 0; i < c->ncells; i++) {
    fprintf(af.f, "cell %s\n", c->cells[i].key);
    const raspW_part *d = i == L->cell ? L->done : c->cells[i].done;
    int nd = i == L->cell ? L->ndone : c->cells[i].ndone;
    for (int k = 0; k < nd; k++) write_part(af.f, &d[k], c->cells[i].key);
  }
  if (!raspR_atomic_commit(&af, err)) return 0;
  c->last_save = wall();
  return 1;
}

/* ----------------------------------------------------------------- ledger */

/* b directly follows a: a becomes both. */
static void merge(raspW_part *a, const raspW_part *b) {
  a->count += b->count;
  a->passed += b->passed;
  a->mixed += b->mixed;
  a->probes += b->probes;
  a->leaks += b->leaks;
  if (a->first_fail < 0) a->first_fail = b->first_fail; /* a's indices are the lower */
  if (a->first_leak < 0) {
    a->first_leak = b->first_leak;
    a->leak_q = b->leak_q;
  }
}

int raspW_take(raspW_ledger *L, uint64_t *first, uint64_t *count) {
  while (!L->stop && L->next < L->total) {
    uint64_t end = L->total - L->next < L->chunk ? L->total : L->next + L->chunk;
    int skipped = 0;
    for (int i = 0; i < L->ndone; i++) {
      const raspW_part *d = &L->done[i];
      if (d->first <= L->next && L->next < d->first + d->count) {
        L->next = d->first + d->count; /* done before (a resumed run) */
        skipped = 1;
        break;
      }
      if (d->first > L->next && d->first < end) end = d->first;
    }
    if (skipped) continue;
    *first = L->next;
    *count = end - L->next;
    L->next = end;
    return 1;
  }
  return 0;
}

/* A checkpoint that cannot be written stops the run: continuing would
** leave nothing to resume from. */
static void stop_for(raspW_ledger *L, const rasp_error *err) {
  if (!L->failed.failed) {
    L->failed.failed = 1;
    L->failed.first = UINT64_MAX;
    L->failed.error = *err;
  }
  L->stop = 1;
}

int raspW_record(raspW_ledger *L, const raspW_part *p, rasp_error *err) {
  if (p->count == 0) return 1;
  if (p->failed) {
    if (!L->failed.failed || p->first < L->failed.first) L->failed = *p;
    L->stop = 1;
    return 1;
  }
  int at = 0;
  while (at < L->ndone && L->done[at].first < p->first) at++;
  /* the essay: ranges are disjoint, inside the cell, sorted by first */
  RASP_ASSERT(p->first + p->count <= L->total, "a range inside its cell");
  RASP_ASSERT(at == L->ndone || p->first + p->count <= L->done[at].first,
              "a range ends before the next one recorded");
  RASP_ASSERT(at == 0 || L->done[at - 1].first + L->done[at - 1].count <= p->first,
              "a range starts after the previous one recorded");
  RASP_GROW(L->done, L->cap, L->ndone + 1);
  memmove(&L->done[at + 1], &L->done[at], sizeof *L->done * (size_t)(L->ndone - at));
  L->done[at] = *p;
  L->ndone++;
  if (at + 1 < L->ndone && L->done[at].first + L->done[at].count == L->done[at + 1].first) {
    merge(&L->done[at], &L->done[at + 1]);
    memmove(&L->done[at + 1], &L->done[at + 2], sizeof *L->done * (size_t)(L->ndone - at - 2));
    L->ndone--;
  }
  if (at > 0 && L->done[at - 1].first + L->done[at - 1].count == L->done[at].first) {
    merge(&L->done[at - 1], &L->done[at]);
    memmove(&L->done[at], &L->done[at + 1], sizeof *L->done * (size_t)(L->ndone - at - 1));
    L->ndone--;
  }
  if (L->ckpt && wall() - L->ckpt->last_save >= L->ckpt->every && !save(L, err)) {
    stop_for(L, err);
    return 0;
  }
  return 1;
}

static uint64_t covered(const raspW_ledger *L) {
  uint64_t n = 0;
  for (int i = 0; i < L->ndone; i++) n += L->done[i].count;
  return n;
}

/* ------------------------------------------------------------ the driver */

/* Checks one range into a part. */
typedef int (*range_fn)(void *ctx, uint64_t first, uint64_t count, raspW_part *out,
                        raspK_progress progress, void *user);

typedef struct drive_state {
  raspW_ledger *L;
  const raspW_opts *o;
  uint64_t base; /* inputs done before the range in hand */
} drive_state;

/* Rank 0 between batches: answer the others, then report. */
static void drive_progress(void *user, uint64_t done, uint64_t total) {
  (void)total;
  drive_state *ds = user;
  if (transport) transport->serve(ds->L, 0);
  if (ds->o->progress) ds->o->progress(ds->o->user, ds->base + done, ds->L->total);
}

/* The cell `key` of total inputs in ranges of chunk: every rank runs this.
** *all gets the merged result on every rank.  1, or 0 with err (from all). */
static int drive(const char *key, uint64_t total, uint64_t chunk, const raspW_opts *o,
                 range_fn run, void *ctx, raspW_part *all, uint64_t *resumed, rasp_error *err) {
  memset(all, 0, sizeof *all);
  all->first_fail = all->first_leak = -1;
  if (resumed) *resumed = 0;
  if (transport) transport->agree(key);
  if (transport && transport->rank != 0) {
    raspW_part part;
    uint64_t first, count;
    memset(&part, 0, sizeof part);
    while (transport->request(&part, &first, &count)) run(ctx, first, count, &part, NULL, NULL);
  } else {
    raspW_ledger L;
    memset(&L, 0, sizeof L);
    L.total = total;
    L.chunk = chunk ? chunk : 1;
    L.cell = -1;
    raspW_checkpoint *c = o->ckpt;
    if (c) {
      L.ckpt = c;
      for (int i = 0; i < c->ncells && L.cell < 0; i++)
        if (strcmp(c->cells[i].key, key) == 0) L.cell = i;
      if (L.cell < 0) {
        RASP_GROW(c->cells, c->cap, c->ncells + 1);
        L.cell = c->ncells++;
        memset(&c->cells[L.cell], 0, sizeof c->cells[L.cell]);
        c->cells[L.cell].key = raspM_strdup(key);
      }
      ccell *cc = &c->cells[L.cell];
      L.done = cc->done; /* the ledger owns them until the cell ends */
      L.ndone = cc->ndone;
      L.cap = cc->cap;
      cc->done = NULL;
      cc->ndone = cc->cap = 0;
      for (int i = 0; i < L.ndone; i++)
        if (L.done[i].first + L.done[i].count > total) {
          L.failed.failed = 1;
          raspR_setnopos(&L.failed.error, "checkpoint '%s': cell '%s' has a range past its %" PRIu64
                         " inputs", c->path, key, total);
          L.ndone = 0;
          L.stop = 1;
        }
      if (resumed) *resumed = covered(&L);
    }
    rasp_error werr = {0};
    drive_state ds = {&L, o, 0};
    uint64_t first, count;
    while (raspW_take(&L, &first, &count)) {
      raspW_part part;
      ds.base = covered(&L);
      run(ctx, first, count, &part, drive_progress, &ds);
      raspW_record(&L, &part, &werr);
    }
    if (transport)
      while (L.retired < transport->size - 1) transport->serve(&L, 1);
    if (c && !L.failed.failed && !save(&L, &werr)) stop_for(&L, &werr);
    if (o->progress && !L.stop) o->progress(o->user, covered(&L), total);
    /* the sum of the merged ranges: one range when nothing failed */
    for (int i = 0; i < L.ndone; i++) {
      all->count += L.done[i].count;
      all->passed += L.done[i].passed;
      all->mixed += L.done[i].mixed;
      all->probes += L.done[i].probes;
      all->leaks += L.done[i].leaks;
      if (all->first_fail < 0) all->first_fail = L.done[i].first_fail;
      if (all->first_leak < 0) {
        all->first_leak = L.done[i].first_leak;
        all->leak_q = L.done[i].leak_q;
      }
    }
    if (L.failed.failed) {
      all->failed = 1;
      all->error = L.failed.error;
    }
    if (c) {
      ccell *cc = &c->cells[L.cell];
      cc->done = L.done;
      cc->ndone = L.ndone;
      cc->cap = L.cap;
    } else {
      raspM_free(L.done);
    }
  }
  if (transport) transport->share(all);
  if (all->failed) *err = all->error;
  return !all->failed;
}

static void to_vresult(const raspW_part *all, rasp_vresult *res) {
  memset(res, 0, sizeof *res);
  res->total = all->count;
  res->passed = all->passed;
  res->first_fail = all->first_fail;
  res->mixed = all->mixed;
  res->probes = all->probes;
  res->leaks = all->leaks;
  res->first_leak = all->first_leak;
  res->leak_q = all->leak_q;
  if (all->failed) res->error = all->error;
}

static void from_vresult(const rasp_vresult *r, uint64_t first, uint64_t count, raspW_part *p) {
  memset(p, 0, sizeof *p);
  p->first = first;
  p->count = count;
  p->passed = r->passed;
  p->mixed = r->mixed;
  p->probes = r->probes;
  p->leaks = r->leaks;
  p->first_fail = r->first_fail;
  p->first_leak = r->first_leak;
  p->leak_q = r->leak_q;
}

/* The program's name, the FNV-1a of its text and the cell's sizes. */
static void cell_key(const rasp_program *prog, const rasp_ptrace *tr, const char *rest, char *key,
                     size_t size) {
  rasp_error e = {0};
  rasp_source *src = raspR_source_file(prog->path, &e);
  uint64_t h = src ? raspN_fnv1a(RASPN_FNV0, src->text, src->len) : 0;
  if (src) raspR_source_free(src);
  snprintf(key, size, "%s fnv=%016" PRIx64 " D=%d M=%d V=%d %s", prog->name, h, tr->opts.D,
           tr->opts.M, tr->opts.V, rest);
}

typedef struct xctx {
  rasp_ptrace *tr;
  int jobs;
} xctx;

static int exhaustive_range(void *ctx, uint64_t first, uint64_t count, raspW_part *out,
                            raspK_progress progress, void *user) {
  xctx *x = ctx;
  rasp_vresult r;
  rasp_error e = {0};
  int ok = raspK_verify_exhaustive_jobs(x->tr, first, count, x->jobs, &r, &e, progress, user);
  from_vresult(&r, first, count, out);
  if (!ok) {
    out->failed = 1;
    out->error = e;
  }
  return ok;
}

/* Ranges of 1/1024 of the cell, 4096 .. 2^20 inputs: small enough to share
** out among many ranks and to lose little to a kill, large enough that
** asking for them costs nothing. */
static uint64_t exhaustive_chunk(uint64_t total) {
  uint64_t c = total / 1024;
  c -= c % 64;
  return c < 4096 ? 4096 : c > (1u << 20) ? (1u << 20) : c;
}

int raspW_exhaustive(const rasp_program *prog, rasp_ptrace *tr, uint64_t cap, int jobs,
                     const raspW_opts *o, rasp_vresult *res, uint64_t *resumed, rasp_error *err) {
  uint64_t total;
  memset(res, 0, sizeof *res);
  res->first_fail = res->first_leak = -1;
  if (resumed) *resumed = 0;
  if (!raspT_enumerate_size(&tr->opts, &total, err)) return 0;
  if (total > cap) /* the same on every rank: nobody starts */
    return raspK_verify_exhaustive(tr, cap, res, err);
  char key[512], rest[64];
  snprintf(rest, sizeof rest, "exhaustive total=%" PRIu64, total);
  cell_key(prog, tr, rest, key, sizeof key);
  /* one process without a checkpoint: one range, as raspK_verify_exhaustive */
  uint64_t chunk = transport || o->ckpt ? exhaustive_chunk(total) : total;
  xctx x = {tr, jobs};
  raspW_part all;
  int ok = drive(key, total, chunk, o, exhaustive_range, &x, &all, resumed, err);
  to_vresult(&all, res);
  return ok;
}

typedef struct rctx {
  rasp_ptrace *tr;
  uint64_t seed;
  int jobs;
} rctx;

static int random_range(void *ctx, uint64_t first, uint64_t count, raspW_part *out,
                        raspK_progress progress, void *user) {
  rctx *r = ctx;
  rasp_vresult v;
  int ok = raspK_verify_random_range(r->tr, first, count, r->seed, r->jobs, &v, progress, user);
  from_vresult(&v, first, count, out);
  if (!ok) {
    out->failed = 1;
    out->error = v.error;
  }
  return ok;
}

int raspW_random(const rasp_program *prog, rasp_ptrace *tr, uint64_t graphs, uint64_t seed,
                 int jobs, const raspW_opts *o, rasp_vresult *res) {
  char key[512], rest[128];
  snprintf(rest, sizeof rest, "random seed=%" PRIu64 " graphs=%" PRIu64, seed, graphs);
  cell_key(prog, tr, rest, key, sizeof key);
  /* ranks share out eight ranges each (in units of the probing period),
     one process takes them all at once */
  uint64_t chunk = graphs;
  if (transport && transport->size > 1) {
    chunk = graphs / ((uint64_t)transport->size * 8);
    chunk = chunk < 256 ? 256 : chunk - chunk % 256;
  }
  rctx r = {tr, seed, jobs};
  raspW_opts ro = *o;
  ro.ckpt = NULL;
  raspW_part all;
  rasp_error err = {0};
  int ok = drive(key, graphs, chunk, &ro, random_range, &r, &all, NULL, &err);
  to_vresult(&all, res);
  if (!ok) res->error = err;
  return ok;
}

/* ------------------------------------------------------------------ plan */

static double cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int raspW_calibrate(rasp_ptrace *tr, double seconds, uint64_t *total, uint64_t *timed,
                    double *rate, rasp_error *err) {
  if (!raspT_enumerate_size(&tr->opts, total, err)) return 0;
  uint64_t n = *total < 4096 ? *total : 4096;
  for (;;) {
    rasp_vresult r;
    double t0 = cpu();
    if (!raspK_verify_exhaustive_range(tr, 0, n, &r, err, NULL, NULL)) return 0;
    double dt = cpu() - t0;
    if (dt >= seconds || n == *total) {
      *timed = n;
      *rate = dt > 0 ? (double)n / dt : 0;
      return 1;
    }
    /* aim past the target: the next round is the last */
    double grow = dt > 0 ? seconds / dt * 1.25 : 16;
    grow = grow < 2 ? 2 : grow > 64 ? 64 : grow;
    double want = (double)n * grow;
    n = want >= (double)*total ? *total : (uint64_t)want;
  }
}
