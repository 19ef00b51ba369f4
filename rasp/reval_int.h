/*
** reval_int.h -- the evaluator's insides, shared by its files (not
** installed; nothing here is part of librasp's API).
**
**   reval.c        the API, the run loop, the element-wise operations, the
**                  memoised callbacks and the run-time kinds and bounds
**   reval_plan.c   the plan: which nodes run, in which order, which share a
**                  buffer (CSE), which are kept across runs, which die when,
**                  which heads fuse, and each head's selector shape
**   reval_kern.c   the heads (sel_width and the aggregates): statistics,
**                  finishing, and the kernel table they choose from
**   reval_matrix.c a selector as a byte matrix for one input, the heads'
**                  fallback and the reference kernel's definition
**   reval_ref.c    the reference kernel: the matrix definition of select and
**                  aggregate, sharing nothing with the kernels above
**
** The evaluator struct is the one state they share: per-node arrays sized
** by fit_nodes, the plan (valid while plan_current holds), this run's
** kinds and bounds, and scratch buffers reused from run to run.
*/
#ifndef RASP_REVAL_INT_H
#define RASP_REVAL_INT_H

#include <stdlib.h>
#include <string.h>

#include "reval.h"
#include "rfacts.h"
#include "rmem.h"

/* Functions one evaluator file defines for another: not exported from the
** shared library. */
#define RASPE_INTERNAL __attribute__((visibility("hidden")))

typedef __int128 i128;

/* ---- memo tables for callbacks */

#define MEMO_SMALL 256

typedef struct memo {
  int nargs;
  size_t cap, count; /* cap is a power of two, or 0 */
  rasp_elem *keys;   /* cap * nargs */
  rasp_elem *vals;
  unsigned char *used;
  /* one-argument maps of small non-negative integers (token ids, counts):
     a direct table in front of the hash */
  rasp_elem small[MEMO_SMALL];
  unsigned char small_set[MEMO_SMALL];
  unsigned small_kind; /* K_* bits of every value in small[] */
} memo;

/* Element kinds (bit set): rfacts.h's, whose transfer functions say what
** each operation makes of them. */
#define K_INT RASPF_K_INT
#define K_BOOL RASPF_K_BOOL
#define K_RAT RASPF_K_RAT
#define K_SYM RASPF_K_SYM
#define INTLIKE(k) (((k) & (K_RAT | K_SYM)) == 0)

/* Scratch slots, each a buffer reused across heads and runs. */
enum {
  SC_GID, SC_GQ, SC_GCNT, SC_GSUM, SC_GNB, SC_GEXT, SC_VV, SC_VB,
  SC_PSUM, SC_PNB, SC_PEXT, SC_SEXT, SC_KS, SC_KS2, SC_SK, SC_QA, SC_QB,
  SC_QT, SC_PRE, SC_SUF, SC_GSTAT, SC_KK, SC_QQ, SC_HKEY, SC_HEKEY,
  SC_HGID, SC_HST, SC_GID2, SC_GQ2, SC_PK, SC_PQ, SC_SCK, SC_SCQ, SC_INV, SC_QPOS, SC_MAT0,
  SC__COUNT = SC_MAT0 + 8
};

/* The kernels that evaluate a head, in preference order (the table
** `kernels` in reval_kern.c; their names: raspE_kernel_name). */
enum {
  RASPE_K_PREFIX, RASPE_K_WINDOW, RASPE_K_GATHER, RASPE_K_KGATHER, RASPE_K_DIRECT,
  RASPE_K_JOIN, RASPE_K_SORT, RASPE_K_CAUSAL_NE, RASPE_K_MATRIX,
  RASPE_K_REFERENCE, /* only in reference mode, and then alone */
  RASPE_NKERNELS
};

/* The plan (reval_plan.c): made when plan_current (reval.c) finds the
** graph, its outputs, the length, keep or (keep == 0) the batch size
** changed, then only read by runs.  Per-node arrays have nnodes entries. */
struct eplan {
  unsigned char *live;  /* reachable from the outputs (raspI_live) */
  int *steps, nsteps;   /* the live nodes in order */
  int *dsteps, ndsteps; /* those a run still visits (raspE_plan_dsteps) ... */
  int dsteps_ok;        /* ... valid for this plan ... */
  size_t dsteps_total;  /* ... and batches of at most this many elements */
  int *canon;           /* the live node computing the same value (itself, or
                           an earlier one whose buffer it shares) */
  unsigned char *raw;   /* rationals may be left unreduced (raspE_plan_raw);
                           raspE_value reduces them on reading */
  unsigned char *hold;  /* a static value kept across runs */
  int hold_ok;          /* static values are kept at all (raspE_plan_hold) */
  int *twin;            /* sel_width: the aggregate evaluated with it, or -1 */
  raspF_value *vf;      /* every node's value fact for any tokens (raspF_values):
                           a run's kinds and bounds never exceed it */
  struct hplan *hplans; /* heads: what their selector allows */
  int *lastuse;         /* keep == 0: the last node reading a value ... */
  int *relstart, *rel;  /* ... and the nodes whose value dies after node i (CSR) */
  /* what the plan was made for */
  int nnodes, noutputs, keep, n;
  int *outputs;
  size_t total;
  int valid;
};

