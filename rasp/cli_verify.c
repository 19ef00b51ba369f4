/*
** cli_verify.c -- `rasp verify`, `rasp layers` and `rasp draw`.
**
** layers and draw take any program: a path-star program (one that declares
** `task`) is traced for --D --M --V; a plain one, like `rasp compile` and
** `rasp run`, for --length N over the vocabulary of --input-vocab "a b c",
** --vocab FILE or the symbols of --input TEXT (whose length is then the
** default).  Both write --json for scripts; draw picks its format from
** -o's extension when --format is not given, and draws a path-star program
** for the D and M of one input of its task (--input, as `rasp run` takes
** it) as well as for --D --M.  Options are parsed from the one table of
** cli_opts.c.
**
** verify's table fits 100 columns: the heads per layer are abbreviated
** (runs as "2x3", then cut) unless -v; --json has them all.  A legend line
** after the table explains fail* when one was shown.
*/
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "rmem.h"
#include "rstage.h"
#include "rverify.h"
#include "rmpiconf.h" /* RASP_MPI: built --with-mpi */
#include "rwork.h"
#ifdef RASP_MPI
#include "rmpi.h"
#endif

/* "2..5", "3", or "2,3,5" */
static int parse_range(const char *cmd, const char *opt, const char *text, long lo, long hi,
                       int **out, int *count) {
  int cap = 0;
  *count = 0;
  *out = NULL;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", text);
  char *save = NULL;
  for (char *part = strtok_r(buf, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
    char *dots = strstr(part, "..");
    long a, b;
    if (dots) {
      *dots = '\0';
      if (!raspC_int_opt(cmd, opt, part, lo, hi, &a) || !raspC_int_opt(cmd, opt, dots + 2, lo, hi, &b))
        goto bad;
      if (b < a) {
        fprintf(stderr, "rasp %s: %s: empty range '%s'\n", cmd, opt, text);
        goto bad;
      }
    } else {
      if (!raspC_int_opt(cmd, opt, part, lo, hi, &a)) goto bad;
      b = a;
    }
    if (b - a > 10000) {
      fprintf(stderr, "rasp %s: %s: range '%s' is too long\n", cmd, opt, text);
      goto bad;
    }
    for (long v = a; v <= b; v++) {
      RASP_GROW(*out, cap, *count + 1);
      (*out)[(*count)++] = (int)v;
    }
  }
  if (*count == 0) {
    fprintf(stderr, "rasp %s: %s: expected a value or a range like 2..5, got '%s'\n", cmd, opt, text);
    goto bad;
  }
  return 1;
bad:
  raspM_free(*out);
  *out = NULL;
  return 0;
}

typedef struct vopts {
  int *Ds, nD, *Ms, nM;
  long V, graphs, jobs, cap;
  unsigned long long seed;
  int json, exhaustive, quiet, no_shrink, strict, interpret_check, sweep, verbose;
  const char *stdlib, *out_file, *format, *vocab_order, *input;
  const char *input_vocab, *vocab_file; /* plain programs (layers, draw) */
  int *Ls, nL;                          /*   their --length values */
  const char *sized;                    /* --D, --M or --V, when given */
  const char *checkpoint;               /* --checkpoint FILE, */
  int resume, progress, plan;           /*   --resume, --progress, --plan */
  long ckpt_every;                      /* --checkpoint-every SECONDS */
  int ckpt_every_given;                 /*   (given: it needs --checkpoint) */
  const char **programs;
  int nprograms;
  rasp_access access;
} vopts;

/* Options into o for command cmd (name its name): 1 parsed, 0 after --help
** or --version, -1 bad usage (message printed). */
static int common_opts(unsigned cmd, const char *name, int argc, char **argv, vopts *o) {
  raspC_arg *args;
  int n = raspC_parse_program(cmd, name, argc, argv, &o->access, &args), ok = 1;
  if (n == RASPC_DONE) return 0;
  if (n == RASPC_BAD) return -1;
  for (int k = 0; k < n && ok; k++) {
    const raspC_arg *a = &args[k];
    const char *opt = a->name, *val = a->val;
    switch (a->id) {
    case RASPC_OPERAND: o->programs[o->nprograms++] = val; break;
    case RASPC_O_JSON: o->json = 1; break;
    case RASPC_O_EXHAUSTIVE: o->exhaustive = 1; break;
    case RASPC_O_QUIET: o->quiet = 1; break;
    case RASPC_O_NO_SHRINK: o->no_shrink = 1; break;
    case RASPC_O_STRICT: o->strict = 1; break;
    case RASPC_O_INTERPRET_CHECK: o->interpret_check = 1; break;
    case RASPC_O_SWEEP: o->sweep = 1; break;
    case RASPC_O_VERBOSE: o->verbose = 1; break;
    case RASPC_O_D:
      raspM_free(o->Ds);
      ok = parse_range(name, opt, val, 1, 1000000, &o->Ds, &o->nD);
      o->sized = opt;
      break;
    case RASPC_O_M:
      raspM_free(o->Ms);
      ok = parse_range(name, opt, val, 2, 1000000, &o->Ms, &o->nM);
      o->sized = opt;
      break;
    case RASPC_O_V:
      ok = raspC_int_opt(name, opt, val, 2, 1 << 30, &o->V);
      o->sized = opt;
      break;
    case RASPC_O_GRAPHS: ok = raspC_int_opt(name, opt, val, 1, 1L << 40, &o->graphs); break;
    case RASPC_O_JOBS: ok = raspC_int_opt(name, opt, val, 1, 1024, &o->jobs); break;
    case RASPC_O_CAP: ok = raspC_int_opt(name, opt, val, 1, 1L << 40, &o->cap); break;
    case RASPC_O_SEED: {
      long sd;
      ok = raspC_int_opt(name, opt, val, 0, 0x7fffffffffffffffL, &sd);
      o->seed = (unsigned long long)sd;
      break;
    }
    case RASPC_O_STDLIB: o->stdlib = val; break;
    case RASPC_O_OUT: o->out_file = val; break;
    case RASPC_O_FORMAT: o->format = val; break;
    case RASPC_O_VOCAB_ORDER: o->vocab_order = val; break;
    case RASPC_O_INPUT: o->input = val; break;
    case RASPC_O_INPUT_VOCAB: o->input_vocab = val; break;
    case RASPC_O_VOCAB: o->vocab_file = val; break;
    case RASPC_O_LENGTH:
      raspM_free(o->Ls);
      ok = parse_range(name, opt, val, 1, 100000, &o->Ls, &o->nL);
      break;
    case RASPC_O_CHECKPOINT: o->checkpoint = val; break;
    case RASPC_O_CHECKPOINT_EVERY:
      ok = raspC_int_opt(name, opt, val, 0, 86400, &o->ckpt_every);
      o->ckpt_every_given = 1;
      break;
    case RASPC_O_RESUME: o->resume = 1; break;
    case RASPC_O_PROGRESS: o->progress = 1; break;
    case RASPC_O_PLAN: o->plan = 1; break;
    default: break; /* --max-memory, --timeout: rasp.c's */
    }
  }
  raspM_free(args);
  if (ok && o->nprograms == 0) {
    fprintf(stderr, "rasp %s: no program given\n", name);
    ok = 0;
  }
  return ok ? 1 : -1;
}

static void free_vopts(vopts *o) {
  raspM_free(o->Ls);
  raspM_free(o->Ds);
  raspM_free(o->Ms);
  raspM_free(o->programs);
  raspC_access_free(&o->access);
}

static void init_vopts(vopts *o, int argc) {
  memset(o, 0, sizeof *o);
  o->V = 100;
  o->graphs = 1000;
  o->seed = 1;
  o->cap = 2000000;
  o->ckpt_every = 10;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  o->jobs = cores > 0 ? cores : 1;
  o->programs = raspM_alloc(sizeof(char *) * (size_t)(argc + 1));
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Long runs report progress on stderr: a rewritten line on a terminal,
** a line every ten seconds otherwise; --progress (always) from the first
** second on, every second.  The rate counts what this run did (not what a resumed
** checkpoint brought: the first report's count is the base). */
typedef struct progress_state {
  const char *name, *unit; /* unit: "graphs", or "inputs" (exhaustive) */
  int D, M;
  double start, last;
  int shown;
  int always;              /* --progress */
  int based;               /*   base: done at the first report */
  uint64_t base;
} progress_state;

static void eta_text(double s, char *buf, size_t size) {
  if (s < 120) snprintf(buf, size, "%.0f s", s);
  else if (s < 7200) snprintf(buf, size, "%.0f min", s / 60);
  else snprintf(buf, size, "%.1f h", s / 3600);
}

static void show_progress(void *user, uint64_t done, uint64_t total) {
  progress_state *ps = user;
  double t = now();
  int tty = isatty(2);
  if (!ps->based) ps->base = done, ps->based = 1;
  if (t - ps->start < (ps->always ? 1 : 2) ||
      t - ps->last < (tty ? 0.5 : ps->always ? 1 : 10))
    return;
  ps->last = t;
  ps->shown = 1;
  double rate = t > ps->start ? (double)(done - ps->base) / (t - ps->start) : 0;
  char eta[32] = "?";
  if (rate > 0) eta_text((double)(total - done) / rate, eta, sizeof eta);
  fprintf(stderr, "%s  %s D=%d M=%d: %llu/%llu %s (%.0f s; %.0f %s/s, ETA %s)%s", tty ? "\r" : "",
          ps->name, ps->D, ps->M, (unsigned long long)done, (unsigned long long)total, ps->unit,
          t - ps->start, rate, ps->unit, eta, tty ? "  " : "\n");
  fflush(stderr);
}


/* A message inside a JSON string, after its line number. */
static void json_text(const char *msg, int line) {
  if (line) printf("line %d: ", line);
  raspC_json_fputs(msg, stdout);
}

static void heads_text(const rasp_layers *L, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int l = 0; l < L->nlayers && used + 8 < size; l++)
    used += (size_t)snprintf(buf + used, size - used, "%s%d", l ? " " : "", L->heads[l]);
}

/* The heads per layer in at most width columns: in full when they fit,
** else with runs written as "2x9", else cut at a space and ended " ...".
** The full list is under -v and in --json. */
static void heads_fit(const rasp_layers *L, int width, char *buf, size_t size) {
  heads_text(L, buf, size);
  if ((int)strlen(buf) <= width) return;
  size_t used = 0;
  buf[0] = '\0';
  for (int l = 0; l < L->nlayers && used + 24 < size;) {
    int r = l;
    while (r + 1 < L->nlayers && L->heads[r + 1] == L->heads[l]) r++;
    if (r > l) used += (size_t)snprintf(buf + used, size - used, "%s%dx%d", l ? " " : "", L->heads[l], r - l + 1);
    else used += (size_t)snprintf(buf + used, size - used, "%s%d", l ? " " : "", L->heads[l]);
    l = r + 1;
  }
  if ((int)used <= width) return;
  int cut = width - 4 > 0 ? width - 4 : 0;
  while (cut > 0 && buf[cut] != ' ') cut--;
  snprintf(buf + cut, size - (size_t)cut, "%s...", cut ? " " : "");
}

/* The table's width (the heads column is abbreviated to fit it). */
#define TABLE_WIDTH 100

/* One (D, M) cell of a program's run. */
typedef struct vcell {
  int D, M, ok, pass, layers;
  uint64_t passed, total;
  int shuffled;              /* the shuffled-ids run happened: */
  uint64_t spassed, changed; /*   its passes, graphs whose verdict changed */
} vcell;

/* "2-5" or "2,3,5" for a sorted list of ints */
static void list_text(const int *v, int n, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && used + 16 < size;) {
    int j = i;
    while (j + 1 < n && v[j + 1] == v[j] + 1) j++;
    if (j >= i + 2) used += (size_t)snprintf(buf + used, size - used, "%s%d-%d", i ? "," : "", v[i], v[j]);
    else
      for (int k = i; k <= j; k++) used += (size_t)snprintf(buf + used, size - used, "%s%d", k ? "," : "", v[k]);
    i = j + 1;
  }
}

/* The failing cells of a sweep, grouped by M: "M=9,15,17" when every D
** fails there, "M=9[D=2,3]" otherwise. */
static void failing_text(const vcell *c, int nc, int nD, int shuffled, char *buf,
                         size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  int *ms = raspM_alloc(sizeof(int) * (size_t)(nc + 1)), nm = 0;
  for (int i = 0; i < nc; i++) {
    int bad = shuffled ? c[i].changed > 0 : !c[i].pass;
    if (bad && (nm == 0 || ms[nm - 1] != c[i].M)) ms[nm++] = c[i].M;
  }
  int all_D = 1;
  for (int m = 0; m < nm && all_D; m++) {
    int cnt = 0;
    for (int i = 0; i < nc; i++) cnt += c[i].M == ms[m] && (shuffled ? c[i].changed > 0 : !c[i].pass);
    all_D = cnt == nD;
  }
  if (nm && all_D) {
    char l[512];
    list_text(ms, nm, l, sizeof l);
    snprintf(buf, size, "M=%s", l);
  } else {
    for (int m = 0; m < nm && used + 32 < size; m++) {
      int ds[64], nd = 0;
      for (int i = 0; i < nc && nd < 64; i++)
        if (c[i].M == ms[m] && (shuffled ? c[i].changed > 0 : !c[i].pass)) ds[nd++] = c[i].D;
      char l[256];
      list_text(ds, nd, l, sizeof l);
      used += (size_t)snprintf(buf + used, size - used, "%sM=%d[D=%s]", m ? " " : "", ms[m], l);
    }
  }
  raspM_free(ms);
}

/* The "tokens" array of a `rasp gen` JSON line as space-separated text
** (malloc'd), or NULL with a message.  Token strings never need escapes,
** so a backslash is refused rather than decoded. */
static char *json_tokens(const char *cmd, const char *line) {
  const char *p = strstr(line, "\"tokens\"");
  if (p) p += strlen("\"tokens\"");
  while (p && (*p == ' ' || *p == '\t')) p++;
  if (p && *p == ':') p++;
  while (p && (*p == ' ' || *p == '\t')) p++;
  if (!p || *p != '[') {
    fprintf(stderr, "rasp %s: --input: a JSON input needs a \"tokens\" array, as `rasp gen` "
                    "writes it\n", cmd);
    return NULL;
  }
  size_t cap = strlen(p) + 1, len = 0;
  char *text = raspM_alloc(cap);
  for (p++;;) {
    while (*p == ' ' || *p == '\t' || *p == ',' || *p == '\n' || *p == '\r') p++;
    if (*p == ']') break;
    const char *q = *p == '"' ? strpbrk(p + 1, "\"\\") : NULL;
    if (!q || *q != '"') {
      fprintf(stderr, "rasp %s: --input: the \"tokens\" array must hold plain strings, "
                      "near '%.20s'\n", cmd, p);
      raspM_free(text);
      return NULL;
    }
    len += (size_t)snprintf(text + len, cap - len, "%s%.*s", len ? " " : "", (int)(q - p - 1), p + 1);
    p = q + 1;
  }
  text[len] = '\0';
  return text;
}

int raspC_task_input(const char *cmd, const rasp_program *prog, int V, const char *text,
                     rasp_input *in) {
  char *own = NULL;
  rasp_error err = {0};
  while (*text == ' ' || *text == '\t' || *text == '\n') text++;
  if (*text == '{' && !(text = own = json_tokens(cmd, text))) return 2;
  int status = 0;
  if (!raspK_parse_input(prog, V, text, in, &err)) {
    fprintf(stderr, "rasp %s: --input: %s (for %s's task)\n", cmd, err.msg, prog->name);
    status = 2;
  }
  raspM_free(own);
  return status;
}

/* `rasp verify PROGRAM --input TEXT`: one input, judged and explained. */
static int verify_one(vopts *o) {
  if (o->nprograms != 1 || o->exhaustive || o->sweep || o->vocab_order || o->nD || o->nM ||
      o->json) {
    fprintf(stderr, "rasp verify: --input runs one program on one input; it does not combine "
                    "with more programs, --D, --M (the graph gives them), --exhaustive, --sweep, "
                    "--vocab-order or --json\n");
    return 2;
  }
  rasp_program prog;
  rasp_error err = {0};
  int status;
  /* the settings pass needs some sizes; the input's own come later */
  if (!raspK_load_with(o->programs[0], o->stdlib, &o->access, 2, 5, (int)o->V, &prog, &err)) {
    raspR_print(&err, stderr);
    return raspR_exit_status(&err);
  }
  prog.interpret_check = o->interpret_check;
  rasp_input in;
  status = raspC_task_input("verify", &prog, (int)o->V, o->input, &in);
  if (!status) {
    int r = raspK_run_input(&prog, (int)o->V, &in, stdout, &err);
    if (r == -2) raspR_print(&err, stderr);
    status = r == 1 ? 0 : 1;
    raspK_input_free(&in);
  }
  raspK_program_free(&prog);
  return status;
}

/* `rasp verify --exhaustive --plan`: each cell's inputs and the time one
** core takes for them, from checking the first ones for a second (CPU
** time, so other load does not skew it).  Nothing is verified. */
static int verify_plan(vopts *o) {
  int status = 0;
  double core_s = 0;
  uint64_t inputs = 0;
  if (!o->json)
    printf("%-26s %3s %3s %15s %12s %16s  %s\n", "program", "D", "M", "inputs", "inputs/s",
           "one core", "calibrated on");
  for (int p = 0; p < o->nprograms; p++) {
    rasp_program prog;
    rasp_error err = {0};
    if (!raspK_load_with(o->programs[p], o->stdlib, &o->access, o->Ds[0], o->Ms[0], (int)o->V,
                         &prog, &err)) {
      raspR_print(&err, stderr);
      status = err.pos.src && status != 2 ? 1 : 2;
      continue;
    }
    prog.interpret_check = o->interpret_check;
    for (int mi = 0; mi < o->nM; mi++)
      for (int di = 0; di < o->nD; di++) {
        int D = o->Ds[di], M = o->Ms[mi];
        rasp_ptrace tr;
        uint64_t total = 0, timed = 0;
        double rate = 0;
        err.set = 0;
        if (!raspK_trace(&prog, D, M, (int)o->V, &tr, &err)) {
          fprintf(stderr, "rasp verify: %s at D=%d, M=%d:\n", prog.name, D, M);
          raspR_print(&err, stderr);
          status = 1;
          continue;
        }
        raspK_order(&prog, &tr); /* as the run would: it may watch aggregates */
        if (!raspW_calibrate(&tr, 1.0, &total, &timed, &rate, &err)) {
          fprintf(stderr, "rasp verify: %s at D=%d, M=%d:\n", prog.name, D, M);
          raspR_print(&err, stderr);
          status = 1;
          raspK_trace_free(&tr);
          continue;
        }
        double secs = rate > 0 ? (double)total / rate : 0;
        core_s += secs;
        inputs += total;
        char t[32];
        eta_text(secs, t, sizeof t);
        if (o->json)
          printf("{\"program\":\"%s\",\"D\":%d,\"M\":%d,\"inputs\":%llu,\"calibrated\":%llu,"
                 "\"inputs_per_second\":%.1f,\"core_seconds\":%.1f,\"over_cap\":%s}\n",
                 prog.name, D, M, (unsigned long long)total, (unsigned long long)timed, rate, secs,
                 total > (uint64_t)o->cap ? "true" : "false");
        else
          printf("%-26s %3d %3d %15llu %12.0f %16s  %llu inputs%s\n", prog.name, D, M,
                 (unsigned long long)total, rate, t, (unsigned long long)timed,
                 total > (uint64_t)o->cap ? " (over --cap: raise it to run)" : "");
        fflush(stdout);
        raspK_trace_free(&tr);
      }
    raspK_program_free(&prog);
  }
  if (!o->json && inputs) {
    char t[32];
    eta_text(core_s, t, sizeof t);
    printf("in all: %llu inputs, %s on one core (%.2f core-hours); with K cores (one MPI rank "
           "each) about 1/K of it\n", (unsigned long long)inputs, t, core_s / 3600);
  }
  return status;
}

static int verify_main(int argc, char **argv);

/* The MPI build's hook: under mpirun or srun the ranks share the work
** (rmpi.h); otherwise, and in every other build, one process runs. */
int rasp_cli_verify(int argc, char **argv) {
#ifdef RASP_MPI
  if (raspP_start()) return raspP_finish(verify_main(argc, argv));
#endif
  return verify_main(argc, argv);
}

static int verify_main(int argc, char **argv) {
  vopts o;
  init_vopts(&o, argc);
  int parsed = common_opts(RASPC_VERIFY, "verify", argc, argv, &o);
  if (parsed <= 0) {
    free_vopts(&o);
    return parsed == 0 ? 0 : 2;
  }
  if (o.vocab_order && strcmp(o.vocab_order, "fixed") != 0 && strcmp(o.vocab_order, "shuffled") != 0) {
    fprintf(stderr, "rasp verify: --vocab-order: expected fixed or shuffled, got '%s'\n", o.vocab_order);
    free_vopts(&o);
    return 2;
  }
  if (o.input) {
    int st = verify_one(&o);
    free_vopts(&o);
    return st;
  }
  if ((o.checkpoint || o.resume || o.plan) && !o.exhaustive) {
    fprintf(stderr, "rasp verify: --%s is for --exhaustive runs\n",
            o.plan ? "plan" : o.checkpoint ? "checkpoint" : "resume");
    free_vopts(&o);
    return 2;
  }
  if ((o.resume || o.ckpt_every_given) && !o.checkpoint) {
    fprintf(stderr, "rasp verify: --%s needs --checkpoint FILE\n",
            o.resume ? "resume" : "checkpoint-every");
    free_vopts(&o);
    return 2;
  }
  int shuffled = o.vocab_order && strcmp(o.vocab_order, "shuffled") == 0;
  if (shuffled && o.exhaustive) {
    fprintf(stderr, "rasp verify: --vocab-order shuffled draws random graphs; it does not combine "
                    "with --exhaustive\n");
    free_vopts(&o);
    return 2;
  }
  if (o.sweep && o.exhaustive) {
    fprintf(stderr, "rasp verify: --sweep does not combine with --exhaustive\n");
    free_vopts(&o);
    return 2;
  }
  int given_M = o.nM > 0;
  if (!o.nD) parse_range("verify", "--D", "2..5", 1, 100, &o.Ds, &o.nD);
  if (!o.nM) parse_range("verify", "--M", "5", 2, 100, &o.Ms, &o.nM);
  if (o.plan) {
    int st = verify_plan(&o);
    free_vopts(&o);
    return st;
  }
  raspW_checkpoint *ckpt = NULL;
  if (o.checkpoint) {
    rasp_error cerr = {0};
    if (!(ckpt = raspW_checkpoint_open(o.checkpoint, o.resume, (double)o.ckpt_every, &cerr))) {
      fprintf(stderr, "rasp verify: %s\n", cerr.msg);
      free_vopts(&o);
      return 2;
    }
  }
  int compact = o.sweep && !o.verbose && !o.json;
  int status = 0, legend = 0; /* legend: a fail* was shown */
  if (compact)
    printf("%-26s %5s %6s %5s %9s  %-6s %5s  %s\n", "program", "D", "M", "cells", "graphs", "result",
           "lay", shuffled ? "failing cells; ids: changed" : "failing (D, M) cells");
  else if (!o.json)
    printf("%-26s %3s %3s %13s  %-6s %3s %4s %3s  %s\n", "program", "D", "M", "passed/total",
           "result", "lay", "attn", "mlp", shuffled ? "shuffled ids  heads per layer" : "heads per layer");
  for (int p = 0; p < o.nprograms; p++) {
    rasp_program prog;
    rasp_error err = {0};
    if (!raspK_load_with(o.programs[p], o.stdlib, &o.access, o.Ds[0], o.Ms[0], (int)o.V, &prog,
                         &err)) {
      raspR_print(&err, stderr);
      status = status ? status : raspR_exit_status(&err);
      if (raspR_exit_status(&err) == 2) status = 2;
      continue;
    }
    int shown_counterexample = 0, cx_D = 0, cx_M = 0;
    int64_t cx_index = -1;
    prog.interpret_check = o.interpret_check;
    /* a sweep checks M = 3 (or the program's min_M) .. its task['sweep_M']
       (default 10) unless --M says otherwise */
    int *Ms = o.Ms, nM = o.nM, own_Ms = 0;
    if (o.sweep && !given_M) {
      int lo = prog.min_M > 3 ? prog.min_M : 3, hi = prog.sweep_M ? prog.sweep_M : 10;
      if (hi < lo) hi = lo;
      Ms = raspM_alloc(sizeof(int) * (size_t)(hi - lo + 1));
      nM = 0;
      for (int m = lo; m <= hi; m++) Ms[nM++] = m;
      own_Ms = 1;
    }
    vcell *cells = raspM_alloc(sizeof(vcell) * (size_t)(nM * o.nD));
    int ncells = 0, any_fail = 0, any_error = 0, any_leak = 0, lay_lo = 1 << 30, lay_hi = 0;
    uint64_t graphs_done = 0;
    for (int mi = 0; mi < nM; mi++)
      for (int di = 0; di < o.nD; di++) {
        int D = o.Ds[di], M = Ms[mi];
        rasp_ptrace tr;
        err.set = 0;
        double t0 = now();
        if (!raspK_trace(&prog, D, M, (int)o.V, &tr, &err)) {
          fprintf(stderr, "rasp verify: %s at D=%d, M=%d:\n", prog.name, D, M);
          raspR_print(&err, stderr);
          status = 1; /* whatever the code: the program fails at this size */
          any_error = 1;
          continue;
        }
        rasp_vresult res, sres;
        memset(&sres, 0, sizeof sres);
        progress_state ps = {prog.name, o.exhaustive ? "inputs" : "graphs", D, M, t0, 0, 0,
                             o.progress, 0, 0};
        if (o.exhaustive) raspK_order(&prog, &tr);
        /* in ranges (rwork.h): shared among MPI ranks, recorded in --checkpoint */
        raspW_opts wo = {ckpt, show_progress, &ps};
        uint64_t resumed = 0;
        int ok = o.exhaustive ? raspW_exhaustive(&prog, &tr, (uint64_t)o.cap, &wo, &res, &resumed, &err)
                              : raspW_random(&prog, &tr, (uint64_t)o.graphs, o.seed, (int)o.jobs,
                                             &wo, &res);
        if (ps.shown && isatty(2)) fputc('\n', stderr);
        if (resumed)
          fprintf(stderr, "  (%s D=%d M=%d: %llu of the inputs were done in '%s')\n", prog.name, D,
                  M, (unsigned long long)resumed, o.checkpoint);
        if (!ok && !o.exhaustive) err = res.error;
        if (ok && shuffled) {
          ok = raspK_verify_shuffled(&prog, &tr, (uint64_t)o.graphs, o.seed, (int)o.jobs, &sres);
          if (!ok) err = sres.error;
        }
        double secs = now() - t0;
        int pass = ok && res.passed == res.total;
        int proof = o.exhaustive && ok && tr.order.invariant && res.mixed == 0;
        if (!ok) any_error = 1;
        int leak = ok && res.leaks > 0; /* declared causal, yet reads ahead */
        if (leak) any_leak = 1;
        if (ok && !pass) any_fail = 1;
        /* a listing known to be wrong is expected to fail somewhere in the
        ** run (judged after its last cell); anything else must pass */
        if (!ok || leak || (!pass && (!prog.expect_fail || o.strict))) status = 1;
        vcell *c = &cells[ncells++];
        c->D = D;
        c->M = M;
        c->ok = ok;
        c->pass = pass;
        c->passed = res.passed;
        c->total = res.total;
        c->layers = tr.layers.nlayers;
        c->shuffled = shuffled && ok;
        c->spassed = sres.passed;
        c->changed = sres.changed;
        graphs_done += res.total;
        if (tr.layers.nlayers < lay_lo) lay_lo = tr.layers.nlayers;
        if (tr.layers.nlayers > lay_hi) lay_hi = tr.layers.nlayers;
        char heads[512];
        heads_text(&tr.layers, heads, sizeof heads);
        if (o.json) {
          printf("{\"program\":\"%s\",\"D\":%d,\"M\":%d,\"n\":%d,\"mode\":\"%s\",\"passed\":%llu,"
                 "\"total\":%llu,\"ok\":%s,\"expect_fail\":%s,\"layers\":%d,\"attention_layers\":%d,"
                 "\"mlp_layers\":%d,\"heads\":[",
                 prog.name, D, M, tr.n, o.exhaustive ? "exhaustive" : "random",
                 (unsigned long long)res.passed, (unsigned long long)res.total,
                 pass ? "true" : "false", prog.expect_fail ? "true" : "false",
                 tr.layers.nlayers, tr.layers.attn_layers,
                 tr.layers.mlp_layers);
          for (int l = 0; l < tr.layers.nlayers; l++) printf("%s%d", l ? "," : "", tr.layers.heads[l]);
          char how[512];
          if (tr.staged) raspS_describe(tr.staged, how, sizeof how);
          printf("],\"check\":\"%s: %s\"",
                 tr.staged ? "staged" : "interpreted",
                 tr.staged ? how : tr.unstaged ? tr.unstaged : "no check function");
          if (tr.probe_causal)
            printf(",\"causal_probes\":%llu,\"causal_leaks\":%llu", (unsigned long long)res.probes,
                   (unsigned long long)res.leaks);
          if (o.exhaustive) {
            printf(",\"proof\":%s,\"order\":\"", proof ? "true" : "false");
            if (proof) printf("invariant");
            else if (!tr.order.invariant) json_text(tr.order.why.msg, tr.order.why.pos.src ? tr.order.why.pos.line : 0);
            else if (res.mixed) printf("an aggregate averaged different ids on %llu inputs", (unsigned long long)res.mixed);
            else printf("not analysed");
            printf("\",\"watched_aggregates\":%d,\"inputs_averaging_ids\":%llu",
                   tr.order.invariant ? tr.order.nmixing : 0, (unsigned long long)res.mixed);
            if (resumed) printf(",\"resumed_inputs\":%llu", (unsigned long long)resumed);
          }
          if (shuffled)
            printf(",\"vocab_order\":\"shuffled\",\"shuffled_passed\":%llu,\"verdicts_changed\":%llu",
                   (unsigned long long)sres.passed, (unsigned long long)sres.changed);
          printf(",\"seconds\":%.3f}\n", secs);
        } else if (!compact) {
          char frac[64], sh[64] = "", row[256];
          snprintf(frac, sizeof frac, "%llu/%llu", (unsigned long long)res.passed,
                   (unsigned long long)res.total);
          if (shuffled)
            snprintf(sh, sizeof sh, "%llu/%llu %s  ", (unsigned long long)sres.passed,
                     (unsigned long long)res.total, sres.changed ? "CHANGED" : "same");
          const char *verdict = !ok ? "ERROR" : leak ? "LEAK" : pass ? "ok"
                                : prog.expect_fail ? "fail*" : "FAIL";
          if (!strcmp(verdict, "fail*")) legend = 1;
          int w = snprintf(row, sizeof row, "%-26s %3d %3d %13s  %-6s %3d %4d %3d  %s", prog.name,
                           D, M, frac, verdict, tr.layers.nlayers, tr.layers.attn_layers,
                           tr.layers.mlp_layers, sh);
          if (!o.verbose) heads_fit(&tr.layers, TABLE_WIDTH - w, heads, sizeof heads);
          printf("%s%s\n", row, heads);
          if (o.exhaustive && ok) {
            printf("  exhaustive: all %llu inputs (every %s order x every target): ",
                   (unsigned long long)res.total, tr.opts.order == RASP_ORDER_ARM ? "arm" : "edge");
            if (proof) printf("proof (the program is order-invariant)\n");
            else {
              printf("sample (the id order was fixed: ");
              if (!tr.order.invariant) {
                if (tr.order.why.pos.src) printf("line %d: ", tr.order.why.pos.line);
                printf("%s)\n", tr.order.why.msg);
              } else
                printf("an aggregate averaged different ids on %llu inputs)\n", (unsigned long long)res.mixed);
            }
            /* counts a checkpoint brought were not checked again: say so */
            if (resumed)
              printf("  resumed: %llu of these inputs were counted by checkpoint '%s', "
                     "which is trusted input\n", (unsigned long long)resumed, o.checkpoint);
          }
        }
        fflush(stdout);
        if (!ok) {
          raspR_print(&err, stderr);
        }
        if (leak && !o.json) raspK_print_leak(&tr, o.seed, &res, stdout);
        if (!pass && ok && !o.quiet && !o.json && res.first_fail >= 0) {
          /* one shrunk counterexample per program is enough to read; in
             the compact table it follows the program's row */
          if (o.no_shrink || shown_counterexample) {
            if (o.exhaustive)
              printf("  first failing input: exhaustive input %lld\n", (long long)res.first_fail);
            else if (!compact)
              printf("  first failing graph: index %lld of seed %llu\n", (long long)res.first_fail,
                     o.seed);
          } else if (o.exhaustive) {
            raspK_counterexample_exhaustive(&prog, &tr, (uint64_t)res.first_fail, stdout);
            shown_counterexample = 1;
          } else if (compact) {
            cx_D = D;
            cx_M = M;
            cx_index = res.first_fail;
            shown_counterexample = 1;
          } else {
            raspK_counterexample(&prog, D, M, (int)o.V, o.seed, (uint64_t)res.first_fail, stdout);
            shown_counterexample = 1;
          }
        }
        if (secs > 2 && !o.json) fprintf(stderr, "  (%s D=%d M=%d took %.1f s)\n", prog.name, D, M, secs);
        raspK_trace_free(&tr);
      }
    int unexpected_pass = prog.expect_fail && !o.strict && !any_fail && !any_error && ncells > 0;
    if (unexpected_pass) status = 1;
    if (compact && ncells) {
      char dtext[64], mtext[64], lay[32], fails[1024], chg[1024] = "";
      int ds[64], nd = 0;
      for (int i = 0; i < o.nD && nd < 64; i++) ds[nd++] = o.Ds[i];
      list_text(ds, nd, dtext, sizeof dtext);
      list_text(Ms, nM, mtext, sizeof mtext);
      if (lay_lo == lay_hi) snprintf(lay, sizeof lay, "%d", lay_lo);
      else snprintf(lay, sizeof lay, "%d-%d", lay_lo, lay_hi);
      failing_text(cells, ncells, o.nD, 0, fails, sizeof fails);
      if (shuffled) {
        failing_text(cells, ncells, o.nD, 1, chg, sizeof chg);
        size_t l = strlen(fails);
        snprintf(fails + l, sizeof fails - l, "%sids: %s", l ? "; " : "", chg[0] ? chg : "same");
      }
      const char *verdict = any_error ? "ERROR" : any_leak ? "LEAK" : unexpected_pass ? "PASS!"
                            : !any_fail ? "ok" : prog.expect_fail ? "fail*" : "FAIL";
      if (!strcmp(verdict, "fail*")) legend = 1;
      char row[256];
      int w = snprintf(row, sizeof row, "%-26s %5s %6s %5d %9llu  %-6s %5s  ", prog.name, dtext,
                       mtext, ncells, (unsigned long long)graphs_done, verdict, lay);
      /* the failing cells cut to the table's width (-v: one row per cell) */
      int room = TABLE_WIDTH - w;
      if ((int)strlen(fails) > room && room > 4) {
        int cut = room - 4;
        while (cut > 0 && fails[cut] != ' ') cut--;
        snprintf(fails + cut, sizeof fails - (size_t)cut, "%s...", cut ? " " : "");
      }
      printf("%s%s\n", row, fails[0] ? fails : "-");
      fflush(stdout);
      if (cx_index >= 0)
        raspK_counterexample(&prog, cx_D, cx_M, (int)o.V, o.seed, (uint64_t)cx_index, stdout);
    } else if (unexpected_pass && !o.json) {
      printf("%-26s PASS! (declared task['expect'] = 'fail', but passed every cell)\n", prog.name);
    }
    raspM_free(cells);
    if (own_Ms) raspM_free(Ms);
    raspK_program_free(&prog);
  }
  if (legend)
    printf("fail*: failed as its task['expect'] = 'fail' declares (a known-wrong listing); "
           "--strict: FAIL\n");
  raspW_checkpoint_free(ckpt);
  free_vopts(&o);
  return status;
}

/* ------------------------------------------- plain programs (layers, draw) */

/* Whether a load failed only because the file declares no task (a plain
** program). */
static int is_plain(const rasp_error *err) {
  return err->code == RASP_E_NO_TASK;
}

/* 0 after a message when a path-star program's option (--D, --M, --V) was
** given for a plain program, which would not use it. */
static int plain_opts_only(const char *cmd, const vopts *o, const char *file) {
  if (!o->sized) return 1;
  fprintf(stderr, "rasp %s: %s is for programs that declare `task`; %s does not (its inputs "
                  "come from --input, --input-vocab or --vocab and --length)\n", cmd, o->sized,
          file);
  return 0;
}

/* 0 after a message when a plain program's option was given for a
** path-star program, which would not use it (draw takes one --input of
** the task: with_input). */
static int task_opts_only(const char *cmd, const vopts *o, const char *name, int with_input) {
  const char *opt = o->nL ? "--length" : o->input && !with_input ? "--input"
                  : o->input_vocab ? "--input-vocab" : o->vocab_file ? "--vocab" : NULL;
  if (!opt) return 1;
  fprintf(stderr, "rasp %s: %s is for plain programs; %s declares a task (its inputs come from "
                  "--D, --M and --V)\n", cmd, opt, name);
  return 0;
}

/* The vocabulary of plain programs: --vocab FILE, --input-vocab TEXT or the
** distinct symbols of --input TEXT; *input_len gets --input's length (0
** without it).  The count, or -1 after a message (bad usage). */
static int plain_vocab(const char *cmd, const vopts *o, char ***vocab, int *input_len) {
  rasp_error err = {0};
  int n = 0;
  *input_len = 0;
  *vocab = NULL;
  if (o->input) {
    char **syms;
    int k = raspC_split(o->input, &syms);
    *input_len = k;
    if (!o->vocab_file && !o->input_vocab) n = raspC_default_vocab(syms, k, vocab);
    raspC_free_strings(syms, k);
    if (k == 0) {
      fprintf(stderr, "rasp %s: --input: the input is empty\n", cmd);
      raspC_free_strings(*vocab, n);
      return -1;
    }
  }
  if (o->vocab_file) {
    n = raspC_read_vocab(o->vocab_file, vocab, &err);
    if (n < 0) {
      raspR_print(&err, stderr);
      return -1;
    }
  } else if (o->input_vocab) {
    n = raspC_split(o->input_vocab, vocab);
  } else if (!o->input) {
    fprintf(stderr, "rasp %s: a plain program (no `task`) needs --input TEXT, --input-vocab "
                    "TEXT or --vocab FILE\n", cmd);
    return -1;
  }
  if (n <= 0) {
    fprintf(stderr, "rasp %s: the vocabulary is empty\n", cmd);
    raspC_free_strings(*vocab, n);
    *vocab = NULL;
    return -1;
  }
  return n;
}

/* A plain program traced (entry main) for inputs of length n, or NULL with
** err set. */
static rasp_ctx *plain_trace(const vopts *o, const char *file, char **vocab, int nvocab, int n,
                             rasp_error *err) {
  rasp_ctx *ctx = rasp_ctx_new(n, NULL, err);
  if (!ctx) return NULL;
  if (!rasp_set_access(ctx, &o->access, err) ||
      !rasp_set_vocab(ctx, (const char *const *)vocab, nvocab, err) ||
      !rasp_load_stdlib(ctx, o->stdlib, err) || !rasp_exec_file(ctx, file, err) ||
      !rasp_trace(ctx, "main", err)) {
    rasp_ctx_free(ctx);
    return NULL;
  }
  return ctx;
}

/* The file name without its directory and .rasp, as rasp_program's name. */
static char *plain_name(const char *file) {
  const char *b = strrchr(file, '/');
  b = b ? b + 1 : file;
  size_t len = strlen(b);
  if (len > 5 && strcmp(b + len - 5, ".rasp") == 0) len -= 5;
  char *name = raspM_alloc(len + 1);
  memcpy(name, b, len);
  name[len] = '\0';
  return name;
}

/* ----------------------------------------------------------- rasp layers */

/* Least-squares fit of y on x; returns the residual sum of squares. */
static double fit_sse(const double *x, const double *y, int n, double *slope) {
  double mx = 0, my = 0, sxx = 0, sxy = 0, sse = 0;
  for (int i = 0; i < n; i++) mx += x[i], my += y[i];
  mx /= n;
  my /= n;
  for (int i = 0; i < n; i++) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
  double b = sxx > 0 ? sxy / sxx : 0;
  for (int i = 0; i < n; i++) {
    double r = y[i] - (my + b * (x[i] - mx));
    sse += r * r;
  }
  *slope = b;
  return sse;
}

void raspC_compiled_layers(rasp_ctx *ctx, int root, rasp_layers *L) {
  rasp_ir *ir = rasp_ctx_ir(ctx);
  if (root < 0 && !ir->noutputs) {
    raspL_analyse(ir, NULL, 0, L);
    snprintf(L->why, sizeof L->why, "the program has no output");
    return;
  }
  int nids = rasp_vocab_size(ctx);
  int64_t *ids = raspM_alloc(sizeof(int64_t) * (size_t)(nids + 1));
  for (int i = 0; i < nids; i++) ids[i] = i + 1;
  raspL_analyse_compiled(ir, root < 0 ? ir->outputs[0] : root, ids, nids, nids, L);
  raspM_free(ids);
}

/* One row of `rasp layers`: x is M (path-star) or the length (plain).  The
** layers and heads are the compiled model's (heads after CSE), "ir" the IR
** rule's layer count, "written" the heads as written, "chained" the MLP
** units that read another MLP unit (one MLP sublayer each, where the IR rule
** fuses element-wise chains), "decodes" those that decode a number for a
** select, a condition or the readout. */
static void layers_row(const vopts *o, const char *name, int plain, int D, int x, int n,
                       const rasp_layers *L) {
  if (o->json) {
    printf("{\"program\":\"");
    raspC_json_fputs(name, stdout);
    if (plain) printf("\",\"length\":%d", x);
    else printf("\",\"D\":%d,\"M\":%d", D, x);
    printf(",\"n\":%d,\"layers\":%d,\"attention_layers\":%d,\"mlp_layers\":%d,\"heads\":[", n,
           L->nlayers, L->attn_layers, L->mlp_layers);
    for (int l = 0; l < L->nlayers; l++) printf("%s%d", l ? "," : "", L->heads[l]);
    printf("],\"schedule\":\"%s\",\"ir_layers\":%d,\"heads_total\":%d,"
           "\"heads_written\":%d,\"chained\":%d,\"decodes\":%d",
           L->compiled ? "compiled" : "ir", L->ir_layers, L->total_heads, L->written_heads,
           L->chained, L->decodes);
    if (!L->compiled) {
      printf(",\"why\":\"");
      raspC_json_fputs(L->why, stdout);
      printf("\"");
    }
    printf("}\n");
    return;
  }
  char heads[1024];
  heads_text(L, heads, sizeof heads);
  if (plain) printf("%6d", x);
  else printf("%5d %5d", x, n);
  printf(" %7d %4d %5d %5d %5d %7d %7d %7d  %s\n", L->nlayers, L->ir_layers, L->attn_layers,
         L->mlp_layers, L->total_heads, L->written_heads, L->chained, L->decodes, heads);
  if (!L->compiled) printf("  (IR rule: %s)\n", L->why);
}

/* The growth of the layer count ys over xs (M or n): constant, linear or
** logarithmic, whichever least-squares line fits better. */
static void layers_growth(const vopts *o, const char *name, const char *var, const double *xs,
                          const double *ys, int k) {
  double *ls = raspM_alloc(sizeof(double) * (size_t)k);
  for (int i = 0; i < k; i++) ls[i] = log2(xs[i]);
  double lo = ys[0], hi = ys[0];
  for (int i = 0; i < k; i++) lo = ys[i] < lo ? ys[i] : lo, hi = ys[i] > hi ? ys[i] : hi;
  double slin, slog;
  double elin = fit_sse(xs, ys, k, &slin), elog = fit_sse(ls, ys, k, &slog);
  const char *kind = hi == lo ? "constant" : elin <= elog ? "linear" : "logarithmic";
  if (o->json) {
    printf("{\"program\":\"");
    raspC_json_fputs(name, stdout);
    printf("\",\"growth\":\"%s\",\"in\":\"%s\",\"min_layers\":%g,\"max_layers\":%g", kind, var,
           lo, hi);
    if (hi != lo)
      printf(",\"layers_per_unit\":%.4f,\"layers_per_doubling\":%.4f,\"residual_linear\":%.4f,"
             "\"residual_log\":%.4f", slin, slog, elin, elog);
    printf("}\n");
  } else if (hi == lo) {
    printf("growth: constant (%g layers for every %s)\n", lo, var);
  } else if (elin <= elog) {
    printf("growth: linear in %s (about %.2f layers per unit of %s; residual %.2f vs %.2f for "
           "log %s)\n", var, slin, var, elin, elog, var);
  } else {
    printf("growth: logarithmic in %s (about %.2f layers per doubling of %s; residual %.2f vs "
           "%.2f for %s)\n", var, slog, var, elog, elin, var);
  }
  raspM_free(ls);
}

int rasp_cli_layers(int argc, char **argv) {
  vopts o;
  init_vopts(&o, argc);
  int parsed = common_opts(RASPC_LAYERS, "layers", argc, argv, &o);
  if (parsed <= 0) {
    free_vopts(&o);
    return parsed == 0 ? 0 : 2;
  }
  if (!o.nM) parse_range("layers", "--M", "3..33", 2, 100, &o.Ms, &o.nM);
  int D = o.nD ? o.Ds[0] : 2;
  int status = 0;
  char **vocab = NULL;
  int nvocab = 0, input_len = 0;
  for (int p = 0; p < o.nprograms; p++) {
    rasp_program prog;
    rasp_error err = {0};
    int plain = 0;
    char *name = NULL;
    if (!raspK_load_with(o.programs[p], o.stdlib, &o.access, D, o.Ms[0], (int)o.V, &prog, &err)) {
      raspK_program_free(&prog);
      if (!is_plain(&err)) {
        raspR_print(&err, stderr);
        if (status != 2) status = raspR_exit_status(&err); /* an error in the program, or usage */
        continue;
      }
      if (!plain_opts_only("layers", &o, o.programs[p])) {
        status = 2;
        break;
      }
      if (!vocab && (nvocab = plain_vocab("layers", &o, &vocab, &input_len)) < 0) {
        status = 2;
        break;
      }
      if (!o.nL) {
        if (input_len) parse_range("layers", "--length", "1", 1, 1, &o.Ls, &o.nL), o.Ls[0] = input_len;
        else parse_range("layers", "--length", "1..16", 1, 16, &o.Ls, &o.nL);
      }
      plain = 1;
      name = plain_name(o.programs[p]);
    }
    if (!plain && !task_opts_only("layers", &o, prog.name, 0)) {
      raspK_program_free(&prog);
      status = 2;
      break;
    }
    const char *pname = plain ? name : prog.name;
    const int *xs_in = plain ? o.Ls : o.Ms;
    int nx = plain ? o.nL : o.nM;
    if (o.json) {
      /* rows only */
    } else if (plain) {
      printf("%s\n%6s %7s %4s %5s %5s %5s %7s %7s %7s  %s\n", pname, "n", "layers", "ir", "attn",
             "mlp", "heads", "written", "chained", "decodes", "heads per layer");
    } else {
      printf("%s (D=%d)\n%5s %5s %7s %4s %5s %5s %5s %7s %7s %7s  %s\n", pname, D, "M", "n",
             "layers", "ir", "attn", "mlp", "heads", "written", "chained", "decodes",
             "heads per layer");
    }
    double *xs = raspM_alloc(sizeof(double) * (size_t)nx), *ys = raspM_alloc(sizeof(double) * (size_t)nx);
    int k = 0;
    for (int xi = 0; xi < nx; xi++) {
      int x = xs_in[xi];
      err.set = 0;
      if (plain) {
        rasp_ctx *ctx = plain_trace(&o, o.programs[p], vocab, nvocab, x, &err);
        if (!ctx) {
          raspR_print(&err, stderr);
          status = raspR_exit_status(&err);
          break; /* the same error at every length */
        }
        rasp_layers L;
        raspC_compiled_layers(ctx, -1, &L);
        layers_row(&o, pname, 1, D, x, x, &L);
        ys[k] = L.nlayers;
        raspL_free(&L);
        rasp_ctx_free(ctx);
      } else {
        if (x < prog.min_M) continue;
        rasp_ptrace tr;
        if (!raspK_trace(&prog, D, x, (int)o.V, &tr, &err)) {
          raspR_print(&err, stderr);
          status = 1; /* as verify: the program fails at this size */
          continue;
        }
        layers_row(&o, pname, 0, D, x, tr.n, &tr.layers); /* compiled (raspK_trace) */
        ys[k] = tr.layers.nlayers;
        raspK_trace_free(&tr);
      }
      xs[k++] = x;
    }
    if (k >= 2) layers_growth(&o, pname, plain ? "n" : "M", xs, ys, k);
    fflush(stdout);
    raspM_free(xs);
    raspM_free(ys);
    raspM_free(name);
    if (!plain) raspK_program_free(&prog);
  }
  if (vocab) raspC_free_strings(vocab, nvocab);
  free_vopts(&o);
  return status;
}

/* ------------------------------------------------------------- rasp draw */

static void dot_escape(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    fputc(*s, f);
  }
}

