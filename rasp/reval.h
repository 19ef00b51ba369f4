/*
** reval.h -- the vectorised evaluator of the IR.
**
** Evaluates a traced program on a batch of B inputs of the traced length n
** at once: every node's value is a B x n array, computed by one loop per
** node over the whole batch.  Attention is evaluated without materialising
** the n x n selection matrix where the predicate allows it: an equality
** select with any aggregate or sel_width is a hash join, O(n) per head
** (causal selects process positions in order with running sums); lt/leq/
** gt/geq/not_equals go through sorting and prefix sums.  Other selectors
** (custom predicates, and/or/not combinations) are materialised as bit
** matrices, subject to the size limit.
**
** MAP, SEQMAP and CUSTOM predicates call back into the interpreter; results
** are memoised per node and per evaluator, so a map costs one call per
** distinct input value.  An evaluator is used by one thread at a time;
** several evaluators may share one IR across threads.
*/
#ifndef RASP_REVAL_H
#define RASP_REVAL_H

#include "rir.h"

typedef struct rasp_eval rasp_eval; /* opaque */

/* Maximum number of cells of a materialised selection matrix per input
** (n*n), beyond which evaluation fails with an error naming the node. */
#define RASP_DEFAULT_MAX_SELECTOR_CELLS (64u * 1024u * 1024u)

rasp_eval *raspE_new(const rasp_ir *ir);
void raspE_free(rasp_eval *ev);
void raspE_set_max_selector_cells(rasp_eval *ev, size_t cells);
/* on = 1: every head (sel_width, aggregates) is evaluated by the reference
** kernel -- the selection matrix built cell by cell and each query's
** selected values summarised by their definition, with exact rationals and
** its own finishing code -- and values computed twice are computed twice.
** Slow (n*n per head and input, every selector subject to the cell limit)
** and meant for tests: a program must give the same outputs, and the same
** errors, in both modes.  raspE_new starts in this mode when the
** environment has RASP_EVAL_REFERENCE=1.  Takes effect from the next run. */
void raspE_set_reference(rasp_eval *ev, int on);
/* on = 1: after every run, every value it holds is checked against its
** node's value fact (rfacts.h: raspF_values for tokens in the run's range)
** and against the kinds the evaluator's fast paths assumed; a value outside
** fails the run with an internal error.  For tests (it costs a pass over
** every value); raspE_new starts in this mode when the environment has
** RASP_EVAL_CHECK_VALUES=1. */
void raspE_set_check_values(rasp_eval *ev, int on);
/* keep = 1 (the default): every intermediate value stays readable through
** raspE_value until the next run.  keep = 0: a value's buffer is reused as
** soon as the last node reading it has run, so memory follows the widest
** point of the graph; then only the outputs (ir->outputs at run time) can
** be read, and raspE_selector works only for selectors whose operands are
** outputs.  Takes effect from the next run. */
void raspE_set_keep_intermediates(rasp_eval *ev, int keep);

/* Kernel counters.  A head (sel_width, aggr_*) is evaluated by one of
** raspE_kernel_count() kernels, named by raspE_kernel_name(k) ("gather",
** "key-gather", "direct", "hash-join", "prefix", "window", "sorted",
** "causal-ne", "matrix", "reference"; NULL for k out of range).
** raspE_kernel_hits says for how many inputs kernel k evaluated head node
** since the evaluator was made: one per input of each run that computed
** it (a value kept from an earlier run, or shared with an equal node, is
** not computed again; a sel_width counted by its twin aggregate's sweep
** counts under that kernel). */
int raspE_kernel_count(void);
const char *raspE_kernel_name(int k);
uint64_t raspE_kernel_hits(const rasp_eval *ev, int node, int k);
/* The node whose value node shares (common subexpressions: the first live
** node computing the same value) in the last run, or node itself; -1 if
** node was not evaluated. */
int raspE_shared_with(const rasp_eval *ev, int node);

/* Evaluates every node needed for ir->outputs on B inputs.  tokens holds
** B*n token ids, input b at tokens[b*n .. b*n+n-1].  Returns 0 and sets err
** (with the failing node's source position) on error. */
int raspE_run(rasp_eval *ev, int B, const int64_t *tokens, rasp_error *err);

/* After a successful run: the value of node id for input b, n elements.
** Valid until the next run or free.  Works for every node the outputs
** depend on (intermediate values are kept, for counterexamples and the REPL;
** with raspE_set_keep_intermediates(ev, 0) only the outputs, NULL otherwise).
** For a selector node, returns NULL; use raspE_selector. */
const rasp_elem *raspE_value(rasp_eval *ev, int node, int b);
/* Materialised selection matrix of a selector node for input b: n*n bytes,
** row q, column k (q*n + k), 1 where selected.  Computed on demand. */
const unsigned char *raspE_selector(rasp_eval *ev, int node, int b,
                                    rasp_error *err);
/* For the compiler's moves (rcompile.h, raspG_opts.moves): whether the
** aggregate (or aggr_mean) node agg, on input b of the last run, saw one
** element (the same num and den) at all the keys each query selects.  1
** yes, 0 no (*query, if not NULL, the first query that saw two), -1 with
** err set when it cannot tell (not an aggregate, not evaluated, too many
** selector cells). */
int raspE_selects_one_value(rasp_eval *ev, int agg, int b, int *query, rasp_error *err);
/* Whether node's values on input b of the last run are all token ids, so
** print as symbols: raspF_symbolic_run, an assumed move counting where its
** selected values were equal on this input. */
int raspE_symbolic(rasp_eval *ev, int node, int b);
/* raspE_selects_one_value for every evaluated aggregate agg with
** flag[agg] nonzero (the moves raspF_move calls assumed); where flag[agg]
** is RASPE_ONE_KEY, the stronger premise of `rasp compile --moves one`:
** each query selects at most one key.  1 all hold, 0
** with *agg (if not NULL) the first that does not and *query its query, -1
** with err set when one cannot tell. */
#define RASPE_ONE_KEY 2
int raspE_moves_hold(rasp_eval *ev, const unsigned char *flag, int b, int *agg, int *query,
                     rasp_error *err);

#endif
