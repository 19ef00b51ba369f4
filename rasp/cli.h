/*
** cli.h -- the subcommands of the `rasp` front end.
**
** Each subcommand takes its own argc/argv (argv[0] is the subcommand's
** name), prints its own errors and returns the process exit status:
** 0 success, 1 a failure the command reports (a program that fails
** verification, an error in a program), 2 bad usage (an option or file).
** Options are parsed by raspC_parse from one table (cli_opts.c, in the
** format of ropts.h, which rasp-train's table shares).
** After a rasp_error the status is raspR_exit_status's (rerror.h): it is
** decided by the error's code, never by its text.
*/
#ifndef RASP_CLI_H
#define RASP_CLI_H

#include "rasp.h"
#include "ropts.h"
#include "rverify.h"

int rasp_cli_run(int argc, char **argv);
int rasp_cli_script(int argc, char **argv);
int rasp_cli_trace(int argc, char **argv);
int rasp_cli_gen(int argc, char **argv);
int rasp_cli_verify(int argc, char **argv);
int rasp_cli_layers(int argc, char **argv);
int rasp_cli_draw(int argc, char **argv);
int rasp_cli_repl(int argc, char **argv);
int rasp_cli_compile(int argc, char **argv);
int rasp_cli_apply(int argc, char **argv);

/* The compiled model's schedule (rlayers.h, raspL_analyse_compiled) of the
** node root (-1: the first output) of a traced plain program whose inputs
** are the token ids 1..|vocabulary|, as `rasp compile` builds it; the IR
** rule, with the reason, for a program the compiler refuses.  What `rasp
** layers`, `trace`, `draw` and the verifier print (cli_common.c; raspK_trace
** does the same for path-star programs; the REPL's :layers compiles its
** expression as the output). */
void raspC_compiled_layers(rasp_ctx *ctx, int root, rasp_layers *L);

/* ---- options (cli_opts.c): one table, one parser, the help from both */

/* The commands, as bits of an option's set of commands. */
enum {
  RASPC_RUN = 1 << 0, RASPC_TRACE = 1 << 1, RASPC_VERIFY = 1 << 2, RASPC_LAYERS = 1 << 3,
  RASPC_DRAW = 1 << 4, RASPC_GEN = 1 << 5, RASPC_COMPILE = 1 << 6, RASPC_APPLY = 1 << 7,
  RASPC_REPL = 1 << 8, RASPC_ALL = (1 << 9) - 1
};
/* The options, by meaning (one id may be spelt differently per command). */
enum {
  RASPC_OPERAND, /* not an option: a file, a stem */
  RASPC_O_INPUT, RASPC_O_STDIN, RASPC_O_ENTRY, RASPC_O_SYMBOLS, RASPC_O_EXPLAIN, RASPC_O_VOCAB, RASPC_O_SET,
  RASPC_O_D, RASPC_O_M, RASPC_O_V, RASPC_O_SEED, RASPC_O_GRAPHS, RASPC_O_JOBS, RASPC_O_SWEEP,
  RASPC_O_VERBOSE, RASPC_O_EXHAUSTIVE, RASPC_O_VOCAB_ORDER, RASPC_O_CAP, RASPC_O_JSON,
  RASPC_O_CHECKPOINT, RASPC_O_CHECKPOINT_EVERY, RASPC_O_RESUME, RASPC_O_PROGRESS, RASPC_O_PLAN,
  RASPC_O_QUIET, RASPC_O_NO_SHRINK, RASPC_O_STRICT, RASPC_O_INTERPRET_CHECK, RASPC_O_LENGTH,
  RASPC_O_INPUT_VOCAB, RASPC_O_OUT, RASPC_O_FORMAT, RASPC_O_COUNT_SAMPLES, RASPC_O_ORDER,
  RASPC_O_Q, RASPC_O_ANSWER, RASPC_O_BOS, RASPC_O_NO_BOS, RASPC_O_EOS, RASPC_O_NO_EOS,
  RASPC_O_STRUCTURED, RASPC_O_ST_NAMES, RASPC_O_MARKERS, RASPC_O_COUNT, RASPC_O_DRY_RUN,
  RASPC_O_STATS, RASPC_O_CHECK, RASPC_O_ENCODER, RASPC_O_LOGIT_SCALE, RASPC_O_DUMP_FORWARD,
  RASPC_O_PRECISION, RASPC_O_ENCODING, RASPC_O_ATTN_GAIN, RASPC_O_MOVES, RASPC_O_REQUIRE_PROOF, RASPC_O_LN,
  RASPC_O_UNPROVEN, RASPC_O_CHECK_ORDERS, RASPC_O_NO_SDPA,
  RASPC_O_LOGITS, RASPC_O_PROGRAM, RASPC_O_STDLIB, RASPC_O_ALLOW_FFI, RASPC_O_ALLOW_INCLUDE,
  RASPC_O_MAX_MEMORY, RASPC_O_TIMEOUT, RASPC_O_HELP, RASPC_O_VERSION
};
/* One argument, as ropts.h's parser gives it: an option (id, its name as
** given -- the table's spelling of it, "-n" or "--count-samples" --, its
** value or NULL for a flag) or an operand (RASPC_OPERAND, NULL, the text). */
typedef raspU_arg raspC_arg;
#define RASPC_BAD RASPU_BAD   /* a message was printed: exit status 2 */
#define RASPC_DONE RASPU_DONE /* --help or --version was printed: exit status 0 */
/* Parses argv[1..] for command cmd (one RASPC_* bit) into *args (free with
** raspM_free): the options and operands in order, values pointing into
** argv.  Returns their count, RASPC_BAD or RASPC_DONE (*args unset). */
int raspC_parse(unsigned cmd, int argc, char **argv, raspC_arg **args);
/* The same for a command that runs a program (name: its name): the access
** options --allow-ffi and --allow-include DIR go into acc instead of
** *args (its directories point into argv; raspC_access_free releases the
** list, whatever this returns). */
int raspC_parse_program(unsigned cmd, const char *name, int argc, char **argv, rasp_access *acc,
                        raspC_arg **args);