/* A traced program as draw sees it: its IR, the nodes it returns and the
** sublayer of every node: the compiled model's (raspL_analyse_compiled, the
** schedule `rasp layers` counts), the IR rule's where the compiler
** refuses. */
typedef struct dgraph {
  rasp_ir *ir;
  const int *roots;
  int nroots;
  const int *sublayer;
} dgraph;

static void write_dot(const dgraph *g, const char *name, FILE *f) {
  rasp_ir *ir = g->ir;
  unsigned char *live = raspM_alloc((size_t)ir->nnodes);
  raspI_live(ir, g->roots, g->nroots, live);
  /* the name is the program's file name: any text, so escaped like a label */
  fputs("digraph \"", f);
  dot_escape(f, name);
  fputs("\" {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n", f);
  int maxs = 0;
  for (int i = 0; i < ir->nnodes; i++)
    if (live[i] && g->sublayer[i] > maxs) maxs = g->sublayer[i];
  for (int s = 0; s <= maxs; s++) {
    if (s == 0) fprintf(f, "  subgraph cluster_embed {\n    label=\"embeddings and constants\";\n");
    else fprintf(f, "  subgraph cluster_%d {\n    label=\"layer %d %s\";\n", s, (s + 1) / 2,
                 s % 2 ? "attention" : "MLP");
    for (int i = 0; i < ir->nnodes; i++) {
      const rasp_ir_node *nd = &ir->nodes[i];
      if (!live[i] || g->sublayer[i] != s || nd->op == RASP_OP_FULL) continue;
      rasp_component c = raspI_op_component(nd->op);
      if (c == RASP_COMP_SELECTOR && s != 0) continue;
      const char *shape = c == RASP_COMP_ATTN ? "box" : c == RASP_COMP_SELECTOR ? "diamond" : "ellipse";
      fprintf(f, "    n%d [shape=%s, label=\"", i, shape);
      if (nd->label) {
        dot_escape(f, nd->label);
        fputs("\\n", f);
      }
      fputs(raspI_op_name(nd->op), f);
      if (nd->op == RASP_OP_BINARY) fprintf(f, " %s", raspI_binop_name((rasp_binop)nd->aux));
      if (nd->op == RASP_OP_SELECT) fprintf(f, " %s", raspI_pred_name((rasp_pred)nd->aux));
      /* constants are folded into their users' labels to keep the graph legible */
      for (int k = 0; k < nd->nin; k++)
        if (ir->nodes[nd->in[k]].op == RASP_OP_FULL) {
          char cbuf[64];
          raspI_elem_format(ir, ir->nodes[nd->in[k]].c, cbuf, sizeof cbuf);
          fprintf(f, " [%d]=", k);
          dot_escape(f, cbuf);
        }
      if (nd->pos.src) fprintf(f, "\\nline %d", nd->pos.line);
      fputs("\"];\n", f);
    }
    fputs("  }\n", f);
  }
  /* selectors outside the embedding cluster float next to their heads */
  for (int i = 0; i < ir->nnodes; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    if (live[i] && raspI_op_component(nd->op) == RASP_COMP_SELECTOR && g->sublayer[i] != 0)
      fprintf(f, "  n%d [shape=diamond, label=\"%s %s\"];\n", i, raspI_op_name(nd->op),
              nd->op == RASP_OP_SELECT ? raspI_pred_name((rasp_pred)nd->aux) : "");
  }
  for (int i = 0; i < ir->nnodes; i++) {
    if (!live[i]) continue;
    for (int k = 0; k < ir->nodes[i].nin; k++)
      if (ir->nodes[ir->nodes[i].in[k]].op != RASP_OP_FULL)
        fprintf(f, "  n%d -> n%d;\n", ir->nodes[i].in[k], i);
  }
  fputs("}\n", f);
  raspM_free(live);
}

