/*
** cli_opts.c -- the options of the `rasp` commands, and their help texts,
** from one table.
**
** Every option of every command is a row of `options` below (the table
** format, parser and help printer are ropts.h's, shared with rasp-train):
** its name (and a second spelling), the name of its value (none: a flag),
** the commands that take it and its help.  An option whose meaning differs
** between commands has one row per meaning, each naming its commands.  The
** parser (raspC_parse) and the help (raspC_usage, `rasp CMD --help` and
** `rasp help CMD`) both read the table, so an option cannot be accepted
** without being documented, or documented under a command that refuses it.
**
** The convention is ropts.h's, the same everywhere: --opt VALUE or
** --opt=VALUE (a short option also -oVALUE); --help (-h) and --version in
** any command; an option no command has is "unknown", one that only other
** commands take is refused naming them (so a mistyped command line never
** runs with an option silently ignored); a flag given a value (--json=1)
** is refused.  Errors are exit status 2.  What an option's value means is
** the command's business: the rows are RASPU_TEXT, and the parser hands
** each command its options in order, by id.
**
** To add an option: a row OPT(id, name, alias, arg, commands, help) here
** and an id in cli.h; the command then handles the id.  --max-memory and
** --timeout are taken out of the arguments by rasp.c before any command
** runs (they apply to every command and to scripts); they are rows here for
** the help.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmpiconf.h" /* RASP_MPI: built --with-mpi (verify's help says so) */
#include "cli.h"
#include "rmem.h"

/* The commands that run a program: they take --stdlib and the access options. */
#define PROGRAMS                                                                              \
  (RASPC_RUN | RASPC_TRACE | RASPC_VERIFY | RASPC_LAYERS | RASPC_DRAW | RASPC_COMPILE |        \
   RASPC_REPL | RASPC_APPLY)

/* A row: the option's id (cli.h), name, second spelling or NULL, the name
** of its value or NULL (a flag), the commands (RASPC_* bits), the help. */
#define OPT(id_, name_, alias_, arg_, cmds_, help_)                                               \
  {.id = (id_), .name = (name_), .alias = (alias_), .arg = (arg_), .sets = (cmds_),              \
   .help = (help_), .kind = RASPU_TEXT}

