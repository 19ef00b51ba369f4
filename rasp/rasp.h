/*
** rasp.h -- the public interface of librasp.
**
** A rasp_ctx is one interpreter: its globals, the sources it loaded, the
** symbol table and the IR of the trace in progress.  Tracing a program
** means running it for one input length n: rasp_ctx_new(n) makes the input
** sequence `tokens` (and `indices`, `length`) of that length, the program
** and the stdlib run once, and every operation on a sequence becomes an IR
** node.  The IR (rasp_ctx_ir) is then evaluated on any number of inputs of
** length n with the evaluator (reval.h), analysed for layers (rlayers.h) or
** compiled.
**
** Ownership: the context owns every value, source and IR node it creates;
** rasp_ctx_free releases all of it.  Nothing returned by these functions is
** to be freed by the caller unless the comment says so.
**
** Errors, in every librasp header: a function that can fail takes a
** rasp_error (rerror.h) and returns 1 on success, 0 on failure with err
** set; one that returns a count or a size returns -1 on failure, one that
** returns a pointer NULL.  err->code says what kind of error it was
** (rasp_errcode; raspR_exit_status maps it to an exit status), err->msg is
** for people.  After an error the context stays usable.
**
** Prefixes: every exported name says its module.
**   public (installed headers, exported by librasp.so):
**     rasp_   this file: contexts, programs, tracing
**     raspR_  rerror.h: errors, sources, atomic files, other programs
**     raspI_  rir.h, rprim.h: the IR and its element arithmetic
**     raspE_  reval.h: the evaluator
**     raspL_  rlayers.h: layers and heads
**     raspA_  rcausal.h: causality
**     raspO_  rorder.h: order invariance
**     raspT_  rtask.h: the path-star task
**     raspK_  rverify.h: the verifier
**     raspG_  rcompile.h: the compiler
**     raspN_  rmodel.h: transformer models and their files (rmodel_task.h:
**             the path-star task a compiled model records)
**   internal (not installed, hidden in librasp.so; the package's own
**   programs link rasp/librasp-internal.la):
**     raspM_  rmem.h: allocation, memory and time budgets
**     raspX_  rlex.h: the lexer        raspP_  rparse.h: the parser
**     raspF_  rfacts.h: facts of the IR
**     raspV_  rinterp_int.h: the interpreter (rheap, rvalue, rtrace,
**             rinterp, rapi); rvalue.h: its values
**     raspH_  raux.h: the builtins' interface to the interpreter (raux.c)
**     raspB_  rvalue.h: the builtins' table (rbuiltin.c)
**     raspD_  rffi.h: cfunc(), C functions through dlopen and libffi
**     raspS_  rstage.h: staged checks
**     raspW_  rwork.h: a verification run in ranges (the header is installed,
**             its names are not exported)
**     raspC_, rasp_cli_  cli.h: the rasp command (not in the library)
**     raspU_  ropts.h: options of rasp and rasp-train (librasp-internal only)
**     train_  trainer/: rasp-train (not in the library)
*/
#ifndef RASP_RASP_H
#define RASP_RASP_H

#include <stdint.h>
#include <stdio.h>

#include "rerror.h"
#include "rir.h"
#include "reval.h"
#include "rlayers.h"

#define RASP_VERSION "0.1.0"
/* The library's ABI: librasp.so.RASP_ABI_VERSION (libtool's -version-info
** CURRENT in Makefile.am); raised whenever a change breaks programs built
** against the previous headers (1: the return convention and the error
** codes above; 2: raspG_opts' attn_gain and raspG_model's attn_gain,
** score_scale, attn_leak and unproven_at, which change both structs' layout,
** raspG_sched's sublayer, and raspR_split_options removed; 3: raspG_opts'
** moves and require_proof, raspG_model's moves, moves_assumed and
** moves_at; the error code RASP_E_IMPURE, added after the others; 4:
** raspG_model's sharpened and gain_max; 5: rasp_error's inner frame,
** rasp_ir_node's lib_pos and lib_fn, rasp_repl_entry's rasp_repl_value,
** raspG_opts' no_sdpa).
** rasp_abi_version() is the number the library was built with: a program
** can compare it with the RASP_ABI_VERSION it saw. */
#define RASP_ABI_VERSION 5
int rasp_abi_version(void);

