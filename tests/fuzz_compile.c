/*
** fuzz_compile.c -- libFuzzer harness for the compiler (rcompile.h): every
** model it builds, and every margin it calls proven, checked dynamically.
**
** The input bytes are a RASP program, run and traced as in fuzz_trace.c
** (inputs of length 5, the five symbols a b c ( ), the stdlib, small
** limits).  When it defines `main` and traces, its first output is
** compiled (raspG_compile, as `rasp compile` calls it: input ids 1..5)
** for fp32, fp16 and bf16 at attention gain 1, and once more in fp32 with
** a gain drawn from the program's bytes (1/4, 1 or 4), every other program
** the categorical encoding and, independently, every other program with
** require_proof (`--require-proof`: fp32 encodings chosen by the proof, so
** the model claims exactness wherever it compiles), and in the pre-LN
** architecture (`--ln pre`, with require_proof every other program; it
** claims exactness where its layer norms are proven the identity too,
** which require_proof demands) and for a stock layer norm (`--ln stock`,
** which claims its units where it proves every one and its layer norms
** where it bounds BOS's residual, held to that bound: rasp's own layer
** norm is an arithmetic the proof covers).  Each model runs (raspG_run) on a few
** inputs: one pseudo-random input determined by the program's bytes, each
** symbol repeated, that input sorted ascending and descending, and two
** runs of two symbols -- inputs that uniform draws rarely produce and
** whose ties stress averaging heads.  On every input the evaluator
** (raspE_run) accepts:
**
**  - where the compiler claims the model exact, its output must be the
**    evaluator's at every position.  A model compiled for fp16 or bf16
**    claims it by existing (a unit not proven there is made categorical
**    or the node refused, rcompile.h), and its emulated forward pass is
**    what raspG_run runs; its `unproven` count must be 0, as must an fp32
**    model's with require_proof.  An fp32 model claims it when `unproven`
**    is 0 (what `rasp compile --stats` reports); with units unproven only
**    the next two checks apply;
**  - fp32: raspG_run's sparse pass gives logits bit-identical to
**    raspN_forward's (rcompile.h), and every unit STEM.json gives a
**    "deviation" keeps each of its dimensions within it of an integer,
**    right after the unit writes it, and one marked "exact_nonzero" is
**    exactly its integer wherever that is not 0 (tests/devunit.h, shared
**    with tests/test_compile.c);
**  - every failure (a refused compile, a failed run) sets an error with a
**    code, and everything is freed.
**
** Moves.  The compiler moves the value an aggregate over a selector
** containing an equality select picks (categorically, or as x and x^2)
** instead of averaging: right where the selected keys hold one value.
** Where the program proves that (raspF_move, rfacts.h) the model claims
** every input; where it does not, the default (raspG_opts.moves = assume)
** moves anyway and counts the move in `moves_assumed`.  An input where an
** aggregate raspF_move calls assumed sees two values at one query
** (moves_hold, from the evaluator's selection matrices) is one such a
** model claims nothing about: it is not compared, nor its deviations
** checked -- unless the model has no assumed move (the compiler's value
** sets can prove more than raspF_move alone), when it claims them all.
** A program with an assumed move is compiled twice more, in fp32 and fp16,
** with moves = prove, which averages those aggregates and claims every
** input (fp16 by compiling at all; fp32 where its units are proven), and
** once with moves = one (require_proof on every other input), whose proof
** assumes each such aggregate selects at most one key: it claims only the
** inputs where that holds (raspE_moves_hold, RASPE_ONE_KEY).  The seeds ties.rasp,
** halfties.rasp, boolmean.rasp and mixmean.rasp exercise this.
**
** A finding prints what failed to stderr and aborts, so libFuzzer keeps
** the input.  FUZZ_COMPILE_VERBOSE=1 in the environment prints a line per
** model checked (precision, size, whether exact, units with a deviation),
** to see what a corpus exercises.
**
** Size is bounded so that each input stays fast: programs whose first
** output needs more than 48 IR nodes (the fuzz_trace seed lib.rasp needs
** 68, and compiles to 2.4M parameters in 4 s of proofs under the
** sanitizers), or whose schedule (raspG_schedule, the planner alone) has
** more than 24 layers or 96 heads, are not compiled; models with more
** than 2^20 parameters are not run (the forward pass keeps every
** residual), and then the other three compiles are skipped.  Programs that
** mention `cfunc` or `include` are skipped, as in fuzz_trace.c.
**
** Build and run from the top of the source tree (tests/fuzz.sh does; see
** tests/README.md):
**
**   clang -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
**     -Irasp -Itests -DRASP_STDLIB_DIR='"stdlib"' rasp/rmem.c rasp/rerror.c \
**     rasp/rlex.c rasp/rparse.c rasp/rir.c rasp/rfacts.c rasp/reval.c \
**     rasp/reval_plan.c rasp/reval_kern.c rasp/reval_ref.c rasp/rlayers.c \
**     rasp/rheap.c rasp/rvalue.c rasp/rtrace.c rasp/rinterp.c rasp/rapi.c \
**     rasp/raux.c rasp/rbuiltin.c rasp/rffi.c rasp/rstage.c rasp/rcausal.c \
**     rasp/rorder.c rasp/rcompile*.c rasp/rmodel.c tests/fuzz_compile.c \
**     -lffi -lgmp -lm -lpthread -o fuzz_compile
**   mkdir -p /tmp/fuzz_compile_corpus
**   ./fuzz_compile -max_total_time=300 -close_fd_mask=1 /tmp/fuzz_compile_corpus \
**     tests/fuzz_compile_corpus
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devunit.h"
#include "fuzz_ctx.h"
#include "rasp.h"
#include "rcompile.h"
#include "rfacts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_LIVE 48
#define FUZZ_MAX_LAYERS 24
#define FUZZ_MAX_HEADS 96
#define FUZZ_MAX_PARAMS ((size_t)1 << 20)
#define FUZZ_MAX_INPUTS 16

/* A finding: what failed, then abort (libFuzzer keeps the input). */
static void finding(const char *what, const raspG_model *g, int input, const char *detail) {
  fprintf(stderr, "fuzz_compile: %s (%s, gain %g, input %d)%s%s\n", what,
          raspG_precision_name(g->precision), g->attn_gain, input, detail ? ": " : "",
          detail ? detail : "");
  abort();
}

