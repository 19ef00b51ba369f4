/*
** rcompile.c -- compiling the IR of a traced program to transformer weights.
**
** Design.  The compiler is a planner followed by a weight writer.
**
** Units.  What lives in the residual stream is a list of *units*, each a
** block of named dimensions: the token one-hot (TOK), the index one-hot
** (IDX, from the position embedding), the constant ONE (1 at every real
** position, 0 at BOS) and one unit per attention head or materialised MLP
** node.  A unit is categorical (one dimension per value it can take, one-hot)
** or numerical (one dimension holding a raw number: the mean an averaging
** head computed, or 1/(w+1) for sel_width).  Dimension 0 is "is BOS".
**
** Views.  Most IR nodes never get dimensions: a node whose value depends on
** one unit only (a tok_map of the tokens, `idx + 1`, `x == 3`, a full()) is
** a *view*: that unit plus a table giving the node's value for each value of
** the unit.  Whoever reads the node (a query or key of a select, the values
** of an aggregate, an MLP, the readout) reads the unit's dimensions through
** the table, so chains of element-wise maps of one source cost nothing.
** Only an element-wise node that combines two different units is
** materialised as an MLP unit:
**   WHERE(c, x, y): one hidden unit per value of x's image and of y's,
**     ReLU(onehot_x[v] + c_true - 1): |X| + |Y| units, not |X|*|Y|;
**   any other two-operand node: per value a of one operand, one unit per
**     output value other than the most common one (which is computed as
**     ONE minus the rest), ReLU(x_a + sum_{b: f(a,b)=v} y_b - 1); the
**     cheaper orientation wins, so an equality test costs |A| + 1 units.
** Numerical units are read by MLPs through step functions placed at the
** midpoints between consecutive possible values (exact for any input within
** a quarter gap of a true value); other readers get a categorical decode
** (or an integer one, need_num below).
**
** Facts from rfacts.h.  Predicates mean what raspF_pred_holds says (a
** custom one runs the program's function here); a node computed twice
** (raspF_canon) is planned once and its copies read the same unit, so a
** head written twice is one head; a head whose value reads no token
** (raspF_static: sel_width of a causal `always`, aggregates of the indices
** over order selects) is a view of the index unit, its table taken from one
** run of the evaluator, so it costs no head and no layer.
**
** Value sets.  Every view and unit carries the exact set of values it can
** take, computed from the input vocabulary and n with the evaluator's own
** element arithmetic (raspI_elem_*) and program callbacks; combinations that
** fail (division by zero) are dropped as impossible.  The sets refine the
** IR's value facts (rfacts.h): plan() computes raspF_values once, for
** tokens in [min, max] of the vocabulary's ids, and the kinds and bounds
** the planner decides by are a node's fact met with its set (view_fact):
** whether an aggregate's values are numbers (averaged) or booleans (their
** means of 0 and 1 stay booleans), and whether a view is an integer inside
** the float32 window (INTWIN) that lf_build, numerical moves and tested
** conditions need.  The meet, not the fact alone: a map's fact is "any",
** its set is its table, and the sizes must not depend on how much a
** transfer function can see.  RASP_COMPILE_CHECK_FACTS=1 checks that every
** value of every node's view lies within the node's fact (two analyses,
** one answer: tests/values.sh runs it on every program and example).
** plan() also keeps raspF_distincts (which nodes can repeat a value between
** positions, and only where): the fp32 proof's one-key rule (head_unique)
** reads it for a lookup whose keys are not the indices.
**
** Heads.  A selector is a product of *components*, each a 0/1 table over the
** values of a key unit and a query unit (selects over the same units merge;
** and/or/not are evaluated on the table; a causal selector in a non-causal
** model, a causal combination included, adds the component idx_k <= idx_q
** to its unmasked pattern).  A component becomes a few
** columns of the head: group the key values with equal table rows, one
** column per group.  The raw score is the number of components that hold,
** so a selected key scores m and others at most m-1.  BOS scores m - 1/2 for
** aggregates (it wins only when nothing is selected: the default) and m for
** sel_width (weight 1/(w+1) on BOS, decoded by the MLP).  Scores are scaled
** by beta*sqrt(d_head) (rounded up to a power of two) to undo the
** architecture's 1/sqrt(d_head); beta makes the weight leaking to
** non-selected keys below 1e-9.  The attention gain F (--attn-gain) scales
** beta; below 1 the leak grows (e^-(F beta / 2) per key behind BOS), and
** the margins and noise bounds below charge the leak the weights give,
** not the 1e-9 of the design.  An aggregate whose
** selector contains an equality select is categorical (the mean of equal
** values is that value, as one-hot); one over order or `always` selects is
** numerical and averages exactly, with the set of possible means enumerated.
** At the BOS query every head attends to BOS alone, and one shared MLP unit
** ReLU(is_bos) subtracts what it wrote, so every unit is zero at BOS and
** BOS's value vector is the default alone.  All other MLP units are gated
** off at BOS by -L*is_bos.
**
** Schedule.  Every unit goes as early as possible: a head at the first
** attention sublayer after its sources, an MLP unit at the first MLP
** sublayer after them; heads of one sublayer share a layer.
**
** Numerical sums.  An integer node of two units that is G(x) + H(y)
** (checked on every pair) is one numerical dimension (M_SUM): one hidden
** unit per categorical operand, two per value change of a numerical one.
** A non-causal equality select of such a query against a view of the
** indices (every query value being an index value, so a key always
** matches) scores 2qy - y^2 = q^2 - (q-y)^2 in three columns (numq).
**
** In place.  where(c, x, y) over a categorical unit y that nothing reads
** after it (accept_aliases, after scheduling) shares y's dimensions and
** adds x - y where c holds, with the same hidden units: loop state does not
** grow the residual.
**
** Numbers with their squares.  A unit with many integer values (token ids
** of a large vocabulary, node ids moved by heads, where over them) is
** numerical with two dimensions (x, x^2) (`sq`); any integer view of a
** categorical unit or affine view of such a unit is a linear form over the
** residual (lf_build), squares included, so:
**   equality select: -(k - q)^2 = 2kq - k^2 - q^2 in three columns (numeq),
**     0 at a match, at most -1 elsewhere, 0 at BOS; with a power-of-two
**     scale the score is exact in float32 on integer inputs (its terms
**     are multiples of the scale: exact while their sizes sum within
**     2^24 times it, node ids at |V| = 1000 too; pow2_grain);
**   aggregate over an equality select: moves (x, x^2) (H_MOVE);
**   where(c, x, y): big-M gating per column, ReLU(f - lo - M(1 - c)); a
**     condition that is one value / all but one / a threshold of an
**     integer unit is tested in the same MLP (f[t == 0], f[t >= 1] with
**     ReLUs of t), so it costs no decode and no sublayer;
**   comparisons x == y, x < y: ReLU bumps / steps of x - y (M_NCMP;
**     steep, with no hinge on an integer, at fp32 and gain >= 4);
**   readout: logit_v = -X (x - v)^2, linear in (x, x^2, 1); proof-driven,
**     X a power of two and without the -X x^2 every logit shares, so the
**     logits are exact sums on X's grain and read no x^2.
** Anything else reading such a unit decodes it (steps, as above).
** Widths and means as numbers (need_num): a numerical unit without its
** square (1/(w+1) of sel_width, a mean, a sum) whose view takes more than
** NUMMIN integer values and is moved by an equality head, is a branch of a
** where, a side of an equality select or the readout, is decoded to
** (x, x^2) instead of one-hot: the same steps, each weighted by the change
** of x and of x^2, so two dimensions instead of one per value, and the
** move two value columns (decoder4_log_meet's shifted rank: 70 before).
** Not into a select that a sel_width reads, nor anything moved or gated
** from such a decode (approx_unit): the width's selected keys must score
** alike to within a fraction of 1/(n+1)^2, which the decode's rounding
** (about 1e-2 in x^2 at n = 128) times the head's scale does not give.  A
** fallback (fp16, bf16) that forces the width's node keeps it one-hot.
** Quantized widths (proof-driven fp32 only): the width head's BOS value is
** qv (a power of two) and the attention bias b_o adds 2^23 to its
** dimension, where float32's grid is 1, so the residual holds the integer
** 2^23 + round(qv fl(1/(w+1))) (qwidth_value: the raw values of the unit)
** and is decoded by exact integer steps (qw_steps).  prove() calls it exact
** only where the selected keys score exactly BOS's score and the leak is
** below 2^-25 (then the softmax gives BOS exactly fl(1/(w+1))); one it
** cannot is compiled as 1/(w+1) again (FORCE_CLASSIC).
**
** Liveness.  After scheduling, each unit's last reader is known; a dead
** unit can be erased by an MLP (minus its value: one hidden unit per
** dimension, two where proof-driven, mlp_erase) and its dimensions given
** to a later unit (first fit in order of writing).  Whether to erase none, the numerical units or all is
** chosen by d_model, then by the parameter count (never by the parameter
** count alone: the token embedding's rows would make d_model depend on
** |V|).  At BOS the heads of a layer write their
** defaults before that layer's MLP undoes them, so every other hidden unit
** of that MLP is pushed off at BOS by what it would read there.
**
** Readout.  The output unit's one-hot times the logit scale (the margin by
** which the right value's logit beats every other; by default
** ln(1000 (n_out - 1)), so that a right output's cross-entropy is below
** 0.001 and a compiled decoder starts training near zero loss).
**
** Margins and precision.  Once the weights are written, every head, MLP
** unit and the readout is evaluated on its value sets (prove, below): its
** margin, and whether the rounding of the target precision can eat it.
** In fp16 and bf16 a numerical encoding that is not proven there is
** replaced by a categorical one (the whole compile runs again with those
** nodes forced), and a node with no categorical alternative (a mean, a
** width) is refused at its source position (RASP_E_INEXACT).  In fp32 the
** bound also carries absolute errors (below) and is only counted, unless
** require_proof.  An assumed move (raspG_opts.moves) is proven on its
** premise: one value at the selected keys, or with RASPG_MOVES_ONE at most
** one selected key, so a lookup sums no ties (head_unique).
**
** Running.  raspG_run uses a sparse copy of the weights (sparse_forward):
** raspN_forward's sums in the same order without the zero terms, so the
** logits are bit-identical and --check is fast on large models; the same
** pass, every result rounded, emulates fp16 and bf16.
*/
#include "rcompile.h"

#include "rcausal.h"
#include "reval.h"
#include "rfacts.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rmem.h"

#define MAXVALS 200000 /* values one unit may take */
#define MAXCOMPS 16

enum { U_TOK, U_IDX, U_ONE, U_HEAD, U_MLP };
enum { H_CAT, H_NUM, H_WIDTH, H_MOVE };
enum { M_DECODE, M_WHERE, M_PAIR, M_SUM, M_NWHERE, M_NCMP };

typedef struct view {
  int unit;
  int nv;          /* = the unit's nvals */
  rasp_elem *val;  /* per unit value: the node's value */
  unsigned char *ok;
} view;

typedef struct comp {
  int ku, qu;      /* key and query units (categorical) */
  unsigned char *t; /* nK * nQ, row = key value */
  /* numerical query (qu numerical, q = qa * raw + qb) equal to the key's
  ** table value ky[key value]: score 2 q y - y^2 (t is NULL) */
  int numq;
  double qa, qb;
  double *ky;
  /* numerical equality (numeq): key and query views read as numbers (a
  ** categorical unit through its table, a squared numerical unit as an
  ** affine function of (x, x^2)), shifted by sh; score -(k - q)^2 */
  int numeq;
  view kv, qv;
  double sh;
  int sel;         /* the select node (numeq: what a fallback forces) */
  int col0, col1;  /* its columns in the head (write_head) */
} comp;

typedef struct unit {
  int kind, cat;
  int sq;          /* numerical with its square: dimensions (x, x^2) */
  rasp_elem *vals; /* sorted; CAT: one dimension each; NUM: possible raw values */
  int nvals;
  int ready;       /* sublayer after which it is in the residual */
  int dim;         /* first residual dimension, -1 while unused */
  int used;
  int node;        /* IR node, -1 if none */
  /* head */
  int hmode, selnode;
  view hv;         /* the values (H_CAT, H_NUM) */
  rasp_elem dflt;
  /* MLP */
  int mkind;
  view mv[3];
  int nmv;
  int mnode;       /* WHERE/PAIR: the IR node to evaluate */
  comp c[MAXCOMPS];
  int nc;
  int layer, cols; /* head: layer and query/key columns; MLP: layer */
  int alias;       /* WHERE updating its else-operand in place: that unit, or -1 */
  int ctest;       /* NWHERE: 0 the condition is categorical (mv[0]); 1 it is
                      t == 0, 2 t >= 1, t = ct_a x + ct_b, x = mv[0]'s unit */
  double ct_a, ct_b;
  int last;        /* the last sublayer that reads it (liveness) */
  int erase;       /* MLP sublayer that erases it once dead, or 0 */
  /* where its weights are (for the margins): MLP hidden units [h0, h1), its
  ** eraser's [e0, e1); a head's slot in its layer and BOS column */
  int h0, h1, e0, e1, hslot, bcol;
  /* proven margin (heads: score gap in logits; MLP units: the smallest
  ** distance of a hidden unit from its hinge) and the rounding it must
  ** absorb at the target precision (same units); margin < 0: none */
  double margin, need;
  double kappa;    /* its values' relative error at the precision, in units
                      of the unit roundoff (0: exact) */
  double ae[2];    /* fp32: and an absolute one: per dimension, ae[1] for a
                      squared unit's x^2 (kappa 0 and ae > 0: integers off
                      by at most ae) */
  const char *why; /* why its margin is not proven, for the refusal */
  int proven;      /* prove's verdict on it */
  int done;        /* prove has reached it */
  double leak, spread; /* head_margin's: weight past the selected keys, and
                          the spread of their scores (logits) */
  double leak0;    /* head_margin's: weight past BOS at the BOS query */
  int ainplace;    /* fp32: in place, its operand's error counted in its
                      MLP's affine bound (active_od), not again as residue */
  int nzx;         /* fp32: exact wherever a dimension's value is nonzero,
                      ae bounding it only where the value is 0 (nz_exact) */
  int move;        /* a head that moves one selected number where the
                      program averages: RASPF_MOVE_PROVEN or _ASSUMED (the
                      premise, raspF_moves), else 0 */
  int qw;          /* a quantized width (proof-driven fp32): its value
                      QW_B + round(qv fl(1/(w+1))), an integer (qwidth_value) */
  double qv;       /* its BOS value weight, a power of two */
} unit;

/* A quantized width's offset: the head writes qv fl(1/(w+1)) < 2^22 into a
** dimension the attention's bias b_o sets to 2^23, where float32's grid is
** 1, so the residual holds the integer 2^23 + round(qv fl(1/(w+1))). */
#define QW_B 8388608.0

typedef struct gc {
  int trace;       /* RASP_COMPILE_TRACE: prove() prints every unit's verdict */
  const rasp_ir *ir;
  const raspG_opts *o;
  int n, causal_model;
  int raw;         /* realising a causal selector's pattern before its mask */
  unit *u;
  int nu, capu;
  view *nv;        /* per IR node */
  unsigned char *have;
  unsigned char *numq; /* per IR node: a select read through a numerical query */
  unsigned char *numeq; /* per IR node: a select realised as -(k - q)^2 */
  view *eqv;       /* per select [2 id], [2 id + 1]: its key and query views
                      when need_num decoded one for it (val NULL: not) */
  unsigned char *ornot; /* per IR node: a select under an or / not */
  unsigned char *wsel; /* per IR node: a select a sel_width reads */
  int *decoded;    /* per unit: its categorical decode unit, or -1 */
  rasp_error *err;
  /* per IR node (and [nnodes]: the tokens): compile it categorically, its
  ** numerical encoding not being proven at the target precision */
  const unsigned char *force;
  int allcat;      /* --encoding categorical: no numerical integer encodings */
  raspF_value *fact; /* per IR node: raspF_values for the vocabulary's ids */
  raspF_distinct *dist; /* per IR node: raspF_distincts (head_unique's keys) */
  raspF_movescan *mscan; /* raspF_move's scratch */
  rasp_error fatal; /* a program function that is not pure, or a limit, met
                      while computing value sets: the compile fails with it */
  unsigned *kinds; /* per IR node below kdone: its view's kinds (the value
                      set's, so a map's are known), for raspF_move */
  int kdone;
  struct cbs *cb;  /* while the composed noise bound runs: its errors */
  int od_int;      /* ... and found every output sum, at every combination, an exact
                      integer sum (its units exact integers, within 2^24) */
  int od_combo;    /* active_od ran for the last mlp_margin (od + 3D, + 4D hold its sums);
                      2: its affine bound, for every combination */
  int inplace;     /* the unit mlp_margin proves updates its operand in place */
  double *od;      /* prove, fp32: per residual dimension, what an MLP unit's
                      hidden units' errors move it by */
} gc;

/* A compile's force entry per IR node (the tokens last): FORCE_CAT, the
** node must be categorical; the bits above it, a head's extra gain (log2,
** head_gain). */
#define FORCE_CAT 1
#define FORCE_GAIN_MAX 4 /* at most 2^4 times the model's score scale */
#define FORCE_CLASSIC 0x40 /* a width not quantized (qwidth_value) */
/* The gain bits of a force entry (log2 of a head's extra gain). */
static int force_gain(unsigned char f) { return (f & (FORCE_CLASSIC - 1)) >> 1; }

/* Whether node id (-1: the tokens) must be categorical. */
static int forced(const gc *g, int id) {
  return g->allcat || (g->force && (g->force[id < 0 ? g->ir->nnodes : id] & FORCE_CAT));
}

/* The factor head unit u's scores are written with beyond the model's
** score scale: 2^k, k the bits above FORCE_CAT of its node's force entry
** (prove raises it where the weight leaking past the selected keys is
** what keeps a head from being proven). */
static double head_gain(const gc *g, const unit *u) {
  if (!g->force || u->node < 0) return 1;
  return ldexp(1, force_gain(g->force[u->node]));
}

/* ---- elements ----------------------------------------------------------- */

/* A total order that tells True from 1 (sets must keep both). */
static int ecmp(rasp_elem a, rasp_elem b) {
  int c = raspI_elem_cmp(a, b);
  if (c) return c;
  if (a.den != b.den) return a.den < b.den ? -1 : 1;
  return a.num < b.num ? -1 : a.num > b.num;
}
static int ecmp_q(const void *a, const void *b) {
  return ecmp(*(const rasp_elem *)a, *(const rasp_elem *)b);
}
static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int uniq(rasp_elem *v, int n) {
  qsort(v, (size_t)n, sizeof *v, ecmp_q);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (!m || ecmp(v[m - 1], v[i])) v[m++] = v[i];
  return m;
}
static int find(const rasp_elem *v, int n, rasp_elem x) {
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2, c = ecmp(v[mid], x);
    if (!c) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
static int is_num(rasp_elem e) { return e.den != RASP_DEN_SYM; }
static double dval(rasp_elem e) {
  if (e.den == RASP_DEN_SYM) return 0;
  if (e.den == RASP_DEN_BOOL) return (double)e.num;
  return (double)e.num / (double)e.den;
}

/* A program function's call failed with e while value sets were computed.
** A value it refuses (an assertion, a division by zero) is one the program
** never produces, and is dropped by the caller; a function that is not
** pure, or a limit, fails the compile (plan reads g->fatal). */
static void callback_failed(gc *g, const rasp_error *e) {
  if ((e->code == RASP_E_IMPURE || e->code == RASP_E_LIMIT || e->code == RASP_E_INTERRUPTED) &&
      !g->fatal.set)
    g->fatal = *e;
}

/* Evaluates element-wise node nd on args (its operands' values). */
static int eval_elem(gc *g, const rasp_ir_node *nd, const rasp_elem *a, rasp_elem *out) {
  rasp_error e = {0};
  switch (nd->op) {
  case RASP_OP_UNARY: return raspI_elem_unop((rasp_unop)nd->aux, a[0], out, &e);
  case RASP_OP_BINARY: return raspI_elem_binop((rasp_binop)nd->aux, a[0], a[1], out, &e);
  case RASP_OP_WHERE: *out = raspI_elem_truth(a[0]) ? a[1] : a[2]; return 1;
  case RASP_OP_MAP:
  case RASP_OP_SEQMAP: {
    if (!g->ir->call) return 0;
    rasp_elem args[2] = {a[0], nd->op == RASP_OP_SEQMAP ? a[1] : a[0]};
    if (!g->ir->call(g->ir->user, nd->fn, nd->op == RASP_OP_SEQMAP ? 2 : 1, args, out, &e)) {
      callback_failed(g, &e);
      return 0;
    }
    if (nd->op == RASP_OP_SEQMAP) *out = raspI_elem_trunc(*out);
    return 1;
  }
  default: return 0;
  }
}

/* Predicate semantics are raspF_pred_holds's (rfacts.h, the one copy);
** only a custom predicate, which that leaves to the caller, runs here. */
static int pred_holds(gc *g, const rasp_ir_node *nd, rasp_elem k, rasp_elem q) {
  int r = raspF_pred_holds((rasp_pred)nd->aux, k, q);
  if (r >= 0 || nd->aux != RASP_PRED_CUSTOM) return r > 0;
  rasp_elem args[2] = {k, q}, out;
  rasp_error e = {0};
  if (!g->ir->call || !g->ir->call(g->ir->user, nd->fn, 2, args, &out, &e)) {
    callback_failed(g, &e);
    return 0;
  }
  return raspI_elem_truth(out);
}

/* ---- units and views ---------------------------------------------------- */

static int new_unit(gc *g, int kind, int cat, rasp_elem *vals, int nvals, int node) {
  RASP_GROW(g->u, g->capu, g->nu + 1);
  unit *u = &g->u[g->nu];
  memset(u, 0, sizeof *u);
  u->kind = kind;
  u->cat = cat;
  u->vals = vals;
  u->nvals = nvals;
  u->dim = -1;
  u->node = node;
  u->selnode = -1;
  u->mnode = -1;
  u->alias = -1;
  g->decoded = raspM_realloc(g->decoded, sizeof(int) * (size_t)(g->nu + 1));
  g->decoded[g->nu] = -1;
  return g->nu++;
}

/* A head unit: its mode, the selector it reads and (aggregates) the view of
** the values it moves and the default of an empty selection. */
static int new_head(gc *g, int cat, rasp_elem *vals, int nvals, int node, int hmode,
                    int selnode, const view *hv, rasp_elem dflt) {
  int uid = new_unit(g, U_HEAD, cat, vals, nvals, node);
  g->u[uid].hmode = hmode;
  g->u[uid].selnode = selnode;
  if (hv) g->u[uid].hv = *hv;
  g->u[uid].dflt = dflt;
  return uid;
}

/* A quantized width's value at width w: QW_B + qv fl32(1/(w + 1)), rounded
** to float32 as the attention's bias adds it (the grid there is 1):
** exactly the integer the residual holds when the head's softmax gives
** BOS fl32(1/(w + 1)) (prove checks when it does). */
static int64_t qwidth_value(double qv, int w) {
  volatile float p = 1.0f / (float)(w + 1);
  volatile float o = (float)qv * p; /* a power of two: exact */
  volatile float r = (float)QW_B + o;
  return (int64_t)r;
}

/* The BOS weight qv a width node id (widths wlo..n) is quantized with, or
** 0 for the classic 1/(w + 1): proof-driven fp32 only, unless the proof
** made it classic (FORCE_CLASSIC).  qv is the smallest power of two at
** which the values of adjacent widths stay apart; at most 2^22. */
static int proof_driven(const gc *g);
static double qwidth_scale(const gc *g, int id, int wlo) {
  if (!proof_driven(g) || (g->force && (g->force[id] & FORCE_CLASSIC))) return 0;
  for (double qv = 4; qv <= ldexp(1, 22); qv *= 2) {
    int apart = 1;
    for (int w = wlo; w < g->n && apart; w++) apart = qwidth_value(qv, w) > qwidth_value(qv, w + 1);
    if (apart) return qv;
  }
  return 0;
}

/* What a width head writes at BOS (BOS alone selected: weight 1). */
static double qwidth_bos(const unit *u) { return u->qw ? QW_B + u->qv : 1; }

static void view_alloc(gc *g, view *v, int unit_id) {
  v->unit = unit_id;
  v->nv = g->u[unit_id].nvals;
  v->val = raspM_alloc(sizeof(rasp_elem) * (size_t)(v->nv ? v->nv : 1));
  v->ok = raspM_alloc((size_t)(v->nv ? v->nv : 1));
}
static void view_free(view *v) {
  raspM_free(v->val);
  raspM_free(v->ok);
  memset(v, 0, sizeof *v);
}
static void view_copy(gc *g, view *dst, const view *src) {
  view_alloc(g, dst, src->unit);
  memcpy(dst->val, src->val, sizeof(rasp_elem) * (size_t)src->nv);
  memcpy(dst->ok, src->ok, (size_t)src->nv);
}
static void view_identity(gc *g, view *v, int unit_id) {
  view_alloc(g, v, unit_id);
  for (int i = 0; i < v->nv; i++) {
    v->val[i] = g->u[unit_id].vals[i];
    v->ok[i] = 1;
  }
}
/* The distinct values a view takes; malloc'd, sorted. */
static rasp_elem *view_image(const view *v, int *count) {
  rasp_elem *r = raspM_alloc(sizeof(rasp_elem) * (size_t)(v->nv + 1));
  int m = 0;
  for (int i = 0; i < v->nv; i++)
    if (v->ok[i]) r[m++] = v->val[i];
  *count = uniq(r, m);
  return r;
}

static int unit_of(gc *g, int node) { return g->nv[node].unit; }

/* A unit holding view v's values (an MLP decode): categorical, or (num) an
** integer with its square (x, x^2); memoised. */
static int decode_unit(gc *g, const view *v, int node, int num) {
  for (int i = 0; i < g->nu; i++) {
    const unit *d = &g->u[i];
    if (d->kind == U_MLP && d->mkind == M_DECODE && d->cat == !num && d->mv[0].unit == v->unit &&
        !memcmp(d->mv[0].ok, v->ok, (size_t)v->nv)) {
      int same = 1;
      for (int a = 0; a < v->nv && same; a++)
        same = !v->ok[a] || !ecmp(d->mv[0].val[a], v->val[a]);
      if (same) return i;
    }
  }
  int cnt;
  rasp_elem *img = view_image(v, &cnt);
  int id = new_unit(g, U_MLP, !num, img, cnt, node);
  g->u[id].mkind = M_DECODE;
  g->u[id].sq = num;
  view_copy(g, &g->u[id].mv[0], v);
  g->u[id].nmv = 1;
  return id;
}

/* Makes v read a categorical unit (decoding a numerical one). */
static void need_cat(gc *g, view *v, int node) {
  if (g->u[v->unit].cat) return;
  int id = decode_unit(g, v, node, 0);
  view_free(v);
  view_identity(g, v, id);
}

/* ---- numbers ------------------------------------------------------------
** A view read as a number is a linear form over residual dimensions: a
** categorical unit through its table (sum over values of value * one-hot),
** a squared numerical unit (x, x^2) through an affine view a x + b, whose
** square is a^2 x^2 + 2ab x + b^2 (b on ONE).  Both are 0 at BOS. */

#define NUMMIN 32 /* a unit with more integer values than this is numerical (smaller
                     ** ones stay one-hot: cheap, and gentle for training) */

typedef struct lform {
  int n;
  int u[8], off[8]; /* numerical units: a few terms */
  double w[8];
  const view *cat;  /* categorical: the table itself */
  int sq;
  double sh;
} lform;

/* Integers read as numbers (lf_build, numerical moves, tested conditions)
** stay inside this window, so that their squares and big-M gates are exact
** in float32 sums. */
#define INTWIN 1000000
static int fact_int(raspF_value f) {
  return f.kind == RASPF_K_INT && f.lo > -INTWIN && f.hi < INTWIN;
}
static int int_elem(rasp_elem e) { return fact_int(raspF_elem_value(e)); }
/* The fact of view v of node id: the kinds and [lo, hi] of its possible
** values, within the node's fact (rfacts.h) -- the exact set refines it
** where the transfer function cannot see (a map's table, the means an
** aggregate can take).  id < 0: the set's alone. */
static raspF_value view_fact(const gc *g, const view *v, int id) {
  raspF_value f = {0, INT64_MAX, INT64_MIN};
  for (int a = 0; a < v->nv; a++) {
    if (!v->ok[a]) continue;
    raspF_value e = raspF_elem_value(v->val[a]);
    f.kind |= e.kind;
    if (e.kind & RASPF_K_NUM) {
      f.lo = e.lo < f.lo ? e.lo : f.lo;
      f.hi = e.hi > f.hi ? e.hi : f.hi;
    }
  }
  return id >= 0 && g->fact ? raspF_meet(f, g->fact[id]) : f;
}

static int view_affine(gc *g, const view *v, double *a, double *b);

static void lf_add(lform *f, int u, int off, double w) {
  if (w != 0 && f->n < 8) {
    f->u[f->n] = u;
    f->off[f->n] = off;
    f->w[f->n++] = w;
  }
}

/* The form of (v - sh) (sq = 0) or (v - sh)^2 (sq = 1), with the range of
** its values; 0 when v cannot be read as an integer this way. */
static int lf_build(gc *g, const view *v, int sq, double sh, lform *f, double *lo, double *hi) {
  const unit *u = &g->u[v->unit];
  if (!fact_int(view_fact(g, v, -1))) return 0;
  int any = 0;
  for (int a = 0; a < v->nv; a++) {
    if (!v->ok[a]) continue;
    double x = dval(v->val[a]) - sh, w = sq ? x * x : x;
    if (!any || w < *lo) *lo = w;
    if (!any || w > *hi) *hi = w;
    any = 1;
  }
  if (!any) return 0;
  memset(f, 0, sizeof *f);
  f->sq = sq;
  f->sh = sh;
  if (u->cat) {
    f->cat = v;
    return 1;
  }
  double A, B;
  if (!u->sq || !view_affine(g, v, &A, &B)) return 0;
  int one = 2; /* the ONE unit is always unit 2 */
  B -= sh;
  if (!sq) {
    lf_add(f, v->unit, 0, A);
    lf_add(f, one, 0, B);
  } else {
    lf_add(f, v->unit, 1, A * A);
    lf_add(f, v->unit, 0, 2 * A * B);
    lf_add(f, one, 0, B * B);
  }
  return 1;
}
static int lf_ok(gc *g, const view *v) {
  lform f;
  double lo, hi;
  return lf_build(g, v, 0, 0, &f, &lo, &hi);
}

/* Makes v read as an integer form (lf_ok) where it can: a view of a
** numerical unit without its square (a width, a mean, a sum) taking more
** than NUMMIN integer values is decoded to (x, x^2) -- the categorical
** decode's steps, weighted by the change of x and of x^2 (two output
** dimensions, not one per value).  node: the view's IR node, whose forcing
** (a fallback) keeps the categorical decode.  Returns whether v is lf_ok. */
static int need_num(gc *g, view *v, int node) {
  if (lf_ok(g, v)) return 1;
  const unit *s = &g->u[v->unit];
  if (s->cat || s->sq || forced(g, node) || !fact_int(view_fact(g, v, node))) return 0;
  int cnt;
  raspM_free(view_image(v, &cnt));
  if (cnt <= NUMMIN) return 0;
  int id = decode_unit(g, v, node, 1);
  view_free(v);
  view_identity(g, v, id);
  return lf_ok(g, v);
}

/* Adds coef * form to column col of a weight matrix (rows = residual
** dimensions, ld = row length). */
static void lf_write(gc *g, const lform *f, float *W, int ld, int col, double coef) {
  if (f->cat) {
    const view *v = f->cat;
    int d0 = g->u[v->unit].dim;
    for (int a = 0; a < v->nv; a++) {
      if (!v->ok[a]) continue;
      double x = dval(v->val[a]) - f->sh, w = f->sq ? x * x : x;
      if (w != 0) W[(size_t)(d0 + a) * ld + col] += (float)(coef * w);
    }
    return;
  }
  for (int i = 0; i < f->n; i++)
    W[(size_t)(g->u[f->u[i]].dim + f->off[i]) * ld + col] += (float)(coef * f->w[i]);
}

/* ---- value sets of averaging heads ------------------------------------- */

static int64_t gcd64(int64_t a, int64_t b) {
  return (int64_t)raspI_gcd_u64(a < 0 ? 0 - (uint64_t)a : (uint64_t)a,
                                b < 0 ? 0 - (uint64_t)b : (uint64_t)b);
}

/* Every mean of 1..n values drawn (with repetition) from img, plus dflt.
** Works on integers over the common denominator with a bitset of sums. */
static rasp_elem *mean_set(gc *g, const rasp_elem *img, int cnt, rasp_elem dflt, int *count) {
  int64_t D = 1;
  for (int i = 0; i < cnt; i++) {
    int64_t d = img[i].den > 0 ? img[i].den : 1;
    D = D / gcd64(D, d) * d;
    if (D > 1000000) return NULL;
  }
  int64_t *s = raspM_alloc(sizeof(int64_t) * (size_t)(cnt ? cnt : 1));
  int64_t lo = 0, hi = 0;
  for (int i = 0; i < cnt; i++) {
    int64_t den = img[i].den > 0 ? img[i].den : 1;
    s[i] = img[i].num * (D / den);
    if (!i || s[i] < lo) lo = s[i];
    if (!i || s[i] > hi) hi = s[i];
  }
  int64_t range = hi - lo;
  if (range * g->n > 50000000 / (cnt ? cnt : 1)) {
    raspM_free(s);
    return NULL;
  }
  size_t width = (size_t)(range * g->n + 1);
  unsigned char *cur = raspM_alloc(width), *nxt = raspM_alloc(width);
  cur[0] = 1; /* offsets from w*lo */
  int cap = 1024, m = 0;
  rasp_elem *out = raspM_alloc(sizeof(rasp_elem) * (size_t)cap);
  for (int w = 1; w <= g->n; w++) {
    memset(nxt, 0, width);
    size_t top = (size_t)(range * (w - 1));
    for (size_t o = 0; o <= top; o++)
      if (cur[o])
        for (int i = 0; i < cnt; i++) nxt[o + (size_t)(s[i] - lo)] = 1;
    unsigned char *t = cur;
    cur = nxt;
    nxt = t;
    for (size_t o = 0; o <= (size_t)(range * w); o++)
      if (cur[o]) {
        int64_t num = (int64_t)o + lo * w, den = D * w, c = gcd64(num, den);
        if (c > 1) {
          num /= c;
          den /= c;
        }
        if (m == cap) {
          cap *= 2;
          out = raspM_realloc(out, sizeof(rasp_elem) * (size_t)cap);
        }
        out[m++] = (rasp_elem){num, den};
      }
    if (m > 4 * MAXVALS) m = uniq(out, m);
    if (m > MAXVALS) break;
  }
  raspM_free(cur);
  raspM_free(nxt);
  raspM_free(s);
  out = raspM_realloc(out, sizeof(rasp_elem) * (size_t)(m + 1));
  out[m++] = dflt;
  m = uniq(out, m);
  if (m > MAXVALS) {
    raspM_free(out);
    return NULL;
  }
  *count = m;
  return out;
}

/* ---- selectors ---------------------------------------------------------- */

/* Aggregate id's move fact (rfacts.h), from the kinds of the value sets
** planned so far: nodes are planned in order, so every key it reads has its
** view (a node that is not live has none: its fact's kinds). */
static int move_fact(gc *g, int id) {
  for (; g->kdone < id; g->kdone++) {
    int i = g->kdone;
    g->kinds[i] = g->nv[i].val ? view_fact(g, &g->nv[i], i).kind : g->fact[i].kind;
  }
  return raspF_move(g->mscan, id, g->kinds);
}

/* The key and query units a selector tree reads, if it reads one of each
** (ONE aside); 0 otherwise. */
static int sel_units(gc *g, int id, int *ku, int *qu) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  if (nd->op == RASP_OP_SELECT) {
    if (g->numeq[id]) return 0;
    int k = unit_of(g, nd->in[0]), q = unit_of(g, nd->in[1]);
    if (g->u[k].kind != U_ONE) {
      if (*ku >= 0 && *ku != k) return 0;
      *ku = k;
    }
    if (g->u[q].kind != U_ONE) {
      if (*qu >= 0 && *qu != q) return 0;
      *qu = q;
    }
    if (!g->causal_model && !g->raw && (nd->flags & RASP_CAUSAL)) return 0;
    return 1;
  }
  for (int i = 0; i < nd->nin; i++)
    if (!sel_units(g, nd->in[i], ku, qu)) return 0;
  return 1;
}

static int one_unit(gc *g) {
  for (int i = 0; i < g->nu; i++)
    if (g->u[i].kind == U_ONE) return i;
  return -1;
}
static int idx_unit(gc *g) {
  for (int i = 0; i < g->nu; i++)
    if (g->u[i].kind == U_IDX) return i;
  return -1;
}

/* Selector tree value at key value index a (of unit ku) and query b. */
static int sel_eval(gc *g, int id, int ku, int a, int qu, int b) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  switch (nd->op) {
  case RASP_OP_SELECT: {
    const view *kv = &g->nv[nd->in[0]], *qv = &g->nv[nd->in[1]];
    int ka = kv->unit == ku ? a : 0, qb = qv->unit == qu ? b : 0;
    if (!kv->ok[ka] || !qv->ok[qb]) return 0;
    return pred_holds(g, nd, kv->val[ka], qv->val[qb]);
  }
  case RASP_OP_SEL_NOT: return !sel_eval(g, nd->in[0], ku, a, qu, b);
  case RASP_OP_SEL_AND:
    return sel_eval(g, nd->in[0], ku, a, qu, b) && sel_eval(g, nd->in[1], ku, a, qu, b);
  case RASP_OP_SEL_OR:
    return sel_eval(g, nd->in[0], ku, a, qu, b) || sel_eval(g, nd->in[1], ku, a, qu, b);
  default: return 0;
  }
}