/* Scratch buffers, reused across heads and runs; a run allocates nothing
** once the sizes have been seen. */
struct escratch {
  void *sc[SC__COUNT];
  size_t sccap[SC__COUNT];
  /* direct-addressed group table: (generation << 32) | group per key value,
     so nothing is cleared between uses */
  uint64_t *dtab;
  size_t dtabcap;
  uint32_t dgen;
  /* direct-addressed accumulators (head_direct), stamped like dtab */
  struct dacc *dacc;
  size_t dacccap;
  uint32_t daccgen;
  uint32_t hgen; /* generation of the stamped hash tables */
  size_t hcap;
};

/* Value buffers handed back early (keep == 0), reused for later nodes. */
struct epool {
  rasp_elem **buf;
  size_t *cap;
  int n, size;
};

/* The evaluator.  Per-node arrays have nnodes entries (fit_nodes grows
** them with the IR).  What a run computes is valid while `ran` is set; the
** run-time kinds and bounds of a node are this run's when bndrun == runno
** (bounds) or the node was evaluated in this run. */
struct rasp_eval {
  const rasp_ir *ir;
  /* settings */
  size_t max_cells; /* raspE_set_max_selector_cells */
  int keep;         /* keep every intermediate value (default) */
  int reference;    /* every head through the reference kernel, no CSE,
                       no fusion (raspE_set_reference) */
  int check_values; /* every value checked against raspF_values
                       (raspE_set_check_values) */
  /* the current batch */
  int B, n, nnodes;
  int ran;          /* a run has succeeded and values are valid */
  unsigned runno;   /* numbers runs, for bndrun and early */
  /* per node: facts of the graph, fixed once the node exists */
  unsigned char *isstatic; /* depends on no input token (raspF_static) */
  unsigned char *issel;    /* a selector (no value buffer) */
  unsigned char *checked;  /* valid_node passed */
  memo **memos;            /* callback results, created on first use */
  uint64_t *hits;          /* inputs each kernel evaluated (raspE_kernel_hits),
                              node * RASPE_NKERNELS + k */
  /* per node: values */
  rasp_elem **val;      /* B*n elements, NULL for selectors */
  size_t *valcap;       /* capacity of val[] in elements */
  size_t *cfill;        /* leading elements of val[] already holding a kept value */
  unsigned char *kind;  /* K_* bits of the value */
  int64_t *bndlo, *bndhi; /* least and greatest num of the values, as a scan
                             (raspE_node_bounds) or eval_INPUT found them, valid
                             when bndrun == runno */
  unsigned *bndrun;
  raspF_value *rulef;   /* kinds and bounds by the rules of rfacts (node_fact),
                           for every run of the plan; kind[] narrows the kinds */
  unsigned *frun;       /* the run in which kind or rulef last changed */
  unsigned *rrun;       /* the run that last made or confirmed rulef */
  unsigned fforce;      /* rules made before this run are void (new graph or n) */
  unsigned fany;        /* the last run in which some node's frun was set */
  int vf_nnodes, vf_n;  /* what plan.vf was computed for */
  raspF_value tok;      /* the token ids of every run since the plan was made */
  unsigned char *bndheld;  /* a held value whose bounds were scanned */
  unsigned *early;      /* the run in which a twin evaluated it */
  unsigned char **selm; /* raspE_selector's matrix ... */
  int *selb;            /* ... and which input it holds */
  int selb_dirty;       /* some selb[] entry may be set */
  struct eplan plan;
  struct epool pool;
  struct escratch scr;
};

/* One key value's statistics in head_direct. */
struct dacc {
  uint32_t stamp;
  int32_t cnt;
  int64_t sum;
};

/* Which part of the ordered keys a query selects, from its bounds a, b. */
enum { W_NONE, W_PREF /* [0,a) */, W_SUF /* [a,n) */,
       W_BOTH /* [0,a) and [b,n) */, W_ONE /* [a,a+1) */ };

/* Conjunctions of equality selects and position windows: at most this many
** equalities. */
#define MAX_CONJ 8

/* What a head's selector allows, from the graph alone (raspE_plan_head). */
typedef struct hplan {
  unsigned cand;           /* bit k: kernel k may apply (raspE_plan_head) */
  unsigned char win;       /* a window of positions: wt, woff (window_of) */
  unsigned char gather;    /* select(indices, q, ==): at most one key per query */
  unsigned char conj;      /* equalities and windows: leaves, cwt, coff (conj_of) */
  unsigned char sort;      /* a non-causal comparison or not_equals */
  unsigned char causal_ne; /* a causal not_equals */
  int wt, woff;
  int nl, leaves[MAX_CONJ], cwt, coff;
} hplan;

