#include <stdio.h>
#include "cli.h"
int rasp_cli_verify(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "rasp verify: not built yet\n"); return 2; }
int rasp_cli_layers(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "rasp layers: not built yet\n"); return 2; }
int rasp_cli_draw(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "rasp draw: not built yet\n"); return 2; }
