/*
** reval_plan.c -- the evaluator's plan: the passes over the IR that decide,
** before a run, what the run will do.
**
** A plan is made when the graph, its outputs, the length or (when values
** are dropped early) the batch shape change, and is then followed by every
** run (raspE_run); nothing here looks at values.  The passes, in order:
**   - canon (CSE): a live node equal to an earlier one shares its buffer;
**   - raw: aggregates only compared may keep unreduced rationals;
**   - hold: values that read no token are computed once and kept;
**   - twins: a sel_width evaluated by the sweep of an aggregate over the
**     same selector;
**   - heads: each head's selector shape (raspE_plan_head, reval_kern.c);
**   - release (intermediates dropped): after which node each value dies;
**   - dsteps (after the first run): the steps a run still has to visit.
** The IR itself keeps every node: layer counts and the compiler describe
** the program as written.  In reference mode canon, raw and twins leave
** every node to itself, so the reference kernel sees the program as
** written.
*/
#include "reval_int.h"
#include "rfacts.h"

/* Static values (raspF_static: they read no token) are kept across runs:
** all of them when every value is kept, else as long as together they take
** at most this much (so memory still follows the widest point of the graph
** on long sequences, where a program can have hundreds of position masks). */
#define STATIC_HOLD_BYTES ((size_t)16 << 20)

void raspE_plan_hold(rasp_eval *ev, size_t total) {
  size_t nstatic = 0;
  int nn = ev->ir->nnodes;
  for (int i = 0; i < nn; i++)
    nstatic += ev->plan.live[i] && ev->isstatic[i] && !ev->issel[i];
  ev->plan.hold_ok = ev->keep || nstatic * total <= STATIC_HOLD_BYTES / sizeof(rasp_elem);
  for (int i = 0; i < nn; i++)
    ev->plan.hold[i] = (unsigned char)(ev->plan.hold_ok && ev->isstatic[i] && !ev->issel[i]);
}

/* Common subexpressions.  Programs compute the same thing more than once
** (the same full(), the same mask or head in two helpers: a third of the
** live nodes of the causal path-star program), and the IR keeps them apart
** because layer counting and the compiler describe the program as written.
** The evaluator computes each value once: a live node whose canonical node
** (raspF_canon, rfacts.h) is an earlier one shares that node's buffer and
** skips its own evaluation.  Aliases own nothing; their canonical node
** lives as long as the last of them is read. */
void raspE_plan_canon(rasp_eval *ev) {
  int nn = ev->ir->nnodes;
  /* buffers of nodes that were aliases belong to their canonical node */
  for (int i = 0; i < nn; i++)
    if (ev->plan.canon[i] != i) {
      ev->val[i] = NULL;
      ev->valcap[i] = 0;
      ev->cfill[i] = 0;
    }
  if (ev->reference) /* the program as written */
    for (int i = 0; i < nn; i++) ev->plan.canon[i] = i;
  else
    raspF_canon(ev->ir, ev->plan.live, ev->plan.canon);
  for (int i = 0; i < nn; i++)
    if (ev->plan.canon[i] != i && ev->val[i]) { /* it owned a buffer as a canonical node before */
      raspE_pool_put(ev, ev->val[i], ev->valcap[i]);
      ev->val[i] = NULL;
      ev->valcap[i] = 0;
      ev->cfill[i] = 0;
    }
}

