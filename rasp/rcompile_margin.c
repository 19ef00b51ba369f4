/*
** rcompile_margin.c -- the margins of heads and MLP units.
**
** head_margin and mlp_margin evaluate one head or one MLP unit on every
** value its inputs can take (rcompile_round.c's essay) and leave in the
** unit its margin, the rounding it must absorb and the error it passes on;
** active_od carries an MLP unit's hidden errors to its outputs at every
** combination of its inputs, and where those are too many to enumerate
** (--ln stock) twin_step lets a steep pair's units charge their outputs
** only their own rounding.
*/
#include "rcompile_int.h"

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
      for (int a = 0; a < nk; a++) k += raspG_comp_rel(g, c, a, b);
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
  double *V = raspG_col_vectors(g, vu, wv, d, dh, 0, ncol, RASPG_FP32, VA, VE);
  ae[0] = ae[1] = 0;
  for (int j = 0; j < ncol; j++) {
    okv &= raspG_int_weights(g, vu, wv, dh, j, 1) && VA[j] <= ldexp(1, 24);
    okv &= wv[j] == floorf(wv[j]); /* BOS's row: the default */
    int k = u->hmode == H_MOVE ? j : 0;
    double vmax = fmax(fmax(raspG_col_max(g, (int)(u - g->u), k), VA[j]), fabs((double)wv[j]));
    ae[k] = fmax(ae[k], VE[j] + 2 * (1 + ldexp(1, -20)) * leak * (vmax + VE[j]));
    for (int o = 0; o < d; o++) /* w_o: a copy */
      okv &= wo[(size_t)j * d + o] == 0 || (wo[(size_t)j * d + o] == 1 && o == u->dim + j);
  }
  for (int a = 0; a < g->u[vu].nvals * ncol && okv; a++) okv = V[a] == floor(V[a]);
  raspM_free(V);
  raspM_free(VA);
  return okv;
}

/* The error of one key's score s = sum of q_j k_j over its nonzero columns
** kn[t0..t1) (key row kr, query row qb): e, what its inputs' errors bring
** (qe the query's share), grown by the products' and the sum's rounding
** at p.  T is the sum of the terms' sizes, gr their common power-of-two
** grain, sint whether every term is an integer. */
static double key_err(const gc *g, int p, double e, double qe, double s, double T, double gr,
                      int sint, const double *qb, const double *kr, const int *kn, int t0,
                      int t1, const double *QE, const double *KE, int ncol) {
  double up = prec_u(p), lim = ldexp(1, prec_bits[p]);
  /* integer features off by a little: dev_grow's argument (fp32).
  ** A product Q_j K_j whose exact value P is an integer the format
  ** holds, off by err_j from its inputs' errors, rounds to a float
  ** no further from P + err_j than P is (err_j), nor than half an
  ** ulp (u |P + err_j|); a key column that is 0 only by its error
  ** rounds relatively (u of its share of qe) */
  if (e > 0 && sint && T + e <= lim * gr) {
    double ep = up * qe;
    for (int t = t0; t < t1; t++) {
      int j = kn[t];
      double kv = kr[j];
      double ej = QE[j] * fabs(kv) + (fabs(qb[j]) + QE[j]) * KE[j];
      ep += fmin(ej, up * (fabs(qb[j] * kv) + ej));
    }
    e = raspG_dev_grow_on(e + ep, ncol, T + e + ep, gr);
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
    int k = t1 - t0;
    if (p == RASPG_FP32) {
      if (!(e == 0 && !g->cb && T <= lim * gr))
        e += up * (k > 1 ? k : 1) * (T > fabs(s) ? T : fabs(s)) * (1 + ldexp(1, -20));
    } else {
      double acc = (k > 1 ? k - 1 : 0) * ldexp(1, -24) * (1 + ldexp(1, -20)) * T;
      if (e == 0 && s == floor(s) && fabs(s) <= lim && acc < 0.25) e += 2 * acc;
      else e += acc + up * (fabs(s) + acc);
    }
  }
  return e;
}

/* --ln stock: column col of W (d rows, stride dh) read through the norms
** at a position where its one nonzero term is weight w times 1 (w 0: every
** term 0): w's read of 1 and the sum over the column's rows. */
static double stock_col_err(const gc *g, const float *W, int d, int dh, int col, double w) {
  int nnz;
  double W1 = raspG_col_abs(W, d, dh, col, &nnz);
  return raspG_stock_one_err(g, w) + raspG_stock_sum_err(g, nnz, fabs(w), 0, W1);
}

/* --ln stock: what the norms add to a head's values beyond what its errors
** above carry.  Each value column is a sum over the norm's output: at a
** key holding a value (col_vectors' errors VE, the value unit's errors D
** among them) and at BOS's key, whose value (the default: is_bos's row of
** w_v, read as fl(1 - m), and what BOS's residual's bound moves it by,
** raspG_stock_bos_err) no unit's error holds; the head's output is a
** weighted mean of those, so it is off by at most the larger, A.  What
** the errors above already charge for the values, C, is D (vsrc, the
** caller's vsrc_dev), or VE itself where head_unique set them (uniq); A
** less C is added (w_o copies each column), so D is not counted twice. */
static void head_stock_values(gc *g, unit *u, rasp_model *m, int uniq, const double vsrc[2]) {
  int d = m->cfg.d_model, dh = m->cfg.d_head, width = u->hmode == H_WIDTH;
  int ncol = u->hmode == H_MOVE ? 2 : u->hmode == H_CAT ? u->nvals : 1;
  char nm[64];
  snprintf(nm, sizeof nm, "layers.%d.attn.w_v", u->layer);
  const float *wv = raspN_data(m, nm) + (size_t)u->hslot * d * dh;
  double *VA = raspM_alloc(sizeof(double) * (size_t)(ncol + 1) * 2), *VE = VA + ncol + 1;
  double *V = width ? NULL : raspG_col_vectors(g, u->hv.unit, wv, d, dh, 0, ncol, RASPG_FP32, VA, VE);
  double A[2] = {0, 0}, C[2] = {0, 0};
  for (int j = 0; j < ncol; j++) {
    int k = u->hmode == H_MOVE ? j : 0;
    double eb = stock_col_err(g, wv, d, dh, j, wv[j]) + raspG_stock_bos_err(g, u->layer, wv, d, dh, j);
    A[k] = fmax(A[k], fmax(eb, width ? 0 : VE[j]));
    if (uniq && !width) C[k] = fmax(C[k], VE[j]);
  }
  if (u->hmode != H_MOVE) A[1] = A[0], C[1] = C[0];
  for (int k = 0; k < 2; k++) {
    if (!uniq) C[k] = vsrc[k];
    u->ae[k] += fmax(0, A[k] - C[k]);
  }
  raspM_free(V);
  raspM_free(VA);
}

/* fp32 (not under the composed bound): head u's absolute errors, from its
** leak and its values' own (vsrc_dev), or its lookup's (head_unique), and
** a quantized width's exactness.  Returns ok, cleared where a quantized
** width is not proven exact. */
static int head_fp32(gc *g, unit *u, rasp_model *m, int p, int ok, double leak, int avg,
                     int wexact) {
  int n = m->cfg.max_len, self = (int)(u - g->u), width = u->hmode == H_WIDTH;
  double up = prec_u(p);
  /* the leak, as a deviation, and the moved values' own.  Where e^-gap
  ** is below float32's subnormals (a large --attn-gain), expf still
  ** returns up to one subnormal ulp, 2^-149, per key: the leak carries
  ** n 2^-148 more, so the tiny deviations stay bounds */
  double lk = leak + (double)n * ldexp(1, -148), vsrc[2];
  for (int k = 0; k < 2; k++) {
    vsrc[k] = raspG_vsrc_dev(g, u, m, k);
    u->ae[k] = (raspG_col_max(g, self, k) > 0 ? 2 * (1 + 2 * up) * lk * raspG_col_max(g, self, k) : 0) +
               vsrc[k];
  }
  double ae[2];
  int uniq = ok && !avg && head_unique(g, u, m, lk, ae);
  if (uniq) u->kappa = 0, u->ae[0] = ae[0], u->ae[1] = ae[1];
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
  if (g->stock) head_stock_values(g, u, m, uniq, vsrc);
  return ok;
}