static void add_comp(gc *g, comp *c, int *nc, int ku, int qu, int id, int causal_idx) {
  int nk = g->u[ku].nvals, nq = g->u[qu].nvals;
  memset(&c[*nc], 0, sizeof c[*nc]);
  c[*nc].ku = ku;
  c[*nc].qu = qu;
  c[*nc].t = raspM_alloc((size_t)nk * (size_t)nq);
  for (int a = 0; a < nk; a++)
    for (int b = 0; b < nq; b++)
      c[*nc].t[(size_t)a * nq + b] =
          (unsigned char)(causal_idx ? dval(g->u[ku].vals[a]) <= dval(g->u[qu].vals[b])
                                     : sel_eval(g, id, ku, a, qu, b));
  (*nc)++;
}

static int view_affine(gc *g, const view *v, double *a, double *b);

/* Splits a selector into components. */
static int sel_comps(gc *g, int id, comp *c, int *nc) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  if (*nc >= MAXCOMPS - 1) {
    raspR_set(g->err, nd->pos, "compile: selector has too many parts");
    return 0;
  }
  int ku = -1, qu = -1;
  int one = one_unit(g);
  if (nd->op == RASP_OP_SELECT && g->numq[id]) {
    const view *kv = &g->nv[nd->in[0]], *qv = &g->nv[nd->in[1]];
    comp *cc = &c[(*nc)++];
    memset(cc, 0, sizeof *cc);
    cc->ku = kv->unit;
    cc->qu = qv->unit;
    cc->numq = 1;
    view_affine(g, qv, &cc->qa, &cc->qb);
    cc->ky = raspM_alloc(sizeof(double) * (size_t)kv->nv);
    for (int a = 0; a < kv->nv; a++) cc->ky[a] = kv->ok[a] ? dval(kv->val[a]) : 1e6;
    return 1;
  }
  if (!g->causal_model && !g->raw && (nd->flags & RASP_CAUSAL)) {
    /* the pattern without the mask (a causal combination is masked after
       combining: rcausal.h), then k <= q on the indices */
    g->raw = 1;
    int ok = sel_comps(g, id, c, nc);
    g->raw = 0;
    if (!ok) return 0;
    int ix = idx_unit(g);
    g->u[ix].used = 1;
    add_comp(g, c, nc, ix, ix, id, 1);
    return 1;
  }
  if (nd->op == RASP_OP_SELECT && g->numeq[id]) {
    comp *cc = &c[(*nc)++];
    memset(cc, 0, sizeof *cc);
    cc->numeq = 1;
    cc->sel = id;
    const view *ev = &g->eqv[2 * id];
    view_copy(g, &cc->kv, ev[0].val ? &ev[0] : &g->nv[nd->in[0]]);
    view_copy(g, &cc->qv, ev[1].val ? &ev[1] : &g->nv[nd->in[1]]);
    cc->ku = cc->kv.unit;
    cc->qu = cc->qv.unit;
    /* centred: the score's terms are as small as the values allow */
    double lo = 0, hi = 0, l2, h2;
    lform f;
    lf_build(g, &cc->kv, 0, 0, &f, &lo, &hi);
    lf_build(g, &cc->qv, 0, 0, &f, &l2, &h2);
    cc->sh = floor(((lo < l2 ? lo : l2) + (hi > h2 ? hi : h2)) / 2);
    return 1;
  }
  if (sel_units(g, id, &ku, &qu)) {
    if (ku < 0) ku = one;
    if (qu < 0) qu = one;
    add_comp(g, c, nc, ku, qu, id, 0);
    return 1;
  }
  if (nd->op == RASP_OP_SEL_AND)
    return sel_comps(g, nd->in[0], c, nc) && sel_comps(g, nd->in[1], c, nc);
  raspR_set(g->err, nd->pos,
            "compile: cannot realise this selector in one head (an or/not of selects "
            "reading different sequences)");
  return 0;
}

/* A table component that never holds for some query value (every key
** scores below the BOS column there, so the default or an empty width
** wins) makes every other component's entries at that query value
** irrelevant: they are cleared, which merges columns (a causal mask k <= q
** costs one column per query position, but a readout only needs the
** positions its equality can select at).  Likewise for key values. */
static void prune_comps(gc *g, comp *c, int nc) {
  for (int j = 0; j < nc; j++) {
    if (!c[j].t) continue;
    int nkj = g->u[c[j].ku].nvals, nqj = g->u[c[j].qu].nvals;
    for (int i = 0; i < nc; i++) {
      if (i == j || !c[i].t) continue;
      int nqi = g->u[c[i].qu].nvals;
      if (c[i].qu == c[j].qu)
        for (int b = 0; b < nqj; b++) {
          int zero = 1;
          for (int a = 0; a < nkj && zero; a++) zero = !c[j].t[(size_t)a * nqj + b];
          if (zero)
            for (int a = 0; a < g->u[c[i].ku].nvals; a++) c[i].t[(size_t)a * nqi + b] = 0;
        }
      if (c[i].ku == c[j].ku)
        for (int a = 0; a < nkj; a++) {
          int zero = 1;
          for (int b = 0; b < nqj && zero; b++) zero = !c[j].t[(size_t)a * nqj + b];
          if (zero) memset(c[i].t + (size_t)a * nqi, 0, (size_t)nqi);
        }
    }
  }
}

/* ---- planning ----------------------------------------------------------- */

/* Whether view v is raw * a + b of its (numerical) unit's raw values, with
** integer results. */
static int view_affine(gc *g, const view *v, double *a, double *b) {
  const unit *u = &g->u[v->unit];
  int first = -1;
  *a = 1;
  *b = 0;
  for (int i = 0; i < v->nv; i++) {
    if (!v->ok[i]) continue;
    if (!is_num(v->val[i]) || v->val[i].den == RASP_DEN_BOOL || !is_num(u->vals[i])) return 0;
    if (v->val[i].den != 1) return 0;
    if (first < 0) first = i;
  }
  if (first < 0) return 0;
  int second = -1;
  for (int i = first + 1; i < v->nv && second < 0; i++)
    if (v->ok[i]) second = i;
  double x0 = dval(u->vals[first]), y0 = dval(v->val[first]);
  if (second >= 0) {
    double x1 = dval(u->vals[second]), y1 = dval(v->val[second]);
    *a = (y1 - y0) / (x1 - x0);
  }
  *b = y0 - *a * x0;
  for (int i = 0; i < v->nv; i++)
    if (v->ok[i] && fabs(*a * dval(u->vals[i]) + *b - dval(v->val[i])) > 1e-9) return 0;
  return 1;
}

/* A select realised with a numerical query: equality, not causal, the key
** a view of the indices (whose every value occurs in every input, so some
** key always matches and the default is never needed), the query an affine
** integer view of a numerical MLP unit whose values are all among the
** key's, and read only by aggregates.  Saves decoding the query. */
static int numq_ok(gc *g, int id) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  const view *kv = &g->nv[nd->in[0]], *qv = &g->nv[nd->in[1]];
  if (nd->aux != RASP_PRED_EQ || (nd->flags & RASP_CAUSAL)) return 0;
  if (g->u[kv->unit].kind != U_IDX) return 0;
  const unit *q = &g->u[qv->unit];
  if (q->cat || q->kind != U_MLP || q->mkind != M_SUM) return 0;
  double a, b;
  if (!view_affine(g, qv, &a, &b)) return 0;
  for (int i = 0; i < qv->nv; i++) {
    if (!qv->ok[i]) continue;
    int hit = 0;
    for (int k = 0; k < kv->nv && !hit; k++)
      hit = kv->ok[k] && is_num(kv->val[k]) && kv->val[k].den != RASP_DEN_BOOL &&
            raspI_elem_eq(kv->val[k], qv->val[i]);
    if (!hit) return 0;
  }
  for (int i = 0; i < g->ir->nnodes; i++) {
    const rasp_ir_node *r = &g->ir->nodes[i];
    for (int k = 0; k < r->nin; k++)
      if (r->in[k] == id && r->op != RASP_OP_AGGREGATE && r->op != RASP_OP_AGGR_MEAN) return 0;
  }
  return 1;
}

/* Whether unit uid's value can be off its integer by more than a move's
** leak: a need_num decode (its steps read a width or mean) or what moves or
** gates one.  Sources are planned before their readers, so come first. */
static int approx_unit(gc *g, int uid) {
  const unit *u = &g->u[uid];
  if (u->kind == U_MLP && u->mkind == M_DECODE) return !u->cat;
  if (u->kind == U_HEAD) return u->hmode == H_MOVE && approx_unit(g, u->hv.unit);
  if (u->kind != U_MLP || u->cat) return 0;
  for (int i = 0; i < u->nmv; i++)
    if (approx_unit(g, u->mv[i].unit)) return 1;
  return 0;
}

/* Marks the selects a sel_width reads (through and / or / not). */
static void mark_wsel(gc *g, int id) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  if (nd->op == RASP_OP_SELECT) g->wsel[id] = 1;
  else if (nd->op == RASP_OP_SEL_AND || nd->op == RASP_OP_SEL_OR || nd->op == RASP_OP_SEL_NOT)
    for (int i = 0; i < nd->nin; i++) mark_wsel(g, nd->in[i]);
}

/* A select realised as -(k - q)^2 (numeq): equality, not under an or / not
** (the score is a sum, not a 0/1 table), both sides readable as integers
** (lf_build), and either side a squared numerical unit or the one-hot
** table needing more than NUMMIN columns.  A side that is a width or mean
** of many values is decoded to (x, x^2) for it (need_num; g->eqv): three
** columns and two residual dimensions instead of a one-hot decode and a
** column per value.  Not for a select a sel_width reads: its selected keys
** must score alike to within a fraction of 1/(n+1)^2, which a decoded
** number's error (about 1e-2 in x^2 at n = 128) times the head's scale
** does not give (double_histogram at n = 128 was 346/1000). */
static int numeq_ok(gc *g, int id) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  if (nd->aux != RASP_PRED_EQ || g->ornot[id] || forced(g, id)) return 0;
  const view *kv = &g->nv[nd->in[0]], *qv = &g->nv[nd->in[1]];
  if (g->wsel[id] && (approx_unit(g, kv->unit) || approx_unit(g, qv->unit))) return 0;
  if (!lf_ok(g, kv) || !lf_ok(g, qv)) {
    if (g->wsel[id]) return 0;
    view k2, q2;
    view_copy(g, &k2, kv);
    view_copy(g, &q2, qv);
    if (need_num(g, &k2, nd->in[0]) && need_num(g, &q2, nd->in[1])) {
      g->eqv[2 * id] = k2;
      g->eqv[2 * id + 1] = q2;
      return 1;
    }
    view_free(&k2);
    view_free(&q2);
    return 0;
  }
  if (g->u[kv->unit].sq || g->u[qv->unit].sq) return 1;
  int nk, nq, common = 0;
  rasp_elem *ik = view_image(kv, &nk), *iq = view_image(qv, &nq);
  for (int i = 0; i < nk; i++) common += find(iq, nq, ik[i]) >= 0;
  raspM_free(ik);
  raspM_free(iq);
  return common > NUMMIN; /* large one-hot tables only: small ones train gently */
}

/* Marks the selects under an or / not (their pattern is a 0/1 table). */
static void mark_ornot(gc *g, int id, int under) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  if (nd->op == RASP_OP_SEL_OR || nd->op == RASP_OP_SEL_NOT) under = 1;
  if (nd->op == RASP_OP_SELECT) {
    if (under) g->ornot[id] = 1;
    return;
  }
  if (nd->op != RASP_OP_SEL_AND && nd->op != RASP_OP_SEL_OR && nd->op != RASP_OP_SEL_NOT) return;
  for (int i = 0; i < nd->nin; i++) mark_ornot(g, nd->in[i], under);
}

/* f(x, y) = G(x) + H(y) over integers: an element-wise node of two units
** that is a sum of functions of each (length - idx - 1) becomes one
** numerical dimension computed with |X| + |Y| hidden units at most,
** instead of a categorical table of |X| * |Y|. */
static int plan_sum(gc *g, int id, const rasp_ir_node *nd) {
  if ((nd->op != RASP_OP_BINARY && nd->op != RASP_OP_SEQMAP) || forced(g, id)) return 0;
  const view *x = &g->nv[nd->in[0]], *y = &g->nv[nd->in[1]];
  if (x->unit == y->unit || (long long)x->nv * y->nv > 4000000) return 0;
  if ((long long)x->nv * y->nv <= 64) return 0; /* a small table is as cheap */
  int a0 = -1, b0 = -1;
  for (int a = 0; a < x->nv && a0 < 0; a++)
    if (x->ok[a]) a0 = a;
  for (int b = 0; b < y->nv && b0 < 0; b++)
    if (y->ok[b]) b0 = b;
  if (a0 < 0 || b0 < 0) return 0;
  double *G = raspM_alloc(sizeof(double) * (size_t)x->nv), *H = raspM_alloc(sizeof(double) * (size_t)y->nv);
  int cap = 64, m = 0, ok = 1;
  rasp_elem *img = raspM_alloc(sizeof(rasp_elem) * (size_t)cap);
  rasp_elem r00;
  {
    rasp_elem args[2] = {x->val[a0], y->val[b0]};
    ok = eval_elem(g, nd, args, &r00) && r00.den == 1;
  }
  for (int a = 0; a < x->nv && ok; a++)
    for (int b = 0; b < y->nv && ok; b++) {
      if (!x->ok[a] || !y->ok[b]) continue;
      rasp_elem args[2] = {x->val[a], y->val[b]}, r;
      if (!eval_elem(g, nd, args, &r) || r.den != 1 || r.num > 100000000 || r.num < -100000000) {
        ok = 0;
        break;
      }
      if (b == b0) G[a] = (double)r.num;
      if (a == a0) H[b] = (double)r.num - (double)r00.num;
      if (b != b0 && a != a0) {
        /* checked once G[a] and H[b] are known: a0/b0 come first */
        if ((double)r.num != G[a] + H[b]) ok = 0;
      }
      RASP_GROW(img, cap, m + 1);
      img[m++] = r;
      if (m > 4 * MAXVALS) m = uniq(img, m);
    }
  if (!ok) {
    raspM_free(G);
    raspM_free(H);
    raspM_free(img);
    return 0;
  }
  m = uniq(img, m);
  int uid = new_unit(g, U_MLP, 0, img, m, id);
  unit *u = &g->u[uid];
  u->mkind = M_SUM;
  u->mnode = id;
  u->nmv = 2;
  view_copy(g, &u->mv[0], x);
  view_copy(g, &u->mv[1], y);
  for (int a = 0; a < x->nv; a++) u->mv[0].val[a] = (rasp_elem){(int64_t)(x->ok[a] ? G[a] : 0), 1};
  for (int b = 0; b < y->nv; b++) u->mv[1].val[b] = (rasp_elem){(int64_t)(y->ok[b] ? H[b] : 0), 1};
  raspM_free(G);
  raspM_free(H);
  view_identity(g, &g->nv[id], uid);
  return 1;
}

/* where(c, x, y) on numbers: (x, x^2) or (y, y^2) by big-M gating, a few
** hidden units, when x and y read as integers and the result has many
** values (or an operand is numerical already); a branch that is a width or
** mean of many values is decoded to (x, x^2) for it (need_num). */
static int plan_nwhere(gc *g, int id, const rasp_ir_node *nd) {
  if (nd->op != RASP_OP_WHERE || forced(g, id)) return 0;
  view xv, yv;
  view_copy(g, &xv, &g->nv[nd->in[1]]);
  view_copy(g, &yv, &g->nv[nd->in[2]]);
  const view *x = &xv, *y = &yv;
  if (!need_num(g, &xv, nd->in[1]) || !need_num(g, &yv, nd->in[2])) {
    view_free(&xv);
    view_free(&yv);
    return 0;
  }
  int nx, ny;
  rasp_elem *ix = view_image(x, &nx), *iy = view_image(y, &ny);
  ix = raspM_realloc(ix, sizeof(rasp_elem) * (size_t)(nx + ny + 1));
  memcpy(ix + nx, iy, sizeof(rasp_elem) * (size_t)ny);
  raspM_free(iy);
  int m = uniq(ix, nx + ny);
  if (m <= NUMMIN && !g->u[x->unit].sq && !g->u[y->unit].sq) {
    raspM_free(ix);
    view_free(&xv);
    view_free(&yv);
    return 0;
  }
  view c;
  view_copy(g, &c, &g->nv[nd->in[0]]);
  for (int a = 0; a < c.nv; a++) c.val[a] = (rasp_elem){raspI_elem_truth(c.val[a]), RASP_DEN_BOOL};
  int ctest = 0, swap = 0;
  double ct_a = 0, ct_b = 0;
  const unit *cu = &g->u[c.unit];
  if (cu->sq) {
    /* a condition that is one value, all but one, or a threshold of an
    ** integer x is tested in this MLP (no decode, no extra sublayer) */
    int nt = 0, nf = 0, vt = -1, vf = -1, ftrue = -1, lfalse = -1, ltrue = -1, ffalse = -1;
    for (int a = 0; a < c.nv; a++) {
      if (!c.ok[a] || !int_elem(cu->vals[a])) continue;
      if (c.val[a].num) {
        nt++, vt = a, ltrue = a;
        if (ftrue < 0) ftrue = a;
      } else {
        nf++, vf = a, lfalse = a;
        if (ffalse < 0) ffalse = a;
      }
    }
    int all = 1;
    for (int a = 0; a < c.nv; a++) all &= !c.ok[a] || int_elem(cu->vals[a]);
    if (all && nt && nf) {
      if (nt == 1) ctest = 1, ct_a = 1, ct_b = -dval(cu->vals[vt]);
      else if (nf == 1) ctest = 1, swap = 1, ct_a = 1, ct_b = -dval(cu->vals[vf]);
      else if (lfalse < ftrue) ctest = 2, ct_a = 1, ct_b = -dval(cu->vals[lfalse]);
      else if (ltrue < ffalse) ctest = 2, ct_a = -1, ct_b = dval(cu->vals[ffalse]);
    }
  }
  if (ctest) {
    /* exact in float32 only while every partial sum is an integer below
    ** 2^23: M |t| + M for the largest M (a square's range) and |t|;
    ** beyond that (large vocabularies) the condition is decoded first */
    double tmax = 0, mmax = 0, lo, hi;
    for (int a = 0; a < c.nv; a++)
      if (c.ok[a] && fabs(ct_a * dval(cu->vals[a]) + ct_b) > tmax)
        tmax = fabs(ct_a * dval(cu->vals[a]) + ct_b);
    const view *br[2] = {x, y};
    lform f;
    for (int b = 0; b < 2; b++)
      for (int col = 0; col < 2; col++)
        if (lf_build(g, br[b], col, 0, &f, &lo, &hi) && hi - lo + 1 > mmax) mmax = hi - lo + 1;
    if ((tmax + 2) * mmax >= 8388608.0) ctest = 0, swap = 0;
  }
  if (ctest) {
    int cunit = c.unit;
    view_free(&c);
    view_identity(g, &c, cunit);
  } else
    need_cat(g, &c, nd->in[0]);
  int uid = new_unit(g, U_MLP, 0, ix, m, id);
  unit *u = &g->u[uid];
  u->sq = 1;
  u->mkind = M_NWHERE;
  u->mnode = id;
  u->nmv = 3;
  u->mv[0] = c;
  u->ctest = ctest;
  u->ct_a = ct_a;
  u->ct_b = ct_b;
  u->mv[1] = swap ? yv : xv;
  u->mv[2] = swap ? xv : yv;
  view_identity(g, &g->nv[id], uid);
  return 1;
}

/* x == y, x < y, ... on integers where an operand is numerical: z = x - y
** is a linear form, and [z == 0] = ReLU(z+1) - 2 ReLU(z) + ReLU(z-1),
** [z >= 1] = ReLU(z) - ReLU(z-1): two or three hidden units and a
** two-valued (False, True) unit instead of decoding the operands. */
static int plan_ncmp(gc *g, int id, const rasp_ir_node *nd) {
  if (nd->op != RASP_OP_BINARY || forced(g, id)) return 0;
  switch ((rasp_binop)nd->aux) {
  case RASP_BIN_EQ: case RASP_BIN_NE: case RASP_BIN_LT: case RASP_BIN_LE: case RASP_BIN_GT:
  case RASP_BIN_GE: break;
  default: return 0;
  }
  const view *x = &g->nv[nd->in[0]], *y = &g->nv[nd->in[1]];
  if (!g->u[x->unit].sq && !g->u[y->unit].sq) return 0;
  if (!lf_ok(g, x) || !lf_ok(g, y)) return 0;
  rasp_elem *vals = raspM_alloc(sizeof(rasp_elem) * 2);
  vals[0] = (rasp_elem){0, RASP_DEN_BOOL};
  vals[1] = (rasp_elem){1, RASP_DEN_BOOL};
  int m = uniq(vals, 2);
  int uid = new_unit(g, U_MLP, 1, vals, m, id);
  unit *u = &g->u[uid];
  u->mkind = M_NCMP;
  u->mnode = id;
  u->nmv = 2;
  view_copy(g, &u->mv[0], x);
  view_copy(g, &u->mv[1], y);
  view_identity(g, &g->nv[id], uid);
  return 1;
}

/* Select id: through a numerical query (numq), as -(k - q)^2 (numeq), or
** over categorical key and query views.  Its columns are the head's
** (sel_comps); here only how its operands are read. */
static int plan_select(gc *g, int id, const rasp_ir_node *nd) {
  if (numq_ok(g, id)) {
    g->numq[id] = 1;
    need_cat(g, &g->nv[nd->in[0]], nd->in[0]);
    return 1;
  }
  if (numeq_ok(g, id)) {
    g->numeq[id] = 1;
    return 1;
  }
  for (int i = 0; i < 2; i++) need_cat(g, &g->nv[nd->in[i]], nd->in[i]);
  return 1;
}

/* An element-wise node of two or three units as a categorical MLP unit
** (M_WHERE, M_PAIR): its operands decoded, its image every combination of
** their values, and a where that may update its else-operand in place. */
static int plan_mlp(gc *g, int id, const rasp_ir_node *nd) {
  view *v = &g->nv[id];
  /* operands first, so that their decode units come before this one */
  view tmp[3];
  for (int i = 0; i < nd->nin; i++) {
    view_copy(g, &tmp[i], &g->nv[nd->in[i]]);
    if (nd->op == RASP_OP_WHERE && i == 0) /* only the truth of the condition matters */
      for (int a = 0; a < tmp[i].nv; a++)
        tmp[i].val[a] = (rasp_elem){raspI_elem_truth(tmp[i].val[a]), RASP_DEN_BOOL};
    need_cat(g, &tmp[i], nd->in[i]);
  }
  int uid = new_unit(g, U_MLP, 1, NULL, 0, id);
  unit *u = &g->u[uid];
  u->mkind = nd->op == RASP_OP_WHERE ? M_WHERE : M_PAIR;
  u->mnode = id;
  u->nmv = nd->nin;
  for (int i = 0; i < nd->nin; i++) u->mv[i] = tmp[i];
  /* the image: evaluate over every combination of the operand values */
  int cap = 64, m = 0;
  rasp_elem *img = raspM_alloc(sizeof(rasp_elem) * (size_t)cap);
  if (u->mkind == M_WHERE) {
    for (int br = 1; br <= 2; br++)
      for (int a = 0; a < u->mv[br].nv; a++)
        if (u->mv[br].ok[a]) {
          RASP_GROW(img, cap, m + 1);
          img[m++] = u->mv[br].val[a];
        }
  } else {
    const view *x = &u->mv[0], *y = &u->mv[1];
    if ((long long)x->nv * y->nv > 4000000) {
      raspR_set(g->err, nd->pos, "compile: %d x %d value pairs is too many", x->nv, y->nv);
      raspM_free(img);
      return 0;
    }
    for (int a = 0; a < x->nv; a++)
      for (int b = 0; b < y->nv; b++) {
        rasp_elem args[2] = {x->val[a], y->val[b]}, r;
        if (x->ok[a] && y->ok[b] && eval_elem(g, nd, args, &r)) {
          RASP_GROW(img, cap, m + 1);
          img[m++] = r;
          if (m > 4 * MAXVALS) m = uniq(img, m);
        }
      }
  }
  m = uniq(img, m);
  u->vals = img;
  u->nvals = m;
  if (u->mkind == M_WHERE) {
    /* where(c, x, y) over a y that nobody reads afterwards can update y's
    ** dimensions in place (decided after scheduling): it takes y's value
    ** list when its own values are among y's */
    const view *y = &u->mv[2];
    unit *Y = &g->u[y->unit];
    int ident = Y->cat && (Y->kind == U_MLP || Y->kind == U_HEAD);
    for (int a = 0; a < y->nv && ident; a++) ident = y->ok[a] && !ecmp(y->val[a], Y->vals[a]);
    for (int k = 0; k < m && ident; k++) ident = find(Y->vals, Y->nvals, img[k]) >= 0;
    if (ident) {
      u->vals = raspM_alloc(sizeof(rasp_elem) * (size_t)Y->nvals);
      memcpy(u->vals, Y->vals, sizeof(rasp_elem) * (size_t)Y->nvals);
      u->nvals = Y->nvals;
      u->alias = y->unit;
      raspM_free(img);
    }
  }
  view_identity(g, v, uid);
  return 1;
}

/* An element-wise node (unary, binary, where, map, seqmap): a view when it
** reads one unit, else a numerical sum, a numerical where, a numerical
** comparison or an MLP unit (plan_mlp). */
static int plan_map(gc *g, int id, const rasp_ir_node *nd) {
  view *v = &g->nv[id];
  int src = -1, one = one_unit(g);
  for (int i = 0; i < nd->nin; i++) {
    int uu = unit_of(g, nd->in[i]);
    if (uu == one) continue;
    if (src == -1) src = uu;
    else if (src != uu) src = -2;
  }
  if (src != -2) { /* one source: a view */
    if (src < 0) src = one;
    view_alloc(g, v, src);
    for (int a = 0; a < v->nv; a++) {
      rasp_elem args[3];
      int ok = 1;
      for (int i = 0; i < nd->nin; i++) {
        const view *o = &g->nv[nd->in[i]];
        int k = o->unit == src ? a : 0;
        ok &= o->ok[k];
        args[i] = o->val[k];
      }
      v->ok[a] = (unsigned char)(ok && eval_elem(g, nd, args, &v->val[a]));
    }
    return 1;
  }
  if (plan_sum(g, id, nd)) return 1;
  if (plan_nwhere(g, id, nd)) return 1;
  if (plan_ncmp(g, id, nd)) return 1;
  return plan_mlp(g, id, nd);
}

/* sel_width: the constant n for a non-causal `always` (no head), else a
** width head, its raw values 1/(w + 1) or quantized (qwidth_scale). */
static int plan_width(gc *g, int id, const rasp_ir_node *nd) {
  view *v = &g->nv[id];
  const rasp_ir_node *sn = &g->ir->nodes[nd->in[0]];
  int wlo = 0;
  if (sn->op == RASP_OP_SELECT && sn->aux == RASP_PRED_TRUE) {
    if (!(sn->flags & RASP_CAUSAL)) { /* `length`: the constant n, no head */
      view_alloc(g, v, one_unit(g));
      v->val[0] = (rasp_elem){g->n, 1};
      v->ok[0] = 1;
      return 1;
    }
    wlo = 1; /* causal: i + 1 */
  }
  double qv = qwidth_scale(g, id, wlo);
  rasp_elem *vals = raspM_alloc(sizeof(rasp_elem) * (size_t)(g->n + 1));
  /* raw values: 1/(w + 1), or (quantized) the integer the residual holds,
  ** which falls as w grows: listed from w = n down, ascending */
  for (int w = wlo; w <= g->n; w++)
    vals[w - wlo] = qv > 0 ? (rasp_elem){qwidth_value(qv, g->n + wlo - w), 1} : (rasp_elem){1, w + 1};
  int cnt = uniq(vals, g->n + 1 - wlo);
  int uid = new_head(g, 0, vals, cnt, id, H_WIDTH, nd->in[0], NULL, (rasp_elem){0, 1});
  g->u[uid].qw = qv > 0;
  g->u[uid].qv = qv;
  view_alloc(g, v, uid);
  for (int a = 0; a < cnt; a++) {
    v->val[a] = (rasp_elem){qv > 0 ? g->n - a : vals[a].den - 1, 1};
    v->ok[a] = 1;
  }
  return 1;
}

/* An aggregate that moves an integer as a number (x, x^2) (H_MOVE): where
** its values sv are squared already or many; 1 planned (sv given to the
** head), 0 not (sv still the caller's). */
static int plan_num_move(gc *g, int id, const rasp_ir_node *nd, const view *sv, rasp_elem d0,
                         int mv) {
  /* numerical move of an integer (x, x^2): the selected keys hold one
  ** value (as for the categorical move below), so the mean is it; a
  ** width or mean read here is decoded to (x, x^2) first (need_num) */
  int cnt;
  rasp_elem *img = view_image(sv, &cnt);
  if (!g->u[sv->unit].sq && cnt <= NUMMIN) {
    raspM_free(img);
    return 0;
  }
  img = raspM_realloc(img, sizeof(rasp_elem) * (size_t)(cnt + 1));
  img[cnt++] = d0;
  cnt = uniq(img, cnt);
  int uid = new_head(g, 0, img, cnt, id, H_MOVE, nd->in[0], sv, d0);
  g->u[uid].sq = 1;
  g->u[uid].move = mv;
  view_identity(g, &g->nv[id], uid);
  return 1;
}

/* An aggregate of numbers that averages (H_NUM): the head's values are
** every mean its values img (cnt of them, the view hv's image) can take
** (mean_set), read back as the node's elements. */
static int plan_mean(gc *g, int id, const rasp_ir_node *nd, view hv, raspF_value hf,
                     rasp_elem *img, int cnt) {
  view *v = &g->nv[id];
  int trunc = nd->op == RASP_OP_AGGR_MEAN, allbool = !(hf.kind & ~RASPF_K_BOOL);
  /* numerical: the exact mean.  The interpreter's mean of booleans that
  ** are all True (all False) is True (False), of a mix of booleans and
  ** numbers a number: one number cannot say which, so that is refused */
  if (!trunc && (hf.kind & RASPF_K_BOOL) && (hf.kind & (RASPF_K_INT | RASPF_K_RAT))) {
    raspM_free(img);
    view_free(&hv);
    raspR_setc(g->err, RASP_E_INEXACT, nd->pos, "compile: a mean of values that mix booleans "
               "and numbers (True or 1 depends on which keys are selected) is not supported");
    return 0;
  }
  int mc;
  rasp_elem dnum = nd->c;
  if (dnum.den == RASP_DEN_BOOL) dnum.den = 1;
  /* the head writes dnum where nothing is selected; where a mean of the
  ** same number is another element (default 0 against a mean of False,
  ** False against 0, a symbol against 0) it writes a number no mean
  ** takes instead, one above them all */
  if (!trunc && (nd->c.den == RASP_DEN_SYM || (nd->c.den == RASP_DEN_BOOL) != allbool)) {
    double top = 0;
    for (int a = 0; a < cnt; a++)
      if (is_num(img[a]) && dval(img[a]) > top) top = dval(img[a]);
    dnum = (rasp_elem){(int64_t)floor(top) + 1, 1};
  }
  rasp_elem *means = mean_set(g, img, cnt, dnum, &mc);
  raspM_free(img);
  if (!means) {
    view_free(&hv);
    raspR_set(g->err, nd->pos, "compile: too many possible means for this aggregate");
    return 0;
  }
  int uid = new_head(g, 0, means, mc, id, H_NUM, nd->in[0], &hv, dnum);
  view_alloc(g, v, uid);
  for (int a = 0; a < mc; a++) {
    rasp_elem r = means[a];
    if (ecmp(r, dnum) == 0) r = trunc ? raspI_elem_trunc(nd->c) : nd->c;
    else if (trunc) r = raspI_elem_trunc(r);
    else if (allbool && r.den == 1 && (r.num == 0 || r.num == 1))
      r.den = RASP_DEN_BOOL;
    v->val[a] = r;
    v->ok[a] = 1;
  }
  return 1;
}

/* An aggregate: a numerical move (plan_num_move), a categorical head
** (symbols, booleans, moves) or the exact mean (plan_mean). */
static int plan_aggregate(gc *g, int id, const rasp_ir_node *nd) {
  view *v = &g->nv[id];
  rasp_elem d0 = nd->op == RASP_OP_AGGR_MEAN ? raspI_elem_trunc(nd->c) : nd->c;
  /* an aggregate over an equality select moves one value (its selected
  ** keys are taken to hold one value, so the mean is it), where that is
  ** proven or, by default, assumed (raspF_moves, raspG_opts.moves) */
  int mv = move_fact(g, id);
  int moves = mv == RASPF_MOVE_PROVEN || (mv == RASPF_MOVE_ASSUMED && g->o->moves != RASPG_MOVES_PROVE);
  view sv;
  view_copy(g, &sv, &g->nv[nd->in[1]]);
  if (moves && int_elem(d0) && !forced(g, id) && need_num(g, &sv, nd->in[1]) &&
      plan_num_move(g, id, nd, &sv, d0, mv))
    return 1;
  view_free(&sv);
  view hv;
  view_copy(g, &hv, &g->nv[nd->in[1]]);
  need_cat(g, &hv, nd->in[1]);
  int trunc = nd->op == RASP_OP_AGGR_MEAN;
  rasp_elem dflt = trunc ? raspI_elem_trunc(nd->c) : nd->c;
  /* the values' kinds: numbers are averaged, booleans' means of 0 and 1
     stay booleans, symbols are moved */
  raspF_value hf = view_fact(g, &hv, nd->in[1]);
  int allnum = !(hf.kind & RASPF_K_SYM);
  int cnt;
  rasp_elem *img = view_image(&hv, &cnt);
  if (!allnum || moves) {
    /* categorical: the selected value itself (symbols always: their mean
    ** is an error unless they are one symbol) */
    if (trunc)
      for (int a = 0; a < hv.nv; a++) hv.val[a] = raspI_elem_trunc(hv.val[a]);
    raspM_free(img);
    img = view_image(&hv, &cnt);
    img = raspM_realloc(img, sizeof(rasp_elem) * (size_t)(cnt + 1));
    img[cnt++] = dflt;
    cnt = uniq(img, cnt);
    int uid = new_head(g, 1, img, cnt, id, H_CAT, nd->in[0], &hv, dflt);
    if (allnum) g->u[uid].move = mv;
    view_identity(g, v, uid);
    return 1;
  }
  return plan_mean(g, id, nd, hv, hf, img, cnt);
}

/* Plans node id: a view or a unit for it (g->nv[id]); 0 with err set when
** the compiler cannot. */
static int plan_node(gc *g, int id) {
  const rasp_ir_node *nd = &g->ir->nodes[id];
  view *v = &g->nv[id];
  switch (nd->op) {
  case RASP_OP_INPUT:
    for (int i = 0; i < g->nu; i++)
      if (g->u[i].kind == U_TOK) view_identity(g, v, i);
    return 1;
  case RASP_OP_INDICES: view_identity(g, v, idx_unit(g)); return 1;
  case RASP_OP_FULL:
    view_alloc(g, v, one_unit(g));
    v->val[0] = nd->c;
    v->ok[0] = 1;
    return 1;
  case RASP_OP_SELECT: return plan_select(g, id, nd);
  case RASP_OP_SEL_AND:
  case RASP_OP_SEL_OR:
  case RASP_OP_SEL_NOT: return 1;
  case RASP_OP_UNARY:
  case RASP_OP_BINARY:
  case RASP_OP_WHERE:
  case RASP_OP_MAP:
  case RASP_OP_SEQMAP: return plan_map(g, id, nd);
  case RASP_OP_SEL_WIDTH: return plan_width(g, id, nd);
  case RASP_OP_AGGREGATE:
  case RASP_OP_AGGR_MEAN: return plan_aggregate(g, id, nd);
  case RASP_OP_AGGR_MAX:
  case RASP_OP_AGGR_MIN:
  default:
    raspR_set(g->err, nd->pos, "compile: '%s' is not supported by the compiler",
              raspI_op_name(nd->op));
    return 0;
  }
}

/* A static head (raspF_static: its value reads no token, e.g. sel_width of
** a causal `always` = i + 1, or an aggregate of the indices over an order
** select) needs no attention: its value at each position is a view of the
** index unit, with the table taken from one run of the evaluator (any input
** gives the same values).  Returns 1 with g->nv[id] set, 0 to plan the node
** as usual (not a head, or the evaluator failed on the input tried). */
static int static_view(gc *g, int id, rasp_eval **ev, int *state) {
  int op = g->ir->nodes[id].op;
  if (op != RASP_OP_SEL_WIDTH && op != RASP_OP_AGGREGATE && op != RASP_OP_AGGR_MEAN) return 0;
  if (*state == 0) {
    *state = -1;
    if (g->o->ninput < 1 || g->n < 1) return 0;
    *ev = raspE_new(g->ir);
    if (!*ev) return 0;
    raspE_set_keep_intermediates(*ev, 1);
    int64_t *tok = raspM_alloc(sizeof(int64_t) * (size_t)g->n);
    for (int i = 0; i < g->n; i++) tok[i] = g->o->input_ids[0];
    rasp_error e = {0};
    if (raspE_run(*ev, 1, tok, &e)) *state = 1;
    raspM_free(tok);
  }
  if (*state != 1) return 0;
  const rasp_elem *val = raspE_value(*ev, id, 0);
  if (!val) return 0;
  view *v = &g->nv[id];
  view_alloc(g, v, idx_unit(g));
  for (int a = 0; a < v->nv; a++) {
    v->val[a] = val[a];
    v->ok[a] = 1;
  }
  return 1;
}

/* ---- schedule ----------------------------------------------------------- */

static void unit_sources(const unit *u, int *src, int *ns) {
  *ns = 0;
  if (u->kind == U_HEAD) {
    for (int i = 0; i < u->nc; i++) {
      src[(*ns)++] = u->c[i].ku;
      src[(*ns)++] = u->c[i].qu;
    }
    if (u->hmode != H_WIDTH) src[(*ns)++] = u->hv.unit;
  } else if (u->kind == U_MLP) {
    for (int i = 0; i < u->nmv; i++) src[(*ns)++] = u->mv[i].unit;
  }
}

