/*
** cli_gen.c -- `rasp gen`: write path-star samples (or their exact counts).
**
** Options are parsed by a hand loop (no global getopt state, so the
** function can be called repeatedly in-process).  Long options take their
** value as `--D 3` or `--D=3`; -n and -o also as `-n10`.  Every failure is
** reported and returned as a status; nothing here calls exit().
*/
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmem.h"
#include "rtask.h"

#define P "rasp gen: "

static void usage(FILE *f) {
  fputs(
      "usage: rasp gen [options]\n"
      "Writes path-star task samples (paper §1.1), one per line.\n"
      "\n"
      "  --D N               degree of the start node s (default 2)\n"
      "  --M N               arm length counting s, >= 2 (default 5)\n"
      "  --V N               node symbols 1..V, V >= D(M-1)+1 (default 100)\n"
      "  -n, --count-samples N\n"
      "                      number of samples (default 10); with\n"
      "                      --structured K each is followed by K variants\n"
      "  --seed S            64-bit seed, decimal or 0x hex (default 0);\n"
      "                      sample i depends only on (options, S, i)\n"
      "  --order edge|arm    edge-wise shuffle or arm-wise order (default edge)\n"
      "  --q start|end       Q = '/ s t =' before or after G (default start)\n"
      "  --answer none|forward|reverse|lead\n"
      "                      what follows Q and G (default forward: R_t)\n"
      "  --bos, --no-bos     BOS token first (default on, as in the paper)\n"
      "  --eos, --no-eos     EOS token last (default on, as in the paper)\n"
      "  --structured K      K extra samples per graph with other targets,\n"
      "                      0 <= K <= D-1 (default 0)\n"
      "  --st-names          write s and t as the symbols 's' and 't'\n"
      "  --markers 1|2       '|' tokens after each edge (default 1)\n"
      "  --format jsonl|text output format (default jsonl)\n"
      "  --count             print the exact numbers of (G, Q) pairs and of\n"
      "                      tokenisations instead of samples\n"
      "  -o, --output FILE   write to FILE atomically (default stdout)\n"
      "  -h, --help          this text\n",
      f);
}

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

/* ---- options table ------------------------------------------------------ */

enum {
  O_D, O_M, O_V, O_N, O_SEED, O_ORDER, O_Q, O_ANSWER, O_BOS, O_NOBOS, O_EOS,
  O_NOEOS, O_STRUCT, O_ST, O_MARKERS, O_FORMAT, O_COUNT, O_OUTPUT, O_HELP
};

static const struct {
  const char *name;
  int id, has_value;
} long_opts[] = {
    {"D", O_D, 1},           {"M", O_M, 1},
    {"V", O_V, 1},           {"count-samples", O_N, 1},
    {"seed", O_SEED, 1},     {"order", O_ORDER, 1},
    {"q", O_Q, 1},           {"answer", O_ANSWER, 1},
    {"bos", O_BOS, 0},       {"no-bos", O_NOBOS, 0},
    {"eos", O_EOS, 0},       {"no-eos", O_NOEOS, 0},
    {"structured", O_STRUCT, 1}, {"st-names", O_ST, 0},
    {"markers", O_MARKERS, 1}, {"format", O_FORMAT, 1},
    {"count", O_COUNT, 0},   {"output", O_OUTPUT, 1},
    {"help", O_HELP, 0},
};

static const char *const order_names[] = {"edge", "arm", NULL};
static const char *const q_names[] = {"start", "end", NULL};
static const char *const answer_names[] = {"none", "forward", "reverse", "lead",
                                           NULL};
static const char *const format_names[] = {"jsonl", "text", NULL};

/* Applies one option; -1 on a bad value (reported). */
static int apply(gen_args *g, int id, const char *opt, const char *val) {
  int v;
  switch (id) {
  case O_D: return opt_int(opt, val, 1, INT_MAX, &g->t.D);
  case O_M: return opt_int(opt, val, 2, INT_MAX, &g->t.M);
  case O_V: return opt_int(opt, val, 1, RASP_TASK_MAX_V, &g->t.V);
  case O_N: {
    long long n;
    if (parse_ll(val, &n) != 0 || n < 0) {
      fprintf(stderr, P "%s: expected an integer >= 0, got '%s'\n", opt, val);
      return -1;
    }
    g->n = (unsigned long long)n;
    return 0;
  }
  case O_SEED: return opt_u64(opt, val, &g->seed);
  case O_ORDER:
    if (opt_choice(opt, val, order_names, &v) != 0) return -1;
    g->t.order = (rasp_order)v;
    return 0;
  case O_Q:
    if (opt_choice(opt, val, q_names, &v) != 0) return -1;
    g->t.q = (rasp_qpos)v;
    return 0;
  case O_ANSWER:
    if (opt_choice(opt, val, answer_names, &v) != 0) return -1;
    g->t.answer = (rasp_answer)v;
    return 0;
  case O_BOS: g->t.bos = 1; return 0;
  case O_NOBOS: g->t.bos = 0; return 0;
  case O_EOS: g->t.eos = 1; return 0;
  case O_NOEOS: g->t.eos = 0; return 0;
  case O_STRUCT: return opt_int(opt, val, 0, INT_MAX, &g->t.structured);
  case O_ST: g->t.st_names = 1; return 0;
  case O_MARKERS: return opt_int(opt, val, 1, 2, &g->t.markers);
  case O_FORMAT:
    if (opt_choice(opt, val, format_names, &v) != 0) return -1;
    g->jsonl = v == 0;
    return 0;
  case O_COUNT: g->count = 1; return 0;
  case O_OUTPUT:
    if (!*val) {
      fprintf(stderr, P "%s: expected a file name, got ''\n", opt);
      return -1;
    }
    g->output = val;
    return 0;
  default: return -1;
  }
}