typedef struct rasp_ctx rasp_ctx;

/* Limits that keep bad programs from exhausting the machine. */
typedef struct rasp_limits {
  int max_length;         /* input length n */
  int max_nodes;          /* IR nodes per trace */
  int max_depth;          /* function call depth */
  long long max_steps;    /* statements executed per top-level call; the
                             functions given to tok_map/seq_map/select share
                             one such budget per trace */
  size_t max_selector_cells; /* n*n cells of a materialised selector */
  size_t max_list;        /* elements of a list or range */
  size_t max_num_bits;    /* bits of a number (numerator and denominator
                             together); checked before GMP computes it */
  size_t max_string;      /* bytes of a string */
} rasp_limits;

void rasp_default_limits(rasp_limits *limits);

/* What a program may reach beyond the interpreter.  Programs travel between
** people, so a new context trusts them with nothing (all fields zero):
**   - cfunc() is refused.  A C function is native code from any shared
**     library: it can do anything the process can (start a shell, write
**     files, overwrite memory), and a crash or an exit() inside it ends the
**     process.  Only programs one would run as a native binary get it.
**   - include() reads only .rasp files inside the program's directory tree
**     (resolved with realpath, so '..' and links cannot leave it), the
**     stdlib directory and include_dirs; other files are refused before
**     they are read, so no error ever quotes them. */
typedef struct rasp_access {
  int allow_ffi;                   /* 1: cfunc() binds C functions */
  const char *root;                /* the program's tree; NULL: the directory of the
                                      first file rasp_exec_file runs (before that,
                                      the current directory) */
  const char *const *include_dirs; /* more trees include() may read */
  int ninclude_dirs;
} rasp_access;

/* A context that traces for inputs of length n (1 <= n <= max_length). */
rasp_ctx *rasp_ctx_new(int n, const rasp_limits *limits, rasp_error *err);
void rasp_ctx_free(rasp_ctx *ctx);
/* Sets what programs run in ctx may reach (NULL: nothing, as in a new
** context).  Directories are resolved now; the strings are not kept.
** 1, or 0 with err when a directory does not exist. */
int rasp_set_access(rasp_ctx *ctx, const rasp_access *access, rasp_error *err);
int rasp_ctx_length(const rasp_ctx *ctx);

/* The vocabulary: symbol i (0-based) has token id i+1.  Defines the dicts
** `d` (symbol -> id) and `reverse_d` (id -> symbol) and `vocab_size`.
** Call before running programs that use them. */
int rasp_set_vocab(rasp_ctx *ctx, const char *const *symbols, int count,
                   rasp_error *err);
int rasp_vocab_size(const rasp_ctx *ctx);
const char *rasp_vocab_symbol(const rasp_ctx *ctx, int64_t token_id);
int64_t rasp_vocab_id(const rasp_ctx *ctx, const char *symbol); /* 0: none */

/* Sets a global to an integer, a boolean or a symbol (task parameters). */
void rasp_set_int(rasp_ctx *ctx, const char *name, int64_t value);
void rasp_set_bool(rasp_ctx *ctx, const char *name, int value);
void rasp_set_string(rasp_ctx *ctx, const char *name, const char *value);

/* Runs the stdlib (from dir, or the installed one when dir is NULL). */
int rasp_load_stdlib(rasp_ctx *ctx, const char *dir, rasp_error *err);
/* Runs a file or a string as a module in the global scope. */
int rasp_exec_file(rasp_ctx *ctx, const char *path, rasp_error *err);
int rasp_exec_string(rasp_ctx *ctx, const char *name, const char *text,
                     rasp_error *err);