/* The graph as one JSON object: every live node (constants too, with their
** value) with its op, label, sublayer, transformer layer (0: embeddings and
** constants) and source line, and every edge between live nodes. */
static void write_json(const dgraph *g, const char *name, FILE *f) {
  rasp_ir *ir = g->ir;
  unsigned char *live = raspM_alloc((size_t)ir->nnodes);
  raspI_live(ir, g->roots, g->nroots, live);
  fputs("{\"program\":\"", f);
  raspC_json_fputs(name, f);
  fputs("\",\"outputs\":[", f);
  for (int r = 0; r < g->nroots; r++) fprintf(f, "%s%d", r ? "," : "", g->roots[r]);
  fputs("],\"nodes\":[", f);
  int first = 1;
  for (int i = 0; i < ir->nnodes; i++) {
    if (!live[i]) continue;
    const rasp_ir_node *nd = &ir->nodes[i];
    int s = g->sublayer[i] < 0 ? 0 : g->sublayer[i];
    fprintf(f, "%s{\"id\":%d,\"op\":\"%s\"", first ? "" : ",", i, raspI_op_name(nd->op));
    first = 0;
    if (nd->op == RASP_OP_BINARY) fprintf(f, ",\"binop\":\"%s\"", raspI_binop_name((rasp_binop)nd->aux));
    if (nd->op == RASP_OP_SELECT) fprintf(f, ",\"predicate\":\"%s\"", raspI_pred_name((rasp_pred)nd->aux));
    if (nd->op == RASP_OP_FULL) {
      char cbuf[64];
      raspI_elem_format(ir, nd->c, cbuf, sizeof cbuf);
      fputs(",\"value\":\"", f);
      raspC_json_fputs(cbuf, f);
      fputc('"', f);
    }
    if (nd->label) {
      fputs(",\"label\":\"", f);
      raspC_json_fputs(nd->label, f);
      fputc('"', f);
    }
    fprintf(f, ",\"sublayer\":%d,\"layer\":%d", s, (s + 1) / 2);
    if (nd->pos.src) fprintf(f, ",\"line\":%d", nd->pos.line);
    fputc('}', f);
  }
  fputs("],\"edges\":[", f);
  first = 1;
  for (int i = 0; i < ir->nnodes; i++) {
    if (!live[i]) continue;
    for (int k = 0; k < ir->nodes[i].nin; k++) {
      fprintf(f, "%s[%d,%d]", first ? "" : ",", ir->nodes[i].in[k], i);
      first = 0;
    }
  }
  fputs("]}\n", f);
  raspM_free(live);
}

