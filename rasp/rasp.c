/*
** rasp.c -- the `rasp` command: a thin front end over librasp.
**
** Dispatches to the subcommands in cli_*.c.  With no arguments on a
** terminal it starts the REPL; `rasp FILE` runs a file as a script.
*/
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void usage(FILE *out) {
  fputs("usage: rasp [COMMAND] [ARGS]\n"
        "\n"
        "  rasp                         interactive REPL (on a terminal)\n"
        "  rasp [ACCESS] FILE [ARGS]    run a file as a script\n"
        "  rasp run FILE --input TEXT   trace main(seq) and print its output\n"
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
        "Each command takes --help.  Version " RASP_VERSION ".\n",
        out);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    if (isatty(0)) return rasp_cli_repl(argc, argv);
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  static const struct {
    const char *name;
    int (*fn)(int, char **);
  } commands[] = {
      {"run", rasp_cli_run},       {"trace", rasp_cli_trace}, {"gen", rasp_cli_gen},
      {"verify", rasp_cli_verify}, {"layers", rasp_cli_layers}, {"draw", rasp_cli_draw},
      {"repl", rasp_cli_repl},     {"compile", rasp_cli_compile},
      {"apply", rasp_cli_apply},
  };
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(cmd, commands[i].name) == 0) return commands[i].fn(argc - 1, argv + 1);
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
  return rasp_cli_script(argc - 1, argv + 1);
}
