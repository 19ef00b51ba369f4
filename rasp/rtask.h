/*
** rtask.h -- the path-star task: deterministic generation, tokenisation,
** exhaustive enumeration and exact counting.
**
** The task (paper §1.1).  A path-star graph has a start node s and D arms of
** M nodes each, counting s, so N = D(M-1) + 1 distinct nodes, drawn
** uniformly without replacement from the node symbols 1..V.  A target t ends
** a uniformly chosen arm; the answer R_t is that arm written s ... t and the
** leading node l_t is its second node.
**
** Tokens.  Sequences are arrays of integer ids in the task's own vocabulary:
**
**     1 .. V     node symbols (id v is the node written "v")
**     V + 1      "|"      edge marker
**     V + 2      "/"      opens Q
**     V + 3      "="      closes Q
**     V + 4      "BOS"
**     V + 5      "EOS"
**     V + 6      "s"      the start node, when st_names is on
**     V + 7      "t"      the target node, when st_names is on
**
** Id 0 is reserved (never produced; its text is "PAD"), so every id is
** below raspT_vocab_size(o) = V + 8.  The paper's own vocabulary is the
** |V| + 5 symbols 1..V, |, /, =, BOS, EOS.
**
** Layout of one sample (each part optional as the options say):
**
**     [BOS] Q G [answer] [EOS]        q = RASP_Q_START (the default)
**     [BOS] G Q [answer] [EOS]        q = RASP_Q_END   (the figure's example)
**
** with Q = "/ s t =" and G = D(M-1) edges "u v |" (or "u v | |" with
** markers = 2), u nearer to s.  Edge order EDGE shuffles all the edges
** uniformly; ARM writes the arms in a uniformly random order, each arm's
** edges from s outward.  The answer is R_t (FORWARD), R_t reversed
** (REVERSE), l_t alone (LEAD) or nothing (NONE).  With st_names the start
** and target nodes are written "s" and "t" wherever they occur: in G, in Q
** and in the answer (the RASP appendix's convention); the struct fields
** below still hold their numbers.
**
** Randomness.  xoshiro256** (Blackman & Vigna), seeded through splitmix64;
** the same on every machine, never rand().  Sample `index` of a run with
** seed S draws from its own stream, seeded from (S, index) (see
** raspT_rng_seed), so a sample never depends on thread count or on the
** order in which samples are generated.  Bounded integers are unbiased
** (rejection sampling).
**
** Arm numbering.  In a sample, arms[] lists the arms in the order in which
** their s-edges ("s l |") are written in G: the arm whose s-edge comes first
** is arm 0.  For ARM order that is exactly the written arm order.
** target_arm indexes arms[].
*/
#ifndef RASP_RTASK_H
#define RASP_RTASK_H

#include <stddef.h>
#include <stdint.h>

#include <gmp.h>

#include "rerror.h"

/* ---- PRNG --------------------------------------------------------------- */

typedef struct rasp_rng {
  uint64_t s[4]; /* xoshiro256** state, never all zero */
} rasp_rng;

/* Seeds rng for stream `stream` of seed `seed`:
**     x = seed ^ mix(stream + 0x9E3779B97F4A7C15)      mix = splitmix64's
**                                                      output function
**     s[0..3] = four successive splitmix64(&x) outputs
** Streams of one seed are independent for all practical purposes. */
void raspT_rng_seed(rasp_rng *rng, uint64_t seed, uint64_t stream);
uint64_t raspT_rng_next(rasp_rng *rng);            /* uniform 64 bits */
/* Uniform in [0, n), unbiased (rejects the low 2^64 mod n outcomes);
** n = 0 gives 0. */
uint64_t raspT_rng_below(rasp_rng *rng, uint64_t n);

/* ---- options ------------------------------------------------------------ */

typedef enum { RASP_ORDER_EDGE, RASP_ORDER_ARM } rasp_order;
typedef enum { RASP_Q_START, RASP_Q_END } rasp_qpos;
typedef enum {
  RASP_ANS_NONE,
  RASP_ANS_FORWARD, /* s ... t */
  RASP_ANS_REVERSE, /* t ... s */
  RASP_ANS_LEAD     /* l_t */
} rasp_answer;

/* Special token offsets: the id of special x is V + x. */
enum {
  RASP_SP_BAR = 1, /* | */
  RASP_SP_SLASH,   /* / */
  RASP_SP_EQ,      /* = */
  RASP_SP_BOS,
  RASP_SP_EOS,
  RASP_SP_S,
  RASP_SP_T,
  RASP_SP_COUNT = 7
};

/* Limits on the sizes raspT_opts_check accepts. */
#define RASP_TASK_MAX_EDGES (1 << 22) /* D(M-1) */
#define RASP_TASK_MAX_V (1 << 30)

