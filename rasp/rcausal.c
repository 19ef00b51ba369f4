/*
** rcausal.c -- the causality analysis (rcausal.h).
**
** One forward pass over the nodes in creation (topological) order computes
** every node's bound max(q + a, b) from its operands'.  Selectors need more
** than one bound, because what a selector looks at depends on whether the
** head that uses it is masked: a selector keeps the bound of its pattern
** under the mask (only keys k <= q are looked at) and without it, and the
** keys it may select, k <= max(q + s, t).  A head reads its selector in the
** selector's own context: masked when the selector is causal.
**
** NONE stands for "no position": a bound of a constant, or of a selector
** that selects nothing.  Constants from the program are kept only when they
** are small, so sums of bounds cannot overflow.
*/
#include "rcausal.h"

#include <stdio.h>
#include <string.h>

#include "rmem.h"

#define NONE (INT64_MIN / 4)
#define BIG ((int64_t)1 << 40)
#define NOAFF (-9) /* not an affine function of the position */

struct raspA_node {
  int64_t a, b;   /* the bound; for a selector, in its own context, with the
                     keys it may select */
  int64_t ma, mb; /* selector: its pattern's bound under a mask */
  int64_t ua, ub; /* selector: its pattern's bound without one */
  int64_t s, t;   /* selector: selects only keys k <= max(q + s, t) */
  int affm;       /* the value at q is affm * q + affd (affm 0 or 1), or NOAFF */
  int64_t affd;
};

static int64_t mx(int64_t x, int64_t y) { return x > y ? x : y; }
/* Sums stay within +-2^50 (far below overflow however many heads add up):
** raising a bound that low, or lowering one above every position, keeps it
** sound. */
static int64_t add(int64_t x, int64_t y) {
  if (x == NONE || y == NONE) return NONE;
  int64_t r = x + y, lim = (int64_t)1 << 50;
  return r > lim ? lim : r < -lim ? -lim : r;
}
static int is_sel(const rasp_ir_node *nd) { return nd->type == RASP_T_SEL; }

/* First position from which the bound (a, b) stays within q. */
static int first_ok(int64_t a, int64_t b, int n) {
  if (n <= 1) return 0;
  if (a != NONE && a > 0) return n - 1; /* only the last position, which sees all */
  if (b == NONE || b <= 0) return 0;
  return b < n - 1 ? (int)b : n - 1;
}

/* Of two bounds on the selected keys of one selector (both hold), the one
** causal from the earlier position, else the one that reads less far at 0. */
static void tighter(int n, int64_t *s, int64_t *t, int64_t s2, int64_t t2) {
  int f1 = first_ok(*s, *t, n), f2 = first_ok(s2, t2, n);
  if (f2 < f1 || (f2 == f1 && mx(s2, t2) < mx(*s, *t))) {
    *s = s2;
    *t = t2;
  }
}

static void affine(const rasp_ir *ir, struct raspA_node *v, int i) {
  const rasp_ir_node *nd = &ir->nodes[i];
  v[i].affm = NOAFF;
  switch (nd->op) {
  case RASP_OP_INDICES: v[i].affm = 1; v[i].affd = 0; return;
  case RASP_OP_FULL:
    if (nd->c.den == 1 && nd->c.num > -BIG && nd->c.num < BIG) {
      v[i].affm = 0;
      v[i].affd = nd->c.num;
    }
    return;
  case RASP_OP_UNARY:
    if (nd->aux == RASP_UN_POS) {
      v[i].affm = v[nd->in[0]].affm;
      v[i].affd = v[nd->in[0]].affd;
    }
    return;
  case RASP_OP_BINARY: {
    const struct raspA_node *x = &v[nd->in[0]], *y = &v[nd->in[1]];
    if (x->affm == NOAFF || y->affm == NOAFF) return;
    int m;
    int64_t d;
    if (nd->aux == RASP_BIN_ADD) {
      m = x->affm + y->affm;
      d = x->affd + y->affd;
    } else if (nd->aux == RASP_BIN_SUB) {
      m = x->affm - y->affm;
      d = x->affd - y->affd;
    } else {
      return;
    }
    if ((m == 0 || m == 1) && d > -BIG && d < BIG) {
      v[i].affm = m;
      v[i].affd = d;
    }
    return;
  }
  default: return;
  }
}