/* The command's help: usage, options from the table, notes. */
void raspC_usage(unsigned cmd, FILE *out);
/* The command named name: 1 and *cmd set, or 0. */
int raspC_command(const char *name, unsigned *cmd);
/* The table, row by row (for tests): 0 past the end. */
int raspC_option_count(void);
int raspC_option_at(int k, const char **name, unsigned *cmds);

/* One path-star input of prog's task for --input TEXT (its tokens, or a
** JSON line of `rasp gen`), node symbols 1..V: 0, or 2 after a message
** naming the first thing wrong ("rasp CMD: --input: ..."). */
int raspC_task_input(const char *cmd, const rasp_program *prog, int V, const char *text,
                     rasp_input *in);

/* Whether s is a decimal integer (to *v): a vocabulary sorts those
** numerically first, `rasp run --set` gives them as integers. */
int raspC_as_integer(const char *s, long long *v);
/* Splits text on whitespace into malloc'd symbols; returns the count. */
int raspC_split(const char *text, char ***out);
void raspC_free_strings(char **strs, int n);
/* The default vocabulary of an input: its distinct symbols sorted, numbers
** numerically first, then the rest by bytes.  Returns the count. */
int raspC_default_vocab(char **symbols, int n, char ***out);
/* Reads a vocabulary file (one symbol per line): the count, or -1 with err. */
int raspC_read_vocab(const char *path, char ***out, rasp_error *err);
/* Parses an integer option value: 1, or 0 after printing "rasp CMD: --opt:
** ..." (these helpers print their own errors: they end a command). */
int raspC_int_opt(const char *cmd, const char *opt, const char *text, long lo, long hi,
                  long *out);
/* --allow-ffi and --allow-include DIR before a script's FILE (`rasp
** [ACCESS] FILE`, not a command: no option table).  1: argv[*i] was one of
** them (*i moves past its value), 0: it was not, -1: a bad value (message
** printed).  acc's directories point into argv; raspC_access_free releases
** the list. */
int raspC_access_opt(const char *cmd, int argc, char **argv, int *i, rasp_access *acc);
void raspC_access_free(rasp_access *acc);
/* Text inside a JSON string: quotes, backslashes and controls escaped. */
void raspC_json_fputs(const char *s, FILE *f);
/* Prints a node's values for input b (one line), symbolically or not. */
void raspC_print_values(rasp_ctx *ctx, rasp_eval *ev, int node, int b, int symbolic, FILE *out);

/* ---- draw (cli_draw.c), for `rasp draw` and the REPL's :draw */

/* A traced program as draw sees it: its IR, the nodes it returns and the
** sublayer of every node: the compiled model's (raspL_analyse_compiled, the
** schedule `rasp layers` counts), the IR rule's where the compiler
** refuses. */
typedef struct raspC_dgraph {
  rasp_ir *ir;
  const int *roots;
  int nroots;
  const int *sublayer;
} raspC_dgraph;
/* The format draw writes: json (--json), format (--format), else
** out_file's extension, else dot.  NULL after a message. */
const char *raspC_draw_format(int json, const char *format, const char *out_file);
/* g as format (dot, json, or svg, png, pdf through Graphviz's dot) into
** out_file, atomically, or DOT and JSON on stdout when out_file is NULL.
** The exit status: 0, or 1/2 after a message. */
int raspC_draw_write(const raspC_dgraph *g, const char *name, const char *format,
                     const char *out_file);

