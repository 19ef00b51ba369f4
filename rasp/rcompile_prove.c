/*
** rcompile_prove.c -- the proof over the whole model.
**
** The readout's margin, what a failed proof forces (categorical nodes, a
** sharper head, steep tables) and prove(), which walks every used unit in
** order of writing and decides whether the model is proven at its
** precision.
*/
#include "rcompile_int.h"

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
int raspG_readout_margin(gc *g, raspG_model *out, const view *ov, int p, double *mg, double *nd) {
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
    int right = raspG_find(out->out_vals, out->n_out, ov->val[a]);
    double err = 0, big = 0, t, wre;
    for (int j = 0; j < no; j++) {
      float w1 = one ? un[(size_t)1 * no + j] : 0.0f;
      lg[j] = raspG_uv_dot(g, uid, a, un, no, j, p, &t, &wre) + w1;
      if (p == RASPG_FP32) {
        int mc = w1 != 0;
        for (int k = 0; k < sz; k++) mc += un[(size_t)(ru->dim + k) * no + j] != 0;
        double tt = t + fabs((double)w1), gr = raspG_uv_grain(g, uid, a, un, no, j, w1);
        if (g->stock) { /* (no sum on a grain: the shifted terms are not) */
          int nnz;
          double W1 = raspG_col_abs(un, m->cfg.d_model, no, j, &nnz),
                 D = raspG_aerr_cols(g, uid, a, un, no, j, -1);
          R[j] = t * kap * up + wre + raspG_stock_one_err(g, w1) + raspG_stock_sum_err(g, nnz, tt, D, W1);
        }
        else if (kap == 0 && wre == 0 && gr >= 1 && tt <= ldexp(1, 24) * gr &&
            raspG_int_weights(g, uid, un, no, j, one)) {
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
            double w = fabs((double)un[(size_t)(ru->dim + k) * no + j]), e = raspG_dim_err(g, uid, a, k);
            double x = ru->cat ? (k == a) : k ? xa * xa : xa;
            int ex;
            if (w == 0 || e == 0) continue;
            P += w * e;
            if (frexp(w, &ex) != 0.5) rho += fmin(w * e, u32 * w * (fabs(x) + e));
          }
          double F = P + rho;
          R[j] = F > 0 ? rho + raspG_dev_grow_on(F, mc - 1, tt + F, gr) - F : 0;
        }
        else
        R[j] = t * kap * up + wre +
               mc * u32 / (1 - mc * u32) * (t + fabs((double)w1) + raspG_aerr_cols(g, uid, a, un, no, j, -1));
      } else {
        double e = t * kap * up + wre + fabs((double)w1 - raspG_round(p, w1)) + up * fabs(lg[j]) +
                   8 * ldexp(1, -24) * (t + fabs((double)w1)) + raspG_aerr_val(g, uid, a, un, no, j) +
                   raspG_leak_err(g, uid, un, no, j, p);
        if (e > err) err = e;
      }
      if (t > big) big = t;
    }
    for (int j = 0; j < no; j++) {
      if (j == right) continue;
      double lead = lg[right] - lg[j];
      if (lead < *mg) *mg = lead;
      if (p != RASPG_FP32) continue;
      double pe = R[right] + R[j] + raspG_aerr_cols(g, uid, a, un, no, right, j);
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

void raspG_node_where(const rasp_ir *ir, int node, char *buf, size_t size, int loc) {
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
  /* a quantized width refused for the residue under it: fresh dimensions
  ** next time; else not proven: the classic 1/(w + 1) next time */
  if (u->kind == U_HEAD && u->hmode == H_WIDTH && u->qw && u->qw_residue &&
      !(force[u->node] & (FORCE_FRESH | FORCE_CLASSIC)))
    force[u->node] |= FORCE_FRESH, added++;
  else if (u->kind == U_HEAD && u->hmode == H_WIDTH && u->qw && !(force[u->node] & FORCE_CLASSIC))
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
  for (int k = 0; k < 2; k++) u->ae[k] += u->kappa * ldexp(1, -24) * raspG_col_max(g, i, k);
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
      mx = fmax(mx, raspG_col_max(g, j, c));
    }
    double kap = v->kappa, e, xe = a + kap * u24 * mx;
    if (u->alias == j) /* its operand: all of it, unless the affine bound
                       ** counted it with the MLP's update (active_od) */
      e = u->ainplace ? 0 : xe;
    else if (raspG_exact_erase(g) && !v->cat && v->erase < u->ready)
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
  raspG_node_where(g->ir, node, where, sizeof where, 1);
  snprintf(out->unproven_at, sizeof out->unproven_at, "%s: %s", where,
           why ? why : "its margin is not proven");
}

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
  u->kappa = u->kind < U_HEAD         ? raspG_embed_kappa(g, i, p)
             : u->kind == U_MLP       ? 1
             : u->hmode == H_WIDTH    ? 4
                                      : m->cfg.max_len / 2.0 + 4; /* a sum of up to n terms */
  /* --ln stock: an embedded unit is exact where stored, and read through
  ** the norm as every unit is (prove_residue) */
  for (int k = 0; k < 2 && g->stock && u->kind < U_HEAD; k++) u->ae[k] += raspG_stock_read_err(g, i, k);
}

