/*
** cli_gen.c -- `rasp gen`: write path-star samples (or their exact counts).
**
** Options come from the one table of every command (cli_opts.c; no global
** getopt state, so the function can be called repeatedly in-process): long
** options take their value as `--D 3` or `--D=3`, -n and -o also as
** `-n10`.  Every failure is reported and returned as a status; nothing here
** calls exit().
*/
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rmem.h"
#include "rtask.h"

#define P "rasp gen: "

typedef struct {
  rasp_task_opts t;
  unsigned long long n;
  uint64_t seed;
  int jsonl;
  int count;
  const char *output;
} gen_args;

/* ---- value parsing ------------------------------------------------------ */

static int parse_ll(const char *s, long long *out) {
  if (!*s) return -1;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

static int opt_int(const char *opt, const char *val, long long lo, long long hi,
                   int *out) {
  long long v;
  if (parse_ll(val, &v) != 0 || v < lo || v > hi) {
    if (hi == INT_MAX)
      fprintf(stderr, P "%s: expected an integer >= %lld, got '%s'\n", opt, lo,
              val);
    else
      fprintf(stderr, P "%s: expected an integer between %lld and %lld, got '%s'\n",
              opt, lo, hi, val);
    return -1;
  }
  *out = (int)v;
  return 0;
}

static int opt_u64(const char *opt, const char *val, uint64_t *out) {
  const char *p = val;
  int base = 10;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    p += 2;
    base = 16;
  }
  errno = 0;
  char *end;
  unsigned long long v = 0;
  int ok = *p && *p != '-' && *p != '+' && *p != ' ';
  if (ok) v = strtoull(p, &end, base);
  if (!ok || errno || *end) {
    fprintf(stderr,
            P "%s: expected an unsigned 64-bit integer (decimal or 0x hex), got '%s'\n",
            opt, val);
    return -1;
  }
  *out = (uint64_t)v;
  return 0;
}

static int opt_choice(const char *opt, const char *val, const char *const *names,
                      int *out) {
  for (int i = 0; names[i]; i++)
    if (strcmp(val, names[i]) == 0) {
      *out = i;
      return 0;
    }
  fprintf(stderr, P "%s: expected one of", opt);
  for (int i = 0; names[i]; i++) fprintf(stderr, "%s %s", i ? "," : "", names[i]);
  fprintf(stderr, "; got '%s'\n", val);
  return -1;
}

static const char *const order_names[] = {"edge", "arm", NULL};
static const char *const q_names[] = {"start", "end", NULL};
static const char *const answer_names[] = {"none", "forward", "reverse", "lead",
                                           NULL};
static const char *const format_names[] = {"jsonl", "text", NULL};

/* Applies one option; -1 on a bad value (reported). */
static int apply(gen_args *g, int id, const char *opt, const char *val) {
  int v;
  switch (id) {
  case RASPC_O_D: return opt_int(opt, val, 1, INT_MAX, &g->t.D);
  case RASPC_O_M: return opt_int(opt, val, 2, INT_MAX, &g->t.M);
  case RASPC_O_V: return opt_int(opt, val, 1, RASP_TASK_MAX_V, &g->t.V);
  case RASPC_O_COUNT_SAMPLES: {
    long long n;
    if (parse_ll(val, &n) != 0 || n < 0) {
      fprintf(stderr, P "%s: expected an integer >= 0, got '%s'\n", opt, val);
      return -1;
    }
    g->n = (unsigned long long)n;
    return 0;
  }
  case RASPC_O_SEED: return opt_u64(opt, val, &g->seed);
  case RASPC_O_ORDER:
    if (opt_choice(opt, val, order_names, &v) != 0) return -1;
    g->t.order = (rasp_order)v;
    return 0;
  case RASPC_O_Q:
    if (opt_choice(opt, val, q_names, &v) != 0) return -1;
    g->t.q = (rasp_qpos)v;
    return 0;
  case RASPC_O_ANSWER:
    if (opt_choice(opt, val, answer_names, &v) != 0) return -1;
    g->t.answer = (rasp_answer)v;
    return 0;
  case RASPC_O_BOS: g->t.bos = 1; return 0;
  case RASPC_O_NO_BOS: g->t.bos = 0; return 0;
  case RASPC_O_EOS: g->t.eos = 1; return 0;
  case RASPC_O_NO_EOS: g->t.eos = 0; return 0;
  case RASPC_O_STRUCTURED: return opt_int(opt, val, 0, INT_MAX, &g->t.structured);
  case RASPC_O_ST_NAMES: g->t.st_names = 1; return 0;
  case RASPC_O_MARKERS: return opt_int(opt, val, 1, 2, &g->t.markers);
  case RASPC_O_FORMAT:
    if (opt_choice(opt, val, format_names, &v) != 0) return -1;
    g->jsonl = v == 0;
    return 0;
  case RASPC_O_COUNT: g->count = 1; return 0;
  case RASPC_O_OUT:
    if (!*val) {
      fprintf(stderr, P "%s: expected a file name, got ''\n", opt);
      return -1;
    }
    g->output = val;
    return 0;
  default: return 0; /* --max-memory, --timeout: rasp.c's */
  }
}