/* 0: parsed; 1: help printed; -1: error (reported). */
static int parse_args(gen_args *g, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] == '-' && a[1] == '-' && a[2]) {
      const char *name = a + 2;
      const char *eq = strchr(name, '=');
      size_t len = eq ? (size_t)(eq - name) : strlen(name);
      int found = -1;
      for (size_t k = 0; k < sizeof long_opts / sizeof *long_opts; k++)
        if (strlen(long_opts[k].name) == len &&
            strncmp(long_opts[k].name, name, len) == 0)
          found = (int)k;
      if (found < 0) {
        fprintf(stderr, P "unknown option '%.*s' (see rasp gen --help)\n",
                (int)(len + 2), a);
        return -1;
      }
      char opt[64];
      snprintf(opt, sizeof opt, "--%s", long_opts[found].name);
      const char *val = NULL;
      if (long_opts[found].has_value) {
        if (eq) val = eq + 1;
        else if (i + 1 < argc) val = argv[++i];
        else {
          fprintf(stderr, P "%s: missing value\n", opt);
          return -1;
        }
      } else if (eq) {
        fprintf(stderr, P "%s: takes no value, got '%s'\n", opt, eq + 1);
        return -1;
      }
      if (long_opts[found].id == O_HELP) return 1;
      if (apply(g, long_opts[found].id, opt, val) != 0) return -1;
    } else if (a[0] == '-' && (a[1] == 'n' || a[1] == 'o' || a[1] == 'h')) {
      char opt[3] = {'-', a[1], 0};
      if (a[1] == 'h') {
        if (a[2]) {
          fprintf(stderr, P "unknown option '%s'\n", a);
          return -1;
        }
        return 1;
      }
      const char *val = a + 2;
      if (!*val) {
        if (i + 1 >= argc) {
          fprintf(stderr, P "%s: missing value\n", opt);
          return -1;
        }
        val = argv[++i];
      }
      if (apply(g, a[1] == 'n' ? O_N : O_OUTPUT, opt, val) != 0) return -1;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, P "unknown option '%s' (see rasp gen --help)\n", a);
      return -1;
    } else {
      fprintf(stderr, P "unexpected argument '%s'\n", a);
      return -1;
    }
  }
  return 0;
}

/* ---- output ------------------------------------------------------------- */

static void write_tokens(FILE *f, const rasp_task_opts *o, const rasp_sample *s,
                         int json) {
  char buf[32];
  for (int i = 0; i < s->ntokens; i++) {
    raspT_token_text(o, s->tokens[i], buf, sizeof buf);
    if (json) fprintf(f, "%s\"%s\"", i ? "," : "", buf);
    else fprintf(f, "%s%s", i ? " " : "", buf);
  }
}

static void write_sample(FILE *f, const gen_args *g, const rasp_sample *s,
                         unsigned long long index) {
  const rasp_task_opts *o = &g->t;
  if (!g->jsonl) {
    write_tokens(f, o, s, 0);
    fputc('\n', f);
    return;
  }
  fputs("{\"tokens\":[", f);
  write_tokens(f, o, s, 1);
  fprintf(f, "],\"D\":%d,\"M\":%d,\"s\":%d,\"t\":%d,\"lead\":%d,\"target_arm\":%d,"
             "\"answer\":[",
          s->D, s->M, s->s, s->t, s->lead, s->target_arm);
  for (int j = 0; j < s->M; j++) fprintf(f, "%s%d", j ? "," : "", s->answer[j]);
  fprintf(f, "],\"g_start\":%d,\"q_start\":%d,\"index\":%llu,\"variant\":%d}\n",
          s->g_start, s->q_start, index, s->variant);
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

  int pr = parse_args(&g, argc, argv);
  if (pr == 1) {
    usage(stdout);
    return 0;
  }
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
