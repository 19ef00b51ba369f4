/*
** rcompile_int.h -- the compiler's insides, shared by its files (not
** installed; nothing here is part of librasp's API).  rcompile.c's essay is
** the design; each file's own essay says what it proves or builds.
**
**   rcompile.c         the driver: compile_once's steps, the force-and-
**                      recompile loop, raspG_compile and raspG_schedule
**   rcompile_unit.c    elements, units and views, linear forms (numbers)
**   rcompile_plan.c    value sets of means, selectors, planning (plan)
**   rcompile_sched.c   the schedule, liveness and residual dimensions
**   rcompile_write.c   the weights: MLP units, heads, embeddings, layers,
**                      the readout
**   rcompile_round.c   the precision essay and the rounding arithmetic
**   rcompile_margin.c  head and MLP margins
**   rcompile_prove.c   the readout's margin, forcing, prove
**   rcompile_cbound.c  the noise bound composed over the units
**   rcompile_layout.c  STEM.json's layout
**   rcompile_fast.c    the sparse forward pass (raspG_run)
**   rcompile_noise.c   the proven noise level and --stats
**
** The compile's state is one gc: its inputs, the unit table, per-node
** planning tables and the proof's scratch.  A function one file defines
** for another is raspG_-prefixed and hidden (RASPG_INTERNAL); a small
** helper many files read is static inline here.
*/
#ifndef RASP_RCOMPILE_INT_H
#define RASP_RCOMPILE_INT_H

#include "rcompile.h"

#include "rcausal.h"
#include "reval.h"
#include "rfacts.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rmem.h"

/* Functions one compiler file defines for another: not exported from the
** shared library. */
#define RASPG_INTERNAL __attribute__((visibility("hidden")))

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
  double why_by, why_lim; /* where why is a bound that fails (a leak or an
                             unequal weighing): how far it can move the
                             value, and how far it may (0, 0: none) */
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
  int qw_residue;  /* prove: a quantized width refused for what its
                      dimension held before it (FORCE_FRESH next time) */
  double qv;       /* its BOS value weight, a power of two */
  int cw;          /* --ln stock: a width counted (plan_count_width): the
                      head weighs every visible key 1/(n + 1) and BOS the
                      rest, its value the selector's indicator, so it holds
                      count/(n + 1); its query's gate reads the indices */
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
  unsigned char *numq; /* per IR node: a select read through a numerical query */
  unsigned char *numeq; /* per IR node: a select realised as -(k - q)^2 */
  view *eqv;       /* per select [2 id], [2 id + 1]: its key and query views
                      when need_num decoded one for it (val NULL: not) */
  unsigned char *ornot; /* per IR node: a select under an or / not */
  unsigned char *wsel; /* per IR node: a select a sel_width reads */
  unsigned char *truth; /* per IR node: every reader reads only its truth (a
                           where's condition), and so do those of the nodes
                           raspF_canon merges with it (truth_readers) */
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
  double ln_tiny;  /* --ln pre and rms: what a layer norm can move a stored value it
                      does not return exactly by (rcompile_ln.c); prove()
                      adds it to every error that is not 0 */
  /* --ln stock (rcompile_lnstock.c): the proof charges a stock layer norm's
  ** rounding at every read (stock 1): stock_M bounds |the computed mean|,
  ** stock_ns the sink rows a reader adds to its sum */
  int stock, stock_ns;
  double stock_M;
  /* ... and BOS's residual (raspG_stock_bos): per layer L, per dimension r
  ** of the model the proof sees, a bound on how far BOS's residual at L's
  ** attention is from is_bos's one-hot (stock_bos[L d0 + r]); NULL where
  ** no bound was found (stock_bos_why says why), which the readers of BOS
  ** then cannot charge, so the norms are not proven; stock_bos_max the
  ** largest entry */
  double *stock_bos, stock_bos_max;
  const char *stock_bos_why;
} gc;

/* A compile's force entry per IR node (the tokens last): FORCE_CAT, the
** node must be categorical; the four bits above it, a head's extra gain
** (log2, head_gain); then the flags below. */
#define FORCE_CAT 1
#define FORCE_GAIN_MAX 4 /* at most 2^4 times the model's score scale */
#define FORCE_STEEP 0x20 /* a table (M_PAIR) written steep (mlp_pair) */
#define FORCE_CLASSIC 0x40 /* a width not quantized (qwidth_value) */
#define FORCE_FRESH 0x80 /* a quantized width in dimensions no unit held
                            before it (raspG_alloc_dims) */
/* The gain bits of a force entry (log2 of a head's extra gain). */
static inline int force_gain(unsigned char f) { return (f & (FORCE_STEEP - 2)) >> 1; }

