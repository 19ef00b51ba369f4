/*
** rparse.h -- the parser: tokens to a syntax tree (rast.h).
*/
#ifndef RASP_RPARSE_H
#define RASP_RPARSE_H

#include "rast.h"
#include "rerror.h"
#include "rmem.h"

/* Parses a whole source as a module.  Nodes come from arena.  Returns NULL
** and sets err (with the position of the offending token) on a syntax error.
** Nesting deeper than RASP_MAX_NESTING is an error, not a stack overflow. */
#define RASP_MAX_NESTING 200
rasp_ast *raspP_parse(const rasp_source *src, rasp_arena *arena,
                      rasp_error *err);

/* For the REPL: 1 when text is an incomplete statement that needs more
** lines (an open bracket, a block header ending in ':', or an indented
** block not yet closed by an empty line), 0 otherwise. */
int raspP_incomplete(const char *text);

/* Debugging and golden tests: an S-expression rendering of a tree. */
void raspP_dump(const rasp_ast *node, FILE *out);

#endif
