/*
** rlex.h -- the lexer: bytes to tokens, Python's indentation rules.
**
** Produces INDENT/DEDENT/NEWLINE tokens the way Python does: blank and
** comment-only lines are skipped, newlines inside (), [] and {} are ignored
** (implicit line joining), a backslash at the end of a line joins it with
** the next, and a dedent to a column that matches no open block is an error.
** Tabs advance to the next multiple of 8, as in Python.
*/
#ifndef RASP_RLEX_H
#define RASP_RLEX_H

#include <stddef.h>

#include "rerror.h"

#define RASP_TOKENS(X)                                                         \
  X(TK_EOF, "end of input") X(TK_NEWLINE, "newline")                           \
  X(TK_INDENT, "indent") X(TK_DEDENT, "dedent")                                \
  X(TK_NAME, "name") X(TK_NUM, "number") X(TK_STR, "string")                   \
  /* keywords */                                                               \
  X(TK_DEF, "'def'") X(TK_RETURN, "'return'") X(TK_IF, "'if'")                 \
  X(TK_ELIF, "'elif'") X(TK_ELSE, "'else'") X(TK_FOR, "'for'")                 \
  X(TK_WHILE, "'while'") X(TK_IN, "'in'") X(TK_NOT, "'not'")                   \
  X(TK_AND, "'and'") X(TK_OR, "'or'") X(TK_IS, "'is'")                         \
  X(TK_LAMBDA, "'lambda'") X(TK_PASS, "'pass'") X(TK_BREAK, "'break'")         \
  X(TK_CONTINUE, "'continue'") X(TK_ASSERT, "'assert'")                        \
  X(TK_TRUE, "'True'") X(TK_FALSE, "'False'") X(TK_NONE, "'None'")             \
  /* operators and punctuation */                                              \
  X(TK_PLUS, "'+'") X(TK_MINUS, "'-'") X(TK_STAR, "'*'")                       \
  X(TK_SLASH, "'/'") X(TK_DSLASH, "'//'") X(TK_PERCENT, "'%'")                 \
  X(TK_DSTAR, "'**'") X(TK_AMP, "'&'") X(TK_PIPE, "'|'")                       \
  X(TK_CARET, "'^'") X(TK_TILDE, "'~'") X(TK_LSHIFT, "'<<'")                   \
  X(TK_RSHIFT, "'>>'") X(TK_EQ, "'=='") X(TK_NE, "'!='") X(TK_LT, "'<'")       \
  X(TK_LE, "'<='") X(TK_GT, "'>'") X(TK_GE, "'>='") X(TK_ASSIGN, "'='")        \
  X(TK_PLUSEQ, "'+='") X(TK_MINUSEQ, "'-='") X(TK_STAREQ, "'*='")              \
  X(TK_SLASHEQ, "'/='") X(TK_DSLASHEQ, "'//='") X(TK_PERCENTEQ, "'%='")        \
  X(TK_AMPEQ, "'&='") X(TK_PIPEEQ, "'|='") X(TK_LPAREN, "'('")                 \
  X(TK_RPAREN, "')'") X(TK_LBRACKET, "'['") X(TK_RBRACKET, "']'")              \
  X(TK_LBRACE, "'{'") X(TK_RBRACE, "'}'") X(TK_COMMA, "','")                   \
  X(TK_COLON, "':'") X(TK_DOT, "'.'") X(TK_SEMI, "';'")                        \
  /* pseudo-operators used in AST_COMPARE only */                              \
  X(TK_NOTIN, "'not in'") X(TK_ISNOT, "'is not'")

typedef enum rasp_token_kind {
#define RASP_TK_ENUM(name, text) name,
  RASP_TOKENS(RASP_TK_ENUM)
#undef RASP_TK_ENUM
      TK__COUNT
} rasp_token_kind;

typedef struct rasp_token {
  rasp_token_kind kind;
  rasp_pos pos;
  const char *start; /* into the source text */
  size_t len;
  char *str;         /* TK_STR: decoded contents (arena); TK_NAME/TK_NUM: copy */
  size_t slen;
} rasp_token;

typedef struct rasp_lexer rasp_lexer; /* opaque */

/* The lexer allocates from arena (which the caller frees). */
struct rasp_arena;
rasp_lexer *raspX_new(const rasp_source *src, struct rasp_arena *arena);
/* Next token; on a lexical error returns 0 and sets err. */
int raspX_next(rasp_lexer *lx, rasp_token *tok, rasp_error *err);
const char *raspX_token_name(rasp_token_kind kind);

#endif