/* Whether node id (-1: the tokens) must be categorical. */
static inline int forced(const gc *g, int id) {
  return g->allcat || (g->force && (g->force[id < 0 ? g->ir->nnodes : id] & FORCE_CAT));
}

/* The factor head unit u's scores are written with beyond the model's
** score scale: 2^k, k the bits above FORCE_CAT of its node's force entry
** (prove raises it where the weight leaking past the selected keys is
** what keeps a head from being proven). */
static inline double head_gain(const gc *g, const unit *u) {
  if (!g->force || u->node < 0) return 1;
  return ldexp(1, force_gain(g->force[u->node]));
}

/* ---- small helpers many files read */

/* Elements as numbers (a symbol is not one). */
static inline int is_num(rasp_elem e) { return e.den != RASP_DEN_SYM; }
static inline double dval(rasp_elem e) {
  if (e.den == RASP_DEN_SYM) return 0;
  if (e.den == RASP_DEN_BOOL) return (double)e.num;
  return (double)e.num / (double)e.den;
}

/* What a width head writes at BOS (BOS alone selected: weight 1). */
static inline double qwidth_bos(const unit *u) { return u->qw ? QW_B + u->qv : 1; }
/* The unit node's view reads. */
static inline int unit_of(gc *g, int node) { return g->nv[node].unit; }

#define NUMMIN 32 /* a unit with more integer values than this is numerical (smaller
                     ** ones stay one-hot: cheap, and gentle for training) */

/* A view read as a number: a linear form over residual dimensions
** (rcompile_unit.c, "numbers"). */
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
static inline int fact_int(raspF_value f) {
  return f.kind == RASPF_K_INT && f.lo > -INTWIN && f.hi < INTWIN;
}
static inline int int_elem(rasp_elem e) { return fact_int(raspF_elem_value(e)); }

/* A layer's MLP as the writers fill it (or count it: w_in NULL). */
typedef struct wctx {
  gc *g;
  int d, dmlp, dh;
  float *w_in, *b_in, *w_out; /* this layer's MLP, NULL when counting */
  int h;                      /* next hidden unit */
} wctx;
/* The first residual dimension of unit uid. */
static inline int udim(gc *g, int uid) { return g->u[uid].dim; }

/* A unit's residual dimensions. */
static inline int usize(const unit *u) { return u->cat ? u->nvals : u->sq ? 2 : 1; }

/* The unit roundoff of precision p (RASPG_FP32, _FP16, _BF16). */
static const int prec_bits[3] = {24, 11, 8};
static inline double prec_u(int p) { return ldexp(1, -prec_bits[p]); }

/* ---- rcompile_unit.c: elements, units and views, numbers */

RASPG_INTERNAL int raspG_ecmp(rasp_elem a, rasp_elem b);
RASPG_INTERNAL int raspG_cmp_dbl(const void *a, const void *b);
RASPG_INTERNAL int raspG_uniq(rasp_elem *v, int n);
RASPG_INTERNAL int raspG_find(const rasp_elem *v, int n, rasp_elem x);
RASPG_INTERNAL int raspG_eval_elem(gc *g, const rasp_ir_node *nd, const rasp_elem *a,
                                   rasp_elem *out);
RASPG_INTERNAL int raspG_pred_holds(gc *g, const rasp_ir_node *nd, rasp_elem k, rasp_elem q);
RASPG_INTERNAL int raspG_new_unit(gc *g, int kind, int cat, rasp_elem *vals, int nvals, int node);
RASPG_INTERNAL int raspG_new_head(gc *g, int cat, rasp_elem *vals, int nvals, int node, int hmode,
                                  int selnode, const view *hv, rasp_elem dflt);
RASPG_INTERNAL int64_t raspG_qwidth_value(double qv, int w);
RASPG_INTERNAL double raspG_qwidth_scale(const gc *g, int id, int wlo);
RASPG_INTERNAL void raspG_view_alloc(gc *g, view *v, int unit_id);
RASPG_INTERNAL void raspG_view_free(view *v);
RASPG_INTERNAL void raspG_view_copy(gc *g, view *dst, const view *src);
RASPG_INTERNAL void raspG_view_identity(gc *g, view *v, int unit_id);
RASPG_INTERNAL rasp_elem *raspG_view_image(const view *v, int *count);
RASPG_INTERNAL void raspG_need_cat(gc *g, view *v, int node);
RASPG_INTERNAL raspF_value raspG_view_fact(const gc *g, const view *v, int id);
RASPG_INTERNAL int raspG_lf_build(gc *g, const view *v, int sq, double sh, lform *f, double *lo,
                                  double *hi);
RASPG_INTERNAL int raspG_lf_ok(gc *g, const view *v);
RASPG_INTERNAL int raspG_need_num(gc *g, view *v, int node);
RASPG_INTERNAL void raspG_lf_write(gc *g, const lform *f, float *W, int ld, int col, double coef);
RASPG_INTERNAL void raspG_gc_free(gc *g);

