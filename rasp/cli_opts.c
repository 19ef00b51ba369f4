/*
** cli_opts.c -- the one option parser of the `rasp` commands, and their
** help texts, from one table.
**
** Every option of every command is a row of `options` below: its name (and
** a second spelling), the name of its value (none: a flag), the commands
** that take it and its help.  An option whose meaning differs between
** commands has one row per meaning, each naming its commands.  The parser
** (raspC_parse) and the help (raspC_usage, `rasp CMD --help` and `rasp help
** CMD`) both read the table, so an option cannot be accepted without being
** documented, or documented under a command that refuses it.
**
** The convention, the same everywhere: --opt VALUE or --opt=VALUE (a short
** option also -oVALUE); --help (-h) and --version in any command; an
** option no command has is "unknown", one that only other commands take is
** refused naming them (so a mistyped command line never runs with an
** option silently ignored); a flag given a value (--json=1) is refused.
** Errors are exit status 2.  What an option's value means is the
** command's business: the parser hands each command its options in order,
** by id.
**
** To add an option: a row here (with its commands and help) and an id in
** cli.h; the command then handles the id.  --max-memory and --timeout are
** taken out of the arguments by rasp.c before any command runs (they apply
** to every command and to scripts); they are rows here for the help.
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

typedef struct option {
  int id;
  const char *name, *alias; /* alias: another spelling, or NULL */
  const char *arg;          /* the value's name in the help; NULL: a flag */
  unsigned cmds;            /* RASPC_* bits */
  const char *help;         /* one paragraph: the printer fills its lines */
} option;

