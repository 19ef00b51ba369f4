/*
** rfacts.c -- the IR facts every back end reads (see rfacts.h).
**
** Predicates are defined by the element order and equality of rir.c and by
** nothing else: True == 1, a symbol equals only itself and sorts after
** every number.  The pair scan (rfacts.h, inline) keeps the short-circuit
** order of the Python builtins it implements (an equality is not asked once
** its answer is known), so a callback that can fail fails at the same place
** as the interpreter would.
*/
#include "rfacts.h"

#include <string.h>

#include "rmem.h"

int raspF_pred_holds(rasp_pred p, rasp_elem key, rasp_elem query) {
  switch (p) {
  case RASP_PRED_EQ: return raspI_elem_eq(key, query);
  case RASP_PRED_NE: return !raspI_elem_eq(key, query);
  case RASP_PRED_LT: return raspI_elem_cmp(key, query) < 0;
  case RASP_PRED_LE: return raspI_elem_cmp(key, query) <= 0;
  case RASP_PRED_GT: return raspI_elem_cmp(key, query) > 0;
  case RASP_PRED_GE: return raspI_elem_cmp(key, query) >= 0;
  case RASP_PRED_TRUE: return 1;
  case RASP_PRED_FALSE: return 0;
  default: return -1; /* custom: the program's function decides */
  }
}

void raspF_static(const rasp_ir *ir, int from, unsigned char *st) {
  for (int i = from < 0 ? 0 : from; i < ir->nnodes; i++) {
    const rasp_ir_node *nd = &ir->nodes[i];
    int s = nd->op != RASP_OP_INPUT;
    for (int j = 0; j < nd->nin && s; j++) s = nd->in[j] >= 0 && nd->in[j] < i && st[nd->in[j]];
    /* always / never ignore the values they compare: sel_width of one is
       the length, whatever the tokens */
    if (nd->op == RASP_OP_SELECT && (nd->aux == RASP_PRED_TRUE || nd->aux == RASP_PRED_FALSE))
      s = 1;
    st[i] = (unsigned char)s;
  }
}

static uint64_t node_sig(const int *canon, const rasp_ir_node *nd) {
  uint64_t h = raspF_mix64((uint64_t)nd->op * 31 + (uint64_t)(unsigned)nd->aux);
  h = raspF_mix64(h ^ (uint64_t)nd->nin ^ ((uint64_t)nd->flags << 8));
  h = raspF_mix64(h ^ (uint64_t)nd->c.num) ^ raspF_mix64((uint64_t)nd->c.den + 7);
  h = raspF_mix64(h ^ (uint64_t)(uintptr_t)nd->fn);
  for (int j = 0; j < nd->nin; j++) h = raspF_mix64(h ^ ((uint64_t)canon[nd->in[j]] + 1) * 0x9e37u);
  return h;
}

static int same_node(const int *canon, const rasp_ir_node *a, const rasp_ir_node *b) {
  if (a->op != b->op || a->aux != b->aux || a->nin != b->nin || a->flags != b->flags ||
      a->fn != b->fn || a->c.num != b->c.num || a->c.den != b->c.den)
    return 0;
  for (int j = 0; j < a->nin; j++)
    if (canon[a->in[j]] != canon[b->in[j]]) return 0;
  return 1;
}

/* Operands precede their users, so one forward pass sees every operand's
** canonical node before the user's; an open-addressing table keyed by the
** node's signature finds the earlier equal node. */
void raspF_canon(const rasp_ir *ir, const unsigned char *live, int *canon) {
  int nn = ir->nnodes;
  for (int i = 0; i < nn; i++) canon[i] = i;
  size_t cap = 16;
  while (cap < (size_t)nn * 2) cap *= 2;
  int *tab = raspM_alloc(cap * sizeof *tab); /* node + 1, 0 = empty */
  for (int i = 0; i < nn; i++) {
    if (live && !live[i]) continue;
    const rasp_ir_node *nd = &ir->nodes[i];
    size_t j = node_sig(canon, nd) & (cap - 1);
    for (; tab[j]; j = (j + 1) & (cap - 1))
      if (same_node(canon, &ir->nodes[tab[j] - 1], nd)) break;
    if (!tab[j]) tab[j] = i + 1;
    else canon[i] = tab[j] - 1;
  }
  raspM_free(tab);
}
