/*
** rprim.h -- the primitive operations of RASP, defined once.
**
** Every IR node carries one of these operations.  The table below is the
** single list that the evaluator (reval.c), the layer analysis (rlayers.c)
** and the compiler instantiate: each back end expands RASP_OPS with its own
** X macro, so an operation added here and forgotten in a back end is a
** compile error rather than a silent gap.
**
** The component column says what part of a transformer realises the
** operation:
**   EMBED    token or position embedding (no layer of its own)
**   CONST    a constant (a bias; no layer of its own)
**   MLP      an element-wise map, computed by a feed-forward sublayer
**   SELECTOR an attention pattern (queries x keys); not a value, it becomes
**            part of the head that aggregates with it
**   ATTN     an attention head
**
** Operands (the in[] field of rasp_ir_node), in order:
**   INPUT     -                    token ids of the input
**   INDICES   -                    0 .. n-1
**   FULL      -                    constant `c` at every position
**   UNARY     x                    aux: RASP_UN_*
**   BINARY    x, y                 aux: RASP_BIN_*
**   WHERE     cond, x, y           x where cond else y
**   MAP       x                    fn(x) through the callback (tok_map)
**   SEQMAP    x, y                 fn(x, y) through the callback; numbers are
**                                  truncated toward zero (numpy astype(int))
**   SELECT    keys, queries        aux: RASP_PRED_*; flags: RASP_CAUSAL;
**                                  A[q][k] = pred(keys[k], queries[q])
**   SEL_AND   sel, sel             flags: RASP_CAUSAL when an operand has
**   SEL_OR    sel, sel             it, and then only keys k <= q of the
**   SEL_NOT   sel                  combination (~causal(A) = causal(~A))
**   SEL_WIDTH sel                  number of selected keys per query
**   AGGR_MEAN sel, values          the paper's aggr_mean: mean truncated
**                                  toward zero; `c` where nothing is selected
**   AGGREGATE sel, values          exact mean (rational); one selected value
**                                  passes through unchanged (symbols too);
**                                  `c` where nothing is selected
**   AGGR_MAX  sel, values          max of the selected values, else `c`
**   AGGR_MIN  sel, values          min of the selected values, else `c`
*/
#ifndef RASP_RPRIM_H
#define RASP_RPRIM_H

/* X(NAME, "surface name", COMPONENT, number of operands) */
#define RASP_OPS(X)                                                            \
  X(INPUT, "tokens", EMBED, 0)                                                 \
  X(INDICES, "indices", EMBED, 0)                                              \
  X(FULL, "full", CONST, 0)                                                    \
  X(UNARY, "unary", MLP, 1)                                                    \
  X(BINARY, "binary", MLP, 2)                                                  \
  X(WHERE, "where", MLP, 3)                                                    \
  X(MAP, "tok_map", MLP, 1)                                                    \
  X(SEQMAP, "seq_map", MLP, 2)                                                 \
  X(SELECT, "select", SELECTOR, 2)                                             \
  X(SEL_AND, "select_and", SELECTOR, 2)                                        \
  X(SEL_OR, "select_or", SELECTOR, 2)                                          \
  X(SEL_NOT, "select_not", SELECTOR, 1)                                        \
  X(SEL_WIDTH, "sel_width", ATTN, 1)                                           \
  X(AGGR_MEAN, "aggr_mean", ATTN, 2)                                           \
  X(AGGREGATE, "aggregate", ATTN, 2)                                           \
  X(AGGR_MAX, "aggr_max", ATTN, 2)                                             \
  X(AGGR_MIN, "aggr_min", ATTN, 2)

typedef enum rasp_op {
#define RASP_OP_ENUM(name, text, comp, arity) RASP_OP_##name,
  RASP_OPS(RASP_OP_ENUM)
#undef RASP_OP_ENUM
      RASP_OP__COUNT
} rasp_op;

typedef enum rasp_component {
  RASP_COMP_EMBED,
  RASP_COMP_CONST,
  RASP_COMP_MLP,
  RASP_COMP_SELECTOR,
  RASP_COMP_ATTN
} rasp_component;

/* Element-wise unary operators (UNARY's aux).  TRUNC is int() (toward
** zero), ROUND is round() (to the nearest integer, ties to even, as
** Python's); both give integers and refuse symbols. */
#define RASP_UNOPS(X)                                                          \
  X(NEG, "-") X(POS, "+") X(NOT, "not") X(INVERT, "~") X(ABS, "abs")          \
  X(TRUNC, "int") X(ROUND, "round")

typedef enum rasp_unop {
#define RASP_UN_ENUM(name, text) RASP_UN_##name,
  RASP_UNOPS(RASP_UN_ENUM)
#undef RASP_UN_ENUM
      RASP_UN__COUNT
} rasp_unop;

/* Element-wise binary operators (BINARY's aux).  Arithmetic follows Python
** on exact numbers: '/' is exact division, '//' floors, '%' takes the sign
** of the divisor.  AND/OR are logical (numpy's logical_and/or on truth
** values); BITAND/BITOR are '&' and '|', which on booleans are the same. */
#define RASP_BINOPS(X)                                                         \
  X(ADD, "+") X(SUB, "-") X(MUL, "*") X(DIV, "/") X(FLOORDIV, "//")           \
  X(MOD, "%") X(POW, "**") X(EQ, "==") X(NE, "!=") X(LT, "<") X(LE, "<=")     \
  X(GT, ">") X(GE, ">=") X(AND, "and") X(OR, "or") X(BITAND, "&")             \
  X(BITOR, "|") X(BITXOR, "^") X(MIN, "min") X(MAX, "max")

typedef enum rasp_binop {
#define RASP_BIN_ENUM(name, text) RASP_BIN_##name,
  RASP_BINOPS(RASP_BIN_ENUM)
#undef RASP_BIN_ENUM
      RASP_BIN__COUNT
} rasp_binop;

/* Selection predicates, called as pred(key, query).  CUSTOM calls the node's
** function through the callback for every (key, query) pair. */
#define RASP_PREDS(X)                                                          \
  X(EQ, "equals") X(NE, "not_equals") X(LT, "lt") X(LE, "leq") X(GT, "gt")    \
  X(GE, "geq") X(TRUE, "always") X(FALSE, "never") X(CUSTOM, "custom")

typedef enum rasp_pred {
#define RASP_PRED_ENUM(name, text) RASP_PRED_##name,
  RASP_PREDS(RASP_PRED_ENUM)
#undef RASP_PRED_ENUM
      RASP_PRED__COUNT
} rasp_pred;

const char *raspI_op_name(rasp_op op);
rasp_component raspI_op_component(rasp_op op);
int raspI_op_arity(rasp_op op);
const char *raspI_unop_name(rasp_unop op);
const char *raspI_binop_name(rasp_binop op);
const char *raspI_pred_name(rasp_pred pred);

#endif