/* raspG_head_margin's state: the head's BOS score and its error, and what
** the components' scores give (the gaps G and Gp, the leak, the spread,
** the largest feature and score), shared by its steps: hm_bos, then
** hm_comp for each component (hm_query for each of its query values),
** hm_several where there are several, and hm_verdict. */
typedef struct hmst {
  gc *g;
  unit *u;
  const float *wq, *wk;
  int d, dh, n, p, width, avg, nc;
  double up, lim, lsc;
  float qbf, kbf;
  double sbos, ebns, blo, bhi, vmax, smax;
  double egate; /* --ln stock: what the gate column adds to a key's score but BOS's */
  double G, Gp, leak, spread;
  int wexact, unbounded;
  /* per component: the selected keys' lowest and highest score, the
  ** highest unselected one, the same with rounding (p...), and for a
  ** quantized width of several the selected keys' scores less and plus
  ** their own rounding (ens) and their terms' sizes */
  double *mh, *Mh, *Mf, *pmh, *pMh, *pMf, *emh, *eMh, *Tsel;
} hmst;

/* Whether the selected keys' scores, s exactly in real arithmetic and
** within [lo, hi] as computed, are s exactly: in fp32 where no other
** float32 lies in the bound (raspG_f32_pinned), elsewhere where the bound
** has no width. */
static int score_pinned(const hmst *st, double s, double lo, double hi) {
  return st->p == RASPG_FP32 ? raspG_f32_pinned(s, lo, hi) : lo == s && hi == s;
}

/* The BOS key's score at the BOS gate column and its error without the
** final scaling (equal scores scale alike), and with it. */
static void hm_bos(hmst *st) {
  gc *g = st->g;
  const unit *u = st->u;
  int dh = st->dh;
  st->qbf = st->wq[(size_t)1 * dh + u->bcol], st->kbf = st->wk[(size_t)0 * dh + u->bcol];
  float qbf = st->qbf, kbf = st->kbf;
  st->sbos = (double)qbf * kbf, st->vmax = fmax(fabs(qbf), fabs(kbf)), st->smax = fabs(st->sbos);
  double ebns = fabs((double)raspG_round(st->p, qbf) * raspG_round(st->p, kbf) - st->sbos);
  if (g->cb) { /* the BOS key's errors meet the query's columns */
    double Tq, Tk, eq, ek0;
    for (int j = 0; j < dh; j++) {
      eq = raspG_cb_colerr(g, st->wq, dh, j, 0, &Tq);
      ek0 = raspG_cb_colerr(g, st->wk, dh, j, 1, &Tk);
      ebns += (j == u->bcol ? eq * (fabs(kbf) + ek0) + fabs(qbf) * ek0 : (Tq + eq) * ek0);
    }
  }
  st->ebns = ebns;
  double ebos = st->up * fabs(st->sbos) + ebns;
  st->blo = st->sbos - ebos, st->bhi = st->sbos + ebos;
}

/* --ln stock: the gate column (query: `one`'s row, qbf; key: is_bos's,
** kbf) and the components' columns at BOS's key, read through the norms.
** The query's gate is qbf off by eq; BOS's key gate is kbf off by ek and
** every other key's 0 off by ek0 (its rows' shifted terms), which meets
** the query's gate in every key's score (egate); BOS's components' columns
** hold its units' 0, off by their shifted terms, which meet the queries'
** columns at their largest.  BOS's residual is not exactly is_bos's
** one-hot (the heads' defaults less what the shared MLP unit subtracts,
** each read through the norms): raspG_stock_bos_err adds what its bound
** moves each of BOS's columns by. */
static void hm_stock(hmst *st) {
  gc *g = st->g;
  const unit *u = st->u;
  int d = st->d, dh = st->dh;
  double qbf = fabs((double)st->qbf), kbf = fabs((double)st->kbf);
  double eq = stock_col_err(g, st->wq, d, dh, u->bcol, qbf);
  double ek = stock_col_err(g, st->wk, d, dh, u->bcol, kbf) +
              raspG_stock_bos_err(g, u->layer, st->wk, d, dh, u->bcol);
  double ek0 = stock_col_err(g, st->wk, d, dh, u->bcol, 0);
  double e = kbf * eq + (qbf + eq) * ek;
  st->egate = (qbf + eq) * ek0;
  for (int ci = 0; ci < u->nc; ci++) {
    const comp *c = &u->c[ci];
    int ncol = c->col1 - c->col0;
    double *QA = raspM_alloc(sizeof(double) * (size_t)(ncol + 1) * 2), *QE = QA + ncol + 1;
    double *Q = raspG_col_vectors(g, c->qu, st->wq, d, dh, c->col0, c->col1, st->p, QA, QE);
    for (int j = 0; j < ncol; j++)
      e += (QA[j] + QE[j]) * (stock_col_err(g, st->wk, d, dh, c->col0 + j, 0) +
                              raspG_stock_bos_err(g, u->layer, st->wk, d, dh, c->col0 + j));
    raspM_free(Q);
    raspM_free(QA);
  }
  st->ebns += e;
  double ebos = st->up * fabs(st->sbos) + st->ebns;
  st->blo = st->sbos - ebos, st->bhi = st->sbos + ebos;
}

/* A counted width (unit cw: plan_count_width): no components; every key
** scores the query's gate times its own, 0, and BOS the gate times 1,
** which at query position i is written as ln(n - i) / lsc, so that each
** of the i + 1 visible keys weighs exactly 1/(n + 1) in real arithmetic.
** The spread is twice the largest distance of any score from that design
** (every weight then within e^(spread lsc) of 1/(n + 1)): the gate
** entry's own rounding, its product's and scaling's (up each), and with
** --ln stock the reads (the query's index row, BOS's key gate with BOS's
** residual, another key's gate: stock_col_err); then the softmax's own
** rounding. */
static void hm_count(hmst *st) {
  gc *g = st->g;
  const unit *u = st->u, *ix = &g->u[1];
  int d = st->d, dh = st->dh, n = g->n;
  double kbf = st->wk[(size_t)0 * dh + u->bcol], ek = 0, ek0 = 0, sp = 0;
  if (g->stock) {
    ek = stock_col_err(g, st->wk, d, dh, u->bcol, kbf) +
         raspG_stock_bos_err(g, u->layer, st->wk, d, dh, u->bcol);
    ek0 = stock_col_err(g, st->wk, d, dh, u->bcol, 0);
  }
  for (int i = 0; i < n; i++) {
    double w = st->wq[(size_t)(ix->dim + i) * dh + u->bcol];
    double eq = g->stock ? stock_col_err(g, st->wq, d, dh, u->bcol, w) : 0;
    double s = w * kbf, design = log((double)(n - i)) / st->lsc;
    double eb = fabs(s - design) + fabs(w) * ek + eq * (fabs(kbf) + ek) + 2 * st->up * fabs(s);
    double ekey = (fabs(w) + eq) * ek0;
    sp = fmax(sp, eb + ekey);
    st->vmax = fmax(st->vmax, fabs(w)), st->smax = fmax(st->smax, fabs(s));
  }
  /* (and the softmax's own rounding, a few u of each weight for the
  ** exponentials and their sum of up to n + 1 terms, as a score) */
  st->spread = 2 * sp + (n + 4) * st->up / st->lsc;
  st->ebns = 0, st->blo = st->bhi = st->sbos = 0; /* (BOS is weighed by design, not beaten) */
}

/* One component's column vectors and each key's nonzero columns. */
typedef struct hmcomp {
  const comp *c;
  int ci, ncol, nk;
  double *K, *Q, *KA, *KE, *QA, *QE;
  int *kn, *ks;     /* key a's nonzero columns: kn[ks[a] .. ks[a+1]) */
  double *sc, *er;  /* per key value at the current query: score, error */
  double cmax;      /* the largest |score| */
} hmcomp;