/* Unreduced rationals.  A mean is a fraction sum/count, and reducing it
** costs a gcd per element: most of the work of a running balance such as
** balanced_parens's.  When every reader of an aggregate only compares it
** (==, !=, <, <=, >, >=, which cross-multiply and so do not care whether a
** fraction is reduced) and it is not an output, the heads store sum/count
** as it is.  raspE_value reduces a row before handing it out, so nobody
** outside sees the difference. */
void raspE_plan_raw(rasp_eval *ev) {
  const rasp_ir *ir = ev->ir;
  int nn = ir->nnodes;
  for (int i = 0; i < nn; i++) ev->plan.raw[i] = ir->nodes[i].op == RASP_OP_AGGREGATE;
  for (int i = 0; i < ir->noutputs; i++)
    if (ir->outputs[i] >= 0 && ir->outputs[i] < nn) ev->plan.raw[ev->plan.canon[ir->outputs[i]]] = 0;
  for (int u = 0; u < nn; u++) {
    if (!ev->plan.live[u]) continue;
    const rasp_ir_node *nd = &ir->nodes[u];
    int compares = nd->op == RASP_OP_BINARY &&
                   (nd->aux == RASP_BIN_EQ || nd->aux == RASP_BIN_NE || nd->aux == RASP_BIN_LT ||
                    nd->aux == RASP_BIN_LE || nd->aux == RASP_BIN_GT || nd->aux == RASP_BIN_GE);
    if (compares) continue;
    for (int j = 0; j < nd->nin; j++)
      if (nd->in[j] >= 0 && nd->in[j] < nn) ev->plan.raw[ev->plan.canon[nd->in[j]]] = 0;
  }
  for (int i = 0; i < nn; i++)
    ev->plan.raw[i] = ev->plan.raw[i] && ev->plan.raw[ev->plan.canon[i]] && !ev->reference;
}

/* For keep == 0: after which node each value dies (lastuse), and for each
** node the values to hand back once it has run (relstart/rel, by release
** time).  A selector's operands are read by the heads that use the
** selector, so its uses pass down; held static values are never handed
** back. */
void raspE_plan_release(rasp_eval *ev) {
  const rasp_ir *ir = ev->ir;
  int nn = ir->nnodes;
  for (int i = 0; i < nn; i++) ev->plan.lastuse[i] = -1;
  for (int id = 0; id < nn; id++) {
    if (!ev->plan.live[id]) continue;
    const rasp_ir_node *nd = &ir->nodes[id];
    for (int j = 0; j < nd->nin; j++) {
      int in = nd->in[j];
      if (in >= 0 && in < id && ev->plan.lastuse[in] < id) ev->plan.lastuse[in] = id;
    }
  }
  for (int id = nn - 1; id >= 0; id--) {
    if (!ev->plan.live[id] || !raspE_is_selector(ir, id)) continue;
    const rasp_ir_node *nd = &ir->nodes[id];
    for (int j = 0; j < nd->nin; j++) {
      int in = nd->in[j];
      if (in >= 0 && in < id && ev->plan.lastuse[in] < ev->plan.lastuse[id])
        ev->plan.lastuse[in] = ev->plan.lastuse[id];
    }
  }
  for (int i = 0; i < ir->noutputs; i++) {
    int o = ir->outputs[i];
    if (o >= 0 && o < nn) ev->plan.lastuse[o] = nn; /* never released */
  }
  /* an alias's readers read its canonical node's buffer */
  for (int i = 0; i < nn; i++) {
    int c = ev->plan.canon[i];
    if (c != i && ev->plan.live[i] && ev->plan.lastuse[c] < ev->plan.lastuse[i])
      ev->plan.lastuse[c] = ev->plan.lastuse[i];
  }
  /* CSR by release time */
  memset(ev->plan.relstart, 0, ((size_t)nn + 1) * sizeof *ev->plan.relstart);
  for (int i = 0; i < nn; i++)
    if (ev->plan.live[i] && ev->plan.lastuse[i] >= 0 && ev->plan.lastuse[i] < nn &&
        !ev->plan.hold[i] && ev->plan.canon[i] == i)
      ev->plan.relstart[ev->plan.lastuse[i] + 1]++;
  for (int i = 0; i < nn; i++) ev->plan.relstart[i + 1] += ev->plan.relstart[i];
  int *fill = ev->plan.lastuse; /* reuse: positions are no longer needed */
  int *pos = raspM_alloc(((size_t)nn + 1) * sizeof *pos);
  memcpy(pos, ev->plan.relstart, ((size_t)nn + 1) * sizeof *pos);
  for (int i = 0; i < nn; i++)
    if (ev->plan.live[i] && fill[i] >= 0 && fill[i] < nn && !ev->plan.hold[i] &&
        ev->plan.canon[i] == i)
      ev->plan.rel[pos[fill[i]]++] = i;
  raspM_free(pos);
}

