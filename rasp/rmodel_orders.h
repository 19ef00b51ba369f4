/*
** rmodel_orders.h -- the model's forward pass in other summation orders and
** in float64: a reference independent of raspN_forward and of the
** compiler's sparse pass, for `rasp compile --check-orders`.
*/
#ifndef RASP_RMODEL_ORDERS_H
#define RASP_RMODEL_ORDERS_H

#include <stdint.h>

#include "rmodel.h"

/* The orders (rmodel_orders.c's essay says what each one sums how):
** c     float32, every sum as raspN_forward adds it (bias first, then the
**       terms by index);
** rev   float32, every sum's terms by descending index, the bias last;
** asc   float32, every sum's terms (bias included) by ascending magnitude;
** desc  float32, by descending magnitude;
** pair  float32, pairwise (a balanced tree over bias and terms, as blocked
**       and GPU reductions add);
** perm  float32, raspN_forward's order under one seeded random permutation
**       of the residual dimensions, hidden units, heads, head dimensions
**       and keys (the order a permuted copy of the model would sum in);
** f64   the same weights in float64 arithmetic, raspN_forward's order;
** sdpa  float32, raspN_forward's order, the scores as PyTorch's
**       scaled_dot_product_attention forms them: q and k each multiplied
**       by float32(d_head^(-1/4)) first, then their product, unscaled. */
enum {
  RASPN_ORD_C, RASPN_ORD_REV, RASPN_ORD_ASC, RASPN_ORD_DESC, RASPN_ORD_PAIR,
  RASPN_ORD_PERM, RASPN_ORD_F64, RASPN_ORD_SDPA, RASPN_NORDERS
};
/* "c", "rev", ...; NULL out of range. */
const char *raspN_order_name(int order);
/* The order named word, or -1. */
int raspN_order_parse(const char *word);

typedef struct raspN_ofwd raspN_ofwd;
/* The forward pass of m (which must outlive it) in order; seed picks perm's
** permutation.  Its sums skip the zero weights (adding an exact zero moves
** no sum in any order, so every order stays one of the full sum's). */
raspN_ofwd *raspN_ofwd_new(const rasp_model *m, int order, uint64_t seed);
void raspN_ofwd_free(raspN_ofwd *f);
/* logits (n * n_out) of tokens[0..n) (BOS first, as raspN_forward's).
** 1, or 0 with err set (a length or token out of range). */
int raspN_ofwd_run(raspN_ofwd *f, const int *tokens, int n, double *logits, rasp_error *err);

#endif
