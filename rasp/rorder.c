/*
** rorder.c -- the order-invariance analysis (see rorder.h for what it
** proves and why each rule is sound).
**
** One pass over the nodes in creation order computes the flags; the first
** node whose flags a later rule needs and lacks is remembered, so the
** reason printed is the first place where the program looks at the order
** of the ids.  Constants are classified against the probes before the pass.
*/
#include "rorder.h"

#include <string.h>

#include "rmem.h"

enum {
  F_INV = 1,  /* invariant (values or selection pattern) */
  F_EQV = 2,  /* equivariant: ids follow the permutation, the rest stays */
  F_UNIQ = 4, /* values pairwise distinct across positions */
  F_ONE = 8   /* selector: at most one key per query */
};

/* A constant's flags: c0 in the analysed trace, ci in the probes. */
static int const_flags(const rasp_ir *ir, rasp_elem c0, const rasp_elem *ci,
                       const rasp_order_probe *probes,
                       int nprobes, int64_t K, const unsigned char *node_id, int *names_node) {
  if (c0.den == RASP_DEN_BOOL) { /* True == 1: never safe next to ids */
    for (int p = 0; p < nprobes; p++)
      if (ci[p].den != c0.den || ci[p].num != c0.num) return 0;
    return F_INV;
  }
  if (c0.den == RASP_DEN_SYM) { /* a symbol: no id, and pi keeps it */
    /* symbols are numbered per context, so compare their texts */
    const char *t0 = ir->symname ? ir->symname(ir->user, c0.num) : NULL;
    for (int p = 0; p < nprobes; p++) {
      const rasp_ir *q = probes[p].ir;
      const char *tp = q->symname ? q->symname(q->user, ci[p].num) : NULL;
      if (ci[p].den != c0.den || !t0 || !tp || strcmp(t0, tp) != 0) return 0;
    }
    return F_INV | F_EQV;
  }
  if (c0.den != 1) { /* a rational: no id, and pi keeps it */
    for (int p = 0; p < nprobes; p++)
      if (ci[p].den != c0.den || ci[p].num != c0.num) return 0;
    return F_INV | F_EQV;
  }
  int in_ids = c0.num >= 1 && c0.num <= K;
  int same = 1, moved = in_ids;
  for (int p = 0; p < nprobes; p++) {
    if (ci[p].den != 1) return 0;
    if (ci[p].num != c0.num) same = 0;
    if (!in_ids || ci[p].num != probes[p].perm[c0.num]) moved = 0;
  }
  /* the first probe moves every id, so both cannot hold */
  if (same) return in_ids ? F_INV : F_INV | F_EQV;
  if (moved) {
    if (node_id[c0.num]) *names_node = 1;
    return F_EQV;
  }
  return 0;
}

static int same_shape(const rasp_ir_node *a, const rasp_ir_node *b) {
  if (a->op != b->op || a->type != b->type || a->nin != b->nin || a->aux != b->aux ||
      a->flags != b->flags)
    return 0;
  for (int k = 0; k < a->nin; k++)
    if (a->in[k] != b->in[k]) return 0;
  return 1;
}

static int has_const(const rasp_ir_node *nd) {
  return nd->op == RASP_OP_FULL || nd->op == RASP_OP_AGGR_MEAN || nd->op == RASP_OP_AGGREGATE ||
         nd->op == RASP_OP_AGGR_MAX || nd->op == RASP_OP_AGGR_MIN;
}

static int is_compare(int op) {
  return op == RASP_BIN_LT || op == RASP_BIN_LE || op == RASP_BIN_GT || op == RASP_BIN_GE;
}

/* A constant node outside 1..K: every id lies on one side of it. */
static int outside_ids(const rasp_ir *ir, int node, const int *flags, int64_t K) {
  const rasp_ir_node *nd = &ir->nodes[node];
  if (nd->op != RASP_OP_FULL || !(flags[node] & F_INV) || nd->c.den < 1) return 0;
  /* c < 1 or c > K, for num/den with den >= 1 */
  return nd->c.num < nd->c.den || (__int128)nd->c.num > (__int128)K * nd->c.den;
}

