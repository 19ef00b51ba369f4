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

/* The pass's state.  pf: per-position flags of value nodes; nf: node-level
** flags (selectors, UNIQ); cflags: a constant's flags; origin: the node
** where a position's flags were first lost, and why_at the reason there. */
typedef struct {
  const rasp_ir *ir;
  int64_t K;
  int n;
  const unsigned char *node_id;
  const rasp_order_probe *probes;
  int nprobes;
  rasp_idorder *res;
  unsigned char *pf;
  int *nf, *cflags, *origin;
  const char **why_at;
  unsigned char *live; /* nodes the output reads */
  rasp_eval *ev;       /* values of the static nodes (static_nodes) */
  unsigned char *stat;
  int cap; /* of res->mixing */
} pass;

/* Where one node lost its flags: here (why), or in operand inherit's
** origin; neither when it kept them. */
typedef struct {
  const char *why;
  int lost_here, inherit;
} loss;

static const unsigned char *row_of(const pass *a, int node) {
  return a->pf + (size_t)node * (size_t)a->n;
}

/* The node to blame for an operand without flags: where it lost them. */
static int blame(const pass *a, int op) { return a->origin[op] >= 0 ? a->origin[op] : op; }

/* The tracer's provenance tags saw ids used as numbers: nothing to prove. */
static int traced_with_ids(const rasp_ir *ir, rasp_idorder *res) {
  if (!ir->ids_what) return 0;
  res->invariant = 0;
  if (ir->ids_pos.src)
    raspR_set(&res->why, ir->ids_pos, "the program computes with token ids while tracing (%s)",
              ir->ids_what);
  else
    raspR_setnopos(&res->why, "the program computes with token ids while tracing (%s)",
                   ir->ids_what);
  return 1;
}

/* The rules compare node i with node i of each probe, so the probes must
** trace to the same graph. */
static int probes_match(const rasp_ir *ir, int output, const rasp_order_probe *probes,
                        int nprobes) {
  for (int p = 0; p < nprobes; p++) {
    const rasp_ir *q = probes[p].ir;
    int ok = q->nnodes == ir->nnodes && probes[p].output == output;
    for (int i = 0; ok && i < ir->nnodes; i++) ok = same_shape(&ir->nodes[i], &q->nodes[i]);
    if (!ok) return 0;
  }
  return 1;
}

/* Node i's constant against the probes' (cflags[i]); a live one that
** names a node or moves with the ids not as an id ends the proof. */
static void classify_const(pass *a, int i) {
  const rasp_ir_node *nd = &a->ir->nodes[i];
  rasp_elem ci[8];
  int np = a->nprobes < 8 ? a->nprobes : 8;
  for (int p = 0; p < np; p++) ci[p] = a->probes[p].ir->nodes[i].c;
  int names_node = 0;
  a->cflags[i] = const_flags(a->ir, nd->c, ci, a->probes, np, a->K, a->node_id, &names_node);
  if (names_node && a->live[i])
    fail(a->res, nd, "a constant names a node symbol by its id, so relabelling the graph changes it");
  if (!a->cflags[i] && a->live[i])
    fail(a->res, nd, "a constant is computed from ids while tracing (it changes with the id order "
                     "but not as an id)");
}