/* The keys a select may select, without its mask, proved from positions:
** keys `indices + e` against queries `m*q + d` under ==, <= or <. */
static void select_keys(const rasp_ir_node *nd, const struct raspA_node *v, int n, int64_t *s,
                        int64_t *t) {
  *s = NONE;
  *t = n - 1;
  if (nd->aux == RASP_PRED_FALSE) {
    *t = NONE;
    return;
  }
  const struct raspA_node *k = &v[nd->in[0]], *q = &v[nd->in[1]];
  if (k->affm != 1 || (q->affm != 0 && q->affm != 1)) return;
  int64_t c;
  switch ((rasp_pred)nd->aux) {
  case RASP_PRED_EQ:
  case RASP_PRED_LE: c = q->affd - k->affd; break;
  case RASP_PRED_LT: c = q->affd - k->affd - 1; break;
  default: return;
  }
  if (q->affm == 1) {
    *s = c;
    *t = NONE;
  } else {
    *t = c;
  }
}

void raspA_analyse(const rasp_ir *ir, rasp_causal *out) {
  int nn = ir->nnodes, n = ir->n;
  out->ir = ir;
  out->n = n;
  out->nnodes = nn;
  out->node = raspM_alloc(((size_t)nn + 1) * sizeof *out->node);
  struct raspA_node *v = out->node;
  for (int i = 0; i < nn; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    struct raspA_node *x = &v[i];
    x->a = x->b = x->ma = x->mb = x->ua = x->ub = NONE;
    x->s = NONE;
    x->t = n - 1;
    affine(ir, v, i);
    int masked = (nd->flags & RASP_CAUSAL) != 0;
    switch (nd->op) {
    case RASP_OP_INPUT: x->a = 0; break;
    case RASP_OP_INDICES:
    case RASP_OP_FULL: break;
    case RASP_OP_SELECT: {
      const struct raspA_node *k = &v[nd->in[0]], *q = &v[nd->in[1]];
      x->ma = mx(q->a, k->a); /* keys 0..q */
      x->mb = mx(q->b, k->b);
      x->ua = q->a;           /* every key */
      x->ub = mx(q->b, mx(add(n - 1, k->a), k->b));
      select_keys(nd, v, n, &x->s, &x->t);
      break;
    }
    case RASP_OP_SEL_NOT:
    case RASP_OP_SEL_AND:
    case RASP_OP_SEL_OR: {
      const struct raspA_node *l = &v[nd->in[0]], *r = nd->nin > 1 ? &v[nd->in[1]] : l;
      x->ma = mx(l->ma, r->ma);
      x->mb = mx(l->mb, r->mb);
      x->ua = mx(l->ua, r->ua);
      x->ub = mx(l->ub, r->ub);
      if (nd->op == RASP_OP_SEL_AND) {
        x->s = l->s;
        x->t = l->t;
        tighter(n, &x->s, &x->t, r->s, r->t);
      } else if (nd->op == RASP_OP_SEL_OR) {
        x->s = mx(l->s, r->s);
        x->t = mx(l->t, r->t);
      } /* ~: may select any key */
      break;
    }
    default:
      if (raspI_op_component(nd->op) == RASP_COMP_ATTN) {
        const struct raspA_node *sl = &v[nd->in[0]];
        /* the selector's bound already holds its pattern and the keys it
           selects; add the values of those keys */
        x->a = sl->a;
        x->b = sl->b;
        if (nd->nin > 1) {
          const struct raspA_node *val = &v[nd->in[1]];
          int64_t t = sl->t == NONE || sl->t < n - 1 ? sl->t : n - 1;
          x->a = mx(x->a, add(sl->s, val->a));
          x->b = mx(x->b, mx(add(t, val->a), val->b));
        }
      } else { /* element-wise */
        for (int j = 0; j < nd->nin; j++) {
          x->a = mx(x->a, v[nd->in[j]].a);
          x->b = mx(x->b, v[nd->in[j]].b);
        }
      }
      break;
    }
    if (is_sel(nd)) {
      if (masked) {
        /* its own mask: the pattern looks at keys 0..q, selects only them */
        x->ua = x->ma;
        x->ub = x->mb;
        tighter(n, &x->s, &x->t, 0, NONE);
      }
      int64_t t = x->t == NONE || x->t < n - 1 ? x->t : n - 1;
      x->a = mx(x->ua, x->s);
      x->b = mx(x->ub, t);
    }
  }
}

void raspA_free(rasp_causal *c) {
  raspM_free(c->node);
  memset(c, 0, sizeof *c);
}

int raspA_horizon(const rasp_causal *c, int id, int q) {
  const struct raspA_node *x = &c->node[id];
  int64_t h = mx(add(q, x->a), x->b);
  if (h == NONE || h < 0) return -1;
  return h > c->n - 1 ? c->n - 1 : (int)h;
}

int raspA_causal_at(const rasp_causal *c, int id, int q) {
  return raspA_horizon(c, id, q) <= q;
}

