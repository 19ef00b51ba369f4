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
**   - value facts (raspF_transfer, raspF_values): the kinds (integer,
**     boolean, rational, symbol) and the bounds [lo, hi] of every node's
**     elements, from its operands' -- the one copy of what each operation
**     does to kinds and ranges;
**   - moves (raspF_moves): whether an aggregate over an equality select
**     provably sees one value at its selected keys;
**   - distinct values (raspF_distincts): nodes whose values differ between
**     positions but for a known interval, so an equality select on them as
**     keys picks at most one key;
**   - liveness is raspI_live (rir.h).
** All are pure functions of the graph (or of the elements given); none
** allocates except the temporary tables of raspF_canon, raspF_moves and
** raspF_distincts.  rfacts.c has the
** rest of the design notes.
**
** Who reads the value facts.  The evaluator keeps raspF_values of its graph
** in its plan (tokens unknown: static nodes' facts are final there) and
** applies raspF_transfer again to the kinds its runs saw and the range of
** the tokens they read, node by node and only where an operand's fact
** changed, so that its fast paths (int-like loops, direct tables keyed by
** value, the memo table of a map) are chosen by the same rules;
** RASP_EVAL_CHECK_VALUES=1 (raspE_set_check_values) checks every value of
** every run against raspF_values for the run's token range.  The layer
** analysis and the verifier have no use for bounds yet (their verdicts
** come from values); they can call raspF_values like the compiler.  The
** compiler (rcompile_plan.c) calls raspF_values once in plan(), with tokens
** {RASPF_K_INT, min, max} of o->input_ids, and enumerates exact value sets
** per view, a refinement of these facts (a set is needed for one-hot
** units; an interval is not one).  It decides by the fact met with the set
** (view_fact): allnum / allbool of an aggregate's values are !(kind &
** RASPF_K_SYM) and kind within RASPF_K_BOOL, and "an integer inside the
** float32 window" (lf_build, numerical moves, tested conditions) is kind ==
** RASPF_K_INT with [lo, hi] inside it.  RASP_COMPILE_CHECK_FACTS=1 checks
** every value of every view against its node's fact (tests/values.sh, every
** program and example).  Not switched yet: the ranges the weights use
** (lf_build's lo/hi, hence big-M and numeq scales) stay the set's, which
** are tighter and fix the sizes; the MAXVALS and "too many value pairs"
** refusals could be decided from hi - lo + 1 of integer nodes before any
** set is built.
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

/* ---- value facts */

/* Element kinds (bit set), as rir.h represents elements. */
#define RASPF_K_INT 1u  /* den == 1 */
#define RASPF_K_BOOL 2u /* den == RASP_DEN_BOOL */
#define RASPF_K_RAT 4u  /* den > 1: a rational that is not an integer */
#define RASPF_K_SYM 8u  /* den == RASP_DEN_SYM */
#define RASPF_K_NUM (RASPF_K_INT | RASPF_K_BOOL | RASPF_K_RAT)
#define RASPF_K_ANY (RASPF_K_NUM | RASPF_K_SYM)

/* What a node's elements can be: kind says which representations occur,
** and every element that is a number (a boolean as 0 or 1, a rational by
** its value) lies in [lo, hi].  Bounds say nothing about symbols.  No
** number at all: lo = INT64_MAX, hi = INT64_MIN.  Every number of rir.h is
** within [INT64_MIN, INT64_MAX], so that interval means "no bound"; an
** operation that would leave it (overflow) fails at run time and produces
** no value, so saturated bounds stay sound.  kind == 0: no element ever
** (a selector, or a node whose operands have none). */
typedef struct raspF_value {
  unsigned kind;
  int64_t lo, hi;
} raspF_value;

/* The kind bit of one element. */
static inline unsigned raspF_elem_kind(rasp_elem e) {
  return e.den == 1 ? RASPF_K_INT
         : e.den == RASP_DEN_BOOL ? RASPF_K_BOOL
         : e.den == RASP_DEN_SYM ? RASPF_K_SYM
                                 : RASPF_K_RAT;
}

/* The fact of one element: its kind, [floor, ceil] of its value. */
raspF_value raspF_elem_value(rasp_elem e);
/* Whether e is one of the elements f allows: its kind (a rational whose
** reduced form is an integer counts as one) and, for a number, its value
** in [lo, hi].  1 or 0. */
int raspF_holds(raspF_value f, rasp_elem e);
/* Both facts hold: the kinds and ranges intersected (inline: the evaluator
** meets a rule with its plan's fact per node and run). */
static inline raspF_value raspF_meet(raspF_value a, raspF_value b) {
  raspF_value f = {a.kind & b.kind, a.lo > b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi};
  if (!(f.kind & RASPF_K_NUM)) {
    f.lo = INT64_MAX;
    f.hi = INT64_MIN;
  }
  return f;
}
/* Bounds that are not the whole 64-bit range on either side (what a
** direct table keyed by value needs). */
static inline int raspF_bounded(raspF_value f) {
  return f.lo != INT64_MIN && f.hi != INT64_MAX && f.lo <= f.hi;
}
/* The largest |x| of the node's numbers (INT64_MAX when unbounded; 0 when
** it has none): the margin a compiled unit must represent. */
uint64_t raspF_magnitude(raspF_value f);

/* The transfer function: node id's fact from its operands' facts in[j]
** (of nd->in[j], j < nin; selectors have kind 0), the length ir->n and, for
** the input, tok (the range of token ids).  Sound for every input of
** length ir->n whose token ids tok allows: overflow and division by zero
** produce no value; maps are unknown (any kind, no bound); seq_map
** truncates (integers and symbols); sel_width is in [0, n]; a mean is in
** its values' range; an aggregate's default is one of its values. */
raspF_value raspF_transfer(const rasp_ir *ir, int id, raspF_value tok, const raspF_value *in);
/* out[i] for every node: raspF_transfer in one forward pass.  For a static
** node (raspF_static) the fact does not depend on tok. */
void raspF_values(const rasp_ir *ir, raspF_value tok, raspF_value *out);

/* ---- moves: aggregates that pass one value on */

/* The compiler moves an aggregate's selected value (one head writes it,
** categorically or as x and x^2) instead of averaging when its selector
** contains an equality select; that is the mean only where every selected
** value is the same.  raspF_moves says, per node, whether that premise is a
** fact of the program or an assumption about its inputs:
**   RASPF_MOVE_NONE     not an aggregate (aggregate, aggr_mean) over a
**                       selector that contains an equality select;
**   RASPF_MOVE_PROVEN   on every input, the values at the keys any query
**                       selects are equal: some equality select reached from
**                       the selector through `and`s alone has the indices as
**                       keys (one key per query), or keys k such that the
**                       values are computed from k and constants by
**                       element-wise operations (unary, binary, where, map,
**                       seq_map, full) and k holds no mix of booleans and
**                       numbers (True == 1 selects both, which a function
**                       can tell apart);
**   RASPF_MOVE_ASSUMED  anything else (the path-star programs' edges: one
**                       edge per source node is the task's promise, not the
**                       program's); a move is right only on inputs where
**                       the selected values agree, which `--check` tests.
** The back ends read this one fact: the compiler labels or avoids assumed
** moves (raspG_opts.moves), the fuzz harness checks the premise per input
** where it is assumed. */
enum { RASPF_MOVE_NONE, RASPF_MOVE_PROVEN, RASPF_MOVE_ASSUMED };
typedef struct raspF_movescan raspF_movescan; /* scratch for one graph */
raspF_movescan *raspF_moves_new(const rasp_ir *ir);
void raspF_moves_free(raspF_movescan *m);
/* Node agg's verdict.  kinds[i]: the kinds (RASPF_K_*) node i's elements
** can take, of which only equality selects' keys are read; NULL: those of
** raspF_values for any token id (a program's map: any kind).  A caller that
** knows more (the compiler's value sets) passes its own, and proves more. */
int raspF_move(raspF_movescan *m, int agg, const unsigned *kinds);
/* out[i] = raspF_move(i, NULL) for every node. */
void raspF_moves(const rasp_ir *ir, unsigned char *out);

/* ---- symbols: nodes whose every value is a token id */

/* Whether a node's values print as symbols (`rasp run --symbols`, the REPL,
** `rasp apply --symbols` through the compiled layout): out[i] = 1 when
** every value node i takes is a token id, or an aggregate's default where
** no key is selected.  Stricter than the IR's RASP_TOKEN_IDS, which says
** how a string compares with the values: an exact mean of token ids is an
** id only when the selected values are equal, so an aggregate (or
** aggr_mean) counts only when raspF_move proves that; a mean of 1 and 3
** that is 2 prints as 2, not as the symbol whose id is 2. */
void raspF_symbolic(const rasp_ir *ir, unsigned char *out);
/* The same for one run: an aggregate whose move raspF_move only assumes
** counts where holds(user, agg) says its selected values were equal on
** that run (raspE_selects_one_value), so a sort's copied tokens print as
** symbols on an input where each query found one key. */
void raspF_symbolic_run(const rasp_ir *ir, int (*holds)(void *user, int agg), void *user,
                        unsigned char *out);
/* raspF_symbolic's verdict for one node (0 for a node outside ir). */
int raspF_is_symbolic(const rasp_ir *ir, int node);

/* ---- distinct values: nodes that tell positions apart */

/* A head that selects at most one key per query sums no ties: its
** compiled output is the selected value exactly (the compiler's fp32
** proof, head_unique).  Its keys then need not be the indices: any key
** whose values differ between positions does, except for values no query
** asks for.  raspF_distinct says, per node, that two different positions
** hold equal values only when that value lies in [lo, hi] (the exceptions;
** lo > hi: none); holds = 0 claims nothing.  Integers only (kind ==
** RASPF_K_INT in facts: True == 1 and symbols stay out).  Rules, each an
** argument over two positions j != j' with equal values v:
**   indices                  never equal: no exceptions;
**   -x, x + c, x - c, c - x, x * c (c a nonzero integer constant):
**                            v comes from equal x, so f(v) was an exception;
**   where(c, x, y)           v from x at both is an x exception, anything
**                            else puts v in y's range: exceptions hull(x's,
**                            y's range), or with x and y swapped (the
**                            narrower is kept);
**   aggregate / aggr_mean over a selector reaching an equality select
**   select(K, Q, ==) through `and`s alone, with values K itself:
**                            every selected key holds K = Q(i), so the
**                            result is Q(i) or the default: Q's exceptions
**                            and the default.
** out must have room for ir->nnodes entries; facts: raspF_values'. */
typedef struct raspF_distinct {
  int holds;
  int64_t lo, hi;
} raspF_distinct;
void raspF_distincts(const rasp_ir *ir, const raspF_value *facts, raspF_distinct *out);
/* The equality selects reached from selector sel through `and`s alone (an
** `and` selects a subset of either operand's keys; an `or` or a `not` keys
** neither need select), at most max of them into out; returns how many.
** Depth-bounded: a deeper tree yields fewer, never a wrong one.  Where one
** of them picks at most one key per query, so does sel (raspF_distincts,
** the compiler's one-key rule). */
int raspF_and_eq_selects(const rasp_ir *ir, int sel, int *out, int max);
/* Whether v can be one of d's exceptions (or d claims nothing). */
static inline int raspF_distinct_may_repeat(raspF_distinct d, int64_t v) {
  return !d.holds || (v >= d.lo && v <= d.hi);
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
