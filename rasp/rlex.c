/*
** rlex.c -- the lexer: bytes to tokens, Python's indentation rules.
**
** The lexer works on a byte range (src->text, src->len) and never looks
** past its end, so it does not rely on the terminating NUL; a NUL byte
** inside the range is an error.  It keeps a stack of indentation columns
** and turns the start of every logical line into zero or one INDENT or
** any number of DEDENT tokens, exactly like Python's tokenizer:
**
**   - blank lines and comment-only lines produce nothing;
**   - inside (), [] and {} newlines are ignored (implicit line joining);
**   - a backslash immediately before a newline joins the two lines;
**   - NEWLINE is produced at the end of every logical line that holds a
**     token, including the last one when the file lacks a final '\n';
**   - at the end of input every open block is closed with a DEDENT.
**
** Tabs advance the indentation column to the next multiple of 8 and a form
** feed resets it to 0.  Columns in positions count bytes (1-based).
*/
#include "rlex.h"

#include <string.h>

#include "rmem.h"

/* Deeper indentation than this is an error.  The parser limits nesting to
** RASP_MAX_NESTING (200) anyway and stops well before. */
#define RASP_LEX_MAX_INDENT 512

struct rasp_lexer {
  const rasp_source *src;
  rasp_arena *arena;
  const char *p, *end;
  const char *bol;        /* start of the current physical line */
  int line;               /* 1-based line of p */
  int indent[RASP_LEX_MAX_INDENT];
  int nindent;            /* indent[0] == 0 always */
  int pending_dedents;
  int parens;             /* open brackets: newlines are ignored when > 0 */
  int at_bol;             /* at the start of a logical line */
  int line_has_tokens;    /* a token was produced on this logical line */
  int failed;             /* after an error only EOF is produced */
};

static const char *const token_names[] = {
#define RASP_TK_NAME(name, text) text,
    RASP_TOKENS(RASP_TK_NAME)
#undef RASP_TK_NAME
};

const char *raspX_token_name(rasp_token_kind kind) {
  if ((int)kind < 0 || kind >= TK__COUNT) return "?";
  return token_names[kind];
}

rasp_lexer *raspX_new(const rasp_source *src, struct rasp_arena *arena) {
  rasp_lexer *lx = raspM_arena_alloc(arena, sizeof *lx);
  lx->src = src;
  lx->arena = arena;
  lx->p = src->text;
  lx->end = src->text + src->len;
  lx->bol = lx->p;
  lx->line = 1;
  lx->nindent = 1;
  lx->indent[0] = 0;
  lx->at_bol = 1;
  return lx;
}

/* The byte k places ahead of p, or -1 past the end of the input. */
static int at(const rasp_lexer *lx, size_t k) {
  if ((size_t)(lx->end - lx->p) <= k) return -1;
  return (unsigned char)lx->p[k];
}

static rasp_pos pos_of(const rasp_lexer *lx, const char *q) {
  rasp_pos pos;
  pos.src = lx->src;
  pos.line = lx->line;
  pos.col = (int)(q - lx->bol) + 1;
  return pos;
}

static void newline_at(rasp_lexer *lx, const char *nl) {
  lx->line++;
  lx->bol = nl + 1;
}