/* Twins.  A program often takes both sel_width(S) and an aggregate over the
** same selector S (is_before and connecting_i_idx in the causal path-star
** program); when S is one equality on small-range keys, the aggregate's
** sweep already counts each query's selection, so the width comes with it.
** twin[w] is that aggregate for the sel_width node w: the first later live
** aggregate over S whose values are computed before w (so it can run at
** w's step).  Static nodes need no twin: they are computed once. */
void raspE_plan_twins(rasp_eval *ev) {
  const rasp_ir *ir = ev->ir;
  for (int s = 0; s < ev->plan.nsteps; s++) ev->plan.twin[ev->plan.steps[s]] = -1;
  if (ev->reference) return;
  for (int s = 0; s < ev->plan.nsteps; s++) {
    int w = ev->plan.steps[s];
    const rasp_ir_node *wn = &ir->nodes[w];
    if (wn->op != RASP_OP_SEL_WIDTH || ev->plan.canon[w] != w || ev->plan.hold[w]) continue;
    int sel = ev->plan.canon[wn->in[0]];
    if (ir->nodes[sel].op != RASP_OP_SELECT || ir->nodes[sel].aux != RASP_PRED_EQ) continue;
    for (int t = s + 1; t < ev->plan.nsteps; t++) {
      int a = ev->plan.steps[t];
      const rasp_ir_node *an = &ir->nodes[a];
      if ((an->op != RASP_OP_AGGR_MEAN && an->op != RASP_OP_AGGREGATE) || ev->plan.canon[a] != a ||
          ev->plan.hold[a] || ev->plan.canon[an->in[0]] != sel || ev->plan.canon[an->in[1]] >= w)
        continue;
      int taken = 0;
      for (int u = 0; u < s && !taken; u++) taken = ev->plan.twin[ev->plan.steps[u]] == a;
      if (!taken) {
        ev->plan.twin[w] = a;
        break;
      }
    }
  }
}

/* After a run under the current plan: the steps a run still needs.  A held
** static value that is complete needs nothing (its kind and bounds stay),
** nor does a selector (no value; its head does the work) unless values die
** after it. */
void raspE_plan_dsteps(rasp_eval *ev, size_t total) {
  ev->plan.ndsteps = 0;
  for (int s = 0; s < ev->plan.nsteps; s++) {
    int id = ev->plan.steps[s];
    int c = ev->plan.canon[id], own = c == id;
    /* kept, or an alias of a kept value whose copies (val, kind, bounds)
       it took in this run */
    int kept = ev->plan.hold[c] && ev->val[c] && ev->cfill[c] >= total &&
               (own || (ev->val[id] == ev->val[c] && ev->bndheld[id] == ev->bndheld[c]));
    int idle_sel = own && ev->issel[id] &&
                   (ev->keep || ev->plan.relstart[id] == ev->plan.relstart[id + 1]);
    if (!kept && !idle_sel) ev->plan.dsteps[ev->plan.ndsteps++] = id;
  }
  ev->plan.dsteps_total = total;
  ev->plan.dsteps_ok = 1;
}

/* Each live head's plan (plan_head): what its selector allows. */
void raspE_plan_heads(rasp_eval *ev) {
  const rasp_ir *ir = ev->ir;
  for (int s = 0; s < ev->plan.nsteps; s++) {
    int id = ev->plan.steps[s];
    if (raspI_op_component(ir->nodes[id].op) == RASP_COMP_ATTN)
      raspE_plan_head(ev, id, &ev->plan.hplans[id]);
  }
}
