/*
** cli_verify.c -- `rasp verify`: path-star programs checked on their task's
** random graphs (or every input, --exhaustive; or one, --input) for each
** (D, M), one table row per cell, --json one object per cell; --sweep one
** compact row per program; --plan the cost of an exhaustive run.
**
** The table fits 100 columns: the heads per layer are abbreviated (runs as
** "2x3", then cut) unless -v; --json has them all.  A legend line after
** the table explains fail* when one was shown.  Options are parsed from the
** one table of cli_opts.c into the raspC_vopts that layers and draw share
** (cli_common.c).
*/
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

/* The heads per layer in at most width columns: in full when they fit,
** else with runs written as "2x9", else cut at a space and ended " ...".
** The full list is under -v and in --json. */
static void heads_fit(const rasp_layers *L, int width, char *buf, size_t size) {
  raspC_heads_text(L, buf, size);
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

/* `rasp verify PROGRAM --input TEXT`: one input, judged and explained. */
static int verify_one(raspC_vopts *o) {
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
static int verify_plan(raspC_vopts *o) {
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

/* One run of `rasp verify` over its programs: the options and what the
** rows of every program share. */
typedef struct vrun {
  raspC_vopts *o;
  raspW_checkpoint *ckpt; /* --checkpoint, or NULL */
  int shuffled;           /* --vocab-order shuffled */
  int compact;            /* --sweep's one row per program (not -v, --json) */
  int given_M;            /* --M was given (else a sweep takes the program's) */
  int legend;             /* a fail* was shown */
} vrun;

/* One program's run: its cells so far, its counterexample and the error
** of its last cell. */
typedef struct vprog {
  rasp_program prog;
  rasp_error err;
  int *Ms, nM, own_Ms;
  vcell *cells;
  int ncells, any_fail, any_error, any_leak, lay_lo, lay_hi;
  uint64_t graphs_done;
  int shown_counterexample, cx_D, cx_M; /* compact: the cell whose */
  int64_t cx_index;                     /*   counterexample follows the row */
} vprog;

/* What one (D, M) cell's run gave. */
typedef struct vout {
  int D, M, ok, pass, proof, leak;
  rasp_vresult res, sres; /* sres: the shuffled-ids run's */
  uint64_t resumed;       /* inputs a checkpoint brought */
  double secs;
} vout;

/* verify's own usage rules, past the option table's: 0, or 2 after a
** message.  (--vocab-order's value and --input are judged before.) */
static int verify_usage(const raspC_vopts *o) {
  if ((o->checkpoint || o->resume || o->plan) && !o->exhaustive) {
    fprintf(stderr, "rasp verify: --%s is for --exhaustive runs\n",
            o->plan ? "plan" : o->checkpoint ? "checkpoint" : "resume");
    return 2;
  }
  if ((o->resume || o->ckpt_every_given) && !o->checkpoint) {
    fprintf(stderr, "rasp verify: --%s needs --checkpoint FILE\n",
            o->resume ? "resume" : "checkpoint-every");
    return 2;
  }
  if (o->vocab_order && strcmp(o->vocab_order, "shuffled") == 0 && o->exhaustive) {
    fprintf(stderr, "rasp verify: --vocab-order shuffled draws random graphs; it does not combine "
                    "with --exhaustive\n");
    return 2;
  }
  if (o->sweep && o->exhaustive) {
    fprintf(stderr, "rasp verify: --sweep does not combine with --exhaustive\n");
    return 2;
  }
  return 0;
}

/* A failing cell's first failing input, as `rasp verify --input` reads it
** (its index: the sample of --seed, or the exhaustive enumeration's). */
static void cell_json_counterexample(const vrun *r, const rasp_ptrace *tr, const vout *c) {
  int64_t *tokens = raspM_alloc(sizeof(int64_t) * (size_t)tr->n), lead = 0, target = 0;
  rasp_error err = {0};
  printf(",\"counterexample\":{\"index\":%lld", (long long)c->res.first_fail);
  if (raspK_failing_input(tr, r->o->exhaustive, (uint64_t)r->o->seed,
                          (uint64_t)c->res.first_fail, tokens, &lead, &target, &err)) {
    printf(",\"input\":\"");
    char buf[64];
    for (int i = 0; i < tr->n; i++) {
      raspT_token_text(&tr->opts, (int)tokens[i], buf, sizeof buf);
      if (i) putchar(' ');
      raspC_json_fputs(buf, stdout);
    }
    printf("\"");
  }
  printf("}");
  raspM_free(tokens);
}

/* A cell as one JSON object. */
static void cell_json(const vrun *r, const vprog *vp, const rasp_ptrace *tr, const vout *c) {
  const raspC_vopts *o = r->o;
  const rasp_program *prog = &vp->prog;
  printf("{\"program\":\"%s\",\"D\":%d,\"M\":%d,\"V\":%d,\"n\":%d,\"mode\":\"%s\","
         "\"seed\":%llu,\"passed\":%llu,"
         "\"total\":%llu,\"ok\":%s,\"expect_fail\":%s,\"layers\":%d,\"attention_layers\":%d,"
         "\"mlp_layers\":%d,\"heads\":[",
         prog->name, c->D, c->M, tr->opts.V, tr->n, o->exhaustive ? "exhaustive" : "random",
         (unsigned long long)o->seed,
         (unsigned long long)c->res.passed, (unsigned long long)c->res.total,
         c->pass ? "true" : "false", prog->expect_fail ? "true" : "false",
         tr->layers.nlayers, tr->layers.attn_layers,
         tr->layers.mlp_layers);
  for (int l = 0; l < tr->layers.nlayers; l++) printf("%s%d", l ? "," : "", tr->layers.heads[l]);
  char how[512];
  if (tr->staged) raspS_describe(tr->staged, how, sizeof how);
  printf("],\"check\":\"%s: %s\"",
         tr->staged ? "staged" : "interpreted",
         tr->staged ? how : tr->unstaged ? tr->unstaged : "no check function");
  if (tr->probe_causal)
    printf(",\"causal_probes\":%llu,\"causal_leaks\":%llu", (unsigned long long)c->res.probes,
           (unsigned long long)c->res.leaks);
  if (o->exhaustive) {
    printf(",\"proof\":%s,\"order\":\"", c->proof ? "true" : "false");
    if (c->proof) printf("invariant");
    else if (!tr->order.invariant) json_text(tr->order.why.msg, tr->order.why.pos.src ? tr->order.why.pos.line : 0);
    else if (c->res.mixed) printf("an aggregate averaged different ids on %llu inputs", (unsigned long long)c->res.mixed);
    else printf("not analysed");
    printf("\",\"watched_aggregates\":%d,\"inputs_averaging_ids\":%llu",
           tr->order.invariant ? tr->order.nmixing : 0, (unsigned long long)c->res.mixed);
    if (c->resumed) printf(",\"resumed_inputs\":%llu", (unsigned long long)c->resumed);
  }
  if (r->shuffled)
    printf(",\"vocab_order\":\"shuffled\",\"shuffled_passed\":%llu,\"verdicts_changed\":%llu",
           (unsigned long long)c->sres.passed, (unsigned long long)c->sres.changed);
  if (c->ok && !c->pass && c->res.first_fail >= 0) cell_json_counterexample(r, tr, c);
  printf(",\"seconds\":%.3f}\n", c->secs);
}

/* A cell as a row of the table, and what an exhaustive run proved. */
static void cell_row(vrun *r, const vprog *vp, const rasp_ptrace *tr, const vout *c) {
  const raspC_vopts *o = r->o;
  const rasp_program *prog = &vp->prog;
  char frac[64], sh[64] = "", row[256], heads[512];
  raspC_heads_text(&tr->layers, heads, sizeof heads);
  snprintf(frac, sizeof frac, "%llu/%llu", (unsigned long long)c->res.passed,
           (unsigned long long)c->res.total);
  if (r->shuffled)
    snprintf(sh, sizeof sh, "%llu/%llu %s  ", (unsigned long long)c->sres.passed,
             (unsigned long long)c->res.total, c->sres.changed ? "CHANGED" : "same");
  const char *verdict = !c->ok ? "ERROR" : c->leak ? "LEAK" : c->pass ? "ok"
                        : prog->expect_fail ? "fail*" : "FAIL";
  if (!strcmp(verdict, "fail*")) r->legend = 1;
  int w = snprintf(row, sizeof row, "%-26s %3d %3d %13s  %-6s %3d %4d %3d  %s", prog->name,
                   c->D, c->M, frac, verdict, tr->layers.nlayers, tr->layers.attn_layers,
                   tr->layers.mlp_layers, sh);
  if (!o->verbose) heads_fit(&tr->layers, TABLE_WIDTH - w, heads, sizeof heads);
  printf("%s%s\n", row, heads);
  if (!o->exhaustive || !c->ok) return;
  printf("  exhaustive: all %llu inputs (every %s order x every target): ",
         (unsigned long long)c->res.total, tr->opts.order == RASP_ORDER_ARM ? "arm" : "edge");
  if (c->proof) printf("proof (the program is order-invariant)\n");
  else {
    printf("sample (the id order was fixed: ");
    if (!tr->order.invariant) {
      if (tr->order.why.pos.src) printf("line %d: ", tr->order.why.pos.line);
      printf("%s)\n", tr->order.why.msg);
    } else
      printf("an aggregate averaged different ids on %llu inputs)\n", (unsigned long long)c->res.mixed);
  }
  /* counts a checkpoint brought were not checked again: say so */
  if (c->resumed)
    printf("  resumed: %llu of these inputs were counted by checkpoint '%s', "
           "which is trusted input\n", (unsigned long long)c->resumed, o->checkpoint);
}

/* A failing cell's first failure: one shrunk counterexample per program is
** enough to read (in the compact table it follows the program's row), the
** failure's index after it or under --no-shrink. */
static void cell_counterexample(const vrun *r, vprog *vp, rasp_ptrace *tr, const vout *c) {
  const raspC_vopts *o = r->o;
  if (o->no_shrink || vp->shown_counterexample) {
    if (o->exhaustive)
      printf("  first failing input: exhaustive input %lld\n", (long long)c->res.first_fail);
    else if (!r->compact)
      printf("  first failing graph: index %lld of seed %llu\n", (long long)c->res.first_fail,
             o->seed);
  } else if (o->exhaustive) {
    raspK_counterexample_exhaustive(&vp->prog, tr, (uint64_t)c->res.first_fail, stdout);
    vp->shown_counterexample = 1;
  } else if (r->compact) {
    vp->cx_D = c->D;
    vp->cx_M = c->M;
    vp->cx_index = c->res.first_fail;
    vp->shown_counterexample = 1;
  } else {
    raspK_counterexample(&vp->prog, c->D, c->M, (int)o->V, o->seed, (uint64_t)c->res.first_fail,
                         stdout);
    vp->shown_counterexample = 1;
  }
}

/* The cell's result in the program's list (for --sweep's row). */
static void record_cell(const vrun *r, vprog *vp, const rasp_ptrace *tr, const vout *c) {
  vcell *v = &vp->cells[vp->ncells++];
  v->D = c->D;
  v->M = c->M;
  v->ok = c->ok;
  v->pass = c->pass;
  v->passed = c->res.passed;
  v->total = c->res.total;
  v->layers = tr->layers.nlayers;
  v->shuffled = r->shuffled && c->ok;
  v->spassed = c->sres.passed;
  v->changed = c->sres.changed;
  vp->graphs_done += c->res.total;
  if (tr->layers.nlayers < vp->lay_lo) vp->lay_lo = tr->layers.nlayers;
  if (tr->layers.nlayers > vp->lay_hi) vp->lay_hi = tr->layers.nlayers;
}

/* The verification of cell (D, M) of a program, with its output: 1 when it
** makes the exit status 1 (an error, a leak, an unexpected failure), else 0. */
static int verify_cell(vrun *r, vprog *vp, int D, int M) {
  const raspC_vopts *o = r->o;
  rasp_program *prog = &vp->prog;
  rasp_ptrace tr;
  vp->err.set = 0;
  double t0 = now();
  if (!raspK_trace(prog, D, M, (int)o->V, &tr, &vp->err)) {
    fprintf(stderr, "rasp verify: %s at D=%d, M=%d:\n", prog->name, D, M);
    raspR_print(&vp->err, stderr);
    vp->any_error = 1;
    return 1; /* whatever the code: the program fails at this size */
  }
  vout c;
  memset(&c, 0, sizeof c);
  c.D = D;
  c.M = M;
  progress_state ps = {prog->name, o->exhaustive ? "inputs" : "graphs", D, M, t0, 0, 0,
                       o->progress, 0, 0};
  if (o->exhaustive) raspK_order(prog, &tr);
  /* in ranges (rwork.h): shared among MPI ranks, recorded in --checkpoint */
  raspW_opts wo = {r->ckpt, show_progress, &ps};
  c.ok = o->exhaustive ? raspW_exhaustive(prog, &tr, (uint64_t)o->cap, (int)o->jobs, &wo, &c.res,
                                          &c.resumed, &vp->err)
                       : raspW_random(prog, &tr, (uint64_t)o->graphs, o->seed, (int)o->jobs, &wo,
                                      &c.res);
  if (ps.shown && isatty(2)) fputc('\n', stderr);
  if (c.resumed)
    fprintf(stderr, "  (%s D=%d M=%d: %llu of the inputs were done in '%s')\n", prog->name, D,
            M, (unsigned long long)c.resumed, o->checkpoint);
  if (!c.ok && !o->exhaustive) vp->err = c.res.error;
  if (c.ok && r->shuffled) {
    c.ok = raspK_verify_shuffled(prog, &tr, (uint64_t)o->graphs, o->seed, (int)o->jobs, &c.sres);
    if (!c.ok) vp->err = c.sres.error;
  }
  c.secs = now() - t0;
  c.pass = c.ok && c.res.passed == c.res.total;
  c.proof = o->exhaustive && c.ok && tr.order.invariant && c.res.mixed == 0;
  c.leak = c.ok && c.res.leaks > 0; /* declared causal, yet reads ahead */
  if (!c.ok) vp->any_error = 1;
  if (c.leak) vp->any_leak = 1;
  if (c.ok && !c.pass) vp->any_fail = 1;
  /* a listing known to be wrong is expected to fail somewhere in the run
  ** (judged after its last cell); anything else must pass */
  int fails = !c.ok || c.leak || (!c.pass && (!prog->expect_fail || o->strict));
  record_cell(r, vp, &tr, &c);
  if (o->json) cell_json(r, vp, &tr, &c);
  else if (!r->compact) cell_row(r, vp, &tr, &c);
  fflush(stdout);
  if (!c.ok) raspR_print(&vp->err, stderr);
  if (c.leak && !o->json) raspK_print_leak(&tr, o->seed, &c.res, stdout);
  if (!c.pass && c.ok && !o->quiet && !o->json && c.res.first_fail >= 0)
    cell_counterexample(r, vp, &tr, &c);
  if (c.secs > 2 && !o->json)
    fprintf(stderr, "  (%s D=%d M=%d took %.1f s)\n", prog->name, D, M, c.secs);
  raspK_trace_free(&tr);
  return fails;
}

/* --sweep's one row for a program: its D and M ranges, cells, graphs,
** verdict, layer range and failing cells (cut to the table's width), then
** its counterexample. */
static void sweep_row(vrun *r, const vprog *vp, int unexpected_pass) {
  const raspC_vopts *o = r->o;
  char dtext[64], mtext[64], lay[32], fails[1024], chg[1024] = "";
  int ds[64], nd = 0;
  for (int i = 0; i < o->nD && nd < 64; i++) ds[nd++] = o->Ds[i];
  list_text(ds, nd, dtext, sizeof dtext);
  list_text(vp->Ms, vp->nM, mtext, sizeof mtext);
  if (vp->lay_lo == vp->lay_hi) snprintf(lay, sizeof lay, "%d", vp->lay_lo);
  else snprintf(lay, sizeof lay, "%d-%d", vp->lay_lo, vp->lay_hi);
  failing_text(vp->cells, vp->ncells, o->nD, 0, fails, sizeof fails);
  if (r->shuffled) {
    failing_text(vp->cells, vp->ncells, o->nD, 1, chg, sizeof chg);
    size_t l = strlen(fails);
    snprintf(fails + l, sizeof fails - l, "%sids: %s", l ? "; " : "", chg[0] ? chg : "same");
  }
  const char *verdict = vp->any_error ? "ERROR" : vp->any_leak ? "LEAK"
                        : unexpected_pass ? "PASS!" : !vp->any_fail ? "ok"
                        : vp->prog.expect_fail ? "fail*" : "FAIL";
  if (!strcmp(verdict, "fail*")) r->legend = 1;
  char row[256];
  int w = snprintf(row, sizeof row, "%-26s %5s %6s %5d %9llu  %-6s %5s  ", vp->prog.name, dtext,
                   mtext, vp->ncells, (unsigned long long)vp->graphs_done, verdict, lay);
  /* the failing cells cut to the table's width (-v: one row per cell) */
  int room = TABLE_WIDTH - w;
  if ((int)strlen(fails) > room && room > 4) {
    int cut = room - 4;
    while (cut > 0 && fails[cut] != ' ') cut--;
    snprintf(fails + cut, sizeof fails - (size_t)cut, "%s...", cut ? " " : "");
  }
  printf("%s%s\n", row, fails[0] ? fails : "-");
  fflush(stdout);
  if (vp->cx_index >= 0)
    raspK_counterexample(&vp->prog, vp->cx_D, vp->cx_M, (int)o->V, o->seed,
                         (uint64_t)vp->cx_index, stdout);
}

/* The M values of a program's cells: --M's, or a sweep's M = 3 (or the
** program's min_M) .. its task['sweep_M'] (default 10) unless --M says
** otherwise. */
static void program_Ms(const vrun *r, vprog *vp) {
  vp->Ms = r->o->Ms;
  vp->nM = r->o->nM;
  if (!r->o->sweep || r->given_M) return;
  int lo = vp->prog.min_M > 3 ? vp->prog.min_M : 3, hi = vp->prog.sweep_M ? vp->prog.sweep_M : 10;
  if (hi < lo) hi = lo;
  vp->Ms = raspM_alloc(sizeof(int) * (size_t)(hi - lo + 1));
  vp->nM = 0;
  for (int m = lo; m <= hi; m++) vp->Ms[vp->nM++] = m;
  vp->own_Ms = 1;
}

/* Every cell's size checked before any runs: one usage error naming the
** cells the task cannot have (--V too small for a graph, M or D below the
** program's minimum), not one error per cell.  1 when all are valid. */
static int sizes_valid(const vrun *r, const vprog *vp) {
  const raspC_vopts *o = r->o;
  char bad[512] = "";
  size_t at = 0;
  int nbad = 0;
  rasp_error first = {0};
  for (int mi = 0; mi < vp->nM; mi++)
    for (int di = 0; di < o->nD; di++) {
      rasp_task_opts t = vp->prog.base;
      t.D = o->Ds[di], t.M = vp->Ms[mi], t.V = (int)o->V;
      rasp_error e = {0};
      if (t.M < vp->prog.min_M || t.D < vp->prog.min_D)
        raspR_setnopos(&e, "%s needs M >= %d and D >= %d", vp->prog.name, vp->prog.min_M,
                       vp->prog.min_D);
      else if (raspT_opts_check(&t, &e))
        continue;
      if (!nbad++) first = e;
      if (at < sizeof bad - 16)
        at += (size_t)snprintf(bad + at, sizeof bad - at, "%s(D=%d, M=%d)", at ? " " : "", t.D,
                               t.M);
    }
  if (!nbad) return 1;
  fprintf(stderr, "rasp verify: %s: %d of the %d cells asked for are outside the task: %s; %s; "
                  "no cell was run\n", vp->prog.name, nbad, vp->nM * o->nD, bad, first.msg);
  return 0;
}

/* One program verified in every cell; the exit status so far (status)
** updated. */
static int verify_program(vrun *r, const char *file, int status) {
  const raspC_vopts *o = r->o;
  vprog vp;
  memset(&vp, 0, sizeof vp);
  if (!raspK_load_with(file, o->stdlib, &o->access, o->Ds[0], o->Ms[0], (int)o->V, &vp.prog,
                       &vp.err)) {
    raspR_print(&vp.err, stderr);
    status = status ? status : raspR_exit_status(&vp.err);
    if (raspR_exit_status(&vp.err) == 2) status = 2;
    return status;
  }
  vp.cx_index = -1;
  vp.lay_lo = 1 << 30;
  vp.prog.interpret_check = o->interpret_check;
  program_Ms(r, &vp);
  if (!sizes_valid(r, &vp)) {
    if (vp.own_Ms) raspM_free(vp.Ms);
    raspK_program_free(&vp.prog);
    return 2;
  }
  vp.cells = raspM_alloc(sizeof(vcell) * (size_t)(vp.nM * o->nD));
  for (int mi = 0; mi < vp.nM; mi++)
    for (int di = 0; di < o->nD; di++)
      if (verify_cell(r, &vp, o->Ds[di], vp.Ms[mi])) status = 1;
  int unexpected_pass = vp.prog.expect_fail && !o->strict && !vp.any_fail && !vp.any_error &&
                        vp.ncells > 0;
  if (unexpected_pass) status = 1;
  if (r->compact && vp.ncells) {
    sweep_row(r, &vp, unexpected_pass);
  } else if (unexpected_pass && !o->json) {
    printf("%-26s PASS! (declared task['expect'] = 'fail', but passed every cell)\n",
           vp.prog.name);
  }
  raspM_free(vp.cells);
  if (vp.own_Ms) raspM_free(vp.Ms);
  raspK_program_free(&vp.prog);
  return status;
}

/* The programs verified, random or exhaustive, into the table (or --json
** rows): the exit status. */
static int verify_programs(raspC_vopts *o, int given_M) {
  vrun r = {o, NULL, 0, 0, given_M, 0};
  r.shuffled = o->vocab_order && strcmp(o->vocab_order, "shuffled") == 0;
  r.compact = o->sweep && !o->verbose && !o->json;
  if (o->checkpoint) {
    rasp_error cerr = {0};
    if (!(r.ckpt = raspW_checkpoint_open(o->checkpoint, o->resume, (double)o->ckpt_every, &cerr))) {
      fprintf(stderr, "rasp verify: %s\n", cerr.msg);
      return 2;
    }
  }
  int status = 0;
  if (r.compact)
    printf("%-26s %5s %6s %5s %9s  %-6s %5s  %s\n", "program", "D", "M", "cells", "graphs", "result",
           "lay", r.shuffled ? "failing cells; ids: changed" : "failing (D, M) cells");
  else if (!o->json)
    printf("%-26s %3s %3s %13s  %-6s %3s %4s %3s  %s\n", "program", "D", "M", "passed/total",
           "result", "lay", "attn", "mlp", r.shuffled ? "shuffled ids  heads per layer" : "heads per layer");
  for (int p = 0; p < o->nprograms; p++) status = verify_program(&r, o->programs[p], status);
  if (r.legend)
    printf("fail*: failed as its task['expect'] = 'fail' declares (a known-wrong listing); "
           "--strict: FAIL\n");
  raspW_checkpoint_free(r.ckpt);
  return status;
}

static int verify_main(int argc, char **argv) {
  raspC_vopts o;
  raspC_vopts_init(&o, argc);
  int status = raspC_vopts_parse(RASPC_VERIFY, "verify", argc, argv, &o);
  if (status <= 0) {
    status = status == 0 ? 0 : 2;
  } else if (o.vocab_order && strcmp(o.vocab_order, "fixed") != 0 &&
             strcmp(o.vocab_order, "shuffled") != 0) {
    fprintf(stderr, "rasp verify: --vocab-order: expected fixed or shuffled, got '%s'\n",
            o.vocab_order);
    status = 2;
  } else if (o.input) {
    status = verify_one(&o);
  } else if (!(status = verify_usage(&o))) {
    int given_M = o.nM > 0;
    if (!o.nD) raspC_range("verify", "--D", "2..5", 1, 100, &o.Ds, &o.nD);
    if (!o.nM) raspC_range("verify", "--M", "5", 2, 100, &o.Ms, &o.nM);
    status = o.plan ? verify_plan(&o) : verify_programs(&o, given_M);
  }
  raspC_vopts_free(&o);
  return status;
}