/* ---- rcompile_plan.c: planning */

RASPG_INTERNAL int raspG_view_affine(gc *g, const view *v, double *a, double *b);
RASPG_INTERNAL int raspG_plan(gc *g, const rasp_ir *ir, const raspG_opts *o,
                              const unsigned char *force, view *ov, int *quadp, rasp_error *err);

/* ---- rcompile_sched.c: schedule, liveness and dimensions */

RASPG_INTERNAL void raspG_unit_sources(const unit *u, int *src, int *ns);
RASPG_INTERNAL void raspG_schedule_units(gc *g);
RASPG_INTERNAL void raspG_mark_used(gc *g, int root);
RASPG_INTERNAL void raspG_accept_aliases(gc *g, int readout);
RASPG_INTERNAL void raspG_liveness(gc *g, int readout);
RASPG_INTERNAL int raspG_alloc_dims(gc *g, int policy);
RASPG_INTERNAL void raspG_fill_sched(gc *g, const view *ov, raspG_sched *out);

/* ---- rcompile_write.c: weights */

RASPG_INTERNAL int raspG_proof_driven(const gc *g);
RASPG_INTERNAL int raspG_exact_erase(const gc *g);
RASPG_INTERNAL double raspG_score_scale(double beta, int dh);
RASPG_INTERNAL int raspG_layer_width(gc *g, int l, int d, int dh, int heads);
RASPG_INTERNAL void raspG_size_heads(gc *g, raspG_model *out, rasp_model_config *cfg);
RASPG_INTERNAL void raspG_write_embeddings(gc *g, rasp_model *m);
RASPG_INTERNAL void raspG_write_layer(gc *g, raspG_model *out, int l);
RASPG_INTERNAL void raspG_write_readout(gc *g, raspG_model *out, const view *ov, int quad);

/* ---- rcompile_round.c: rounding */

RASPG_INTERNAL double raspG_pow2_grain(double x);
RASPG_INTERNAL double raspG_uv_dot(const gc *g, int uid, int a, const float *W, int ld, int col,
                                   int p, double *t, double *wre);
RASPG_INTERNAL double raspG_dev_grow(double D, int nadd, double T);
RASPG_INTERNAL double raspG_dev_grow_on(double D, int nadd, double T, double G);
RASPG_INTERNAL double raspG_aerr_val(const gc *g, int uid, int a, const float *W, int ld, int col);
RASPG_INTERNAL void raspG_aerr_split(const gc *g, int uid, int a, const float *W, int ld, int col,
                                     double *z, double *nz, int *m);
RASPG_INTERNAL double raspG_dev_grow_z(double Dz, double Dnz, int m, double T);
RASPG_INTERNAL int raspG_nz_exact(const gc *g, int i);
RASPG_INTERNAL double raspG_col_max(const gc *g, int uid, int col);
/* The sum of |W[r][col]| over a column's rows (rows x ld), and how many
** are not 0 (nnz, unless NULL). */
RASPG_INTERNAL double raspG_col_abs(const float *W, int rows, int ld, int col, int *nnz);
RASPG_INTERNAL double raspG_uv_grain(const gc *g, int uid, int a, const float *W, int ld, int col,
                                     float w1);
RASPG_INTERNAL int raspG_int_weights(const gc *g, int uid, const float *W, int ld, int col,
                                     int with_one);
RASPG_INTERNAL double raspG_embed_kappa(const gc *g, int uid, int p);
RASPG_INTERNAL double raspG_unit_max(const gc *g, int uid);
RASPG_INTERNAL double raspG_unit_gap(const gc *g, int uid);
RASPG_INTERNAL int raspG_comp_rel(const gc *g, const comp *c, int a, int b);
RASPG_INTERNAL double raspG_leak_err(const gc *g, int uid, const float *W, int ld, int col, int p);
RASPG_INTERNAL double *raspG_col_vectors(const gc *g, int uid, const float *W, int rows, int dh,
                                         int c0, int c1, int p, double *amax, double *emax);
RASPG_INTERNAL double raspG_vsrc_dev(gc *g, const unit *u, rasp_model *m, int col);

/* ---- rcompile_margin.c: margins */

RASPG_INTERNAL int raspG_head_margin(gc *g, unit *u, rasp_model *m, int p);
RASPG_INTERNAL double raspG_dim_err(const gc *g, int uid, int a, int k);
RASPG_INTERNAL int raspG_mlp_margin(gc *g, rasp_model *m, int l, int h0, int h1, const int *src,
                                    int ns, int p, double *mg, double *nd, int *exact,
                                    double *otot);
RASPG_INTERNAL double raspG_aerr_cols(const gc *g, int uid, int a, const float *W, int ld, int c0,
                                      int c1);