static const raspU_option options[] = {
    /* run and trace: one input */
    OPT(RASPC_O_INPUT, "--input", NULL, "TEXT", RASPC_RUN | RASPC_TRACE,
     "the input: symbols separated by spaces; for a program that declares\n"
     "`task`, one path-star input as `rasp gen` or a counterexample writes it\n"
     "(\"/ s t = 4 50 | ...\", or a JSON line of `rasp gen`): D and M come\n"
     "from its graph"),
    OPT(RASPC_O_STDIN, "--stdin", NULL, NULL, RASPC_RUN | RASPC_TRACE,
     "read --input's text from standard input"),
    OPT(RASPC_O_D, "--D", NULL, "N", RASPC_RUN | RASPC_TRACE,
     "programs that declare `task`, instead of --input: the degree of\n"
     "a drawn sample (default 2)"),
    OPT(RASPC_O_M, "--M", NULL, "N", RASPC_RUN | RASPC_TRACE,
     "its arm length, counting s (default 5)"),
    OPT(RASPC_O_V, "--V", NULL, "N", RASPC_RUN | RASPC_TRACE,
     "programs that declare `task`: the number of node symbols (default 100)"),
    OPT(RASPC_O_SEED, "--seed", NULL, "S", RASPC_RUN | RASPC_TRACE,
     "the drawn sample is sample 0 of seed S, as `rasp verify --seed S`\n"
     "draws it (default 1)"),
    OPT(RASPC_O_ENTRY, "--entry", NULL, "NAME", RASPC_RUN | RASPC_TRACE,
     "the function to trace (default main)"),
    OPT(RASPC_O_SYMBOLS, "--symbols", NULL, NULL, RASPC_RUN,
     "print token-valued outputs as the symbols they stand for"),
    OPT(RASPC_O_EXPLAIN, "--explain", NULL, NULL, RASPC_TRACE,
     "also evaluate the input and print, per head, the evaluator's kernel\n"
     "that computed it and for how many inputs"),
    OPT(RASPC_O_VOCAB, "--vocab", NULL, "FILE", RASPC_RUN | RASPC_TRACE,
     "vocabulary, one symbol per line (id = line number)"),
    OPT(RASPC_O_SET, "--set", NULL, "NAME=VAL", RASPC_RUN | RASPC_TRACE,
     "set a global before the program runs (integer, True/False, or a\n"
     "string); repeatable"),

    /* verify */
    OPT(RASPC_O_D, "--D", NULL, "RANGE", RASPC_VERIFY, "degrees to check, e.g. 2..5 (default 2..5)"),
    OPT(RASPC_O_M, "--M", NULL, "RANGE", RASPC_VERIFY,
     "arm lengths, counting the start node (default 5)"),
    OPT(RASPC_O_V, "--V", NULL, "N", RASPC_VERIFY, "number of node symbols (default 100)"),
    OPT(RASPC_O_GRAPHS, "--graphs", NULL, "N", RASPC_VERIFY, "random graphs per (D, M) (default 1000)"),
    OPT(RASPC_O_SEED, "--seed", NULL, "S", RASPC_VERIFY, "generator seed (default 1)"),
    OPT(RASPC_O_JOBS, "--jobs", NULL, "K", RASPC_VERIFY, "threads (default: the number of cores)"),
    OPT(RASPC_O_SWEEP, "--sweep", NULL, NULL, RASPC_VERIFY,
     "M = 3 .. task['sweep_M'] (default 10) per program unless --M is\n"
     "given; one compact row per program naming the failing (D, M) cells\n"
     "(-v or --json: every cell)"),
    OPT(RASPC_O_VERBOSE, "--verbose", "-v", NULL, RASPC_VERIFY,
     "heads per layer in full (the table abbreviates them to fit 100\n"
     "columns: 2x3 is three layers of 2 heads); with --sweep, one row per\n"
     "(D, M) as without it"),
    OPT(RASPC_O_EXHAUSTIVE, "--exhaustive", NULL, NULL, RASPC_VERIFY,
     "every edge order and target of one graph instead of random graphs:\n"
     "a proof for those sizes when the program is proven not to see the\n"
     "order of the ids (rorder.h), else a sample, and the output says\n"
     "which; progress on stderr, a counterexample for a failure"),
    OPT(RASPC_O_VOCAB_ORDER, "--vocab-order", NULL, "ORDER", RASPC_VERIFY,
     "shuffled: also judge each graph with the vocabulary's ids\n"
     "(specials included) in a random order of its own, and report the\n"
     "graphs whose verdict changed (default: fixed)"),
    OPT(RASPC_O_CAP, "--cap", NULL, "N", RASPC_VERIFY,
     "most inputs --exhaustive may enumerate (default 2000000)"),
    OPT(RASPC_O_CHECKPOINT, "--checkpoint", NULL, "FILE", RASPC_VERIFY,
     "--exhaustive: record the ranges done in FILE, so that a killed run\n"
     "can be resumed"),
    OPT(RASPC_O_CHECKPOINT_EVERY, "--checkpoint-every", NULL, "S", RASPC_VERIFY,
     "write it at most every S seconds (default 10; 0: after every range\n"
     "of inputs)"),
    OPT(RASPC_O_RESUME, "--resume", NULL, NULL, RASPC_VERIFY,
     "continue the run that --checkpoint FILE records (a missing FILE\n"
     "starts it); the counts are those of an unbroken run, and the\n"
     "checkpoint's are trusted (the verdict says how many)"),
    OPT(RASPC_O_PROGRESS, "--progress", NULL, NULL, RASPC_VERIFY,
     "progress with rate and ETA on stderr from the start"),
    OPT(RASPC_O_PLAN, "--plan", NULL, NULL, RASPC_VERIFY,
     "--exhaustive: print each cell's number of inputs and the time it\n"
     "takes one core (from checking the first inputs for a second),\n"
     "instead of running it"),
    OPT(RASPC_O_INPUT, "--input", NULL, "TEXT", RASPC_VERIFY,
     "run one program on one input instead: its tokens as the task\n"
     "writes them (or a JSON line of `rasp gen`); D and M come from the\n"
     "graph; prints the output, the verdict of check() and the\n"
     "intermediate values"),
    OPT(RASPC_O_JSON, "--json", NULL, NULL, RASPC_VERIFY, "one JSON object per line instead of the table"),
    OPT(RASPC_O_QUIET, "--quiet", NULL, NULL, RASPC_VERIFY, "no counterexamples, only the table"),
    OPT(RASPC_O_NO_SHRINK, "--no-shrink", NULL, NULL, RASPC_VERIFY,
     "print the first failing input without shrinking it"),
    OPT(RASPC_O_STRICT, "--strict", NULL, NULL, RASPC_VERIFY,
     "count expected failures (task['expect'] = 'fail') as failures"),
    OPT(RASPC_O_INTERPRET_CHECK, "--interpret-check", NULL, NULL, RASPC_VERIFY,
     "call check() through the interpreter for every graph, not its\n"
     "staged form (the same verdicts, slower)"),

    /* layers and draw */
    OPT(RASPC_O_M, "--M", NULL, "RANGE", RASPC_LAYERS,
     "path-star programs: arm lengths (default 3..33)"),
    OPT(RASPC_O_D, "--D", NULL, "N", RASPC_LAYERS, "path-star programs: the degree (default 2)"),
    OPT(RASPC_O_V, "--V", NULL, "N", RASPC_LAYERS | RASPC_DRAW,
     "path-star programs: node symbols (default 100)"),
    OPT(RASPC_O_D, "--D", NULL, "N", RASPC_DRAW, "path-star programs: the degree (default 2)"),
    OPT(RASPC_O_M, "--M", NULL, "N", RASPC_DRAW, "path-star programs: the arm length (default 5)"),
    OPT(RASPC_O_LENGTH, "--length", NULL, "RANGE", RASPC_LAYERS,
     "plain programs: input lengths (default: --input's length, else 1..16)"),
    OPT(RASPC_O_LENGTH, "--length", NULL, "N", RASPC_DRAW,
     "plain programs: the input length (default: --input's length, else 8)"),
    OPT(RASPC_O_INPUT, "--input", NULL, "TEXT", RASPC_LAYERS | RASPC_DRAW,
     "plain programs: an input; its symbols are the vocabulary.  Path-star\n"
     "programs: one input of the task (as for rasp run); D and M come from\n"
     "its graph"),
    OPT(RASPC_O_INPUT_VOCAB, "--input-vocab", NULL, "TEXT", RASPC_LAYERS | RASPC_DRAW,
     "plain programs: the input symbols, space-separated"),
    OPT(RASPC_O_VOCAB, "--vocab", NULL, "FILE", RASPC_LAYERS | RASPC_DRAW,
     "plain programs: the vocabulary, one symbol a line"),
    OPT(RASPC_O_OUT, "-o", NULL, "FILE", RASPC_DRAW,
     "write FILE; its extension (.dot .gv .svg .png .json) gives the\n"
     "format unless --format or --json does"),
    OPT(RASPC_O_FORMAT, "--format", NULL, "F", RASPC_DRAW, "dot, svg, png, pdf or json"),
    OPT(RASPC_O_JSON, "--json", NULL, NULL, RASPC_LAYERS,
     "one JSON object per row, then one with the growth"),
    OPT(RASPC_O_JSON, "--json", NULL, NULL, RASPC_DRAW,
     "the graph as JSON: its live nodes (op, label, layer, line) and edges"),

    /* gen */
    OPT(RASPC_O_D, "--D", NULL, "N", RASPC_GEN, "degree of the start node s (default 2)"),
    OPT(RASPC_O_M, "--M", NULL, "N", RASPC_GEN, "arm length counting s, >= 2 (default 5)"),
    OPT(RASPC_O_V, "--V", NULL, "N", RASPC_GEN, "node symbols 1..V, V >= D(M-1)+1 (default 100)"),
    OPT(RASPC_O_COUNT_SAMPLES, "--count-samples", "-n", "N", RASPC_GEN,
     "number of samples (default 10); with --structured K each is\n"
     "followed by K variants"),
    OPT(RASPC_O_SEED, "--seed", NULL, "S", RASPC_GEN,
     "64-bit seed, decimal or 0x hex (default 1, as run, verify and\n"
     "apply draw); sample i depends only on (options, S, i)"),
    OPT(RASPC_O_ORDER, "--order", NULL, "edge|arm", RASPC_GEN,
     "edge-wise shuffle or arm-wise order (default edge)"),
    OPT(RASPC_O_Q, "--q", NULL, "start|end", RASPC_GEN,
     "Q = '/ s t =' before or after G (default start)"),
    OPT(RASPC_O_ANSWER, "--answer", NULL, "none|forward|reverse|lead", RASPC_GEN,
     "what follows Q and G (default forward: R_t)"),
    OPT(RASPC_O_BOS, "--bos", NULL, NULL, RASPC_GEN, "BOS token first (the default, as in the paper)"),
    OPT(RASPC_O_NO_BOS, "--no-bos", NULL, NULL, RASPC_GEN, "no BOS token"),
    OPT(RASPC_O_EOS, "--eos", NULL, NULL, RASPC_GEN, "EOS token last (the default, as in the paper)"),
    OPT(RASPC_O_NO_EOS, "--no-eos", NULL, NULL, RASPC_GEN, "no EOS token"),
    OPT(RASPC_O_STRUCTURED, "--structured", NULL, "K", RASPC_GEN,
     "K extra samples per graph with other targets, 0 <= K <= D-1\n"
     "(default 0)"),
    OPT(RASPC_O_ST_NAMES, "--st-names", NULL, NULL, RASPC_GEN,
     "write s and t as the symbols 's' and 't'"),
    OPT(RASPC_O_MARKERS, "--markers", NULL, "1|2", RASPC_GEN, "'|' tokens after each edge (default 1)"),
    OPT(RASPC_O_FORMAT, "--format", NULL, "jsonl|text", RASPC_GEN, "output format (default jsonl)"),
    OPT(RASPC_O_COUNT, "--count", NULL, NULL, RASPC_GEN,
     "print the exact numbers of (G, Q) pairs and of tokenisations\n"
     "instead of samples"),
    OPT(RASPC_O_OUT, "--output", "-o", "FILE", RASPC_GEN,
     "write to FILE atomically (default stdout)"),

    /* compile */
    OPT(RASPC_O_OUT, "-o", NULL, "STEM", RASPC_COMPILE,
     "write STEM.safetensors and STEM.json (required; missing\n"
     "directories are created)"),
    OPT(RASPC_O_DRY_RUN, "--dry-run", NULL, NULL, RASPC_COMPILE,
     "instead of -o: compile (and --check, --stats) but write no model"),
    OPT(RASPC_O_D, "--D", NULL, "N", RASPC_COMPILE,
     "task parameters of programs that declare `task` (default D=2\n"
     "M=5 V=100)"),
    OPT(RASPC_O_M, "--M", NULL, "N", RASPC_COMPILE, "(--D)"),
    OPT(RASPC_O_V, "--V", NULL, "N", RASPC_COMPILE, "(--D)"),
    OPT(RASPC_O_INPUT_VOCAB, "--input-vocab", NULL, "TEXT", RASPC_COMPILE,
     "plain programs: the input symbols, space-separated"),
    OPT(RASPC_O_VOCAB, "--vocab", NULL, "FILE", RASPC_COMPILE,
     "plain programs: the vocabulary, one symbol a line"),
    OPT(RASPC_O_LENGTH, "--length", NULL, "N", RASPC_COMPILE,
     "plain programs: the input length (default 8)"),
    OPT(RASPC_O_STATS, "--stats", NULL, NULL, RASPC_COMPILE,
     "print d_model, layers, heads, MLP widths, parameters"),
    OPT(RASPC_O_CHECK, "--check", NULL, "N", RASPC_COMPILE,
     "compare the model with the interpreter on N random inputs (half\n"
     "adversarial: plain programs one token, two tokens, sorted runs, the\n"
     "extremes; path-star programs edges arm by arm outward, inward,\n"
     "interleaved inward); the model is written only if every input\n"
     "agrees (a model already at STEM is otherwise left as it was)"),
    OPT(RASPC_O_CHECK_ORDERS, "--check-orders", NULL, "LIST", RASPC_COMPILE,
     "with --check: run every input also in these orders of the forward\n"
     "pass (commas between): c (the C order), rev, asc, desc (by\n"
     "magnitude), pair (pairwise), perm (a seeded permutation of\n"
     "dimensions, hidden units, heads and keys), f64 (float64), sdpa\n"
     "(PyTorch's scaled_dot_product_attention scores), or all; one line\n"
     "per order, a disagreement fails the check"),
    OPT(RASPC_O_ENCODER, "--encoder", NULL, NULL, RASPC_COMPILE,
     "path-star programs: compile for rasp-train's encoder (answer\n"
     "positions hold MASK, id V+8; the program's first extra symbol must\n"
     "be 'MASK'); --check also runs the program's check() on the masked\n"
     "inputs"),
    OPT(RASPC_O_LOGIT_SCALE, "--logit-scale", NULL, "X", RASPC_COMPILE,
     "margin of the right output's logit over the others (default\n"
     "ln(1000 (n_out - 1)): cross-entropy < 0.001)"),
    OPT(RASPC_O_ATTN_GAIN, "--attn-gain", NULL, "F", RASPC_COMPILE,
     "attention gain, a number in (0, 1000] (default 1): every score is\n"
     "scaled by 2^ceil(log2(F beta sqrt(d_head))), beta = 2 (ln(n+1) + 21)\n"
     "(at F = 1 a key one half below the selected ones gets weight below\n"
     "1e-9); a power of two F scales every attn.w_q by exactly F.  --stats\n"
     "prints the leak it gives, which the margins and noise bounds charge"),
    OPT(RASPC_O_PRECISION, "--precision", NULL, "P", RASPC_COMPILE,
     "fp32 (default), fp16 or bf16: numerical encodings only where their\n"
     "margins are proven at P (else categorical, else refused at the\n"
     "node); --check runs the forward pass in P"),
    OPT(RASPC_O_ENCODING, "--encoding", NULL, "E", RASPC_COMPILE,
     "auto (default: the proven choice) or categorical (integers one-hot)"),
    OPT(RASPC_O_REQUIRE_PROOF, "--require-proof", NULL, NULL, RASPC_COMPILE,
     "the default, kept for scripts: fp32 chooses its encodings by the\n"
     "rounding proof, as fp16 and bf16 do (a model not proven whole as it\n"
     "is gets exact erasers, steep tests and quantized widths, leaky heads\n"
     "sharper scores, a numerical encoding still not proven is compiled\n"
     "one-hot, a unit proven neither way is refused at its node)"),
    OPT(RASPC_O_UNPROVEN, "--unproven", NULL, NULL, RASPC_COMPILE,
     "fp32 only: choose encodings by size, not by the proof; a model the\n"
     "proof does not cover is written labelled unproven (--stats,\n"
     "STEM.json layout.proof, a warning from apply and the Python loader)"),
    OPT(RASPC_O_MOVES, "--moves", NULL, "M", RASPC_COMPILE,
     "one (default), assume or prove: an aggregate of numbers over an\n"
     "equality select moves one selected value, the mean only where the\n"
     "selected values are equal; where the program does not prove that,\n"
     "one moves on the premise that each such move selects one key per\n"
     "query (the proof uses it), assume on the premise that the selected\n"
     "values are equal (the proof charges ties: larger models); --stats\n"
     "and STEM.json state the premise, --check tests it; prove averages\n"
     "exactly"),
    OPT(RASPC_O_LN, "--ln", NULL, "L", RASPC_COMPILE,
     "none (default), pre, rms or stock: layer norms (pre) or RMS norms (rms)\n"
     "before every attention, every MLP and the readout (the standard\n"
     "pre-LN transformer, or LLaMA's pre-RMSNorm), with weights that make\n"
     "each exactly the identity on what the model reads (fp32 only; rms's\n"
     "in any summation order, pre's in rasp's own); stock: layer norms\n"
     "for stock arithmetic (eps 4^p, a balance and sink dimensions), every\n"
     "read charged their rounding, BOS's residual bounded: proven or refused"),
    OPT(RASPC_O_NO_SDPA, "--no-sdpa", NULL, NULL, RASPC_COMPILE,
     "d_head as the heads need it, not rounded up to 16 or 256 with zero\n"
     "columns: fewer parameters, but exact only under the score formula of\n"
     "rasp apply (q k^T, then 1/sqrt(d_head)), not under PyTorch's\n"
     "scaled_dot_product_attention (STEM.json layout.attention.formulas)"),
    OPT(RASPC_O_SEED, "--seed", NULL, "S", RASPC_COMPILE, "seed of the random inputs (default 1)"),
    OPT(RASPC_O_DUMP_FORWARD, "--dump-forward", NULL, "F", RASPC_COMPILE,
     "write the logits of one random input to F (text)"),

    /* apply */
    OPT(RASPC_O_INPUT, "--input", NULL, "TEXT", RASPC_APPLY,
     "the input: symbols of the model's vocabulary separated by spaces,\n"
     "exactly as many as it was compiled for"),
    OPT(RASPC_O_SYMBOLS, "--symbols", NULL, NULL, RASPC_APPLY,
     "print a token-valued output as the symbols it stands for"),
    OPT(RASPC_O_LOGITS, "--logits", NULL, NULL, RASPC_APPLY,
     "also print the logits: one row per input position, one column per\n"
     "value of the readout (STEM.json layout.readout)"),
    OPT(RASPC_O_JSON, "--json", NULL, NULL, RASPC_APPLY,
     "print one JSON object: input, tokens (BOS first), output and, with\n"
     "--logits, logits"),
    OPT(RASPC_O_PROGRAM, "--program", NULL, "FILE", RASPC_APPLY,
     "the program STEM was compiled from, when it declares `task`: --input\n"
     "is then checked as one input of its task (as rasp run checks it), or\n"
     "a sample is drawn for --D --M --V --seed and printed on a line\n"
     "\"input: ...\" before the output"),
    OPT(RASPC_O_D, "--D", NULL, "N", RASPC_APPLY,
     "with --program, instead of --input: the degree of the drawn sample\n"
     "(default 2); D and M must give the model's input length"),
    OPT(RASPC_O_M, "--M", NULL, "N", RASPC_APPLY, "its arm length, counting s (default 5)"),
    OPT(RASPC_O_V, "--V", NULL, "N", RASPC_APPLY,
     "with --program: the number of node symbols (default 100)"),
    OPT(RASPC_O_SEED, "--seed", NULL, "S", RASPC_APPLY,
     "the drawn sample is sample 0 of seed S, as `rasp verify --seed S`\n"
     "draws it (default 1)"),

    /* every command that runs a program */
    OPT(RASPC_O_STDLIB, "--stdlib", NULL, "DIR", PROGRAMS, "use another stdlib directory"),
    OPT(RASPC_O_ALLOW_FFI, "--allow-ffi", NULL, NULL, PROGRAMS,
     "let the program call C functions (cfunc): native code that can do\n"
     "anything you can, so only for programs you trust"),
    OPT(RASPC_O_ALLOW_INCLUDE, "--allow-include", NULL, "DIR", PROGRAMS,
     "let include() read .rasp files under DIR as well as the program's\n"
     "own directory tree and the stdlib; repeatable"),

    /* every command */
    OPT(RASPC_O_MAX_MEMORY, "--max-memory", NULL, "BYTES", RASPC_ALL,
     "end with a message and status 1 past BYTES (K, M, G, T suffixes;\n"
     "0: no limit; default: verify and compile 4G, others none)"),
    OPT(RASPC_O_TIMEOUT, "--timeout", NULL, "SECONDS", RASPC_ALL,
     "end with a message and status 1 after SECONDS (default: none)"),
    OPT(RASPC_O_HELP, "--help", "-h", NULL, RASPC_ALL, "this text"),
    OPT(RASPC_O_VERSION, "--version", NULL, NULL, RASPC_ALL, "the version"),
};
#define NOPTIONS (sizeof options / sizeof options[0])

