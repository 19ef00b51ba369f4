/*
** rcausal.h -- which values of a trace a decoder could compute: causality
** as a data-flow property of the IR.
**
** A node is causal at position q when its value there depends only on the
** tokens at positions 0..q (and on nothing that tells how many positions
** follow q).  A program declared causal (task['causal'] = True) must be
** causal at every position of its output.
**
** The semantics of the causal flag.  select(k, q, pred, causal=True) keeps
** only keys k <= q.  A selector built with ~ & | from at least one causal
** selector is causal itself: its pattern is the combination of its
** operands' unmasked patterns, with the mask k <= q applied after the
** combination (~causal(A) is causal(~A), causal(A) | B is causal(A | B)).
** That is what a causal attention mask does to a head, so the evaluator,
** the compiler and this analysis all read a selector that way; the
** interpreter marks the combination causal when it builds it.
**
** The analysis bounds, for every node, the last token position its value at
** q may depend on by max(q + a, b) (a, b: constants per node, or "none"):
**   - tokens: q; indices and constants: none;
**   - element-wise nodes: the largest bound of their operands;
**   - a head at q: its query at q, the keys its selector looks at (k <= q
**     under the mask, every key otherwise), and the values of every key it
**     may select; a selector that may select key k also depends on k, so
**     reading a later position counts even when its token does not (an
**     unmasked `always` head computes the length).  Which keys a selector
**     may select is bounded by the mask, or proved from positions: a select
**     of indices against `indices + d` or the constant d selects k <= q + d
**     or k <= d (x[i] is select(indices, i, ==): causal at q >= i only).
** The bound is an over-approximation: a node it calls causal at q is
** causal there (tests/test_causal.c and the fuzz harness check it by
** changing later tokens); the converse need not hold.
**
** The length n is a trace-time constant: len(tokens) is the n the program
** was traced (and a model compiled) for, fixed by the task's layout, so it
** is not a leak.  The sequence `length` (an unmasked head) is one.
*/
#ifndef RASP_RCAUSAL_H
#define RASP_RCAUSAL_H

#include <stdint.h>

#include "rerror.h"
#include "rir.h"

typedef struct rasp_causal {
  const rasp_ir *ir;
  int n, nnodes;
  struct raspA_node *node; /* per IR node */
} rasp_causal;

/* Analyses every node of the IR. */
void raspA_analyse(const rasp_ir *ir, rasp_causal *out);
void raspA_free(rasp_causal *c);

/* Whether node id's value at position q depends only on tokens 0..q. */
int raspA_causal_at(const rasp_causal *c, int id, int q);
/* The first position from which node id is causal (it is causal at every
** position after it): 0 for a causal node, n when at none. */
int raspA_first_causal(const rasp_causal *c, int id);
/* The last token position node id may depend on at position q (-1: none). */
int raspA_horizon(const rasp_causal *c, int id, int q);
/* Whether selector id never selects a key k > q: causal, or proved from
** positions (the compiler masks such heads in a causal model). */
int raspA_sel_prefix(const rasp_causal *c, int id);

/* Where non-causality enters the graph that computes root: the earliest
** node on a non-causal path whose own operands are causal.  -1 when root is
** causal at every position. */
int raspA_leak(const rasp_causal *c, int root);

/* Refuses a root that is not causal at every position: returns 0 and sets
** err at the leaking node's source position, naming the node, the first
** position it leaks at and the later position it reads.  `why` starts the
** message ("the program declares task['causal'] = True"). */
int raspA_check(const rasp_causal *c, int root, const char *why, rasp_error *err);

#endif