/* ---- rcompile_prove.c: the proof */

RASPG_INTERNAL int raspG_readout_margin(gc *g, raspG_model *out, const view *ov, int p, double *mg,
                                        double *nd);
RASPG_INTERNAL void raspG_node_where(const rasp_ir *ir, int node, char *buf, size_t size, int loc);
RASPG_INTERNAL int raspG_prove(gc *g, raspG_model *out, const view *ov, int p,
                               unsigned char *force);

/* ---- rcompile_cbound.c: the composed noise bound */

RASPG_INTERNAL double raspG_cb_colerr(const gc *g, const float *W, int ld, int col, int bos,
                                      double *T);
RASPG_INTERNAL void raspG_cb_bound(gc *g, raspG_model *out, const view *ov);

/* ---- rcompile_layout.c: the layout */

RASPG_INTERNAL const char *raspG_unit_name(gc *g, const unit *u, char *buf, size_t size);
RASPG_INTERNAL char *raspG_layout_json(gc *g, const raspG_model *m, int root, const view *ov);

/* ---- rcompile_ln.c: pre-LN models (--ln pre) */

RASPG_INTERNAL void raspG_ln_plan(gc *g, raspG_model *out);
RASPG_INTERNAL int raspG_ln_apply(gc *g, raspG_model *out, rasp_error *err);
/* rcompile_ln.c's parts that --ln rms shares: per residual dimension a
** bound on |x| at every norm (fresh array of the model's d_model); the
** model widened to the norms' d_model (raspG_ln_widen: 1, or 0 with err);
** whether every unit's
** error and smallest value allow the norms (1, or 0 with out->ln_why). */
RASPG_INTERNAL double *raspG_ln_dim_bounds(gc *g, raspG_model *out);
RASPG_INTERNAL void raspG_ln_sums(gc *g, raspG_model *out, double *T, double *S);
RASPG_INTERNAL int raspG_ln_widen(const rasp_model *m0, int d1, int kind, rasp_model *m1,
                                  rasp_error *err);
RASPG_INTERNAL int raspG_ln_units_ok(gc *g, raspG_model *out);
RASPG_INTERNAL void raspG_ln_set_weights(rasp_model *m, int j0, int j1, float w);
RASPG_INTERNAL int raspG_ln_conclude(gc *g, raspG_model *out, rasp_model *m0, rasp_model *m1,
                                     int selftest_ok, const char *norms, const char *one,
                                     rasp_error *err);
/* --ln rms (rcompile_rms.c): chooses the constants before the proof (and
** gc.ln_tiny), and builds the pre-RMSNorm model from the proven one. */
RASPG_INTERNAL void raspG_rms_plan(gc *g, raspG_model *out);
/* --ln stock (rcompile_lnstock.c): p from the residual's bounds before the
** proof; the construction (balance, sinks, eps 4^p) after it. */
RASPG_INTERNAL void raspG_stock_plan(gc *g, raspG_model *out);
/* Tensor s of layer l ("attn.w_q", ...): rcompile_write.c. */
RASPG_INTERNAL float *raspG_layer_data(rasp_model *m, int l, const char *s);
RASPG_INTERNAL int raspG_stock_apply(gc *g, raspG_model *out, rasp_error *err);
/* The proof's charges for a stock layer norm (gc.stock; 0 without it):
** the rounding of one reader's sum over the norm's output (nnz nonzero
** rows, their terms' sizes t, their inputs' errors D, their |weights|
** summing to W1); what reading `one` with weight w1 costs; what reading
** unit i's stored dimension k adds to its error (prove() adds it). */
RASPG_INTERNAL double raspG_stock_sum_err(const gc *g, int nnz, double t, double D, double W1);
RASPG_INTERNAL double raspG_stock_one_err(const gc *g, double w1);
RASPG_INTERNAL double raspG_stock_read_err(const gc *g, int i, int k);
/* What BOS's residual at layer L's attention adds to a reader column's sum
** there (column col of W, d rows, stride ld), beyond the one-hot's read. */
RASPG_INTERNAL double raspG_stock_bos_err(const gc *g, int L, const float *W, int d, int ld, int col);
/* Every row of what a writer adds to the residual gets minus the sum of
** its first d0 entries at d0 (the balance dimension). */
RASPG_INTERNAL void raspG_ln_write_balance(rasp_model *m, int d0);
RASPG_INTERNAL int raspG_rms_apply(gc *g, raspG_model *out, rasp_error *err);

/* ---- rcompile_fast.c: the sparse forward pass */

RASPG_INTERNAL void raspG_fast_free(struct raspG_fast *f);
RASPG_INTERNAL struct raspG_fast *raspG_fast_build(rasp_model *m);

#endif