/* Query value b of component k: every key's score and error, the
** component's extremes (st's per-component arrays), and for a single
** component the exact gaps and leak at this query value. */
static void hm_query(hmst *st, hmcomp *k, int b) {
  gc *g = st->g;
  const comp *c = k->c;
  int ci = k->ci, ncol = k->ncol, nk = k->nk, p = st->p, width = st->width;
  double up = st->up, lsc = st->lsc, sbos = st->sbos, ebns = st->ebns, blo = st->blo,
         bhi = st->bhi;
  const double *K = k->K, *QE = k->QE, *KE = k->KE;
  const double *qb = k->Q + (size_t)b * ncol;
  double qe = 0;
  for (int j = 0; j < ncol; j++) qe += (fabs(qb[j]) + QE[j]) * KE[j];
  double hmin = INFINITY, hmax = -INFINITY, fx = -INFINITY, lo = INFINITY, hi = -INFINITY,
         fhi = -INFINITY, lo2 = INFINITY, hi2 = -INFINITY;
  int qint = p == RASPG_FP32 && !g->cb;
  for (int j = 0; j < ncol && qint; j++) qint = qb[j] == floor(qb[j]);
  for (int a = 0; a < nk; a++) {
    double s = 0, e = qe + st->egate, T = 0, gr = INFINITY;
    int sint = qint;
    for (int t = k->ks[a]; t < k->ks[a + 1]; t++) {
      double kv = K[(size_t)a * ncol + k->kn[t]];
      s += qb[k->kn[t]] * kv;
      T += fabs(qb[k->kn[t]] * kv);
      gr = fmin(gr, raspG_pow2_grain(qb[k->kn[t]] * kv));
      e += QE[k->kn[t]] * fabs(kv);
      sint = sint && kv == floor(kv);
    }
    e = key_err(g, p, e, qe, s, T, gr, sint, qb, K + (size_t)a * ncol, k->kn, k->ks[a],
                k->ks[a + 1], QE, KE, ncol);
    double ens = e;
    e += up * fabs(s); /* the scaling's */
    k->sc[a] = s;
    k->er[a] = e;
    if (fabs(s) > k->cmax) k->cmax = fabs(s);
    if (raspG_comp_rel(g, c, a, b)) {
      st->Tsel[ci] = fmax(st->Tsel[ci], T);
      hmin = fmin(hmin, s), hmax = fmax(hmax, s), lo = fmin(lo, s - e), hi = fmax(hi, s + e);
      lo2 = fmin(lo2, s - ens), hi2 = fmax(hi2, s + ens);
    } else
      fx = fmax(fx, s), fhi = fmax(fhi, s + e);
  }
  st->mh[ci] = fmin(st->mh[ci], hmin), st->Mh[ci] = fmax(st->Mh[ci], hmax),
  st->Mf[ci] = fmax(st->Mf[ci], fx);
  if (hmin < INFINITY) st->emh[ci] = fmin(st->emh[ci], lo2), st->eMh[ci] = fmax(st->eMh[ci], hi2);
  st->pmh[ci] = fmin(st->pmh[ci], lo), st->pMh[ci] = fmax(st->pMh[ci], hi),
  st->pMf[ci] = fmax(st->pMf[ci], fhi);
  if (st->nc != 1) return;
  /* one component: the exact gaps and leak at this query value */
  double gap = INFINITY, pgap = INFINITY, ref;
  if (hmin < INFINITY) {
    gap = width ? fmin(hmin, sbos) - fx : hmin - fmax(fx, sbos);
    pgap = width ? fmin(lo, blo) - fhi : lo - fmax(fhi, bhi);
    st->spread = fmax(st->spread, width ? fmax(hi2, sbos + ebns) - fmin(lo2, sbos - ebns) : hi2 - lo2);
  }
  if (!width) {
    gap = fmin(gap, sbos - fx);
    pgap = fmin(pgap, blo - fhi);
  }
  if (hmin < INFINITY)
    st->wexact = st->wexact && hmin == hmax && hmin == sbos && score_pinned(st, hmin, lo2, hi2);
  st->G = fmin(st->G, gap);
  st->Gp = fmin(st->Gp, pgap);
  ref = hmin < INFINITY ? (width ? fmin(lo, blo) : lo) : blo;
  /* BOS is one key; the others are at most n, each weighing at most
  ** what the highest-scoring unselected key value gets */
  double lkb = hmin < INFINITY && !width ? exp(-(ref - bhi) * lsc) : 0;
  double lk = 0, lkd = 0;
  for (int a = 0; a < nk; a++)
    if (!raspG_comp_rel(g, c, a, b)) {
      lk = fmax(lk, exp(-(ref - k->sc[a] - k->er[a]) * lsc));
      lkd = fmax(lkd, exp(-(blo - k->sc[a] - k->er[a]) * lsc));
    }
  st->leak = fmax(st->leak, fmax(lkb + (double)st->n * lk, width ? 0 : (double)st->n * lkd));
}

/* Component ci: its key and query column vectors (their sizes and errors
** at p), each key's nonzero columns, then every query value (hm_query). */
static void hm_comp(hmst *st, int ci) {
  gc *g = st->g;
  hmcomp k;
  k.c = &st->u->c[ci];
  k.ci = ci;
  const comp *c = k.c;
  int ncol = c->col1 - c->col0, nk = g->u[c->ku].nvals, nq = g->u[c->qu].nvals;
  k.ncol = ncol, k.nk = nk;
  k.KA = raspM_alloc(sizeof(double) * (size_t)(ncol + 1) * 4), k.KE = k.KA + ncol + 1,
  k.QA = k.KE + ncol + 1, k.QE = k.QA + ncol + 1;
  k.K = raspG_col_vectors(g, c->ku, st->wk, st->d, st->dh, c->col0, c->col1, st->p, k.KA, k.KE);
  k.Q = raspG_col_vectors(g, c->qu, st->wq, st->d, st->dh, c->col0, c->col1, st->p, k.QA, k.QE);
  for (int j = 0; j < ncol; j++) st->unbounded |= !(k.QE[j] < INFINITY) || !(k.KE[j] < INFINITY);
  /* each key's nonzero columns (a one-hot key has one) */
  k.kn = raspM_alloc(sizeof(int) * ((size_t)nk * (size_t)(ncol ? ncol : 1) + (size_t)nk + 1));
  k.ks = k.kn + (size_t)nk * (size_t)(ncol ? ncol : 1);
  int nz = 0;
  for (int a = 0; a < nk; a++) {
    k.ks[a] = nz;
    for (int j = 0; j < ncol; j++)
      if (k.K[(size_t)a * ncol + j] != 0) k.kn[nz++] = j;
  }
  k.ks[nk] = nz;
  k.sc = raspM_alloc(sizeof(double) * (size_t)(nk ? nk : 1) * 2), k.er = k.sc + nk;
  st->mh[ci] = st->pmh[ci] = st->emh[ci] = INFINITY;
  st->eMh[ci] = -INFINITY, st->Tsel[ci] = 0;
  st->Mh[ci] = st->pMh[ci] = st->Mf[ci] = st->pMf[ci] = -INFINITY;
  for (int j = 0; j < ncol; j++) {
    if (k.QA[j] > st->vmax) st->vmax = k.QA[j];
    if (k.KA[j] > st->vmax) st->vmax = k.KA[j];
  }
  k.cmax = 0;
  for (int b = 0; b < nq; b++) hm_query(st, &k, b);
  st->smax += k.cmax;
  raspM_free(k.sc);
  raspM_free(k.kn);
  raspM_free(k.K);
  raspM_free(k.Q);
  raspM_free(k.KA);
}