static void schedule(gc *g) {
  int src[2 * MAXCOMPS + 4], ns;
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    unit_sources(u, src, &ns);
    int r = 0;
    for (int k = 0; k < ns; k++)
      if (g->u[src[k]].ready > r) r = g->u[src[k]].ready;
    if (u->kind == U_HEAD) u->ready = r % 2 ? r + 2 : r + 1;
    else if (u->kind == U_MLP) u->ready = r % 2 ? r + 1 : r + 2;
    else u->ready = 0;
    u->layer = (u->ready - 1) / 2;
  }
}

static void mark_used(gc *g, int root) {
  int src[2 * MAXCOMPS + 4], ns;
  g->u[root].used = 1;
  for (int i = g->nu - 1; i >= 0; i--)
    if (g->u[i].used) {
      unit_sources(&g->u[i], src, &ns);
      for (int k = 0; k < ns; k++) g->u[src[k]].used = 1;
    }
}

/* An in-place where(c, x, y) is kept when nothing reads y after it: every
** other reader of y runs at or before its MLP sublayer (heads of the same
** layer and MLP units of the same sublayer read the residual before it
** writes), y is not the readout and no other unit updates y. */
static void accept_aliases(gc *g, int readout) {
  int src[2 * MAXCOMPS + 4], ns;
  unsigned char *taken = raspM_alloc((size_t)g->nu);
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (u->alias < 0) continue;
    int y = u->alias, ok = u->used && g->u[y].used && y != readout && !taken[y];
    for (int r = 0; r < g->nu && ok; r++) {
      if (r == i || !g->u[r].used || g->u[r].ready <= u->ready) continue;
      unit_sources(&g->u[r], src, &ns);
      for (int k = 0; k < ns; k++)
        if (src[k] == y) ok = 0;
    }
    if (ok) taken[y] = 1;
    else u->alias = -1;
  }
  raspM_free(taken);
}

/* ---- weights ------------------------------------------------------------ */

typedef struct wctx {
  gc *g;
  int d, dmlp, dh;
  float *w_in, *b_in, *w_out; /* this layer's MLP, NULL when counting */
  int h;                      /* next hidden unit */
} wctx;

static int udim(gc *g, int uid) { return g->u[uid].dim; }

/* Starts a hidden unit gated off at BOS by -L. */
static int hid(wctx *w, double bias, double L) {
  int h = w->h++;
  if (w->w_in) {
    w->b_in[h] = (float)bias;
    w->w_in[(size_t)0 * w->dmlp + h] -= (float)L;
  }
  return h;
}
static void win(wctx *w, int dim, int h, double x) {
  if (w->w_in) w->w_in[(size_t)dim * w->dmlp + h] += (float)x;
}
static void wout(wctx *w, int h, int dim, double x) {
  if (w->w_in) w->w_out[(size_t)h * w->d + dim] += (float)x;
}

/* Hidden unit h adds coef times value e of decode unit u: to e's one-hot
** dimension, or to (x, x^2) of a numerical decode. */
static void dec_out(wctx *w, const unit *u, int h, rasp_elem e, double coef) {
  if (u->cat) {
    wout(w, h, u->dim + find(u->vals, u->nvals, e), coef);
    return;
  }
  double x = dval(e);
  wout(w, h, u->dim, coef * x);
  wout(w, h, u->dim + 1, coef * x * x);
}

/* The steps that read a quantized width s (raw values integers, ascending
** in index, falling as w grows) through view v: from the value at the top
** raw value down, one step per pair of adjacent raw values r < r' whose
** view values differ, ReLU(r' - x) - ReLU(r' - 1 - x): 1 where x <= r, 0
** where x >= r', exact on integers.  A unit is on only below its r', by at
** most r' - x, so the terms an output adds stay within the integers
** float32 holds (active_od's per-combination sums).  Returns the index of
** the top value (the base), and per step calls emit(h1, h2, a, a'): the
** step adds value a minus value a'. */
typedef void qw_emit(wctx *w, void *ctx, int h1, int h2, int a, int a2);
static int qw_steps(wctx *w, const view *v, qw_emit *emit, void *ctx) {
  gc *g = w->g;
  const unit *s = &g->u[v->unit];
  int top = -1;
  for (int a = v->nv - 1; a >= 0 && top < 0; a--)
    if (v->ok[a]) top = a;
  for (int a2 = top, a = top - 1; a >= 0; a--) {
    if (!v->ok[a]) continue;
    if (ecmp(v->val[a], v->val[a2])) {
      double r2 = dval(s->vals[a2]);
      /* at BOS x is 0 (undone) or its BOS value, above every r': off */
      int h1 = hid(w, r2, r2 + 16), h2 = hid(w, r2 - 1, r2 + 16);
      win(w, s->dim, h1, -1);
      win(w, s->dim, h2, -1);
      emit(w, ctx, h1, h2, a, a2);
    }
    a2 = a;
  }
  return top;
}

static void dec_step(wctx *w, void *ctx, int h1, int h2, int a, int a2) {
  unit *u = ctx;
  const view *v = &u->mv[0];
  dec_out(w, u, h1, v->val[a], 1);
  dec_out(w, u, h2, v->val[a], -1);
  dec_out(w, u, h1, v->val[a2], -1);
  dec_out(w, u, h2, v->val[a2], 1);
}

static void mlp_decode(wctx *w, unit *u) {
  gc *g = w->g;
  const view *v = &u->mv[0];
  const unit *s = &g->u[v->unit];
  if (s->qw) {
    int h = hid(w, 0, 0);
    win(w, 1, h, 1);
    int top = qw_steps(w, v, dec_step, u);
    if (top >= 0) dec_out(w, u, h, v->val[top], 1);
    return;
  }
  if (s->cat) {
    for (int k = 0; k < u->nvals; k++) {
      int h = hid(w, 0, 10);
      for (int a = 0; a < v->nv; a++)
        if (v->ok[a] && ecmp(v->val[a], u->vals[k]) == 0) win(w, s->dim + a, h, 1);
      wout(w, h, u->dim + k, 1);
    }
    return;
  }
  /* numerical source: a base value and a step wherever the value changes */
  double maxabs = 1;
  for (int a = 0; a < s->nvals; a++)
    if (fabs(dval(s->vals[a])) > maxabs) maxabs = fabs(dval(s->vals[a]));
  int prev = -1;
  for (int a = 0; a < v->nv; a++) {
    if (!v->ok[a]) continue;
    if (prev < 0) {
      int h = hid(w, 0, 0);
      win(w, 1, h, 1);
      dec_out(w, u, h, v->val[a], 1);
    } else if (ecmp(v->val[a], v->val[prev])) {
      double lo = dval(s->vals[prev]), hi = dval(s->vals[a]);
      double gap = hi - lo, mid = (lo + hi) / 2, sl = 2 / gap;
      double L = sl * (maxabs + fabs(mid) + gap) + 10;
      double b1 = -sl * (mid - gap / 4), b2 = -sl * (mid + gap / 4);
      if (s->sq) /* integers: ReLU(x - lo) - ReLU(x - lo - 1), exact in float32 */
        sl = 1, b1 = -lo, b2 = -lo - 1, L = maxabs + fabs(lo) + 11;
      int h1 = hid(w, b1, L), h2 = hid(w, b2, L);
      win(w, s->dim, h1, sl);
      win(w, s->dim, h2, sl);
      dec_out(w, u, h1, v->val[a], 1);
      dec_out(w, u, h2, v->val[a], -1);
      dec_out(w, u, h1, v->val[prev], -1);
      dec_out(w, u, h2, v->val[prev], 1);
    }
    prev = a;
  }
}

static void mlp_where(wctx *w, unit *u) {
  gc *g = w->g;
  const view *c = &u->mv[0];
  for (int br = 1; br <= 2; br++) {
    const view *x = &u->mv[br];
    int cnt;
    rasp_elem *img = view_image(x, &cnt);
    for (int k = 0; k < cnt; k++) {
      int h = hid(w, -1, 10);
      for (int a = 0; a < x->nv; a++)
        if (x->ok[a] && ecmp(x->val[a], img[k]) == 0) win(w, udim(g, x->unit) + a, h, 1);
      /* in place: where c holds, add x and take y away */
      int want = u->alias >= 0 ? 1 : br == 1;
      for (int b = 0; b < c->nv; b++)
        if (c->ok[b] && raspI_elem_truth(c->val[b]) == want)
          win(w, udim(g, c->unit) + b, h, 1);
      wout(w, h, u->dim + find(u->vals, u->nvals, img[k]), u->alias >= 0 && br == 2 ? -1 : 1);
    }
    raspM_free(img);
  }
}

/* f(x_a, y_b) as an index into u->vals, or -1 when impossible. */
static int pair_val(gc *g, unit *u, int a, int b) {
  const view *x = &u->mv[0], *y = &u->mv[1];
  rasp_elem args[2] = {x->val[a], y->val[b]}, r;
  if (!x->ok[a] || !y->ok[b] || !eval_elem(g, &g->ir->nodes[u->mnode], args, &r)) return -1;
  return find(u->vals, u->nvals, r);
}

/* Units needed with operand `outer` outside: per outer value, one per
** distinct result other than v0.  Fills tab (nx*ny) when counting. */
static long pair_cost(int nx, int ny, const int *tab, int outer, int v0, int nvals, int *seen) {
  long cost = 1;
  int no = outer ? ny : nx, ni = outer ? nx : ny;
  for (int o = 0; o < no; o++) {
    memset(seen, 0, sizeof(int) * (size_t)nvals);
    for (int i = 0; i < ni; i++) {
      int v = outer ? tab[(size_t)i * ny + o] : tab[(size_t)o * ny + i];
      if (v >= 0 && v != v0 && !seen[v]) {
        seen[v] = 1;
        cost++;
      }
    }
  }
  return cost;
}

static void mlp_pair(wctx *w, unit *u) {
  gc *g = w->g;
  const view *x = &u->mv[0], *y = &u->mv[1];
  int nx = x->nv, ny = y->nv;
  int *tab = raspM_alloc(sizeof(int) * (size_t)nx * (size_t)ny);
  int *cnt = raspM_alloc(sizeof(int) * (size_t)u->nvals);
  for (int a = 0; a < nx; a++)
    for (int b = 0; b < ny; b++) {
      int v = pair_val(g, u, a, b);
      tab[(size_t)a * ny + b] = v;
      if (v >= 0) cnt[v]++;
    }
  int v0 = 0;
  for (int v = 1; v < u->nvals; v++)
    if (cnt[v] > cnt[v0]) v0 = v;
  int outer = pair_cost(nx, ny, tab, 1, v0, u->nvals, cnt) <
              pair_cost(nx, ny, tab, 0, v0, u->nvals, cnt);
  int h0 = hid(w, 0, 0);
  win(w, 1, h0, 1);
  wout(w, h0, u->dim + v0, 1);
  const view *ov = outer ? y : x, *iv = outer ? x : y;
  int no = outer ? ny : nx, ni = outer ? nx : ny;
  for (int o = 0; o < no; o++) {
    if (!ov->ok[o]) continue;
    for (int v = 0; v < u->nvals; v++) {
      if (v == v0) continue;
      int h = -1;
      for (int i = 0; i < ni; i++) {
        int r = outer ? tab[(size_t)i * ny + o] : tab[(size_t)o * ny + i];
        if (r != v) continue;
        if (h < 0) {
          h = hid(w, -1, 10);
          win(w, udim(g, ov->unit) + o, h, 1);
          wout(w, h, u->dim + v, 1);
          wout(w, h, u->dim + v0, -1);
        }
        win(w, udim(g, iv->unit) + i, h, 1);
      }
    }
  }
  raspM_free(tab);
  raspM_free(cnt);
}

/* Adds view v's values (numbers) to dimension out: a categorical source
** through one hidden unit (values shifted to be >= 0, the shift added by
** the ONE unit of the caller: returned), a numerical one through a base and
** a step wherever the value changes (as mlp_decode). */
struct add_ctx {
  const view *v;
  int out;
};
static void add_step(wctx *w, void *ctx, int h1, int h2, int a, int a2) {
  const struct add_ctx *c = ctx;
  double dv = dval(c->v->val[a]) - dval(c->v->val[a2]);
  wout(w, h1, c->out, dv);
  wout(w, h2, c->out, -dv);
}

static double mlp_add_view(wctx *w, const view *v, int out) {
  gc *g = w->g;
  const unit *s = &g->u[v->unit];
  if (s->cat) {
    double lo = 0;
    int first = 1;
    for (int a = 0; a < v->nv; a++)
      if (v->ok[a] && (first || dval(v->val[a]) < lo)) {
        lo = dval(v->val[a]);
        first = 0;
      }
    int h = hid(w, 0, 10);
    for (int a = 0; a < v->nv; a++)
      if (v->ok[a] && dval(v->val[a]) != lo) win(w, s->dim + a, h, dval(v->val[a]) - lo);
    wout(w, h, out, 1);
    return lo;
  }
  lform f;
  double flo, fhi;
  if (s->sq && lf_build(g, v, 0, 0, &f, &flo, &fhi)) {
    /* an affine view of (x, x^2): ReLU(a x + b - lo) + lo */
    int h = hid(w, -flo, fabs(flo) + 10);
    if (w->w_in) lf_write(g, &f, w->w_in, w->dmlp, h, 1);
    wout(w, h, out, 1);
    return flo;
  }
  if (s->qw) {
    struct add_ctx c = {v, out};
    int top = qw_steps(w, v, add_step, &c);
    return top >= 0 ? dval(v->val[top]) : 0;
  }
  double maxabs = 1, base = 0;
  for (int a = 0; a < s->nvals; a++)
    if (fabs(dval(s->vals[a])) > maxabs) maxabs = fabs(dval(s->vals[a]));
  int prev = -1;
  for (int a = 0; a < v->nv; a++) {
    if (!v->ok[a]) continue;
    if (prev < 0) base = dval(v->val[a]);
    else if (dval(v->val[a]) != dval(v->val[prev])) {
      double lo = dval(s->vals[prev]), hi = dval(s->vals[a]);
      double gap = hi - lo, mid = (lo + hi) / 2, sl = 2 / gap;
      double L = sl * (maxabs + fabs(mid) + gap) + 10, dv = dval(v->val[a]) - dval(v->val[prev]);
      int h1 = hid(w, -sl * (mid - gap / 4), L), h2 = hid(w, -sl * (mid + gap / 4), L);
      win(w, s->dim, h1, sl);
      win(w, s->dim, h2, sl);
      wout(w, h1, out, dv);
      wout(w, h2, out, -dv);
    }
    prev = a;
  }
  return base;
}

static void mlp_sum(wctx *w, unit *u) {
  double c = mlp_add_view(w, &u->mv[0], u->dim) + mlp_add_view(w, &u->mv[1], u->dim);
  if (c != 0) {
    int h = hid(w, 0, 0);
    win(w, 1, h, 1);
    wout(w, h, u->dim, c);
  }
}

/* Whether fp32 chooses encodings by the rounding proof (--require-proof):
** the weights then take the forms that keep integers exact where the
** default keeps the size (steep tests, exact erasers, no dimension
** written in the sublayer that erases it) */
static int proof_driven(const gc *g) {
  return g->o->precision == RASPG_FP32 && g->o->require_proof;
}

/* Whether 0/1 tests are written with no hinge on an integer (steep): in
** fp32 with an attention gain of 4 or more, where the heads' leak (below
** e^-128 per key) leaves the moved integers exact at their nonzero values
** (nz_exact) and the tests' inputs off by far less than the 1/8 a steep
** step tolerates; and proof-driven, where the proof then decides.  At
** gain 1 by default the tests keep the form that tolerates 1/2 (and the
** default weights stay as they were). */
static int steep(const gc *g) {
  return proof_driven(g) || (g->o->precision == RASPG_FP32 && g->o->attn_gain >= 4);
}

/* Whether erasers are exact (-ReLU(x) + ReLU(-x), mlp_erase) and a
** dimension is not given to a unit written in the sublayer that erases
** it (alloc_dims): proof-driven fp32, where what an erased unit was off
** by would otherwise stay behind under the next one (residue). */
static int exact_erase(const gc *g) { return proof_driven(g); }

/* where(c, x, y) on numbers: per branch and column (value, square) with
** values in [lo, hi], ReLU(f - lo - M(1 - gate)), M = hi - lo + 1, which
** is f - lo where the gate is 1 and off by a margin of 1 where it is 0; the
** lo (and a constant branch) through one gated unit. */
/* A hidden unit ReLU(k t + f + bias) (no f when f is NULL); off at BOS. */
static int hid_t(wctx *w, const unit *u, double k, const lform *f, double bias) {
  gc *g = w->g;
  double b = bias + k * u->ct_b;
  int h = hid(w, b, fabs(b) + 10);
  win(w, udim(g, u->mv[0].unit), h, k * u->ct_a);
  if (f && w->w_in) lf_write(g, f, w->w_in, w->dmlp, h, 1);
  return h;
}

/* where(t == 0, x, y) / where(t >= 1, x, y) with an integer t, per column
** f in [lo, hi], f' = f - lo, M = hi - lo + 1:
**   f [t == 0] = ReLU(f' - Mt) + ReLU(f' + Mt) - M ReLU(t) - M ReLU(-t)
**                - ReLU(f') + lo (ReLU(t+1) - 2 ReLU(t) + ReLU(t-1))
**   f [t >= 1] = ReLU(f' + M(t-1)) - M ReLU(t-1) + lo (ReLU(t) - ReLU(t-1))
** and the else branch is g - g[test]. */
static void mlp_nwhere_t(wctx *w, unit *u) {
  gc *g = w->g;
  int eq = u->ctest == 1;
  /* the shared units of t */
  int tp = hid_t(w, u, 1, NULL, 0), tm1 = hid_t(w, u, 1, NULL, -1);
  int tn = eq ? hid_t(w, u, -1, NULL, 0) : -1, tp1 = eq ? hid_t(w, u, 1, NULL, 1) : -1;
  double cb[2] = {0, 0}; /* coefficient of the indicator per column */
  double cone[2] = {0, 0};
  for (int br = 1; br <= 2; br++) {
    const view *x = &u->mv[br];
    double sgn = br == 1 ? 1 : -1; /* else: y - y[test] */
    for (int col = 0; col < 2; col++) {
      lform f;
      double lo = 0, hi = 0;
      lf_build(g, x, col, 0, &f, &lo, &hi);
      int out = u->dim + col;
      cb[col] += sgn * lo;
      if (br == 2) cone[col] += lo;
      if (g->u[x->unit].kind == U_ONE || lo == hi) continue;
      double M = hi - lo + 1;
      int fl = hid(w, -lo, fabs(lo) + 10);
      if (w->w_in) lf_write(g, &f, w->w_in, w->dmlp, fl, 1);
      if (eq) {
        int a1 = hid_t(w, u, -M, &f, -lo), a2 = hid_t(w, u, M, &f, -lo);
        wout(w, a1, out, sgn);
        wout(w, a2, out, sgn);
        wout(w, tp, out, -sgn * M);
        wout(w, tn, out, -sgn * M);
        wout(w, fl, out, -sgn);
      } else {
        int a1 = hid_t(w, u, M, &f, -lo - M);
        wout(w, a1, out, sgn);
        wout(w, tm1, out, -sgn * M);
      }
      if (br == 2) wout(w, fl, out, 1); /* + y' */
    }
  }
  for (int col = 0; col < 2; col++) {
    int out = u->dim + col;
    if (eq) {
      wout(w, tp1, out, cb[col]);
      wout(w, tp, out, -2 * cb[col]);
      wout(w, tm1, out, cb[col]);
    } else {
      wout(w, tp, out, cb[col]);
      wout(w, tm1, out, -cb[col]);
    }
  }
  if (cone[0] != 0 || cone[1] != 0) {
    int h = hid(w, 0, 10);
    win(w, 1, h, 1);
    wout(w, h, u->dim, cone[0]);
    wout(w, h, u->dim + 1, cone[1]);
  }
}

static void mlp_nwhere(wctx *w, unit *u) {
  gc *g = w->g;
  if (u->ctest) {
    mlp_nwhere_t(w, u);
    return;
  }
  const view *c = &u->mv[0];
  int cd = udim(g, c->unit);
  for (int br = 1; br <= 2; br++) {
    const view *x = &u->mv[br];
    double konst[2] = {0, 0};
    for (int col = 0; col < 2; col++) {
      lform f;
      double lo = 0, hi = 0;
      lf_build(g, x, col, 0, &f, &lo, &hi);
      if (g->u[x->unit].kind == U_ONE || lo == hi) {
        konst[col] = lo;
        continue;
      }
      double M = hi - lo + 1;
      int h = hid(w, -lo - M, fabs(lo) + M + 10);
      if (w->w_in) lf_write(g, &f, w->w_in, w->dmlp, h, 1);
      for (int b = 0; b < c->nv; b++)
        if (c->ok[b] && raspI_elem_truth(c->val[b]) == (br == 1)) win(w, cd + b, h, M);
      wout(w, h, u->dim + col, 1);
      konst[col] = lo;
    }
    if (konst[0] != 0 || konst[1] != 0) {
      /* steep: ReLU(2 c - 1), not ReLU(c): off by a margin of 1 where c is
      ** 0, so a 0 off by a little (nz_exact) passes nothing on times lo */
      int st = steep(g), h = hid(w, st ? -1 : 0, 10);
      for (int b = 0; b < c->nv; b++)
        if (c->ok[b] && raspI_elem_truth(c->val[b]) == (br == 1)) win(w, cd + b, h, st ? 2 : 1);
      wout(w, h, u->dim, konst[0]);
      wout(w, h, u->dim + 1, konst[1]);
    }
  }
}

/* Adds coef * (form of v) to hidden unit h's input. */
static void win_form(wctx *w, const view *v, int h, double coef) {
  lform f;
  double lo, hi;
  lf_build(w->g, v, 0, 0, &f, &lo, &hi);
  if (w->w_in) lf_write(w->g, &f, w->w_in, w->dmlp, h, coef);
}

static void mlp_ncmp(wctx *w, unit *u) {
  gc *g = w->g;
  int op = g->ir->nodes[u->mnode].aux;
  /* z = s (x - y): s = -1 turns < and <= into > and >= */
  double s = op == RASP_BIN_LT || op == RASP_BIN_LE ? -1 : 1;
  int dt = u->dim + find(u->vals, u->nvals, (rasp_elem){1, RASP_DEN_BOOL});
  int df = u->dim + find(u->vals, u->nvals, (rasp_elem){0, RASP_DEN_BOOL});
  /* steep: on integers z, [z >= t] = ReLU(4 (z - t) + 2) - ReLU(4 (z - t) + 1):
  ** its hinges at t - 1/2 and t - 1/4, no integer z sits on one (4z + 2
  ** and 4z + 1 are never 0), so where z is off by a little (below 2^-27)
  ** every hidden unit is 0 or a nonzero integer, exact (nz_exact's
  ** argument), and the 0/1 out is exact; [z == 0] = [z >= 0] - [z >= 1].
  ** Else ReLU bumps (a hidden unit on its hinge at x = y passes the
  ** error of a 0 on) */
  double b[4], c[4], sl = steep(g) ? 4 : 1;
  int nh;
  if (sl == 1 && (op == RASP_BIN_EQ || op == RASP_BIN_NE)) {
    nh = 3;
    b[0] = 1, b[1] = 0, b[2] = -1;
    c[0] = 1, c[1] = -2, c[2] = 1;
  } else if (sl == 1) { /* z >= 1 (>, <) or z >= 0 (>=, <=) */
    nh = 2;
    double t = op == RASP_BIN_GT || op == RASP_BIN_LT ? 0 : 1;
    b[0] = t, b[1] = t - 1;
    c[0] = 1, c[1] = -1;
  } else if (op == RASP_BIN_EQ || op == RASP_BIN_NE) {
    nh = 4;
    b[0] = 2, b[1] = 1, b[2] = -2, b[3] = -3;
    c[0] = 1, c[1] = -1, c[2] = -1, c[3] = 1;
  } else { /* z >= 1 (>, <) or z >= 0 (>=, <=) */
    nh = 2;
    double t = op == RASP_BIN_GT || op == RASP_BIN_LT ? 1 : 0;
    b[0] = 2 - 4 * t, b[1] = 1 - 4 * t;
    c[0] = 1, c[1] = -1;
  }
  /* the indicator goes to True (False for !=), its complement to the other */
  int pos = op == RASP_BIN_NE ? df : dt, neg = op == RASP_BIN_NE ? dt : df;
  for (int k = 0; k < nh; k++) {
    int h = hid(w, b[k], 10);
    win_form(w, &u->mv[0], h, sl * s);
    win_form(w, &u->mv[1], h, -sl * s);
    wout(w, h, pos, c[k]);
    wout(w, h, neg, -c[k]);
  }
  int h = hid(w, 0, 10);
  win(w, 1, h, 1);
  wout(w, h, neg, 1);
}

static void mlp_unit(wctx *w, unit *u) {
  switch (u->mkind) {
  case M_NCMP: mlp_ncmp(w, u); break;
  case M_NWHERE: mlp_nwhere(w, u); break;
  case M_SUM: mlp_sum(w, u); break;
  case M_DECODE: mlp_decode(w, u); break;
  case M_WHERE: mlp_where(w, u); break;
  default: mlp_pair(w, u); break;
  }
}

/* Columns of one component: key values grouped by equal table rows, or
** query values by equal columns, whichever gives fewer.  Writes them when
** wq is not NULL. */
static int comp_cols(gc *g, const comp *c, int by_key, float *wq, float *wk, int d, int dh,
                     int col0, double scale) {
  int nk = g->u[c->ku].nvals, nq = g->u[c->qu].nvals;
  int nouter = by_key ? nk : nq, ninner = by_key ? nq : nk;
  int *grp = raspM_alloc(sizeof(int) * (size_t)(nouter ? nouter : 1));
  int ncol = 0;
#define T(o, i) (by_key ? c->t[(size_t)(o) * nq + (i)] : c->t[(size_t)(i) * nq + (o)])
  for (int o = 0; o < nouter; o++) {
    grp[o] = -1;
    int zero = 1;
    for (int i = 0; i < ninner && zero; i++) zero = !T(o, i);
    if (zero) continue;
    for (int p = 0; p < o && grp[o] < 0; p++) {
      if (grp[p] < 0) continue;
      int same = 1;
      for (int i = 0; i < ninner && same; i++) same = T(o, i) == T(p, i);
      if (same) grp[o] = grp[p];
    }
    if (grp[o] < 0) {
      grp[o] = ncol++;
      if (wq)
        for (int i = 0; i < ninner; i++)
          if (T(o, i)) {
            int col = col0 + grp[o];
            if (by_key) wq[(size_t)(udim(g, c->qu) + i) * dh + col] = (float)scale;
            else wk[(size_t)(udim(g, c->ku) + i) * dh + col] = 1;
          }
    }
    if (wq) {
      int col = col0 + grp[o];
      if (by_key) wk[(size_t)(udim(g, c->ku) + o) * dh + col] = 1;
      else wq[(size_t)(udim(g, c->qu) + o) * dh + col] = (float)scale;
    }
  }
#undef T
  (void)d;
  raspM_free(grp);
  return ncol;
}

static int comp_by_key(gc *g, const comp *c) {
  return comp_cols(g, c, 1, NULL, NULL, 0, 0, 0, 0) <= comp_cols(g, c, 0, NULL, NULL, 0, 0, 0, 0);
}

static int head_cols(gc *g, unit *u) {
  int cols = 1; /* BOS */
  for (int i = 0; i < u->nc; i++)
    cols += u->c[i].numeq ? 3 : u->c[i].numq ? 2 : comp_cols(g, &u->c[i], comp_by_key(g, &u->c[i]), NULL, NULL, 0, 0, 0, 0);
  return cols;
}

static int vcols(const unit *u) { return u->hmode == H_CAT ? u->nvals : u->hmode == H_MOVE ? 2 : 1; }

/* The factor every score is written with: beta sqrt(d_head) undoes the
** architecture's 1/sqrt(d_head), rounded up to a power of two, so that
** integer features times it stay exact in float32 and the scores of
** numerical equalities are exact on exact inputs (and a power-of-two gain
** F scales it, and every attn.w_q entry, by exactly F). */
static double score_scale(double beta, int dh) {
  return exp2(ceil(log2(beta * sqrt((double)dh))));
}

static void write_head(gc *g, unit *u, float *wq, float *wk, float *wv, float *wo, int d,
                       int dh, double scale) {
  int col = 0;
  if (u->nc == 1 && u->c[0].numq) {
    /* score 2 q y - y^2 = q^2 - (q - y)^2: q^2 at the matching keys, at
    ** most q^2 - 1 elsewhere; BOS scores -1 (never wins: q^2 >= 0) */
    const comp *c = &u->c[0];
    int qd = udim(g, c->qu), kd = udim(g, c->ku);
    wq[(size_t)qd * dh + 0] = (float)(2 * c->qa * scale);
    wq[(size_t)1 * dh + 0] = (float)(2 * c->qb * scale);
    wq[(size_t)1 * dh + 1] = (float)scale;
    for (int a = 0; a < g->u[c->ku].nvals; a++) {
      wk[(size_t)(kd + a) * dh + 0] = (float)c->ky[a];
      wk[(size_t)(kd + a) * dh + 1] = (float)(-c->ky[a] * c->ky[a]);
    }
    wk[(size_t)0 * dh + 2] = 1;
    wq[(size_t)1 * dh + 2] = (float)(-1 * scale);
    wq[(size_t)0 * dh + 2] = (float)(10 * scale);
    u->c[0].col0 = 0;
    u->c[0].col1 = 2;
    u->bcol = 2;
  } else {
    double m = 0;
    for (int i = 0; i < u->nc; i++) {
      comp *c = &u->c[i];
      c->col0 = col;
      if (!c->numeq) {
        col += comp_cols(g, c, comp_by_key(g, c), wq, wk, d, dh, col, scale);
        c->col1 = col;
        m++;
        continue;
      }
      /* -(k - q)^2 = 2kq - k^2 - q^2 in three columns (k, q centred by
      ** sh): 0 where they are equal, at most -1 elsewhere, 0 at BOS */
      lform f;
      double lo, hi;
      lf_build(g, &c->qv, 0, c->sh, &f, &lo, &hi);
      lf_write(g, &f, wq, dh, col, scale);
      lf_build(g, &c->kv, 0, c->sh, &f, &lo, &hi);
      lf_write(g, &f, wk, dh, col, 2);
      col++;
      wq[(size_t)1 * dh + col] += (float)scale;
      lf_build(g, &c->kv, 1, c->sh, &f, &lo, &hi);
      lf_write(g, &f, wk, dh, col, -1);
      col++;
      lf_build(g, &c->qv, 1, c->sh, &f, &lo, &hi);
      lf_write(g, &f, wq, dh, col, -scale);
      wk[(size_t)1 * dh + col] += 1;
      col++;
      c->col1 = col;
    }
    u->bcol = col;
    wk[(size_t)0 * dh + col] = 1;
    wq[(size_t)1 * dh + col] = (float)((u->hmode == H_WIDTH ? m : m - 0.5) * scale);
    wq[(size_t)0 * dh + col] = (float)((m + 10) * scale);
  }
  if (u->hmode == H_WIDTH) {
    wv[0] = u->qw ? (float)u->qv : 1; /* (quantized: b_o adds QW_B, below) */
    wo[u->dim] = 1;
  } else if (u->hmode == H_MOVE) {
    lform f;
    double lo, hi, dv = dval(u->dflt);
    for (int col2 = 0; col2 < 2; col2++) {
      lf_build(g, &u->hv, col2, 0, &f, &lo, &hi);
      lf_write(g, &f, wv, dh, col2, 1);
      wo[(size_t)col2 * d + u->dim + col2] = 1;
    }
    wv[0] = (float)dv;
    wv[1] = (float)(dv * dv);
  } else if (u->hmode == H_NUM) {
    const view *v = &u->hv;
    for (int a = 0; a < v->nv; a++)
      if (v->ok[a]) wv[(size_t)(udim(g, v->unit) + a) * dh] += (float)dval(v->val[a]);
    wv[0] = (float)dval(u->dflt);
    wo[u->dim] = 1;
  } else {
    const view *v = &u->hv;
    for (int a = 0; a < v->nv; a++)
      if (v->ok[a])
        wv[(size_t)(udim(g, v->unit) + a) * dh + find(u->vals, u->nvals, v->val[a])] += 1;
    wv[find(u->vals, u->nvals, u->dflt)] = 1;
    for (int k = 0; k < u->nvals; k++) wo[(size_t)k * d + u->dim + k] = 1;
  }
}

/* ---- liveness and dimensions ------------------------------------------ */

static int usize(const unit *u) { return u->cat ? u->nvals : u->sq ? 2 : 1; }

/* last: the last sublayer reading each unit (the readout: never dead); an
** in-place chain counts as its first unit, which owns the dimensions. */
static void liveness(gc *g, int readout) {
  int src[2 * MAXCOMPS + 4], ns;
  for (int i = 0; i < g->nu; i++) g->u[i].last = g->u[i].ready;
  for (int r = 0; r < g->nu; r++) {
    if (!g->u[r].used) continue;
    unit_sources(&g->u[r], src, &ns);
    for (int k = 0; k < ns; k++)
      if (g->u[src[k]].last < g->u[r].ready) g->u[src[k]].last = g->u[r].ready;
  }
  g->u[readout].last = 1 << 28;
  for (int i = g->nu - 1; i >= 0; i--) { /* aliases come after their operand */
    unit *u = &g->u[i];
    if (u->used && u->alias >= 0 && u->last > g->u[u->alias].last) g->u[u->alias].last = u->last;
  }
}

/* Gives every used unit its dimensions, first fit in order of writing:
** policy 0 never erases, 1 erases dead numerical units, 2 every dead head
** or MLP unit (an eraser costs one hidden unit per dimension).  Returns
** d_model. */
static int alloc_dims(gc *g, int policy) {
  int cap = 64, top = 2;
  int *free_at = raspM_alloc(sizeof(int) * (size_t)cap);
  /* whether the unit that frees dimension j is numerical: its error would
  ** meet a unit written in the sublayer that erases it (exact_erase) */
  unsigned char *free_num = raspM_alloc((size_t)cap);
  int *order = raspM_alloc(sizeof(int) * (size_t)(g->nu + 1)), no = 0;
  for (int i = 0; i < g->nu; i++)
    if (g->u[i].used) order[no++] = i;
  for (int a = 1; a < no; a++) /* stable insertion sort by sublayer */
    for (int b = a; b > 0 && g->u[order[b - 1]].ready > g->u[order[b]].ready; b--) {
      int t = order[b];
      order[b] = order[b - 1];
      order[b - 1] = t;
    }
  for (int k = 0; k < no; k++) {
    unit *u = &g->u[order[k]];
    u->erase = 0;
    if (u->kind == U_ONE) {
      u->dim = 1;
      continue;
    }
    if (u->alias >= 0) {
      u->dim = g->u[u->alias].dim;
      continue;
    }
    int sz = usize(u), end = 1 << 29;
    if (u->kind >= U_HEAD && u->last < (1 << 28) &&
        (policy == 2 || (policy == 1 && !u->cat))) {
      u->erase = u->last % 2 ? u->last + 1 : u->last;
      end = u->erase;
    }
    int p = 2;
    for (;; p++) {
      int fits = 1;
      for (int j = p; j < p + sz && fits; j++)
        fits = j >= top || free_at[j] < u->ready ||
               (free_at[j] == u->ready && (!exact_erase(g) || !free_num[j]));
      if (fits) break;
    }
    if (p + sz > top) {
      RASP_GROW(free_at, cap, p + sz + 1);
      free_num = raspM_realloc(free_num, (size_t)cap);
      for (int j = top; j < p + sz; j++) free_at[j] = 0, free_num[j] = 0;
      top = p + sz;
    }
    for (int j = p; j < p + sz; j++) free_at[j] = end, free_num[j] = !u->cat;
    u->dim = p;
  }
  raspM_free(free_at);
  raspM_free(free_num);
  raspM_free(order);
  return top;
}

/* The eraser of unit u: minus its value.  By default one hidden unit per
** dimension, ReLU(x - lo) + lo (lo, the dimension's smallest value,
** through ONE).  Exact erasers (exact_erase): a numerical dimension x gets
** ReLU(x) and ReLU(-x), written back as -ReLU(x) + ReLU(-x) = -x: each
** hidden unit reads one nonzero term and one of them is 0, so in float32
** the MLP outputs exactly -x and the residual holds exactly 0 afterwards
** (what x was off by does not stay behind to meet the unit written there
** next, residue).  A one-hot dimension gets ReLU(x) either way. */
static void mlp_erase(wctx *w, unit *u) {
  int ncol = u->cat ? u->nvals : u->sq ? 2 : 1, ex = exact_erase(w->g);
  for (int col = 0; col < ncol; col++) {
    double lo = 0;
    for (int a = 0; a < u->nvals && !u->cat && !ex; a++) {
      double x = dval(u->vals[a]), v = col ? x * x : x;
      if (!a || v < lo) lo = v;
    }
    int h = hid(w, u->cat ? 0 : -lo, fabs(lo) + 10); /* (-0 for a numerical 0: the bytes as before) */
    win(w, u->dim + col, h, 1);
    wout(w, h, u->dim + col, -1);
    if (!u->cat && ex) {
      h = hid(w, 0, 10);
      win(w, u->dim + col, h, -1);
      wout(w, h, u->dim + col, 1);
    } else if (lo != 0) {
      h = hid(w, 0, 10);
      win(w, 1, h, 1);
      wout(w, h, u->dim + col, -lo);
    }
  }
}

/* Hidden units of layer l's MLP: its units and the erasers due there. */
static int layer_width(gc *g, int l, int d, int dh, int heads) {
  wctx w = {g, d, 0, dh, NULL, NULL, NULL, heads ? 1 : 0};
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (!u->used) continue;
    if (u->kind == U_MLP && u->layer == l) mlp_unit(&w, u);
    if (u->erase && u->erase / 2 - 1 == l) mlp_erase(&w, u);
  }
  return w.h;
}