/* 0: parsed; 1: help or version printed; -1: error (reported). */
static int parse_args(gen_args *g, int argc, char **argv) {
  raspC_arg *args;
  int n = raspC_parse(RASPC_GEN, argc, argv, &args), r = 0;
  if (n == RASPC_DONE) return 1;
  if (n == RASPC_BAD) return -1;
  for (int k = 0; k < n && r == 0; k++) {
    if (args[k].id == RASPC_OPERAND) {
      fprintf(stderr, P "unexpected argument '%s'\n", args[k].val);
      r = -1;
    } else {
      r = apply(g, args[k].id, args[k].name, args[k].val);
    }
  }
  raspM_free(args);
  return r;
}

/* ---- output ------------------------------------------------------------- */

static void write_tokens(FILE *f, const rasp_task_opts *o, const rasp_sample *s) {
  char buf[32];
  for (int i = 0; i < s->ntokens; i++) {
    raspT_token_text(o, s->tokens[i], buf, sizeof buf);
    fprintf(f, "%s%s", i ? " " : "", buf);
  }
}

static void write_sample(FILE *f, const gen_args *g, const rasp_sample *s,
                         unsigned long long index) {
  const rasp_task_opts *o = &g->t;
  if (!g->jsonl) {
    write_tokens(f, o, s);
    fputc('\n', f);
    return;
  }
  char small[1024], *line = small;
  size_t need = raspT_sample_json(o, s, index, small, sizeof small);
  if (need >= sizeof small) {
    line = raspM_alloc(need + 1);
    raspT_sample_json(o, s, index, line, need + 1);
  }
  fputs(line, f);
  fputc('\n', f);
  if (line != small) raspM_free(line);
}

static void write_counts(FILE *f, const rasp_task_opts *o) {
  mpz_t gq, tok, total;
  mpz_inits(gq, tok, total, NULL);
  raspT_count(o, gq, tok);
  mpz_mul(total, gq, tok);
  fprintf(f, "D = %d, M = %d, V = %d: N = %d nodes, %d edges, %s order\n", o->D,
          o->M, o->V, raspT_nodes(o), raspT_edges(o),
          o->order == RASP_ORDER_EDGE ? "edge" : "arm");
  gmp_fprintf(f, "distinct (G, Q) pairs, V!/((V-N)!(D-1)!): %Zd\n", gq);
  gmp_fprintf(f, "tokenisations per (G, Q), %s: %Zd\n",
              o->order == RASP_ORDER_EDGE ? "(D(M-1))!" : "D!", tok);
  gmp_fprintf(f, "distinct (G, Q, tokenisation): %Zd\n", total);
  if (o->st_names) {
    raspT_count_st_names(o, gq);
    mpz_mul(total, gq, tok);
    gmp_fprintf(f, "distinct sequences with --st-names, V!/((V-N+2)!(D-1)!) * "
                   "tokenisations: %Zd\n",
                total);
  }
  mpz_clears(gq, tok, total, NULL);
}

/* Finishes stdout, or commits the atomic file; the exit status (reported). */
static int close_output(FILE *f, rasp_afile *af) {
  rasp_error err = {0};
  if (af->f) {
    if (raspR_atomic_commit(af, &err)) return 0;
    fprintf(stderr, P "%s\n", err.msg);
    return raspR_exit_status(&err);
  }
  if (fflush(f) != 0 || ferror(f)) {
    fprintf(stderr, P "write error: %s\n", strerror(errno));
    return 1;
  }
  return 0;
}

int rasp_cli_gen(int argc, char **argv) {
  gen_args g;
  memset(&g, 0, sizeof g);
  raspT_opts_default(&g.t);
  g.n = 10;
  g.jsonl = 1;
  g.seed = 1; /* the default of every command that draws samples */

  int pr = parse_args(&g, argc, argv);
  if (pr == 1) return 0;
  if (pr != 0) return 2;
  if (g.t.structured > g.t.D - 1) {
    fprintf(stderr,
            P "--structured: expected an integer between 0 and D-1 = %d, got '%d'\n",
            g.t.D - 1, g.t.structured);
    return 2;
  }
  rasp_error err = {0};
  if (!raspT_opts_check(&g.t, &err)) {
    fprintf(stderr, P "%s\n", err.msg);
    return raspR_exit_status(&err);
  }

  rasp_afile af = {0};
  FILE *f = stdout;
  if (g.output) {
    if (!raspR_atomic_open(&af, g.output, &err)) {
      fprintf(stderr, P "%s\n", err.msg);
      return raspR_exit_status(&err);
    }
    f = af.f;
  }
  int rc = 0;
  if (g.count) {
    write_counts(f, &g.t);
  } else {
    int k = g.t.structured;
    rasp_sample *group = raspM_alloc((size_t)(k + 1) * sizeof *group);
    for (unsigned long long i = 0; i < g.n && rc == 0; i++) {
      int m = raspT_sample_group(&g.t, g.seed, i, group, &err);
      if (m < 0) {
        fprintf(stderr, P "%s\n", err.msg);
        rc = 2;
        break;
      }
      for (int j = 0; j < m; j++) write_sample(f, &g, &group[j], i);
      if (ferror(f)) {
        fprintf(stderr, P "write error: %s\n", strerror(errno));
        rc = 1;
      }
    }
    for (int j = 0; j <= k; j++) raspT_sample_free(&group[j]);
    raspM_free(group);
  }
  if (rc != 0) {
    raspR_atomic_abort(&af);
    return 1;
  }
  return close_output(f, &af);
}