/* ---- verify, layers and draw (cli_common.c): their options, plain programs */

/* The options of `rasp verify`, `layers` and `draw`, from the one table. */
typedef struct raspC_vopts {
  int *Ds, nD, *Ms, nM;
  long V, graphs, jobs, cap;
  unsigned long long seed;
  int json, exhaustive, quiet, no_shrink, strict, interpret_check, sweep, verbose;
  const char *stdlib, *out_file, *format, *vocab_order, *input;
  const char *input_vocab, *vocab_file; /* plain programs (layers, draw) */
  int *Ls, nL;                          /*   their --length values */
  const char *sized;                    /* --D, --M or --V, when given */
  const char *checkpoint;               /* --checkpoint FILE, */
  int resume, progress, plan;           /*   --resume, --progress, --plan */
  long ckpt_every;                      /* --checkpoint-every SECONDS */
  int ckpt_every_given;                 /*   (given: it needs --checkpoint) */
  const char **programs;
  int nprograms;
  rasp_access access;
} raspC_vopts;
/* Sets o's defaults, with room for argc programs; free with raspC_vopts_free. */
void raspC_vopts_init(raspC_vopts *o, int argc);
/* Options into o for command cmd (name its name): 1 parsed, 0 after --help
** or --version, -1 bad usage (message printed). */
int raspC_vopts_parse(unsigned cmd, const char *name, int argc, char **argv, raspC_vopts *o);
void raspC_vopts_free(raspC_vopts *o);
/* A value "3", a range "2..5" or a list "2,3,5" of integers in lo..hi into
** *out (malloc'd) and *count: 1, or 0 after a message. */
int raspC_range(const char *cmd, const char *opt, const char *text, long lo, long hi, int **out,
                int *count);
/* The heads per layer of L, space-separated, into buf. */
void raspC_heads_text(const rasp_layers *L, char *buf, size_t size);
/* Whether a load failed only because the file declares no task. */
int raspC_is_plain(const rasp_error *err);
/* 0 after a message when --D, --M or --V was given for a plain program
** (file), or a plain program's option for a path-star one (name; draw takes
** one --input of the task: with_input). */
int raspC_plain_opts_only(const char *cmd, const raspC_vopts *o, const char *file);
int raspC_task_opts_only(const char *cmd, const raspC_vopts *o, const char *name,
                         int with_input);
/* A plain program's vocabulary (--vocab, --input-vocab or --input's
** symbols) and --input's length (0 without it): the count, or -1 after a
** message. */
int raspC_plain_vocab(const char *cmd, const raspC_vopts *o, char ***vocab, int *input_len);
/* A plain program traced (entry main) for inputs of length n, or NULL with
** err set. */
rasp_ctx *raspC_plain_trace(const raspC_vopts *o, const char *file, char **vocab, int nvocab,
                            int n, rasp_error *err);
/* The file name without its directory and .rasp (malloc'd). */
char *raspC_plain_name(const char *file);

/* `rasp compile --check-orders LIST` (cli_orders.c): LIST is words of
** rmodel_orders.h ("c rev asc desc pair perm f64", commas or spaces
** between them) or "all".  raspC_check_orders parses it: the number of
** orders (each flagged in on[RASPN_NORDERS] when on is not NULL), or -1
** after a message. */
struct raspG_model;
typedef struct raspC_orders raspC_orders;
int raspC_check_orders(const char *text, unsigned char *on);
/* The orders of text (already parsed) for model g (of the program ir). */
raspC_orders *raspC_orders_new(const struct raspG_model *g, const rasp_ir *ir, const char *text,
                               uint64_t seed);
/* --check input k (tok, the program's input) through every order, each
** decoded output compared with want (the interpreter's); the first
** disagreements go to stderr.  1, or 0 with err set. */
int raspC_orders_run(raspC_orders *o, long k, const int64_t *tok, const rasp_elem *want,
                     rasp_error *err);
/* One line per order to out: its agreement.  1 when an order the model
** should be exact in disagreed, else 0. */
int raspC_orders_summary(const raspC_orders *o, FILE *out);
void raspC_orders_free(raspC_orders *o);

#endif