/* Runs the program file at path (relative to the current directory) as
** include(path) would from the top level: a regular .rasp text file inside
** the trees rasp_access allows, opened once.  *text (when text is not
** NULL) gets a copy of the program that ran (free() it), NULL on error.
** For the REPL's :load. */
int rasp_load_file(rasp_ctx *ctx, const char *path, char **text, rasp_error *err);
/* The checks of rasp_load_file (a .rasp text file in the context's trees,
** opened once), without running it: its text into *text (malloc'd, the
** caller's free()).  1, or 0 with err. */
int rasp_read_program(rasp_ctx *ctx, const char *path, char **text, rasp_error *err);

/* Calls global function `entry` with the input sequence and records what it
** returns (a sequence, or a tuple of sequences) as the IR's outputs. */
int rasp_trace(rasp_ctx *ctx, const char *entry, rasp_error *err);
rasp_ir *rasp_ctx_ir(rasp_ctx *ctx);

/* Global lookups for front ends (the verifier reads task settings). */
int rasp_has_global(rasp_ctx *ctx, const char *name);
/* Integer global; 0 and err when missing or not an integer. */
int rasp_get_int(rasp_ctx *ctx, const char *name, int64_t *out,
                 rasp_error *err);

/* Reads entry `key` of the global dict `dict` as text: numbers in decimal,
** booleans True/False, strings as they are, lists as their items joined by
** single spaces.  Returns 1, 0 when the dict or the key is missing, -1 with
** err when the text does not fit in buf. */
int rasp_get_setting(rasp_ctx *ctx, const char *dict, const char *key, char *buf,
                     size_t size, rasp_error *err);

/* Calls fn with every key of the global dict `dict` (non-string keys as
** "?").  0 when there is no such dict. */
int rasp_dict_keys(rasp_ctx *ctx, const char *dict, void (*fn)(void *user, const char *key),
                   void *user);

/* Calls global function `name` with concrete arguments: each argument is
** either a list of elements (as a Python list) or a single element.
** Returns the truth of the result in *truth.  Used for output checks. */
typedef struct rasp_arg {
  const rasp_elem *elems; /* NULL: a single element in `elem` */
  int count;
  rasp_elem elem;
} rasp_arg;
int rasp_call_check(rasp_ctx *ctx, const char *name, const rasp_arg *args,
                    int nargs, int *truth, rasp_error *err);

/* Interns a symbol; the id stored in rasp_elem.num with den RASP_DEN_SYM. */
int64_t rasp_symbol(rasp_ctx *ctx, const char *text);

/* REPL support. */
/* What one REPL entry produced, for the front end to show. */
typedef struct rasp_repl_value {
  int node;     /* a sequence or selector: its IR node id; else -1 */
  int is_sel;   /* node is a selector */
  char *shown;  /* another value's text (malloc'd, caller frees); NULL for
                ** None, for a sequence or selector, and for statements */
  int assigned; /* the entry bound one name (x = e): the value above is
                ** x's, echoed; the entry is a statement to replay */
} rasp_repl_value;
/* Runs one REPL entry: statements, or an expression whose value is then
** shown.  An entry that is one assignment to a name (x = e, x = y = e)
** reports x's value the same way, with `assigned` set. */
int rasp_repl_entry(rasp_ctx *ctx, const char *text, rasp_repl_value *out, rasp_error *err);
/* Asks the code running in ctx to stop at its next step with the located
** error "interrupted" (on != 0), or withdraws the request (on == 0: a front
** end does so before an entry, so that a stale request cannot stop it).
** Async-signal-safe: a SIGINT handler may call it. */
void rasp_interrupt(rasp_ctx *ctx, int on);
/* Names of globals and builtins starting with prefix, for completion:
** calls fn for each. */
void rasp_complete(rasp_ctx *ctx, const char *prefix,
                   void (*fn)(void *user, const char *name), void *user);
/* Describes a global: its kind and, for a function, its parameters
** (malloc'd, caller frees); NULL when there is no such name. */
char *rasp_describe(rasp_ctx *ctx, const char *name);

/* The text of a vocabulary-or-symbol element for --symbols printing. */
int rasp_format_symbolic(const rasp_ctx *ctx, rasp_elem e, char *buf,
                         size_t size);

#endif
