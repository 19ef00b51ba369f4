/*
** rir.h -- the dataflow IR that tracing produces.
**
** A RASP program is run once, at trace time, for one input length n and one
** set of task parameters.  Scalars, loops and ifs disappear then; what is
** left is this graph: one node per operation on a sequence or a selector.
** Evaluation (reval.h), layer analysis (rlayers.h) and the compiler all read
** the same graph, so it records what each of them needs: the operation and
** its operands, the constant and the map function if any, the static type
** of the values, and the source position and name for messages.
**
** Nodes are stored in creation order, which is a topological order (an
** operand always has a smaller id than its user).
**
** Values.  An element of a sequence is a rasp_elem:
**   den >= 1   the exact number num/den (normalised: gcd 1, den > 0)
**   den == 0   the symbol whose id in the symbol table is num
**   den == -1  a boolean, num is 0 or 1
** A node's static type narrows this: RASP_T_BOOL nodes hold only booleans,
** RASP_T_INT only integers, RASP_T_ANY anything.
*/
#ifndef RASP_RIR_H
#define RASP_RIR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rerror.h"
#include "rprim.h"

typedef struct rasp_elem {
  int64_t num;
  int64_t den;
} rasp_elem;

#define RASP_DEN_SYM 0
#define RASP_DEN_BOOL (-1)
/* None as a sequence element (a default, a map's result, where()'s branch,
** as in Weiss's and tracr's libraries): a symbol that no string names, so
** it equals only itself and prints as None. */
#define RASP_SYM_NONE (-1)

typedef enum rasp_type { RASP_T_BOOL, RASP_T_INT, RASP_T_ANY, RASP_T_SEL } rasp_type;

/* Node flags. */
/* Selectors: only keys k <= q.  On a SELECT from causal=True; on ~ & | when
** any operand has it, the mask then applying to the combination (rcausal.h). */
#define RASP_CAUSAL 1u
/* The values are token ids (raspI_add derives it): the input, and what only
** moves token ids -- an aggregate of token ids whose default is no id (a
** mean of several ids is a number, not a token), where() of two
** token-valued operands or of one and a positive integer constant (an id,
** such as d['j']), min/max of two token-valued operands.  Front ends print
** such values as the symbols they stand for (raspI_is_tokens); the tracer
** maps a string compared with them to its id. */
#define RASP_TOKEN_IDS 2u

typedef struct rasp_ir_node {
  rasp_op op;
  rasp_type type;
  int nin;
  int in[3];      /* operand node ids */
  int aux;        /* rasp_unop, rasp_binop or rasp_pred */
  unsigned flags;
  rasp_elem c;    /* FULL: the value; AGGR_*: the default */
  void *fn;       /* MAP, SEQMAP, SELECT with RASP_PRED_CUSTOM: a callable
                     owned by the interpreter, passed back to the callback */
  rasp_pos pos;   /* the expression that made it (the user's call, for a
                     node made inside the stdlib) */
  rasp_pos lib_pos;   /* inside the stdlib: the library line that made it */
  const char *lib_fn; /* ... and the library function the user called */
  const char *label; /* first variable name it was bound to, or NULL */
} rasp_ir_node;

/* Calls a program function on elements (for MAP, SEQMAP and CUSTOM
** predicates).  Returns 0 and sets err on failure.  The result of a
** predicate is read for truth (nonzero num with any den except a zero
** number). Must be safe to call from several threads (the interpreter
** serialises internally). */
typedef int (*rasp_callback)(void *user, void *fn, int nargs,
                             const rasp_elem *args, rasp_elem *out,
                             rasp_error *err);

/* Resolves a symbol id to its text (for printing); NULL if unknown. */
typedef const char *(*rasp_symname)(void *user, int64_t id);

typedef struct rasp_ir {
  rasp_ir_node *nodes;
  int nnodes, cap;
  int n;              /* the input length it was traced for */
  int *outputs;       /* nodes the program returns (a tuple gives several) */
  int noutputs;
  rasp_callback call; /* how to run fn pointers */
  rasp_symname symname;
  void *user;         /* the interpreter context */
  /* The first place where the program computed with a token id while
  ** tracing (arithmetic, an order comparison, iterating d in id order...),
  ** set by the interpreter; ids_what NULL: nowhere.  See rorder.h. */
  const char *ids_what;
  rasp_pos ids_pos;
} rasp_ir;