/* Heads per layer (out->heads, sized with out->mlp_width) and the shape
** they give cfg: n_layers, n_heads (the most in a layer) and d_head (the
** widest head's query/key or value columns); each used head's cols. */
static void size_heads(gc *g, raspG_model *out, rasp_model_config *cfg) {
  int nl = 0;
  for (int i = 0; i < g->nu; i++)
    if (g->u[i].used && g->u[i].kind >= U_HEAD && g->u[i].layer + 1 > nl)
      nl = g->u[i].layer + 1;
  out->heads = raspM_alloc(sizeof(int) * (size_t)(nl + 1));
  out->mlp_width = raspM_alloc(sizeof(int) * (size_t)(nl + 1));
  int maxh = 1, dh = 1;
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (!u->used || u->kind != U_HEAD) continue;
    out->heads[u->layer]++;
    u->cols = head_cols(g, u);
    if (u->cols > dh) dh = u->cols;
    if (vcols(u) > dh) dh = vcols(u);
  }
  for (int l = 0; l < nl; l++)
    if (out->heads[l] > maxh) maxh = out->heads[l];
  cfg->n_layers = nl;
  cfg->n_heads = maxh;
  cfg->d_head = dh;
}

/* The token and position embeddings: is-BOS, ONE, and the TOK and IDX
** units where used (a squared TOK as (t, t^2)). */
static void write_embeddings(gc *g, rasp_model *m) {
  int d = m->cfg.d_model;
  float *te = raspN_data(m, "tok_emb"), *pe = raspN_data(m, "pos_emb");
  te[(size_t)m->cfg.bos_token * d + 0] = 1;
  for (int t = 1; t <= g->o->nvocab; t++) {
    te[(size_t)t * d + 1] = 1;
    int k = find(g->u[0].vals, g->u[0].nvals, (rasp_elem){t, 1});
    if (g->u[0].used && k >= 0 && g->u[0].sq) {
      te[(size_t)t * d + g->u[0].dim] = (float)t;
      te[(size_t)t * d + g->u[0].dim + 1] = (float)((double)t * t);
    } else if (g->u[0].used && k >= 0)
      te[(size_t)t * d + g->u[0].dim + k] = 1;
  }
  if (g->u[1].used)
    for (int p = 1; p <= g->n; p++) pe[(size_t)p * d + g->u[1].dim + p - 1] = 1;
}

/* Tensor s of layer l ("attn.w_q", ...). */
static float *layer_data(rasp_model *m, int l, const char *s) {
  char name[64];
  snprintf(name, sizeof name, "layers.%d.%s", l, s);
  return raspN_data(m, name);
}

/* Hidden unit 0 of a layer with heads: ReLU(is_bos), which takes back what
** the layer's heads wrote at BOS (their defaults). */
static void undo_bos(wctx *w, int l) {
  gc *g = w->g;
  int h = w->h++;
  w->w_in[h] = 1;
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (!u->used || u->kind != U_HEAD || u->layer != l) continue;
    if (u->hmode == H_CAT) wout(w, h, u->dim + find(u->vals, u->nvals, u->dflt), -1);
    else if (u->hmode == H_MOVE) {
      wout(w, h, u->dim, -dval(u->dflt));
      wout(w, h, u->dim + 1, -dval(u->dflt) * dval(u->dflt));
    }
    else wout(w, h, u->dim, u->hmode == H_WIDTH ? -qwidth_bos(u) : -dval(u->dflt));
  }
}

/* At BOS layer l's heads have written their BOS values (the undo comes in
** this MLP): every other hidden unit is kept off there by a large enough
** -L * is_bos, whatever it reads. */
static void off_at_bos(wctx *w, int l) {
  gc *g = w->g;
  int d = w->d, dmlp = w->dmlp;
  double *bv = raspM_alloc(sizeof(double) * (size_t)d);
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (!u->used || u->kind != U_HEAD || u->layer != l) continue;
    double dv = dval(u->dflt);
    if (u->hmode == H_CAT) bv[u->dim + find(u->vals, u->nvals, u->dflt)] = 1;
    else if (u->hmode == H_WIDTH) bv[u->dim] = qwidth_bos(u);
    else if (u->hmode == H_MOVE) bv[u->dim] = dv, bv[u->dim + 1] = dv * dv;
    else bv[u->dim] = dv;
  }
  for (int h = 1; h < w->h; h++) {
    double pre = (double)w->b_in[h] + w->w_in[h];
    for (int r = 2; r < d; r++)
      if (bv[r] != 0) pre += bv[r] * w->w_in[(size_t)r * dmlp + h];
    if (pre > -1) w->w_in[h] -= (float)(pre + 10);
  }
  raspM_free(bv);
}

/* Layer l: its heads (each unit's hslot), then its MLP: the BOS undo, its
** MLP units and the erasers due there (their hidden units [h0, h1) and
** [e0, e1)), every hidden unit off at BOS. */
static void write_layer(gc *g, raspG_model *out, int l) {
  rasp_model *m = &out->model;
  int d = m->cfg.d_model, dh = m->cfg.d_head, hh = 0;
  float *wq = layer_data(m, l, "attn.w_q"), *wk = layer_data(m, l, "attn.w_k"),
        *wv = layer_data(m, l, "attn.w_v"), *wo = layer_data(m, l, "attn.w_o"),
        *bo = layer_data(m, l, "attn.b_o");
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (!u->used || u->kind != U_HEAD || u->layer != l) continue;
    size_t off = (size_t)hh * d * dh;
    write_head(g, u, wq + off, wk + off, wv + off, wo + (size_t)hh * dh * d, d, dh,
               out->score_scale * head_gain(g, u));
    if (u->qw) bo[u->dim] = (float)QW_B;
    u->hslot = hh++;
  }
  wctx w = {g, d, m->cfg.d_mlp, dh, layer_data(m, l, "mlp.w_in"), layer_data(m, l, "mlp.b_in"),
            layer_data(m, l, "mlp.w_out"), 0};
  if (hh) undo_bos(&w, l);
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (!u->used) continue;
    if (u->kind == U_MLP && u->layer == l) {
      u->h0 = w.h;
      mlp_unit(&w, u);
      u->h1 = w.h;
    }
    if (u->erase && u->erase / 2 - 1 == l) {
      u->e0 = w.h;
      mlp_erase(&w, u);
      u->e1 = w.h;
    }
  }
  if (hh) off_at_bos(&w, l);
}

/* The readout: the output unit's one-hot times the logit scale, or for a
** number (quad) logits quadratic in it. */
static void write_readout(gc *g, raspG_model *out, const view *ov, int quad) {
  float *un = raspN_data(&out->model, "unembed");
  int no = out->model.cfg.n_out;
  if (!quad) {
    for (int a = 0; a < ov->nv; a++)
      if (ov->ok[a])
        un[(size_t)(udim(g, ov->unit) + a) * no + find(out->out_vals, out->n_out, ov->val[a])] =
            (float)out->logit_scale;
    return;
  }
  /* -X ((x - sh) - (v - sh))^2 = X (2 (v-sh)(x-sh) - (x-sh)^2 - (v-sh)^2):
  ** 0 for the right value, at most -X for every other */
  double sh = floor((dval(out->out_vals[0]) + dval(out->out_vals[out->n_out - 1])) / 2);
  double X = out->logit_scale, lo, hi;
  lform f0, f1;
  lf_build(g, ov, 0, sh, &f0, &lo, &hi);
  lf_build(g, ov, 1, sh, &f1, &lo, &hi);
  /* proof-driven: without the -X (x - sh)^2 that every logit shares
  ** (no logit difference moves), so the readout reads no x^2, whose
  ** error a move over ties makes large at |V| = 1000 (its sums stay
  ** exact on the grain X, a power of two: below) */
  int no_sq = proof_driven(g);
  for (int j = 0; j < out->n_out; j++) {
    double v = dval(out->out_vals[j]) - sh;
    lf_write(g, &f0, un, no, j, 2 * v * X);
    if (!no_sq) lf_write(g, &f1, un, no, j, -X);
    un[(size_t)1 * no + j] += (float)(-v * v * X);
  }
}

/* ---- margins and precision ----------------------------------------------
** What the weights are proven to do on the value sets (doc/compiler.md,
** "Margins and precision").  Every unit's possible values are known, so
** each head and each MLP hidden unit is evaluated, in real arithmetic on the
** float32 weights as written, on every value its inputs can take:
**   head: per component, the score of every (key value, query value) pair
**     over its columns; the margin is the smallest gap between a selected
**     key and any key that is not selected, BOS included (an aggregate's
**     selected keys must beat BOS, and BOS every unselected key; sel_width's
**     BOS is selected), in logits (after the architecture's 1/sqrt(d_head));
**   MLP hidden unit: its pre-activation z = b + sum of each source unit's
**     contribution, over every combination of source values (the product of
**     the distinct contributions, the last source by binary search); the
**     margin is the smallest nonzero |z|.  z = 0 exactly (a unit on its
**     hinge, as ReLU(x_a + c - 1) with one of them on) is allowed: there the
**     output is exact while the input is;
**   readout: the right logit's lead over every other, per readout value.
** The rounding a unit must absorb at precision p (unit roundoff u: 2^-24,
** 2^-11, 2^-8) is bounded per operation, with its inputs at their values
** up to a relative error kappa u: 0 for what is computed exactly (embedded
** integers the format holds; an MLP unit whose inputs are exact, whose
** weights are integers and whose sums stay below 2^bits, so that every
** partial sum is an integer the format holds), 1 for another MLP unit's
** output (its one rounding), 4 for sel_width's 1/(w+1) (exp, sum, quotient,
** store) and n/2 + 4 for other heads (their weighted sum of up to n equal
** terms, accumulated in float32, adds up to n/2 roundings).  A dot product
** with terms t_j then moves by at most sum |t_j| kappa_j u + what rounding
** the weights to p moves it by + u |result| + (k + 1) 2^-24 sum |t_j|
** (float32 accumulation; nothing where it is exact), a score by its query
** and key columns' errors times the other's size, plus one rounding of the
** score (none when exact) and one of its scaling (the same for equal
** scores).  Proven at p: an MLP hidden unit when twice its bound is below
** its margin; a head when, with every score moved by its bound, the
** selected keys still win, the weight leaking past them (n e^-gap per key)
** times the range of the values moved stays below an eighth of the gap
** between those values (1 for one-hot and integers), and an averaging
** head's selected weights, unequal by e^(spread), move its mean by no more
** than that either; in fp16 no feature, score or value may exceed 65504.
** Whoever reads a head (an MLP unit, a query or key, the readout) adds the
** head's proven leak times the spread of what it reads over the head's
** values (leak_err): negligible at gain 1, the leak a smaller
** --attn-gain buys.  This is a proof per sublayer (its inputs within
** their kappa of their values; what passes through an MLP's linear pieces
** or a head's values is not carried on), not a bound composed over the
** depth: that is what --check
** --precision measures.  In fp16 and bf16 a unit that is not proven makes
** its numerical nodes (and its sources') categorical and the compile runs
** again, or is refused when nothing is left to change.
**
** fp32 adds to each unit an absolute error ae per dimension (x and x^2)
** and charges what the rules above leave out: an MLP unit's value moves by
** what its hidden units' errors move them by (per combination of source
** values, only the units at or above their hinge: active_od), a head's by
** the weight leaking past its selected keys and by its values' own errors,
** and a unit written where an erased one was (or in place) by what that
** one left (residue); an MLP unit whose hidden values are not integers
** also by its output sum's roundings (u times a partial sum per
** addition), and a head's leak is at least expf's subnormal ulp per key.
** Integers off by a little are summed by dev_grow's
** argument, not charged a rounding at the size of the sum; a relative
** error of an integer unit is carried as an absolute one (fold_kappa);
** and a head that selects one key (head_unique) is charged the leak alone,
** not n/2 roundings.  A unit whose bound is below 2^-24 times its
** smallest nonzero value is exact at its nonzero values (nz_exact): its
** readers charge its error per value, only on the dimensions that value
** leaves at 0 (aerr_val), and an MLP's output only what its hidden units
** carry at the source values where they can be on (a big-M gate whose 0/1
** condition is 0 is off by its margin; at 1 the condition is exact).
** STEM.json records each proven integer unit's
** deviation, and tests/test_compile (test_deviation, test_deviation_task
** on path-star models) checks it against the float32 forward pass.  The count this proves is reported, but the
** encodings stay as chosen by size, and --check measures.
**
** Tighter where the structure allows: a residue is charged per dimension;
** BOS leaks once and the other keys at most n times the worst key's
** weight; an output sum is charged its own dimension's terms; a score's
** product of integers off by a little rounds by its error or half an ulp,
** whichever is less; a term whose exact value is 0 grows a sum's error by
** at most twice its own, only the m nonzero ones can double it
** (dev_grow_z); and per combination of source values (active_od) an MLP
** is affine over the units above their hinges, so the inputs' errors go
** through W_eff = sum of w_in w_out over them (a step's two units and a
** where's branch and its operand cancel), a unit on its hinge is taken at
** slope 0 and 1, and the output sum is charged for the units that are not
** 0 there.
**
** Proof-driven fp32 (require_proof): a model the default weights already
** prove whole is kept; else the compile uses exact erasers, steep tests
** and no dimension written in the sublayer that frees it (proof_driven),
** raises the score scale of every head not proven or whose leak moves its
** value (head_gain, up to 2^4), and only then makes nodes categorical
** (after which the default weights, then the default scale, are tried
** once more with those nodes one-hot: compile_impl).
** RASP_COMPILE_TRACE=1 prints every unit's verdict (=2: its hidden
** units and residue too).  */

static const int prec_bits[3] = {24, 11, 8};
static double prec_u(int p) { return ldexp(1, -prec_bits[p]); }

const char *raspG_precision_name(int p) {
  return p == RASPG_FP16 ? "fp16" : p == RASPG_BF16 ? "bf16" : "fp32";
}

float raspG_round(int p, float x) {
  if (p == RASPG_BF16) {
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    if ((b & 0x7f800000u) == 0x7f800000u) return x; /* inf, NaN */
    b += 0x7fffu + ((b >> 16) & 1u);               /* to nearest, ties to even */
    b &= 0xffff0000u;
    memcpy(&x, &b, sizeof b);
    return x;
  }
  if (p != RASPG_FP16) return x;
  double a = fabs((double)x);
  if (!(a < INFINITY) || a == 0) return x;
  if (a >= 0x1p-14) { /* normal: keep 10 of float32's 23 fraction bits */
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    b += 0xfffu + ((b >> 13) & 1u);
    b &= ~0x1fffu;
    memcpy(&x, &b, sizeof b);
    return fabsf(x) > 65504.0f ? copysignf(INFINITY, x) : x;
  }
  int e;
  frexp(a, &e);       /* a in [2^(e-1), 2^e): 11 bits, quantum 2^(e-11) */
  int q = e - 11 < -24 ? -24 : e - 11; /* subnormals: quantum 2^-24 */
  double r = ldexp(nearbyint(ldexp(a, -q)), q);
  if (r > 65504) r = INFINITY;
  return (float)copysign(r, (double)x);
}

/* The largest power of two of which x is an integer multiple (INFINITY
** for 0): a sum of such multiples is exact in float32 while every
** partial sum stays within 2^24 of them. */
static double pow2_grain(double x) {
  int ex;
  if (x == 0 || !isfinite(x)) return x == 0 ? INFINITY : 0;
  double m = frexp(fabs(x), &ex); /* x = m 2^ex, m in [1/2, 1) */
  unsigned long long bits = (unsigned long long)ldexp(m, 53); /* nonzero */
  return ldexp(1, ex - 53 + __builtin_ctzll(bits));
}

/* Unit uid's value a dotted with column col of W (rows = residual
** dimensions, row length ld); *t gets the sum of |terms| and *wre the most
** rounding W's entries to precision p moves it by. */
static double uv_dot(const gc *g, int uid, int a, const float *W, int ld, int col, int p,
                     double *t, double *wre) {
  const unit *s = &g->u[uid];
  if (s->cat) {
    float w = W[(size_t)(s->dim + a) * ld + col];
    *t = fabs((double)w);
    *wre = fabs((double)w - (double)raspG_round(p, w));
    return w;
  }
  float w0 = W[(size_t)s->dim * ld + col];
  double x = dval(s->vals[a]), r = x * w0;
  *t = fabs(r);
  *wre = fabs(x) * fabs((double)w0 - (double)raspG_round(p, w0));
  if (s->sq) {
    float w1 = W[(size_t)(s->dim + 1) * ld + col];
    double r2 = x * x * w1;
    r += r2;
    *t += fabs(r2);
    *wre += x * x * fabs((double)w1 - (double)raspG_round(p, w1));
  }
  return r;
}

/* Integers off by a little (fp32, the unit's ae).  A float32 operation
** whose exact result would be an integer N the format holds, on operands
** off by at most e in all from the integers that give N, rounds to a float
** no further from the result than N is: its error is at most e as well as
** at most u |result|.  So a dot product of such inputs with integer
** weights, whose terms' magnitudes sum to at most T <= 2^24, is off by at
** most dev_grow(sum |w_j| e_j (twice where w_j is not a power of two,
** see below), k, T) after k additions that can be nonzero: a product by
** 2^k is exact, each addition rounds by at most the error before it (or u
** times the partial sum, whichever is smaller).  And
** less: a nonzero integer N has no other float within 2^-25 |N| of it, so
** a result within e of N rounds to N (error 0) when e < 2^-25 |N|, else
** by at most min(e, u (|N| + e)) (not e/2: 1 + 2^-24 + 2^-40, an integer
** off by 2^-24 + 2^-40, rounds to 1 + 2^-23); one near 0 by u e.
** (Products by integers alike: e more, none for a power of two.) */
static double dev_grow(double D, int nadd, double T) {
  double f = D, u = ldexp(1, -24);
  for (int k = 0; k < nadd && f > 0; k++) f += f < u / 2 ? u * f : fmin(u * (T + f), f);
  return f;
}

/* dev_grow on the grain G >= 1 (a power of two): integer multiples of G
** are integers scaled exactly, so the argument holds in units of G. */
static double dev_grow_on(double D, int nadd, double T, double G) {
  return G * dev_grow(D / G, nadd, T / G);
}

/* The nonzero entries of column col of W (rows x ld). */
static int col_nnz(const float *W, int rows, int ld, int col) {
  int k = 0;
  for (int r = 0; r < rows; r++) k += W[(size_t)r * ld + col] != 0;
  return k;
}

/* Sum over unit uid's dimensions of |entry of column col| times its ae,
** times 2 (plus a little) where the entry is not a power of two and the
** product's error reaches 2^-25 (dev_grow's argument: a product by 2^k is
** exact, another rounds by at most its input's error times |w| more,
** none below 2^-25 but a relative u). */
static double aerr_term(double w, double a) {
  int e;
  if (w == 0) return 0;
  return (frexp(w, &e) == 0.5 ? w : w * a < ldexp(1, -25) ? w * (1 + ldexp(1, -24)) : 2 * w * (1 + ldexp(1, -23))) * a;
}

static double aerr_dot(const gc *g, int uid, const float *W, int ld, int col) {
  const unit *s = &g->u[uid];
  if (!(s->ae[0] > 0) && !(s->ae[1] > 0)) return 0;
  double D = 0;
  int sz = s->cat ? s->nvals : s->sq ? 2 : 1;
  for (int k = 0; k < sz; k++)
    D += aerr_term(fabs((double)W[(size_t)(s->dim + k) * ld + col]), s->ae[s->sq && k == 1]);
  return D;
}

/* aerr_dot at unit uid's value a: where the unit is exact at its nonzero
** values (nzx), only the dimensions that value a leaves at 0 (a one-hot's
** other dimensions; both of a squared unit's at x = 0) are charged. */
static double aerr_val(const gc *g, int uid, int a, const float *W, int ld, int col) {
  const unit *s = &g->u[uid];
  if (!s->nzx) return aerr_dot(g, uid, W, ld, col);
  double D = 0, x = s->cat ? 0 : dval(s->vals[a]);
  int sz = s->cat ? s->nvals : s->sq ? 2 : 1;
  for (int k = 0; k < sz; k++) {
    double v = s->cat ? (k == a) : k ? x * x : x;
    if (v == 0) D += aerr_term(fabs((double)W[(size_t)(s->dim + k) * ld + col]), s->ae[s->sq && k == 1]);
  }
  return D;
}

/* aerr_val split by what the terms are worth (fp32, integer weights): a
** dot product's term whose exact value is 0 (a one-hot's other
** dimensions, x and x^2 at x = 0) and whose input is off by e holds
** w e rounded relatively; a term with a nonzero exact value (the others)
** as aerr_term charges it.  *z and *nz get the two sums at unit uid's
** value a, *m the number of terms with a nonzero exact value (nonzero
** weight), which dev_grow_z needs. */
static void aerr_split(const gc *g, int uid, int a, const float *W, int ld, int col, double *z,
                       double *nz, int *m) {
  const unit *s = &g->u[uid];
  double x = s->cat ? 0 : dval(s->vals[a]);
  int sz = s->cat ? s->nvals : s->sq ? 2 : 1;
  *z = *nz = 0;
  *m = 0;
  for (int k = 0; k < sz; k++) {
    double w = fabs((double)W[(size_t)(s->dim + k) * ld + col]);
    double v = s->cat ? (k == a) : k ? x * x : x, e = s->ae[s->sq && k == 1];
    if (w == 0) continue;
    if (v == 0) *z += w * e * (1 + ldexp(1, -23));
    else {
      ++*m;
      if (!s->nzx) *nz += aerr_term(w, e);
    }
  }
}

/* dev_grow for a sum (in any order) of terms that are integers within the
** format, some (m) with a nonzero exact value off by at most Dnz in all,
** the others with exact value 0 off by at most Dz in all.  Adding a term
** whose exact value is 0 to a float F rounds F + e to a float no further
** from it than F is (|e|): the error grows by at most 2|e|, never doubles;
** adding one with a nonzero exact value can double it (dev_grow's
** argument), at most m times.  The worst order puts the zeros first. */
static double dev_grow_z(double Dz, double Dnz, int m, double T) {
  double D = 2 * Dz + Dnz;
  return D > 0 ? dev_grow(D, m, T + D) : 0;
}

/* fp32: whether unit i, its absolute errors ae final, is exact at its
** nonzero values.  A float within 2^-24 |N| of a nonzero integer N with
** |N| <= 2^24 is N itself (no other float is that close: the spacing
** next to N is at least 2^-24 |N|, at a power of two below it); so a
** stored dimension whose value N is a nonzero integer and whose bound is
** below 2^-24 |N| (less a little for the bound's own rounding) holds N
** exactly, and only where the value is 0 can it be off.  (The stored
** float, not a sum before its rounding: that one needs 2^-25, dev_grow.)  Its readers then charge ae per value (aerr_val): a one-hot's 1
** and a number's nonzero x and x^2 carry no error, and a big-M gate
** reading a 0/1 condition is either off by its margin (the condition 0,
** within ae of 0) or reads an exact 1. */
static int nz_exact(const gc *g, int i) {
  const unit *u = &g->u[i];
  double t = ldexp(1, -24) * (1 - ldexp(1, -20));
  if (u->kappa != 0) return 0;
  if (u->cat) return u->ae[0] < t;
  for (int a = 0; a < u->nvals; a++) {
    double x = dval(u->vals[a]);
    if (x != floor(x) || fabs(u->sq ? x * x : x) > ldexp(1, 24)) return 0;
    if (x != 0 && !(u->ae[0] < t * fabs(x))) return 0;
    if (x != 0 && u->sq && !(u->ae[1] < t * x * x)) return 0;
  }
  return 1;
}

/* The largest magnitude of unit uid's dimension col (0: x, 1: a squared
** unit's x^2; 1 for one-hot). */
static double col_max(const gc *g, int uid, int col) {
  const unit *s = &g->u[uid];
  double m = s->cat ? 1 : 0;
  for (int a = 0; a < s->nvals && !s->cat; a++) {
    double x = fabs(dval(s->vals[a]));
    m = fmax(m, col && s->sq ? x * x : x);
  }
  return m;
}

/* The finest power-of-two grain (pow2_grain) of the terms unit uid's
** value a puts into column col of W (uv_dot's terms) and of w1, ONE's
** entry: a sum of them whose sizes stay within 2^24 of it is exact in
** float32. */
static double uv_grain(const gc *g, int uid, int a, const float *W, int ld, int col, float w1) {
  const unit *s = &g->u[uid];
  double gr = pow2_grain(w1);
  if (s->cat) return fmin(gr, pow2_grain(W[(size_t)(s->dim + a) * ld + col]));
  double x = dval(s->vals[a]);
  gr = fmin(gr, pow2_grain(x * W[(size_t)s->dim * ld + col]));
  return s->sq ? fmin(gr, pow2_grain(x * x * W[(size_t)(s->dim + 1) * ld + col])) : gr;
}

/* Whether every entry of W that unit uid's dimensions (and ONE, when
** with_one) feed into column col is an integer. */
static int int_weights(const gc *g, int uid, const float *W, int ld, int col, int with_one) {
  const unit *s = &g->u[uid];
  int sz = s->cat ? s->nvals : s->sq ? 2 : 1;
  for (int k = 0; k < sz; k++) {
    float w = W[(size_t)(s->dim + k) * ld + col];
    if (w != floorf(w)) return 0;
  }
  if (with_one) {
    float w = W[(size_t)1 * ld + col];
    if (w != floorf(w)) return 0;
  }
  return 1;
}

/* The relative error of an embedded unit's values: 0 where the format holds
** them exactly (one-hot, or integers it represents), else 1. */
static double embed_kappa(const gc *g, int uid, int p) {
  const unit *s = &g->u[uid];
  for (int a = 0; a < s->nvals && !s->cat; a++) {
    double x = dval(s->vals[a]);
    if ((double)raspG_round(p, (float)x) != x || (double)(float)x != x) return 1;
    if (s->sq && ((double)raspG_round(p, (float)(x * x)) != x * x || (double)(float)(x * x) != x * x))
      return 1;
  }
  return 0;
}

/* The largest magnitude unit uid holds (x^2 for a squared one). */
static double unit_max(const gc *g, int uid) {
  const unit *s = &g->u[uid];
  double m = s->cat ? 1 : 0;
  for (int a = 0; a < s->nvals && !s->cat; a++) {
    double x = fabs(dval(s->vals[a]));
    if (x > m) m = x;
    if (s->sq && x * x > m) m = x * x;
  }
  return m;
}

/* The smallest gap between two of unit uid's values (1 for one-hot). */
static double unit_gap(const gc *g, int uid) {
  const unit *s = &g->u[uid];
  double m = 1;
  for (int a = 1; a < s->nvals && !s->cat; a++) {
    double d = dval(s->vals[a]) - dval(s->vals[a - 1]);
    if (d > 0 && d < m) m = d;
  }
  return m;
}

static int comp_rel(const gc *g, const comp *c, int a, int b) {
  if (c->t) return c->t[(size_t)a * g->u[c->qu].nvals + b];
  if (c->numq) return c->ky[a] == c->qa * dval(g->u[c->qu].vals[b]) + c->qb;
  return c->kv.ok[a] && c->qv.ok[b] && dval(c->kv.val[a]) == dval(c->qv.val[b]);
}

/* The column vectors (over [c0, c1)) of every value of unit uid read through
** W, plus ONE's row where uid is not ONE: vec[a * ncol + j]; per column the
** largest |entry| (amax) and the largest error (emax: 0 where the column is
** computed exactly: exact inputs, integer weights, sums within the format). */
static double cb_colerr(const gc *g, const float *W, int ld, int col, int bos, double *T);

/* How far the leak of head unit uid (its weight past the selected keys,
** proven by head_margin, which runs before any reader) can move what
** column col of W reads from it: the head's output is its value moved by
** at most that weight towards other values (a convex combination), so the
** read moves by the leak times the spread of what it reads over those
** values (a mean's or a width's values lie within +-unit_max).  0 for
** other units, in the composed bound, whose errors carry the leak, and in
** fp32 (p), where the head's absolute errors (ae, head_margin) carry it
** and aerr_dot charges it: charging it here too would count it twice. */
static double leak_err(const gc *g, int uid, const float *W, int ld, int col, int p) {
  const unit *s = &g->u[uid];
  if (g->cb || p == RASPG_FP32 || s->kind != U_HEAD || !(s->leak > 0)) return 0;
  double lo = INFINITY, hi = -INFINITY, t, wre;
  for (int a = 0; a < s->nvals; a++) {
    double z = uv_dot(g, uid, a, W, ld, col, RASPG_FP32, &t, &wre);
    lo = fmin(lo, z), hi = fmax(hi, z);
  }
  double r = hi > lo ? hi - lo : 0;
  if (!s->cat && !s->sq)
    r = fmax(r, 2 * unit_max(g, uid) * fabs((double)W[(size_t)s->dim * ld + col]));
  return fmin(s->leak, 1) * r; /* (a weight, at most 1) */
}

static double *col_vectors(const gc *g, int uid, const float *W, int rows, int dh, int c0,
                           int c1, int p, double *amax, double *emax) {
  const unit *s = &g->u[uid];
  int ncol = c1 - c0, one = s->kind != U_ONE;
  double up = prec_u(p), kap = s->kappa, lim = ldexp(1, prec_bits[p]);
  double *v = raspM_alloc(sizeof(double) * (size_t)(s->nvals ? s->nvals : 1) * (size_t)(ncol ? ncol : 1));
  for (int j = 0; j < ncol; j++) {
    amax[j] = emax[j] = 0;
    double tmax = 0, gr = p == RASPG_FP32 ? INFINITY : 1; /* fp32: its terms' grain */
    float w1 = one ? W[(size_t)1 * dh + c0 + j] : 0;
    double w1e = fabs((double)w1 - (double)raspG_round(p, w1));
    for (int a = 0; a < s->nvals; a++) {
      double t, wre, x = uv_dot(g, uid, a, W, dh, c0 + j, p, &t, &wre) + w1;
      t += fabs((double)w1);
      if (p == RASPG_FP32) gr = fmin(gr, uv_grain(g, uid, a, W, dh, c0 + j, w1));
      double e = t * kap * up + wre + w1e + up * fabs(x) + 8 * ldexp(1, -24) * t;
      v[(size_t)a * ncol + j] = x;
      if (fabs(x) > amax[j]) amax[j] = fabs(x);
      if (e > emax[j]) emax[j] = e;
      if (t > tmax) tmax = t;
    }
    /* fp32: terms on one power-of-two grain gr (a score's scale), summed
    ** within 2^24 gr: exact on exact inputs, dev_grow's in units of gr on
    ** integers off by a little */
    double D = aerr_dot(g, uid, W, dh, c0 + j);
    if (p == RASPG_FP32 && kap == 0 && D == 0 && tmax <= lim * gr)
      emax[j] = 0;
    else if (kap == 0 && int_weights(g, uid, W, dh, c0 + j, one) &&
             tmax <= lim * (gr = fmax(1, gr)))
      emax[j] = D > 0 ? dev_grow_on(D, col_nnz(W, rows, dh, c0 + j), tmax + D, gr) : 0;
    else emax[j] += D;
    emax[j] += leak_err(g, uid, W, dh, c0 + j, p);
    if (g->cb) { /* the composed bound: the column's error in the pass */
      double T;
      emax[j] = cb_colerr(g, W, dh, c0 + j, 0, &T);
    }
  }
  return v;
}

/* fp32: what the moved values' absolute errors can move a head's output
** dimension col by (a weighted mean moves no further than its terms). */
static double vsrc_dev(gc *g, const unit *u, rasp_model *m, int col) {
  if (u->hmode == H_WIDTH) return 0;
  int d = m->cfg.d_model, dh = m->cfg.d_head, ncol = u->hmode == H_CAT ? u->nvals : 1;
  char nm[64];
  snprintf(nm, sizeof nm, "layers.%d.attn.w_v", u->layer);
  const float *wv = raspN_data(m, nm) + (size_t)u->hslot * d * dh;
  if (u->hmode == H_MOVE) return aerr_dot(g, u->hv.unit, wv, dh, col);
  double e = 0;
  for (int j = 0; j < ncol && col == 0; j++) e = fmax(e, aerr_dot(g, u->hv.unit, wv, dh, j));
  return e;
}

/* Whether selector sel picks at most one key per query on every input: it
** reaches, through `and`s alone (raspF_and_eq_selects), an equality select
** whose keys hold distinct values (raspF_distincts) but for exceptions that
** no value of its query's set can equal. */
static int sel_picks_one(const gc *g, int sel) {
  int eqs[16], n = raspF_and_eq_selects(g->ir, sel, eqs, 16);
  for (int k = 0; k < n; k++) {
    const rasp_ir_node *s = &g->ir->nodes[eqs[k]];
    raspF_distinct d = g->dist[s->in[0]];
    const view *q = &g->nv[s->in[1]];
    int one = d.holds && q->val;
    for (int a = 0; a < (one ? q->nv : 0) && one; a++) {
      rasp_elem e = q->val[a];
      /* integer keys equal an integer or a boolean (True == 1) only */
      one = !(q->ok[a] && (e.den == 1 || e.den == RASP_DEN_BOOL) && raspF_distinct_may_repeat(d, e.num));
    }
    if (one) return 1;
  }
  return 0;
}

/* fp32: a head that selects at most one key per query -- its keys are the
** positions (a component reading the index unit holds for at most one
** index value at every query value), or values that differ between
** positions wherever a query can match them (sel_picks_one), or it moves a
** value of the positions
** that no two share (the compiler's premise for a move, that the selected
** keys hold one value, then leaves one key) -- whose scores (Gp > 0: the
** selected key beats every other, BOS included, after rounding) leave the
** other keys a
** total weight leak < 2^-25 against the winner's exp(0) = 1, and whose
** value columns are integers computed exactly or off by a little: the
** softmax's sum is 1 exactly (1 plus less than half its ulp, in any
** order), so the winner's weight is 1 and its product exact; the others'
** products add at most leak * max|v| and absorbing them into the sum at
** most as much again (dev_grow's argument, each absorbed at most once),
** and w_o copies the value (1s).  So its output is integers off by at most
** *ae: no n/2 roundings, which only ties among several selected keys of
** equal values cost.  0 when the argument does not apply. */
static int head_unique(gc *g, unit *u, rasp_model *m, double leak, double ae[2]) {
  if (u->hmode != H_CAT && u->hmode != H_MOVE) return 0;
  if (!(leak < ldexp(1, -25))) return 0;
  const rasp_ir_node *an = u->node >= 0 ? &g->ir->nodes[u->node] : NULL;
  int one = an && (an->op == RASP_OP_AGGREGATE || an->op == RASP_OP_AGGR_MEAN) &&
            sel_picks_one(g, an->in[0]);
  /* --moves one: an assumed move's premise is that it selects one key */
  one = one || (u->move == RASPF_MOVE_ASSUMED && g->o->moves == RASPG_MOVES_ONE);
  for (int ci = 0; ci < u->nc && !one; ci++) {
    const comp *c = &u->c[ci];
    if (g->u[c->ku].kind != U_IDX) continue;
    int nk = g->u[c->ku].nvals, nq = g->u[c->qu].nvals, most = 0;
    for (int b = 0; b < nq; b++) {
      int k = 0;
      for (int a = 0; a < nk; a++) k += comp_rel(g, c, a, b);
      if (k > most) most = k;
    }
    one = most <= 1;
  }
  if (!one && g->u[u->hv.unit].kind == U_IDX) {
    /* the compiler's premise for a move (plan_node): the selected keys
    ** hold one value; the positions' values, each at one position, are
    ** then held by one key */
    const view *v = &u->hv;
    one = 1;
    for (int a = 0; a < v->nv && one; a++)
      for (int b = a + 1; b < v->nv && one; b++)
        one = !(v->ok[a] && v->ok[b] && v->val[a].num == v->val[b].num && v->val[a].den == v->val[b].den);
  }
  if (!one) return 0;
  const rasp_model_config *cf = &m->cfg;
  int d = cf->d_model, dh = cf->d_head, vu = u->hv.unit;
  if (g->u[vu].kappa != 0) return 0;
  char nm[64];
  snprintf(nm, sizeof nm, "layers.%d.attn.w_v", u->layer);
  const float *wv = raspN_data(m, nm) + (size_t)u->hslot * d * dh;
  snprintf(nm, sizeof nm, "layers.%d.attn.w_o", u->layer);
  const float *wo = raspN_data(m, nm) + (size_t)u->hslot * dh * d;
  int ncol = u->hmode == H_MOVE ? 2 : u->nvals, okv = 1;
  double *VA = raspM_alloc(sizeof(double) * (size_t)ncol * 2), *VE = VA + ncol;
  double *V = col_vectors(g, vu, wv, d, dh, 0, ncol, RASPG_FP32, VA, VE);
  ae[0] = ae[1] = 0;
  for (int j = 0; j < ncol; j++) {
    okv &= int_weights(g, vu, wv, dh, j, 1) && VA[j] <= ldexp(1, 24);
    okv &= wv[j] == floorf(wv[j]); /* BOS's row: the default */
    int k = u->hmode == H_MOVE ? j : 0;
    double vmax = fmax(fmax(col_max(g, (int)(u - g->u), k), VA[j]), fabs((double)wv[j]));
    ae[k] = fmax(ae[k], VE[j] + 2 * (1 + ldexp(1, -20)) * leak * (vmax + VE[j]));
    for (int o = 0; o < d; o++) /* w_o: a copy */
      okv &= wo[(size_t)j * d + o] == 0 || (wo[(size_t)j * d + o] == 1 && o == u->dim + j);
  }
  for (int a = 0; a < g->u[vu].nvals * ncol && okv; a++) okv = V[a] == floor(V[a]);
  raspM_free(V);
  raspM_free(VA);
  return okv;
}

