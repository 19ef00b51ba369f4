/*
** rfacts.h -- facts about the IR that every back end reads.
**
** The evaluator, staging, the interpreter's builtins and (at the merge) the
** compiler each used to carry their own copy of what a predicate means,
** which nodes depend on the input, and which nodes compute the same value.
** A second copy is a second place for the meaning to drift, so each fact is
** computed here, once, and the back ends call it:
**   - predicate semantics (raspF_pred_holds), on top of the one element
**     equality and order of rir.h (raspI_elem_eq, raspI_elem_cmp);
**   - the pair scans of has_pair / holds_both (raspF_scan_pairs), for any
**     element type through an equality callback;
**   - static-ness (raspF_static): nodes whose value reads no token;
**   - canonical nodes (raspF_canon): common subexpressions;
**   - liveness is raspI_live (rir.h).
** All are pure functions of the graph (or of the elements given); none
** allocates except raspF_canon's temporary table.  rfacts.c has the
** rest of the design notes.
*/
#ifndef RASP_RFACTS_H
#define RASP_RFACTS_H

#include "rir.h"

/* SplitMix64's finaliser: a 64-bit hash of x whose every output bit
** depends on every input bit (the hash tables of raspF_canon and of the
** evaluator's hash-join kernel). */
static inline uint64_t raspF_mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/* Whether predicate p selects key for query: 1 or 0.  -1 for
** RASP_PRED_CUSTOM (the program's function decides; the caller runs it) and
** for an unknown predicate. */
int raspF_pred_holds(rasp_pred p, rasp_elem key, rasp_elem query);

/* st[i] for i in [from, ir->nnodes): node i's value is the same for every
** input of the traced length (it reads no token: indices, constants, and
** what is computed from them alone; a select on always/never, whatever it
** compares).  st[0..from) must hold the earlier nodes' answers, so a graph
** that grows (the REPL) is extended, not redone. */
void raspF_static(const rasp_ir *ir, int from, unsigned char *st);

/* canon[i] for every node: for a live node, the first live node with the
** same operation, constants, function and canonical operands (itself if
** none), i.e. the node whose value it equals on every input; canon[i] = i
** for nodes that are not live.  live: raspI_live's marks, or NULL for all. */
void raspF_canon(const rasp_ir *ir, const unsigned char *live, int *canon);

/* The scans of has_pair and holds_both over a sequence of length n, for i
** in range(start, stop, step) (step > 0):
**   pairs (windows = 0): some i has xs[i] == a and xs[i + k] == b;
**   windows (windows = 1): some window xs[i : i + k] holds a and b.
** eq(u, j, w) says whether xs[j] equals a (w = 0) or b (w = 1): 1, 0, or
** -1 when it cannot tell.  Returns 1 or 0; -1 when an undecided equality
** could change the answer; -2 with *bad = i when position i's window or
** pair runs off the sequence (the callers' error).  Inline, so that each
** caller's eq is inlined into its copy of the loop (check() runs it for
** every graph the verifier draws).  It keeps the short-circuit order of the
** Python builtins (an equality is not asked once its answer is known). */
typedef int (*raspF_eq_fn)(void *u, int64_t j, int which);
static inline int raspF_scan_pairs(int windows, int64_t n, int64_t k, int64_t start,
                                   int64_t stop, int64_t step, raspF_eq_fn eq, void *u,
                                   int64_t *bad) {
  for (int64_t i = start; i < stop; i += step) {
    if (windows) {
      if (i < 0 || i + k > n) {
        *bad = i;
        return -2;
      }
      int has_a = 0, has_b = 0;
      for (int64_t j = i; j < i + k; j++) {
        int ea = has_a ? 1 : eq(u, j, 0), eb = has_b ? 1 : eq(u, j, 1);
        if (ea < 0 || eb < 0) return -1;
        has_a |= ea;
        has_b |= eb;
      }
      if (has_a && has_b) return 1;
    } else {
      if (i < 0 || i >= n || i + k < 0 || i + k >= n) {
        *bad = i;
        return -2;
      }
      int ea = eq(u, i, 0);
      if (ea < 0) return -1;
      if (!ea) continue;
      int eb = eq(u, i + k, 1);
      if (eb != 0) return eb;
    }
  }
  return 0;
}

#endif
