/*
** rorder.h -- does a traced program see the order of the vocabulary's ids?
**
** The exhaustive verifier fixes one labelled graph and one vocabulary and
** enumerates edge orders and targets.  That is a proof for every graph of
** that size only if the verdict cannot depend on which id each symbol got.
** This module decides it, conservatively, on the IR.
**
** What "order-invariant" means here.  Let K be the vocabulary size and pi
** any permutation of the ids 1..K (node symbols, specials and the program's
** extra symbols alike), extended by the identity to every other value.
** Run the program with the symbol that had id v renamed to id pi(v) -- in
** the input and in `d` -- and the output must be pi applied to the original
** output, element by element.  check() sees the output with ids turned back
** into symbols, so it then sees exactly the same thing, and the verdict
** cannot change.  With pi moving node ids only (and no id constant naming a
** node symbol), the vocabulary is unchanged and the input is a relabelled
** graph: the same argument extends a verdict on one labelled graph to all
** of them.
**
** The proof is an abstract interpretation over the nodes (in creation
** order, which is topological).  Every value node gets flags per position
** (so a register such as Listing 1's position 0 can hold a position at one
** step and a token at the next), selectors get them per node:
**   INV   invariant: the same values under every pi;
**   EQV   equivariant: under pi the values are pi(values) (ids map to ids,
**         everything else -- other numbers, rationals, symbols -- stays);
**         booleans are never EQV, because True == 1 may meet the id 1;
**   UNIQ  pairwise distinct across positions (indices, indices + c);
** and selectors INV (the same pattern under every pi) and ONE (at most one
** key per query: equality on UNIQ keys).  Tokens are EQV, indices INV|UNIQ,
** and a constant is classified by retracing the program under two other
** vocabulary orders (probes): one that did not move is an ordinary number
** (INV, and EQV too when it lies outside 1..K), one that moved exactly as
** its id did is an id from `d` (EQV), anything else (arithmetic on ids at
** trace time) is neither.  The probes' IRs must match node for node.
**
** Rules: == and != of two INV or two EQV values are INV; every other
** comparison and all arithmetic need INV operands, except that comparing an
** EQV value with a constant outside 1..K (is_true(x) is x > 0) is INV,
** because every id lies on the same side of it; not/and/or and where's
** condition only read truth, which pi keeps; where keeps what both branches
** have at a position, or only the branch taken when its condition does not
** depend on the input (x[i] = v); tok_map, seq_map and custom predicates
** may do anything and are neither.  A position that lost its flags is
** harmless until it reaches the output; the reason printed is the node
** where it was lost.  An aggregate needs an INV selector; with INV values it is INV;
** with EQV values it passes one value through, EQV, when the selector is
** ONE -- and otherwise only if no query selects two different values (a
** mean of two ids is not an id).  That last condition is not decided on the
** IR: such aggregates are listed, and the exhaustive verifier checks them
** on every input it enumerates (raspO_mixes), which covers every relabelled
** input too, since pi keeps values distinct.  The output must be EQV.
**
** What happens while tracing.  The probes alone would not do: a trace-time
** computation symmetric under the group they generate (a rotation and a
** reversal -- "are the ids of a and b cyclically adjacent?") agrees under
** both and still depends on the numbering.  So the interpreter tracks
** provenance instead (rvalue.h, TAG_ID): the ids handed out by `d` (its
** values) and `reverse_d` (its keys) are tagged, keep the tag wherever they
** are moved (variables, containers, arguments, returns), and the first
** place where the program does anything else with one -- arithmetic, an
** order comparison, == against a number that is not an id, use as an
** index, bound or dict key, str() or print, a walk over d or reverse_d
** (their order is the id order) -- is recorded in the IR (ids_what,
** ids_pos); such a trace is not invariant, for that reason.  What is left
** is invariant under every pi: moving an id, == / != between ids or with
** a non-number, its truth (ids are >= 1), int(), abs() and +x of it (the
** id itself), reverse_d[id], and handing it to a sequence operation, where
** it becomes a constant that the rules above judge.  The probes stay, to
** classify constants and as a second line behind the tags.
** Everything after tracing -- the IR -- is judged for every permutation.
*/
#ifndef RASP_RORDER_H
#define RASP_RORDER_H

#include <stdint.h>

#include "rasp.h"

/* Another trace of the same program under a permuted vocabulary: perm[v]
** (v = 1..K) is the id there of the symbol whose id is v in the analysed
** trace.  perm must move every id (a derangement) for the first probe. */
typedef struct rasp_order_probe {
  const rasp_ir *ir;
  int output;
  const int64_t *perm;
} rasp_order_probe;

typedef struct rasp_idorder {
  int invariant;     /* 1: proven, given that no listed aggregate mixes */
  int *mixing;       /* aggregates to check per input (raspO_mixes) */
  int nmixing;
  rasp_error why;    /* when not invariant: the reason, at the node's source */
} rasp_idorder;

/* Analyses ir (output node `output`) for a vocabulary of K ids; node_id[v]
** (v = 1..K) is nonzero for the ids of node symbols.  Fills *res (free it
** with raspO_free).  Returns res->invariant. */
int raspO_analyse(const rasp_ir *ir, int output, int64_t K, const unsigned char *node_id,
                  const rasp_order_probe *probes, int nprobes, rasp_idorder *res);
void raspO_free(rasp_idorder *res);

/* For input b of the last run of ev (made with intermediates kept): 1 when
** some listed aggregate has a query that selects two different values. */
int raspO_mixes(const rasp_idorder *res, const rasp_ir *ir, rasp_eval *ev, int b);

#endif
