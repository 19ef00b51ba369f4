/*
** rasp.c -- the `rasp` command: a thin front end over librasp.
**
** Dispatches to the subcommands in cli_*.c.  With no arguments on a
** terminal it starts the REPL; `rasp FILE` runs a file as a script.
**
** The budget options --max-memory and --timeout belong to every command,
** so they are taken out of the arguments here, before the command parses
** the rest (see rmem.h for what they do).
**
** Every command parses its options with the one table of cli_opts.c
** (--opt VALUE or --opt=VALUE, --help and --version in each, unknown and
** unused options refused); `rasp help CMD` prints the same help as `rasp
** CMD --help`.  A script's own arguments (after FILE) are left as they are.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rmem.h"

/* What verify and compile get without --max-memory: they run untrusted
** programs on many inputs, unattended. */
#define DEFAULT_MAX_MEMORY ((size_t)4 << 30)

/* BYTES with an optional K, M, G or T (powers of 1024); 0 is no limit. */
static int parse_bytes(const char *text, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (end == text || *text == '-' || errno) return 0;
  int shift = 0;
  switch (*end) {
  case 'k': case 'K': shift = 10; break;
  case 'm': case 'M': shift = 20; break;
  case 'g': case 'G': shift = 30; break;
  case 't': case 'T': shift = 40; break;
  case '\0': break;
  default: return 0;
  }
  if (shift && end[1]) return 0;
  if (v > (~0ULL >> shift) || v << shift > (unsigned long long)(size_t)-1) return 0;
  *out = (size_t)(v << shift);
  return 1;
}

/* Takes --max-memory BYTES and --timeout SECONDS (also --opt=VALUE) out of
** argv and applies them, with the defaults of the command argv[1] names.
** For a script (script: argv[1] names no command) only the options before
** FILE are rasp's; FILE and what follows are left to the script.
** Returns the new argc, or -1 after a message about a bad value. */
static int take_budgets(int argc, char **argv, int script) {
  size_t bytes = 0;
  int have_bytes = 0, out = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = NULL;
    if (script && a[0] != '-') { /* FILE: the rest is the script's */
      while (i < argc) argv[out++] = argv[i++];
      break;
    }
    if (script && strcmp(a, "--allow-include") == 0 && i + 1 < argc) {
      argv[out++] = argv[i++]; /* its DIR is no FILE */
      argv[out++] = argv[i];
      continue;
    }
    size_t len = strcspn(a, "=");
    int mem = len == 12 && strncmp(a, "--max-memory", 12) == 0;
    int tim = len == 9 && strncmp(a, "--timeout", 9) == 0;
    if (!mem && !tim) {
      argv[out++] = argv[i];
      continue;
    }
    if (a[len] == '=') val = a + len + 1;
    else if (i + 1 < argc) val = argv[++i];
    if (!val) {
      fprintf(stderr, "rasp: %.*s needs a value\n", (int)len, a);
      return -1;
    }
    if (mem) {
      if (!parse_bytes(val, &bytes)) {
        fprintf(stderr, "rasp: --max-memory: expected a number of bytes, optionally with K, M, "
                        "G or T (0: no limit), got '%s'\n", val);
        return -1;
      }
      have_bytes = 1;
    } else {
      char *end;
      errno = 0;
      long secs = strtol(val, &end, 10);
      if (end == val || *end || errno || secs < 0 || secs > 100000000L) {
        fprintf(stderr, "rasp: --timeout: expected whole seconds in 0..100000000 (0: none), "
                        "got '%s'\n", val);
        return -1;
      }
      raspM_set_timeout((unsigned)secs);
    }
  }
  argv[out] = NULL;
  if (!have_bytes && out > 1 &&
      (strcmp(argv[1], "verify") == 0 || strcmp(argv[1], "compile") == 0)) {
    bytes = DEFAULT_MAX_MEMORY;
    have_bytes = 1;
  }
  raspM_set_max_memory(have_bytes ? bytes : 0);
  return out;
}

