/*
** devunit.h -- the fp32 deviation bounds of a compiled model's units, read
** back from its STEM.json text and checked on a float32 forward pass.
**
** raspG_compile proves, in fp32, how far from an integer each dimension of
** an integer unit (a head or MLP unit, numerical or numerical+square) can
** be right after the unit writes it, and records the bound in the unit's
** JSON as "deviation": [x, x^2].  devunit_read collects those units;
** devunit_check runs one input through raspN_forward with the residual
** stream kept and holds every such dimension to its bound.  Shared by
** tests/test_compile.c (which asserts with Check) and the fuzz harness
** tests/fuzz_compile.c (which aborts), so both read the JSON the same way
** and neither can drift from the other.  Header-only: every function is
** static, each includer gets its own copy.
*/
#ifndef RASP_TESTS_DEVUNIT_H
#define RASP_TESTS_DEVUNIT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcompile.h"

/* A unit with a deviation: its first residual dimension and count, its
** residual slot (2 layer + 1 after the head sublayer, + 2 after the MLP),
** whether it is marked "exact_nonzero" (exactly its integer wherever that
** is not 0), the bounds for x and x^2, the largest deviation seen so far. */
typedef struct devunit { int dim, size, slot, nzx; double dev[2], seen; char name[64]; } devunit;

/* The units of g's JSON that carry a deviation, into u.  Returns how many,
** or -1 when there are more than max or an entry is malformed. */
static int devunit_read(const raspG_model *g, devunit *u, int max) {
  int nu = 0;
  if (!g->model.json_extra) return 0;
  for (const char *p = strstr(g->model.json_extra, "\"units\": [");
       p && (p = strstr(p, "{\"name\": \""));) {
    p += strlen("{\"name\": \"");
    const char *e = strchr(p, '"'), *end = strchr(p, '}');
    if (!e || !end) return -1;
    const char *dv = strstr(p, "\"deviation\": [");
    if (!dv || dv > end) continue;
    if (nu >= max) return -1;
    const char *ly = strstr(p, "\"layer\": "), *dm = strstr(p, "\"dim\": "),
               *sz = strstr(p, "\"size\": ");
    if (!ly || ly > end || !dm || dm > end || !sz || sz > end) return -1;
    snprintf(u[nu].name, sizeof u[nu].name, "%.*s", (int)(e - p), p);
    u[nu].dim = atoi(dm + 7);
    u[nu].size = atoi(sz + 8);
    /* (the kind inside this entry: a head's after it is no evidence) */
    const char *hd = strstr(p, "\"kind\": \"head\"");
    u[nu].slot = 2 * atoi(ly + 9) + (hd && hd < end ? 1 : 2);
    if (sscanf(dv + 14, "%lf, %lf", &u[nu].dev[0], &u[nu].dev[1]) != 2) return -1;
    const char *nz = strstr(p, "\"exact_nonzero\": true");
    u[nu].nzx = nz && nz < end;
    u[nu].seen = 0;
    nu++;
  }
  return nu;
}

/* Runs tokens t (BOS first, n + 1) through g in float32 (raspN_forward;
** res holds (1 + 2 layers) (n + 1) d_model floats, lg (n + 1) n_out) and
** holds every unit of u within its deviation of an integer right after it
** is written, and one marked exact_nonzero to exactly that integer where it
** is not 0.  Returns 1, or 0 with why[] saying which unit and how far
** (or the forward pass's error). */
static int devunit_check(const raspG_model *g, const int *t, int n, devunit *u, int nu,
                         float *res, float *lg, char *why, size_t whysize) {
  rasp_error err;
  memset(&err, 0, sizeof err);
  int d = g->model.cfg.d_model;
  if (raspN_forward(&g->model, t, n + 1, lg, res, &err) != 1) {
    snprintf(why, whysize, "%.200s", err.msg);
    return 0;
  }
  for (int i = 0; i < nu; i++)
    for (int p = 1; p <= n; p++)
      for (int j = 0; j < u[i].size; j++) {
        double v = res[((size_t)u[i].slot * (size_t)(n + 1) + (size_t)p) * (size_t)d +
                       (size_t)(u[i].dim + j)];
        double dev = fabs(v - nearbyint(v)), bound = u[i].dev[j > 0];
        if (!(dev <= bound)) {
          snprintf(why, whysize, "%s dimension %d: %g from an integer, bound %g", u[i].name, j,
                   dev, bound);
          return 0;
        }
        if (u[i].nzx && nearbyint(v) != 0 && v != nearbyint(v)) {
          snprintf(why, whysize, "%s dimension %d: %.9g, not exactly its integer", u[i].name, j, v);
          return 0;
        }
        if (dev > u[i].seen) u[i].seen = dev;
      }
  return 1;
}

#endif