static int fail(rasp_idorder *res, const rasp_ir_node *nd, const char *what) {
  if (res->invariant) {
    res->invariant = 0;
    if (nd && nd->pos.src)
      raspR_set(&res->why, nd->pos, "%s", what);
    else
      raspR_setnopos(&res->why, "%s", what);
  }
  return 0;
}

int raspO_analyse(const rasp_ir *ir, int output, int64_t K, const unsigned char *node_id,
                  const rasp_order_probe *probes, int nprobes, rasp_idorder *res) {
  memset(res, 0, sizeof *res);
  res->invariant = 1;
  for (int p = 0; p < nprobes; p++) {
    const rasp_ir *q = probes[p].ir;
    int ok = q->nnodes == ir->nnodes && probes[p].output == output;
    for (int i = 0; ok && i < ir->nnodes; i++) ok = same_shape(&ir->nodes[i], &q->nodes[i]);
    if (!ok)
      return fail(res, NULL,
                  "the program traces to a different graph when the symbols get other ids "
                  "(it branches or loops on an id while tracing)");
  }
  int *flags = raspM_alloc(sizeof(int) * (size_t)(ir->nnodes ? ir->nnodes : 1));
  int *cflags = raspM_alloc(sizeof(int) * (size_t)(ir->nnodes ? ir->nnodes : 1));
  unsigned char *live = raspM_alloc((size_t)(ir->nnodes ? ir->nnodes : 1));
  raspI_live(ir, &output, 1, live);
  int cap = 0;
  for (int i = 0; i < ir->nnodes; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    cflags[i] = 0;
    if (has_const(nd)) {
      rasp_elem ci[8];
      int np = nprobes < 8 ? nprobes : 8;
      for (int p = 0; p < np; p++) ci[p] = probes[p].ir->nodes[i].c;
      int names_node = 0;
      cflags[i] = const_flags(ir, nd->c, ci, probes, np, K, node_id, &names_node);
      if (names_node && live[i])
        fail(res, nd, "a constant names a node symbol by its id, so relabelling the graph changes it");
      if (!cflags[i] && live[i])
        fail(res, nd, "a constant is computed from ids while tracing (it changes with the id order "
                      "but not as an id)");
    }
    int f = 0;
    int a = nd->nin > 0 ? flags[nd->in[0]] : 0, b = nd->nin > 1 ? flags[nd->in[1]] : 0;
    const char *why = NULL;
    switch (nd->op) {
    case RASP_OP_INPUT: f = F_EQV; break;
    case RASP_OP_INDICES: f = F_INV | F_UNIQ; break;
    case RASP_OP_FULL: f = cflags[i]; break;
    case RASP_OP_UNARY:
      if (nd->aux == RASP_UN_POS) f = a;
      else if (nd->aux == RASP_UN_NOT && (a & (F_INV | F_EQV))) f = F_INV;
      else if (a & F_INV) f = F_INV | (nd->aux == RASP_UN_NEG ? a & F_UNIQ : 0);
      else why = "arithmetic on a value derived from token ids";
      break;
    case RASP_OP_BINARY: {
      int op = nd->aux;
      int x = nd->in[0], y = nd->in[1];
      if (op == RASP_BIN_EQ || op == RASP_BIN_NE) {
        if ((a & b & F_INV) || (a & b & F_EQV)) f = F_INV;
        else why = "an id is compared for equality with a number that is not an id";
      } else if (op == RASP_BIN_AND || op == RASP_BIN_OR) {
        if ((a & (F_INV | F_EQV)) && (b & (F_INV | F_EQV))) f = F_INV;
        else why = "a logical operation on a value that depends on the id order";
      } else if (a & b & F_INV) {
        f = F_INV;
        if ((op == RASP_BIN_ADD || op == RASP_BIN_SUB) &&
            (((a & F_UNIQ) && ir->nodes[y].op == RASP_OP_FULL) ||
             (op == RASP_BIN_ADD && (b & F_UNIQ) && ir->nodes[x].op == RASP_OP_FULL)))
          f |= F_UNIQ;
      } else if (is_compare(op) && (((a & F_EQV) && outside_ids(ir, y, flags, K)) ||
                                    ((b & F_EQV) && outside_ids(ir, x, flags, K)))) {
        f = F_INV;
      } else if (is_compare(op) || op == RASP_BIN_MIN || op == RASP_BIN_MAX) {
        why = "token ids are compared by order (<, >, min, max): the result depends on which "
              "ids the symbols got";
      } else {
        why = "arithmetic on a value derived from token ids";
      }
      break;
    }
    case RASP_OP_WHERE: {
      int c = a;
      int y = flags[nd->in[2]];
      if (!(c & (F_INV | F_EQV))) why = "where's condition depends on the id order";
      else f = b & y & (F_INV | F_EQV);
      if (!why && !f) why = "where mixes token ids with numbers that are not ids";
      break;
    }
    case RASP_OP_MAP:
    case RASP_OP_SEQMAP:
      why = "tok_map and seq_map run arbitrary code on the values";
      break;
    case RASP_OP_SELECT: {
      int pred = nd->aux;
      if (pred == RASP_PRED_TRUE || pred == RASP_PRED_FALSE) f = F_INV;
      else if (pred == RASP_PRED_CUSTOM) why = "a custom selection predicate";
      else if (pred == RASP_PRED_EQ || pred == RASP_PRED_NE) {
        if ((a & b & F_INV) || (a & b & F_EQV)) f = F_INV;
        else why = "a select compares ids with numbers that are not ids";
      } else if (a & b & F_INV) f = F_INV;
      else why = "a select compares token ids by order";
      if (f && pred == RASP_PRED_EQ && (a & F_UNIQ)) f |= F_ONE;
      if (f && pred == RASP_PRED_FALSE) f |= F_ONE;
      break;
    }
    case RASP_OP_SEL_AND:
      if (a & b & F_INV) f = F_INV | ((a | b) & F_ONE);
      else why = "a selector depends on the id order";
      break;
    case RASP_OP_SEL_OR:
      if (a & b & F_INV) f = F_INV;
      else why = "a selector depends on the id order";
      break;
    case RASP_OP_SEL_NOT:
      if (a & F_INV) f = F_INV;
      else why = "a selector depends on the id order";
      break;
    case RASP_OP_SEL_WIDTH:
      if (a & F_INV) f = F_INV;
      else why = "a selector depends on the id order";
      break;
    case RASP_OP_AGGR_MEAN:
    case RASP_OP_AGGREGATE:
    case RASP_OP_AGGR_MAX:
    case RASP_OP_AGGR_MIN: {
      int v = b, c = cflags[i];
      if (!(a & F_INV)) {
        why = "an aggregate's selector depends on the id order";
        break;
      }
      if (v & c & F_INV) f = F_INV;
      /* a mean truncated to an integer may turn a rational into an id */
      int passes = nd->op != RASP_OP_AGGR_MEAN || ir->nodes[nd->in[1]].type == RASP_T_INT;
      if ((v & c & F_EQV) && passes) {
        f |= F_EQV;
        if (!(a & F_ONE) && !(f & F_INV)) { /* decided per input */
          RASP_GROW(res->mixing, cap, res->nmixing + 1);
          if (live[i]) res->mixing[res->nmixing++] = i;
        }
      }
      if (!f) why = "an aggregate mixes token ids with numbers that are not ids, or averages ids";
      break;
    }
    default:
      why = "an operation the order analysis does not know";
      break;
    }
    flags[i] = f;
    if (why && live[i]) fail(res, nd, why);
  }
  if (res->invariant && !(flags[output] & F_EQV))
    fail(res, &ir->nodes[output], "the output mixes token ids with numbers that are not ids "
                                  "(check() would read such a number as a symbol)");
  raspM_free(flags);
  raspM_free(cflags);
  raspM_free(live);
  return res->invariant;
}

