/*
** fuzz_parse.c -- libFuzzer harness for the lexer and parser.
**
** The input bytes are used as a source whose text is NOT NUL-terminated
** (an exact-size heap copy), so that AddressSanitizer catches any read past
** src->len.  Each input is parsed, dumped (to /dev/null) on success, fed to
** raspP_incomplete as a NUL-terminated string, and everything is freed.
** A failed parse must leave a located error with the code RASP_E_SYNTAX.
**
**   clang -g -fsanitize=fuzzer,address,undefined -Irasp rasp/rmem.c \
**     rasp/rerror.c rasp/rlex.c rasp/rparse.c tests/fuzz_parse.c -o fuzz_parse
**   ./fuzz_parse -max_total_time=120 tests/fuzz_corpus
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlex.h"
#include "rparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!devnull) devnull = fopen("/dev/null", "w");
  rasp_source src;
  src.name = "<fuzz>";
  src.text = malloc(size ? size : 1);
  if (size) memcpy(src.text, data, size);
  src.len = size;

  rasp_arena arena;
  raspM_arena_init(&arena);
  rasp_error err;
  memset(&err, 0, sizeof err);
  rasp_ast *m = raspP_parse(&src, &arena, &err);
  if (m) {
    if (err.set) abort();
    if (devnull) raspP_dump(m, devnull);
  } else {
    if (!err.set || err.pos.line < 1 || err.pos.col < 1) abort();
    if (err.code != RASP_E_SYNTAX) abort(); /* callers tell syntax errors by the code */
  }
  raspM_arena_free(&arena);

  /* The lexer alone, to the end (it must always terminate). */
  raspM_arena_init(&arena);
  rasp_lexer *lx = raspX_new(&src, &arena);
  rasp_token t;
  for (size_t i = 0; i < 4 * size + 16; i++) {
    if (!raspX_next(lx, &t, &err) || t.kind == TK_EOF) break;
    if (i == 4 * size + 15) abort(); /* too many tokens: a loop */
  }
  raspM_arena_free(&arena);
  free(src.text);

  char *text = malloc(size + 1);
  if (size) memcpy(text, data, size);
  text[size] = '\0';
  (void)raspP_incomplete(text);
  free(text);
  return 0;
}