static void usage(FILE *out) {
  fputs("usage: rasp [COMMAND] [ARGS]\n"
        "\n"
        "  rasp                         interactive REPL (on a terminal)\n"
        "  rasp [ACCESS] FILE [ARGS]    run a file as a script\n"
        "  rasp run FILE --input TEXT   trace main(seq) and print its output (a\n"
        "                               path-star program: one input of its task)\n"
        "  rasp trace FILE --input TEXT print the traced IR\n"
        "  rasp verify PROGRAM...       check path-star programs on random graphs\n"
        "  rasp layers PROGRAM          layer count as M grows\n"
        "  rasp draw PROGRAM            computation graph as Graphviz DOT\n"
        "  rasp gen                     generate path-star samples\n"
        "  rasp compile PROGRAM -o M    compile to transformer weights\n"
        "  rasp apply M --input TEXT    run a compiled model on one input\n"
        "  rasp repl                    the REPL\n"
        "\n"
        "\n"
        "Programs cannot call C functions or include files outside their own\n"
        "directory tree; every command that runs one (and ACCESS above) takes\n"
        "--allow-ffi and --allow-include DIR to allow it.\n"
        "  rasp help COMMAND            the command's options (rasp COMMAND --help)\n"
        "\n"
        "Options are written --opt VALUE or --opt=VALUE; each command takes --help,\n"
        "--version, and --max-memory BYTES (K/M/G suffixes) and\n"
        "--timeout SECONDS, which end it with a message and status 1 when exceeded\n"
        "(defaults: verify and compile 4G, no timeout).  Version " RASP_VERSION ".\n",
        out);
}

static const struct {
  const char *name;
  int (*fn)(int, char **);
} commands[] = {
    {"run", rasp_cli_run},       {"trace", rasp_cli_trace}, {"gen", rasp_cli_gen},
    {"verify", rasp_cli_verify}, {"layers", rasp_cli_layers}, {"draw", rasp_cli_draw},
    {"repl", rasp_cli_repl},     {"compile", rasp_cli_compile},
    {"apply", rasp_cli_apply},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* The edit distance of a and b (both short), for "did you mean". */
static int edit_distance(const char *a, const char *b) {
  int n = (int)strlen(b), row[32];
  if (n > 30 || strlen(a) > 30) return 99;
  for (int j = 0; j <= n; j++) row[j] = j;
  for (int i = 1; a[i - 1]; i++) {
    int diag = row[0];
    row[0] = i;
    for (int j = 1; j <= n; j++) {
      int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diag = up;
      row[j] = best;
    }
  }
  return row[n];
}

/* `rasp WORD` where WORD is neither a command nor a file: a mistyped
** command (rasp FILE runs a program file). */
static int unknown_command(const char *word) {
  const char *near = NULL;
  int best = 3; /* at most two edits away */
  for (size_t i = 0; i < NCOMMANDS; i++) {
    int d = edit_distance(word, commands[i].name);
    if (d < best) best = d, near = commands[i].name;
  }
  fprintf(stderr, "rasp: unknown command '%s'", word);
  if (near) fprintf(stderr, " (did you mean '%s'?)", near);
  fprintf(stderr, "; the commands: run trace verify layers draw gen compile apply repl, "
                  "and `rasp FILE.rasp` runs a program\n");
  return 2;
}

int main(int argc, char **argv) {
  int script = argc > 1;
  for (size_t i = 0; i < NCOMMANDS && script; i++)
    if (strcmp(argv[1], commands[i].name) == 0) script = 0;
  if (script && strcmp(argv[1], "help") == 0) script = 0;
  argc = take_budgets(argc, argv, script);
  if (argc < 0) return 2;
  if (argc < 2) {
    if (isatty(0)) return rasp_cli_repl(argc, argv);
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "help") == 0) {
    if (argc == 2) {
      usage(stdout);
      return 0;
    }
    unsigned cmd;
    if (raspC_command(argv[2], &cmd)) {
      raspC_usage(cmd, stdout);
      return 0;
    }
    fprintf(stderr, "rasp help: unknown command '%s'; the commands: run trace verify layers "
                    "draw gen compile apply repl\n", argv[2]);
    return 2;
  }
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(argv[1], commands[i].name) == 0) return commands[i].fn(argc - 1, argv + 1);
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    puts("rasp " RASP_VERSION);
    return 0;
  }
  if (strcmp(cmd, "--allow-ffi") == 0 || strcmp(cmd, "--allow-include") == 0)
    return rasp_cli_script(argc - 1, argv + 1);
  if (cmd[0] == '-') {
    fprintf(stderr, "rasp: unknown option '%s'\n", cmd);
    usage(stderr);
    return 2;
  }
  /* not a file and no path: a command mistyped, not a program */
  if (!strchr(cmd, '/') && !strchr(cmd, '.') && access(cmd, F_OK) != 0)
    return unknown_command(cmd);
  return rasp_cli_script(argc - 1, argv + 1);
}