/* A head's margin and need (the most rounding can take from it), in
** logits; 0 when not proven at p: a selected key must still beat every
** other (BOS as the design wants), the weight leaking to the others times
** the range of the values moved must stay below tol, and so must an
** averaging head's error from unequal selected scores (tol: an eighth of
** the gap between the head's values, 1 for one-hot and integers). */
static int head_margin(gc *g, unit *u, rasp_model *m, int p) {
  const rasp_model_config *cf = &m->cfg;
  int d = cf->d_model, dh = cf->d_head, n = cf->max_len;
  char nm[64];
  snprintf(nm, sizeof nm, "layers.%d.attn.w_q", u->layer);
  const float *wq = raspN_data(m, nm) + (size_t)u->hslot * d * dh;
  snprintf(nm, sizeof nm, "layers.%d.attn.w_k", u->layer);
  const float *wk = raspN_data(m, nm) + (size_t)u->hslot * d * dh;
  double up = prec_u(p), lim = ldexp(1, prec_bits[p]);
  double lsc = (double)(1.0f / sqrtf((float)dh));
  int width = u->hmode == H_WIDTH, avg = width || u->hmode == H_NUM;
  float qbf = wq[(size_t)1 * dh + u->bcol], kbf = wk[(size_t)0 * dh + u->bcol];
  double sbos = (double)qbf * kbf, vmax = fmax(fabs(qbf), fabs(kbf)), smax = fabs(sbos);
  /* errors without the final scaling (equal scores scale alike) and with */
  double ebns = fabs((double)raspG_round(p, qbf) * raspG_round(p, kbf) - sbos);
  if (g->cb) { /* the BOS key's errors meet the query's columns */
    double Tq, Tk, eq, ek0;
    for (int j = 0; j < dh; j++) {
      eq = cb_colerr(g, wq, dh, j, 0, &Tq);
      ek0 = cb_colerr(g, wk, dh, j, 1, &Tk);
      ebns += (j == u->bcol ? eq * (fabs(kbf) + ek0) + fabs(qbf) * ek0 : (Tq + eq) * ek0);
    }
  }
  double ebos = up * fabs(sbos) + ebns;
  double blo = sbos - ebos, bhi = sbos + ebos;
  int self = (int)(u - g->u);
  double vrange = 2 * unit_max(g, self), tol = avg ? unit_gap(g, self) / 8 : 0.125;
  double G = INFINITY, Gp = INFINITY, leak = 0, spread = 0;
  /* a quantized width: every selected key scores exactly BOS's score,
  ** each computed exactly */
  int wexact = width && u->qw && ebns == 0;
  int unbounded = !(ebns < INFINITY);
  double selmin = 0, selmax = 0, pselmin = 0, pselmax = 0;
  int nc = u->nc;
  double *mh = raspM_alloc(sizeof(double) * (size_t)(nc + 1) * 9);
  double *Mh = mh + nc + 1, *Mf = Mh + nc + 1, *pmh = Mf + nc + 1, *pMh = pmh + nc + 1, *pMf = pMh + nc + 1;
  /* per component, for a quantized width of several: the selected keys'
  ** scores less and plus their own rounding (ens), and their terms' sizes */
  double *emh = pMf + nc + 1, *eMh = emh + nc + 1, *Tsel = eMh + nc + 1;
  for (int ci = 0; ci < nc; ci++) {
    const comp *c = &u->c[ci];
    int ncol = c->col1 - c->col0, nk = g->u[c->ku].nvals, nq = g->u[c->qu].nvals;
    double *KA = raspM_alloc(sizeof(double) * (size_t)(ncol + 1) * 4), *KE = KA + ncol + 1,
           *QA = KE + ncol + 1, *QE = QA + ncol + 1;
    double *K = col_vectors(g, c->ku, wk, d, dh, c->col0, c->col1, p, KA, KE);
    double *Q = col_vectors(g, c->qu, wq, d, dh, c->col0, c->col1, p, QA, QE);
    for (int j = 0; j < ncol; j++) unbounded |= !(QE[j] < INFINITY) || !(KE[j] < INFINITY);
    /* each key's nonzero columns (a one-hot key has one) */
    int *kn = raspM_alloc(sizeof(int) * ((size_t)nk * (size_t)(ncol ? ncol : 1) + (size_t)nk + 1)),
        *ks = kn + (size_t)nk * (size_t)(ncol ? ncol : 1), nz = 0;
    for (int a = 0; a < nk; a++) {
      ks[a] = nz;
      for (int j = 0; j < ncol; j++)
        if (K[(size_t)a * ncol + j] != 0) kn[nz++] = j;
    }
    ks[nk] = nz;
    double *sc = raspM_alloc(sizeof(double) * (size_t)(nk ? nk : 1) * 2), *er = sc + nk;
    mh[ci] = pmh[ci] = emh[ci] = INFINITY;
    eMh[ci] = -INFINITY, Tsel[ci] = 0;
    Mh[ci] = pMh[ci] = Mf[ci] = pMf[ci] = -INFINITY;
    for (int j = 0; j < ncol; j++) {
      if (QA[j] > vmax) vmax = QA[j];
      if (KA[j] > vmax) vmax = KA[j];
    }
    double cmax = 0;
    for (int b = 0; b < nq; b++) {
      const double *qb = Q + (size_t)b * ncol;
      double qe = 0;
      for (int j = 0; j < ncol; j++) qe += (fabs(qb[j]) + QE[j]) * KE[j];
      double hmin = INFINITY, hmax = -INFINITY, fx = -INFINITY, lo = INFINITY, hi = -INFINITY,
             fhi = -INFINITY, lo2 = INFINITY, hi2 = -INFINITY;
      int qint = p == RASPG_FP32 && !g->cb;
      for (int j = 0; j < ncol && qint; j++) qint = qb[j] == floor(qb[j]);
      for (int a = 0; a < nk; a++) {
        double s = 0, e = qe, T = 0, gr = INFINITY;
        int sint = qint;
        for (int t = ks[a]; t < ks[a + 1]; t++) {
          double kv = K[(size_t)a * ncol + kn[t]];
          s += qb[kn[t]] * kv;
          T += fabs(qb[kn[t]] * kv);
          gr = fmin(gr, pow2_grain(qb[kn[t]] * kv));
          e += QE[kn[t]] * fabs(kv);
          sint = sint && kv == floor(kv);
        }
        /* integer features off by a little: dev_grow's argument (fp32).
        ** A product Q_j K_j whose exact value P is an integer the format
        ** holds, off by err_j from its inputs' errors, rounds to a float
        ** no further from P + err_j than P is (err_j), nor than half an
        ** ulp (u |P + err_j|); a key column that is 0 only by its error
        ** rounds relatively (u of its share of qe) */
        if (e > 0 && sint && T + e <= lim * gr) {
          double ep = up * qe;
          for (int t = ks[a]; t < ks[a + 1]; t++) {
            int j = kn[t];
            double kv = K[(size_t)a * ncol + j];
            double ej = QE[j] * fabs(kv) + (fabs(qb[j]) + QE[j]) * KE[j];
            ep += fmin(ej, up * (fabs(qb[j] * kv) + ej));
          }
          e = dev_grow_on(e + ep, ncol, T + e + ep, gr);
        }
        else {
          /* its rounding.  In fp32: k products and k - 1 additions in any
          ** order, each off by at most u times a partial sum (at most T),
          ** so k u T, not u |s| (the terms of a centred -(k - q)^2
          ** cancel: |s| is far below T); none where every term is a
          ** multiple of one power of two gr (an integer: gr >= 1) and
          ** every partial sum within the format on that grain
          ** (T <= 2^24 gr), whatever s: the score's factor (a power of
          ** two) costs no bits, so node ids centred within +-510 score
          ** exactly at any scale (T / scale <= 4 * 510^2).  In fp16 and
          ** bf16 the products are exact in the float32 accumulator (11 + 11 or 8 + 8 significand bits), its
          ** k - 1 additions off by 2^-24 T each, and the sum is rounded
          ** to p once: to the integer s itself (off by at most twice the
          ** accumulator's error) where s is one the format holds */
          int k = ks[a + 1] - ks[a];
          if (p == RASPG_FP32) {
            if (!(e == 0 && !g->cb && T <= lim * gr))
              e += up * (k > 1 ? k : 1) * (T > fabs(s) ? T : fabs(s)) * (1 + ldexp(1, -20));
          } else {
            double acc = (k > 1 ? k - 1 : 0) * ldexp(1, -24) * (1 + ldexp(1, -20)) * T;
            if (e == 0 && s == floor(s) && fabs(s) <= lim && acc < 0.25) e += 2 * acc;
            else e += acc + up * (fabs(s) + acc);
          }
        }
        double ens = e;
        e += up * fabs(s); /* the scaling's */
        sc[a] = s;
        er[a] = e;
        if (fabs(s) > cmax) cmax = fabs(s);
        if (comp_rel(g, c, a, b)) {
          Tsel[ci] = fmax(Tsel[ci], T);
          hmin = fmin(hmin, s), hmax = fmax(hmax, s), lo = fmin(lo, s - e), hi = fmax(hi, s + e);
          lo2 = fmin(lo2, s - ens), hi2 = fmax(hi2, s + ens);
        } else
          fx = fmax(fx, s), fhi = fmax(fhi, s + e);
      }
      mh[ci] = fmin(mh[ci], hmin), Mh[ci] = fmax(Mh[ci], hmax), Mf[ci] = fmax(Mf[ci], fx);
      if (hmin < INFINITY) emh[ci] = fmin(emh[ci], lo2), eMh[ci] = fmax(eMh[ci], hi2);
      pmh[ci] = fmin(pmh[ci], lo), pMh[ci] = fmax(pMh[ci], hi), pMf[ci] = fmax(pMf[ci], fhi);
      if (nc != 1) continue;
      /* one component: the exact gaps and leak at this query value */
      double gap = INFINITY, pgap = INFINITY, ref;
      if (hmin < INFINITY) {
        gap = width ? fmin(hmin, sbos) - fx : hmin - fmax(fx, sbos);
        pgap = width ? fmin(lo, blo) - fhi : lo - fmax(fhi, bhi);
        spread = fmax(spread, width ? fmax(hi2, sbos + ebns) - fmin(lo2, sbos - ebns) : hi2 - lo2);
      }
      if (!width) {
        gap = fmin(gap, sbos - fx);
        pgap = fmin(pgap, blo - fhi);
      }
      if (hmin < INFINITY)
        wexact = wexact && hmin == hmax && lo2 == hmin && hi2 == hmax && hmin == sbos;
      G = fmin(G, gap);
      Gp = fmin(Gp, pgap);
      ref = hmin < INFINITY ? (width ? fmin(lo, blo) : lo) : blo;
      /* BOS is one key; the others are at most n, each weighing at most
      ** what the highest-scoring unselected key value gets */
      double lkb = hmin < INFINITY && !width ? exp(-(ref - bhi) * lsc) : 0;
      double lk = 0, lkd = 0;
      for (int a = 0; a < nk; a++)
        if (!comp_rel(g, c, a, b)) {
          lk = fmax(lk, exp(-(ref - sc[a] - er[a]) * lsc));
          lkd = fmax(lkd, exp(-(blo - sc[a] - er[a]) * lsc));
        }
      leak = fmax(leak, fmax(lkb + (double)n * lk, width ? 0 : (double)n * lkd));
    }
    smax += cmax;
    raspM_free(sc);
    raspM_free(kn);
    raspM_free(K);
    raspM_free(Q);
    raspM_free(KA);
  }
  if (nc > 1) {
    /* a quantized width of several components: in each, every selected
    ** key's share of the score is one constant at every query, computed
    ** exactly, so a key selected by all (the selector is their product)
    ** scores their sum, which must be BOS's score; its terms are integers
    ** (ens 0), summing within 2^24 over all components together */
    double csum = 0, tsum = 0;
    for (int ci = 0; ci < nc && wexact; ci++) {
      if (!(mh[ci] < INFINITY)) continue;
      wexact = mh[ci] == Mh[ci] && emh[ci] == mh[ci] && eMh[ci] == Mh[ci];
      csum += mh[ci], tsum += Tsel[ci];
    }
    wexact = wexact && csum == sbos && tsum <= lim;
    /* (the spread below adds the scaling's rounding, the same for equal
    ** scores: an exact quantized width is not held to it) */
    double unsel = -INFINITY, punsel = -INFINITY;
    for (int ci = 0; ci < nc; ci++) {
      if (mh[ci] < INFINITY) selmin += mh[ci], pselmin += pmh[ci];
      if (Mh[ci] > -INFINITY) selmax += Mh[ci], pselmax += pMh[ci];
    }
    for (int ci = 0; ci < nc; ci++)
      if (Mf[ci] > -INFINITY) {
        unsel = fmax(unsel, Mf[ci] + selmax - (Mh[ci] > -INFINITY ? Mh[ci] : 0));
        punsel = fmax(punsel, pMf[ci] + pselmax - (pMh[ci] > -INFINITY ? pMh[ci] : 0));
      }
    G = width ? fmin(selmin, sbos) - unsel : fmin(selmin - fmax(unsel, sbos), sbos - unsel);
    Gp = width ? fmin(pselmin, blo) - punsel : fmin(pselmin - fmax(punsel, bhi), blo - punsel);
    spread = width ? fmax(pselmax, bhi) - fmin(pselmin, blo) : pselmax - pselmin;
    /* BOS is one key, the others up to n */
    leak = width ? (double)n * exp(-Gp * lsc)
                 : fmax(exp(-(pselmin - bhi) * lsc) + (double)n * exp(-(pselmin - punsel) * lsc),
                        (double)n * exp(-(blo - punsel) * lsc));
  }
  raspM_free(mh);
  u->margin = G * lsc;
  u->need = (G - Gp) * lsc;
  u->leak = leak;
  /* at the BOS query only BOS's gate column reads anything (row is_bos of
  ** w_q), and only BOS's key has it: every other key scores 0, so the
  ** weight past BOS is at most n e^-(its score), rounding allowed for */
  u->leak0 = (double)n * exp(-(1 - 4 * up) * (double)wq[u->bcol] * kbf * lsc);
  u->spread = spread * lsc;
  int ok = 1;
  if (unbounded) ok = 0, u->why = "the error of what it reads is not bounded";
  else if (!(Gp > 0)) ok = 0, u->why = "rounding can let a key that is not selected win";
  else if (!(leak * vrange <= tol))
    ok = 0, u->why = "the weight leaking past its selected keys can move its value too far";
  else if (avg && !(width && u->qw && wexact) && !((exp(spread * lsc) - 1) * vrange <= tol))
    ok = 0, u->why = "rounding can weigh its selected keys unequally, moving its mean by more "
                     "than an eighth of the gap between its values";
  if (p == RASPG_FP16 && (vmax > 65504 || smax > 65504))
    ok = 0, u->why = "a score or a feature exceeds fp16's largest number, 65504";
  if (p == RASPG_FP32 && !g->cb) {
    /* the leak, as a deviation, and the moved values' own.  Where e^-gap
    ** is below float32's subnormals (a large --attn-gain), expf still
    ** returns up to one subnormal ulp, 2^-149, per key: the leak carries
    ** n 2^-148 more, so the tiny deviations stay bounds */
    double lk = leak + (double)n * ldexp(1, -148);
    for (int k = 0; k < 2; k++)
      u->ae[k] = (col_max(g, self, k) > 0 ? 2 * (1 + 2 * up) * lk * col_max(g, self, k) : 0) +
                 vsrc_dev(g, u, m, k);
    double ae[2];
    if (ok && !avg && head_unique(g, u, m, lk, ae)) u->kappa = 0, u->ae[0] = ae[0], u->ae[1] = ae[1];
    /* a quantized width: the selected keys and BOS score alike, exactly,
    ** so each gets exp(0) = 1; the others weigh less than 2^-25 in all,
    ** so the softmax's sum is w + 1 exactly (in any order) and BOS's
    ** weight fl(1/(w + 1)); every other key's value is an exact 0, so the
    ** head's output is qv fl(1/(w + 1)) exactly (qv a power of two), and
    ** b_o's 2^23 plus it rounds to the integer qwidth_value gives: exact.
    ** (The softmax divides by its sum, or multiplies by its reciprocal:
    ** fl(1 / (w + 1)) either way.) */
    if (width && u->qw) {
      if (ok && wexact && lk < ldexp(1, -25)) u->kappa = 0, u->ae[0] = u->ae[1] = 0;
      else if (ok)
        ok = 0, u->why = "its selected keys' scores are not proven exactly equal to BOS's (a "
                         "quantized width needs them so)";
    }
  }
  return ok;
}


typedef struct zsrc {
  double *z; /* distinct contributions, sorted */
  int n;
} zsrc;

/* The smallest nonzero |base + sum of one entry per source| (and the
** largest |.|), sources[k..ns) still to choose; the last by search. */
static void zscan(const zsrc *s, int k, int ns, double base, double tiny, double *mn, double *mx) {
  if (k == ns - 1) {
    const zsrc *l = &s[k];
    double lo = base + l->z[0], hi = base + l->z[l->n - 1];
    if (fabs(lo) > *mx) *mx = fabs(lo);
    if (fabs(hi) > *mx) *mx = fabs(hi);
    int a = 0, b = l->n; /* first index with base + z >= 0 */
    while (a < b) {
      int mid = (a + b) / 2;
      if (base + l->z[mid] < 0) a = mid + 1;
      else b = mid;
    }
    for (int i = a - 2; i <= a + 1; i++)
      if (i >= 0 && i < l->n) {
        double z = fabs(base + l->z[i]);
        if (z > tiny && z < *mn) *mn = z;
      }
    return;
  }
  for (int i = 0; i < s[k].n; i++) zscan(s, k + 1, ns, base + s[k].z[i], tiny, mn, mx);
}

/* fp32: the error of unit uid's dimension k (as uid's stored dimensions
** count) at its value a: its absolute error (none at a nonzero value of a
** unit exact there, nz_exact) and its relative one. */
static double dim_err(const gc *g, int uid, int a, int k) {
  const unit *s = &g->u[uid];
  double x = s->cat ? 0 : dval(s->vals[a]), v = s->cat ? (k == a) : k ? x * x : x;
  double e = s->nzx && v != 0 ? 0 : s->ae[s->sq && k == 1];
  return e + s->kappa * ldexp(1, -24) * fabs(v);
}

/* fp32: g->od (what the hidden units [h0, h1), errors eh, move each output
** by), the largest over the combinations of source values, two bounds
** each and the smaller kept:
**   the sum over the hidden units at or above their hinge of |w_out|
**   times their error (one below it by more than its error outputs an
**   exact 0: mlp_margin proves every unit's error below its distance from
**   the hinge), twice for a w_out that is not a power of two;
**   where the units on each side of their hinges are known, the MLP is an
**   affine map there, so the sources' errors reach output o through W_eff
**   = sum over the units above their hinge of w_in[r][h] w_out[h][o],
**   whose terms cancel where two units read one input alike (a step's
**   pair, a where's branch and its eraser): sum_r |W_eff[r][o]| times the
**   error of dimension r, plus each unit's own rounding rh (its error
**   less what its inputs' errors bring) times |w_out|, w_out's product
**   rounding (u |w_out| hm, none for a power of two), and a unit exactly
**   on its hinge, |w_out| eh (it passes some of its error on).
** The sum over all of them where the combinations are too many. */
static void active_od(gc *g, const float *wi, const float *bi, const float *wo, int F, int D,
                     int h0, int h1, const int *src, int ns, int has_one, const double *eh,
                     const double *rh, const double *hm, const double *hx) {
  int nh = h1 - h0;
  double combos = 1;
  for (int k = 0; k < ns; k++) combos *= g->u[src[k]].nvals ? g->u[src[k]].nvals : 1;
  if (nh <= 0 || combos * nh * (ns + 1) > 3e7) return;
  int *off = raspM_alloc(sizeof(int) * (size_t)(ns + 1) * 2), *ix = off + ns + 1, tot = 0, ni = 0;
  for (int k = 0; k < ns; k++) off[k] = tot, tot += g->u[src[k]].nvals, ni += usize(&g->u[src[k]]);
  /* the output dimensions (slots), and per hidden unit its nonzero w_out
  ** (slot, weight) and w_in over the sources' dimensions (input, weight) */
  int *oslot = raspM_alloc(sizeof(int) * (size_t)D), no = 0;
  for (int o = 0; o < D; o++) oslot[o] = -1;
  int *ost = raspM_alloc(sizeof(int) * (size_t)(nh + 1) * 2), *ist = ost + nh + 1;
  size_t nout = 0, nin = 0;
  for (int h = 0; h < nh; h++)
    for (int o = 0; o < D; o++) nout += wo[(size_t)(h0 + h) * D + o] != 0;
  int *rdim = raspM_alloc(sizeof(int) * (size_t)(ni + 1) * 3), *rsrc = rdim + ni + 1,
      *rcol = rsrc + ni + 1;
  for (int k = 0, r = 0; k < ns; k++)
    for (int c = 0; c < usize(&g->u[src[k]]); c++, r++)
      rdim[r] = g->u[src[k]].dim + c, rsrc[r] = k, rcol[r] = c;
  for (int h = 0; h < nh; h++)
    for (int r = 0; r < ni; r++) nin += wi[(size_t)rdim[r] * F + h0 + h] != 0;
  int *oi = raspM_alloc(sizeof(int) * (nout + nin + 1)), *ii = oi + nout;
  double *ow = raspM_alloc(sizeof(double) * (nout + nin + 1)), *iw = ow + nout;
  size_t q = 0, q2 = 0;
  double work = 0;
  for (int h = 0; h < nh; h++) {
    ost[h] = (int)q, ist[h] = (int)q2;
    for (int o = 0; o < D; o++) {
      float w = wo[(size_t)(h0 + h) * D + o];
      if (w == 0) continue;
      if (oslot[o] < 0) oslot[o] = no++;
      oi[q] = oslot[o], ow[q++] = w;
    }
    for (int r = 0; r < ni; r++) {
      float w = wi[(size_t)rdim[r] * F + h0 + h];
      if (w != 0) ii[q2] = r, iw[q2++] = w;
    }
    work += (double)(q - (size_t)ost[h]) * (double)(q2 - (size_t)ist[h]);
  }
  ost[nh] = (int)q, ist[nh] = (int)q2;
  int *slot_o = raspM_alloc(sizeof(int) * (size_t)(no + 1) * 2), *inr = slot_o + no + 1;
  for (int o = 0; o < D; o++)
    if (oslot[o] >= 0) slot_o[oslot[o]] = o;
  /* in place: the output slot that is also a source dimension (the
  ** operand y the residual still holds) */
  for (int s2 = 0; s2 < no; s2++) {
    inr[s2] = -1;
    for (int r = 0; r < ni && g->inplace; r++)
      if (rdim[r] == slot_o[s2]) inr[s2] = r;
  }
  /* the affine bound where its accumulator fits and the work is bounded */
  int affine = (double)ni * no <= 4e6 && combos * (work + no + ni) <= 1e8;
  double *C = raspM_alloc(sizeof(double) * ((size_t)tot * nh + (size_t)nh * 2 + (size_t)no * 8 +
                                             (size_t)ni + 1));
  double *base = C + (size_t)tot * nh, *z = base + nh, *cur = z + nh, *cur2 = cur + no,
         *Tc = cur2 + no, *prop = Tc + no, *kc = prop + no, *tch = kc + no, *Tz = tch + no,
         *aint = Tz + no, *ein = aint + no, t, wre;
  double *acc = affine ? raspM_alloc(sizeof(double) * (size_t)ni * (size_t)no + 1) : NULL;
  int *al = affine ? raspM_alloc(sizeof(int) * ((size_t)ni * (size_t)no + 1)) : NULL, nal;
  if (acc) memset(acc, 0, sizeof(double) * (size_t)ni * (size_t)no);
  /* per output: its hinge units and their w_out entries (HINGES at most),
  ** the buckets of acc's rows, and per input a mark and a value */
  enum { HINGES = 4 };
  size_t nacc = affine ? (size_t)ni * (size_t)no : 0;
  int *nhg = raspM_alloc(sizeof(int) * ((size_t)no * (2 * HINGES + 4) + (size_t)ni * 2 + nacc + 2));
  int *hg = nhg + no, *hge = hg + (size_t)no * HINGES, *bst = hge + (size_t)no * HINGES,
      *bfill = bst + no + 1, *rmark = bfill + no + 1, *rows = rmark + ni, *brow = rows + ni;
  double *rv = raspM_alloc(sizeof(double) * ((size_t)ni + 1));
  memset(rmark, 0, sizeof(int) * (size_t)ni);
  for (int h = h0; h < h1; h++) {
    base[h - h0] = (double)bi[h] + (has_one ? 0.0f : wi[(size_t)1 * F + h]);
    for (int k = 0; k < ns; k++)
      for (int a = 0; a < g->u[src[k]].nvals; a++)
        C[(size_t)(off[k] + a) * nh + h - h0] = uv_dot(g, src[k], a, wi, F, h, RASPG_FP32, &t, &wre);
  }
  double *od = g->od, *oint = od + 3 * D, *ogen = oint + D;
  memset(od, 0, sizeof(double) * (size_t)D);
  g->od_combo = affine ? 2 : 1;
  g->od_int = 1;
  for (int k = 0; k < ns; k++) ix[k] = 0;
  for (;;) {
    for (int s2 = 0; s2 < no; s2++)
      cur[s2] = cur2[s2] = Tc[s2] = prop[s2] = kc[s2] = tch[s2] = Tz[s2] = 0, aint[s2] = 1;
    if (affine) memset(nhg, 0, sizeof(int) * (size_t)no);
    nal = 0;
    for (int h = 0; h < nh; h++) {
      z[h] = base[h];
      for (int k = 0; k < ns; k++) z[h] += C[(size_t)(off[k] + ix[k]) * nh + h];
      double tiny = 1e-9 * (1 + fabs(base[h]));
      if (z[h] < -tiny) continue; /* off, exactly */
      int hinge = z[h] <= tiny;
      for (int e = ost[h]; e < ost[h + 1]; e++) {
        int s2 = oi[e], e2;
        double w = fabs(ow[e]);
        int p2 = frexp(w, &e2) == 0.5;
        double full = w * eh[h] * (p2 ? 1 : 2 + ldexp(1, -22));
        cur[s2] += full;
        kc[s2]++, Tc[s2] += w * (hm[h] + eh[h]), tch[s2] = 1;
        /* its term here, at this combination's value of the unit */
        Tz[s2] += w * (fabs(z[h]) + eh[h]);
        aint[s2] = aint[s2] && hx[h] != 0 && ow[e] == floor(ow[e]);
        /* a unit on its hinge outputs ReLU(its error): a share s in [0, 1]
        ** of what its inputs' errors bring, plus its rounding; up to
        ** HINGES of them per output go through the affine bound with s at
        ** 0 or 1 (the bound is convex in each s), more are charged whole */
        if (hinge && (!affine || nhg[s2] >= HINGES)) {
          cur2[s2] += full;
          continue;
        }
        cur2[s2] += w * rh[h] + (p2 ? 0 : ldexp(1, -24) * w * (hm[h] + eh[h]));
        if (!affine) continue;
        if (hinge) {
          hg[s2 * HINGES + nhg[s2]] = h, hge[s2 * HINGES + nhg[s2]++] = e;
          continue;
        }
        for (int f = ist[h]; f < ist[h + 1]; f++) {
          size_t a = (size_t)ii[f] * no + s2;
          if (acc[a] == 0) al[nal++] = (int)a;
          acc[a] += iw[f] * ow[e];
          if (acc[a] == 0) acc[a] = 1e-300; /* (kept in the list once) */
        }
      }
    }
    if (affine) {
      for (int r = 0; r < ni; r++) ein[r] = dim_err(g, src[rsrc[r]], ix[rsrc[r]], rcol[r]);
      for (int s2 = 0; s2 < no; s2++)
        if (inr[s2] >= 0) { /* the residual's own y, weight 1 */
          size_t a = (size_t)inr[s2] * no + s2;
          if (acc[a] == 0) al[nal++] = (int)a;
          acc[a] += 1;
          if (acc[a] == 0) acc[a] = 1e-300;
          tch[s2] = 1;
        }
      /* per output, its rows of acc, and its hinge units' rows */
      for (int s2 = 0; s2 < no; s2++) bst[s2 + 1] = 0;
      for (int e = 0; e < nal; e++) bst[al[e] % no + 1]++;
      bst[0] = 0;
      for (int s2 = 0; s2 < no; s2++) bst[s2 + 1] += bst[s2];
      for (int s2 = 0; s2 < no; s2++) bfill[s2] = bst[s2];
      for (int e = 0; e < nal; e++) brow[bfill[al[e] % no]++] = al[e] / no;
      for (int s2 = 0; s2 < no; s2++) {
        if (!tch[s2]) continue;
        int nr = 0;
        for (int b = bst[s2]; b < bst[s2 + 1]; b++) rows[nr++] = brow[b], rmark[brow[b]] = 1;
        for (int j = 0; j < nhg[s2]; j++) {
          int h = hg[s2 * HINGES + j];
          for (int f = ist[h]; f < ist[h + 1]; f++)
            if (!rmark[ii[f]]) rmark[ii[f]] = 1, rows[nr++] = ii[f];
        }
        double best = 0;
        for (int mask = 0; mask < 1 << nhg[s2]; mask++) {
          for (int b = 0; b < nr; b++) rv[rows[b]] = acc[(size_t)rows[b] * no + s2];
          for (int j = 0; j < nhg[s2]; j++) {
            if (!(mask >> j & 1)) continue;
            int h = hg[s2 * HINGES + j], e = hge[s2 * HINGES + j];
            for (int f = ist[h]; f < ist[h + 1]; f++) rv[ii[f]] += iw[f] * ow[e];
          }
          double sum = 0;
          for (int b = 0; b < nr; b++) sum += fabs(rv[rows[b]]) * ein[rows[b]];
          best = fmax(best, sum);
        }
        prop[s2] = best;
        for (int b = 0; b < nr; b++) rmark[rows[b]] = 0;
      }
      for (int e = 0; e < nal; e++) acc[al[e]] = 0;
    }
    for (int s2 = 0; s2 < no; s2++) {
      if (!tch[s2]) continue;
      int o = slot_o[s2];
      double v = cur[s2];
      if (affine) {
        /* (in place the affine bound alone: it holds the operand's
        ** error, which the other leaves to residue) */
        double aff = cur2[s2] + prop[s2] * (1 + ldexp(1, -20));
        v = g->inplace ? aff : fmin(v, aff);
      }
      od[o] = fmax(od[o], v);
      /* the output sum's own rounding, over the units that are not 0
      ** here (kc terms of sizes Tc): integers off by a little
      ** (dev_grow), or up to u times a partial sum per addition and
      ** product */
      oint[o] = fmax(oint[o], v > 0 ? dev_grow(v, (int)kc[s2], Tc[s2] + v) : 0);
      /* where every unit that is not 0 here is an exact integer through an
      ** integer w_out and their terms' sizes sum within 2^24, every
      ** partial sum is an integer the format holds, in any order: off
      ** only by what its inputs' errors grow to (dev_grow), whatever the
      ** units' sizes at other combinations (a big-M gate's large term is
      ** large only where its partner cancels it) */
      double gen = v + (kc[s2] + 1) * ldexp(1, -24) * (1 + ldexp(1, -20)) * (Tc[s2] + v);
      if (aint[s2] && Tz[s2] + v <= ldexp(1, 24))
        gen = fmin(gen, v > 0 ? dev_grow(v, (int)kc[s2], Tz[s2] + v) : 0);
      else
        g->od_int = 0;
      ogen[o] = fmax(ogen[o], gen);
    }
    int k = 0;
    while (k < ns && ++ix[k] >= g->u[src[k]].nvals) ix[k++] = 0;
    if (k == ns) break;
  }
  raspM_free(acc);
  raspM_free(al);
  raspM_free(nhg);
  raspM_free(rv);
  raspM_free(C);
  raspM_free(slot_o);
  raspM_free(oi);
  raspM_free(ow);
  raspM_free(rdim);
  raspM_free(ost);
  raspM_free(oslot);
  raspM_free(off);
}

/* Hidden units [h0, h1) of layer l reading units src[0..ns): their
** smallest margin and largest need into *mg, *nd, and *exact 1 when every
** one is computed exactly at p (exact inputs, integer weights in and out,
** sums within the format).  0 when one is not proven. */
static int mlp_margin(gc *g, rasp_model *m, int l, int h0, int h1, const int *src, int ns, int p,
                      double *mg, double *nd, int *exact, double *otot) {
  const rasp_model_config *cf = &m->cfg;
  int F = cf->d_mlp, D = cf->d_model;
  char nm[64];
  snprintf(nm, sizeof nm, "layers.%d.mlp.w_in", l);
  const float *wi = raspN_data(m, nm);
  snprintf(nm, sizeof nm, "layers.%d.mlp.b_in", l);
  const float *bi = raspN_data(m, nm);
  snprintf(nm, sizeof nm, "layers.%d.mlp.w_out", l);
  const float *wo = raspN_data(m, nm);
  double up = prec_u(p), lim = ldexp(1, prec_bits[p]);
  int ok = 1, has_one = 0, allex = 1;
  double outsum = 0;
  for (int k = 0; k < ns; k++) {
    has_one |= g->u[src[k]].kind == U_ONE;
    allex &= g->u[src[k]].kappa == 0;
  }
  zsrc *zs = raspM_alloc(sizeof(zsrc) * (size_t)(ns + 1));
  double *od = g->od; /* per output: sum |w_out| err */
  double *otd = od + D, *ond = otd + D; /* per output: sum |w_out| max|h|, nonzero terms */
  memset(od, 0, sizeof(double) * (size_t)D * 5);
  g->od_combo = 0;
  g->od_int = 0;
  /* per hidden unit: its error where it can be on, the share of that
  ** which is its own rounding (what its inputs' errors do not bring), and
  ** its largest magnitude (active_od) */
  double *eh = raspM_alloc(sizeof(double) * (size_t)(h1 - h0 + 1) * 4), *rh = eh + (h1 - h0 + 1),
         *hm = rh + (h1 - h0 + 1), *hx = hm + (h1 - h0 + 1);
  for (int h = h0; h < h1; h++) {
    float w1 = has_one ? 0.0f : wi[(size_t)1 * F + h];
    double base = (double)bi[h] + w1, T = fabs((double)bi[h]) + fabs((double)w1), err = 0,
           lerr = 0;
    /* the largest sums of its positive and of its negative terms: every
    ** partial sum, in any order, lies between -Tn and Tp */
    double Tp = fmax(0, (double)bi[h]) + fmax(0, (double)w1),
           Tn = fmax(0, -(double)bi[h]) + fmax(0, -(double)w1);
    err += fabs((double)bi[h] - raspG_round(p, bi[h])) + fabs((double)w1 - raspG_round(p, w1));
    int nnz = 1, nsrc = 0, hex = allex && bi[h] == floorf(bi[h]) && w1 == floorf(w1);
    double ain = 0; /* the sources' absolute errors through w_in (fp32) */
    double aon = 0; /* the same at the source values where h can be on */
    int nterm = 1;  /* its terms that can be nonzero (a one-hot's zeros are exact) */
    /* ain and aon split as aerr_split does, for dev_grow_z: the terms
    ** with exact value 0, the others, and how many of those (the bias and
    ** ONE's weight among them) */
    double inz = 0, innz = 0, aonz = 0, aonnz = 0, alin = 0;
    int mterm = 2;
    for (int r = 1; r < D; r++) nnz += wi[(size_t)r * F + h] != 0;
    /* the largest pre-activation per source (zk) and in all (ztop): with
    ** source k at value a, h is at most ztop - zk + z[a]; below 0 it is
    ** below its hinge by at least its margin, off exactly (ok demands
    ** 2 err < margin), and what k then carries does not reach its output */
    double ztop = base, *zk = raspM_alloc(sizeof(double) * (size_t)(ns + 1)), tt = T;
    for (int k = 0; k < ns; k++) {
      double t, wre;
      zk[k] = -INFINITY;
      for (int a = 0; a < g->u[src[k]].nvals; a++) {
        zk[k] = fmax(zk[k], uv_dot(g, src[k], a, wi, F, h, RASPG_FP32, &t, &wre));
        tt += t;
      }
      if (zk[k] > -INFINITY) ztop += zk[k];
    }
    for (int k = 0; k < ns; k++) {
      const unit *s = &g->u[src[k]];
      double tmax = 0, t, wre, emax = 0, va = 0, von = 0, vz = 0, vnz = 0, onz = 0, onnz = 0, vlin = 0;
      int vm = 0;
      double *z = raspM_alloc(sizeof(double) * (size_t)(s->nvals ? s->nvals : 1));
      double tpos = 0, tneg = 0;
      for (int a = 0; a < s->nvals; a++) {
        z[a] = uv_dot(g, src[k], a, wi, F, h, p, &t, &wre);
        if (t > tmax) tmax = t;
        /* (one term per value but for a squared unit's two, which may
        ** have either sign: t on both sides) */
        tpos = fmax(tpos, s->sq ? t : fmax(0, z[a]));
        tneg = fmax(tneg, s->sq ? t : fmax(0, -z[a]));
        if (t * s->kappa * up + wre > emax) emax = t * s->kappa * up + wre;
        if (p != RASPG_FP32) continue;
        double e = aerr_val(g, src[k], a, wi, F, h), ez, enz;
        int em;
        aerr_split(g, src[k], a, wi, F, h, &ez, &enz, &em);
        va = fmax(va, e);
        vz = fmax(vz, ez), vnz = fmax(vnz, enz), vm = em > vm ? em : vm;
        if (!(ztop - zk[k] + z[a] < -1e-6 * (1 + tt))) {
          double lin = 0;
          for (int c = 0; c < usize(s); c++)
            lin += fabs((double)wi[(size_t)(s->dim + c) * F + h]) * dim_err(g, src[k], a, c);
          von = fmax(von, e), onz = fmax(onz, ez), onnz = fmax(onnz, enz), vlin = fmax(vlin, lin);
        }
      }
      ain += va;
      aon += von;
      inz += vz, innz += vnz, mterm += vm, aonz += onz, aonnz += onnz, alin += vlin;
      hex = hex && int_weights(g, src[k], wi, F, h, 0);
      int n = s->nvals;
      qsort(z, (size_t)n, sizeof *z, cmp_dbl);
      int w = 0;
      for (int a = 0; a < n; a++)
        if (!w || z[a] != z[w - 1]) z[w++] = z[a];
      if (w == 1) { /* a constant: part of the base */
        base += z[0];
        raspM_free(z);
      } else
        zs[nsrc++] = (zsrc){z, w};
      T += tmax;
      Tp += tpos, Tn += tneg;
      err += emax;
      lerr += leak_err(g, src[k], wi, F, h, p);
      if (s->cat && !(s->ae[0] > 0)) nterm++;
      else
        for (int r = 0; r < usize(s); r++) nterm += wi[(size_t)(s->dim + r) * F + h] != 0;
    }
    double mn = INFINITY, mx = fabs(base), tiny = 1e-9 * (1 + T);
    if (nsrc) zscan(zs, 0, nsrc, base, tiny, &mn, &mx);
    else if (fabs(base) > tiny) mn = fabs(base);
    for (int k = 0; k < nsrc; k++) raspM_free(zs[k].z);
    raspM_free(zk);
    hex = hex && fmax(Tp, Tn) + ain <= lim;
    /* integers within the format: every sum exact, or off by what the
    ** inputs' absolute errors grow to (dev_grow); eon: the error where h
    ** is on, what its output carries (off, it outputs an exact 0) */
    double eon;
    if (hex) {
      err = ain > 0 ? fmin(dev_grow(ain, nterm, T + ain), dev_grow_z(inz, innz, mterm, T)) : 0;
      eon = aon > 0 ? fmin(dev_grow(aon, nterm, T + aon), dev_grow_z(aonz, aonnz, mterm, T)) : 0;
    } else {
      double r = up * mx + (nnz + 1) * ldexp(1, -24) * T;
      eon = err + aon + r;
      err += ain + r;
    }
    err += lerr; /* (exact arithmetic on inputs a leak moved) */
    eon += lerr;
    if (g->trace > 1) fprintf(stderr, "  h%d hex=%d ain=%g aon=%g nterm=%d T=%g err=%g eon=%g mn=%g\n", h, hex, ain, aon, nterm, T, err, eon, mn);
    for (int o = 0; o < D; o++) {
      float w = wo[(size_t)h * D + o];
      if (w != 0) outsum += fabs((double)w) * mx, otd[o] += fabs((double)w) * mx, ond[o]++;
      int e2;
      od[o] += fabs((double)w) * eon * (frexp(fabs((double)w), &e2) == 0.5 || w == 0 ? 1 : 2 + ldexp(1, -22));
      hex = hex && w == floorf(w);
    }
    *exact = *exact && hex;
    if (mn < *mg) *mg = mn;
    if (2 * err > *nd) *nd = 2 * err;
    if (!(2 * err < mn) || (p == RASPG_FP16 && T > 65504)) ok = 0;
    eh[h - h0] = eon;
    hx[h - h0] = hex; /* integers in, weights in and out: its value an exact integer */
    rh[h - h0] = fmax(0, eon - alin);
    hm[h - h0] = mx;
  }
  if (outsum > lim) *exact = 0;
  *otot = outsum;
  if (p == RASPG_FP32 && ok) active_od(g, wi, bi, wo, F, D, h0, h1, src, ns, has_one, eh, rh, hm, hx);
  raspM_free(eh);
  raspM_free(zs);
  return ok;
}