/* Head i's margin (head_margin), the model's largest leak and its smallest
** attention margin (*at_a: whose). */
static int prove_head(gc *g, raspG_model *out, int i, int p, int *at_a) {
  unit *u = &g->u[i];
  rasp_model *m = &out->model;
  int ok = raspG_head_margin(g, u, m, p);
  /* (a bound on a weight: at most 1) */
  out->attn_leak = fmin(1, fmax(out->attn_leak, fmax(u->leak, u->leak0)));
  if (u->margin < INFINITY && (out->attn_margin < 0 || u->margin < out->attn_margin ||
                               (u->margin == out->attn_margin && i < *at_a))) {
    out->attn_margin = u->margin, *at_a = i;
    raspG_node_where(g->ir, u->node, out->attn_at, sizeof out->attn_at, 1);
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
  raspG_unit_sources(u, src, &ns);
  int k = 0; /* distinct sources */
  for (int a = 0; a < ns; a++) {
    int dup = 0;
    for (int b = 0; b < k; b++) dup |= src[b] == src[a];
    if (!dup) src[k++] = src[a];
  }
  double mg = INFINITY, nd = 0, oe[2] = {0, 0}, ot = 0;
  int ex = 1;
  g->inplace = u->alias >= 0;
  ok = raspG_mlp_margin(g, m, u->layer, u->h0, u->h1, src, k, p, &mg, &nd, &ex, &ot);
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
  if (g->trace > 1) fprintf(stderr, "  h [%d,%d) oe %g %g ot %g ex %d combo %d od-dims:", u->h0, u->h1, oe[0], oe[1], ot, ex, g->od_combo);
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
      u->ae[c] = ex ? (o > 0 ? raspG_dev_grow(o, nt, T + o) : 0)
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
    raspG_node_where(g->ir, u->node, out->mlp_at, sizeof out->mlp_at, 1);
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
      u->ae[k] += r + fmin(u->ae[k] + r, ldexp(1, -24) * (raspG_col_max(g, i, k) + u->ae[k] + r));
    /* a quantized width is rounded to its integer by the same sums
    ** that add what its dimension held: anything there could carry
    ** the head's qv fl(1/(w + 1)) across a half, so none is allowed */
    if (u->qw && r > 0 && ok)
      ok = 0, u->qw_residue = 1,
      u->why = "its dimension holds what an earlier unit left (a quantized width needs it empty)";
  }
  /* --ln pre: a layer norm returns a stored value exactly unless it is
  ** below 2^(q-126) and not 0, and then moves it by at most ln_tiny
  ** (rcompile_ln.c); only a unit that can hold such a value (an error
  ** that is not 0, or a relative one) is charged */
  for (int k = 0; k < 2 && g->ln_tiny > 0 && !g->stock; k++)
    if (u->ae[k] > 0 || u->kappa > 0) u->ae[k] += g->ln_tiny;
  /* (--ln stock: no value is read exactly, fl(x - m) rounds) */
  u->nzx = ok && !g->stock && raspG_nz_exact(g, i);
  /* --ln stock: every reader reads it through a layer norm, fl(x - m)
  ** (raspG_stock_read_err; ln_tiny with it) */
  for (int k = 0; k < 2 && g->stock; k++) u->ae[k] += raspG_stock_read_err(g, i, k);
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
    if (!u->proven || !(u->leak * raspG_unit_max(g, i) <= ldexp(1, -60))) saved[u->node] += 2, raised++;
  }
  return raised;
}