static const option options[] = {
    /* run and trace: one input */
    {RASPC_O_INPUT, "--input", NULL, "TEXT", RASPC_RUN | RASPC_TRACE,
     "the input: symbols separated by spaces; for a program that declares\n"
     "`task`, one path-star input as `rasp gen` or a counterexample writes it\n"
     "(\"/ s t = 4 50 | ...\", or a JSON line of `rasp gen`): D and M come\n"
     "from its graph"},
    {RASPC_O_STDIN, "--stdin", NULL, NULL, RASPC_RUN | RASPC_TRACE,
     "read --input's text from standard input"},
    {RASPC_O_D, "--D", NULL, "N", RASPC_RUN | RASPC_TRACE,
     "programs that declare `task`, instead of --input: the degree of\n"
     "a drawn sample (default 2)"},
    {RASPC_O_M, "--M", NULL, "N", RASPC_RUN | RASPC_TRACE,
     "its arm length, counting s (default 5)"},
    {RASPC_O_V, "--V", NULL, "N", RASPC_RUN | RASPC_TRACE,
     "programs that declare `task`: the number of node symbols (default 100)"},
    {RASPC_O_SEED, "--seed", NULL, "S", RASPC_RUN | RASPC_TRACE,
     "the drawn sample is sample 0 of seed S, as `rasp verify --seed S`\n"
     "draws it (default 1)"},
    {RASPC_O_ENTRY, "--entry", NULL, "NAME", RASPC_RUN | RASPC_TRACE,
     "the function to trace (default main)"},
    {RASPC_O_SYMBOLS, "--symbols", NULL, NULL, RASPC_RUN,
     "print token-valued outputs as the symbols they stand for"},
    {RASPC_O_EXPLAIN, "--explain", NULL, NULL, RASPC_TRACE,
     "also evaluate the input and print, per head, the evaluator's kernel\n"
     "that computed it and for how many inputs"},
    {RASPC_O_VOCAB, "--vocab", NULL, "FILE", RASPC_RUN | RASPC_TRACE,
     "vocabulary, one symbol per line (id = line number)"},
    {RASPC_O_SET, "--set", NULL, "NAME=VAL", RASPC_RUN | RASPC_TRACE,
     "set a global before the program runs (integer, True/False, or a\n"
     "string); repeatable"},

    /* verify */
    {RASPC_O_D, "--D", NULL, "RANGE", RASPC_VERIFY, "degrees to check, e.g. 2..5 (default 2..5)"},
    {RASPC_O_M, "--M", NULL, "RANGE", RASPC_VERIFY,
     "arm lengths, counting the start node (default 5)"},
    {RASPC_O_V, "--V", NULL, "N", RASPC_VERIFY, "number of node symbols (default 100)"},
    {RASPC_O_GRAPHS, "--graphs", NULL, "N", RASPC_VERIFY, "random graphs per (D, M) (default 1000)"},
    {RASPC_O_SEED, "--seed", NULL, "S", RASPC_VERIFY, "generator seed (default 1)"},
    {RASPC_O_JOBS, "--jobs", NULL, "K", RASPC_VERIFY, "threads (default: the number of cores)"},
    {RASPC_O_SWEEP, "--sweep", NULL, NULL, RASPC_VERIFY,
     "M = 3 .. task['sweep_M'] (default 10) per program unless --M is\n"
     "given; one compact row per program naming the failing (D, M) cells\n"
     "(-v or --json: every cell)"},
    {RASPC_O_VERBOSE, "--verbose", "-v", NULL, RASPC_VERIFY,
     "heads per layer in full (the table abbreviates them to fit 100\n"
     "columns: 2x3 is three layers of 2 heads); with --sweep, one row per\n"
     "(D, M) as without it"},
    {RASPC_O_EXHAUSTIVE, "--exhaustive", NULL, NULL, RASPC_VERIFY,
     "every edge order and target of one graph instead of random graphs:\n"
     "a proof for those sizes when the program is proven not to see the\n"
     "order of the ids (rorder.h), else a sample, and the output says\n"
     "which; progress on stderr, a counterexample for a failure"},
    {RASPC_O_VOCAB_ORDER, "--vocab-order", NULL, "ORDER", RASPC_VERIFY,
     "shuffled: also judge each graph with the vocabulary's ids\n"
     "(specials included) in a random order of its own, and report the\n"
     "graphs whose verdict changed (default: fixed)"},
    {RASPC_O_CAP, "--cap", NULL, "N", RASPC_VERIFY,
     "most inputs --exhaustive may enumerate (default 2000000)"},
    {RASPC_O_CHECKPOINT, "--checkpoint", NULL, "FILE", RASPC_VERIFY,
     "--exhaustive: record the ranges done in FILE, so that a killed run\n"
     "can be resumed"},
    {RASPC_O_CHECKPOINT_EVERY, "--checkpoint-every", NULL, "S", RASPC_VERIFY,
     "write it at most every S seconds (default 10; 0: after every range\n"
     "of inputs)"},
    {RASPC_O_RESUME, "--resume", NULL, NULL, RASPC_VERIFY,
     "continue the run that --checkpoint FILE records (a missing FILE\n"
     "starts it); the counts are those of an unbroken run"},
    {RASPC_O_PROGRESS, "--progress", NULL, NULL, RASPC_VERIFY,
     "progress with rate and ETA on stderr from the start"},
    {RASPC_O_PLAN, "--plan", NULL, NULL, RASPC_VERIFY,
     "--exhaustive: print each cell's number of inputs and the time it\n"
     "takes one core (from checking the first inputs for a second),\n"
     "instead of running it"},
    {RASPC_O_INPUT, "--input", NULL, "TEXT", RASPC_VERIFY,
     "run one program on one input instead: its tokens as the task\n"
     "writes them (or a JSON line of `rasp gen`); D and M come from the\n"
     "graph; prints the output, the verdict of check() and the\n"
     "intermediate values"},
    {RASPC_O_JSON, "--json", NULL, NULL, RASPC_VERIFY, "one JSON object per line instead of the table"},
    {RASPC_O_QUIET, "--quiet", NULL, NULL, RASPC_VERIFY, "no counterexamples, only the table"},
    {RASPC_O_NO_SHRINK, "--no-shrink", NULL, NULL, RASPC_VERIFY,
     "print the first failing input without shrinking it"},
    {RASPC_O_STRICT, "--strict", NULL, NULL, RASPC_VERIFY,
     "count expected failures (task['expect'] = 'fail') as failures"},
    {RASPC_O_INTERPRET_CHECK, "--interpret-check", NULL, NULL, RASPC_VERIFY,
     "call check() through the interpreter for every graph, not its\n"
     "staged form (the same verdicts, slower)"},

    /* layers and draw */
    {RASPC_O_M, "--M", NULL, "RANGE", RASPC_LAYERS,
     "path-star programs: arm lengths (default 3..33)"},
    {RASPC_O_D, "--D", NULL, "N", RASPC_LAYERS, "path-star programs: the degree (default 2)"},
    {RASPC_O_V, "--V", NULL, "N", RASPC_LAYERS | RASPC_DRAW,
     "path-star programs: node symbols (default 100)"},
    {RASPC_O_D, "--D", NULL, "N", RASPC_DRAW, "path-star programs: the degree (default 2)"},
    {RASPC_O_M, "--M", NULL, "N", RASPC_DRAW, "path-star programs: the arm length (default 5)"},
    {RASPC_O_LENGTH, "--length", NULL, "RANGE", RASPC_LAYERS,
     "plain programs: input lengths (default: --input's length, else 1..16)"},
    {RASPC_O_LENGTH, "--length", NULL, "N", RASPC_DRAW,
     "plain programs: the input length (default: --input's length, else 8)"},
    {RASPC_O_INPUT, "--input", NULL, "TEXT", RASPC_LAYERS | RASPC_DRAW,
     "plain programs: an input; its symbols are the vocabulary.  Path-star\n"
     "programs: one input of the task (as for rasp run); D and M come from\n"
     "its graph"},
    {RASPC_O_INPUT_VOCAB, "--input-vocab", NULL, "TEXT", RASPC_LAYERS | RASPC_DRAW,
     "plain programs: the input symbols, space-separated"},
    {RASPC_O_VOCAB, "--vocab", NULL, "FILE", RASPC_LAYERS | RASPC_DRAW,
     "plain programs: the vocabulary, one symbol a line"},
    {RASPC_O_OUT, "-o", NULL, "FILE", RASPC_DRAW,
     "write FILE; its extension (.dot .gv .svg .png .json) gives the\n"
     "format unless --format or --json does"},
    {RASPC_O_FORMAT, "--format", NULL, "F", RASPC_DRAW, "dot, svg, png or json"},
    {RASPC_O_JSON, "--json", NULL, NULL, RASPC_LAYERS,
     "one JSON object per row, then one with the growth"},
    {RASPC_O_JSON, "--json", NULL, NULL, RASPC_DRAW,
     "the graph as JSON: its live nodes (op, label, layer, line) and edges"},

    /* gen */
    {RASPC_O_D, "--D", NULL, "N", RASPC_GEN, "degree of the start node s (default 2)"},
    {RASPC_O_M, "--M", NULL, "N", RASPC_GEN, "arm length counting s, >= 2 (default 5)"},
    {RASPC_O_V, "--V", NULL, "N", RASPC_GEN, "node symbols 1..V, V >= D(M-1)+1 (default 100)"},
    {RASPC_O_COUNT_SAMPLES, "--count-samples", "-n", "N", RASPC_GEN,
     "number of samples (default 10); with --structured K each is\n"
     "followed by K variants"},
    {RASPC_O_SEED, "--seed", NULL, "S", RASPC_GEN,
     "64-bit seed, decimal or 0x hex (default 0); sample i depends only\n"
     "on (options, S, i)"},
    {RASPC_O_ORDER, "--order", NULL, "edge|arm", RASPC_GEN,
     "edge-wise shuffle or arm-wise order (default edge)"},
    {RASPC_O_Q, "--q", NULL, "start|end", RASPC_GEN,
     "Q = '/ s t =' before or after G (default start)"},
    {RASPC_O_ANSWER, "--answer", NULL, "none|forward|reverse|lead", RASPC_GEN,
     "what follows Q and G (default forward: R_t)"},
    {RASPC_O_BOS, "--bos", NULL, NULL, RASPC_GEN, "BOS token first (the default, as in the paper)"},
    {RASPC_O_NO_BOS, "--no-bos", NULL, NULL, RASPC_GEN, "no BOS token"},
    {RASPC_O_EOS, "--eos", NULL, NULL, RASPC_GEN, "EOS token last (the default, as in the paper)"},
    {RASPC_O_NO_EOS, "--no-eos", NULL, NULL, RASPC_GEN, "no EOS token"},
    {RASPC_O_STRUCTURED, "--structured", NULL, "K", RASPC_GEN,
     "K extra samples per graph with other targets, 0 <= K <= D-1\n"
     "(default 0)"},
    {RASPC_O_ST_NAMES, "--st-names", NULL, NULL, RASPC_GEN,
     "write s and t as the symbols 's' and 't'"},
    {RASPC_O_MARKERS, "--markers", NULL, "1|2", RASPC_GEN, "'|' tokens after each edge (default 1)"},
    {RASPC_O_FORMAT, "--format", NULL, "jsonl|text", RASPC_GEN, "output format (default jsonl)"},
    {RASPC_O_COUNT, "--count", NULL, NULL, RASPC_GEN,
     "print the exact numbers of (G, Q) pairs and of tokenisations\n"
     "instead of samples"},
    {RASPC_O_OUT, "--output", "-o", "FILE", RASPC_GEN,
     "write to FILE atomically (default stdout)"},

    /* compile */
    {RASPC_O_OUT, "-o", NULL, "STEM", RASPC_COMPILE,
     "write STEM.safetensors and STEM.json (required; missing\n"
     "directories are created)"},
    {RASPC_O_DRY_RUN, "--dry-run", NULL, NULL, RASPC_COMPILE,
     "instead of -o: compile (and --check, --stats) but write no model"},
    {RASPC_O_D, "--D", NULL, "N", RASPC_COMPILE,
     "task parameters of programs that declare `task` (default D=2\n"
     "M=5 V=100)"},
    {RASPC_O_M, "--M", NULL, "N", RASPC_COMPILE, "(--D)"},
    {RASPC_O_V, "--V", NULL, "N", RASPC_COMPILE, "(--D)"},
    {RASPC_O_INPUT_VOCAB, "--input-vocab", NULL, "TEXT", RASPC_COMPILE,
     "plain programs: the input symbols, space-separated"},
    {RASPC_O_VOCAB, "--vocab", NULL, "FILE", RASPC_COMPILE,
     "plain programs: the vocabulary, one symbol a line"},
    {RASPC_O_LENGTH, "--length", NULL, "N", RASPC_COMPILE,
     "plain programs: the input length (default 8)"},
    {RASPC_O_STATS, "--stats", NULL, NULL, RASPC_COMPILE,
     "print d_model, layers, heads, MLP widths, parameters"},
    {RASPC_O_CHECK, "--check", NULL, "N", RASPC_COMPILE,
     "compare the model with the interpreter on N random inputs (half\n"
     "adversarial: plain programs one token, two tokens, sorted runs, the\n"
     "extremes; path-star programs edges arm by arm outward, inward,\n"
     "interleaved inward)"},
    {RASPC_O_ENCODER, "--encoder", NULL, NULL, RASPC_COMPILE,
     "path-star programs: compile for rasp-train's encoder (answer\n"
     "positions hold MASK, id V+8; the program's first extra symbol must\n"
     "be 'MASK'); --check also runs the program's check() on the masked\n"
     "inputs"},
    {RASPC_O_LOGIT_SCALE, "--logit-scale", NULL, "X", RASPC_COMPILE,
     "margin of the right output's logit over the others (default\n"
     "ln(1000 (n_out - 1)): cross-entropy < 0.001)"},
    {RASPC_O_PRECISION, "--precision", NULL, "P", RASPC_COMPILE,
     "fp32 (default), fp16 or bf16: numerical encodings only where their\n"
     "margins are proven at P (else categorical, else refused at the\n"
     "node); --check runs the forward pass in P"},
    {RASPC_O_ENCODING, "--encoding", NULL, "E", RASPC_COMPILE,
     "auto (default: the proven choice) or categorical (integers one-hot)"},
    {RASPC_O_SEED, "--seed", NULL, "S", RASPC_COMPILE, "seed of the random inputs (default 1)"},
    {RASPC_O_DUMP_FORWARD, "--dump-forward", NULL, "F", RASPC_COMPILE,
     "write the logits of one random input to F (text)"},

    /* apply */
    {RASPC_O_INPUT, "--input", NULL, "TEXT", RASPC_APPLY,
     "the input: symbols of the model's vocabulary separated by spaces,\n"
     "exactly as many as it was compiled for"},
    {RASPC_O_SYMBOLS, "--symbols", NULL, NULL, RASPC_APPLY,
     "print a token-valued output as the symbols it stands for"},
    {RASPC_O_LOGITS, "--logits", NULL, NULL, RASPC_APPLY,
     "also print the logits: one row per input position, one column per\n"
     "value of the readout (STEM.json layout.readout)"},
    {RASPC_O_JSON, "--json", NULL, NULL, RASPC_APPLY,
     "print one JSON object: input, tokens (BOS first), output and, with\n"
     "--logits, logits"},
    {RASPC_O_PROGRAM, "--program", NULL, "FILE", RASPC_APPLY,
     "the program STEM was compiled from, when it declares `task`: --input\n"
     "is then checked as one input of its task (as rasp run checks it), or\n"
     "a sample is drawn for --D --M --V --seed and printed on a line\n"
     "\"input: ...\" before the output"},
    {RASPC_O_D, "--D", NULL, "N", RASPC_APPLY,
     "with --program, instead of --input: the degree of the drawn sample\n"
     "(default 2); D and M must give the model's input length"},
    {RASPC_O_M, "--M", NULL, "N", RASPC_APPLY, "its arm length, counting s (default 5)"},
    {RASPC_O_V, "--V", NULL, "N", RASPC_APPLY,
     "with --program: the number of node symbols (default 100)"},
    {RASPC_O_SEED, "--seed", NULL, "S", RASPC_APPLY,
     "the drawn sample is sample 0 of seed S, as `rasp verify --seed S`\n"
     "draws it (default 1)"},

    /* every command that runs a program */
    {RASPC_O_STDLIB, "--stdlib", NULL, "DIR", PROGRAMS, "use another stdlib directory"},
    {RASPC_O_ALLOW_FFI, "--allow-ffi", NULL, NULL, PROGRAMS,
     "let the program call C functions (cfunc): native code that can do\n"
     "anything you can, so only for programs you trust"},
    {RASPC_O_ALLOW_INCLUDE, "--allow-include", NULL, "DIR", PROGRAMS,
     "let include() read .rasp files under DIR as well as the program's\n"
     "own directory tree and the stdlib; repeatable"},

    /* every command */
    {RASPC_O_MAX_MEMORY, "--max-memory", NULL, "BYTES", RASPC_ALL,
     "end with a message and status 1 past BYTES (K, M, G, T suffixes;\n"
     "0: no limit; default: verify and compile 4G, others none)"},
    {RASPC_O_TIMEOUT, "--timeout", NULL, "SECONDS", RASPC_ALL,
     "end with a message and status 1 after SECONDS (default: none)"},
    {RASPC_O_HELP, "--help", "-h", NULL, RASPC_ALL, "this text"},
    {RASPC_O_VERSION, "--version", NULL, NULL, RASPC_ALL, "the version"},
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

/* The option's first column: "--name, -a ARG". */
static void left_column(const option *o, char *buf, size_t size) {
  snprintf(buf, size, "%s%s%s%s%s", o->name, o->alias ? ", " : "", o->alias ? o->alias : "",
           o->arg ? " " : "", o->arg ? o->arg : "");
}

/* Where the help of an option starts, and the width it is filled to. */
#define HELP_COLUMN 22
#define HELP_WIDTH 79

void raspC_usage(unsigned cmd, FILE *out) {
  size_t c = 0;
  while (c < NCOMMANDS && commands[c].bit != cmd) c++;
  if (c == NCOMMANDS) return;
  fprintf(out, "usage: %s\n%s", commands[c].usage, commands[c].intro);
  for (size_t k = 0; k < NOPTIONS; k++) {
    const option *o = &options[k];
    if (!(o->cmds & cmd)) continue;
    char left[96];
    left_column(o, left, sizeof left);
    int w = fprintf(out, "  %s", left);
    if (w >= HELP_COLUMN - 1) { /* at least two spaces before the help */
      fputc('\n', out);
      w = 0;
    }
    /* the help's words, filled from the help column to HELP_WIDTH */
    int col = w;
    for (const char *p = o->help; *p;) {
      while (*p == ' ' || *p == '\n') p++;
      size_t len = strcspn(p, " \n");
      if (!len) break;
      if (col > HELP_COLUMN && col + 1 + (int)len > HELP_WIDTH) {
        fputc('\n', out);
        col = 0;
      }
      if (col < HELP_COLUMN) col += fprintf(out, "%*s", HELP_COLUMN - col, "");
      else col += fprintf(out, " ");
      col += fprintf(out, "%.*s", (int)len, p);
      p += len;
    }
    fputc('\n', out);
  }
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

/* "rasp verify" or "rasp layers and rasp draw": the commands in bits. */
static void commands_text(unsigned bits, char *buf, size_t size) {
  size_t used = 0;
  int n = 0, total = 0;
  buf[0] = '\0';
  for (size_t c = 0; c < NCOMMANDS; c++) total += (bits & commands[c].bit) != 0;
  for (size_t c = 0; c < NCOMMANDS && used + 32 < size; c++) {
    if (!(bits & commands[c].bit)) continue;
    n++;
    used += (size_t)snprintf(buf + used, size - used, "%s%s", n == 1 ? "" : n == total ? " and " : ", ",
                             commands[c].name);
  }
}

/* The row of option text (without any "=VALUE") for cmd; NULL when none.
** *other gets the commands that have an option of that name (0: none). */
static const option *find(unsigned cmd, const char *text, size_t len, unsigned *other) {
  *other = 0;
  for (size_t k = 0; k < NOPTIONS; k++) {
    const option *o = &options[k];
    int same = (strlen(o->name) == len && strncmp(o->name, text, len) == 0) ||
               (o->alias && strlen(o->alias) == len && strncmp(o->alias, text, len) == 0);
    if (!same) continue;
    if (o->cmds & cmd) return o;
    *other |= o->cmds;
  }
  return NULL;
}

/* A short option with its value attached ("-n10", "-oFILE"): its row. */
static const option *find_attached(unsigned cmd, const char *a) {
  unsigned other;
  if (a[0] != '-' || a[1] == '-' || !a[1] || !a[2]) return NULL;
  const option *o = find(cmd, a, 2, &other);
  return o && o->arg ? o : NULL;
}

int raspC_parse(unsigned cmd, int argc, char **argv, raspC_arg **out) {
  const char *name = command_name(cmd);
  raspC_arg *args = raspM_alloc(sizeof(raspC_arg) * (size_t)(argc > 0 ? argc : 1));
  int n = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || !a[1]) { /* an operand ("-" too: standard input, for some) */
      args[n++] = (raspC_arg){RASPC_OPERAND, NULL, a};
      continue;
    }
    const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    unsigned other;
    const option *o = find(cmd, a, len, &other);
    const char *val = NULL;
    if (!o && !other && (o = find_attached(cmd, a))) {
      val = a + 2;
    } else if (!o) {
      if (other) {
        char cmds[128];
        commands_text(other, cmds, sizeof cmds);
        fprintf(stderr, "rasp %s: option '%.*s' is for rasp %s; %s does not use it\n", name,
                (int)len, a, cmds, name);
      } else {
        fprintf(stderr, "rasp %s: unknown option '%.*s' (rasp %s --help lists them)\n", name,
                (int)len, a, name);
      }
      raspM_free(args);
      return RASPC_BAD;
    } else if (!o->arg && eq) {
      fprintf(stderr, "rasp %s: %s takes no value, got '%s'\n", name, o->name, eq + 1);
      raspM_free(args);
      return RASPC_BAD;
    } else if (o->arg) {
      if (eq) val = eq + 1;
      else if (i + 1 < argc) val = argv[++i];
      else {
        fprintf(stderr, "rasp %s: %s needs a value (%s)\n", name, o->name, o->arg);
        raspM_free(args);
        return RASPC_BAD;
      }
    }
    if (o->id == RASPC_O_HELP) {
      raspC_usage(cmd, stdout);
      raspM_free(args);
      return RASPC_DONE;
    }
    if (o->id == RASPC_O_VERSION) {
      printf("rasp %s " RASP_VERSION "\n", name);
      raspM_free(args);
      return RASPC_DONE;
    }
    /* the spelling given, for messages ("-n: ..." after -n or -n10) */
    size_t alen = o->alias ? strlen(o->alias) : 0;
    int as_alias = o->alias && strncmp(a, o->alias, alen) == 0 &&
                   (len == alen || (val && val == a + alen));
    const char *spelt = as_alias ? o->alias : o->name;
    args[n++] = (raspC_arg){o->id, spelt, val};
  }
  *out = args;
  return n;
}

int raspC_option_count(void) { return (int)NOPTIONS; }

int raspC_option_at(int k, const char **name, unsigned *cmds) {
  if (k < 0 || k >= (int)NOPTIONS) return 0;
  *name = options[k].name;
  *cmds = options[k].cmds;
  return 1;
}