int raspA_first_causal(const rasp_causal *c, int id) {
  return first_ok(c->node[id].a, c->node[id].b, c->n);
}

int raspA_sel_prefix(const rasp_causal *c, int id) {
  const struct raspA_node *x = &c->node[id];
  return (c->ir->nodes[id].flags & RASP_CAUSAL) || first_ok(x->s, x->t, c->n) == 0;
}

/* ---- finding the leak */

static int leaky(const rasp_causal *c, int64_t a, int64_t b) { return first_ok(a, b, c->n) > 0; }
static int leaky_node(const rasp_causal *c, int id) {
  return leaky(c, c->node[id].a, c->node[id].b);
}

/* Where the selector id leaks, read in a masked context or not: its
** pattern (pat) or the keys it selects.  *next: a sequence node to go on
** from, or -1 when id (or a selector below it) is the origin. */
static int sel_leak(const rasp_causal *c, int id, int masked, int *next) {
  const rasp_ir_node *nd = &c->ir->nodes[id];
  const struct raspA_node *x = &c->node[id];
  masked = masked || (nd->flags & RASP_CAUSAL);
  *next = -1;
  int pat = masked ? leaky(c, x->ma, x->mb) : leaky(c, x->ua, x->ub);
  if (pat) {
    if (nd->op == RASP_OP_SELECT) {
      int k = nd->in[0], q = nd->in[1];
      if (leaky_node(c, q)) *next = q;
      else if (leaky_node(c, k)) *next = k;
      return id; /* or: an unmasked select that looks at every key */
    }
    for (int j = 0; j < nd->nin; j++) {
      const struct raspA_node *o = &c->node[nd->in[j]];
      if (masked ? leaky(c, o->ma, o->mb) : leaky(c, o->ua, o->ub))
        return sel_leak(c, nd->in[j], masked, next);
    }
    return id;
  }
  if (masked) return id; /* cannot happen: the mask bounds the keys */
  /* the keys it may select reach later positions: the operand that
     gave the bound (&) or one that reaches them (|) */
  int comb = nd->op == RASP_OP_SEL_AND || nd->op == RASP_OP_SEL_OR;
  for (int j = 0; j < nd->nin && comb; j++) {
    const struct raspA_node *o = &c->node[nd->in[j]];
    if (nd->op == RASP_OP_SEL_AND ? o->s == x->s && o->t == x->t : leaky(c, o->s, o->t))
      return sel_leak(c, nd->in[j], 0, next);
  }
  return id;
}

int raspA_leak(const rasp_causal *c, int root) {
  if (root < 0 || root >= c->nnodes || !leaky_node(c, root)) return -1;
  int x = root;
  for (;;) {
    const rasp_ir_node *nd = &c->ir->nodes[x];
    if (is_sel(nd)) {
      int next, origin = sel_leak(c, x, 0, &next);
      if (next < 0) return origin;
      x = next;
      continue;
    }
    int found = -1;
    for (int j = 0; j < nd->nin && found < 0; j++)
      if (leaky_node(c, nd->in[j])) found = nd->in[j];
    if (found < 0) return x;
    x = found;
  }
}

static void describe(const rasp_ir_node *nd, char *buf, size_t size) {
  switch (nd->op) {
  case RASP_OP_SELECT:
    snprintf(buf, size, "this select (%s, %s)", raspI_pred_name((rasp_pred)nd->aux),
             (nd->flags & RASP_CAUSAL) ? "causal" : "not causal");
    break;
  case RASP_OP_SEL_NOT: snprintf(buf, size, "this ~ of a selector"); break;
  case RASP_OP_SEL_AND: snprintf(buf, size, "this & of selectors"); break;
  case RASP_OP_SEL_OR: snprintf(buf, size, "this | of selectors"); break;
  default: snprintf(buf, size, "this %s", raspI_op_name(nd->op)); break;
  }
}

int raspA_check(const rasp_causal *c, int root, const char *why, rasp_error *err) {
  int o = raspA_leak(c, root);
  if (o < 0) return 1;
  const rasp_ir_node *nd = &c->ir->nodes[o];
  char what[96], label[96] = "";
  describe(nd, what, sizeof what);
  if (nd->label) snprintf(label, sizeof label, ", '%s'", nd->label);
  raspR_set(err, nd->pos,
            "%s, but %s reads later positions: its value at positions 0..%d depends on later "
            "ones (position 0 on position %d), which a decoder has not seen (node %d%s)",
            why, what, raspA_first_causal(c, o) - 1, raspA_horizon(c, o, 0), o, label);
  return 0;
}