/* The input errors a readout column meets (fp32, the unit's ae, charged
** where aerr_val charges them): with c1 < 0, sum |W_k,c0| ae_k; else as
** they reach the difference of columns c0 and c1, sum |W_k,c0 - W_k,c1|
** ae_k -- the readout reads one residual for every logit, so an error e_k
** on dimension k moves logit c0 minus logit c1 by (W_k,c0 - W_k,c1) e_k,
** and a dimension every column weighs alike (a squared readout's x^2, -X
** in every column) moves none of the differences. */
static double aerr_cols(const gc *g, int uid, int a, const float *W, int ld, int c0, int c1) {
  const unit *s = &g->u[uid];
  if (!(s->ae[0] > 0) && !(s->ae[1] > 0)) return 0;
  double D = 0, x = s->cat ? 0 : dval(s->vals[a]);
  int sz = s->cat ? s->nvals : s->sq ? 2 : 1;
  for (int k = 0; k < sz; k++) {
    double v = s->cat ? (k == a) : k ? x * x : x;
    if (s->nzx && v != 0) continue; /* exact there (aerr_val) */
    size_t r = (size_t)(s->dim + k) * ld;
    D += fabs((double)W[r + c0] - (c1 < 0 ? 0.0 : (double)W[r + c1])) * s->ae[s->sq && k == 1];
  }
  return D;
}

/* The readout's margin (the right logit's lead) and need; 0 when not
** proven at p.
** fp32 proves it pair by pair: the right logit's lead over each other
** logit j against the error of that difference.  Logit c is a dot product
** of the residual (the unit's dimensions, off by their ae, and `one`)
** with column c: m_c nonzero terms, in whatever order the forward pass
** adds them (BLAS or not, fused or not), so it is computed within gamma =
** m_c u / (1 - m_c u) times the sum of its terms' magnitudes, at most t_c + |w_one| + the
** column's input errors (aerr_cols), of the exact dot product of what the
** residual holds; that differs from the logit of exact values by the
** input errors, which reach the difference through aerr_cols(right, j).
** Values that are not integers add their relative error (kappa) on t.
** fp16 and bf16 keep the rule that chose their encodings, as measured on a
** GPU (bench/README.md): each logit's whole error, twice, against the
** smallest lead. */
static int readout_margin(gc *g, raspG_model *out, const view *ov, int p, double *mg, double *nd) {
  rasp_model *m = &out->model;
  const float *un = raspN_data(m, "unembed");
  int no = m->cfg.n_out, uid = ov->unit;
  double up = prec_u(p), kap = g->u[uid].kappa, u32 = ldexp(1, -24);
  int one = g->u[uid].kind != U_ONE, ok = 1;
  const unit *ru = &g->u[uid];
  int sz = ru->cat ? ru->nvals : ru->sq ? 2 : 1;
  /* the bound reads only the unit's dimensions and `one`: a column that
  ** weighs any other dimension is not proven here */
  for (int r = 0; r < m->cfg.d_model && p == RASPG_FP32; r++)
    if (r != 1 && (r < ru->dim || r >= ru->dim + sz))
      for (int j = 0; j < no; j++) ok = ok && un[(size_t)r * no + j] == 0;
  double *lg = raspM_alloc(sizeof(double) * (size_t)no);
  double *R = raspM_alloc(sizeof(double) * (size_t)no);
  *mg = INFINITY;
  *nd = 0;
  for (int a = 0; a < ov->nv; a++) {
    if (!ov->ok[a]) continue;
    int right = find(out->out_vals, out->n_out, ov->val[a]);
    double err = 0, big = 0, t, wre;
    for (int j = 0; j < no; j++) {
      float w1 = one ? un[(size_t)1 * no + j] : 0.0f;
      lg[j] = uv_dot(g, uid, a, un, no, j, p, &t, &wre) + w1;
      if (p == RASPG_FP32) {
        int mc = w1 != 0;
        for (int k = 0; k < sz; k++) mc += un[(size_t)(ru->dim + k) * no + j] != 0;
        double tt = t + fabs((double)w1), gr = uv_grain(g, uid, a, un, no, j, w1);
        if (kap == 0 && wre == 0 && gr >= 1 && tt <= ldexp(1, 24) * gr &&
            int_weights(g, uid, un, no, j, one)) {
          /* integer terms on one grain (a power-of-two scale): on exact
          ** inputs the sum is exact.  An input off by e_k moves its term
          ** by |W_k| e_k (P: the propagation, which aerr_cols charges in
          ** the difference) and its product rounds by at most that again
          ** or half an ulp (rho; none by a power of two); each addition
          ** then rounds by no more than the error so far (the exact sum
          ** is a float on the grain) or u times a partial sum: dev_grow's
          ** increments.  R is the roundings alone, rho and those. */
          double P = 0, rho = 0, xa = ru->cat ? 0 : dval(ru->vals[a]);
          for (int k = 0; k < sz; k++) {
            double w = fabs((double)un[(size_t)(ru->dim + k) * no + j]), e = dim_err(g, uid, a, k);
            double x = ru->cat ? (k == a) : k ? xa * xa : xa;
            int ex;
            if (w == 0 || e == 0) continue;
            P += w * e;
            if (frexp(w, &ex) != 0.5) rho += fmin(w * e, u32 * w * (fabs(x) + e));
          }
          double F = P + rho;
          R[j] = F > 0 ? rho + dev_grow_on(F, mc - 1, tt + F, gr) - F : 0;
        }
        else
        R[j] = t * kap * up + wre +
               mc * u32 / (1 - mc * u32) * (t + fabs((double)w1) + aerr_cols(g, uid, a, un, no, j, -1));
      } else {
        double e = t * kap * up + wre + fabs((double)w1 - raspG_round(p, w1)) + up * fabs(lg[j]) +
                   8 * ldexp(1, -24) * (t + fabs((double)w1)) + aerr_val(g, uid, a, un, no, j) +
                   leak_err(g, uid, un, no, j, p);
        if (e > err) err = e;
      }
      if (t > big) big = t;
    }
    for (int j = 0; j < no; j++) {
      if (j == right) continue;
      double lead = lg[right] - lg[j];
      if (lead < *mg) *mg = lead;
      if (p != RASPG_FP32) continue;
      double pe = R[right] + R[j] + aerr_cols(g, uid, a, un, no, right, j);
      if (pe > *nd) *nd = pe;
      if (!(pe < lead)) ok = 0;
    }
    if (p != RASPG_FP32 && 2 * err > *nd) *nd = 2 * err;
    if (p == RASPG_FP16 && big > 65504) ok = 0;
  }
  raspM_free(lg);
  raspM_free(R);
  return ok && (p == RASPG_FP32 || *nd < *mg);
}

static void node_where(const rasp_ir *ir, int node, char *buf, size_t size, int loc) {
  if (node < 0) {
    snprintf(buf, size, "the tokens");
    return;
  }
  const rasp_ir_node *nd = &ir->nodes[node];
  char lab[96] = "";
  if (nd->label) snprintf(lab, sizeof lab, " %s", nd->label);
  if (nd->pos.src && loc)
    snprintf(buf, size, "%%%d%s (%s) at %s:%d:%d", node, lab, raspI_op_name(nd->op),
             nd->pos.src->name, nd->pos.line, nd->pos.col);
  else
    snprintf(buf, size, "%%%d%s (%s)", node, lab, raspI_op_name(nd->op));
}

/* Marks what a fallback can make categorical among unit c's nodes (a
** squared or summed number, a numerical comparison, a head's -(k - q)^2
** selects); returns how many were new. */
static int force_unit(gc *g, int c, unsigned char *force) {
  const unit *u = &g->u[c];
  int nn = g->ir->nnodes, added = 0;
#define MARK(i) do { if (!(force[i] & FORCE_CAT)) force[i] |= FORCE_CAT, added++; } while (0)
  if (u->kind == U_TOK && u->sq) MARK(nn);
  if (u->kind == U_HEAD && u->hmode == H_MOVE) MARK(u->node);
  /* a quantized width not proven: the classic 1/(w + 1) next time */
  if (u->kind == U_HEAD && u->hmode == H_WIDTH && u->qw && !(force[u->node] & FORCE_CLASSIC))
    force[u->node] |= FORCE_CLASSIC, added++;
  if (u->kind == U_MLP && (u->mkind == M_NWHERE || u->mkind == M_NCMP || u->mkind == M_SUM))
    MARK(u->node);
  if (u->kind == U_MLP && u->mkind == M_DECODE && !u->cat) MARK(u->node); /* need_num's */
  if (u->kind == U_HEAD)
    for (int i = 0; i < u->nc; i++)
      if (u->c[i].numeq) MARK(u->c[i].sel);
#undef MARK
  return added;
}

/* fp32: a unit whose values are integers (squares included) within 2^24
** carries its relative error as an absolute one, kappa u max|x| per
** dimension: its readers then sum integers off by a little (dev_grow)
** rather than charge a rounding per addition at the size of their sums. */
static void fold_kappa(gc *g, int i) {
  unit *u = &g->u[i];
  if (u->kappa == 0) return;
  for (int a = 0; a < u->nvals && !u->cat; a++) {
    double x = dval(u->vals[a]);
    if (x != floor(x) || fabs(u->sq ? x * x : x) > ldexp(1, 24)) return;
  }
  for (int k = 0; k < 2; k++) u->ae[k] += u->kappa * ldexp(1, -24) * col_max(g, i, k);
  u->kappa = 0;
}

/* fp32: the most that unit i's dimension k (0: x or a one-hot's every
** dimension, 1: a squared unit's x^2) can hold before it writes it: what
** the units that held that dimension before it left (an erased unit's
** eraser's roundings, or its error where the ReLU clips; an in-place
** where's operand, its whole error), each charged with the error of the
** dimension it had there, not of its others (a squared unit's x^2 error is
** not its x's). */
static double residue(const gc *g, int i, int k) {
  const unit *u = &g->u[i];
  double r = 0;
  int d0 = u->dim + (u->sq ? k : 0), d1 = u->sq ? d0 + 1 : u->dim + usize(u);
  for (int j = 0; j < g->nu; j++) {
    const unit *v = &g->u[j];
    if (j == i || !v->used || v->kind < U_HEAD || v->dim < 0 || v->ready >= u->ready) continue;
    if (v->dim >= d1 || d0 >= v->dim + usize(v)) continue;
    if (!v->done) return INFINITY; /* (fp32 proves in order of writing: not reached) */
    /* the dimensions of v that overlap [d0, d1): its x, its x^2, or both */
    double a = 0, mx = 0, u24 = ldexp(1, -24);
    for (int d = d0 > v->dim ? d0 : v->dim; d < d1 && d < v->dim + usize(v); d++) {
      int c = v->sq && d > v->dim;
      a = fmax(a, v->ae[c]);
      mx = fmax(mx, col_max(g, j, c));
    }
    double kap = v->kappa, e, xe = a + kap * u24 * mx;
    if (u->alias == j) /* its operand: all of it, unless the affine bound
                       ** counted it with the MLP's update (active_od) */
      e = u->ainplace ? 0 : xe;
    else if (exact_erase(g) && !v->cat && v->erase < u->ready)
      e = 0; /* -ReLU(x) + ReLU(-x): exactly -x, and nothing else there */
    else /* x - (x - lo) - lo: x's error cancels; what is left is the
         ** rounding of the partial results (none on exact integers: each
         ** at most the error before it, dev_grow's argument), or x's error
         ** where the ReLU clips (x = lo, off below) */
      e = fmax(a, fmin(4 * u24 * (mx + a), 4 * a)) + 2 * kap * u24 * mx;
    r = fmax(r, e);
  }
  return r;
}

/* fp32: records the first unit the bound does not prove, for --stats. */
static void unproven_note(const gc *g, raspG_model *out, int node, const char *why) {
  char where[256];
  node_where(g->ir, node, where, sizeof where, 1);
  snprintf(out->unproven_at, sizeof out->unproven_at, "%s: %s", where,
           why ? why : "its margin is not proven");
}

static const char *unit_name(gc *g, const unit *u, char *buf, size_t size);

/* The order prove goes in: fp32 in order of writing (ready), so that what
** a unit's dimensions held before it (residue) is proven before it; the
** smallest margins are named as in order of units (the lower one on a
** tie).  Marks every unit not done. */
static int *prove_order(gc *g, int p) {
  int *ord = raspM_alloc(sizeof(int) * (size_t)(g->nu + 1));
  for (int i = 0; i < g->nu; i++) ord[i] = i, g->u[i].done = 0;
  for (int i = 1; i < g->nu && p == RASPG_FP32; i++) /* insertion: stable */
    for (int k = i; k > 0 && g->u[ord[k - 1]].ready > g->u[ord[k]].ready; k--) {
      int t = ord[k];
      ord[k] = ord[k - 1], ord[k - 1] = t;
    }
  return ord;
}

/* Unit i reached: its verdict cleared and its values' relative error
** (kappa) set by its kind. */
static void prove_start(gc *g, int i, int p, const rasp_model *m) {
  unit *u = &g->u[i];
  u->done = 1;
  u->margin = u->need = -1;
  u->leak = u->leak0 = 0;
  u->ae[0] = u->ae[1] = 0;
  u->nzx = 0;
  u->ainplace = 0;
  /* sources come before their readers: kappa is known when read */
  u->kappa = u->kind < U_HEAD         ? embed_kappa(g, i, p)
             : u->kind == U_MLP       ? 1
             : u->hmode == H_WIDTH    ? 4
                                      : m->cfg.max_len / 2.0 + 4; /* a sum of up to n terms */
}

/* Head i's margin (head_margin), the model's largest leak and its smallest
** attention margin (*at_a: whose). */
static int prove_head(gc *g, raspG_model *out, int i, int p, int *at_a) {
  unit *u = &g->u[i];
  rasp_model *m = &out->model;
  int ok = head_margin(g, u, m, p);
  /* (a bound on a weight: at most 1) */
  out->attn_leak = fmin(1, fmax(out->attn_leak, fmax(u->leak, u->leak0)));
  if (u->margin < INFINITY && (out->attn_margin < 0 || u->margin < out->attn_margin ||
                               (u->margin == out->attn_margin && i < *at_a))) {
    out->attn_margin = u->margin, *at_a = i;
    node_where(g->ir, u->node, out->attn_at, sizeof out->attn_at, 1);
  }
  return ok;
}

/* MLP unit i's margin (mlp_margin over its distinct sources) and, in
** fp32, its absolute errors; the model's smallest MLP margin (*at_m:
** whose). */
static int prove_mlp(gc *g, raspG_model *out, int i, int p, int *at_m) {
  unit *u = &g->u[i];
  rasp_model *m = &out->model;
  int src[2 * MAXCOMPS + 4], ns, ok;
  unit_sources(u, src, &ns);
  int k = 0; /* distinct sources */
  for (int a = 0; a < ns; a++) {
    int dup = 0;
    for (int b = 0; b < k; b++) dup |= src[b] == src[a];
    if (!dup) src[k++] = src[a];
  }
  double mg = INFINITY, nd = 0, oe[2] = {0, 0}, ot = 0;
  int ex = 1;
  g->inplace = u->alias >= 0;
  ok = mlp_margin(g, m, u->layer, u->h0, u->h1, src, k, p, &mg, &nd, &ex, &ot);
  u->ainplace = p == RASPG_FP32 && g->inplace && g->od_combo == 2;
  /* its dimensions' share of its hidden units' errors */
  /* and per dimension, the sizes and number of the terms its output
  ** sum adds (mlp_margin) */
  double ots[2] = {0, 0}, ons[2] = {0, 0}, oin[2] = {0, 0}, og[2] = {0, 0};
  const double *otd = g->od + m->cfg.d_model, *ond = otd + m->cfg.d_model,
               *oint = ond + m->cfg.d_model, *ogen = oint + m->cfg.d_model;
  for (int r = u->dim; r < u->dim + usize(u); r++) {
    int c = u->sq && r > u->dim;
    oe[c] = fmax(oe[c], g->od[r]);
    ots[c] = fmax(ots[c], otd[r]);
    ons[c] = fmax(ons[c], ond[r]);
    oin[c] = fmax(oin[c], oint[r]);
    og[c] = fmax(og[c], ogen[r]);
  }
  int vint = 1; /* its values integers the format holds */
  for (int a = 0; a < u->nvals && vint; a++) {
    double x = dval(u->vals[a]);
    vint = u->cat || (x == floor(x) && fabs(u->sq ? x * x : x) <= ldexp(1, prec_bits[p]));
  }
  ex = ex && vint;
  /* (exact sums: everywhere, or at every combination, active_od) */
  if (ex || (vint && g->od_combo && g->od_int)) u->kappa = 0;
  if (g->trace > 1) fprintf(stderr, "  h [%d,%d) oe %g %g ot %g ex %d od-dims:", u->h0, u->h1, oe[0], oe[1], ot, ex);
  for (int r = 0; r < m->cfg.d_model && g->trace > 1; r++) if (g->od[r] > 0) fprintf(stderr, " %d:%g", r, g->od[r]);
  if (g->trace > 1) fprintf(stderr, "\n");
  /* fp32: what its hidden units' errors move its value by (w_out
  ** integers: dev_grow over its hidden units' additions).  Where its
  ** hidden units' exact values are not integers (a decode of a width
  ** or mean, steps of a non-integer input) the partial sums of w_out's
  ** products are not either, and each of the additions rounds by up
  ** to u times a partial sum (at most ot + o), which can be far above
  ** the final value (a step's two hidden units cancel): charged. */
  if (p == RASPG_FP32)
    for (int c = 0; c < 2; c++) {
      int cc = c && u->sq;
      double o = oe[cc], T = ots[cc];
      int nt = (int)ons[cc];
      u->ae[c] = ex ? (o > 0 ? dev_grow(o, nt, T + o) : 0)
                    : o + (nt + 1) * ldexp(1, -24) * (1 + ldexp(1, -20)) * (T + o);
      /* per combination of source values (active_od), the same over
      ** the units that are not 0 there */
      if (g->od_combo) u->ae[c] = fmin(u->ae[c], ex ? oin[cc] : og[cc]);
    }
  u->margin = mg < INFINITY ? mg : -1;
  u->need = nd;
  if (mg < INFINITY && (out->mlp_margin < 0 || mg < out->mlp_margin ||
                        (mg == out->mlp_margin && i < *at_m))) {
    out->mlp_margin = mg, *at_m = i;
    node_where(g->ir, u->node, out->mlp_at, sizeof out->mlp_at, 1);
  }
  return ok;
}

/* fp32: unit i's errors grown by what its dimensions held before it
** (residue), and whether it is exact at its nonzero values (nz_exact);
** returns ok, cleared for a quantized width that lands on a residue. */
static int prove_residue(gc *g, int i, int ok) {
  unit *u = &g->u[i];
  /* (its eraser, ReLU(x - lo) + lo, is exact or off by at most the error
  ** x carries: no margin to prove; but what it leaves in the dimensions
  ** (and what an in-place where adds to) is where the next unit lands:
  ** fp32 counts it, a sum on integers off by a little (dev_grow)) */
  fold_kappa(g, i);
  for (int k = 0; k < 2; k++) { /* r + its value, rounded once */
    double r = residue(g, i, k);
    if (g->trace > 1) fprintf(stderr, "  ae[%d] before residue %g, residue %g\n", k, u->ae[k], r);
    if (r > 0 || u->ainplace)
      u->ae[k] += r + fmin(u->ae[k] + r, ldexp(1, -24) * (col_max(g, i, k) + u->ae[k] + r));
    /* a quantized width is rounded to its integer by the same sums
    ** that add what its dimension held: anything there could carry
    ** the head's qv fl(1/(w + 1)) across a half, so none is allowed */
    if (u->qw && r > 0 && ok)
      ok = 0, u->why = "its dimension holds what an earlier unit left (a quantized width "
                       "needs it empty)";
  }
  u->nzx = ok && nz_exact(g, i);
  return ok;
}

/* Proof-driven fp32 after a failure: raises the gain in saved (the force
** entries before this proof) of every head whose leak is not negligible
** or that is not proven.  Returns how many. */
static int prove_sharpen(gc *g, unsigned char *saved) {
  int raised = 0;
  for (int i = 0; i < g->nu; i++) {
    const unit *u = &g->u[i];
    if (!u->used || u->kind != U_HEAD || u->node < 0 || force_gain(saved[u->node]) >= FORCE_GAIN_MAX)
      continue;
    /* the leak's share of its error (head_margin) more than rounding's
    ** smallest grain, or not bounded (a head reading what was not
    ** proven): every such head at once, so that one gain serves all */
    if (!u->proven || !(u->leak * unit_max(g, i) <= ldexp(1, -60))) saved[u->node] += 2, raised++;
  }
  return raised;
}

/* Nothing left to make categorical: refuses the compile (RASP_E_INEXACT)
** at unit fail (failsrc its sources, -1 the readout, margin rmg and
** rounding rnd), naming the numerical unit read (a mean or a width), else
** the unit itself.  Returns -1. */
static int prove_refuse(gc *g, int p, int fail, int failsrc, double rmg, double rnd) {
  int src[2 * MAXCOMPS + 4], ns;
  const unit *u = &g->u[fail];
  int culprit = fail;
  if (failsrc > 0) {
    unit_sources(u, src, &ns);
    for (int k = 0; k < ns; k++)
      if (!g->u[src[k]].cat && g->u[src[k]].kind == U_HEAD) culprit = src[k];
  }
  const unit *c = &g->u[culprit];
  char where[192];
  node_where(g->ir, c->node, where, sizeof where, 0);
  char reader[192] = "";
  if (culprit != fail) {
    if (u->kind == U_MLP && u->mkind == M_DECODE && u->node == c->node)
      snprintf(reader, sizeof reader, "the MLP decoding them");
    else
      node_where(g->ir, u->node, reader, sizeof reader, 1);
    if (c->node >= 0)
      raspR_setc(g->err, RASP_E_INEXACT, g->ir->nodes[c->node].pos,
                 "compile: %s cannot be compiled exactly in %s: its values are too close "
                 "together (%s reads them with margin %.3g, and rounding can move that by up to "
                 "%.3g), and it has no categorical encoding",
                 where, raspG_precision_name(p), reader, u->margin, u->need);
  } else if (c->node >= 0)
    raspR_setc(g->err, RASP_E_INEXACT, g->ir->nodes[c->node].pos,
               "compile: %s cannot be compiled exactly in %s: %s (margin %.3g, rounding up to "
               "%.3g), and it has no categorical encoding",
               where, raspG_precision_name(p),
               failsrc < 0 ? "rounding can move the logits by more than their margin"
                           : u->why ? u->why : "its margin is not proven",
               failsrc < 0 ? rmg : u->margin, failsrc < 0 ? rnd : u->need);
  else
    raspR_setnoposc(g->err, RASP_E_INEXACT, "compile: %s cannot be compiled exactly in %s",
                    where, raspG_precision_name(p));
  return -1;
}

/* Proves every used unit and the readout at the target precision.  0: all
** proven; 1: force updated (compile again); -1: refused, err set. */
static int prove(gc *g, raspG_model *out, const view *ov, int p, unsigned char *force) {
  rasp_model *m = &out->model;
  int src[2 * MAXCOMPS + 4], ns, fail = -1, failsrc = 0, added = 0;
  out->attn_margin = out->mlp_margin = -1;
  out->attn_leak = 0;
  g->od = raspM_alloc(sizeof(double) * (size_t)m->cfg.d_model * 5);
  /* fp32 proof-driven: before any node is made categorical, the heads
  ** whose leak puts an error on their values are sharpened (rescaling):
  ** their errors are what every later rounding bound grows from */
  int rescale = proof_driven(g);
  unsigned char *saved = NULL;
  if (rescale) {
    saved = raspM_alloc((size_t)g->ir->nnodes + 1);
    memcpy(saved, force, (size_t)g->ir->nnodes + 1);
  }
  int *ord = prove_order(g, p), at_a = -1, at_m = -1;
  for (int oi = 0; oi < g->nu; oi++) {
    int i = ord[oi];
    unit *u = &g->u[i];
    prove_start(g, i, p, m);
    if (!u->used || u->kind < U_HEAD) continue;
    int ok = u->kind == U_HEAD ? prove_head(g, out, i, p, &at_a) : prove_mlp(g, out, i, p, &at_m);
    if (p == RASPG_FP32) ok = prove_residue(g, i, ok);
    if (!ok && u->kind == U_MLP) u->why = "rounding can push a hidden unit across its hinge";
    if (ok && p == RASPG_FP16 && unit_max(g, i) > 65504)
      ok = 0, u->why = "its values exceed fp16's largest number, 65504";
    out->checked++;
    u->proven = ok;
    if (g->trace) {
      char nb[96];
      fprintf(stderr, "prove %-24s %s%s L%d ok=%d kappa=%g ae=[%g %g] nzx=%d margin=%g need=%g leak=%g%s%s\n",
              unit_name(g, u, nb, sizeof nb), u->kind == U_HEAD ? "head" : "mlp ",
              u->cat ? "" : u->sq ? "(x,x2)" : "(x)", u->layer, ok, u->kappa, u->ae[0], u->ae[1],
              u->nzx, u->margin, u->need, u->leak, ok ? "" : " why: ", ok ? "" : u->why ? u->why : "?");
    }
    if (!ok && p == RASPG_FP32 && !g->o->require_proof) { /* reported, not acted on: see above */
      if (!out->unproven++) unproven_note(g, out, u->node, u->why);
      continue;
    }
    if (!ok) {
      unit_sources(u, src, &ns);
      added += force_unit(g, i, force);
      for (int k = 0; k < ns; k++) added += force_unit(g, src[k], force);
      if (fail < 0) fail = i, failsrc = ns;
    }
  }
  raspM_free(ord);
  raspM_free(g->od);
  g->od = NULL;
  double rmg, rnd;
  int rok = readout_margin(g, out, ov, p, &rmg, &rnd);
  out->checked++;
  if (!rok && p == RASPG_FP32 && !g->o->require_proof) {
    if (!out->unproven++) unproven_note(g, out, g->u[ov->unit].node, "the readout's logit margin");
  }
  else if (!rok) {
    added += force_unit(g, ov->unit, force);
    if (fail < 0) fail = ov->unit, failsrc = -1;
  }
  if (g->u[0].sq && p == RASPG_FP16 && unit_max(g, 0) > 65504) added += force_unit(g, 0, force);
  if (rescale && (fail >= 0 || added)) {
    int raised = prove_sharpen(g, saved);
    if (raised) memcpy(force, saved, (size_t)g->ir->nnodes + 1), added = raised;
  }
  raspM_free(saved);
  if (fail < 0 && !added) return 0;
  if (added) return 1;
  return prove_refuse(g, p, fail, failsrc, rmg, rnd);
}

/* ---- a noise bound composed over the units ---------------------------------
** The per-dimension bound (raspG_noise_bound, below) propagates intervals,
** which add up where values cancel.  This one starts from the value sets:
** at every point of the forward pass each residual dimension holds a known
** unit (or nothing), whose values bound its magnitude exactly (Mag), and
** what is carried is only the error E[d] of the perturbed float32 pass
** (every parameter moved by at most eps) against the values (non-BOS
** positions; E0 at BOS).  With S = sum_d (Mag[d] + E[d]) + 1 and
** g_k = k u / (1 - k u):
**   a linear read y = sum_r w_r x_r + b is off by sum |w_r| E[r] + eps S +
**     g_(D+1) sum |w_r| (Mag[r] + E[r]) (a perturbed weight meets every
**     dimension; the float32 sum's rounding);
**   a head: every score is off by at most delta (its query and key
**     columns' errors times the other side's size, the dot product's and
**     the scaling's rounding), so with its design gap G (the attention
**     margin) the selected keys still win while 2 delta < G, the weight
**     leaking past them is at most (n + 1) e^-(G - 2 delta) (logits), and
**     an averaging head's selected weights differ by at most e^(2 delta);
**     its output column is off by the value column's error, the leak times
**     the range of the values, for an average (e^(2 delta) - 1) times it,
**     and the softmax's and weighted sum's rounding ((n + 5) u of the
**     values); W_o then adds |W_o| times that, and its perturbation eps
**     times the head's output size to every dimension, padding heads too;
**   an MLP hidden unit h is off by delta_h (a linear read); over the value
**     sets its pre-activation is at most zmax_h, so where zmax_h <= -delta_h
**     it stays exactly 0, and elsewhere ReLU moves it by at most delta_h;
**     the output dimension d is off by sum_h |W_out[h][d]| delta_h over the
**     units that can be on, plus eps (sum_h (zmax_h+ + delta_h) + 1) on every
**     dimension (perturbed zeros included) and the sums' rounding;
**   at BOS every hidden unit but the undo is off by at least its BOS gate
**     (checked: the bound fails if delta_h reaches it) and every head
**     attends BOS alone;
**   each addition to the residual adds u (Mag + E).
** The readout's logit for value v is off by a linear read's error; every
** output stays right while twice that is below the readout's margin (the
** right logit's lead over every other, from the value sets); as for the
** per-dimension bound, a quarter is demanded.  Sound for
** any input of the compiled length, as the per-dimension bound; tighter
** because magnitudes come from the value sets and a unit that is off stays
** off, not because errors are reset: a step read on its hinge passes its
** input error on. */

typedef struct cbs {
  gc *g;
  raspG_model *out;
  double eps, u;
  int D;
  double *Mag, *E, *E0, *Mag0;
  double S, S0; /* the current sublayer's input sizes */
} cbs;

static double cb_gam(double u, double k) { return k * u < 0.5 ? k * u / (1 - k * u) : 1e300; }

/* The error of column col of W (rows: residual dims, ld) read at a non-BOS
** position (bos = 0) or at BOS (bos = 1); *T gets sum |w| (Mag + E). */
static double cb_read(const cbs *s, const float *W, int ld, int col, double S, int bos, double *T) {
  double e = 0, t = 0;
  const double *E = bos ? s->E0 : s->E, *M = bos ? s->Mag0 : s->Mag;
  for (int r = 0; r < s->D; r++) {
    double w = fabs((double)W[(size_t)r * ld + col]);
    if (w == 0) continue;
    e += w * E[r];
    t += w * (M[r] + E[r]);
  }
  *T = t;
  return e + s->eps * S + cb_gam(s->u, s->D + 1) * (t + s->eps * S);
}

static double cb_colerr(const gc *g, const float *W, int ld, int col, int bos, double *T) {
  const cbs *s = g->cb;
  return cb_read(s, W, ld, col, bos ? s->S0 : s->S, bos, T);
}

static double cb_sum(const double *M, const double *E, int D) {
  double S = 1;
  for (int r = 0; r < D; r++) S += M[r] + E[r];
  return S;
}

/* Magnitude of unit uid's dimension k. */
static double cb_dim_mag(const gc *g, int uid, int k) {
  const unit *s = &g->u[uid];
  if (s->cat) return 1;
  double m = 0;
  for (int a = 0; a < s->nvals; a++) {
    double x = fabs(dval(s->vals[a]));
    m = fmax(m, s->sq && k ? x * x : x);
  }
  return m;
}

static void cb_place(cbs *s, int uid, int on) {
  const unit *u = &s->g->u[uid];
  if (!u->used || u->dim < 0) return;
  for (int k = 0; k < usize(u); k++) s->Mag[u->dim + k] = on ? cb_dim_mag(s->g, uid, k) : 0;
}

/* The largest pre-activation of hidden unit h over the value sets of its
** sources src[0..ns) (and ONE when not among them). */
static double cb_zmax(const gc *g, const float *wi, const float *bi, int F, int h, const int *src,
                      int ns) {
  int has_one = 0;
  for (int k = 0; k < ns; k++) has_one |= g->u[src[k]].kind == U_ONE;
  double z = (double)bi[h] + (has_one ? 0 : (double)wi[(size_t)1 * F + h]), t, wre;
  for (int k = 0; k < ns; k++) {
    double mx = -INFINITY;
    for (int a = 0; a < g->u[src[k]].nvals; a++)
      mx = fmax(mx, uv_dot(g, src[k], a, wi, F, h, RASPG_FP32, &t, &wre));
    if (g->u[src[k]].nvals) z += mx;
  }
  return z;
}

/* The MLP unit's hidden units [h0, h1) over every combination of its
** sources' values (at most a few million steps): per combination, the units
** surely on (z > delta) pass their input errors through their summed
** gradient, sum_h W_out[h][d] W_in[r][h], which is 0 where a saturated step
** has both of its units on; units near their hinge (|z| <= delta) add
** |W_out| delta; those surely off add nothing.  Adds the largest error per
** output dimension to oe; 0 (nothing added) when there are too many. */
static int cb_mlp_combos(cbs *s, const float *wi, const float *bi, const float *wt, int F, int h0,
                         int h1, const int *src, int ns, double S, double *oe) {
  gc *g = s->g;
  int D = s->D, nh = h1 - h0;
  if (nh <= 0) return 1;
  double combos = 1;
  for (int k = 0; k < ns; k++) combos *= g->u[src[k]].nvals ? g->u[src[k]].nvals : 1;
  /* rows read and dims written */
  int *rows = raspM_alloc(sizeof(int) * (size_t)D * 2), *outs = rows + D, nr = 0, no = 0;
  for (int r = 0; r < D; r++) {
    int any = 0, anyo = 0;
    for (int h = h0; h < h1; h++) {
      any |= wi[(size_t)r * F + h] != 0;
      anyo |= wt[(size_t)h * D + r] != 0;
    }
    if (any) rows[nr++] = r;
    if (anyo) outs[no++] = r;
  }
  if (combos * nh * (nr + 1) * (no + 1) > 3e7 || combos > 1e6) {
    raspM_free(rows);
    return 0;
  }
  double *z = raspM_alloc(sizeof(double) * (size_t)nh * 4), *din = z + nh, *dw = din + nh,
         *zb = dw + nh;
  int has_one = 0;
  for (int k = 0; k < ns; k++) has_one |= g->u[src[k]].kind == U_ONE;
  for (int h = h0; h < h1; h++) {
    double e = 0, t = 0;
    for (int r = 0; r < D; r++) {
      double w = fabs((double)wi[(size_t)r * F + h]);
      e += w * s->E[r];
      t += w * (s->Mag[r] + s->E[r]);
    }
    din[h - h0] = e;
    dw[h - h0] = s->eps * S + cb_gam(s->u, D + 1) * (t + s->eps * S) + s->u * t;
    zb[h - h0] = (double)bi[h] + (has_one ? 0 : (double)wi[(size_t)1 * F + h]);
  }
  int *idx = raspM_alloc(sizeof(int) * (size_t)(ns + 1));
  double *grad = raspM_alloc(sizeof(double) * (size_t)(nr ? nr : 1));
  for (;;) {
    double t, wre;
    for (int h = 0; h < nh; h++) {
      z[h] = zb[h];
      for (int k = 0; k < ns; k++)
        if (g->u[src[k]].nvals) z[h] += uv_dot(g, src[k], idx[k], wi, F, h0 + h, RASPG_FP32, &t, &wre);
    }
    for (int o = 0; o < no; o++) {
      int d = outs[o];
      double err = 0;
      for (int q = 0; q < nr; q++) grad[q] = 0;
      for (int h = 0; h < nh; h++) {
        double w = (double)wt[(size_t)(h0 + h) * D + d], dl = din[h] + dw[h];
        if (w == 0 || z[h] < -dl) continue;
        if (z[h] <= dl) { /* near its hinge */
          err += fabs(w) * dl;
          continue;
        }
        err += fabs(w) * dw[h] + cb_gam(s->u, F + 1) * fabs(w) * (z[h] + dl);
        for (int q = 0; q < nr; q++) grad[q] += w * (double)wi[(size_t)rows[q] * F + h0 + h];
      }
      for (int q = 0; q < nr; q++) err += fabs(grad[q]) * s->E[rows[q]];
      if (err > oe[d]) oe[d] = err;
    }
    int k = 0;
    while (k < ns && ++idx[k] >= (g->u[src[k]].nvals ? g->u[src[k]].nvals : 1)) idx[k++] = 0;
    if (k == ns) break;
  }
  raspM_free(idx);
  raspM_free(grad);
  raspM_free(z);
  raspM_free(rows);
  return 1;
}