typedef struct rasp_task_opts {
  int D;              /* degree of s, >= 1 */
  int M;              /* arm length counting s, >= 2 */
  int V;              /* node symbols 1..V, V >= N = D(M-1)+1 */
  rasp_order order;   /* EDGE (default) or ARM */
  rasp_qpos q;        /* START (default) or END */
  rasp_answer answer; /* FORWARD by default */
  int bos, eos;       /* 1 (default) or 0 */
  int markers;        /* "|" after each edge: 1 (default) or 2 */
  int st_names;       /* 0 (default) or 1 */
  int structured;     /* extra targets per graph, 0 .. D-1 (default 0) */
} rasp_task_opts;

/* D=2, M=5, V=100, EDGE, Q START, FORWARD, BOS and EOS on, one marker,
** numeric s and t, no structured samples. */
void raspT_opts_default(rasp_task_opts *o);
/* 1, or 0 with err (RASP_E_USAGE) naming the offending values. */
int raspT_opts_check(const rasp_task_opts *o, rasp_error *err);
/* Number of nodes N = D(M-1) + 1 and of edges E = D(M-1). */
int raspT_nodes(const rasp_task_opts *o);
int raspT_edges(const rasp_task_opts *o);
/* Exact number of tokens of every sample, or -1 if o is invalid. */
int raspT_length(const rasp_task_opts *o);

/* ---- vocabulary --------------------------------------------------------- */

int raspT_vocab_size(const rasp_task_opts *o); /* V + 8 */
/* Writes the text of token id into buf (snprintf rules); returns its length
** or -1 (buf gets "?") for an id outside the vocabulary. */
int raspT_token_text(const rasp_task_opts *o, int id, char *buf, size_t size);
/* The id of a token's text ("17", "|", "BOS", ...), or -1. */
int raspT_token_id(const rasp_task_opts *o, const char *text);

/* ---- samples ------------------------------------------------------------ */

typedef struct rasp_sample {
  int *tokens;  /* ntokens ids */
  int ntokens;  /* == raspT_length(opts) */
  int D, M;
  int s, t, lead;   /* node numbers (also under st_names) */
  int target_arm;   /* index into arms[], 0 .. D-1 */
  int *answer;      /* R_t: M node numbers, answer[0] = s, answer[M-1] = t */
  int *arms;        /* D*M node numbers; arm a is arms[a*M .. a*M+M-1],
                       arms[a*M] = s; arms ordered by where their s-edge
                       is written in G */
  int g_start;      /* position of G's first token */
  int q_start;      /* position of "/" */
  int ans_start;    /* position of the answer's first token; ntokens-eos
                       when answer is NONE */
  int nedges;       /* D(M-1) */
  /* Edge k of G in written order (k = 0 .. nedges-1): it joins
  ** arms[edge_arm[k]*M + edge_step[k]] (u) to the next node of that arm (v),
  ** and its u token sits at tokens[edge_pos[k]]. */
  int *edge_arm, *edge_step, *edge_pos;
  int variant;      /* 0: the sample itself; 1..k: its structured variants */
  /* capacities of the arrays above and a scratch area, so that drawing
     many samples into one rasp_sample allocates nothing after the first */
  size_t cap_tokens, cap_answer, cap_arms, cap_edges;
  int *work;
  size_t cap_work;
} rasp_sample;

/* Generates sample `index` of the run with seed `seed` into out, which must
** be zero-initialised or hold an earlier sample (its buffers are reused).
** opts->structured is ignored here.  1, or 0 with err set. */
int raspT_sample(const rasp_task_opts *o, uint64_t seed, uint64_t index,
                 rasp_sample *out, rasp_error *err);
/* The structured group of sample `index`: out[0] is exactly what
** raspT_sample gives, out[1..k] (k = opts->structured) have the same graph
** and edge order but k distinct other targets, chosen uniformly among the
** other arms (drawn from the same stream, after out[0]'s draws).  out must
** have k+1 entries, each zero-initialised or holding an earlier sample.
** Returns k+1, or -1 with err set. */
int raspT_sample_group(const rasp_task_opts *o, uint64_t seed, uint64_t index,
                       rasp_sample *out, rasp_error *err);
void raspT_sample_free(rasp_sample *s); /* frees buffers, zeroes *s */
/* Sample s (index `index` of its seed) as one line of `rasp gen`'s JSON,
** without the newline, into buf (snprintf rules: at most size bytes, NUL
** included); returns the length the whole line needs. */
size_t raspT_sample_json(const rasp_task_opts *o, const rasp_sample *s, uint64_t index,
                         char *buf, size_t size);

/* ---- exhaustive enumeration --------------------------------------------- */

/* Called once per input; a non-zero return stops the enumeration. */
typedef int (*rasp_enum_fn)(const rasp_sample *s, void *user);

