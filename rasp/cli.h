/*
** cli.h -- the subcommands of the `rasp` front end.
**
** Each subcommand takes its own argc/argv (argv[0] is the subcommand's
** name), prints its own errors and returns the process exit status:
** 0 success, 1 a failure the command reports (a program that fails
** verification, an error in a program), 2 bad usage (an option or file).
** After a rasp_error the status is raspR_exit_status's (rerror.h): it is
** decided by the error's code, never by its text.
*/
#ifndef RASP_CLI_H
#define RASP_CLI_H

#include "rasp.h"

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
/* --allow-ffi and --allow-include DIR, taken by every command that runs a
** program (rasp_access in rasp.h).  1: argv[*i] was one of them (*i moves
** past its value), 0: it was not, -1: a bad value (message printed).
** acc's directories point into argv; raspC_access_free releases the list. */
int raspC_access_opt(const char *cmd, int argc, char **argv, int *i, rasp_access *acc);
void raspC_access_free(rasp_access *acc);
/* Their lines for the usage texts. */
extern const char raspC_access_help[];
/* Prints a node's values for input b (one line), symbolically or not. */
/* Text inside a JSON string: quotes, backslashes and controls escaped. */
void raspC_json_fputs(const char *s, FILE *f);
void raspC_print_values(rasp_ctx *ctx, rasp_eval *ev, int node, int b, int symbolic, FILE *out);

#endif
