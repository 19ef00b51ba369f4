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

/* The flags of an element-wise result from its operands' flags at one
** position; *why says what went wrong when it is 0 although the operands
** were not. */
static int elem_rule(const rasp_ir *ir, const rasp_ir_node *nd, const int *cflag, int a, int b,
                     int c, int64_t K, const char **why) {
  switch (nd->op) {
  case RASP_OP_UNARY:
    if (nd->aux == RASP_UN_POS) return a;
    if (nd->aux == RASP_UN_NOT && (a & (F_INV | F_EQV))) return F_INV;
    if (a & F_INV) return F_INV;
    *why = "arithmetic on a value derived from token ids";
    return 0;
  case RASP_OP_BINARY: {
    int op = nd->aux, x = nd->in[0], y = nd->in[1];
    if (op == RASP_BIN_EQ || op == RASP_BIN_NE) {
      if ((a & b & F_INV) || (a & b & F_EQV)) return F_INV;
      *why = "an id is compared for equality with a number that is not an id";
      return 0;
    }
    if (op == RASP_BIN_AND || op == RASP_BIN_OR) {
      if ((a & (F_INV | F_EQV)) && (b & (F_INV | F_EQV))) return F_INV;
      *why = "a logical operation on a value that depends on the id order";
      return 0;
    }
    if (a & b & F_INV) return F_INV;
    if (is_compare(op) && (((a & F_EQV) && outside_ids(ir, y, cflag, K)) ||
                           ((b & F_EQV) && outside_ids(ir, x, cflag, K))))
      return F_INV;
    if (is_compare(op) || op == RASP_BIN_MIN || op == RASP_BIN_MAX)
      *why = "token ids are compared by order (<, >, min, max): the result depends on which "
             "ids the symbols got";
    else
      *why = "arithmetic on a value derived from token ids";
    return 0;
  }
  case RASP_OP_WHERE:
    if (!(a & (F_INV | F_EQV))) {
      *why = "where's condition depends on the id order";
      return 0;
    }
    if (b & c & (F_INV | F_EQV)) return b & c & (F_INV | F_EQV);
    *why = "where mixes token ids with numbers that are not ids";
    return 0;
  default:
    *why = "tok_map and seq_map run arbitrary code on the values";
    return 0;
  }
}

/* Values of the nodes that do not depend on the input (evaluated once on
** an arbitrary input): where's condition is then known per position. */
static unsigned char *static_nodes(const rasp_ir *ir, rasp_eval **ev) {
  unsigned char *st = raspM_alloc((size_t)(ir->nnodes ? ir->nnodes : 1));
  for (int i = 0; i < ir->nnodes; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    st[i] = nd->op != RASP_OP_INPUT && nd->type != RASP_T_SEL;
    for (int k = 0; k < nd->nin && st[i]; k++) st[i] = st[nd->in[k]];
  }
  *ev = raspE_new((rasp_ir *)ir);
  int64_t *tok = raspM_alloc(sizeof(int64_t) * (size_t)(ir->n ? ir->n : 1));
  for (int i = 0; i < ir->n; i++) tok[i] = 1;
  rasp_error err = {0};
  if (!raspE_run(*ev, 1, tok, &err)) memset(st, 0, (size_t)(ir->nnodes ? ir->nnodes : 1));
  raspM_free(tok);
  return st;
}

#define MAX_CELLS (64u << 20) /* nodes x positions of per-position flags */