/* Number of inputs raspT_enumerate visits for one graph: (D(M-1))! * D
** (EDGE) or D! * D (ARM).  1, or 0 with err when invalid or above 2^64-1. */
int raspT_enumerate_size(const rasp_task_opts *o, uint64_t *n, rasp_error *err);

/* Visits every tokenisation (every edge order, or every arm order) of one
** labelled graph with every target.  graph: D*M node numbers laid out like
** rasp_sample.arms (all distinct but the shared s, all in 1..V), or NULL
** for the canonical graph: s = 1 and arm a = 1, 2+a(M-1), ..., 1+(a+1)(M-1)
** (nodes 1..N).  A correct program cannot care which labelled graph it is
** given beyond the order in which the labels are written, which is what the
** permutations cover, so one graph suffices.  Permutations come from Heap's
** algorithm (iterative).  opts->structured is ignored.
** Refuses (-1, err) when the count exceeds cap.  Returns 0 when all were
** visited, the callback's non-zero value when it stopped early, -1 on error;
** *count (may be NULL) gets the number of callbacks made. */
int raspT_enumerate(const rasp_task_opts *o, const int *graph, uint64_t cap,
                    rasp_enum_fn fn, void *user, uint64_t *count,
                    rasp_error *err);

/* Inputs first .. first + n - 1 of raspT_enumerate's order (input k is
** permutation k / D of Heap's sequence with target k % D), reached without
** visiting the ones before: how an exhaustive run is split into ranges
** (rverify.h, rwork.h).  No cap; refuses (-1, err) a range past the end.
** Returns as raspT_enumerate. */
int raspT_enumerate_range(const rasp_task_opts *o, const int *graph, uint64_t first,
                          uint64_t n, rasp_enum_fn fn, void *user, uint64_t *count,
                          rasp_error *err);

/* ---- exact counts ------------------------------------------------------- */

/* graphs_gq = distinct (G, Q) pairs = V! / ((V-N)! (D-1)!)
**   (labelled path-star graphs V!/((V-N)! D!), times D targets);
** tokenisations = tokenisations of one (G, Q): (D(M-1))! (EDGE) or D! (ARM).
** Their product is the number of distinct (G, Q, tokenisation) triples,
** which is the number of distinct token sequences when st_names is off.
** With st_names on, s's and t's labels vanish from the text, and the
** distinct sequences number V!/((V-N+2)! (D-1)!) * tokenisations
** (raspT_count_st_names).  Both mpz_t must be initialised.  1, or 0 when
** the options are invalid. */
int raspT_count(const rasp_task_opts *o, mpz_t graphs_gq, mpz_t tokenisations);
int raspT_count_st_names(const rasp_task_opts *o, mpz_t distinct_gq);

/* ---- layout globals ----------------------------------------------------- */

/* What a path-star program reads about the layout of its inputs: the
** verifier sets these globals before the file runs (`rasp run` does not,
** and points at `rasp verify --input` when a program stops at one). */
typedef struct rasp_layout_global {
  const char *name;
  int64_t value;
  int is_bool; /* a boolean global (True/False), else an integer */
} rasp_layout_global;
#define RASP_LAYOUT_NGLOBALS 10
/* out[0..RASP_LAYOUT_NGLOBALS-1] for o and input length n: arm_len, degree,
** num_symbols, seq_len, markers, edge_width, q_before_g, g_start, q_start,
** ans_start (the last three 0 when o is invalid). */
void raspT_layout_globals(const rasp_task_opts *o, int n, rasp_layout_global *out);
/* Whether name is one of them. */
int raspT_is_layout_global(const char *name);

/* ---- one input read back ---------------------------------------------- */

/* One path-star input written out as tokens ("/ 4 9 = 3 10 | 4 2 | ...", the
** text `rasp gen` and the counterexamples print), for `rasp verify --input`
** (read by raspT_parse_input, rtask_input.c). */
typedef struct rasp_input {
  int D, M, n;           /* read off the graph: D = the degree of s */
  int64_t *tokens;       /* n task token ids (rtask.h) */
  int64_t lead, target;  /* l_t and t as raspK_sample_tokens gives them */
} rasp_input;

/* Reads text as one input of the task base with node symbols 1..V (D and
** M read off the graph; see raspK_parse_input, rverify.h).  1, or 0 with
** err (RASP_E_USAGE) naming the first thing wrong. */
int raspT_parse_input(const rasp_task_opts *base, int V, const char *text, rasp_input *in,
                      rasp_error *err);
void raspT_input_free(rasp_input *in);

/* ---- command line ------------------------------------------------------- */

/* `rasp gen ...`: argv[0] is the command name, options follow.  Returns the
** exit status (0; 1 when writing standard output fails; 2 on bad usage or
** an output file that cannot be written); never exits. */
int rasp_cli_gen(int argc, char **argv);

#endif