void raspO_free(rasp_idorder *res) {
  raspM_free(res->mixing);
  memset(res, 0, sizeof *res);
}

/* Whether key k is selected for query q; -1 when a value is missing. */
static int selected(const rasp_ir *ir, rasp_eval *ev, int node, int b, int k, int q) {
  const rasp_ir_node *nd = &ir->nodes[node];
  switch (nd->op) {
  case RASP_OP_SELECT: {
    if ((nd->flags & RASP_CAUSAL) && k > q) return 0;
    if (nd->aux == RASP_PRED_TRUE) return 1;
    if (nd->aux == RASP_PRED_FALSE) return 0;
    const rasp_elem *keys = raspE_value(ev, nd->in[0], b), *qs = raspE_value(ev, nd->in[1], b);
    if (!keys || !qs) return -1;
    switch (nd->aux) {
    case RASP_PRED_EQ: return raspI_elem_eq(keys[k], qs[q]);
    case RASP_PRED_NE: return !raspI_elem_eq(keys[k], qs[q]);
    case RASP_PRED_LT: return raspI_elem_cmp(keys[k], qs[q]) < 0;
    case RASP_PRED_LE: return raspI_elem_cmp(keys[k], qs[q]) <= 0;
    case RASP_PRED_GT: return raspI_elem_cmp(keys[k], qs[q]) > 0;
    case RASP_PRED_GE: return raspI_elem_cmp(keys[k], qs[q]) >= 0;
    default: return -1;
    }
  }
  case RASP_OP_SEL_AND: {
    int x = selected(ir, ev, nd->in[0], b, k, q);
    if (x <= 0) return x;
    return selected(ir, ev, nd->in[1], b, k, q);
  }
  case RASP_OP_SEL_OR: {
    int x = selected(ir, ev, nd->in[0], b, k, q);
    if (x != 0) return x;
    return selected(ir, ev, nd->in[1], b, k, q);
  }
  case RASP_OP_SEL_NOT: {
    int x = selected(ir, ev, nd->in[0], b, k, q);
    return x < 0 ? x : !x;
  }
  default: return -1;
  }
}