/* Element-wise nodes (unary, binary, where, maps): elem_rule per
** position, where's condition read per position when it is static; the
** first position without flags says where they were lost.  Negation and
** adding a constant keep values distinct (UNIQ). */
static void elem_node(pass *a, int i, unsigned char *row, loss *l) {
  const rasp_ir *ir = a->ir;
  const rasp_ir_node *nd = &ir->nodes[i];
  int n = a->n;
  const unsigned char *in0 = nd->nin > 0 ? row_of(a, nd->in[0]) : NULL;
  const unsigned char *in1 = nd->nin > 1 ? row_of(a, nd->in[1]) : NULL;
  const unsigned char *in2 = nd->nin > 2 ? row_of(a, nd->in[2]) : NULL;
  const rasp_elem *cond = NULL;
  if (nd->op == RASP_OP_WHERE && a->stat[nd->in[0]]) cond = raspE_value(a->ev, nd->in[0], 0);
  for (int p = 0; p < n; p++) {
    int x = in0 ? in0[p] : 0, y = in1 ? in1[p] : 0, z = in2 ? in2[p] : 0;
    int f;
    const char *w = NULL;
    if (cond && (x & F_INV)) /* known per position: only the branch taken counts */
      f = raspI_elem_truth(cond[p]) ? y : z;
    else
      f = elem_rule(ir, nd, a->cflags, x, y, z, a->K, &w);
    row[p] = (unsigned char)f;
    if (f || a->origin[i] >= 0 || l->inherit >= 0 || l->lost_here) continue;
    /* where the flags were lost: here, or in an operand that had none */
    int zero_op = -1;
    if (cond && (x & F_INV)) zero_op = raspI_elem_truth(cond[p]) ? nd->in[1] : nd->in[2];
    else if (nd->op == RASP_OP_WHERE && !(x & (F_INV | F_EQV))) zero_op = x ? -1 : nd->in[0];
    else if (nd->op == RASP_OP_WHERE) zero_op = !y ? nd->in[1] : !z ? nd->in[2] : -1;
    else if (nd->op != RASP_OP_MAP && nd->op != RASP_OP_SEQMAP)
      zero_op = !x ? nd->in[0] : (nd->nin > 1 && !y) ? nd->in[1] : -1;
    if (zero_op >= 0) l->inherit = blame(a, zero_op);
    else {
      l->lost_here = 1;
      l->why = w;
    }
  }
  int *nf = a->nf, *cflags = a->cflags;
  if (nd->op == RASP_OP_UNARY && (nd->aux == RASP_UN_NEG || nd->aux == RASP_UN_POS))
    nf[i] = nf[nd->in[0]] & F_UNIQ;
  if (nd->op == RASP_OP_BINARY && (nd->aux == RASP_BIN_ADD || nd->aux == RASP_BIN_SUB)) {
    int x = nd->in[0], y = nd->in[1];
    if (((nf[x] & F_UNIQ) && ir->nodes[y].op == RASP_OP_FULL && (cflags[y] & F_INV)) ||
        (nd->aux == RASP_BIN_ADD && (nf[y] & F_UNIQ) && ir->nodes[x].op == RASP_OP_FULL &&
         (cflags[x] & F_INV)))
      nf[i] = F_UNIQ;
  }
}

/* A select: invariant when its predicate reads keys and queries that are
** both invariant, or (for == and !=) both equivariant; one key per query
** (ONE) when it matches distinct keys for equality, or none at all. */
static void select_node(pass *a, int i, loss *l) {
  const rasp_ir_node *nd = &a->ir->nodes[i];
  const unsigned char *in0 = row_of(a, nd->in[0]), *in1 = row_of(a, nd->in[1]);
  int *nf = a->nf;
  int pred = nd->aux, ka = F_INV | F_EQV, qa = F_INV | F_EQV;
  for (int p = 0; p < a->n; p++) {
    ka &= in0[p];
    qa &= in1[p];
  }
  if (pred == RASP_PRED_TRUE || pred == RASP_PRED_FALSE) nf[i] = F_INV;
  else if (pred == RASP_PRED_CUSTOM) l->why = "a custom selection predicate";
  else if (pred == RASP_PRED_EQ || pred == RASP_PRED_NE) {
    if ((ka & qa & F_INV) || (ka & qa & F_EQV)) nf[i] = F_INV;
    else l->why = "a select compares ids with numbers that are not ids";
  } else if (ka & qa & F_INV) nf[i] = F_INV;
  else l->why = "a select compares token ids by order";
  if (nf[i] && pred == RASP_PRED_EQ && (nf[nd->in[0]] & F_UNIQ)) nf[i] |= F_ONE;
  if (nf[i] && pred == RASP_PRED_FALSE) nf[i] |= F_ONE;
  if (!nf[i]) { /* blame an operand that lost its flags, else this select */
    int op = !ka ? nd->in[0] : !qa ? nd->in[1] : -1;
    if (op >= 0) l->inherit = blame(a, op);
    else l->lost_here = 1;
  }
}