/* svg and png through Graphviz, with no shell and no predictable file name:
** dot reads the DOT text from an unnamed temporary file and writes to a
** fresh mkstemp file beside out (raspR_atomic_open), renamed over out only
** when dot succeeded.  The exit status for rasp_cli_draw. */
static int render(const char *format, const char *out, const char *text, size_t len) {
  rasp_error err = {0};
  FILE *in = tmpfile();
  if (!in || fwrite(text, 1, len, in) != len || fflush(in) != 0 ||
      lseek(fileno(in), 0, SEEK_SET) != 0) {
    fprintf(stderr, "rasp draw: cannot write a temporary file: %s\n", strerror(errno));
    if (in) fclose(in);
    return 2;
  }
  rasp_afile af;
  if (!raspR_atomic_open(&af, out, &err)) {
    raspR_print(&err, stderr);
    fclose(in);
    return raspR_exit_status(&err);
  }
  char type[16];
  snprintf(type, sizeof type, "-T%s", format);
  const char *argv[] = {"dot", type, NULL};
  int status = 0;
  if (!raspR_spawn(argv, fileno(in), fileno(af.f), &err)) {
    int missing = errno == ENOENT;
    fprintf(stderr, "rasp draw: %s%s\n", err.msg,
            missing ? " (Debian: apt-get install graphviz); use --format dot" : "");
    raspR_atomic_abort(&af);
    status = missing ? 2 : 1;
  } else if (!raspR_atomic_commit(&af, &err)) {
    raspR_print(&err, stderr);
    status = raspR_exit_status(&err);
  }
  fclose(in);
  return status;
}