/* Several components: a key selected by all scores the sum of their
** selected shares, so the gaps, the spread and the leak come from the
** sums of the components' extremes. */
static void hm_several(hmst *st) {
  int nc = st->nc, width = st->width;
  double sbos = st->sbos, blo = st->blo, bhi = st->bhi, lsc = st->lsc, n = (double)st->n;
  const double *mh = st->mh, *Mh = st->Mh, *Mf = st->Mf, *pmh = st->pmh, *pMh = st->pMh,
               *pMf = st->pMf;
  /* a quantized width of several components: in each, every selected
  ** key's share of the score is one constant at every query, computed
  ** exactly, so a key selected by all (the selector is their product)
  ** scores their sum, which must be BOS's score; its terms are integers
  ** (ens 0), summing within 2^24 over all components together */
  double csum = 0, tsum = 0;
  for (int ci = 0; ci < nc && st->wexact; ci++) {
    if (!(mh[ci] < INFINITY)) continue;
    st->wexact = mh[ci] == Mh[ci] && score_pinned(st, mh[ci], st->emh[ci], st->eMh[ci]);
    csum += mh[ci], tsum += st->Tsel[ci];
  }
  st->wexact = st->wexact && csum == sbos && tsum <= st->lim;
  /* (the spread below adds the scaling's rounding, the same for equal
  ** scores: an exact quantized width is not held to it) */
  double unsel = -INFINITY, punsel = -INFINITY;
  double selmin = 0, selmax = 0, pselmin = 0, pselmax = 0;
  for (int ci = 0; ci < nc; ci++) {
    if (mh[ci] < INFINITY) selmin += mh[ci], pselmin += pmh[ci];
    if (Mh[ci] > -INFINITY) selmax += Mh[ci], pselmax += pMh[ci];
  }
  for (int ci = 0; ci < nc; ci++)
    if (Mf[ci] > -INFINITY) {
      unsel = fmax(unsel, Mf[ci] + selmax - (Mh[ci] > -INFINITY ? Mh[ci] : 0));
      punsel = fmax(punsel, pMf[ci] + pselmax - (pMh[ci] > -INFINITY ? pMh[ci] : 0));
    }
  st->G = width ? fmin(selmin, sbos) - unsel : fmin(selmin - fmax(unsel, sbos), sbos - unsel);
  st->Gp = width ? fmin(pselmin, blo) - punsel : fmin(pselmin - fmax(punsel, bhi), blo - punsel);
  st->spread = width ? fmax(pselmax, bhi) - fmin(pselmin, blo) : pselmax - pselmin;
  /* BOS is one key, the others up to n */
  st->leak = width ? n * exp(-st->Gp * lsc)
                   : fmax(exp(-(pselmin - bhi) * lsc) + n * exp(-(pselmin - punsel) * lsc),
                          n * exp(-(blo - punsel) * lsc));
}

/* The head's margin, need, leaks and spread into u, and whether they
** prove it at p (u->why says what does not). */
static int hm_verdict(hmst *st, rasp_model *m) {
  gc *g = st->g;
  unit *u = st->u;
  int p = st->p, avg = st->avg, width = st->width;
  double lsc = st->lsc, up = st->up, G = st->G, Gp = st->Gp, leak = st->leak,
         spread = st->spread;
  int self = (int)(u - g->u);
  double vrange = 2 * raspG_unit_max(g, self), tol = avg ? raspG_unit_gap(g, self) / 8 : 0.125;
  u->margin = G * lsc;
  u->need = (G - Gp) * lsc;
  u->leak = leak;
  /* at the BOS query only BOS's gate column reads anything (row is_bos of
  ** w_q), and only BOS's key has it: every other key scores 0, so the
  ** weight past BOS is at most n e^-(its score), rounding allowed for */
  u->leak0 = (double)st->n * exp(-(1 - 4 * up) * (double)st->wq[u->bcol] * st->kbf * lsc);
  u->spread = spread * lsc;
  int ok = 1;
  u->why_by = u->why_lim = 0;
  if (st->unbounded) ok = 0, u->why = "the error of what it reads is not bounded";
  else if (!(Gp > 0)) ok = 0, u->why = "rounding can let a key that is not selected win";
  else if (!(leak * vrange <= tol))
    ok = 0, u->why = "the weight leaking past its selected keys can move its value too far",
    u->why_by = leak * vrange, u->why_lim = tol;
  else if (avg && !(width && u->qw && st->wexact) && !((exp(spread * lsc) - 1) * vrange <= tol))
    ok = 0, u->why = "rounding can weigh its selected keys unequally, moving its mean by more "
                     "than an eighth of the gap between its values",
    u->why_by = (exp(spread * lsc) - 1) * vrange, u->why_lim = tol;
  if (p == RASPG_FP16 && (st->vmax > 65504 || st->smax > 65504))
    ok = 0, u->why = "a score or a feature exceeds fp16's largest number, 65504";
  if (p == RASPG_FP32 && !g->cb) ok = head_fp32(g, u, m, p, ok, leak, avg, st->wexact);
  return ok;
}