/* The largest logit deviation over the margin's half (< 1: every output
** right), or 1e300 when a step of the bound fails. */
static double cb_run(gc *g, raspG_model *out, const view *ov, double eps, double u) {
  rasp_model *m = &out->model;
  const rasp_model_config *c = &m->cfg;
  int D = c->d_model, H = c->n_heads, dh = c->d_head, F = c->d_mlp, n = c->max_len;
  cbs s = {g, out, eps, u, D, NULL, NULL, NULL, NULL, 0, 0};
  s.Mag = raspM_alloc(sizeof(double) * (size_t)D * 4);
  s.E = s.Mag + D, s.E0 = s.E + D, s.Mag0 = s.E0 + D;
  double *oe = raspM_alloc(sizeof(double) * (size_t)D * 2), *oe0 = oe + D;
  double *ehv = raspM_alloc(sizeof(double) * (size_t)(dh + 1) * 2), *ehv0 = ehv + dh + 1;
  double res = 0;
  int fail = 0;
  for (int i = 0; i < 3; i++) cb_place(&s, i, 1);
  s.Mag0[0] = 1;
  /* the embedding: two perturbed entries and one rounded sum per dimension */
  for (int r = 0; r < D; r++) {
    s.E[r] = 2 * eps + u * (s.Mag[r] + 2 * eps);
    s.E0[r] = 2 * eps + u * (s.Mag0[r] + 2 * eps);
  }
  double lsc = (double)(1.0f / sqrtf((float)dh));
  char nm[64];
  for (int l = 0; l < c->n_layers && !fail; l++) {
    /* ---- attention */
    snprintf(nm, sizeof nm, "layers.%d.attn.w_q", l);
    const float *wq = raspN_data(m, nm);
    snprintf(nm, sizeof nm, "layers.%d.attn.w_k", l);
    const float *wk = raspN_data(m, nm);
    snprintf(nm, sizeof nm, "layers.%d.attn.w_v", l);
    const float *wv = raspN_data(m, nm);
    snprintf(nm, sizeof nm, "layers.%d.attn.w_o", l);
    const float *wo = raspN_data(m, nm);
    double S = cb_sum(s.Mag, s.E, D), S0 = cb_sum(s.Mag0, s.E0, D), bg = eps, bg0 = eps;
    for (int r = 0; r < D; r++) oe[r] = oe0[r] = 0;
    for (int hd = 0; hd < H; hd++) {
      unit *hu = NULL;
      for (int i = 0; i < g->nu; i++)
        if (g->u[i].used && g->u[i].kind == U_HEAD && g->u[i].layer == l && g->u[i].hslot == hd)
          hu = &g->u[i];
      size_t off = (size_t)hd * D * dh;
      double delta = 0, delta0 = 0, dbq = 0, hvsum = 0, hvsum0 = 0, T, T2, sabs = 0, sabq = 0;
      /* score error: columns' errors times the other side's size (dbq: of
      ** the BOS query, against any key) */
      for (int j = 0; j < dh; j++) {
        double eq = cb_read(&s, wq + off, dh, j, S, 0, &T), ek = cb_read(&s, wk + off, dh, j, S, 0, &T2);
        double ek0, T3, Tq0, eq0 = cb_read(&s, wq + off, dh, j, S0, 1, &Tq0);
        ek0 = cb_read(&s, wk + off, dh, j, S0, 1, &T3);
        delta += eq * (T2 + ek) + T * ek + cb_gam(u, dh) * T * T2;
        delta0 += eq * (T3 + ek0) + T * ek0 + cb_gam(u, dh) * T * T3;
        dbq += eq0 * (fmax(T2, T3) + fmax(ek, ek0)) + Tq0 * fmax(ek, ek0) +
               cb_gam(u, dh) * Tq0 * fmax(T2, T3);
        sabs += T * fmax(T2, T3);
        sabq += Tq0 * fmax(T2, T3);
      }
      /* the scaling's and the max subtraction's rounding */
      delta = lsc * (delta + 2 * u * sabs);
      delta0 = lsc * (delta0 + 2 * u * sabs);
      dbq = lsc * (dbq + 2 * u * sabq);
      double dmax = fmax(delta, delta0);
      if (hu) {
        /* the head's own analysis (head_margin) with these errors: per key
        ** and query value, the gap left, the leak and the spread */
        double sm = hu->margin, sn = hu->need, sl = hu->leak, sl0 = hu->leak0, ss = hu->spread;
        const char *sw = hu->why;
        g->cb = &s;
        s.S = S, s.S0 = S0;
        head_margin(g, hu, m, RASPG_FP32);
        g->cb = NULL;
        double G = hu->margin, Gp = hu->margin - hu->need, leak = hu->leak, spread = hu->spread;
        hu->margin = sm, hu->need = sn, hu->leak = sl, hu->leak0 = sl0, hu->spread = ss;
        hu->why = sw;
        if (G < INFINITY && !(Gp > 0)) fail = 1;
        /* at BOS: only BOS's key scores (its gate, head_margin's leak0),
        ** every score moved by at most dbq */
        double leak0 = (double)n *
                       exp(-((double)(wq + off)[hu->bcol] * (wk + off)[hu->bcol] * lsc - 2 * dbq));
        (void)dmax;
        int self = (int)(hu - g->u), avg = hu->hmode == H_WIDTH || hu->hmode == H_NUM;
        double vrange = 2 * unit_max(g, self);
        for (int cc = 0; cc < dh; cc++) {
          double ev = cb_read(&s, wv + off, dh, cc, S, 0, &T), ev0 = cb_read(&s, wv + off, dh, cc, S0, 1, &T2);
          double e = ev + leak * vrange + (n + 5) * u * T;
          if (avg) e += (exp(spread) - 1) * vrange;
          ehv[cc] = e;
          ehv0[cc] = ev0 + (vrange > 0 ? leak0 * vrange : 0) + (n + 5) * u * T2;
          hvsum += T + e;
          hvsum0 += T2 + ehv0[cc];
        }
      } else
        for (int cc = 0; cc < dh; cc++) {
          ehv[cc] = cb_read(&s, wv + off, dh, cc, S, 0, &T) + T;
          ehv0[cc] = cb_read(&s, wv + off, dh, cc, S0, 1, &T2) + T2;
          hvsum += T + ehv[cc], hvsum0 += T2 + ehv0[cc];
        }
      const float *who = wo + (size_t)hd * dh * D;
      for (int d = 0; d < D; d++)
        for (int cc = 0; cc < dh; cc++) {
          double w = fabs((double)who[(size_t)cc * D + d]);
          oe[d] += w * ehv[cc];
          oe0[d] += w * ehv0[cc];
        }
      bg += eps * (hvsum + 1);
      bg0 += eps * (hvsum0 + 1);
    }
    for (int i = 0; i < g->nu; i++)
      if (g->u[i].used && g->u[i].kind == U_HEAD && g->u[i].layer == l) {
        cb_place(&s, i, 1);
        const unit *hu = &g->u[i];
        for (int k = 0; k < usize(hu); k++)
          s.Mag0[hu->dim + k] = hu->cat ? 1 : fabs(dval(hu->dflt)) * (hu->sq && k ? fabs(dval(hu->dflt)) : 1) + (hu->hmode == H_WIDTH ? qwidth_bos(hu) : 0);
      }
    for (int r = 0; r < D; r++) {
      s.E[r] += oe[r] + bg + u * (s.Mag[r] + s.E[r] + oe[r] + bg);
      s.E0[r] += oe0[r] + bg0 + u * (s.Mag0[r] + s.E0[r] + oe0[r] + bg0);
    }
    /* ---- MLP */
    snprintf(nm, sizeof nm, "layers.%d.mlp.w_in", l);
    const float *wi = raspN_data(m, nm);
    snprintf(nm, sizeof nm, "layers.%d.mlp.b_in", l);
    const float *bi = raspN_data(m, nm);
    snprintf(nm, sizeof nm, "layers.%d.mlp.w_out", l);
    const float *wt = raspN_data(m, nm);
    S = cb_sum(s.Mag, s.E, D), S0 = cb_sum(s.Mag0, s.E0, D);
    double act = 0;
    for (int r = 0; r < D; r++) oe[r] = oe0[r] = 0;
    unsigned char *done = raspM_alloc((size_t)F + 1);
    int src[2 * MAXCOMPS + 4], ns;
    for (int i = 0; i < g->nu; i++) {
      unit *uu = &g->u[i];
      if (!uu->used) continue;
      for (int part = 0; part < 2; part++) {
        int h0 = part ? uu->e0 : uu->h0, h1 = part ? uu->e1 : uu->h1;
        int lay = part ? uu->erase / 2 - 1 : uu->layer;
        if ((part ? !uu->erase : uu->kind != U_MLP) || lay != l) continue;
        if (part) src[0] = i, ns = 1;
        else unit_sources(uu, src, &ns);
        { /* distinct sources */
          int k2 = 0;
          for (int a2 = 0; a2 < ns; a2++) {
            int dup = 0;
            for (int b2 = 0; b2 < k2; b2++) dup |= src[b2] == src[a2];
            if (!dup) src[k2++] = src[a2];
          }
          ns = k2;
        }
        if (cb_mlp_combos(&s, wi, bi, wt, F, h0, h1, src, ns, S, oe)) {
          /* per combination of values: errors cancel through the units on */
          for (int h = h0; h < h1; h++) {
            double T, dl = cb_read(&s, wi, F, h, S, 0, &T), T0, dl0 = cb_read(&s, wi, F, h, S0, 1, &T0);
            double zmax = cb_zmax(g, wi, bi, F, h, src, ns);
            done[h] = 1;
            double pre0 = (double)bi[h] + wi[h];
            for (int r = 2; r < D; r++) pre0 += s.Mag0[r] * fabs((double)wi[(size_t)r * F + h]);
            if (pre0 > -dl0) fail = 1;
            if (zmax > -dl - u * T) act += fmax(zmax, 0) + dl + u * T;
          }
          continue;
        }
        for (int h = h0; h < h1; h++) {
          double T, dl = cb_read(&s, wi, F, h, S, 0, &T), T0, dl0 = cb_read(&s, wi, F, h, S0, 1, &T0);
          dl += u * T; /* the hidden sum's result */
          double zmax = cb_zmax(g, wi, bi, F, h, src, ns);
          done[h] = 1;
          /* at BOS: off by its gate */
          double pre0 = (double)bi[h] + wi[h];
          for (int r = 2; r < D; r++) pre0 += s.Mag0[r] * fabs((double)wi[(size_t)r * F + h]);
          if (pre0 > -dl0) fail = 1;
          if (zmax <= -dl) continue;
          act += fmax(zmax, 0) + dl;
          for (int d = 0; d < D; d++) {
            double w = fabs((double)wt[(size_t)h * D + d]);
            if (w != 0) oe[d] += w * dl + cb_gam(u, F + 1) * w * (fmax(zmax, 0) + dl);
          }
        }
      }
    }
    /* the BOS undo (hidden unit 0 where the layer has heads): ReLU(is_bos),
       0 elsewhere up to its error; every other unknown hidden unit (padding)
       reads noise only */
    for (int h = 0; h < F; h++) {
      if (done[h]) continue;
      double T, dl = cb_read(&s, wi, F, h, S, 0, &T) + fabs((double)bi[h]) , T0, dl0 = cb_read(&s, wi, F, h, S0, 1, &T0);
      act += dl;
      for (int d = 0; d < D; d++) {
        double w = fabs((double)wt[(size_t)h * D + d]);
        if (w != 0) oe[d] += w * dl, oe0[d] += w * dl0;
      }
    }
    raspM_free(done);
    double bgm = eps * (act + 1);
    /* units written or erased here */
    for (int i = 0; i < g->nu; i++) {
      const unit *uu = &g->u[i];
      if (!uu->used) continue;
      if (uu->kind == U_MLP && uu->layer == l && uu->alias < 0) cb_place(&s, i, 1);
      if (uu->erase && uu->erase / 2 - 1 == l) cb_place(&s, i, 0);
      if (uu->kind == U_HEAD && uu->layer == l)
        for (int k = 0; k < usize(uu); k++) s.Mag0[uu->dim + k] = 0;
    }
    for (int r = 0; r < D; r++) {
      s.E[r] += oe[r] + bgm + u * (s.Mag[r] + s.E[r] + oe[r] + bgm);
      s.E0[r] += oe0[r] + bgm + u * (s.Mag0[r] + s.E0[r] + oe0[r] + bgm);
    }
  }
  if (!fail) {
    const float *un = raspN_data(m, "unembed");
    double S = cb_sum(s.Mag, s.E, D), mg, nd, T;
    readout_margin(g, out, ov, RASPG_FP32, &mg, &nd);
    for (int j = 0; j < c->n_out; j++) {
      double e = cb_read(&s, un, c->n_out, j, S, 0, &T) + u * T;
      res = fmax(res, 4 * e / mg); /* below a quarter of the lead, as raspG_noise_bound */
      out->cb_dev = fmax(out->cb_dev, e);
    }
  }
  raspM_free(s.Mag);
  raspM_free(oe);
  raspM_free(ehv);
  return fail || !(res < 1e300) ? 1e300 : res;
}

/* The compositional bound at float32: the rounding-only deviation ratio and
** the largest eps (bisection on a log scale) that keeps it below 1. */
static void cb_bound(gc *g, raspG_model *out, const view *ov) {
  double u = RASPG_FP32_U;
  out->cb_dev = 0;
  double r0 = cb_run(g, out, ov, 0, u);
  out->cb_dev0 = r0 < 1 ? out->cb_dev : -1;
  out->cb_eps = 0;
  if (!(r0 < 1)) return;
  double lo = -30, hi = 0;
  if (cb_run(g, out, ov, 1, u) < 1) {
    out->cb_eps = 1;
    return;
  }
  for (int it = 0; it < 40; it++) {
    double mid = (lo + hi) / 2;
    if (cb_run(g, out, ov, pow(10, mid), u) < 1) lo = mid;
    else hi = mid;
  }
  out->cb_eps = lo <= -30 ? 0 : pow(10, lo);
}

/* ---- the layout as JSON ------------------------------------------------- */

typedef struct sbuf {
  char *s;
  size_t len, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (b->len + (size_t)k + 1 > b->cap) {
    b->cap = (b->len + (size_t)k + 1) * 2;
    b->s = raspM_realloc(b->s, b->cap);
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, (size_t)k + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)k;
}
static void sb_str(sbuf *b, const char *s) {
  sb_printf(b, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') sb_printf(b, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) sb_printf(b, "\\u%04x", *s);
    else sb_printf(b, "%c", *s);
  }
  sb_printf(b, "\"");
}
static void sb_elem(sbuf *b, const rasp_ir *ir, rasp_elem e) {
  char buf[256];
  raspI_elem_format(ir, e, buf, sizeof buf);
  sb_str(b, buf);
}

static const char *unit_name(gc *g, const unit *u, char *buf, size_t size) {
  if (u->kind == U_TOK) return "tokens";
  if (u->kind == U_IDX) return "indices";
  if (u->kind == U_ONE) return "one";
  const rasp_ir_node *nd = &g->ir->nodes[u->node];
  snprintf(buf, size, "%s%%%d%s%s", u->kind == U_MLP && u->mkind == M_DECODE ? "decode:" : "",
           u->node, nd->label ? ":" : "", nd->label ? nd->label : "");
  return buf;
}

static char *layout_json(gc *g, const raspG_model *m, int root, const view *ov) {
  sbuf b = {0};
  char nb[256];
  /* dims[k] names residual dimension k: is_bos, one, then every unit that
  ** holds it in the order they are written, " | " between them (a dead
  ** unit's dimensions are reused; in-place units share their operand's) */
  sb_printf(&b, "{\"bos_token\": %d, \"input_offset\": 1, \"n\": %d, \"precision\": \"%s\", ",
            m->model.cfg.bos_token, g->n, raspG_precision_name(m->precision));
  /* the gain (--attn-gain), the score scale it gave and the leak it
  ** allows: per key at the smallest margin, and the proven total */
  sb_printf(&b, "\"attention\": {\"gain\": %.17g, \"score_scale\": %.17g, ", m->attn_gain,
            m->score_scale);
  if (m->attn_margin >= 0)
    sb_printf(&b, "\"leak_per_key\": %.6g, \"leak\": %.6g}, ", exp(-m->attn_margin), m->attn_leak);
  else
    sb_printf(&b, "\"leak_per_key\": null, \"leak\": null}, ");
  sb_printf(&b, "\"dims\": [\"is_bos\", \"one\"");
  for (int dim = 2; dim < m->n_dims; dim++) {
    sbuf nm = {0};
    for (int i = 0; i < g->nu; i++) {
      unit *u = &g->u[i];
      if (!u->used || u->kind == U_ONE || u->alias >= 0) continue;
      int k = dim - u->dim;
      if (k < 0 || k >= usize(u)) continue;
      const char *name = unit_name(g, u, nb, sizeof nb);
      char eb[128];
      if (u->kind == U_TOK && u->cat && g->o->token_names && u->vals[k].num >= 0 &&
          u->vals[k].num <= g->o->nvocab && g->o->token_names[u->vals[k].num])
        snprintf(eb, sizeof eb, "%s", g->o->token_names[u->vals[k].num]);
      else if (u->cat)
        raspI_elem_format(g->ir, u->vals[k], eb, sizeof eb);
      else
        snprintf(eb, sizeof eb, "%s",
                 u->sq ? (k ? "x^2" : "x") : u->hmode == H_WIDTH ? (u->qw ? "2^23+qv/(w+1)" : "1/(w+1)") : "mean");
      sb_printf(&nm, "%s%s=%s", nm.len ? " | " : "", name, eb);
    }
    sb_printf(&b, ", ");
    sb_str(&b, nm.s ? nm.s : "");
    raspM_free(nm.s);
  }
  sb_printf(&b, "], \"units\": [");
  int first = 1;
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (!u->used) continue;
    static const char *kinds[] = {"tokens", "indices", "one", "head", "mlp"};
    sb_printf(&b, "%s{\"name\": ", first ? "" : ", ");
    first = 0;
    sb_str(&b, unit_name(g, u, nb, sizeof nb));
    sb_printf(&b, ", \"kind\": \"%s\", \"encoding\": \"%s\", \"dim\": %d, \"size\": %d, "
                  "\"layer\": %d, \"erased_at_layer\": %d%s",
              kinds[u->kind], u->cat ? "categorical" : u->sq ? "numerical+square" : "numerical",
              u->dim, u->cat ? u->nvals : u->sq ? 2 : 1, u->kind >= U_HEAD ? u->layer : -1,
              u->erase ? u->erase / 2 - 1 : -1,
              u->alias >= 0 ? ", \"in_place\": true" : "");
    /* the proven margin (heads: score gap in logits; MLP units: distance
    ** from the hinge) and the rounding it absorbs at the precision */
    if (u->kind >= U_HEAD && u->margin >= 0 && u->margin < INFINITY && isfinite(u->need))
      sb_printf(&b, ", \"margin\": %.6g, \"rounding\": %.6g", u->margin, u->need);
    else if (u->kind >= U_HEAD && u->margin >= 0 && u->margin < INFINITY) /* (no bound) */
      sb_printf(&b, ", \"margin\": %.6g, \"rounding\": null", u->margin);
    else
      sb_printf(&b, ", \"margin\": null");
    /* whether the rounding bound proves it (fp32 compiles it either way) */
    if (u->kind >= U_HEAD) sb_printf(&b, ", \"proven\": %s", u->proven ? "true" : "false");
    /* a head that moves one selected number where the program averages:
    ** whether the premise (one value at the selected keys) is proven, and
    ** an assumed one's premise where --moves one made it one key */
    if (u->kind == U_HEAD && u->move)
      sb_printf(&b, ", \"move\": \"%s\"%s", u->move == RASPF_MOVE_PROVEN ? "proven" : "assumed",
                u->move == RASPF_MOVE_ASSUMED && g->o->moves == RASPG_MOVES_ONE
                    ? ", \"premise\": \"one key\"" : "");
    /* a head the proof sharpened: its scores' factor beyond score_scale */
    if (u->kind == U_HEAD && head_gain(g, u) != 1) sb_printf(&b, ", \"gain\": %g", head_gain(g, u));
    /* fp32, an integer unit proven: how far from its integers its
    ** dimensions (x and x^2) can be when it is written */
    if (u->kind >= U_HEAD && m->precision == RASPG_FP32 && u->kappa == 0 && u->proven &&
        u->ae[0] < 0.5 && u->ae[1] < 0.5)
    {
      sb_printf(&b, ", \"deviation\": [%.20f, %.20f]", u->ae[0], u->sq ? u->ae[1] : u->ae[0]); /* (no exponents: the config reader takes plain decimals) */
      /* and exact wherever a dimension's value is nonzero (nz_exact) */
      if (u->nzx) sb_printf(&b, ", \"exact_nonzero\": true");
    }
    sb_printf(&b, "}");
  }
  sb_printf(&b, "], \"token_embedding\": \"tokens one-hot (numerical+square: id, id^2); 'one' (dim 1) at every token "
                "but BOS; is_bos (dim 0) at BOS\", \"position_embedding\": \"indices one-hot "
                "of position p-1 at model position p >= 1\", \"readout\": {\"node\": %d, "
                "\"tokens\": %s, \"logit_scale\": %.17g, \"values\": [",
            root, g->ir->nodes[root].flags & RASP_TOKEN_IDS ? "true" : "false", m->logit_scale);
  for (int j = 0; j < m->n_out; j++) {
    if (j) sb_printf(&b, ", ");
    sb_elem(&b, g->ir, m->out_vals[j]);
  }
  sb_printf(&b, "], \"decode\": \"argmax of the logits at model position i+1 is the output at "
                "input position i\"}");
  /* the vocabulary, so that a reader can encode inputs: vocab[id] is the
  ** symbol of token id; "" (no symbol is empty) for 0, which is unused, and
  ** BOS, so that it stays a list of strings */
  if (g->o->token_names) {
    sb_printf(&b, ", \"vocab\": [\"\"");
    for (int t = 1; t <= g->o->nvocab; t++) {
      sb_printf(&b, ", ");
      sb_str(&b, g->o->token_names[t] ? g->o->token_names[t] : "");
    }
    sb_printf(&b, ", \"\"]");
    /* the symbols compiled as inputs (a numerical tokens unit has no
    ** dimension per symbol to name them) */
    sb_printf(&b, ", \"input_symbols\": [");
    for (int k = 0; k < g->u[0].nvals; k++) {
      int64_t t = g->u[0].vals[k].num;
      sb_printf(&b, "%s", k ? ", " : "");
      sb_str(&b, t >= 1 && t <= g->o->nvocab && g->o->token_names[t] ? g->o->token_names[t] : "");
    }
    sb_printf(&b, "]");
  }
  sb_printf(&b, "}");
  (void)ov;
  return b.s;
}

/* ---- the driver --------------------------------------------------------- */

struct raspG_fast;
static struct raspG_fast *fast_build(rasp_model *m);
static void fast_free(struct raspG_fast *f);

static void gc_free(gc *g) {
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    raspM_free(u->vals);
    view_free(&u->hv);
    for (int k = 0; k < u->nmv; k++) view_free(&u->mv[k]);
    for (int k = 0; k < u->nc; k++) {
      raspM_free(u->c[k].t);
      raspM_free(u->c[k].ky);
      view_free(&u->c[k].kv);
      view_free(&u->c[k].qv);
    }
  }
  raspM_free(g->u);
  if (g->nv)
    for (int i = 0; i < g->ir->nnodes; i++) view_free(&g->nv[i]);
  raspM_free(g->nv);
  if (g->eqv)
    for (int i = 0; i < 2 * g->ir->nnodes; i++) view_free(&g->eqv[i]);
  raspM_free(g->eqv);
  raspM_free(g->decoded);
  raspM_free(g->numq);
  raspM_free(g->numeq);
  raspM_free(g->ornot);
  raspM_free(g->wsel);
  raspM_free(g->fact);
  raspM_free(g->dist);
  raspF_moves_free(g->mscan);
  raspM_free(g->kinds);
}

/* RASP_COMPILE_CHECK_FACTS=1: every value a node's view can take lies
** within the node's fact.  The exact sets and the transfer functions are
** two analyses of one program; a value outside is a bug in one of them: an
** internal error naming the node, the value and the fact. */
static int check_facts(gc *g, const unsigned char *live) {
  const rasp_ir *ir = g->ir;
  for (int id = 0; id < ir->nnodes; id++) {
    const view *v = &g->nv[id];
    if (!live[id] || !v->val) continue;
    for (int a = 0; a < v->nv; a++) {
      if (!v->ok[a] || raspF_holds(g->fact[id], v->val[a])) continue;
      char buf[64];
      raspI_elem_format(ir, v->val[a], buf, sizeof buf);
      raspR_set(g->err, ir->nodes[id].pos,
                "internal error: compile: %s of node %d ('%s') outside its value fact "
                "(kinds %u, [%lld, %lld])",
                buf, id, raspI_op_name(ir->nodes[id].op), g->fact[id].kind,
                (long long)g->fact[id].lo, (long long)g->fact[id].hi);
      return 0;
    }
  }
  return 1;
}

/* The planner: units for every live node of the first output's cone (CSE
** and static heads applied), the readout view *ov and whether it is read as
** a number (*quad), every unit scheduled (schedule) and the ones the output
** needs marked used.  raspG_compile writes weights for this plan and
** raspG_schedule reports it, so `rasp layers` and the compiled model agree
** by construction.  Returns 1, or 0 with err set and g freed. */
static int plan(gc *g, const rasp_ir *ir, const raspG_opts *o, const unsigned char *force,
                view *ov, int *quadp, rasp_error *err) {
  if (!ir->noutputs) {
    raspR_setnopos(err, "compile: the program has no output");
    return 0;
  }
  memset(g, 0, sizeof *g);
  g->ir = ir;
  g->o = o;
  g->n = ir->n;
  g->err = err;
  g->force = force;
  g->allcat = o->encoding == RASPG_ENC_CATEGORICAL;
  const char *tr = getenv("RASP_COMPILE_TRACE");
  g->trace = tr ? atoi(tr) : 0;
  int root = ir->outputs[0];
  unsigned char *live = raspM_alloc((size_t)ir->nnodes);
  raspI_live(ir, &root, 1, live);
  /* a causal model when no head selects a later key: its selector is causal
     or provably reads only keys k <= q (rcausal.h), so the mask changes
     nothing */
  rasp_causal ca;
  raspA_analyse(ir, &ca);
  g->causal_model = 1;
  for (int i = 0; i < ir->nnodes; i++)
    if (live[i] && raspI_op_component(ir->nodes[i].op) == RASP_COMP_ATTN &&
        !raspA_sel_prefix(&ca, ir->nodes[i].in[0]))
      g->causal_model = 0;
  raspA_free(&ca);
  /* the embedded units */
  rasp_elem *tv = raspM_alloc(sizeof(rasp_elem) * (size_t)(o->ninput + 1));
  for (int i = 0; i < o->ninput; i++) tv[i] = (rasp_elem){o->input_ids[i], 1};
  int ntv = uniq(tv, o->ninput);
  int tcat = ntv <= NUMMIN || forced(g, -1);
  new_unit(g, U_TOK, tcat, tv, ntv, -1);
  g->u[0].sq = !tcat; /* many symbols: the token id and its square */
  /* value facts (rfacts.h) for tokens among the vocabulary's ids */
  raspF_value tf = {o->ninput ? RASPF_K_INT : 0, INT64_MAX, INT64_MIN};
  for (int i = 0; i < ntv; i++) {
    tf.lo = tv[i].num < tf.lo ? tv[i].num : tf.lo;
    tf.hi = tv[i].num > tf.hi ? tv[i].num : tf.hi;
  }
  g->fact = raspM_alloc(sizeof(raspF_value) * (size_t)(ir->nnodes + 1));
  raspF_values(ir, tf, g->fact);
  g->dist = raspM_alloc(sizeof(raspF_distinct) * (size_t)(ir->nnodes + 1));
  raspF_distincts(ir, g->fact, g->dist);
  g->mscan = raspF_moves_new(ir);
  g->kinds = raspM_alloc(sizeof(unsigned) * (size_t)(ir->nnodes ? ir->nnodes : 1));
  rasp_elem *iv = raspM_alloc(sizeof(rasp_elem) * (size_t)g->n);
  for (int i = 0; i < g->n; i++) iv[i] = (rasp_elem){i, 1};
  new_unit(g, U_IDX, 1, iv, g->n, -1);
  rasp_elem *ov1 = raspM_alloc(sizeof(rasp_elem));
  ov1[0] = (rasp_elem){1, 1};
  new_unit(g, U_ONE, 1, ov1, 1, -1);
  g->nv = raspM_alloc(sizeof(view) * (size_t)ir->nnodes);
  g->numq = raspM_alloc((size_t)ir->nnodes);
  g->numeq = raspM_alloc((size_t)ir->nnodes);
  g->eqv = raspM_alloc(sizeof(view) * 2 * (size_t)ir->nnodes);
  g->ornot = raspM_alloc((size_t)ir->nnodes);
  for (int i = 0; i < ir->nnodes; i++)
    if (live[i]) mark_ornot(g, i, 0);
  g->wsel = raspM_alloc((size_t)ir->nnodes);
  for (int i = 0; i < ir->nnodes; i++)
    if (live[i] && ir->nodes[i].op == RASP_OP_SEL_WIDTH) mark_wsel(g, ir->nodes[i].in[0]);
  /* common subexpressions (raspF_canon): a head or MLP node computed twice
     is planned once, its copies read the same unit; selects are planned
     again (they make no unit, and their operands' decodes are memoised) */
  int *canon = raspM_alloc(sizeof(int) * (size_t)ir->nnodes);
  raspF_canon(ir, live, canon);
  unsigned char *st = raspM_alloc((size_t)ir->nnodes);
  raspF_static(ir, 0, st);
  rasp_eval *sev = NULL;
  int sev_state = 0; /* 0 not run, 1 values available, -1 failed */
  int ok = 1;
  for (int i = 0; i < ir->nnodes && ok; i++) {
    if (!live[i]) continue;
    int op = ir->nodes[i].op;
    int makes_unit = op != RASP_OP_SELECT && op != RASP_OP_SEL_AND && op != RASP_OP_SEL_OR &&
                     op != RASP_OP_SEL_NOT;
    if (canon[i] != i && makes_unit) {
      view_copy(g, &g->nv[i], &g->nv[canon[i]]);
      continue;
    }
    if (st[i] && static_view(g, i, &sev, &sev_state)) continue;
    ok = plan_node(g, i);
    if (ok && g->fatal.set) {
      *g->err = g->fatal;
      ok = 0;
    }
  }
  if (sev) raspE_free(sev);
  const char *chk = getenv("RASP_COMPILE_CHECK_FACTS");
  if (ok && chk && strcmp(chk, "1") == 0) ok = check_facts(g, live);
  raspM_free(canon);
  raspM_free(st);
  raspM_free(live);
  memset(ov, 0, sizeof *ov);
  int quad = 0; /* a numerical readout: logit_v = -X (x - v)^2 */
  if (ok) {
    view_copy(g, ov, &g->nv[root]);
    need_num(g, ov, root); /* a width or mean of many values: read out as (x, x^2) */
    double qa, qb;
    quad = g->u[ov->unit].sq && lf_ok(g, ov) && view_affine(g, ov, &qa, &qb);
    if (!quad) need_cat(g, ov, root);
  }
  for (int i = 0; i < g->nu && ok; i++)
    if (g->u[i].kind == U_HEAD) {
      ok = sel_comps(g, g->u[i].selnode, g->u[i].c, &g->u[i].nc);
      if (ok) prune_comps(g, g->u[i].c, g->u[i].nc);
    }
  if (ok && g->fatal.set) { /* (a custom predicate's, met by sel_comps) */
    *g->err = g->fatal;
    ok = 0;
  }
  if (!ok) {
    view_free(ov);
    gc_free(g);
    return 0;
  }
  *quadp = quad;
  schedule(g);
  mark_used(g, ov->unit);
  return 1;
}

/* The schedule of plan g (its used units), and each node's sublayer in it:
** the ready sublayer of the unit its view reads (a decode's, when its
** readers need it decoded; the readout's, ov, for the output), a selector
** its operands' latest, as in the IR rule (rlayers.h). */
static void fill_sched(gc *g, const view *ov, raspG_sched *out) {
  int nl = 0;
  for (int i = 0; i < g->nu; i++)
    if (g->u[i].used && g->u[i].kind >= U_HEAD && g->u[i].layer + 1 > nl) nl = g->u[i].layer + 1;
  out->nlayers = nl;
  out->heads = raspM_alloc(sizeof(int) * (size_t)(nl + 1));
  out->mlps = raspM_alloc(sizeof(int) * (size_t)(nl + 1));
  for (int i = 0; i < g->nu; i++) {
    const unit *u = &g->u[i];
    if (!u->used) continue;
    if (u->kind == U_HEAD) out->heads[u->layer]++, out->total_heads++;
    if (u->kind == U_MLP) out->mlps[u->layer]++;
    if (u->kind == U_MLP && u->mkind == M_DECODE) out->decodes++;
    if (u->kind == U_MLP) { /* reads another MLP unit: a sublayer of its own */
      int src[2 * MAXCOMPS + 4], ns, chained = 0;
      unit_sources(u, src, &ns);
      for (int k = 0; k < ns; k++) chained |= g->u[src[k]].kind == U_MLP;
      out->chained += chained;
    }
  }
  const rasp_ir *ir = g->ir;
  int root = ir->outputs[0];
  unsigned char *live = raspM_alloc((size_t)ir->nnodes + 1);
  raspI_live(ir, &root, 1, live);
  out->sublayer = raspM_alloc(sizeof(int) * ((size_t)ir->nnodes + 1));
  for (int i = 0; i < ir->nnodes; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    out->sublayer[i] = -1;
    if (!live[i]) continue;
    if (raspI_op_component(nd->op) == RASP_COMP_SELECTOR) {
      int s = 0;
      for (int j = 0; j < nd->nin; j++)
        if (out->sublayer[nd->in[j]] > s) s = out->sublayer[nd->in[j]];
      out->sublayer[i] = s;
    } else {
      out->sublayer[i] = g->u[i == root ? ov->unit : g->nv[i].unit].ready;
    }
  }
  raspM_free(live);
}

static int compile_impl(const rasp_ir *ir, const raspG_opts *o, raspG_model *out,
                        raspG_sched *sched, rasp_error *err);

/* The schedule is the compiled model's.  In fp32 the encodings are chosen
** by size (prove only reports there), so the planner alone gives it; in
** fp16 and bf16, and in fp32 with require_proof, which encodings are
** proven (and so which decodes and sublayers exist) is known only once the
** weights are written, so this compiles and keeps the plan's counts. */
int raspG_schedule(const rasp_ir *ir, const raspG_opts *o, raspG_sched *out, rasp_error *err) {
  memset(out, 0, sizeof *out);
  if (o->precision != RASPG_FP32 || o->require_proof) {
    raspG_model m;
    if (!compile_impl(ir, o, &m, out, err)) return 0;
    raspG_free(&m);
    return 1;
  }
  gc G, *g = &G;
  view ov;
  int quad;
  if (!plan(g, ir, o, NULL, &ov, &quad, err)) return 0;
  fill_sched(g, &ov, out);
  view_free(&ov);
  gc_free(g);
  return 1;
}

void raspG_sched_free(raspG_sched *s) {
  raspM_free(s->heads);
  raspM_free(s->mlps);
  raspM_free(s->sublayer);
  memset(s, 0, sizeof *s);
}

/* A proof-driven compile that ran into a size limit after making nodes
** one-hot: the error says so, naming the first of them, and what may
** spare them (the one-key premise, where lookups are assumed moves). */
static void fallback_note(const rasp_ir *ir, const raspG_opts *o, const unsigned char *force,
                          rasp_error *err) {
  int n = 0, first = -1;
  for (int i = 0; i < ir->nnodes; i++)
    if (force[i] & FORCE_CAT) n++, first = first < 0 ? i : first;
  if (!n || (err->code != RASP_E_LIMIT && err->code != RASP_E_USAGE)) return;
  char where[256], msg[2 * sizeof err->msg + 512];
  node_where(ir, first, where, sizeof where, 1);
  snprintf(msg, sizeof msg, "%s, after the proof made %d node%s one-hot (the first: %s)%s",
           err->msg, n, n == 1 ? "" : "s", where,
           o->moves == RASPG_MOVES_ASSUME ? "; --moves one (each assumed lookup selects one key) "
                                            "may prove them numerically" : "");
  size_t len = strlen(msg) < sizeof err->msg ? strlen(msg) : sizeof err->msg - 1;
  memcpy(err->msg, msg, len);
  err->msg[len] = 0;
  err->code = RASP_E_LIMIT; /* (the parameter cap is a usage error for a
                            ** config; here it is the proof's growth) */
}

int raspG_compile(const rasp_ir *ir, const raspG_opts *o, raspG_model *out, rasp_error *err) {
  return compile_impl(ir, o, out, NULL, err);
}

