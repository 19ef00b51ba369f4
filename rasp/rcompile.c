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
**     Where the proof refuses a unit such a table reaches, the table is
**     written steep, two units ReLU(4z - 6) - ReLU(4z - 7) of the same z
**     (FORCE_STEEP, mlp_pair).
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
** cannot is compiled as 1/(w+1) again (FORCE_CLASSIC).  Under --ln stock
** no width's scores can be made exact, so a width whose select compares
** every key with one constant query is counted instead (its keys weigh
** 1/(n+1) each, its value the select's indicator: plan_count_width), and
** one read only as a where's condition is whether any key is selected (a
** one-hot move of True: plan_truth_width).
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
** require_proof (`rasp compile`'s default; --unproven turns it off).  An
** assumed move (raspG_opts.moves) is proven on its premise: one value at
** the selected keys, or with RASPG_MOVES_ONE at most one selected key, so
** a lookup sums no ties (head_unique).  A quantized width refused for what
** its dimension held before it gets fresh dimensions next time
** (FORCE_FRESH, raspG_alloc_dims) before it falls back to 1/(w+1); a unit
** nothing else mends has the tables upstream of it written steep
** (FORCE_STEEP) before it is refused.
**
** Running.  raspG_run uses a sparse copy of the weights (sparse_forward):
** raspN_forward's sums in the same order without the zero terms, so the
** logits are bit-identical and --check is fast on large models; the same
** pass, every result rounded, emulates fp16 and bf16.
**
** Files.  One per phase, in the order above, sharing the compile's state
** (gc) through rcompile_int.h, which lists them; this one is the driver:
** compile_once as a plan of steps, and the loop that compiles again while
** the proof makes nodes categorical (compile_impl).
*/
#include "rcompile_int.h"

/* ---- the driver --------------------------------------------------------- */

static int compile_impl(const rasp_ir *ir, const raspG_opts *o, raspG_model *out,
                        raspG_sched *sched, rasp_error *err);

/* The schedule is the compiled model's.  In fp32 by size (require_proof
** 0) the encodings are chosen by size (prove only reports there), so the
** planner alone gives it; in
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
  if (!raspG_plan(g, ir, o, NULL, &ov, &quad, err)) return 0;
  raspG_fill_sched(g, &ov, out);
  raspG_view_free(&ov);
  raspG_gc_free(g);
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
  raspG_node_where(ir, first, where, sizeof where, 1);
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
  out->out_vals = raspG_view_image(ov, &out->n_out);
  out->logit_scale = o->logit_scale > 0 ? o->logit_scale : raspG_default_logit_scale(out->n_out);
  /* proof-driven, a numerical readout's scale is rounded up to a power of
  ** two: its logits X (2 v x - x^2 - v^2) are then sums of integer
  ** multiples of X, exact in float32 while they stay within 2^24 X
  ** (readout_margin), where another X rounds every term at |V| = 1000 */
  if (quad && raspG_proof_driven(g)) out->logit_scale = exp2(ceil(log2(out->logit_scale)));
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
    int dd = raspG_alloc_dims(g, pol), wmax = 1;
    for (int l = 0; l < nl; l++) {
      int wl = raspG_layer_width(g, l, dd, dh, out->heads[l] > 0);
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
  int d = raspG_alloc_dims(g, best);
  for (int l = 0; l < nl; l++) {
    out->mlp_width[l] = raspG_layer_width(g, l, d, dh, out->heads[l] > 0);
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
      raspG_node_where(g->ir, u->node, out->moves_at, sizeof out->moves_at, 1);
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
  if (!raspG_plan(g, ir, o, force, &ov, &quad, err)) return 0;
  g->u[2].used = 1; /* ONE */
  raspG_accept_aliases(g, ov.unit);
  rasp_model_config cfg = {0};
  raspG_size_heads(g, out, &cfg);
  raspG_liveness(g, ov.unit);
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
    raspG_write_embeddings(g, &out->model);
    /* attention sharpness: at gain 1 the weight leaking past a score gap of
    ** 1/2 stays below 1e-9 of the total; --attn-gain F scales beta by F
    ** (prove() measures the leak the weights give, whatever F is) */
    out->attn_gain = o->attn_gain > 0 ? o->attn_gain : 1;
    double beta = 2 * (log((double)g->n + 1) + 21) * out->attn_gain;
    out->score_scale = raspG_score_scale(beta, cfg.d_head);
    for (int l = 0; l < cfg.n_layers; l++) raspG_write_layer(g, out, l);
    raspG_write_readout(g, out, &ov, quad);
    out->precision = o->precision;
    if (o->ln == RASPG_LN_PRE) raspG_ln_plan(g, out); /* (before the proof: it charges
                                                      ** what the layer norms can move) */
    if (o->ln == RASPG_LN_RMS) raspG_rms_plan(g, out);
    if (o->ln == RASPG_LN_STOCK) raspG_stock_plan(g, out);
    pr = raspG_prove(g, out, &ov, o->precision, force);
  }
  if (pr != 0) {
    raspG_view_free(&ov);
    raspG_gc_free(g);
    raspG_free(out);
    return pr > 0 ? 2 : 0;
  }
  note_heads(g, o, out, force);
  /* (the schedule alone needs no bound; the noise bounds do not model
  ** layer norm, so a pre-LN model has none) */
  if (!sched && o->ln == RASPG_LN_NONE) raspG_cb_bound(g, out, &ov);
  if (o->ln != RASPG_LN_NONE) {
    out->cb_dev0 = -1;
    if (!(o->ln == RASPG_LN_PRE     ? raspG_ln_apply(g, out, err)
          : o->ln == RASPG_LN_STOCK ? raspG_stock_apply(g, out, err)
                                    : raspG_rms_apply(g, out, err))) {
      raspG_view_free(&ov);
      raspG_gc_free(g);
      raspG_free(out);
      return 0;
    }
  }
  out->model.json_extra = raspG_layout_json(g, out, ir->outputs[0], &ov);
  if (sched) raspG_fill_sched(g, &ov, sched);
  out->fast = raspG_fast_build(&out->model);
  raspG_view_free(&ov);
  raspG_gc_free(g);
  return 1;
}

static int compile_impl(const rasp_ir *ir, const raspG_opts *o, raspG_model *out,
                        raspG_sched *sched, rasp_error *err) {
  if (o->precision < RASPG_FP32 || o->precision > RASPG_BF16) {
    memset(out, 0, sizeof *out);
    raspR_setnoposc(err, RASP_E_USAGE, "compile: unknown precision %d", o->precision);
    return 0;
  }
  if (o->ln != RASPG_LN_NONE && o->precision != RASPG_FP32) {
    memset(out, 0, sizeof *out);
    raspR_setnoposc(err, RASP_E_USAGE, o->ln == RASPG_LN_PRE
                    ? "compile: --ln pre is for fp32 only (its layer norms are exact in float32's "
                      "arithmetic)"
                    : o->ln == RASPG_LN_STOCK
                    ? "compile: --ln stock is for fp32 only (its construction is float32's and "
                      "float64's)"
                    : "compile: --ln rms is for fp32 only (its construction and proof are "
                      "float32's and float64's)");
    return 0;
  }
  /* proof-driven fp32: a model the bound proves whole with the default
  ** weights is kept as it is (the same bytes); only where it does not are
  ** the proof-driven forms (proof_driven) and fallbacks used */
  unsigned char *force = raspM_alloc((size_t)ir->nnodes + 1);
  int r;
  /* (o0: the same options with the default weights) */
  /* (the schedule alone, sched, takes the same path, so that `rasp layers`
  ** counts the model this builds) */
  int pd = o->require_proof && o->precision == RASPG_FP32;
  raspG_opts o0 = *o;
  o0.require_proof = 0;
  if (pd) {
    r = compile_once(ir, &o0, force, out, sched, err);
    /* (norms not proven are not a proven model either: the rounds below
    ** refuse them, raspG_ln_conclude) */
    if (r == 1 && out->unproven == 0 && (o->ln == RASPG_LN_NONE || out->ln_proven)) {
      raspM_free(force);
      return 1;
    }
    if (r == 0) { /* (fp32 by size refuses nothing: a real error) */
      raspM_free(force);
      return 0;
    }
    if (sched) raspG_sched_free(sched);
    raspG_free(out);
    memset(force, 0, (size_t)ir->nnodes + 1);
  }
  /* every round makes at least one more node categorical (or a head
  ** sharper), or stops */
  while ((r = compile_once(ir, o, force, out, sched, err)) == 2) {}
  if (r == 0 && pd) fallback_note(ir, o, force, err);
  /* heads were sharpened, and the proof-driven forms chosen, before nodes
  ** were made one-hot or tables steep: with those nodes one-hot and those
  ** tables steep, the default weights (and then the default scale with
  ** the proof-driven forms) may be proven too, with fewer large weights
  ** and no more dimensions */
  int steeps = 0;
  for (int i = 0; i <= ir->nnodes && r == 1; i++) steeps += (force[i] & FORCE_STEEP) != 0;
  if (r == 1 && pd && (out->fallbacks || steeps)) {
    for (int i = 0; i <= ir->nnodes; i++) force[i] &= FORCE_CAT | FORCE_STEEP | FORCE_CLASSIC | FORCE_FRESH;
    for (int k = 0; k < 2; k++) {
      if (k == 1 && !out->sharpened) break;
      raspG_model plain;
      raspG_sched ps = {0};
      rasp_error e2 = {0};
      int r2 = compile_once(ir, k ? o : &o0, force, &plain, sched ? &ps : NULL, &e2);
      if (r2 != 1) continue;
      if (plain.unproven || plain.model.cfg.d_model > out->model.cfg.d_model) {
        raspG_sched_free(&ps);
        raspG_free(&plain);
        continue;
      }
      plain.fallbacks = out->fallbacks; /* (counted from force: the same nodes) */
      raspG_free(out);
      *out = plain;
      if (sched) raspG_sched_free(sched), *sched = ps;
      break;
    }
  }
  raspM_free(force);
  return r;
}

void raspG_free(raspG_model *g) {
  raspG_fast_free(g->fast);
  raspN_free(&g->model);
  raspM_free(g->out_vals);
  raspM_free(g->heads);
  raspM_free(g->mlp_width);
  memset(g, 0, sizeof *g);
}