/* --ln stock: whether unit u's inputs' errors (this proof's) sum below
** 1/8, the most a steep unit tolerates.  Past that a steep unit's slope 4
** passes them on four times over where a plain one passes them once, so
** making it steep makes things worse. */
static int steep_inputs_small(const gc *g, const unit *u) {
  int src[2 * MAXCOMPS + 4], ns;
  double e = 0;
  raspG_unit_sources(u, src, &ns);
  for (int k = 0; k < ns; k++) e += fmax(g->u[src[k]].ae[0], g->u[src[k]].ae[1]);
  return e < 0.125;
}

/* Proof-driven fp32 after a failure that nothing else mends: marks
** FORCE_STEEP every table (M_PAIR), and under --ln stock every one-hot
** where (M_WHERE) too, whose output reaches unit fail through any chain of
** sources (under --ln stock only those whose inputs' errors are small:
** steep_inputs_small).  A table
** unit written with its hinge on an integer passes the errors of its
** one-hot inputs on wherever it sits there, and a table reading a table
** sums them per unit (a 59 by 59 table behind a mean: 30 units, each 31
** inputs' errors), as a chain of wheres does (`lead = where(.., lead)`
** once per arm); steep, those errors stop at it.  Returns how many were
** new. */
static int prove_steepen(gc *g, int fail, unsigned char *force) {
  int src[2 * MAXCOMPS + 4], ns, added = 0;
  unsigned char *reach = raspM_alloc((size_t)g->nu + 1);
  memset(reach, 0, (size_t)g->nu + 1);
  reach[fail] = 1;
  for (int i = fail; i >= 0; i--) { /* (a unit's sources come before it) */
    if (!reach[i]) continue;
    const unit *u = &g->u[i];
    raspG_unit_sources(u, src, &ns);
    for (int k = 0; k < ns; k++) reach[src[k]] = 1;
    if (u->kind == U_MLP && (u->mkind == M_PAIR || (u->mkind == M_WHERE && g->o->ln == RASPG_LN_STOCK)) && u->node >= 0 &&
        !(force[u->node] & FORCE_STEEP) && (g->o->ln != RASPG_LN_STOCK || steep_inputs_small(g, u)))
      force[u->node] |= FORCE_STEEP, added++;
  }
  raspM_free(reach);
  return added;
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
    raspG_unit_sources(u, src, &ns);
    for (int k = 0; k < ns; k++)
      if (!g->u[src[k]].cat && g->u[src[k]].kind == U_HEAD) culprit = src[k];
  }
  const unit *c = &g->u[culprit];
  char where[192];
  raspG_node_where(g->ir, c->node, where, sizeof where, 0);
  char reader[192] = "";
  if (culprit != fail) {
    if (u->kind == U_MLP && u->mkind == M_DECODE && u->node == c->node)
      snprintf(reader, sizeof reader, "the MLP decoding them");
    else
      raspG_node_where(g->ir, u->node, reader, sizeof reader, 1);
    if (c->node >= 0)
      raspR_setc(g->err, RASP_E_INEXACT, g->ir->nodes[c->node].pos,
                 "compile: %s cannot be compiled exactly in %s: its values are too close "
                 "together (%s reads them with margin %.3g, and rounding can move that by up to "
                 "%.3g), and it has no categorical encoding",
                 where, raspG_precision_name(p), reader, u->margin, u->need);
  } else if (c->node >= 0 && failsrc >= 0 && u->why && u->why_lim > 0)
    /* (a leak or an unequal weighing: its score margin may be ample and
    ** the rounding it must absorb not even defined; what fails is how far
    ** the value can move) */
    raspR_setc(g->err, RASP_E_INEXACT, g->ir->nodes[c->node].pos,
               "compile: %s cannot be compiled exactly in %s: %s (it can move by up to %.3g, "
               "and at most %.3g is allowed), and it has no categorical encoding",
               where, raspG_precision_name(p), u->why, u->why_by, u->why_lim);
  else if (c->node >= 0)
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
int raspG_prove(gc *g, raspG_model *out, const view *ov, int p, unsigned char *force) {
  rasp_model *m = &out->model;
  int src[2 * MAXCOMPS + 4], ns, fail = -1, failsrc = 0, added = 0;
  out->attn_margin = out->mlp_margin = -1;
  out->attn_leak = 0;
  g->od = raspM_alloc(sizeof(double) * (size_t)m->cfg.d_model * 5);
  /* fp32 proof-driven: before any node is made categorical, the heads
  ** whose leak puts an error on their values are sharpened (rescaling):
  ** their errors are what every later rounding bound grows from */
  int rescale = raspG_proof_driven(g);
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
    if (ok && p == RASPG_FP16 && raspG_unit_max(g, i) > 65504)
      ok = 0, u->why = "its values exceed fp16's largest number, 65504";
    out->checked++;
    u->proven = ok;
    if (g->trace) {
      char nb[96];
      fprintf(stderr, "prove %-24s %s%s L%d ok=%d kappa=%g ae=[%g %g] nzx=%d margin=%g need=%g leak=%g%s%s\n",
              raspG_unit_name(g, u, nb, sizeof nb), u->kind == U_HEAD ? "head" : "mlp ",
              u->cat ? "" : u->sq ? "(x,x2)" : "(x)", u->layer, ok, u->kappa, u->ae[0], u->ae[1],
              u->nzx, u->margin, u->need, u->leak, ok ? "" : " why: ", ok ? "" : u->why ? u->why : "?");
    }
    if (!ok && p == RASPG_FP32 && !g->o->require_proof) { /* reported, not acted on: see above */
      if (!out->unproven++) unproven_note(g, out, u->node, u->why);
      continue;
    }
    if (!ok) {
      raspG_unit_sources(u, src, &ns);
      added += force_unit(g, i, force);
      for (int k = 0; k < ns; k++) added += force_unit(g, src[k], force);
      if (fail < 0) fail = i, failsrc = ns;
    }
  }
  raspM_free(ord);
  raspM_free(g->od);
  g->od = NULL;
  double rmg, rnd;
  int rok = raspG_readout_margin(g, out, ov, p, &rmg, &rnd);
  out->checked++;
  if (!rok && p == RASPG_FP32 && !g->o->require_proof) {
    if (!out->unproven++) unproven_note(g, out, g->u[ov->unit].node, "the readout's logit margin");
  }
  else if (!rok) {
    added += force_unit(g, ov->unit, force);
    if (fail < 0) fail = ov->unit, failsrc = -1;
  }
  if (g->u[0].sq && p == RASPG_FP16 && raspG_unit_max(g, 0) > 65504) added += force_unit(g, 0, force);
  if (rescale && (fail >= 0 || added)) {
    int raised = prove_sharpen(g, saved);
    if (raised) memcpy(force, saved, (size_t)g->ir->nnodes + 1), added = raised;
  }
  raspM_free(saved);
  /* then, before refusing, the tables upstream written steep */
  if (rescale && fail >= 0 && !added) added = prove_steepen(g, fail, force);
  if (fail < 0 && !added) return 0;
  if (added) return 1;
  return prove_refuse(g, p, fail, failsrc, rmg, rnd);
}