/* The readout's values and logit scale (out->out_vals, n_out, logit_scale)
** for readout view ov, read as a number where quad. */
static void choose_readout(gc *g, const raspG_opts *o, raspG_model *out, const view *ov,
                           int quad) {
  out->out_vals = view_image(ov, &out->n_out);
  out->logit_scale = o->logit_scale > 0 ? o->logit_scale : raspG_default_logit_scale(out->n_out);
  /* proof-driven, a numerical readout's scale is rounded up to a power of
  ** two: its logits X (2 v x - x^2 - v^2) are then sums of integer
  ** multiples of X, exact in float32 while they stay within 2^24 X
  ** (readout_margin), where another X rounds every term at |V| = 1000 */
  if (quad && proof_driven(g)) out->logit_scale = exp2(ceil(log2(out->logit_scale)));
}

/* Residual dimensions: liveness over the schedule (already run); a dead
** unit is erased by the MLP and its dimensions reused when that makes
** fewer parameters.  Sets cfg's d_model and d_mlp (its n_layers, n_heads
** and d_head from size_heads) and out->mlp_width. */
static void choose_dims(gc *g, const raspG_opts *o, raspG_model *out, rasp_model_config *cfg) {
  int nl = cfg->n_layers, maxh = cfg->n_heads, dh = cfg->d_head, dmlp = 1;
  int best = -1, bestd = 0;
  double bestp = 0;
  for (int pol = 0; pol < 3; pol++) {
    int dd = alloc_dims(g, pol), wmax = 1;
    for (int l = 0; l < nl; l++) {
      int wl = layer_width(g, l, dd, dh, out->heads[l] > 0);
      if (wl > wmax) wmax = wl;
    }
    /* the fewest dimensions, d_model the peak of live units (issue 13);
    ** among policies that reach it, the fewest parameters.  Parameters
    ** first made the choice depend on |V| (the token embedding's |V| rows
    ** favour erasing at |V| = 1000, not at 100), so a program's d_model
    ** changed with its vocabulary; an eraser costs hidden units instead
    ** (sort at n = 128: 518 dimensions and 4.47M parameters against 523
    ** and 3.69M, doc/compiler.md) */
    double p = (double)nl * (4.0 * maxh * dd * dh + 2.0 * dd * wmax) + (double)dd * (o->nvocab + g->n + 3);
    if (best < 0 || dd < bestd || (dd == bestd && p < bestp)) best = pol, bestp = p, bestd = dd;
  }
  int d = alloc_dims(g, best);
  for (int l = 0; l < nl; l++) {
    out->mlp_width[l] = layer_width(g, l, d, dh, out->heads[l] > 0);
    if (out->mlp_width[l] > dmlp) dmlp = out->mlp_width[l];
  }
  cfg->d_model = d;
  cfg->d_mlp = dmlp;
}

/* What a finished compile reports beyond its weights: the nodes the proof
** made categorical, the sharpened heads and the moves (assumed ones named
** by the first). */
static void note_heads(gc *g, const raspG_opts *o, raspG_model *out, const unsigned char *force) {
  for (int i = 0; i <= g->ir->nnodes; i++) out->fallbacks += force[i] & FORCE_CAT;
  out->gain_max = 1;
  for (int i = 0; i < g->nu; i++) {
    const unit *u = &g->u[i];
    if (!u->used || u->kind != U_HEAD || head_gain(g, u) == 1) continue;
    out->sharpened++;
    out->gain_max = fmax(out->gain_max, head_gain(g, u));
  }
  for (int i = 0; i < g->nu; i++) {
    const unit *u = &g->u[i];
    if (!u->used || u->kind != U_HEAD || !u->move) continue;
    out->moves++;
    if (u->move == RASPF_MOVE_ASSUMED && !out->moves_assumed++)
      node_where(g->ir, u->node, out->moves_at, sizeof out->moves_at, 1);
  }
  out->moves_one = o->moves == RASPG_MOVES_ONE;
}

/* One compile with the nodes in force[] categorical: 1 done, 2 force grew
** (compile again), 0 failed with err set.  The plan, the model's shape
** (heads, then residual dimensions, then the readout), the weights
** (embeddings, each layer, the readout), the proof, and what the model
** reports. */
static int compile_once(const rasp_ir *ir, const raspG_opts *o, unsigned char *force,
                        raspG_model *out, raspG_sched *sched, rasp_error *err) {
  memset(out, 0, sizeof *out);
  gc G, *g = &G;
  view ov;
  int quad;
  if (!plan(g, ir, o, force, &ov, &quad, err)) return 0;
  g->u[2].used = 1; /* ONE */
  accept_aliases(g, ov.unit);
  rasp_model_config cfg = {0};
  size_heads(g, out, &cfg);
  liveness(g, ov.unit);
  choose_dims(g, o, out, &cfg);
  choose_readout(g, o, out, &ov, quad);
  out->n = g->n;
  out->n_dims = cfg.d_model;
  cfg.vocab_size = o->nvocab + 2;
  cfg.max_len = g->n + 1;
  cfg.n_out = out->n_out > 0 ? out->n_out : 1;
  cfg.causal = g->causal_model;
  cfg.layer_norm = 0;
  cfg.pos_embedding = 1;
  cfg.gelu = 0;
  cfg.bos_token = o->nvocab + 1;
  int pr = -1;
  if (raspN_init(&out->model, &cfg, err)) {
    write_embeddings(g, &out->model);
    /* attention sharpness: at gain 1 the weight leaking past a score gap of
    ** 1/2 stays below 1e-9 of the total; --attn-gain F scales beta by F
    ** (prove() measures the leak the weights give, whatever F is) */
    out->attn_gain = o->attn_gain > 0 ? o->attn_gain : 1;
    double beta = 2 * (log((double)g->n + 1) + 21) * out->attn_gain;
    out->score_scale = score_scale(beta, cfg.d_head);
    for (int l = 0; l < cfg.n_layers; l++) write_layer(g, out, l);
    write_readout(g, out, &ov, quad);
    out->precision = o->precision;
    pr = prove(g, out, &ov, o->precision, force);
  }
  if (pr != 0) {
    view_free(&ov);
    gc_free(g);
    raspG_free(out);
    return pr > 0 ? 2 : 0;
  }
  note_heads(g, o, out, force);
  if (!sched) cb_bound(g, out, &ov); /* (the schedule alone needs no bound) */
  out->model.json_extra = layout_json(g, out, ir->outputs[0], &ov);
  if (sched) fill_sched(g, &ov, sched);
  out->fast = fast_build(&out->model);
  view_free(&ov);
  gc_free(g);
  return 1;
}

static int compile_impl(const rasp_ir *ir, const raspG_opts *o, raspG_model *out,
                        raspG_sched *sched, rasp_error *err) {
  if (o->precision < RASPG_FP32 || o->precision > RASPG_BF16) {
    memset(out, 0, sizeof *out);
    raspR_setnoposc(err, RASP_E_USAGE, "compile: unknown precision %d", o->precision);
    return 0;
  }
  /* proof-driven fp32: a model the bound proves whole with the default
  ** weights is kept as it is (the same bytes); only where it does not are
  ** the proof-driven forms (proof_driven) and fallbacks used */
  unsigned char *force = raspM_alloc((size_t)ir->nnodes + 1);
  int r;
  /* (o0: the same options with the default weights) */
  int pd = o->require_proof && o->precision == RASPG_FP32 && !sched;
  raspG_opts o0 = *o;
  o0.require_proof = 0;
  if (pd) {
    r = compile_once(ir, &o0, force, out, NULL, err);
    if (r == 1 && out->unproven == 0) {
      raspM_free(force);
      return 1;
    }
    if (r == 0) { /* (fp32 by size refuses nothing: a real error) */
      raspM_free(force);
      return 0;
    }
    raspG_free(out);
    memset(force, 0, (size_t)ir->nnodes + 1);
  }
  /* every round makes at least one more node categorical (or a head
  ** sharper), or stops */
  while ((r = compile_once(ir, o, force, out, sched, err)) == 2) {}
  if (r == 0 && pd) fallback_note(ir, o, force, err);
  /* heads were sharpened, and the proof-driven forms chosen, before nodes
  ** were made one-hot: with those nodes one-hot, the default weights (and
  ** then the default scale with the proof-driven forms) may be proven too,
  ** with fewer large weights and no more dimensions */
  if (r == 1 && pd && out->fallbacks) {
    for (int i = 0; i <= ir->nnodes; i++) force[i] &= FORCE_CAT | FORCE_CLASSIC;
    for (int k = 0; k < 2; k++) {
      if (k == 1 && !out->sharpened) break;
      raspG_model plain;
      rasp_error e2 = {0};
      int r2 = compile_once(ir, k ? o : &o0, force, &plain, NULL, &e2);
      if (r2 != 1) continue;
      if (plain.unproven || plain.model.cfg.d_model > out->model.cfg.d_model) {
        raspG_free(&plain);
        continue;
      }
      plain.fallbacks = out->fallbacks; /* (counted from force: the same nodes) */
      raspG_free(out);
      *out = plain;
      break;
    }
  }
  raspM_free(force);
  return r;
}

void raspG_free(raspG_model *g) {
  fast_free(g->fast);
  raspN_free(&g->model);
  raspM_free(g->out_vals);
  raspM_free(g->heads);
  raspM_free(g->mlp_width);
  memset(g, 0, sizeof *g);
}

/* ---- a sparse forward pass ---------------------------------------------
** The same arithmetic as raspN_forward (rmodel.c) in the same order, with
** the zero weights skipped: every float sum adds the same nonzero terms in
** the same index order, and the skipped terms are exact zeros, so the
** logits are bit-identical to the dense pass (tests/test_compile checks
** this).  Compiled models are more than 99% zeros, which makes --check on
** the path-star programs feasible.  Only for models without layer norm and
** with ReLU (what the compiler writes). */

typedef struct spm { /* compressed columns of a rows x cols row-major matrix */
  int ncol;
  int *start; /* ncol + 1 */
  int *row;
  float *w;
} spm;

static void spm_build(spm *s, const float *W, int rows, int cols) {
  size_t nz = 0;
  for (size_t i = 0; i < (size_t)rows * cols; i++) nz += W[i] != 0;
  s->ncol = cols;
  s->start = raspM_alloc(sizeof(int) * (size_t)(cols + 1));
  s->row = raspM_alloc(sizeof(int) * (nz ? nz : 1));
  s->w = raspM_alloc(sizeof(float) * (nz ? nz : 1));
  size_t k = 0;
  for (int c = 0; c < cols; c++) {
    s->start[c] = (int)k;
    for (int r = 0; r < rows; r++) {
      float w = W[(size_t)r * cols + c];
      if (w != 0) {
        s->row[k] = r;
        s->w[k++] = w;
      }
    }
  }
  s->start[cols] = (int)k;
}
static void spm_free(spm *s) {
  raspM_free(s->start);
  raspM_free(s->row);
  raspM_free(s->w);
}

struct raspG_fast {
  int nl, H;
  spm *q, *k, *v, *o;  /* nl * H each */
  spm *wi, *wo;        /* nl each */
  spm un;
};

static void fast_free(struct raspG_fast *f) {
  if (!f) return;
  for (int i = 0; i < f->nl * f->H; i++) {
    spm_free(&f->q[i]);
    spm_free(&f->k[i]);
    spm_free(&f->v[i]);
    spm_free(&f->o[i]);
  }
  for (int l = 0; l < f->nl; l++) {
    spm_free(&f->wi[l]);
    spm_free(&f->wo[l]);
  }
  spm_free(&f->un);
  raspM_free(f->q);
  raspM_free(f->k);
  raspM_free(f->v);
  raspM_free(f->o);
  raspM_free(f->wi);
  raspM_free(f->wo);
  raspM_free(f);
}

static struct raspG_fast *fast_build(rasp_model *m) {
  const rasp_model_config *c = &m->cfg;
  if (c->layer_norm || c->gelu) return NULL;
  int D = c->d_model, H = c->n_heads, Dh = c->d_head, F = c->d_mlp, nl = c->n_layers;
  struct raspG_fast *f = raspM_alloc(sizeof *f);
  f->nl = nl;
  f->H = H;
  size_t nh = (size_t)(nl * H > 0 ? nl * H : 1);
  f->q = raspM_alloc(sizeof(spm) * nh);
  f->k = raspM_alloc(sizeof(spm) * nh);
  f->v = raspM_alloc(sizeof(spm) * nh);
  f->o = raspM_alloc(sizeof(spm) * nh);
  f->wi = raspM_alloc(sizeof(spm) * (size_t)(nl ? nl : 1));
  f->wo = raspM_alloc(sizeof(spm) * (size_t)(nl ? nl : 1));
  char nm[64];
  for (int L = 0; L < nl; L++) {
#define P_(s) (snprintf(nm, sizeof nm, "layers.%d.%s", L, s), raspN_data(m, nm))
    const float *wq = P_("attn.w_q"), *wk = P_("attn.w_k"), *wv = P_("attn.w_v"),
                *wo = P_("attn.w_o");
    for (int hd = 0; hd < H; hd++) {
      size_t off = (size_t)hd * D * Dh;
      spm_build(&f->q[L * H + hd], wq + off, D, Dh);
      spm_build(&f->k[L * H + hd], wk + off, D, Dh);
      spm_build(&f->v[L * H + hd], wv + off, D, Dh);
      spm_build(&f->o[L * H + hd], wo + (size_t)hd * Dh * D, Dh, D);
    }
    spm_build(&f->wi[L], P_("mlp.w_in"), D, F);
    spm_build(&f->wo[L], P_("mlp.w_out"), F, D);
#undef P_
  }
  spm_build(&f->un, raspN_data(m, "unembed"), D, c->n_out);
  return f;
}

/* The forward pass over the sparse weights (sparse_forward), one plan for
** both precisions.  In fp32 it is raspN_forward's sums in its order without
** the zero terms, so the logits are bit-identical (a zero term changes no
** float32 sum but the sign of a zero).  In fp16 and bf16 it emulates the
** format: every weight rounded to it as it is read, and every result as it
** is made (a dot product, accumulated in float32, rounded once; each
** addition to the residual; the softmax's difference, exp, sum and
** quotient; each head's weighted sum and its output; the logits), as a GPU
** computing in that format with float32 accumulators does.  fp16 overflows
** to inf (and inf - inf, 0 * inf to NaN) as the hardware does, so there no
** term is skipped.  rnd is the rounding (none in fp32). */
static inline float rnd(int pr, float y) { return pr == RASPG_FP32 ? y : raspG_round(pr, y); }

/* Column c of s applied to x, plus b[c]: b[c] + sum_r x[r] W[r][c] in
** increasing r (as the dense pass), rounded once. */
static inline float sp_dot(int pr, const spm *s, int c, const float *x, const float *b) {
  float acc = b ? rnd(pr, b[c]) : 0.0f;
  for (int k = s->start[c]; k < s->start[c + 1]; k++) acc += x[s->row[k]] * rnd(pr, s->w[k]);
  return rnd(pr, acc);
}

/* exp(att[j] - max) in place; returns their sum.  fp32: raspN_forward's own
** softmax, so the weights are its bits. */
static float sp_softmax_exp(int pr, float *att, int nk) {
  if (pr == RASPG_FP32) return raspN_softmax_exp(att, nk);
  float mx = -INFINITY, sum = 0;
  for (int j = 0; j < nk; j++)
    if (att[j] > mx) mx = att[j];
  for (int j = 0; j < nk; j++) {
    att[j] = rnd(pr, expf(rnd(pr, att[j] - mx)));
    sum += att[j];
  }
  return rnd(pr, sum);
}

static inline __attribute__((always_inline)) void
sparse_pass(const raspG_model *g, int pr, const int *tokens, int n, float *logits) {
  const struct raspG_fast *f = g->fast;
  int emu = pr != RASPG_FP32;
  rasp_model *mm = (rasp_model *)&g->model;
  const rasp_model_config *c = &mm->cfg;
  int D = c->d_model, H = c->n_heads, Dh = c->d_head, F = c->d_mlp, O = c->n_out;
  size_t nD = (size_t)n * D;
  float *x = raspM_alloc(nD * sizeof *x), *o = raspM_alloc(nD * sizeof *o);
  float *q = raspM_alloc((size_t)n * Dh * sizeof *q), *k = raspM_alloc((size_t)n * Dh * sizeof *k);
  float *v = raspM_alloc((size_t)n * Dh * sizeof *v), *att = raspM_alloc((size_t)n * sizeof *att);
  float *z = raspM_alloc((size_t)(F > D ? F : D) * sizeof *z), *hv = raspM_alloc((size_t)Dh * sizeof *hv);
  int *act = raspM_alloc(sizeof(int) * (size_t)Dh), *vact = raspM_alloc(sizeof(int) * (size_t)Dh);
  const float *te = raspN_data(mm, "tok_emb"), *pe = raspN_data(mm, "pos_emb");
  for (int i = 0; i < n; i++)
    for (int j = 0; j < D; j++)
      x[(size_t)i * D + j] = rnd(pr, rnd(pr, te[(size_t)tokens[i] * D + j]) +
                                         (pe ? rnd(pr, pe[(size_t)i * D + j]) : 0.0f));
  float scale = rnd(pr, 1.0f / sqrtf((float)Dh));
  char nm[64];
  for (int L = 0; L < c->n_layers; L++) {
#define P_(s) (snprintf(nm, sizeof nm, "layers.%d.%s", L, s), raspN_data(mm, nm))
    const float *bq = P_("attn.b_q"), *bk = P_("attn.b_k"), *bv = P_("attn.b_v"),
                *bo = P_("attn.b_o");
    for (size_t i = 0; i < nD; i++) o[i] = rnd(pr, bo[i % D]);
    for (int hd = 0; hd < H; hd++) {
      const spm *Sq = &f->q[L * H + hd], *Sk = &f->k[L * H + hd], *Sv = &f->v[L * H + hd],
                *So = &f->o[L * H + hd];
      const float *hbq = bq + hd * Dh, *hbk = bk + hd * Dh, *hbv = bv + hd * Dh;
      /* the head's plan: the dimensions whose q and k (act) or v (vact) can
         be nonzero; emulated, all of them */
      int na = 0, nva = 0;
      for (int e = 0; e < Dh; e++) {
        int qe = emu || Sq->start[e + 1] > Sq->start[e] || hbq[e] != 0;
        int ke = emu || Sk->start[e + 1] > Sk->start[e] || hbk[e] != 0;
        int ve = emu || Sv->start[e + 1] > Sv->start[e] || hbv[e] != 0;
        if (qe && ke) act[na++] = e;
        if (ve) vact[nva++] = e;
      }
      if (!nva) continue; /* writes nothing: o += 0 */
      for (int i = 0; i < n; i++)
        for (int e = 0; e < Dh; e++) {
          q[(size_t)i * Dh + e] = sp_dot(pr, Sq, e, x + (size_t)i * D, hbq);
          k[(size_t)i * Dh + e] = sp_dot(pr, Sk, e, x + (size_t)i * D, hbk);
          v[(size_t)i * Dh + e] = sp_dot(pr, Sv, e, x + (size_t)i * D, hbv);
        }
      for (int i = 0; i < n; i++) {
        int nk = c->causal ? i + 1 : n;
        for (int j = 0; j < nk; j++) {
          float s = 0;
          for (int t = 0; t < na; t++) s += q[(size_t)i * Dh + act[t]] * k[(size_t)j * Dh + act[t]];
          att[j] = rnd(pr, rnd(pr, s) * scale);
        }
        float sum = sp_softmax_exp(pr, att, nk);
        for (int e = 0; e < Dh; e++) hv[e] = 0;
        for (int j = 0; j < nk; j++) {
          if (att[j] == 0 && !emu) continue;
          float a = rnd(pr, att[j] / sum);
          for (int t = 0; t < nva; t++) hv[vact[t]] += a * v[(size_t)j * Dh + vact[t]];
        }
        float *oi = o + (size_t)i * D;
        if (!emu) { /* raspN_forward adds each term to the output as it goes */
          for (int j = 0; j < D; j++)
            for (int kk = So->start[j]; kk < So->start[j + 1]; kk++) oi[j] += hv[So->row[kk]] * So->w[kk];
          continue;
        }
        for (int e = 0; e < Dh; e++) hv[e] = rnd(pr, hv[e]);
        for (int j = 0; j < D; j++) /* the head's output rounded, then added */
          if (So->start[j] < So->start[j + 1]) oi[j] = rnd(pr, oi[j] + sp_dot(pr, So, j, hv, NULL));
      }
    }
    for (size_t i = 0; i < nD; i++) x[i] = rnd(pr, x[i] + o[i]);
    const float *bi = P_("mlp.b_in"), *bt = P_("mlp.b_out");
#undef P_
    for (int i = 0; i < n; i++) {
      float *xi = x + (size_t)i * D;
      for (int t = 0; t < F; t++) {
        float zt = sp_dot(pr, &f->wi[L], t, xi, bi);
        z[t] = zt > 0 ? zt : 0;
      }
      for (int j = 0; j < D; j++) xi[j] = rnd(pr, xi[j] + sp_dot(pr, &f->wo[L], j, z, bt));
    }
  }
  const float *ub = raspN_data(mm, "unembed_b");
  for (int i = 0; i < n; i++)
    for (int j = 0; j < O; j++) logits[(size_t)i * O + j] = sp_dot(pr, &f->un, j, x + (size_t)i * D, ub);
  raspM_free(x);
  raspM_free(o);
  raspM_free(q);
  raspM_free(k);
  raspM_free(v);
  raspM_free(att);
  raspM_free(z);
  raspM_free(hv);
  raspM_free(act);
  raspM_free(vact);
}

/* Two instances of the one pass: in the fp32 one pr is a constant, so its
** tests fold away and the sums run as fast as without them. */
static void sparse_forward(const raspG_model *g, const int *tokens, int n, float *logits) {
  if (g->precision == RASPG_FP32) sparse_pass(g, RASPG_FP32, tokens, n, logits);
  else sparse_pass(g, g->precision, tokens, n, logits);
}

int raspG_run(const raspG_model *g, const int64_t *tokens, rasp_elem *out, float *logits,
              rasp_error *err) {
  int n = g->n, no = g->model.cfg.n_out;
  int *t = raspM_alloc(sizeof(int) * (size_t)(n + 1));
  float *lg = logits ? logits : raspM_alloc(sizeof(float) * (size_t)(n + 1) * no);
  t[0] = g->model.cfg.bos_token;
  for (int i = 0; i < n; i++) t[i + 1] = (int)tokens[i];
  int rc = 0;
  if (g->fast && (g->precision != RASPG_FP32 || !getenv("RASP_COMPILE_DENSE")))
    sparse_forward(g, t, n + 1, lg);
  else
    rc = !raspN_forward(&g->model, t, n + 1, lg, NULL, err);
  if (rc == 0)
    for (int i = 0; i < n; i++) {
      const float *row = lg + (size_t)(i + 1) * no;
      int best = 0;
      for (int j = 1; j < g->n_out; j++)
        if (row[j] > row[best]) best = j;
      out[i] = g->out_vals[best];
    }
  raspM_free(t);
  if (!logits) raspM_free(lg);
  return rc == 0;
}

/* ---- proven noise level --------------------------------------------------
** A bound on how far the float32 forward pass of a perturbed copy of the
** model (every weight moved by at most eps) can move a logit from the
** real-arithmetic forward pass of the model as written.  Per residual
** dimension d it carries B[d] >= |x_d| (interval propagation, at every
** position) and E[d] >= the deviation.  The rules (u the unit roundoff,
** g_k = k u / (1 - k u), the rounding of a k-term dot product):
**   linear y = W x + b over m inputs: B' = sum |W| B + |b|,
**     E' = sum |W| E + eps (sum (B + E) + 1) + g_{m+1} (B' + sum |W| E +
**     eps (sum (B + E) + 1)) (the perturbed weight is at most |W| + eps);
**   ReLU is 1-Lipschitz and |ReLU(x)| <= |x|: B and E pass unchanged;
**   x + y: B = Bx + By, E = Ex + Ey + u (B + Ex + Ey);
**   attention: a score error delta (of q.k, rounding and the scale's product
**     included) and the softmax's own rounding r (the max subtraction on
**     scores up to S, expf within 2u, the sum, the division) change each
**     weight by a factor within e^(+-R), R = 2 delta + 4uS + 5u + g_nk, so
**     the weights move by at most e^R - 1 in total, and a head output
**     (a convex combination of values |v| <= BV with errors EV) moves by
**     (e^R - 1) BV + e^R EV + g_(nk+1) e^R (BV + EV).
** The deviation is measured from the model's design, which it computes
** with attention weights that are exactly uniform over the selected keys:
** the real weights put at most the proven leak lambda (attn_leak, from
** head_margin over the value sets, both the non-BOS and the BOS query; the
** gain sets it) past them, which moves a head's output by at most
** 2 lambda BV more (the total variation of the two weightings times the
** values' size).  A right output's logit beats every other by the logit
** margin X in the design, so every output stays right while every logit
** moves by less than X / 4.  The bound is sound but loose (interval
** magnitudes add up over the layers where the real values cancel), so deep
** models get small levels. */
typedef struct nb {
  const rasp_model *m;
  double u, eps, leak;
} nb;

static int nb_bound_dims(const raspG_model *g, double u, double *eps, double *dev0);

static double gam(double u, double k) { return k * u < 0.5 ? k * u / (1 - k * u) : 1e300; }
/* bounds saturate at 1e300 (overflow, and NaN from inf - inf or 0 * inf,
** would otherwise read as small: fmax drops a NaN) */
static double cap(double x) { return x < 1e300 ? x : 1e300; }

/* W row-major [nin][nout] (element (j, o) at W[j * nout + o]) */
static void nb_lin(const nb *s, const float *W, const float *b, int nin, int nout,
                   const double *Bi, const double *Ei, double *Bo, double *Eo) {
  double sBE = 1;
  for (int j = 0; j < nin; j++) sBE += Bi[j] + Ei[j];
  for (int o = 0; o < nout; o++) {
    double s1 = b ? fabs(b[o]) : 0, s2 = 0;
    for (int j = 0; j < nin; j++) {
      double w = fabs(W[(size_t)j * nout + o]);
      s1 += w * Bi[j];
      s2 += w * Ei[j];
    }
    double e = s2 + s->eps * sBE;
    Bo[o] = cap(s1);
    Eo[o] = cap(e + gam(s->u, nin + 1) * (s1 + e));
  }
}

static void nb_add(const nb *s, double *Bx, double *Ex, const double *By, const double *Ey,
                   int d) {
  for (int j = 0; j < d; j++) {
    Bx[j] = cap(Bx[j] + By[j]);
    Ex[j] = cap(Ex[j] + Ey[j] + s->u * (Bx[j] + Ex[j] + Ey[j]));
  }
}

/* The largest deviation of a logit, or -1 when the model is not one this
** analysis covers (layer norm, GELU). */
static double nb_logit_dev(const nb *s) {
  const rasp_model_config *c = &s->m->cfg;
  if (c->layer_norm || c->gelu) return -1;
  rasp_model *mm = (rasp_model *)s->m; /* raspN_data does not modify */
  int D = c->d_model, H = c->n_heads, Dh = c->d_head, F = c->d_mlp, O = c->n_out;
  int n = c->max_len, W = D > F ? D : F;
  if (H * Dh > W) W = H * Dh;
  if (O > W) W = O;
  double *B = raspM_alloc(sizeof(double) * (size_t)W), *E = raspM_alloc(sizeof(double) * (size_t)W);
  double *B2 = raspM_alloc(sizeof(double) * (size_t)W), *E2 = raspM_alloc(sizeof(double) * (size_t)W);
  double *BQ = raspM_alloc(sizeof(double) * (size_t)W), *EQ = raspM_alloc(sizeof(double) * (size_t)W);
  double *BK = raspM_alloc(sizeof(double) * (size_t)W), *EK = raspM_alloc(sizeof(double) * (size_t)W);
  double *BV = raspM_alloc(sizeof(double) * (size_t)W), *EV = raspM_alloc(sizeof(double) * (size_t)W);
  const float *te = raspN_data(mm, "tok_emb"), *pe = raspN_data(mm, "pos_emb");
  for (int j = 0; j < D; j++) {
    double bt = 0, bp = 0;
    for (int t = 0; t < c->vocab_size; t++) bt = fmax(bt, fabs(te[(size_t)t * D + j]));
    for (int i = 0; pe && i < n; i++) bp = fmax(bp, fabs(pe[(size_t)i * D + j]));
    B[j] = bt + bp;
    E[j] = 2 * s->eps + s->u * (B[j] + 2 * s->eps);
  }
  double scale = 1.0f / sqrtf((float)Dh);
  char nm[64];
  for (int L = 0; L < c->n_layers; L++) {
#define P(x) (snprintf(nm, sizeof nm, "layers.%d.%s", L, x), raspN_data(mm, nm))
    const float *wq = P("attn.w_q"), *wk = P("attn.w_k"), *wv = P("attn.w_v");
    const float *bq = P("attn.b_q"), *bk = P("attn.b_k"), *bv = P("attn.b_v");
    const float *wo = P("attn.w_o"), *bo = P("attn.b_o");
    for (int hd = 0; hd < H; hd++) {
      size_t off = (size_t)hd * D * Dh;
      nb_lin(s, wq + off, bq + hd * Dh, D, Dh, B, E, BQ, EQ);
      nb_lin(s, wk + off, bk + hd * Dh, D, Dh, B, E, BK, EK);
      nb_lin(s, wv + off, bv + hd * Dh, D, Dh, B, E, BV + hd * Dh, EV + hd * Dh);
      double S = 0, dq = 0, big = 0;
      for (int e = 0; e < Dh; e++) {
        S += BQ[e] * BK[e];
        dq += EQ[e] * (BK[e] + EK[e]) + BQ[e] * EK[e];
        big += (BQ[e] + EQ[e]) * (BK[e] + EK[e]);
      }
      double delta = scale * (dq + gam(s->u, Dh) * big) + s->u * scale * big;
      S = scale * S + delta;
      double R = 2 * delta + 4 * s->u * S + 5 * s->u + gam(s->u, n);
      double eR = R <= 690 ? exp(R) : 1e300; /* NaN too */
      for (int e = 0; e < Dh; e++) {
        double bvv = BV[hd * Dh + e], evv = EV[hd * Dh + e];
        EV[hd * Dh + e] = cap((eR - 1) * bvv + eR * evv + gam(s->u, n + 1) * eR * (bvv + evv) +
                              2 * s->leak * bvv);
      }
    }
    nb_lin(s, wo, bo, H * Dh, D, BV, EV, B2, E2);
    nb_add(s, B, E, B2, E2, D);
    const float *wi = P("mlp.w_in"), *bi = P("mlp.b_in"), *wt = P("mlp.w_out"),
                *bt = P("mlp.b_out");
#undef P
    nb_lin(s, wi, bi, D, F, B, E, BQ, EQ); /* ReLU keeps B and E */
    nb_lin(s, wt, bt, F, D, BQ, EQ, B2, E2);
    nb_add(s, B, E, B2, E2, D);
  }
  nb_lin(s, raspN_data(mm, "unembed"), raspN_data(mm, "unembed_b"), D, O, B, E, B2, E2);
  double dev = 0;
  for (int o = 0; o < O; o++) dev = E2[o] > dev || E2[o] != E2[o] ? E2[o] : dev;
  raspM_free(B), raspM_free(E), raspM_free(B2), raspM_free(E2);
  raspM_free(BQ), raspM_free(EQ), raspM_free(BK), raspM_free(EK);
  raspM_free(BV), raspM_free(EV);
  return dev < 1e300 ? dev : 1e300;
}

int raspG_noise_bound(const raspG_model *g, double u, double *eps, double *dev0) {
  /* the bound composed over the units (cb_bound, at compile time) where it
  ** proves more than the per-dimension one */
  if (u == RASPG_FP32_U && g->cb_dev0 >= 0) {
    double e1, d1;
    int ok1 = nb_bound_dims(g, u, &e1, &d1);
    *eps = ok1 && e1 > g->cb_eps ? e1 : g->cb_eps;
    *dev0 = ok1 && d1 < g->cb_dev0 ? d1 : g->cb_dev0;
    return 1;
  }
  return nb_bound_dims(g, u, eps, dev0);
}

static int nb_bound_dims(const raspG_model *g, double u, double *eps, double *dev0) {
  nb s = {&g->model, u, 0, g->attn_leak};
  double limit = g->logit_scale / 4;
  *eps = 0;
  *dev0 = nb_logit_dev(&s);
  if (*dev0 < 0 || !(*dev0 < limit)) return 0;
  /* the deviation grows with eps: bisect on a log scale */
  double lo = -30, hi = 0;
  s.eps = 1;
  if (nb_logit_dev(&s) < limit) {
    *eps = 1;
    return 1;
  }
  for (int it = 0; it < 50; it++) {
    double mid = (lo + hi) / 2;
    s.eps = pow(10, mid);
    if (nb_logit_dev(&s) < limit) lo = mid;
    else hi = mid;
  }
  *eps = lo <= -30 ? 0 : pow(10, lo);
  return 1;
}

void raspG_print_stats(const raspG_model *g, FILE *out) {
  const rasp_model_config *c = &g->model.cfg;
  fprintf(out, "d_model %d, layers %d, heads %d (d_head %d), d_mlp %d, n_out %d, %s\n",
          c->d_model, c->n_layers, c->n_heads, c->d_head, c->d_mlp, c->n_out,
          c->causal ? "causal" : "non-causal");
  fprintf(out, "heads per layer:");
  for (int l = 0; l < c->n_layers; l++) fprintf(out, " %d", g->heads[l]);
  fprintf(out, "\nMLP widths:");
  for (int l = 0; l < c->n_layers; l++) fprintf(out, " %d", g->mlp_width[l]);
  fprintf(out, "\nparameters: %zu\n", g->model.nparams);
  fprintf(out, "logit margin %.4g (--logit-scale; a right output's cross-entropy <= %.3g)\n",
          g->logit_scale, raspG_logit_ce_bound(g->n_out, g->logit_scale));
  if (g->attn_margin >= 0) {
    fprintf(out, "min attention margin %.4g (score gap in logits) at %s\n", g->attn_margin,
            g->attn_at);
    double s1 = score_scale(2 * (log((double)g->n + 1) + 21), c->d_head);
    fprintf(out, "attention gain %g (--attn-gain; scores scaled by %g, %g times gain 1's): "
            "per-key leak e^-%.4g = %.3g (a key at the smallest margin, against a selected "
            "key); proven total leak <= %.3g\n",
            g->attn_gain, g->score_scale, g->score_scale / s1, g->attn_margin,
            exp(-g->attn_margin), g->attn_leak);
  } else
    fprintf(out, "min attention margin: no heads\n");
  if (g->mlp_margin >= 0)
    fprintf(out, "min MLP margin %.4g (distance from a hinge) at %s\n", g->mlp_margin, g->mlp_at);
  else
    fprintf(out, "min MLP margin: no MLP units\n");
  if (g->moves_assumed)
    fprintf(out, "moves: %d head%s move%s one selected number where the program averages; %d "
            "assume%s %s (the first: %s), which the program does not "
            "prove: every claim below holds on inputs that keep it, --check tests them "
            "(--moves prove: exact means instead)\n",
            g->moves, g->moves == 1 ? "" : "s", g->moves == 1 ? "s" : "", g->moves_assumed,
            g->moves_assumed == 1 ? "s" : "",
            g->moves_one ? "one selected key per query (--moves one)" : "the selected values are equal",
            g->moves_at);
  else if (g->moves)
    fprintf(out, "moves: %d head%s move%s one selected number where the program averages; the "
            "program proves the selected values equal at every one\n",
            g->moves, g->moves == 1 ? "" : "s", g->moves == 1 ? "s" : "");
  if (g->sharpened)
    fprintf(out, "sharpened: %d head%s scaled by up to %g beyond the model's score scale, where "
            "the weight leaking past the selected keys kept a unit from being proven\n",
            g->sharpened, g->sharpened == 1 ? "" : "s", g->gain_max);
  if (g->precision == RASPG_FP32 && !g->fallbacks)
  {
    /* a count, not a verdict: fp32 keeps the size rule, so a unit the bound
    ** does not prove is still compiled as it is (--check measures it);
    ** with require_proof every unit is proven and this reads "N of N" */
    fprintf(out, "fp32: proven exact against rounding: %d of %d heads, MLP units and readout",
            g->checked - g->unproven, g->checked);
    if (g->unproven)
      fprintf(out, "; not proven: %d, the first %s (in fp32 the encodings are chosen by size, not "
              "by this bound: --check measures)", g->unproven, g->unproven_at);
    fprintf(out, "\n");
  }
  else
    fprintf(out, "%s: every head, MLP unit and the readout proven against rounding; %d node%s "
            "compiled categorically (numerical not proven)\n",
            raspG_precision_name(g->precision), g->fallbacks, g->fallbacks == 1 ? "" : "s");
  double eps, dev0;
  if (raspG_noise_bound(g, RASPG_FP32_U, &eps, &dev0))
    fprintf(out, "proven: float32 rounding moves a logit by <= %.3g (< margin/4); every weight "
            "may move by up to %.3g (uniform per-weight noise) with every output right\n",
            dev0, eps);
  else
  {
    /* the noise bounds compose the errors over the whole model, more
    ** coarsely than the per-unit proof above, which can prove every unit
    ** where they prove nothing: say so, rather than seem to contradict it */
    char reach[64];
    if (dev0 < 1e300) snprintf(reach, sizeof reach, "reaches %.3g", dev0);
    else snprintf(reach, sizeof reach, "has no finite bound");
    fprintf(out, "not proven: neither noise bound (doc/compiler.md) holds for float32 rounding "
            "alone (the per-dimension one %s, not below margin/4 = %.3g)%s\n", reach,
            g->logit_scale / 4,
            g->precision == RASPG_FP32 && !g->unproven && g->checked
                ? "; they are coarser than the per-unit proof above, which holds" : "");
  }
}

double raspG_default_logit_scale(int n_out) {
  return n_out < 2 ? 1.0 : log(1000.0 * (n_out - 1));
}

double raspG_logit_ce_bound(int n_out, double scale) {
  return n_out < 2 ? 0.0 : log1p((n_out - 1) * exp(-scale));
}