int raspO_mixes(const rasp_idorder *res, const rasp_ir *ir, rasp_eval *ev, int b) {
  int n = ir->n;
  for (int m = 0; m < res->nmixing; m++) {
    const rasp_ir_node *nd = &ir->nodes[res->mixing[m]];
    const rasp_elem *v = raspE_value(ev, nd->in[1], b);
    if (!v) return 1;
    for (int q = 0; q < n; q++) {
      int first = -1;
      for (int k = 0; k < n; k++) {
        int s = selected(ir, ev, nd->in[0], b, k, q);
        if (s < 0) return 1;
        if (!s) continue;
        if (first < 0) first = k;
        else if (!raspI_elem_eq(v[first], v[k])) return 1;
      }
    }
  }
  return 0;
}

void raspO_carries_ids(const rasp_ir *ir, int64_t K, unsigned char *carries) {
  for (int i = 0; i < ir->nnodes; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    int c = 0;
    switch (nd->op) {
    case RASP_OP_INPUT:
    case RASP_OP_MAP:
    case RASP_OP_SEQMAP: c = 1; break; /* unknown: keep them symbolic */
    case RASP_OP_FULL: c = nd->c.den == 1 && nd->c.num >= 1 && nd->c.num <= K; break;
    case RASP_OP_UNARY: c = nd->aux == RASP_UN_POS && carries[nd->in[0]]; break;
    case RASP_OP_WHERE: c = carries[nd->in[1]] || carries[nd->in[2]]; break;
    case RASP_OP_AGGR_MEAN:
    case RASP_OP_AGGREGATE:
    case RASP_OP_AGGR_MAX:
    case RASP_OP_AGGR_MIN:
      c = carries[nd->in[1]] || (nd->c.den == 1 && nd->c.num >= 1 && nd->c.num <= K);
      break;
    default: c = 0; break;
    }
    carries[i] = (unsigned char)c;
  }
}
