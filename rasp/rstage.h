/*
** rstage.h -- a program's check() function, staged once into a residual
** predicate that the verifier evaluates natively per graph.
**
** check(output, lead, target) is pure and runs once per verified graph.
** Interpreting it costs more than evaluating most programs, so the verifier
** stages it first: everything in it that does not depend on the three
** arguments (globals, layout arithmetic, helper calls on constants) is
** computed once, by the interpreter, and what is left -- comparisons of
** output elements with lead, target and constants, the has_pair and
** holds_both scans, and not/and/or of those -- becomes a small residual
** predicate.  A check that does anything else with its arguments is not
** staged, and the verifier interprets it as before.
*/
#ifndef RASP_RSTAGE_H
#define RASP_RSTAGE_H

#include "rasp.h"
#include "rir.h"

typedef struct rasp_staged rasp_staged;

/* Stages the global function `name` of ctx for outputs of length n.
** NULL when it cannot be staged; *why then says what stopped it (static
** text, or NULL if the function does not exist). */
rasp_staged *raspS_stage(rasp_ctx *ctx, const char *name, int n, const char **why);

/* The check's truth on one graph: output elements as the evaluator gives
** them (token id t in 1..nvocab stands for the symbol vocab_sym[t]), lead
** and target as elements.  1 or 0; -1 when the staged predicate cannot
** decide (the interpreter would raise an error, or a symbol is newer than
** the staging): the caller then interprets check() itself. */
int raspS_eval(const rasp_staged *st, const rasp_elem *out, const int64_t *vocab_sym,
               int64_t nvocab, rasp_elem lead, rasp_elem target);

/* A one-line description of the residual predicate (for --verbose and
** tests), written into buf. */
void raspS_describe(const rasp_staged *st, char *buf, size_t size);

void raspS_free(rasp_staged *st);

#endif