/* Sets err at node nd (raspR_set at its position), with the stdlib line
** that made it as the error's inner frame where it has one. */
void raspI_seterr(rasp_error *err, const rasp_ir_node *nd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Locates an error raised without a position at node nd, the same way. */
void raspI_blame(rasp_error *err, const rasp_ir_node *nd);

void raspI_init(rasp_ir *ir, int n);
void raspI_free(rasp_ir *ir);
/* Appends a node (copied, RASP_TOKEN_IDS set from its operands) and returns
** its id. */
int raspI_add(rasp_ir *ir, const rasp_ir_node *node);
/* Whether RASP_TOKEN_IDS holds for nd (its operands already in ir): a caller
** that sets `c` after raspI_add re-derives the flag with it. */
int raspI_carries_tokens(const rasp_ir *ir, const rasp_ir_node *nd);
/* Whether nd is a constant that where() may mix with token ids and still
** print as symbols: a positive id (such as d['j']) or None. */
int raspI_id_const(const rasp_ir_node *nd);
/* Whether node's values print as symbols: its RASP_TOKEN_IDS.  The one rule
** for every front end that shows values (rasp run --symbols, the REPL,
** counterexamples and `rasp verify --input`), so a value is a symbol in one
** place exactly when it is in the others. */
int raspI_is_tokens(const rasp_ir *ir, int node);
/* Marks the nodes reachable from the outputs: live[i] = 1.  live must have
** room for ir->nnodes entries. */
void raspI_live(const rasp_ir *ir, const int *roots, int nroots, unsigned char *live);
/* One line per live node, for debugging and `rasp trace`. */
void raspI_dump(const rasp_ir *ir, FILE *out);

/* Exact element arithmetic shared by every back end.  All return 0 and set
** err (no position) on overflow of 64 bits, division by zero or a symbol in
** arithmetic. */
int raspI_elem_binop(rasp_binop op, rasp_elem a, rasp_elem b, rasp_elem *out,
                     rasp_error *err);
int raspI_elem_unop(rasp_unop op, rasp_elem a, rasp_elem *out, rasp_error *err);
/* The error of an order comparison (op: < <= > >=) with None, which has no
** order (as in Python): 0 with err set. */
int raspI_none_order(rasp_error *err, rasp_binop op);
/* Total order used by lt/leq/min/max: numbers (bools as 0/1) by value;
** symbols after numbers, by id.  Returns -1, 0, 1.  Inline, as
** raspI_elem_eq below: the evaluator's sorts and scans call it per element. */
static inline int raspI_elem_cmp(rasp_elem a, rasp_elem b) {
  if (a.den == 1 && b.den == 1) return (a.num > b.num) - (a.num < b.num);
  int sa = a.den == RASP_DEN_SYM, sb = b.den == RASP_DEN_SYM;
  if (sa || sb) {
    if (sa != sb) return sa ? 1 : -1;
    return (a.num > b.num) - (a.num < b.num);
  }
  __int128 l = (__int128)a.num * (b.den < 0 ? 1 : b.den);
  __int128 r = (__int128)b.num * (a.den < 0 ? 1 : a.den);
  return (l > r) - (l < r);
}
/* True == 1 as in Python; a symbol equals only itself.  Inline: the one
** element equality of every back end, called per element by the scans. */
static inline int raspI_elem_eq(rasp_elem a, rasp_elem b) {
  if ((a.den == RASP_DEN_SYM) != (b.den == RASP_DEN_SYM)) return 0;
  if (a.den == RASP_DEN_SYM) return a.num == b.num;
  /* Normalised, so equal values have equal representations (bool as /1). */
  return a.num == b.num && (a.den < 0 ? 1 : a.den) == (b.den < 0 ? 1 : b.den);
}
int raspI_elem_truth(rasp_elem a);
/* numpy astype(int): truncation toward zero; bools to 0/1; symbols kept. */
rasp_elem raspI_elem_trunc(rasp_elem a);
/* Writes the element as the CLI prints it: 3, -1/2, True, or the symbol's
** text (via ir->symname).  Returns the number of bytes written (snprintf). */
int raspI_elem_format(const rasp_ir *ir, rasp_elem a, char *buf, size_t size);

/* Greatest common divisors for exact arithmetic: inline because the
** evaluator normalises a mean per element with them. */
static inline uint64_t raspI_gcd_u64(uint64_t a, uint64_t b) {
  if (!a) return b;
  if (!b) return a;
  int sh = __builtin_ctzll(a | b);
  a >>= __builtin_ctzll(a);
  do {
    b >>= __builtin_ctzll(b);
    if (a > b) {
      uint64_t t = a;
      a = b;
      b = t;
    }
    b -= a;
  } while (b);
  return a << sh;
}

static inline __int128 raspI_gcd128(__int128 a, __int128 b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    __int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

#endif
