/*
** rcompile_sched.c -- when each unit is computed and where it lives.
**
** The schedule (every unit as early as its sources allow), liveness (each
** unit's last reader) and the residual dimensions given out first fit,
** plus the per-node sublayers raspG_schedule reports.
*/
#include "rcompile_int.h"

/* ---- schedule ----------------------------------------------------------- */

void raspG_unit_sources(const unit *u, int *src, int *ns) {
  *ns = 0;
  if (u->kind == U_HEAD) {
    for (int i = 0; i < u->nc; i++) {
      src[(*ns)++] = u->c[i].ku;
      src[(*ns)++] = u->c[i].qu;
    }
    if (u->hmode != H_WIDTH) src[(*ns)++] = u->hv.unit;
    if (u->cw) src[(*ns)++] = 1; /* (its query's gate reads the indices, unit 1) */
  } else if (u->kind == U_MLP) {
    for (int i = 0; i < u->nmv; i++) src[(*ns)++] = u->mv[i].unit;
  }
}

void raspG_schedule_units(gc *g) {
  int src[2 * MAXCOMPS + 4], ns;
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    raspG_unit_sources(u, src, &ns);
    int r = 0;
    for (int k = 0; k < ns; k++)
      if (g->u[src[k]].ready > r) r = g->u[src[k]].ready;
    if (u->kind == U_HEAD) u->ready = r % 2 ? r + 2 : r + 1;
    else if (u->kind == U_MLP) u->ready = r % 2 ? r + 1 : r + 2;
    else u->ready = 0;
    u->layer = (u->ready - 1) / 2;
  }
}

void raspG_mark_used(gc *g, int root) {
  int src[2 * MAXCOMPS + 4], ns;
  g->u[root].used = 1;
  for (int i = g->nu - 1; i >= 0; i--)
    if (g->u[i].used) {
      raspG_unit_sources(&g->u[i], src, &ns);
      for (int k = 0; k < ns; k++) g->u[src[k]].used = 1;
    }
}

/* An in-place where(c, x, y) is kept when nothing reads y after it: every
** other reader of y runs at or before its MLP sublayer (heads of the same
** layer and MLP units of the same sublayer read the residual before it
** writes), y is not the readout and no other unit updates y. */
void raspG_accept_aliases(gc *g, int readout) {
  int src[2 * MAXCOMPS + 4], ns;
  unsigned char *taken = raspM_alloc((size_t)g->nu);
  for (int i = 0; i < g->nu; i++) {
    unit *u = &g->u[i];
    if (u->alias < 0) continue;
    int y = u->alias, ok = u->used && g->u[y].used && y != readout && !taken[y];
    for (int r = 0; r < g->nu && ok; r++) {
      if (r == i || !g->u[r].used || g->u[r].ready <= u->ready) continue;
      raspG_unit_sources(&g->u[r], src, &ns);
      for (int k = 0; k < ns; k++)
        if (src[k] == y) ok = 0;
    }
    if (ok) taken[y] = 1;
    else u->alias = -1;
  }
  raspM_free(taken);
}

/* ---- liveness and dimensions ------------------------------------------ */

/* last: the last sublayer reading each unit (the readout: never dead); an
** in-place chain counts as its first unit, which owns the dimensions. */
void raspG_liveness(gc *g, int readout) {
  int src[2 * MAXCOMPS + 4], ns;
  for (int i = 0; i < g->nu; i++) g->u[i].last = g->u[i].ready;
  for (int r = 0; r < g->nu; r++) {
    if (!g->u[r].used) continue;
    raspG_unit_sources(&g->u[r], src, &ns);
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
int raspG_alloc_dims(gc *g, int policy) {
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
    /* a quantized width the proof refused for a residue (FORCE_FRESH):
    ** dimensions nothing held before (its rounding to an integer adds what
    ** is there) */
    int fresh = u->kind == U_HEAD && u->qw && g->force && (g->force[u->node] & FORCE_FRESH);
    int p = fresh ? top : 2;
    for (;; p++) {
      int fits = 1;
      for (int j = p; j < p + sz && fits; j++)
        fits = j >= top || free_at[j] < u->ready ||
               (free_at[j] == u->ready && (!raspG_exact_erase(g) || !free_num[j]));
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

/* The schedule of plan g (its used units), and each node's sublayer in it:
** the ready sublayer of the unit its view reads (a decode's, when its
** readers need it decoded; the readout's, ov, for the output), a selector
** its operands' latest, as in the IR rule (rlayers.h). */
void raspG_fill_sched(gc *g, const view *ov, raspG_sched *out) {
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
      raspG_unit_sources(u, src, &ns);
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