/* The commands: their names, usage lines and the text around the options. */
static const struct {
  unsigned bit;
  const char *name, *usage, *intro, *outro;
} commands[] = {
    {RASPC_RUN, "run", "rasp run FILE [--input TEXT | --stdin | --D N --M N] [options]",
     "Traces main(seq) for the input and prints its output.  A program that\n"
     "declares `task` (programs/) gets the layout globals and the vocabulary\n"
     "that `rasp verify` gives it, for one path-star input (--input) or a\n"
     "sample drawn for --D --M --V --seed, and prints what a counterexample\n"
     "does: the output, check()'s verdict and the named intermediate values.\n",
     "Exit status: 0 when it ran (for a task program whatever check() said:\n"
     "`rasp verify PROGRAM --input TEXT` judges), 1 for an error in the\n"
     "program, 2 for bad usage or input.\n"},
    {RASPC_TRACE, "trace", "rasp trace FILE [--input TEXT | --stdin | --D N --M N] [options]",
     "Traces main(seq) for the input and prints the IR and its layers.  For a\n"
     "program that declares `task`, the input is one path-star input or a\n"
     "drawn sample's sizes, as for rasp run.\n",
     NULL},
    {RASPC_VERIFY, "verify", "rasp verify PROGRAM... [options]",
     "Checks path-star programs on random graphs (or every input of one).\n",
     "Results: ok; FAIL; fail* (a listing declared task['expect'] = 'fail', failing\n"
     "as expected); PASS! (declared to fail but passed every cell of the run); ERROR\n"
     "(an error while running); LEAK (declared task['causal'] = True, but an output\n"
     "changed when only later tokens did).\n"
     "Exit status: 0 when every outcome is as expected, 1 otherwise, 2 on bad usage.\n"
     "With --input: 0 when check() passes, 1 when it fails or raises an error, 2 when\n"
     "the input is not one of the task's.\n"
#ifdef RASP_MPI
     "This build runs under mpirun or srun (`mpirun -np K rasp verify ...`): the\n"
     "ranks share the graphs or the exhaustive inputs out in ranges, rank 0 prints.\n"
#endif
    },
    {RASPC_LAYERS, "layers", "rasp layers PROGRAM... [options]",
     "Prints the layers and heads the traced program needs for each M (a\n"
     "path-star program, one that declares `task`) or each input length (a\n"
     "plain program) and names the growth: constant, logarithmic or linear.\n",
     NULL},
    {RASPC_DRAW, "draw", "rasp draw PROGRAM [options]",
     "Writes the traced computation graph, grouped by layer, as Graphviz DOT\n"
     "(to stdout, or FILE); svg and png need the `dot` tool (Debian: graphviz).\n",
     NULL},
    {RASPC_GEN, "gen", "rasp gen [options]",
     "Writes path-star task samples (paper §1.1), one per line.\n", NULL},
    {RASPC_COMPILE, "compile", "rasp compile PROGRAM -o STEM [options]",
     "Compiles a program to transformer weights.\n", NULL},
    {RASPC_APPLY, "apply",
     "rasp apply STEM --input TEXT [options]\n"
     "       rasp apply STEM --program FILE [--input TEXT | --D N --M N --seed S]",
     "Runs the compiled model STEM.json + STEM.safetensors (`rasp compile -o STEM`)\n"
     "on one input and prints its output, one value per input position.  The\n"
     "input's symbols are numbered by the model's own vocabulary.\n",
     NULL},
    {RASPC_REPL, "repl", "rasp repl [options]",
     "Reads entries from a terminal (GNU Readline, history in ~/.rasp_history)\n"
     "or, without prompts, from a pipe.  :help inside lists the commands.\n",
     NULL},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const char *command_name(unsigned cmd) {
  for (size_t c = 0; c < NCOMMANDS; c++)
    if (commands[c].bit == cmd) return commands[c].name;
  return "?";
}

/* Where the help of an option starts. */
#define HELP_COLUMN 22

static const raspU_table table = {"rasp", options, (int)NOPTIONS, command_name, raspC_usage,
                                  HELP_COLUMN, NULL};

void raspC_usage(unsigned cmd, FILE *out) {
  size_t c = 0;
  while (c < NCOMMANDS && commands[c].bit != cmd) c++;
  if (c == NCOMMANDS) return;
  fprintf(out, "usage: %s\n%s", commands[c].usage, commands[c].intro);
  raspU_help(&table, cmd, NULL, out);
  if (commands[c].outro) fputs(commands[c].outro, out);
  fputs("Options are written --opt VALUE or --opt=VALUE.\n", out);
}

int raspC_command(const char *name, unsigned *cmd) {
  for (size_t c = 0; c < NCOMMANDS; c++)
    if (strcmp(name, commands[c].name) == 0) {
      *cmd = commands[c].bit;
      return 1;
    }
  return 0;
}

int raspC_parse(unsigned cmd, int argc, char **argv, raspC_arg **out) {
  char who[32];
  snprintf(who, sizeof who, "rasp %s", command_name(cmd));
  return raspU_parse(&table, cmd, who, argc, argv, NULL, out);
}

int raspC_option_count(void) { return (int)NOPTIONS; }

int raspC_option_at(int k, const char **name, unsigned *cmds) {
  if (k < 0 || k >= (int)NOPTIONS) return 0;
  *name = options[k].name;
  *cmds = options[k].sets;
  return 1;
}