static int cmp_up(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The inputs every model runs on (see the essay); returns how many. */
static int make_inputs(const int64_t *tokens, int64_t in[][FUZZ_N]) {
  int k = 0;
  memcpy(in[k++], tokens, sizeof(int64_t) * FUZZ_N);
  for (int v = 1; v <= FUZZ_NVOCAB; v++, k++)
    for (int i = 0; i < FUZZ_N; i++) in[k][i] = v;
  memcpy(in[k], tokens, sizeof(int64_t) * FUZZ_N);
  qsort(in[k++], FUZZ_N, sizeof(int64_t), cmp_up);
  for (int i = 0; i < FUZZ_N; i++) in[k][i] = in[k - 1][FUZZ_N - 1 - i];
  k++;
  for (int i = 0; i < FUZZ_N; i++) in[k][i] = i < FUZZ_N / 2 ? 1 : FUZZ_NVOCAB;
  k++;
  for (int i = 0; i < FUZZ_N; i++) in[k][i] = i < (FUZZ_N + 1) / 2 ? tokens[0] : tokens[FUZZ_N - 1];
  k++;
  return k;
}

/* The premise of the moves raspF_move calls assumed (assumed[id]), on the
** input ev last ran: every such aggregate it evaluated sees, at each query,
** one value (the same element) at all its selected keys.  Where it does
** not, a model with assumed moves is not claimed right there. */
static int moves_hold(rasp_eval *ev, const unsigned char *assumed) {
  rasp_error err;
  memset(&err, 0, sizeof err);
  return raspE_moves_hold(ev, assumed, 0, NULL, NULL, &err) == 1; /* (unknown: claim nothing) */
}

/* A --ln stock model's BOS residual at every attention (residual slot 2 L,
** position 0, as devunit_check left it in res) against is_bos's one-hot,
** on the dimensions the proof saw: within the proven bound (ln_bos). */
static int bos_within(const raspG_model *g, const float *res, int n, char *why, size_t nwhy) {
  int d = g->model.cfg.d_model;
  for (int L = 0; L < g->model.cfg.n_layers; L++)
    for (int r = 0; r < g->ln_d0; r++) {
      double x = res[((size_t)2 * L * (size_t)(n + 1)) * (size_t)d + (size_t)r] - (r == 0);
      if (!(fabs(x) <= g->ln_bos)) {
        snprintf(why, nwhy, "layer %d, dimension %d: off by %.3g, bound %.3g", L, r, x, g->ln_bos);
        return 0;
      }
    }
  return 1;
}

/* Compiles ir for (prec, enc, gain, moves, base->ln) and checks the model
** on the inputs the evaluator accepted (want[k] the first output on in[k],
** NULL where it failed; holds[k]: the assumed moves' premise holds on
** in[k]).  Returns 0 when the model is too big to run (no check made). */
static int fuzz_model(const rasp_ir *ir, const raspG_opts *base, int prec, int enc, double gain,
                      int moves, int req, int64_t in[][FUZZ_N], const rasp_elem *const *want,
                      const int *holds_in, int nin) {
  raspG_opts o = *base;
  o.precision = prec;
  o.encoding = enc;
  o.attn_gain = gain;
  o.moves = moves;
  o.require_proof = req;
  rasp_error err;
  memset(&err, 0, sizeof err);
  raspG_model g;
  if (!raspG_compile(ir, &o, &g, &err)) {
    if (!err.set || err.code == RASP_E_NONE) abort(); /* a refusal says why, and what kind */
    return 1;
  }
  if (g.model.nparams > FUZZ_MAX_PARAMS) {
    raspG_free(&g);
    return 0;
  }
  if (moves == RASPG_MOVES_PROVE && g.moves_assumed)
    finding("moves = prove left an assumed move", &g, -1, g.moves_at);
  /* a model without assumed moves claims every input */
  int holds[FUZZ_MAX_INPUTS];
  for (int k = 0; k < nin; k++) holds[k] = holds_in[k] || !g.moves_assumed;
  /* fp16 and bf16 models are exact by construction; fp32 when --stats
     would report every unit proven */
  if ((prec != RASPG_FP32 || req) && g.unproven != 0)
    finding("a unit left unproven", &g, -1, g.unproven_at);
  /* --ln pre: claimed where its layer norms are proven the identity
     (with require_proof they must be, or the compile is refused) */
  if (o.ln == RASPG_LN_PRE && req && !g.ln_proven) finding("layer norms left unproven", &g, -1, g.ln_why);
  /* --ln stock: every unit is proven with the norms' rounding charged at
     every read, in any arithmetic whose mean is within the bound
     (raspN_layer_norm's, in double, is one), and BOS's residual bounded
     and charged (rcompile_lnstock.c); proven norms are claimed, and with
     require_proof they must be.  A model whose units are all proven is held
     to the evaluator and its units to their deviations whether or not its
     norms are (they are not where BOS's residual has no bound: a model
     that is not causal), and a proven one's BOS residual to its bound */
  if (o.ln == RASPG_LN_STOCK && req && !g.ln_proven) finding("stock layer norms left unproven", &g, -1, g.ln_why);
  int exact = g.unproven == 0 && (o.ln == RASPG_LN_NONE || o.ln == RASPG_LN_STOCK || g.ln_proven);
  int n = FUZZ_N, no = g.model.cfg.n_out, d = g.model.cfg.d_model, nl = g.model.cfg.n_layers;
  devunit u[256];
  int nu = prec == RASPG_FP32 ? devunit_read(&g, u, 256) : 0;
  if (nu < 0) finding("STEM.json's units unreadable", &g, -1, NULL);
  float *lf = malloc(sizeof(float) * (size_t)(n + 1) * (size_t)no);
  float *ld = malloc(sizeof(float) * (size_t)(n + 1) * (size_t)no);
  float *res = prec == RASPG_FP32
                   ? malloc(sizeof(float) * (size_t)(1 + 2 * nl) * (size_t)(n + 1) * (size_t)d)
                   : NULL;
  int t[FUZZ_N + 1];
  rasp_elem got[FUZZ_N];
  for (int k = 0; k < nin; k++) {
    if (!want[k]) continue;
    memset(&err, 0, sizeof err);
    if (!raspG_run(&g, in[k], got, lf, &err)) {
      if (!err.set || err.code == RASP_E_NONE) abort();
      continue;
    }
    if (exact && holds[k])
      for (int i = 0; i < n; i++)
        if (got[i].num != want[k][i].num || got[i].den != want[k][i].den) {
          char msg[160];
          snprintf(msg, sizeof msg, "position %d: model %lld/%lld, evaluator %lld/%lld", i,
                   (long long)got[i].num, (long long)got[i].den, (long long)want[k][i].num,
                   (long long)want[k][i].den);
          finding("the model disagrees with the evaluator", &g, k, msg);
        }
    if (prec != RASPG_FP32) continue;
    t[0] = g.model.cfg.bos_token;
    for (int i = 0; i < n; i++) t[i + 1] = (int)in[k][i];
    char why[256];
    if (!devunit_check(&g, t, n, u, holds[k] && (o.ln != RASPG_LN_STOCK || exact) ? nu : 0, res, ld, why,
                       sizeof why))
      finding("a proven deviation exceeded", &g, k, why);
    if (o.ln == RASPG_LN_STOCK && g.ln_proven && !bos_within(&g, res, n, why, sizeof why))
      finding("BOS's residual beyond its proven bound", &g, k, why);
    if (memcmp(lf, ld, sizeof(float) * (size_t)(n + 1) * (size_t)no) != 0)
      finding("raspG_run's logits differ from raspN_forward's", &g, k, NULL);
  }
  if (getenv("FUZZ_COMPILE_VERBOSE")) {
    int ran = 0, held = 0;
    for (int k = 0; k < nin; k++) ran += want[k] != NULL, held += want[k] && holds[k];
    fprintf(stderr, "fuzz_compile: %s%s%s %s gain %g moves %s: %zu parameters, %s, %d units with a "
            "deviation, %d moves (%d assumed), %d inputs (%d claimed)\n",
            raspG_precision_name(prec), req ? " require-proof" : "",
            o.ln == RASPG_LN_STOCK ? " ln-stock" : o.ln ? " ln-pre" : "", enc ? "categorical" : "auto",
            gain, moves == RASPG_MOVES_PROVE ? "prove" : moves == RASPG_MOVES_ONE ? "one" : "assume", g.model.nparams, exact ? "exact" : "unproven", nu,
            g.moves, g.moves_assumed, ran, held);
  }
  free(res);
  free(ld);
  free(lf);
  raspG_free(&g);
  return 1;
}

/* The compiles and their checks for a traced program. */
static void fuzz_compile(rasp_ctx *ctx, uint64_t h) {
  rasp_ir *ir = rasp_ctx_ir(ctx);
  int64_t ids[FUZZ_NVOCAB];
  const char *names[FUZZ_NVOCAB + 1];
  names[0] = NULL;
  for (int i = 0; i < FUZZ_NVOCAB; i++) {
    ids[i] = i + 1;
    names[i + 1] = rasp_vocab_symbol(ctx, i + 1);
  }
  raspG_opts base = {ids, FUZZ_NVOCAB, FUZZ_NVOCAB, names, 0, RASPG_FP32, RASPG_ENC_AUTO, 1, RASPG_MOVES_ASSUME, 0, 0, 0};
  rasp_error err;
  memset(&err, 0, sizeof err);
  raspG_sched s;
  if (!raspG_schedule(ir, &base, &s, &err)) {
    if (!err.set || err.code == RASP_E_NONE) abort();
    return;
  }
  int big = s.nlayers > FUZZ_MAX_LAYERS || s.total_heads > FUZZ_MAX_HEADS;
  raspG_sched_free(&s);
  if (big) return;

  int64_t tokens[FUZZ_N];
  h = fuzz_tokens(h, tokens);
  int64_t in[FUZZ_MAX_INPUTS][FUZZ_N];
  int nin = make_inputs(tokens, in);
  unsigned char *live = malloc((size_t)ir->nnodes + 1);
  raspI_live(ir, ir->outputs, 1, live);
  int nlive = 0;
  for (int id = 0; id < ir->nnodes; id++) nlive += live[id];
  if (nlive > FUZZ_MAX_LIVE) {
    free(live);
    return;
  }
  unsigned char *move = malloc((size_t)ir->nnodes + 1), *move1 = malloc((size_t)ir->nnodes + 1);
  raspF_moves(ir, move);
  int assumed = 0;
  for (int id = 0; id < ir->nnodes; id++) {
    move[id] = move[id] == RASPF_MOVE_ASSUMED; /* (the flags raspE_moves_hold reads) */
    move1[id] = move[id] ? RASPE_ONE_KEY : 0;  /* (--moves one's premise) */
    assumed |= live[id] && move[id];
  }
  /* the evaluator's first output on each input, one batch per input (one
     that fails, e.g. by an assertion of the program, drops only itself) */
  rasp_eval *ev = raspE_new(ir);
  raspE_set_max_selector_cells(ev, 4096);
  rasp_elem *wantbuf = malloc(sizeof(rasp_elem) * FUZZ_N * (size_t)nin);
  const rasp_elem *want[FUZZ_MAX_INPUTS];
  int holds[FUZZ_MAX_INPUTS], holds1[FUZZ_MAX_INPUTS], any = 0;
  for (int k = 0; k < nin; k++) {
    memset(&err, 0, sizeof err);
    want[k] = NULL;
    if (!raspE_run(ev, 1, in[k], &err)) {
      if (!err.set || err.code == RASP_E_NONE) abort();
      continue;
    }
    memcpy(wantbuf + (size_t)k * FUZZ_N, raspE_value(ev, ir->outputs[0], 0),
           sizeof(rasp_elem) * FUZZ_N);
    want[k] = wantbuf + (size_t)k * FUZZ_N;
    holds[k] = moves_hold(ev, move);
    holds1[k] = moves_hold(ev, move1);
    any = 1;
  }
  raspE_free(ev);
  free(live);
  free(move);
  free(move1);
  if (any) {
    static const double gains[] = {1, 0.25, 4};
    /* a model too big in fp32 is too big in the others (they encode no
       more numerically) and the proofs of a big one are slow: the rest of
       the compiles are skipped with it */
    const int A = RASPG_MOVES_ASSUME;
    if (fuzz_model(ir, &base, RASPG_FP32, RASPG_ENC_AUTO, 1, A, 0, in, want, holds, nin)) {
      fuzz_model(ir, &base, RASPG_FP16, RASPG_ENC_AUTO, 1, A, 0, in, want, holds, nin);
      fuzz_model(ir, &base, RASPG_BF16, RASPG_ENC_AUTO, 1, A, 0, in, want, holds, nin);
      fuzz_model(ir, &base, RASPG_FP32, (h >> 7) & 1 ? RASPG_ENC_CATEGORICAL : RASPG_ENC_AUTO,
                 gains[(h >> 11) % 3], A, (int)((h >> 13) & 1), in, want, holds, nin);
      /* the pre-LN architecture (--ln pre), default or proof-driven */
      raspG_opts lnb = base;
      lnb.ln = RASPG_LN_PRE;
      fuzz_model(ir, &lnb, RASPG_FP32, RASPG_ENC_AUTO, 1, A, (int)((h >> 15) & 1), in, want, holds,
                 nin);
      /* and for a stock layer norm (--ln stock), default or proof-driven */
      lnb.ln = RASPG_LN_STOCK;
      fuzz_model(ir, &lnb, RASPG_FP32, RASPG_ENC_AUTO, 1, A, (int)((h >> 16) & 1), in, want, holds,
                 nin);
      if (assumed) { /* (fp16 claims exactness wherever it compiles; fp32 may not) */
        fuzz_model(ir, &base, RASPG_FP32, RASPG_ENC_AUTO, 1, RASPG_MOVES_PROVE, 0, in, want, holds,
                   nin);
        fuzz_model(ir, &base, RASPG_FP16, RASPG_ENC_AUTO, 1, RASPG_MOVES_PROVE, 0, in, want, holds,
                   nin);
        /* --moves one: the fp32 proof reads the one-key premise, claimed
           only on the inputs that keep it */
        fuzz_model(ir, &base, RASPG_FP32, RASPG_ENC_AUTO, 1, RASPG_MOVES_ONE, (int)((h >> 14) & 1),
                   in, want, holds1, nin);
      }
    }
  }
  free(wantbuf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_program_text(data, size);
  if (!text) return 0;
  rasp_ctx *ctx = fuzz_ctx_new("fuzz_compile");
  rasp_error err;
  memset(&err, 0, sizeof err);
  if (rasp_exec_string(ctx, "<fuzz>", text, &err) && rasp_has_global(ctx, "main")) {
    memset(&err, 0, sizeof err);
    if (rasp_trace(ctx, "main", &err)) {
      fuzz_compile(ctx, fuzz_hash(data, size, 1469598103934665603ULL));
    } else if (!err.set || err.code == RASP_E_NONE) {
      abort();
    }
  }
  rasp_ctx_free(ctx);
  free(text);
  return 0;
}
