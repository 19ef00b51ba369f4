#include <stdio.h>
#include "cli.h"
int rasp_cli_compile(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "rasp compile: not built yet\n"); return 2; }