/* and, or, not of selectors, and selector_width: invariant from invariant
** operands; an and keeps an operand's one key per query. */
static void selector_node(pass *a, int i, unsigned char *row, loss *l) {
  const rasp_ir_node *nd = &a->ir->nodes[i];
  int x = a->nf[nd->in[0]], y = nd->nin > 1 ? a->nf[nd->in[1]] : F_INV;
  int f = (x & y & F_INV) ? F_INV : 0;
  if (f && nd->op == RASP_OP_SEL_AND) f |= (x | y) & F_ONE;
  if (nd->op == RASP_OP_SEL_WIDTH) memset(row, (unsigned char)f, (size_t)a->n);
  else a->nf[i] = f;
  if (!f) {
    int op = !(x & F_INV) ? nd->in[0] : nd->in[1];
    l->inherit = blame(a, op);
  }
}

/* An aggregate over an invariant selector: invariant values stay
** invariant, equivariant ones equivariant (a mean only of integers, as
** a truncated mean of rationals may land on an id).  Without one key per
** query, an equivariant mean is decided per input (res->mixing). */
static void aggregate_node(pass *a, int i, unsigned char *row, loss *l) {
  const rasp_ir *ir = a->ir;
  const rasp_ir_node *nd = &ir->nodes[i];
  const unsigned char *in1 = row_of(a, nd->in[1]);
  rasp_idorder *res = a->res;
  int sel = a->nf[nd->in[0]], v = F_INV | F_EQV, c = a->cflags[i], f = 0;
  for (int p = 0; p < a->n; p++) v &= in1[p];
  if (!(sel & F_INV)) {
    l->inherit = blame(a, nd->in[0]);
  } else {
    if (v & c & F_INV) f = F_INV;
    /* a mean truncated to an integer may turn a rational into an id */
    int passes = nd->op != RASP_OP_AGGR_MEAN || ir->nodes[nd->in[1]].type == RASP_T_INT;
    if ((v & c & F_EQV) && passes) {
      f |= F_EQV;
      if (!(sel & F_ONE) && !(f & F_INV) && a->live[i]) { /* decided per input */
        RASP_GROW(res->mixing, a->cap, res->nmixing + 1);
        res->mixing[res->nmixing++] = i;
      }
    }
    if (!f) {
      if (!v) {
        l->inherit = blame(a, nd->in[1]);
      } else {
        l->lost_here = 1;
        l->why = "an aggregate mixes token ids with numbers that are not ids, or averages ids";
      }
    }
  }
  memset(row, (unsigned char)f, (size_t)a->n);
}