static int fail(rasp_lexer *lx, rasp_error *err, rasp_pos pos,
                const char *msg, int ch) {
  if (ch < 0)
    raspR_setc(err, RASP_E_SYNTAX, pos, "%s", msg);
  else if (ch >= 0x21 && ch < 0x7f)
    raspR_setc(err, RASP_E_SYNTAX, pos, "%s '%c'", msg, ch);
  else
    raspR_setc(err, RASP_E_SYNTAX, pos, "%s '\\x%02x'", msg, ch);
  lx->failed = 1;
  lx->p = lx->end;
  return 0;
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_xdigit(int c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static int is_ident_start(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_ident(int c) { return is_ident_start(c) || is_digit(c); }

static const struct {
  const char *word;
  rasp_token_kind kind;
} keywords[] = {
    {"def", TK_DEF},       {"return", TK_RETURN},     {"if", TK_IF},
    {"elif", TK_ELIF},     {"else", TK_ELSE},         {"for", TK_FOR},
    {"while", TK_WHILE},   {"in", TK_IN},             {"not", TK_NOT},
    {"and", TK_AND},       {"or", TK_OR},             {"is", TK_IS},
    {"lambda", TK_LAMBDA}, {"pass", TK_PASS},         {"break", TK_BREAK},
    {"continue", TK_CONTINUE}, {"assert", TK_ASSERT}, {"True", TK_TRUE},
    {"False", TK_FALSE},   {"None", TK_NONE},
};

/* Measures the indentation of the line at p; skips blank and comment-only
** lines.  Returns 1 with *col set when a line with content starts at p,
** 0 at the end of input, -1 on a NUL byte (error set). */
static int indentation(rasp_lexer *lx, int *col, rasp_error *err) {
  for (;;) {
    int c = 0;
    *col = 0;
    while ((c = at(lx, 0)) == ' ' || c == '\t' || c == '\f' || c == '\r') {
      if (c == ' ')
        (*col)++;
      else if (c == '\t')
        *col = (*col / 8 + 1) * 8;
      else if (c == '\f')
        *col = 0;
      if (*col > 1000000) *col = 1000000; /* no overflow on huge lines */
      lx->p++;
    }
    if (c < 0) return 0;
    if (c == '\n') {
      newline_at(lx, lx->p);
      lx->p++;
      continue;
    }
    if (c == '#') {
      while ((c = at(lx, 0)) >= 0 && c != '\n') {
        if (c == 0) {
          fail(lx, err, pos_of(lx, lx->p), "unexpected NUL byte", -1);
          return -1;
        }
        lx->p++;
      }
      continue;
    }
    return 1;
  }
}

/* A number: decimal digits with an optional fraction and exponent, a
** fraction alone (".5"), or hex ("0x1f").  The text is kept verbatim. */
static int number(rasp_lexer *lx, rasp_token *tok, rasp_error *err) {
  const char *start = lx->p;
  if (at(lx, 0) == '0' && (at(lx, 1) == 'x' || at(lx, 1) == 'X')) {
    lx->p += 2;
    if (!is_xdigit(at(lx, 0)))
      return fail(lx, err, tok->pos, "bad number", -1);
    while (is_xdigit(at(lx, 0))) lx->p++;
  } else {
    while (is_digit(at(lx, 0))) lx->p++;
    if (at(lx, 0) == '.') {
      lx->p++;
      while (is_digit(at(lx, 0))) lx->p++;
    }
    if (at(lx, 0) == 'e' || at(lx, 0) == 'E') {
      size_t k = 1;
      if (at(lx, 1) == '+' || at(lx, 1) == '-') k = 2;
      if (!is_digit(at(lx, k)))
        return fail(lx, err, tok->pos, "bad number", -1);
      lx->p += k;
      while (is_digit(at(lx, 0))) lx->p++;
    }
  }
  if (is_ident(at(lx, 0))) return fail(lx, err, tok->pos, "bad number", -1);
  tok->kind = TK_NUM;
  tok->len = (size_t)(lx->p - start);
  tok->str = raspM_arena_strndup(lx->arena, start, tok->len);
  tok->slen = tok->len;
  return 1;
}

static int unterminated(rasp_lexer *lx, rasp_token *tok, rasp_error *err,
                        int triple) {
  return fail(lx, err, tok->pos,
              triple ? "unterminated triple-quoted string"
                     : "unterminated string",
              -1);
}

/* A string in '...', "...", '''...''' or """...""".  A first pass finds the
** end (and counts lines), a second decodes the escapes into the arena. */
static int string(rasp_lexer *lx, rasp_token *tok, rasp_error *err) {
  const char *start = lx->p;
  int q = at(lx, 0);
  int triple = at(lx, 1) == q && at(lx, 2) == q;
  size_t qlen = triple ? 3 : 1;
  lx->p += qlen;
  const char *body = lx->p, *body_end;
  for (;;) {
    int c = at(lx, 0);
    if (c < 0) return unterminated(lx, tok, err, triple);
    if (c == 0)
      return fail(lx, err, pos_of(lx, lx->p), "unexpected NUL byte", -1);
    if (c == '\\') {
      int d = at(lx, 1);
      if (d < 0) return unterminated(lx, tok, err, triple);
      if (d == 0)
        return fail(lx, err, pos_of(lx, lx->p + 1), "unexpected NUL byte", -1);
      if (d == '\n') newline_at(lx, lx->p + 1);
      lx->p += 2;
      continue;
    }
    if (c == '\n') {
      if (!triple) return unterminated(lx, tok, err, triple);
      newline_at(lx, lx->p);
      lx->p++;
      continue;
    }
    if (c == q && (!triple || (at(lx, 1) == q && at(lx, 2) == q))) {
      body_end = lx->p;
      lx->p += qlen;
      break;
    }
    lx->p++;
  }
  char *out = raspM_arena_alloc(lx->arena, (size_t)(body_end - body) + 1);
  size_t n = 0;
  for (const char *s = body; s < body_end; s++) {
    if (*s != '\\') {
      out[n++] = *s;
      continue;
    }
    char d = *++s; /* the first pass guarantees s < body_end */
    switch (d) {
    case 'n': out[n++] = '\n'; break;
    case 't': out[n++] = '\t'; break;
    case 'r': out[n++] = '\r'; break;
    case '0': out[n++] = '\0'; break;
    case '\\': out[n++] = '\\'; break;
    case '\'': out[n++] = '\''; break;
    case '"': out[n++] = '"'; break;
    case '\n': break; /* line continuation inside the string */
    default: /* unknown escape: kept as written, as Python does */
      out[n++] = '\\';
      out[n++] = d;
      break;
    }
  }
  out[n] = '\0';
  tok->kind = TK_STR;
  tok->str = out;
  tok->slen = n;
  tok->len = (size_t)(lx->p - start);
  return 1;
}

static int name(rasp_lexer *lx, rasp_token *tok) {
  const char *start = lx->p;
  while (is_ident(at(lx, 0))) lx->p++;
  size_t len = (size_t)(lx->p - start);
  tok->kind = TK_NAME;
  for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
    if (strlen(keywords[i].word) == len &&
        memcmp(keywords[i].word, start, len) == 0) {
      tok->kind = keywords[i].kind;
      break;
    }
  tok->len = len;
  tok->str = raspM_arena_strndup(lx->arena, start, len);
  tok->slen = len;
  return 1;
}

/* Operators and punctuation, longest match first. */
static int punct(rasp_lexer *lx, rasp_token *tok, rasp_error *err) {
  int c = at(lx, 0), d = at(lx, 1), e = at(lx, 2);
  rasp_token_kind k;
  size_t n = 1;
  switch (c) {
  case '+': k = d == '=' ? (n = 2, TK_PLUSEQ) : TK_PLUS; break;
  case '-': k = d == '=' ? (n = 2, TK_MINUSEQ) : TK_MINUS; break;
  case '*':
    if (d == '*') k = TK_DSTAR, n = 2;
    else if (d == '=') k = TK_STAREQ, n = 2;
    else k = TK_STAR;
    break;
  case '/':
    if (d == '/' && e == '=') k = TK_DSLASHEQ, n = 3;
    else if (d == '/') k = TK_DSLASH, n = 2;
    else if (d == '=') k = TK_SLASHEQ, n = 2;
    else k = TK_SLASH;
    break;
  case '%': k = d == '=' ? (n = 2, TK_PERCENTEQ) : TK_PERCENT; break;
  case '&': k = d == '=' ? (n = 2, TK_AMPEQ) : TK_AMP; break;
  case '|': k = d == '=' ? (n = 2, TK_PIPEEQ) : TK_PIPE; break;
  case '^': k = TK_CARET; break;
  case '~': k = TK_TILDE; break;
  case '<':
    if (d == '<') k = TK_LSHIFT, n = 2;
    else if (d == '=') k = TK_LE, n = 2;
    else k = TK_LT;
    break;
  case '>':
    if (d == '>') k = TK_RSHIFT, n = 2;
    else if (d == '=') k = TK_GE, n = 2;
    else k = TK_GT;
    break;
  case '=': k = d == '=' ? (n = 2, TK_EQ) : TK_ASSIGN; break;
  case '!':
    if (d != '=') return fail(lx, err, tok->pos, "unexpected character", c);
    k = TK_NE, n = 2;
    break;
  case '(': k = TK_LPAREN; lx->parens++; break;
  case '[': k = TK_LBRACKET; lx->parens++; break;
  case '{': k = TK_LBRACE; lx->parens++; break;
  case ')': k = TK_RPAREN; goto close;
  case ']': k = TK_RBRACKET; goto close;
  case '}': k = TK_RBRACE; goto close;
  close:
    if (lx->parens > 0) lx->parens--;
    break;
  case ',': k = TK_COMMA; break;
  case ':': k = TK_COLON; break;
  case '.': k = TK_DOT; break;
  case ';': k = TK_SEMI; break;
  default: return fail(lx, err, tok->pos, "unexpected character", c);
  }
  tok->kind = k;
  tok->len = n;
  lx->p += n;
  return 1;
}

int raspX_next(rasp_lexer *lx, rasp_token *tok, rasp_error *err) {
  memset(tok, 0, sizeof *tok);
  for (;;) {
    tok->pos = pos_of(lx, lx->p);
    tok->start = lx->p;
    if (lx->pending_dedents > 0) {
      lx->pending_dedents--;
      tok->kind = TK_DEDENT;
      return 1;
    }
    if (lx->failed) {
      tok->kind = TK_EOF;
      return 1;
    }
    if (lx->at_bol && lx->parens == 0) {
      int col, r = indentation(lx, &col, err);
      if (r < 0) return 0;
      lx->at_bol = 0;
      tok->pos = pos_of(lx, lx->p);
      tok->start = lx->p;
      if (r > 0) {
        int top = lx->indent[lx->nindent - 1];
        if (col > top) {
          if (lx->nindent == RASP_LEX_MAX_INDENT)
            return fail(lx, err, tok->pos, "nesting too deep", -1);
          lx->indent[lx->nindent++] = col;
          tok->kind = TK_INDENT;
          return 1;
        }
        if (col < top) {
          int n = 0;
          while (lx->nindent > 1 && lx->indent[lx->nindent - 1] > col) {
            lx->nindent--;
            n++;
          }
          if (lx->indent[lx->nindent - 1] != col)
            return fail(lx, err, tok->pos,
                        "unindent does not match any outer indentation level",
                        -1);
          lx->pending_dedents = n - 1;
          tok->kind = TK_DEDENT;
          return 1;
        }
      }
    }
    /* Skip blanks, comments and backslash continuations. */
    int c;
    for (;;) {
      c = at(lx, 0);
      if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
        lx->p++;
      } else if (c == '#') {
        while ((c = at(lx, 0)) >= 0 && c != '\n' && c != 0) lx->p++;
      } else if (c == '\\') {
        size_t k = 1;
        if (at(lx, 1) == '\r') k = 2;
        if (at(lx, k) < 0)
          return fail(lx, err, pos_of(lx, lx->p),
                      "unexpected end of input after '\\'", -1);
        if (at(lx, k) != '\n')
          return fail(lx, err, pos_of(lx, lx->p),
                      "unexpected character after line continuation", -1);
        newline_at(lx, lx->p + k);
        lx->p += k + 1;
      } else {
        break;
      }
    }
    tok->pos = pos_of(lx, lx->p);
    tok->start = lx->p;
    if (c < 0) {
      if (lx->line_has_tokens && lx->parens == 0) {
        lx->line_has_tokens = 0;
        tok->kind = TK_NEWLINE;
        return 1;
      }
      if (lx->nindent > 1 && lx->parens == 0) {
        lx->pending_dedents = lx->nindent - 1;
        lx->nindent = 1;
        continue;
      }
      tok->kind = TK_EOF;
      return 1;
    }
    if (c == '\n') {
      const char *nl = lx->p;
      lx->p++;
      newline_at(lx, nl);
      if (lx->parens > 0) continue;
      lx->at_bol = 1;
      if (!lx->line_has_tokens) continue;
      lx->line_has_tokens = 0;
      tok->kind = TK_NEWLINE;
      tok->len = 1;
      return 1;
    }
    if (c == 0) return fail(lx, err, tok->pos, "unexpected NUL byte", -1);
    int ok;
    if (is_digit(c) || (c == '.' && is_digit(at(lx, 1))))
      ok = number(lx, tok, err);
    else if (is_ident_start(c))
      ok = name(lx, tok);
    else if (c == '"' || c == '\'')
      ok = string(lx, tok, err);
    else
      ok = punct(lx, tok, err);
    if (!ok) return 0;
    lx->line_has_tokens = 1;
    return 1;
  }
}