/* The format draw writes: --json, --format, else -o's extension, else dot.
** NULL after a message. */
static const char *draw_format(const vopts *o) {
  static const char *const known[] = {"dot", "svg", "png", "json", NULL};
  if (o->json) {
    if (o->format && strcmp(o->format, "json")) {
      fprintf(stderr, "rasp draw: --json does not combine with --format %s\n", o->format);
      return NULL;
    }
    return "json";
  }
  if (o->format) {
    for (int i = 0; known[i]; i++)
      if (strcmp(o->format, known[i]) == 0) return known[i];
    fprintf(stderr, "rasp draw: --format: expected dot, svg, png or json, got '%s'\n", o->format);
    return NULL;
  }
  const char *dot = o->out_file ? strrchr(o->out_file, '.') : NULL;
  if (dot && !strchr(dot, '/')) {
    if (strcmp(dot, ".gv") == 0) return "dot";
    for (int i = 0; known[i]; i++)
      if (strcmp(dot + 1, known[i]) == 0) return known[i];
  }
  return "dot";
}

int rasp_cli_draw(int argc, char **argv) {
  vopts o;
  init_vopts(&o, argc);
  int parsed = common_opts(RASPC_DRAW, "draw", argc, argv, &o);
  if (parsed <= 0) {
    free_vopts(&o);
    return parsed == 0 ? 0 : 2;
  }
  const char *format = draw_format(&o);
  if (!format) {
    free_vopts(&o);
    return 2;
  }
  if (o.nprograms > 1) {
    fprintf(stderr, "rasp draw: one program at a time, got '%s' too\n", o.programs[1]);
    free_vopts(&o);
    return 2;
  }
  int D = o.nD ? o.Ds[0] : 2, M = o.nM ? o.Ms[0] : 5;
  rasp_program prog;
  rasp_error err = {0};
  rasp_ptrace tr;
  memset(&tr, 0, sizeof tr);
  rasp_ctx *ctx = NULL; /* a plain program's */
  rasp_layers L;
  memset(&L, 0, sizeof L);
  char **vocab = NULL, *name = NULL;
  int nvocab = 0, status = 0;
  dgraph g;
  if (raspK_load_with(o.programs[0], o.stdlib, &o.access, D, M, (int)o.V, &prog, &err)) {
    if (!task_opts_only("draw", &o, prog.name, 1)) {
      status = 2;
      goto out;
    }
    if (o.input) { /* one input of the task (as rasp run takes it): its D and M */
      rasp_input in;
      if (o.nD || o.nM) {
        fprintf(stderr, "rasp draw: --input gives D and M (from its graph); it does not combine "
                        "with %s\n", o.nD ? "--D" : "--M");
        status = 2;
        goto out;
      }
      if ((status = raspC_task_input("draw", &prog, (int)o.V, o.input, &in))) goto out;
      D = in.D;
      M = in.M;
      raspK_input_free(&in);
    }
    if (!raspK_trace(&prog, D, M, (int)o.V, &tr, &err)) {
      raspR_print(&err, stderr);
      status = 1; /* as verify: the program fails at this size */
      goto out;
    }
    g = (dgraph){rasp_ctx_ir(tr.ctx), &tr.output, 1, tr.layers.sublayer};
  } else {
    if (!is_plain(&err)) {
      raspR_print(&err, stderr);
      status = raspR_exit_status(&err); /* an error in the program, or usage */
      goto out;
    }
    if (!plain_opts_only("draw", &o, o.programs[0])) {
      status = 2;
      goto out;
    }
    int input_len;
    if ((nvocab = plain_vocab("draw", &o, &vocab, &input_len)) < 0) {
      status = 2;
      goto out;
    }
    int n = o.nL ? o.Ls[0] : input_len ? input_len : 8;
    if (!(ctx = plain_trace(&o, o.programs[0], vocab, nvocab, n, &err))) {
      raspR_print(&err, stderr);
      status = raspR_exit_status(&err);
      goto out;
    }
    rasp_ir *ir = rasp_ctx_ir(ctx);
    raspC_compiled_layers(ctx, -1, &L);
    g = (dgraph){ir, ir->outputs, ir->noutputs, L.sublayer};
    name = plain_name(o.programs[0]);
  }
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (strcmp(format, "json") == 0) write_json(&g, name ? name : prog.name, mem);
  else write_dot(&g, name ? name : prog.name, mem);
  fclose(mem);
  if (strcmp(format, "dot") == 0 || strcmp(format, "json") == 0) {
    if (o.out_file) {
      if (!raspR_write_file(o.out_file, text, len, &err)) {
        raspR_print(&err, stderr);
        status = raspR_exit_status(&err);
      }
    } else {
      fwrite(text, 1, len, stdout);
    }
  } else {
    if (!o.out_file) {
      fprintf(stderr, "rasp draw: --format %s needs -o FILE\n", format);
      status = 2;
    } else {
      status = render(format, o.out_file, text, len);
    }
  }
  free(text);
out:
  if (ctx) {
    raspL_free(&L);
    rasp_ctx_free(ctx);
  } else if (tr.ctx) {
    raspK_trace_free(&tr);
  }
  raspK_program_free(&prog);
  if (vocab) raspC_free_strings(vocab, nvocab);
  raspM_free(name);
  free_vopts(&o);
  return status;
}