/* A scratch buffer of at least bytes (contents undefined). */
static inline void *scratch(rasp_eval *ev, int slot, size_t bytes) {
  if (bytes > ev->scr.sccap[slot]) {
    size_t cap = ev->scr.sccap[slot] ? ev->scr.sccap[slot] : 64;
    while (cap < bytes) cap *= 2;
    raspM_free(ev->scr.sc[slot]);
    ev->scr.sc[slot] = raspM_alloc(cap);
    ev->scr.sccap[slot] = cap;
  }
  return ev->scr.sc[slot];
}

static inline unsigned elem_kind(rasp_elem e) { return raspF_elem_kind(e); }

/* raspI_elem_trunc, inline: the mean of one value (a gather under
** aggr_mean), per element. */
static inline rasp_elem elem_trunc(rasp_elem a) {
  if (a.den == RASP_DEN_BOOL) a.den = 1;
  else if (a.den > 1) {
    a.num /= a.den; /* C division truncates toward zero */
    a.den = 1;
  }
  return a;
}

static inline uint64_t hash_elems(const rasp_elem *a, int n) {
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (int i = 0; i < n; i++)
    h = raspF_mix64(h ^ (uint64_t)a[i].num) + (uint64_t)a[i].den * 0x2545f4914f6cdd1dULL;
  return raspF_mix64(h);
}

/* ---- one node's evaluation */

/* What a handler says of its node's kinds (ctx.kind): the K_* bits it saw,
** or one of these; the run loop meets it with the rule of rfacts
** (raspF_transfer) either way. */
#define KIND_SCAN 0x100u /* look at the values where the rule allows several */
#define KIND_RULE 0x200u /* the rule's kinds as they are */

typedef struct ctx {
  rasp_eval *ev;
  int id;
  const rasp_ir_node *nd;
  const int64_t *tokens;
  size_t total; /* B*n */
  rasp_elem *out;
  rasp_error *err;
  unsigned kind; /* set by the handler, or KIND_SCAN */
  rasp_elem *counts; /* a head: a sel_width twin's buffer to fill too, or NULL */
  int fused;         /* ... and the head filled it for every input */
} ctx;

static inline const rasp_elem *operand(const ctx *c, int j) {
  return c->ev->val[c->nd->in[j]];
}

static inline unsigned operand_kind(const ctx *c, int j) {
  return c->ev->kind[c->nd->in[j]];
}

/* reval.c */
RASPE_INTERNAL int raspE_call_memo(rasp_eval *ev, int id, int nargs, const rasp_elem *args,
                                   rasp_elem *out, rasp_error *err);
/* Least and greatest num of node id's values in this run (int-like nodes):
** the derived bounds when they are bounded, else a scan of the values. */
RASPE_INTERNAL void raspE_node_bounds(rasp_eval *ev, int id, int64_t *lo, int64_t *hi);
RASPE_INTERNAL void raspE_pool_put(rasp_eval *ev, rasp_elem *buf, size_t cap);
RASPE_INTERNAL int raspE_is_selector(const rasp_ir *ir, int id);

/* reval_plan.c: the passes of a new plan, in the order raspE_run calls them */
RASPE_INTERNAL void raspE_plan_canon(rasp_eval *ev);
RASPE_INTERNAL void raspE_plan_raw(rasp_eval *ev);
RASPE_INTERNAL void raspE_plan_hold(rasp_eval *ev, size_t total);
RASPE_INTERNAL void raspE_plan_twins(rasp_eval *ev);
RASPE_INTERNAL void raspE_plan_heads(rasp_eval *ev);
RASPE_INTERNAL void raspE_plan_release(rasp_eval *ev);
RASPE_INTERNAL void raspE_plan_dsteps(rasp_eval *ev, size_t total);

/* reval_kern.c */
RASPE_INTERNAL void raspE_plan_head(const rasp_eval *ev, int id, hplan *p);
RASPE_INTERNAL int raspE_eval_head(ctx *c);
/* reval_ref.c: head id for input b by the matrix definition. */
RASPE_INTERNAL int raspE_ref_head(rasp_eval *ev, int id, int b, const rasp_elem *vals,
                                  rasp_elem *out, rasp_error *err);
/* reval_matrix.c: 0 with err when an n x n selector exceeds the cell
** limit; select id's matrix for input b into m (n x n bytes). */
RASPE_INTERNAL int raspE_cells_ok(rasp_eval *ev, const rasp_ir_node *sel, rasp_error *err);
RASPE_INTERNAL int raspE_build_matrix(rasp_eval *ev, int id, int b, unsigned char *m, int depth,
                                      rasp_error *err);

#endif