int raspO_analyse(const rasp_ir *ir, int output, int64_t K, const unsigned char *node_id,
                  const rasp_order_probe *probes, int nprobes, rasp_idorder *res) {
  memset(res, 0, sizeof *res);
  res->invariant = 1;
  if (ir->ids_what) { /* the interpreter saw it (rtrace.c's provenance tags) */
    res->invariant = 0;
    if (ir->ids_pos.src)
      raspR_set(&res->why, ir->ids_pos, "the program computes with token ids while tracing (%s)",
                ir->ids_what);
    else
      raspR_setnopos(&res->why, "the program computes with token ids while tracing (%s)",
                     ir->ids_what);
    return 0;
  }
  for (int p = 0; p < nprobes; p++) {
    const rasp_ir *q = probes[p].ir;
    int ok = q->nnodes == ir->nnodes && probes[p].output == output;
    for (int i = 0; ok && i < ir->nnodes; i++) ok = same_shape(&ir->nodes[i], &q->nodes[i]);
    if (!ok)
      return fail(res, NULL,
                  "the program traces to a different graph when the symbols get other ids "
                  "(it branches or loops on an id while tracing)");
  }
  int N = ir->nnodes ? ir->nnodes : 1, n = ir->n;
  if ((size_t)N * (size_t)n > MAX_CELLS)
    return fail(res, NULL, "the program is too large for the order analysis");
  /* pf: per-position flags of value nodes; nf: node-level flags (selectors,
     UNIQ); origin: the node where a position's flags were first lost */
  unsigned char *pf = raspM_alloc((size_t)N * (size_t)n);
  int *nf = raspM_alloc(sizeof(int) * (size_t)N), *cflags = raspM_alloc(sizeof(int) * (size_t)N);
  int *origin = raspM_alloc(sizeof(int) * (size_t)N);
  const char **why_at = raspM_alloc(sizeof(char *) * (size_t)N);
  unsigned char *live = raspM_alloc((size_t)N);
  raspI_live(ir, &output, 1, live);
  rasp_eval *ev = NULL;
  unsigned char *stat = static_nodes(ir, &ev);
  int cap = 0;
  for (int i = 0; i < ir->nnodes; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    unsigned char *row = pf + (size_t)i * (size_t)n;
    const unsigned char *in0 = nd->nin > 0 ? pf + (size_t)nd->in[0] * (size_t)n : NULL;
    const unsigned char *in1 = nd->nin > 1 ? pf + (size_t)nd->in[1] * (size_t)n : NULL;
    const unsigned char *in2 = nd->nin > 2 ? pf + (size_t)nd->in[2] * (size_t)n : NULL;
    origin[i] = -1;
    why_at[i] = NULL;
    nf[i] = 0;
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
    const char *why = NULL;
    int lost_here = 0, inherit = -1;
    switch (nd->op) {
    case RASP_OP_INPUT: memset(row, F_EQV, (size_t)n); break;
    case RASP_OP_INDICES:
      memset(row, F_INV, (size_t)n);
      nf[i] = F_UNIQ;
      break;
    case RASP_OP_FULL: memset(row, (unsigned char)cflags[i], (size_t)n); break;
    case RASP_OP_UNARY:
    case RASP_OP_BINARY:
    case RASP_OP_WHERE:
    case RASP_OP_MAP:
    case RASP_OP_SEQMAP: {
      const rasp_elem *cond = NULL;
      if (nd->op == RASP_OP_WHERE && stat[nd->in[0]]) cond = raspE_value(ev, nd->in[0], 0);
      for (int p = 0; p < n; p++) {
        int a = in0 ? in0[p] : 0, b = in1 ? in1[p] : 0, c = in2 ? in2[p] : 0;
        int f;
        const char *w = NULL;
        if (cond && (a & F_INV)) /* known per position: only the branch taken counts */
          f = raspI_elem_truth(cond[p]) ? b : c;
        else
          f = elem_rule(ir, nd, cflags, a, b, c, K, &w);
        row[p] = (unsigned char)f;
        if (f || origin[i] >= 0 || inherit >= 0 || lost_here) continue;
        /* where the flags were lost: here, or in an operand that had none */
        int zero_op = -1;
        if (cond && (a & F_INV)) zero_op = raspI_elem_truth(cond[p]) ? nd->in[1] : nd->in[2];
        else if (nd->op == RASP_OP_WHERE && !(a & (F_INV | F_EQV))) zero_op = a ? -1 : nd->in[0];
        else if (nd->op == RASP_OP_WHERE) zero_op = !b ? nd->in[1] : !c ? nd->in[2] : -1;
        else if (nd->op != RASP_OP_MAP && nd->op != RASP_OP_SEQMAP)
          zero_op = !a ? nd->in[0] : (nd->nin > 1 && !b) ? nd->in[1] : -1;
        if (zero_op >= 0) inherit = origin[zero_op] >= 0 ? origin[zero_op] : zero_op;
        else {
          lost_here = 1;
          why = w;
        }
      }
      if (nd->op == RASP_OP_UNARY && (nd->aux == RASP_UN_NEG || nd->aux == RASP_UN_POS))
        nf[i] = nf[nd->in[0]] & F_UNIQ;
      if (nd->op == RASP_OP_BINARY && (nd->aux == RASP_BIN_ADD || nd->aux == RASP_BIN_SUB)) {
        int x = nd->in[0], y = nd->in[1];
        if (((nf[x] & F_UNIQ) && ir->nodes[y].op == RASP_OP_FULL && (cflags[y] & F_INV)) ||
            (nd->aux == RASP_BIN_ADD && (nf[y] & F_UNIQ) && ir->nodes[x].op == RASP_OP_FULL &&
             (cflags[x] & F_INV)))
          nf[i] = F_UNIQ;
      }
      break;
    }
    case RASP_OP_SELECT: {
      int pred = nd->aux, ka = F_INV | F_EQV, qa = F_INV | F_EQV;
      for (int p = 0; p < n; p++) {
        ka &= in0[p];
        qa &= in1[p];
      }
      if (pred == RASP_PRED_TRUE || pred == RASP_PRED_FALSE) nf[i] = F_INV;
      else if (pred == RASP_PRED_CUSTOM) why = "a custom selection predicate";
      else if (pred == RASP_PRED_EQ || pred == RASP_PRED_NE) {
        if ((ka & qa & F_INV) || (ka & qa & F_EQV)) nf[i] = F_INV;
        else why = "a select compares ids with numbers that are not ids";
      } else if (ka & qa & F_INV) nf[i] = F_INV;
      else why = "a select compares token ids by order";
      if (nf[i] && pred == RASP_PRED_EQ && (nf[nd->in[0]] & F_UNIQ)) nf[i] |= F_ONE;
      if (nf[i] && pred == RASP_PRED_FALSE) nf[i] |= F_ONE;
      if (!nf[i]) { /* blame an operand that lost its flags, else this select */
        int op = !ka ? nd->in[0] : !qa ? nd->in[1] : -1;
        if (op >= 0) inherit = origin[op] >= 0 ? origin[op] : op;
        else lost_here = 1;
      }
      break;
    }
    case RASP_OP_SEL_AND:
    case RASP_OP_SEL_OR:
    case RASP_OP_SEL_NOT:
    case RASP_OP_SEL_WIDTH: {
      int a = nf[nd->in[0]], b = nd->nin > 1 ? nf[nd->in[1]] : F_INV;
      int f = (a & b & F_INV) ? F_INV : 0;
      if (f && nd->op == RASP_OP_SEL_AND) f |= (a | b) & F_ONE;
      if (nd->op == RASP_OP_SEL_WIDTH) memset(row, (unsigned char)f, (size_t)n);
      else nf[i] = f;
      if (!f) {
        int op = !(a & F_INV) ? nd->in[0] : nd->in[1];
        inherit = origin[op] >= 0 ? origin[op] : op;
      }
      break;
    }
    case RASP_OP_AGGR_MEAN:
    case RASP_OP_AGGREGATE:
    case RASP_OP_AGGR_MAX:
    case RASP_OP_AGGR_MIN: {
      int sel = nf[nd->in[0]], v = F_INV | F_EQV, c = cflags[i], f = 0;
      for (int p = 0; p < n; p++) v &= in1[p];
      if (!(sel & F_INV)) {
        inherit = origin[nd->in[0]] >= 0 ? origin[nd->in[0]] : nd->in[0];
      } else {
        if (v & c & F_INV) f = F_INV;
        /* a mean truncated to an integer may turn a rational into an id */
        int passes = nd->op != RASP_OP_AGGR_MEAN || ir->nodes[nd->in[1]].type == RASP_T_INT;
        if ((v & c & F_EQV) && passes) {
          f |= F_EQV;
          if (!(sel & F_ONE) && !(f & F_INV) && live[i]) { /* decided per input */
            RASP_GROW(res->mixing, cap, res->nmixing + 1);
            res->mixing[res->nmixing++] = i;
          }
        }
        if (!f) {
          if (!v) {
            inherit = origin[nd->in[1]] >= 0 ? origin[nd->in[1]] : nd->in[1];
          } else {
            lost_here = 1;
            why = "an aggregate mixes token ids with numbers that are not ids, or averages ids";
          }
        }
      }
      memset(row, (unsigned char)f, (size_t)n);
      break;
    }
    default:
      lost_here = 1;
      why = "an operation the order analysis does not know";
      memset(row, 0, (size_t)n);
      break;
    }
    if (lost_here) {
      origin[i] = i;
      why_at[i] = why ? why : "the values depend on the id order";
    } else if (inherit >= 0) {
      origin[i] = inherit;
    }
  }
  if (res->invariant) {
    const unsigned char *out = pf + (size_t)output * (size_t)n;
    for (int p = 0; p < n && res->invariant; p++) {
      if (out[p] & F_EQV) continue;
      if (out[p] || origin[output] < 0)
        fail(res, &ir->nodes[output], "the output mixes token ids with numbers that are not ids "
                                      "(check() would read such a number as a symbol)");
      else
        fail(res, &ir->nodes[origin[output]], why_at[origin[output]] ? why_at[origin[output]]
                                                                    : "the values depend on the id order");
    }
  }
  if (!res->invariant) res->nmixing = 0;
  raspE_free(ev);
  raspM_free(stat);
  raspM_free(pf);
  raspM_free(nf);
  raspM_free(cflags);
  raspM_free(origin);
  raspM_free(why_at);
  raspM_free(live);
  return res->invariant;
}

void raspO_free(rasp_idorder *res) {
  raspM_free(res->mixing);
  memset(res, 0, sizeof *res);
}

int raspO_mixes(const rasp_idorder *res, const rasp_ir *ir, rasp_eval *ev, int b) {
  int n = ir->n;
  for (int m = 0; m < res->nmixing; m++) {
    const rasp_ir_node *nd = &ir->nodes[res->mixing[m]];
    const rasp_elem *v = raspE_value(ev, nd->in[1], b);
    rasp_error err = {0};
    /* the evaluator's own selection matrix, causal mask included */
    const unsigned char *sel = v ? raspE_selector(ev, nd->in[0], b, &err) : NULL;
    if (!sel) return 1; /* cannot tell: counted as mixing */
    for (int q = 0; q < n; q++) {
      int first = -1;
      for (int k = 0; k < n; k++) {
        if (!sel[(size_t)q * (size_t)n + (size_t)k]) continue;
        if (first < 0) first = k;
        else if (!raspI_elem_eq(v[first], v[k])) return 1;
      }
    }
  }
  return 0;
}