/* A head's margin and need (the most rounding can take from it), in
** logits; 0 when not proven at p: a selected key must still beat every
** other (BOS as the design wants), the weight leaking to the others times
** the range of the values moved must stay below tol, and so must an
** averaging head's error from unequal selected scores (tol: an eighth of
** the gap between the head's values, 1 for one-hot and integers).  The
** steps: hm_bos, hm_comp per component, hm_several, hm_verdict. */
int raspG_head_margin(gc *g, unit *u, rasp_model *m, int p) {
  const rasp_model_config *cf = &m->cfg;
  hmst st;
  memset(&st, 0, sizeof st);
  st.g = g, st.u = u, st.p = p;
  st.d = cf->d_model, st.dh = cf->d_head, st.n = cf->max_len;
  char nm[64];
  snprintf(nm, sizeof nm, "layers.%d.attn.w_q", u->layer);
  st.wq = raspN_data(m, nm) + (size_t)u->hslot * st.d * st.dh;
  snprintf(nm, sizeof nm, "layers.%d.attn.w_k", u->layer);
  st.wk = raspN_data(m, nm) + (size_t)u->hslot * st.d * st.dh;
  st.up = prec_u(p), st.lim = ldexp(1, prec_bits[p]);
  st.lsc = (double)(1.0f / sqrtf((float)st.dh));
  st.width = u->hmode == H_WIDTH, st.avg = st.width || u->hmode == H_NUM;
  hm_bos(&st);
  st.G = INFINITY, st.Gp = INFINITY, st.leak = 0, st.spread = 0;
  if (u->cw) {
    hm_count(&st);
    int ok = hm_verdict(&st, m);
    u->leak0 = 0; /* (causal: at BOS's query only BOS is visible) */
    return ok;
  }
  if (g->stock) hm_stock(&st);
  /* a quantized width: every selected key scores exactly BOS's score,
  ** each computed exactly */
  st.wexact = st.width && u->qw && st.ebns == 0;
  st.unbounded = !(st.ebns < INFINITY);
  int nc = st.nc = u->nc;
  st.mh = raspM_alloc(sizeof(double) * (size_t)(nc + 1) * 9);
  st.Mh = st.mh + nc + 1, st.Mf = st.Mh + nc + 1, st.pmh = st.Mf + nc + 1,
  st.pMh = st.pmh + nc + 1, st.pMf = st.pMh + nc + 1;
  st.emh = st.pMf + nc + 1, st.eMh = st.emh + nc + 1, st.Tsel = st.eMh + nc + 1;
  for (int ci = 0; ci < nc; ci++) hm_comp(&st, ci);
  if (nc > 1) hm_several(&st);
  /* no components (a causal `always`): every key scores its gate, 0 but
  ** for egate, and a width's BOS sbos within ebns; they are all selected,
  ** so what they can differ by is the spread (0 where exact) */
  if (nc == 0 && st.avg)
    st.spread = st.width ? st.ebns + fabs(st.egate) + st.up * fabs(st.sbos) : 2 * fabs(st.egate);
  raspM_free(st.mh);
  return hm_verdict(&st, m);
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
double raspG_dim_err(const gc *g, int uid, int a, int k) {
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
/* active_od's state, in its steps: od_index (the sparse w_in and w_out
** of the hidden units, the output slots), od_tables (the pre-activation
** table and the scratch), then per combination of the sources' values
** od_units (each unit on: its terms, hinges and affine rows), od_affine
** (the affine bound per output) and od_outputs (what od, oint and ogen
** keep). */
enum { HINGES = 4 }; /* per output: hinge units taken through the affine bound */
typedef struct odst {
  gc *g;
  const float *wi, *bi, *wo;
  int F, D, h0, h1, nh, ns, has_one, tot, ni, no, affine, nal;
  const int *src;
  const double *eh, *rh, *hm, *hx;
  int *off, *ix;            /* per source: its first row of C; its value now */
  int *oslot, *slot_o, *inr; /* dimension <-> output slot; the slot's source row (in place) */
  int *ost, *ist;           /* per hidden unit: its w_out and w_in entries' start */
  int *oi, *ii;             /* w_out entries' slots, w_in entries' rows */
  double *ow, *iw;          /* their weights */
  int *rdim, *rsrc, *rcol;  /* per source row: residual dimension, source, column */
  double work;
  double *C, *base, *z, *cur, *cur2, *Tc, *prop, *kc, *tch, *Tz, *aint, *ein;
  double *acc;              /* affine: rows x slots of w_in w_out sums */
  int *al;                  /* acc's nonzero entries */
  int *nhg, *hg, *hge, *bst, *bfill, *rmark, *rows, *brow;
  double *rv;
} odst;

/* The output slots and per hidden unit its nonzero w_out (slot, weight)
** and w_in over the sources' dimensions (input, weight). */
static void od_index(odst *o) {
  gc *g = o->g;
  int nh = o->nh, D = o->D, F = o->F, h0 = o->h0, ns = o->ns;
  const int *src = o->src;
  o->off = raspM_alloc(sizeof(int) * (size_t)(ns + 1) * 2), o->ix = o->off + ns + 1;
  o->tot = 0, o->ni = 0;
  for (int k = 0; k < ns; k++)
    o->off[k] = o->tot, o->tot += g->u[src[k]].nvals, o->ni += usize(&g->u[src[k]]);
  int ni = o->ni;
  o->oslot = raspM_alloc(sizeof(int) * (size_t)D), o->no = 0;
  for (int d = 0; d < D; d++) o->oslot[d] = -1;
  o->ost = raspM_alloc(sizeof(int) * (size_t)(nh + 1) * 2), o->ist = o->ost + nh + 1;
  size_t nout = 0, nin = 0;
  for (int h = 0; h < nh; h++)
    for (int d = 0; d < D; d++) nout += o->wo[(size_t)(h0 + h) * D + d] != 0;
  o->rdim = raspM_alloc(sizeof(int) * (size_t)(ni + 1) * 3), o->rsrc = o->rdim + ni + 1,
  o->rcol = o->rsrc + ni + 1;
  for (int k = 0, r = 0; k < ns; k++)
    for (int c = 0; c < usize(&g->u[src[k]]); c++, r++)
      o->rdim[r] = g->u[src[k]].dim + c, o->rsrc[r] = k, o->rcol[r] = c;
  for (int h = 0; h < nh; h++)
    for (int r = 0; r < ni; r++) nin += o->wi[(size_t)o->rdim[r] * F + h0 + h] != 0;
  o->oi = raspM_alloc(sizeof(int) * (nout + nin + 1)), o->ii = o->oi + nout;
  o->ow = raspM_alloc(sizeof(double) * (nout + nin + 1)), o->iw = o->ow + nout;
  size_t q = 0, q2 = 0;
  o->work = 0;
  for (int h = 0; h < nh; h++) {
    o->ost[h] = (int)q, o->ist[h] = (int)q2;
    for (int d = 0; d < D; d++) {
      float w = o->wo[(size_t)(h0 + h) * D + d];
      if (w == 0) continue;
      if (o->oslot[d] < 0) o->oslot[d] = o->no++;
      o->oi[q] = o->oslot[d], o->ow[q++] = w;
    }
    for (int r = 0; r < ni; r++) {
      float w = o->wi[(size_t)o->rdim[r] * F + h0 + h];
      if (w != 0) o->ii[q2] = r, o->iw[q2++] = w;
    }
    o->work += (double)(q - (size_t)o->ost[h]) * (double)(q2 - (size_t)o->ist[h]);
  }
  o->ost[nh] = (int)q, o->ist[nh] = (int)q2;
  int no = o->no;
  o->slot_o = raspM_alloc(sizeof(int) * (size_t)(no + 1) * 2), o->inr = o->slot_o + no + 1;
  for (int d = 0; d < D; d++)
    if (o->oslot[d] >= 0) o->slot_o[o->oslot[d]] = d;
  /* in place: the output slot that is also a source dimension (the
  ** operand y the residual still holds) */
  for (int s2 = 0; s2 < no; s2++) {
    o->inr[s2] = -1;
    for (int r = 0; r < ni && g->inplace; r++)
      if (o->rdim[r] == o->slot_o[s2]) o->inr[s2] = r;
  }
}

/* The affine bound's choice (its accumulator fits and the work is
** bounded), the pre-activation table C (per source value and unit), and
** the scratch of the combinations. */
static void od_tables(odst *o, double combos) {
  int nh = o->nh, no = o->no, ni = o->ni, tot = o->tot, F = o->F;
  o->affine = (double)ni * no <= 4e6 && combos * (o->work + no + ni) <= 1e8;
  o->C = raspM_alloc(sizeof(double) * ((size_t)tot * nh + (size_t)nh * 2 + (size_t)no * 8 +
                                       (size_t)ni + 1));
  o->base = o->C + (size_t)tot * nh, o->z = o->base + nh, o->cur = o->z + nh,
  o->cur2 = o->cur + no, o->Tc = o->cur2 + no, o->prop = o->Tc + no, o->kc = o->prop + no,
  o->tch = o->kc + no, o->Tz = o->tch + no, o->aint = o->Tz + no, o->ein = o->aint + no;
  o->acc = o->affine ? raspM_alloc(sizeof(double) * (size_t)ni * (size_t)no + 1) : NULL;
  o->al = o->affine ? raspM_alloc(sizeof(int) * ((size_t)ni * (size_t)no + 1)) : NULL;
  if (o->acc) memset(o->acc, 0, sizeof(double) * (size_t)ni * (size_t)no);
  /* per output: its hinge units and their w_out entries (HINGES at most),
  ** the buckets of acc's rows, and per input a mark and a value */
  size_t nacc = o->affine ? (size_t)ni * (size_t)no : 0;
  o->nhg = raspM_alloc(sizeof(int) * ((size_t)no * (2 * HINGES + 4) + (size_t)ni * 2 + nacc + 2));
  o->hg = o->nhg + no, o->hge = o->hg + (size_t)no * HINGES, o->bst = o->hge + (size_t)no * HINGES,
  o->bfill = o->bst + no + 1, o->rmark = o->bfill + no + 1, o->rows = o->rmark + ni,
  o->brow = o->rows + ni;
  o->rv = raspM_alloc(sizeof(double) * ((size_t)ni + 1));
  memset(o->rmark, 0, sizeof(int) * (size_t)ni);
  double t, wre;
  for (int h = o->h0; h < o->h1; h++) {
    o->base[h - o->h0] = (double)o->bi[h] + (o->has_one ? 0.0f : o->wi[(size_t)1 * F + h]);
    for (int k = 0; k < o->ns; k++)
      for (int a = 0; a < o->g->u[o->src[k]].nvals; a++)
        o->C[(size_t)(o->off[k] + a) * nh + h - o->h0] =
            raspG_uv_dot(o->g, o->src[k], a, o->wi, F, h, RASPG_FP32, &t, &wre);
  }
}

/* At the current combination (o->ix): every unit that is not off, its
** terms into its outputs' sums (cur: charged whole; cur2: its own rounding,
** the rest through the affine bound), and its rows of acc or, on its
** hinge, its place among the output's hinge units. */
static void od_units(odst *o) {
  int nh = o->nh, no = o->no;
  for (int s2 = 0; s2 < no; s2++)
    o->cur[s2] = o->cur2[s2] = o->Tc[s2] = o->prop[s2] = o->kc[s2] = o->tch[s2] = o->Tz[s2] = 0,
    o->aint[s2] = 1;
  if (o->affine) memset(o->nhg, 0, sizeof(int) * (size_t)no);
  o->nal = 0;
  for (int h = 0; h < nh; h++) {
    o->z[h] = o->base[h];
    for (int k = 0; k < o->ns; k++) o->z[h] += o->C[(size_t)(o->off[k] + o->ix[k]) * nh + h];
    double tiny = 1e-9 * (1 + fabs(o->base[h]));
    if (o->z[h] < -tiny) continue; /* off, exactly */
    int hinge = o->z[h] <= tiny;
    const double *eh = o->eh, *rh = o->rh, *hm = o->hm;
    for (int e = o->ost[h]; e < o->ost[h + 1]; e++) {
      int s2 = o->oi[e], e2;
      double w = fabs(o->ow[e]);
      int p2 = frexp(w, &e2) == 0.5;
      double full = w * eh[h] * (p2 ? 1 : 2 + ldexp(1, -22));
      o->cur[s2] += full;
      o->kc[s2]++, o->Tc[s2] += w * (hm[h] + eh[h]), o->tch[s2] = 1;
      /* its term here, at this combination's value of the unit */
      o->Tz[s2] += w * (fabs(o->z[h]) + eh[h]);
      o->aint[s2] = o->aint[s2] && o->hx[h] != 0 && o->ow[e] == floor(o->ow[e]);
      /* a unit on its hinge outputs ReLU(its error): a share s in [0, 1]
      ** of what its inputs' errors bring, plus its rounding; up to
      ** HINGES of them per output go through the affine bound with s at
      ** 0 or 1 (the bound is convex in each s), more are charged whole */
      if (hinge && (!o->affine || o->nhg[s2] >= HINGES)) {
        o->cur2[s2] += full;
        continue;
      }
      o->cur2[s2] += w * rh[h] + (p2 ? 0 : ldexp(1, -24) * w * (hm[h] + eh[h]));
      if (!o->affine) continue;
      if (hinge) {
        o->hg[s2 * HINGES + o->nhg[s2]] = h, o->hge[s2 * HINGES + o->nhg[s2]++] = e;
        continue;
      }
      for (int f = o->ist[h]; f < o->ist[h + 1]; f++) {
        size_t a = (size_t)o->ii[f] * no + s2;
        if (o->acc[a] == 0) o->al[o->nal++] = (int)a;
        o->acc[a] += o->iw[f] * o->ow[e];
        if (o->acc[a] == 0) o->acc[a] = 1e-300; /* (kept in the list once) */
      }
    }
  }
}

/* The affine bound at the current combination: per output, the largest
** over its hinge units' on/off choices of sum_r |W_eff[r][o]| times the
** error of input row r, into o->prop; acc cleared after. */
static void od_affine(odst *o) {
  gc *g = o->g;
  int no = o->no, ni = o->ni;
  double *acc = o->acc;
  for (int r = 0; r < ni; r++)
    o->ein[r] = raspG_dim_err(g, o->src[o->rsrc[r]], o->ix[o->rsrc[r]], o->rcol[r]);
  for (int s2 = 0; s2 < no; s2++)
    if (o->inr[s2] >= 0) { /* the residual's own y, weight 1 */
      size_t a = (size_t)o->inr[s2] * no + s2;
      if (acc[a] == 0) o->al[o->nal++] = (int)a;
      acc[a] += 1;
      if (acc[a] == 0) acc[a] = 1e-300;
      o->tch[s2] = 1;
    }
  /* per output, its rows of acc, and its hinge units' rows */
  int *bst = o->bst, *bfill = o->bfill, *brow = o->brow, *rows = o->rows, *rmark = o->rmark;
  for (int s2 = 0; s2 < no; s2++) bst[s2 + 1] = 0;
  for (int e = 0; e < o->nal; e++) bst[o->al[e] % no + 1]++;
  bst[0] = 0;
  for (int s2 = 0; s2 < no; s2++) bst[s2 + 1] += bst[s2];
  for (int s2 = 0; s2 < no; s2++) bfill[s2] = bst[s2];
  for (int e = 0; e < o->nal; e++) brow[bfill[o->al[e] % no]++] = o->al[e] / no;
  for (int s2 = 0; s2 < no; s2++) {
    if (!o->tch[s2]) continue;
    int nr = 0;
    for (int b = bst[s2]; b < bst[s2 + 1]; b++) rows[nr++] = brow[b], rmark[brow[b]] = 1;
    for (int j = 0; j < o->nhg[s2]; j++) {
      int h = o->hg[s2 * HINGES + j];
      for (int f = o->ist[h]; f < o->ist[h + 1]; f++)
        if (!rmark[o->ii[f]]) rmark[o->ii[f]] = 1, rows[nr++] = o->ii[f];
    }
    double best = 0;
    for (int mask = 0; mask < 1 << o->nhg[s2]; mask++) {
      for (int b = 0; b < nr; b++) o->rv[rows[b]] = acc[(size_t)rows[b] * no + s2];
      for (int j = 0; j < o->nhg[s2]; j++) {
        if (!(mask >> j & 1)) continue;
        int h = o->hg[s2 * HINGES + j], e = o->hge[s2 * HINGES + j];
        for (int f = o->ist[h]; f < o->ist[h + 1]; f++) o->rv[o->ii[f]] += o->iw[f] * o->ow[e];
      }
      double sum = 0;
      for (int b = 0; b < nr; b++) sum += fabs(o->rv[rows[b]]) * o->ein[rows[b]];
      best = fmax(best, sum);
    }
    o->prop[s2] = best;
    for (int b = 0; b < nr; b++) rmark[rows[b]] = 0;
  }
  for (int e = 0; e < o->nal; e++) acc[o->al[e]] = 0;
}

/* Per output touched at the current combination: its error (the whole
** charge, or the affine bound where smaller; the affine one alone in
** place) into od, and its sum's own rounding into oint and ogen. */
static void od_outputs(odst *o) {
  gc *g = o->g;
  int D = o->D;
  double *od = g->od, *oint = od + 3 * D, *ogen = oint + D;
  for (int s2 = 0; s2 < o->no; s2++) {
    if (!o->tch[s2]) continue;
    int d = o->slot_o[s2];
    double v = o->cur[s2], kc = o->kc[s2], Tc = o->Tc[s2];
    if (o->affine) {
      /* (in place the affine bound alone: it holds the operand's
      ** error, which the other leaves to residue) */
      double aff = o->cur2[s2] + o->prop[s2] * (1 + ldexp(1, -20));
      v = g->inplace ? aff : fmin(v, aff);
    }
    od[d] = fmax(od[d], v);
    /* the output sum's own rounding, over the units that are not 0
    ** here (kc terms of sizes Tc): integers off by a little
    ** (dev_grow), or up to u times a partial sum per addition and
    ** product */
    oint[d] = fmax(oint[d], v > 0 ? raspG_dev_grow(v, (int)kc, Tc + v) : 0);
    /* where every unit that is not 0 here is an exact integer through an
    ** integer w_out and their terms' sizes sum within 2^24, every
    ** partial sum is an integer the format holds, in any order: off
    ** only by what its inputs' errors grow to (dev_grow), whatever the
    ** units' sizes at other combinations (a big-M gate's large term is
    ** large only where its partner cancels it) */
    double gen = v + (kc + 1) * ldexp(1, -24) * (1 + ldexp(1, -20)) * (Tc + v);
    if (o->aint[s2] && o->Tz[s2] + v <= ldexp(1, 24))
      gen = fmin(gen, v > 0 ? raspG_dev_grow(v, (int)kc, o->Tz[s2] + v) : 0);
    else
      g->od_int = 0;
    ogen[d] = fmax(ogen[d], gen);
  }
}

static void active_od(gc *g, const float *wi, const float *bi, const float *wo, int F, int D,
                     int h0, int h1, const int *src, int ns, int has_one, const double *eh,
                     const double *rh, const double *hm, const double *hx) {
  int nh = h1 - h0;
  double combos = 1;
  for (int k = 0; k < ns; k++) combos *= g->u[src[k]].nvals ? g->u[src[k]].nvals : 1;
  if (g->trace > 1) fprintf(stderr, "  active_od: %d sources, %g combinations, %d units: %g\n", ns, combos, nh, combos * nh * (ns + 1));
  if (nh <= 0 || combos * nh * (ns + 1) > 3e7) return;
  odst o;
  memset(&o, 0, sizeof o);
  o.g = g, o.wi = wi, o.bi = bi, o.wo = wo, o.F = F, o.D = D, o.h0 = h0, o.h1 = h1, o.nh = nh;
  o.src = src, o.ns = ns, o.has_one = has_one, o.eh = eh, o.rh = rh, o.hm = hm, o.hx = hx;
  od_index(&o);
  od_tables(&o, combos);
  memset(g->od, 0, sizeof(double) * (size_t)D);
  g->od_combo = o.affine ? 2 : 1;
  g->od_int = 1;
  for (int k = 0; k < ns; k++) o.ix[k] = 0;
  for (;;) {
    od_units(&o);
    if (o.affine) od_affine(&o);
    od_outputs(&o);
    int k = 0;
    while (k < ns && ++o.ix[k] >= g->u[src[k]].nvals) o.ix[k++] = 0;
    if (k == ns) break;
  }
  raspM_free(o.acc);
  raspM_free(o.al);
  raspM_free(o.nhg);
  raspM_free(o.rv);
  raspM_free(o.C);
  raspM_free(o.slot_o);
  raspM_free(o.oi);
  raspM_free(o.ow);
  raspM_free(o.rdim);
  raspM_free(o.ost);
  raspM_free(o.oslot);
  raspM_free(o.off);
}

/* One hidden unit h of raspG_mlp_margin, in its steps: mu_start (its bias
** and ONE's weight), mu_top (its largest pre-activation per source and in
** all), mu_source per source (the source's terms, sizes and errors),
** mu_finish (its margin, its error off and on). */
typedef struct mu {
  gc *g;
  const float *wi;
  int F, D, p, h;
  double up, lim;
  double base, T, err, lerr, Tp, Tn, ain, aon, inz, innz, aonz, aonnz, alin, ztop, tt;
  int nnz, nsrc, hex, nterm, mterm;
  int snnz;   /* --ln stock: its nonzero rows, BOS's included */
  double sw1; /* --ln stock: the sum of |w_in| over them */
  double *zk; /* per source: its largest contribution */
  zsrc *zs;   /* the sources that vary: their distinct contributions */
  double mn, mx, eon;
} mu;

/* The bias and ONE's weight (none where ONE is a source): the base, its
** size, its signed sums' start and its rounding. */
static void mu_start(mu *q, const float *bi, int has_one, int allex) {
  int h = q->h, p = q->p;
  float w1 = has_one ? 0.0f : q->wi[(size_t)1 * q->F + h];
  q->base = (double)bi[h] + w1, q->T = fabs((double)bi[h]) + fabs((double)w1), q->err = 0,
  q->lerr = 0;
  /* the largest sums of its positive and of its negative terms: every
  ** partial sum, in any order, lies between -Tn and Tp */
  q->Tp = fmax(0, (double)bi[h]) + fmax(0, (double)w1),
  q->Tn = fmax(0, -(double)bi[h]) + fmax(0, -(double)w1);
  q->err += fabs((double)bi[h] - raspG_round(p, bi[h])) + fabs((double)w1 - raspG_round(p, w1));
  q->err += raspG_stock_one_err(q->g, w1);
  q->sw1 = q->g->stock ? raspG_col_abs(q->wi, q->D, q->F, h, &q->snnz) : 0;
  q->nnz = 1, q->nsrc = 0, q->hex = allex && bi[h] == floorf(bi[h]) && w1 == floorf(w1);
  q->ain = 0; /* the sources' absolute errors through w_in (fp32) */
  q->aon = 0; /* the same at the source values where h can be on */
  q->nterm = 1; /* its terms that can be nonzero (a one-hot's zeros are exact) */
  /* ain and aon split as aerr_split does, for dev_grow_z: the terms
  ** with exact value 0, the others, and how many of those (the bias and
  ** ONE's weight among them) */
  q->inz = 0, q->innz = 0, q->aonz = 0, q->aonnz = 0, q->alin = 0;
  q->mterm = 2;
  for (int r = 1; r < q->D; r++) q->nnz += q->wi[(size_t)r * q->F + h] != 0;
}

/* The largest pre-activation per source (zk) and in all (ztop): with
** source k at value a, h is at most ztop - zk + z[a]; below 0 it is
** below its hinge by at least its margin, off exactly (ok demands
** 2 err < margin), and what k then carries does not reach its output. */
static void mu_top(mu *q, const int *src, int ns) {
  gc *g = q->g;
  q->ztop = q->base, q->tt = q->T;
  for (int k = 0; k < ns; k++) {
    double t, wre;
    q->zk[k] = -INFINITY;
    for (int a = 0; a < g->u[src[k]].nvals; a++) {
      q->zk[k] = fmax(q->zk[k], raspG_uv_dot(g, src[k], a, q->wi, q->F, q->h, RASPG_FP32, &t, &wre));
      q->tt += t;
    }
    if (q->zk[k] > -INFINITY) q->ztop += q->zk[k];
  }
}

/* Source k (unit uid): its contribution at each of its values, the largest
** term and its rounding, its absolute errors (where h can be on apart),
** whether its weights are integers, and its distinct contributions (a
** constant joins the base). */
static void mu_source(mu *q, int k, int uid) {
  gc *g = q->g;
  const unit *s = &g->u[uid];
  int p = q->p, F = q->F, h = q->h;
  const float *wi = q->wi;
  double tmax = 0, t, wre, emax = 0, va = 0, von = 0, vz = 0, vnz = 0, onz = 0, onnz = 0, vlin = 0;
  int vm = 0;
  double *z = raspM_alloc(sizeof(double) * (size_t)(s->nvals ? s->nvals : 1));
  double tpos = 0, tneg = 0;
  for (int a = 0; a < s->nvals; a++) {
    z[a] = raspG_uv_dot(g, uid, a, wi, F, h, p, &t, &wre);
    if (t > tmax) tmax = t;
    /* (one term per value but for a squared unit's two, which may
    ** have either sign: t on both sides) */
    tpos = fmax(tpos, s->sq ? t : fmax(0, z[a]));
    tneg = fmax(tneg, s->sq ? t : fmax(0, -z[a]));
    if (t * s->kappa * q->up + wre > emax) emax = t * s->kappa * q->up + wre;
    if (p != RASPG_FP32) continue;
    double e = raspG_aerr_val(g, uid, a, wi, F, h), ez, enz;
    int em;
    raspG_aerr_split(g, uid, a, wi, F, h, &ez, &enz, &em);
    va = fmax(va, e);
    vz = fmax(vz, ez), vnz = fmax(vnz, enz), vm = em > vm ? em : vm;
    if (!(q->ztop - q->zk[k] + z[a] < -1e-6 * (1 + q->tt))) {
      double lin = 0;
      for (int c = 0; c < usize(s); c++)
        lin += fabs((double)wi[(size_t)(s->dim + c) * F + h]) * raspG_dim_err(g, uid, a, c);
      von = fmax(von, e), onz = fmax(onz, ez), onnz = fmax(onnz, enz), vlin = fmax(vlin, lin);
    }
  }
  q->ain += va;
  q->aon += von;
  q->inz += vz, q->innz += vnz, q->mterm += vm, q->aonz += onz, q->aonnz += onnz, q->alin += vlin;
  q->hex = q->hex && raspG_int_weights(g, uid, wi, F, h, 0);
  int n = s->nvals;
  qsort(z, (size_t)n, sizeof *z, raspG_cmp_dbl);
  int w = 0;
  for (int a = 0; a < n; a++)
    if (!w || z[a] != z[w - 1]) z[w++] = z[a];
  if (w == 1) { /* a constant: part of the base */
    q->base += z[0];
    raspM_free(z);
  } else
    q->zs[q->nsrc++] = (zsrc){z, w};
  q->T += tmax;
  q->Tp += tpos, q->Tn += tneg;
  q->err += emax;
  q->lerr += raspG_leak_err(g, uid, wi, F, h, p);
  if (s->cat && !(s->ae[0] > 0)) q->nterm++;
  else
    for (int r = 0; r < usize(s); r++) q->nterm += wi[(size_t)(s->dim + r) * F + h] != 0;
}

/* Its margin (mn: the nearest its pre-activation comes to its hinge) and
** largest magnitude (mx) over every combination, whether it is an exact
** integer, and its error: err anywhere, eon where it can be on (what its
** output carries; off, it outputs an exact 0). */
static void mu_finish(mu *q) {
  double mn = INFINITY, mx = fabs(q->base), tiny = 1e-9 * (1 + q->T);
  if (q->nsrc) zscan(q->zs, 0, q->nsrc, q->base, tiny, &mn, &mx);
  else if (fabs(q->base) > tiny) mn = fabs(q->base);
  for (int k = 0; k < q->nsrc; k++) raspM_free(q->zs[k].z);
  q->hex = q->hex && fmax(q->Tp, q->Tn) + q->ain <= q->lim;
  /* integers within the format: every sum exact, or off by what the
  ** inputs' absolute errors grow to (dev_grow) */
  double eon, err = q->err, T = q->T, ain = q->ain, aon = q->aon;
  if (q->hex) {
    err = ain > 0 ? fmin(raspG_dev_grow(ain, q->nterm, T + ain), raspG_dev_grow_z(q->inz, q->innz, q->mterm, T)) : 0;
    eon = aon > 0 ? fmin(raspG_dev_grow(aon, q->nterm, T + aon), raspG_dev_grow_z(q->aonz, q->aonnz, q->mterm, T)) : 0;
  } else {
    /* (--ln stock: its sum over the norm's output, the bias with it) */
    double r = q->up * mx + (q->g->stock ? raspG_stock_sum_err(q->g, q->snnz + 1, T, ain, q->sw1)
                                         : (q->nnz + 1) * ldexp(1, -24) * T);
    eon = err + aon + r;
    err += ain + r;
  }
  err += q->lerr; /* (exact arithmetic on inputs a leak moved) */
  eon += q->lerr;
  q->err = err, q->eon = eon, q->mn = mn, q->mx = mx;
}

/* Whether hidden units h and h + 1 are a step pair: the same input
** weights on every row, biases b and b - delta (delta > 0), and opposite
** output weights, so together they add w (ReLU(s + b) - ReLU(s + b -
** delta)), s their common sum (a steep where or table, ReLU(4z - 6) -
** ReLU(4z - 7)).  Where the exact s + b is never in (0, delta) -- one
** margin at least delta (mg, over every combination of exact inputs) --
** the two are on together or off together, and where each is proven on
** the side of its hinge it is on exactly (mu: 2 err < mn), so the pair
** adds exactly 0, or w delta plus the difference of the two sums'
** roundings: their inputs' errors, the same terms in both (the same
** weights times the same read values), cancel.  Each unit then charges
** its outputs its own rounding (rh), not its error. */
static int twin_step(const float *wi, const float *bi, const float *wo, int F, int D, int h,
                     int h0, int h1, const double *mg) {
  if (h < h0 || h + 1 >= h1) return 0;
  double delta = (double)bi[h] - (double)bi[h + 1];
  if (!(delta > 0) || !(mg[h - h0] >= delta || mg[h + 1 - h0] >= delta)) return 0;
  int any = 0;
  for (int r = 0; r < D; r++)
    if (wi[(size_t)r * F + h] != wi[(size_t)r * F + h + 1]) return 0;
  for (int o = 0; o < D; o++) {
    float a = wo[(size_t)h * D + o], b = wo[(size_t)(h + 1) * D + o];
    if (a != -b) return 0;
    any |= a != 0;
  }
  return any;
}

/* Hidden units [h0, h1) of layer l reading units src[0..ns): their
** smallest margin and largest need into *mg, *nd, and *exact 1 when every
** one is computed exactly at p (exact inputs, integer weights in and out,
** sums within the format).  0 when one is not proven.  Each unit in the
** steps of struct mu, then what its output dimensions receive. */
int raspG_mlp_margin(gc *g, rasp_model *m, int l, int h0, int h1, const int *src, int ns, int p,
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
  double lim = ldexp(1, prec_bits[p]);
  int ok = 1, has_one = 0, allex = 1;
  double outsum = 0;
  for (int k = 0; k < ns; k++) {
    has_one |= g->u[src[k]].kind == U_ONE;
    allex &= g->u[src[k]].kappa == 0;
  }
  allex = allex && !g->stock; /* (--ln stock: nothing is read exactly) */
  mu q;
  memset(&q, 0, sizeof q);
  q.g = g, q.wi = wi, q.F = F, q.D = D, q.p = p, q.up = prec_u(p), q.lim = lim;
  q.zs = raspM_alloc(sizeof(zsrc) * (size_t)(ns + 1));
  q.zk = raspM_alloc(sizeof(double) * (size_t)(ns + 1));
  double *od = g->od; /* per output: sum |w_out| err */
  double *otd = od + D, *ond = otd + D; /* per output: sum |w_out| max|h|, nonzero terms */
  memset(od, 0, sizeof(double) * (size_t)D * 5);
  g->od_combo = 0;
  g->od_int = 0;
  /* per hidden unit: its error where it can be on, the share of that
  ** which is its own rounding (what its inputs' errors do not bring), and
  ** its largest magnitude (active_od) */
  double *eh = raspM_alloc(sizeof(double) * (size_t)(h1 - h0 + 1) * 5), *rh = eh + (h1 - h0 + 1),
         *hm = rh + (h1 - h0 + 1), *hx = hm + (h1 - h0 + 1), *mg_h = hx + (h1 - h0 + 1);
  for (int h = h0; h < h1; h++) {
    q.h = h;
    mu_start(&q, bi, has_one, allex);
    mu_top(&q, src, ns);
    for (int k = 0; k < ns; k++) mu_source(&q, k, src[k]);
    mu_finish(&q);
    int hex = q.hex;
    double err = q.err, eon = q.eon, mn = q.mn, mx = q.mx;
    if (g->trace > 1) fprintf(stderr, "  h%d hex=%d ain=%g aon=%g nterm=%d T=%g err=%g eon=%g mn=%g\n", h, hex, q.ain, q.aon, q.nterm, q.T, err, eon, mn);
    for (int o = 0; o < D; o++) {
      float w = wo[(size_t)h * D + o];
      if (w != 0) outsum += fabs((double)w) * mx, otd[o] += fabs((double)w) * mx, ond[o]++;
      hex = hex && w == floorf(w);
    }
    *exact = *exact && hex;
    if (mn < *mg) *mg = mn;
    if (2 * err > *nd) *nd = 2 * err;
    if (!(2 * err < mn) || (p == RASPG_FP16 && q.T > 65504)) ok = 0;
    eh[h - h0] = eon;
    hx[h - h0] = hex; /* integers in, weights in and out: its value an exact integer */
    rh[h - h0] = fmax(0, eon - q.alin);
    hm[h - h0] = mx;
    mg_h[h - h0] = mn;
  }
  raspM_free(q.zk);
  /* what each unit's error brings its outputs: eon, or for a unit of a
  ** step pair only its own rounding (twin_step) */
  char *tw = raspM_alloc((size_t)(h1 - h0 + 1));
  memset(tw, 0, (size_t)(h1 - h0 + 1));
  for (int h = h0; ok && g->stock && h + 1 < h1; h++) /* (each unit in one pair at most) */
    if (twin_step(wi, bi, wo, F, D, h, h0, h1, mg_h)) tw[h - h0] = tw[h + 1 - h0] = 1, h++;
  for (int h = h0; h < h1; h++) {
    double e = tw[h - h0] ? rh[h - h0] : eh[h - h0];
    for (int o = 0; o < D; o++) {
      float w = wo[(size_t)h * D + o];
      int e2;
      od[o] += fabs((double)w) * e * (frexp(fabs((double)w), &e2) == 0.5 || w == 0 ? 1 : 2 + ldexp(1, -22));
    }
  }
  raspM_free(tw);
  if (outsum > lim) *exact = 0;
  *otot = outsum;
  if (p == RASPG_FP32 && ok) active_od(g, wi, bi, wo, F, D, h0, h1, src, ns, has_one, eh, rh, hm, hx);
  raspM_free(eh);
  raspM_free(q.zs);
  return ok;
}

/* The input errors a readout column meets (fp32, the unit's ae, charged
** where aerr_val charges them): with c1 < 0, sum |W_k,c0| ae_k; else as
** they reach the difference of columns c0 and c1, sum |W_k,c0 - W_k,c1|
** ae_k -- the readout reads one residual for every logit, so an error e_k
** on dimension k moves logit c0 minus logit c1 by (W_k,c0 - W_k,c1) e_k,
** and a dimension every column weighs alike (a squared readout's x^2, -X
** in every column) moves none of the differences. */
double raspG_aerr_cols(const gc *g, int uid, int a, const float *W, int ld, int c0, int c1) {
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