/* Node i's flags from its operands' (creation order: they are known). */
static void flag_node(pass *a, int i) {
  const rasp_ir_node *nd = &a->ir->nodes[i];
  int n = a->n;
  unsigned char *row = a->pf + (size_t)i * (size_t)n;
  a->origin[i] = -1;
  a->why_at[i] = NULL;
  a->nf[i] = 0;
  a->cflags[i] = 0;
  if (has_const(nd)) classify_const(a, i);
  loss l = {NULL, 0, -1};
  switch (nd->op) {
  case RASP_OP_INPUT: memset(row, F_EQV, (size_t)n); break;
  case RASP_OP_INDICES:
    memset(row, F_INV, (size_t)n);
    a->nf[i] = F_UNIQ;
    break;
  case RASP_OP_FULL: memset(row, (unsigned char)a->cflags[i], (size_t)n); break;
  case RASP_OP_UNARY:
  case RASP_OP_BINARY:
  case RASP_OP_WHERE:
  case RASP_OP_MAP:
  case RASP_OP_SEQMAP: elem_node(a, i, row, &l); break;
  case RASP_OP_SELECT: select_node(a, i, &l); break;
  case RASP_OP_SEL_AND:
  case RASP_OP_SEL_OR:
  case RASP_OP_SEL_NOT:
  case RASP_OP_SEL_WIDTH: selector_node(a, i, row, &l); break;
  case RASP_OP_AGGR_MEAN:
  case RASP_OP_AGGREGATE:
  case RASP_OP_AGGR_MAX:
  case RASP_OP_AGGR_MIN: aggregate_node(a, i, row, &l); break;
  default:
    l.lost_here = 1;
    l.why = "an operation the order analysis does not know";
    memset(row, 0, (size_t)n);
    break;
  }
  if (l.lost_here) {
    a->origin[i] = i;
    a->why_at[i] = l.why ? l.why : "the values depend on the id order";
  } else if (l.inherit >= 0) {
    a->origin[i] = l.inherit;
  }
}

/* The output must be equivariant at every position (check() reads ids as
** symbols); else blame the output, or the node where its flags were lost. */
static void judge_output(pass *a, int output) {
  rasp_idorder *res = a->res;
  const rasp_ir *ir = a->ir;
  const unsigned char *out = row_of(a, output);
  for (int p = 0; p < a->n && res->invariant; p++) {
    if (out[p] & F_EQV) continue;
    if (out[p] || a->origin[output] < 0)
      fail(res, &ir->nodes[output], "the output mixes token ids with numbers that are not ids "
                                    "(check() would read such a number as a symbol)");
    else
      fail(res, &ir->nodes[a->origin[output]],
           a->why_at[a->origin[output]] ? a->why_at[a->origin[output]]
                                        : "the values depend on the id order");
  }
}

/* The plan: refuse what cannot be analysed, flag every node in creation
** order, judge the output. */
int raspO_analyse(const rasp_ir *ir, int output, int64_t K, const unsigned char *node_id,
                  const rasp_order_probe *probes, int nprobes, rasp_idorder *res) {
  memset(res, 0, sizeof *res);
  res->invariant = 1;
  if (traced_with_ids(ir, res)) return 0;
  if (!probes_match(ir, output, probes, nprobes))
    return fail(res, NULL,
                "the program traces to a different graph when the symbols get other ids "
                "(it branches or loops on an id while tracing)");
  int N = ir->nnodes ? ir->nnodes : 1, n = ir->n;
  if ((size_t)N * (size_t)n > MAX_CELLS)
    return fail(res, NULL, "the program is too large for the order analysis");
  pass a = {ir, K, n, node_id, probes, nprobes, res, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
            NULL, 0};
  a.pf = raspM_alloc((size_t)N * (size_t)n);
  a.nf = raspM_alloc(sizeof(int) * (size_t)N);
  a.cflags = raspM_alloc(sizeof(int) * (size_t)N);
  a.origin = raspM_alloc(sizeof(int) * (size_t)N);
  a.why_at = raspM_alloc(sizeof(char *) * (size_t)N);
  a.live = raspM_alloc((size_t)N);
  raspI_live(ir, &output, 1, a.live);
  a.stat = static_nodes(ir, &a.ev);
  for (int i = 0; i < ir->nnodes; i++) flag_node(&a, i);
  if (res->invariant) judge_output(&a, output);
  if (!res->invariant) res->nmixing = 0;
  raspE_free(a.ev);
  raspM_free(a.stat);
  raspM_free(a.pf);
  raspM_free(a.nf);
  raspM_free(a.cflags);
  raspM_free(a.origin);
  raspM_free(a.why_at);
  raspM_free(a.live);
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
