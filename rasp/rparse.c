/*
** rparse.c -- the parser: tokens to a syntax tree (rast.h).
**
** Design
** ------
** A hand-written recursive-descent parser in the style of chibicc: every
** grammar rule is one static function with the same name, and the rule
** itself is written in a comment above it, so the grammar can be read top
** to bottom in this file.  Operator precedence is encoded by the chain of
** rules (expr -> ifexp -> or_test -> ... -> power -> postfix -> atom), one
** rule per level, as in Python's own grammar; left-associative levels are
** loops, '**' is right-associative through power -> factor.
**
** The parser keeps the current token and, when asked, one token of
** lookahead (only needed to tell a keyword argument 'name=' from an
** expression).  The lexer (rlex.c) has already turned indentation into
** INDENT/DEDENT and line ends into NEWLINE, so blocks are ordinary
** bracketed constructs here.
**
** Errors.  The first error ends the parse: it is recorded with raspR_set
** (position of the offending token, a message naming what was expected and
** what was found) and the parser longjmps back to raspP_parse, which
** returns NULL.  Every node, list and string is allocated from the caller's
** arena, so nothing needs to be unwound and nothing leaks.  Lists are grown
** by doubling inside the arena (the abandoned copies die with the arena).
**
** Nesting.  Every rule that can recurse on nested source (expr, factor,
** power, not_test, block, target_atom) goes through enter()/leave(), which count
** the depth and fail with "nesting too deep" beyond RASP_MAX_NESTING, so
** hostile input such as 100000 '(' gives an error, not a stack overflow.
**
** Positions.  A node's pos is its first token, except BINOP whose pos is
** the operator (as rast.h documents).
**
** Dump format (raspP_dump)
** ------------------------
** One line, S-expressions, followed by a newline:
**   (module S...)          (expr E)          (assign T... V)
**   (augassign OP T V)     (return) | (return E)
**   (def NAME (params P...) S...)   P is NAME or (= NAME DEFAULT)
**   (if C (then S...) (else S...))   the else part only when present;
**                                    an elif is (else (if ...))
**   (for T I S...)  (while C S...)  (break) (continue) (pass)
**   (assert C) | (assert C M)
**   (num TEXT)  (str "ESCAPED")  (name X)  True  False  None
**   (tuple E...)  (list E...)  (dict (K V)...)
**   (binop OP A B)  (unary OP A)  (not A)  (and A B)  (or A B)
**   (compare A OP B OP C ...)   OP one of < > == >= <= != in not-in is is-not
**   (call F ARG... (kw NAME V)...)
**   (subscript A I)  (slice LO HI STEP)  with _ for a missing part
**   (attr A NAME)  (ifexp COND THEN ELSE)  (lambda (params P...) BODY)
**   (listcomp ELEM TARGET ITER COND...)
** OP is the operator's text without quotes (+ - * / // % ** & | ^ ~ << >>).
** Strings are written with C escapes (\n \t \r \\ \" and \xHH).
*/
#include "rparse.h"

#include <setjmp.h>
#include <stdarg.h>
#include <string.h>

#include "rlex.h"

typedef struct Parser {
  rasp_lexer *lx;
  rasp_arena *arena;
  rasp_error *err;
  rasp_token tok;   /* current token */
  rasp_token ahead; /* lookahead, valid when has_ahead */
  int has_ahead;
  int depth;        /* nesting, see enter() */
  int loops;        /* enclosing loops in the current function */
  jmp_buf jb;
} Parser;

/* ---- Lists grown inside the arena ---------------------------------- */

typedef struct AstVec {
  rasp_ast **v;
  int n, cap;
} AstVec;
typedef struct NameVec {
  const char **v;
  int n, cap;
} NameVec;
typedef struct IntVec {
  int *v;
  int n, cap;
} IntVec;

#define VEC_PUSH(p, vec, x)                                                    \
  do {                                                                         \
    if ((vec)->n == (vec)->cap) {                                              \
      int ncap_ = (vec)->cap ? (vec)->cap * 2 : 4;                             \
      void *nv_ = raspM_arena_alloc((p)->arena,                                \
                                    (size_t)ncap_ * sizeof *(vec)->v);         \
      if ((vec)->n) memcpy(nv_, (vec)->v, (size_t)(vec)->n * sizeof *(vec)->v);\
      (vec)->v = nv_;                                                          \
      (vec)->cap = ncap_;                                                      \
    }                                                                          \
    (vec)->v[(vec)->n++] = (x);                                                \
  } while (0)

static void push(Parser *p, AstVec *v, rasp_ast *x) { VEC_PUSH(p, v, x); }
static void push_name(Parser *p, NameVec *v, const char *x) {
  VEC_PUSH(p, v, x);
}
static void push_int(Parser *p, IntVec *v, int x) { VEC_PUSH(p, v, x); }

/* ---- Tokens and errors --------------------------------------------- */

static _Noreturn void fail(Parser *p, rasp_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static _Noreturn void fail(Parser *p, rasp_pos pos, const char *fmt, ...) {
  char msg[sizeof p->err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  raspR_setc(p->err, RASP_E_SYNTAX, pos, "%s", msg);
  longjmp(p->jb, 1);
}

/* How a token is named in "but found ...". */
static const char *describe(const rasp_token *t, char *buf, size_t size) {
  switch (t->kind) {
  case TK_NAME:
  case TK_NUM:
    snprintf(buf, size, "'%.*s'", t->len > 40 ? 40 : (int)t->len, t->start);
    return buf;
  case TK_STR: return "a string";
  default: return raspX_token_name(t->kind);
  }
}

static _Noreturn void fail_expected(Parser *p, const char *what) {
  char buf[64];
  fail(p, p->tok.pos, "expected %s but found %s", what,
       describe(&p->tok, buf, sizeof buf));
}

static void lex(Parser *p, rasp_token *t) {
  if (!raspX_next(p->lx, t, p->err)) longjmp(p->jb, 1);
}

static void advance(Parser *p) {
  if (p->has_ahead) {
    p->tok = p->ahead;
    p->has_ahead = 0;
  } else {
    lex(p, &p->tok);
  }
}

static const rasp_token *peek(Parser *p) {
  if (!p->has_ahead) {
    lex(p, &p->ahead);
    p->has_ahead = 1;
  }
  return &p->ahead;
}

static int at(Parser *p, rasp_token_kind k) { return p->tok.kind == k; }

static int accept(Parser *p, rasp_token_kind k) {
  if (p->tok.kind != k) return 0;
  advance(p);
  return 1;
}

static rasp_token expect(Parser *p, rasp_token_kind k) {
  if (p->tok.kind != k) fail_expected(p, raspX_token_name(k));
  rasp_token t = p->tok;
  advance(p);
  return t;
}

static const char *expect_name(Parser *p) {
  if (!at(p, TK_NAME)) fail_expected(p, "a name");
  const char *s = p->tok.str;
  advance(p);
  return s;
}

static void enter(Parser *p) {
  if (++p->depth > RASP_MAX_NESTING) fail(p, p->tok.pos, "nesting too deep");
}
static void leave(Parser *p) { p->depth--; }

static rasp_ast *new_node(Parser *p, rasp_ast_kind kind, rasp_pos pos) {
  rasp_ast *n = raspM_arena_alloc(p->arena, sizeof *n);
  n->kind = kind;
  n->pos = pos;
  return n;
}

static rasp_ast *new_binary(Parser *p, rasp_ast_kind kind, rasp_pos pos,
                            rasp_ast *a, rasp_ast *b) {
  rasp_ast *n = new_node(p, kind, pos);
  n->a = a;
  n->b = b;
  return n;
}

/* Can the current token start an expression? (ends trailing-comma lists) */
static int starts_expr(Parser *p) {
  switch (p->tok.kind) {
  case TK_NAME: case TK_NUM: case TK_STR: case TK_TRUE: case TK_FALSE:
  case TK_NONE: case TK_LPAREN: case TK_LBRACKET: case TK_LBRACE:
  case TK_MINUS: case TK_PLUS: case TK_TILDE: case TK_NOT: case TK_LAMBDA:
    return 1;
  default:
    return 0;
  }
}

/* ---- Grammar: statements ------------------------------------------- */

static void statement(Parser *p, AstVec *out);
static rasp_ast *expr(Parser *p);
static rasp_ast *exprlist(Parser *p);
static rasp_ast *or_test(Parser *p);
static rasp_ast *factor(Parser *p);
static rasp_ast *target_list(Parser *p);

/* module = (NEWLINE | statement)* EOF */
static rasp_ast *module(Parser *p) {
  rasp_ast *m = new_node(p, AST_MODULE, p->tok.pos);
  AstVec body = {0};
  while (!at(p, TK_EOF))
    if (!accept(p, TK_NEWLINE)) statement(p, &body);
  m->items = body.v;
  m->nitems = body.n;
  return m;
}

static const char *target_desc(const rasp_ast *t) {
  switch (t->kind) {
  case AST_NUM: case AST_STR: return "literal";
  case AST_TRUE: return "True";
  case AST_FALSE: return "False";
  case AST_NONE: return "None";
  case AST_CALL: return "function call";
  case AST_COMPARE: return "comparison";
  case AST_LAMBDA: return "lambda";
  case AST_DICT: return "dict display";
  case AST_LISTCOMP: return "list comprehension";
  case AST_IFEXP: return "conditional expression";
  default: return "expression";
  }
}

/* target = NAME | SUBSCRIPT | ATTR | TUPLE/LIST of targets (not for aug) */
static void check_target(Parser *p, rasp_ast *t, int aug) {
  switch (t->kind) {
  case AST_NAME: case AST_SUBSCRIPT: case AST_ATTR:
    return;
  case AST_TUPLE: case AST_LIST:
    if (aug) fail(p, t->pos, "illegal target for augmented assignment");
    for (int i = 0; i < t->nitems; i++) check_target(p, t->items[i], 0);
    return;
  default:
    fail(p, t->pos, "cannot assign to %s", target_desc(t));
  }
}

static int augassign_op(rasp_token_kind k) {
  switch (k) {
  case TK_PLUSEQ: return TK_PLUS;
  case TK_MINUSEQ: return TK_MINUS;
  case TK_STAREQ: return TK_STAR;
  case TK_SLASHEQ: return TK_SLASH;
  case TK_DSLASHEQ: return TK_DSLASH;
  case TK_PERCENTEQ: return TK_PERCENT;
  case TK_AMPEQ: return TK_AMP;
  case TK_PIPEEQ: return TK_PIPE;
  default: return -1;
  }
}

/* expr_stmt = exprlist (augassign_op exprlist | ('=' exprlist)*)
** augassign_op = '+=' | '-=' | '*=' | '/=' | '//=' | '%=' | '&=' | '|=' */
static rasp_ast *expr_stmt(Parser *p) {
  rasp_pos pos = p->tok.pos;
  rasp_ast *first = exprlist(p);
  int op = augassign_op(p->tok.kind);
  if (op >= 0) {
    check_target(p, first, 1);
    advance(p);
    rasp_ast *n = new_binary(p, AST_AUGASSIGN, pos, first, exprlist(p));
    n->op = op;
    return n;
  }
  if (!at(p, TK_ASSIGN)) {
    rasp_ast *n = new_node(p, AST_EXPR, pos);
    n->a = first;
    return n;
  }
  AstVec targets = {0};
  rasp_ast *value = first;
  while (accept(p, TK_ASSIGN)) {
    check_target(p, value, 0);
    push(p, &targets, value);
    value = exprlist(p);
  }
  rasp_ast *n = new_node(p, AST_ASSIGN, pos);
  n->items = targets.v;
  n->nitems = targets.n;
  n->a = value;
  return n;
}

/* return_stmt = 'return' [exprlist] */
static rasp_ast *return_stmt(Parser *p) {
  rasp_ast *n = new_node(p, AST_RETURN, expect(p, TK_RETURN).pos);
  if (starts_expr(p)) n->a = exprlist(p);
  return n;
}

/* assert_stmt = 'assert' expr [',' expr] */
static rasp_ast *assert_stmt(Parser *p) {
  rasp_ast *n = new_node(p, AST_ASSERT, expect(p, TK_ASSERT).pos);
  n->a = expr(p);
  if (accept(p, TK_COMMA)) n->b = expr(p);
  return n;
}

/* simple_stmt = 'pass' | 'break' | 'continue' | return_stmt | assert_stmt
**             | expr_stmt */
static rasp_ast *simple_stmt(Parser *p) {
  rasp_pos pos = p->tok.pos;
  switch (p->tok.kind) {
  case TK_PASS: advance(p); return new_node(p, AST_PASS, pos);
  case TK_BREAK:
  case TK_CONTINUE: {
    int brk = at(p, TK_BREAK);
    if (!p->loops)
      fail(p, pos, "'%s' outside loop", brk ? "break" : "continue");
    advance(p);
    return new_node(p, brk ? AST_BREAK : AST_CONTINUE, pos);
  }
  case TK_RETURN: return return_stmt(p);
  case TK_ASSERT: return assert_stmt(p);
  case TK_INDENT: fail(p, pos, "unexpected indent");
  case TK_DEDENT: fail(p, pos, "unexpected dedent");
  default:
    if (!starts_expr(p)) fail_expected(p, "a statement");
    return expr_stmt(p);
  }
}

/* simple_stmts = simple_stmt (';' simple_stmt)* [';'] NEWLINE */
static void simple_stmts(Parser *p, AstVec *out) {
  push(p, out, simple_stmt(p));
  while (accept(p, TK_SEMI) && !at(p, TK_NEWLINE))
    push(p, out, simple_stmt(p));
  expect(p, TK_NEWLINE);
}

/* block = simple_stmts | NEWLINE INDENT statement+ DEDENT */
static void block(Parser *p, rasp_ast ***items, int *nitems) {
  AstVec body = {0};
  enter(p);
  if (!accept(p, TK_NEWLINE)) {
    simple_stmts(p, &body);
  } else {
    if (!at(p, TK_INDENT)) fail_expected(p, "an indented block");
    advance(p);
    while (!at(p, TK_DEDENT) && !at(p, TK_EOF)) statement(p, &body);
    expect(p, TK_DEDENT);
  }
  leave(p);
  *items = body.v;
  *nitems = body.n;
}

/* params = param (',' param)* [',']      (ending at ')' or ':')
** param  = NAME ['=' expr] */
static void params(Parser *p, rasp_ast *n, rasp_token_kind close) {
  NameVec names = {0};
  AstVec defaults = {0};
  while (!at(p, close)) {
    rasp_pos pos = p->tok.pos;
    const char *name = expect_name(p);
    for (int i = 0; i < names.n; i++)
      if (strcmp(names.v[i], name) == 0)
        fail(p, pos, "duplicate parameter '%s'", name);
    push_name(p, &names, name);
    if (accept(p, TK_ASSIGN))
      push(p, &defaults, expr(p));
    else if (defaults.n)
      fail(p, pos, "parameter without a default follows parameter with a "
                   "default");
    if (!accept(p, TK_COMMA)) break;
  }
  n->names = names.v;
  n->nnames = names.n;
  n->items2 = defaults.v;
  n->nitems2 = defaults.n;
}

/* def_stmt = 'def' NAME '(' params ')' ':' block */
static rasp_ast *def_stmt(Parser *p) {
  rasp_ast *n = new_node(p, AST_DEF, expect(p, TK_DEF).pos);
  n->str = expect_name(p);
  expect(p, TK_LPAREN);
  params(p, n, TK_RPAREN);
  expect(p, TK_RPAREN);
  expect(p, TK_COLON);
  int loops = p->loops;
  p->loops = 0;
  block(p, &n->items, &n->nitems);
  p->loops = loops;
  return n;
}

/* if_stmt = 'if' expr ':' block ('elif' expr ':' block)* ['else' ':' block] */
static rasp_ast *if_stmt(Parser *p) {
  rasp_ast *top = new_node(p, AST_IF, expect(p, TK_IF).pos);
  rasp_ast *cur = top;
  cur->a = expr(p);
  expect(p, TK_COLON);
  block(p, &cur->items, &cur->nitems);
  while (at(p, TK_ELIF)) {
    rasp_ast *n = new_node(p, AST_IF, p->tok.pos);
    advance(p);
    n->a = expr(p);
    expect(p, TK_COLON);
    block(p, &n->items, &n->nitems);
    cur->items2 = raspM_arena_alloc(p->arena, sizeof *cur->items2);
    cur->items2[0] = n;
    cur->nitems2 = 1;
    cur = n;
  }
  if (accept(p, TK_ELSE)) {
    expect(p, TK_COLON);
    block(p, &cur->items2, &cur->nitems2);
  }
  return top;
}

/* for_stmt = 'for' target_list 'in' exprlist ':' block */
static rasp_ast *for_stmt(Parser *p) {
  rasp_ast *n = new_node(p, AST_FOR, expect(p, TK_FOR).pos);
  n->a = target_list(p);
  expect(p, TK_IN);
  n->b = exprlist(p);
  expect(p, TK_COLON);
  p->loops++;
  block(p, &n->items, &n->nitems);
  p->loops--;
  return n;
}

/* while_stmt = 'while' expr ':' block */
static rasp_ast *while_stmt(Parser *p) {
  rasp_ast *n = new_node(p, AST_WHILE, expect(p, TK_WHILE).pos);
  n->a = expr(p);
  expect(p, TK_COLON);
  p->loops++;
  block(p, &n->items, &n->nitems);
  p->loops--;
  return n;
}

/* statement = def_stmt | if_stmt | for_stmt | while_stmt | simple_stmts */
static void statement(Parser *p, AstVec *out) {
  switch (p->tok.kind) {
  case TK_DEF: push(p, out, def_stmt(p)); break;
  case TK_IF: push(p, out, if_stmt(p)); break;
  case TK_FOR: push(p, out, for_stmt(p)); break;
  case TK_WHILE: push(p, out, while_stmt(p)); break;
  default: simple_stmts(p, out); break;
  }
}

/* ---- Grammar: targets ---------------------------------------------- */

/* target_atom = NAME | '(' target_list ')' | '[' target_list ']' */
static rasp_ast *target_atom(Parser *p) {
  rasp_pos pos = p->tok.pos;
  if (at(p, TK_NAME)) {
    rasp_ast *n = new_node(p, AST_NAME, pos);
    n->str = expect_name(p);
    return n;
  }
  rasp_token_kind close;
  if (accept(p, TK_LPAREN))
    close = TK_RPAREN;
  else if (accept(p, TK_LBRACKET))
    close = TK_RBRACKET;
  else
    fail_expected(p, "a name");
  enter(p);
  rasp_ast *n = target_list(p);
  n->pos = pos;
  leave(p);
  expect(p, close);
  return n;
}

/* target_list = target_atom (',' target_atom)* [',']
** A single target without a comma is itself; otherwise a TUPLE. */
static rasp_ast *target_list(Parser *p) {
  rasp_pos pos = p->tok.pos;
  rasp_ast *first = target_atom(p);
  if (!at(p, TK_COMMA)) return first;
  AstVec items = {0};
  push(p, &items, first);
  while (accept(p, TK_COMMA)) {
    if (!at(p, TK_NAME) && !at(p, TK_LPAREN) && !at(p, TK_LBRACKET)) break;
    push(p, &items, target_atom(p));
  }
  rasp_ast *n = new_node(p, AST_TUPLE, pos);
  n->items = items.v;
  n->nitems = items.n;
  return n;
}

/* ---- Grammar: expressions ------------------------------------------ */

/* exprlist = expr (',' expr)* [',']
** Without a comma the expression itself; otherwise a TUPLE. */
static rasp_ast *exprlist(Parser *p) {
  rasp_pos pos = p->tok.pos;
  rasp_ast *first = expr(p);
  if (!at(p, TK_COMMA)) return first;
  AstVec items = {0};
  push(p, &items, first);
  while (accept(p, TK_COMMA) && starts_expr(p)) push(p, &items, expr(p));
  rasp_ast *n = new_node(p, AST_TUPLE, pos);
  n->items = items.v;
  n->nitems = items.n;
  return n;
}

/* lambda_expr = 'lambda' params ':' expr */
static rasp_ast *lambda_expr(Parser *p) {
  rasp_ast *n = new_node(p, AST_LAMBDA, expect(p, TK_LAMBDA).pos);
  params(p, n, TK_COLON);
  expect(p, TK_COLON);
  n->a = expr(p);
  return n;
}

/* ifexp = or_test ['if' or_test 'else' expr] */
static rasp_ast *ifexp(Parser *p) {
  rasp_pos pos = p->tok.pos;
  rasp_ast *then = or_test(p);
  if (!accept(p, TK_IF)) return then;
  rasp_ast *n = new_node(p, AST_IFEXP, pos);
  n->b = then;
  n->a = or_test(p);
  expect(p, TK_ELSE);
  n->c = expr(p);
  return n;
}

/* expr = lambda_expr | ifexp */
static rasp_ast *expr(Parser *p) {
  enter(p);
  rasp_ast *n = at(p, TK_LAMBDA) ? lambda_expr(p) : ifexp(p);
  leave(p);
  return n;
}

/* not_test = 'not' not_test | comparison */
static rasp_ast *comparison(Parser *p);
static rasp_ast *not_test(Parser *p) {
  if (!at(p, TK_NOT)) return comparison(p);
  rasp_ast *n = new_node(p, AST_NOT, p->tok.pos);
  advance(p);
  enter(p);
  n->a = not_test(p);
  leave(p);
  return n;
}

/* and_test = not_test ('and' not_test)* */
static rasp_ast *and_test(Parser *p) {
  rasp_pos pos = p->tok.pos;
  rasp_ast *n = not_test(p);
  while (accept(p, TK_AND)) n = new_binary(p, AST_AND, pos, n, not_test(p));
  return n;
}

/* or_test = and_test ('or' and_test)* */
static rasp_ast *or_test(Parser *p) {
  rasp_pos pos = p->tok.pos;
  rasp_ast *n = and_test(p);
  while (accept(p, TK_OR)) n = new_binary(p, AST_OR, pos, n, and_test(p));
  return n;
}

/* comp_op = '<' | '>' | '==' | '>=' | '<=' | '!=' | 'in' | 'not' 'in'
**         | 'is' ['not']
** Returns the operator (TK_NOTIN, TK_ISNOT for the pairs), or -1 when the
** current token is not a comparison operator. */
static int comp_op(Parser *p) {
  rasp_token_kind k = p->tok.kind;
  switch (k) {
  case TK_LT: case TK_GT: case TK_EQ: case TK_GE: case TK_LE: case TK_NE:
  case TK_IN:
    advance(p);
    return k;
  case TK_NOT:
    advance(p);
    expect(p, TK_IN);
    return TK_NOTIN;
  case TK_IS:
    advance(p);
    return accept(p, TK_NOT) ? TK_ISNOT : TK_IS;
  default:
    return -1;
  }
}

/* comparison = bitor (comp_op bitor)* */
static rasp_ast *bitor(Parser *p);
static rasp_ast *comparison(Parser *p) {
  rasp_pos pos = p->tok.pos;
  rasp_ast *first = bitor(p);
  int op = comp_op(p);
  if (op < 0) return first;
  AstVec items = {0};
  IntVec ops = {0};
  push(p, &items, first);
  do {
    push_int(p, &ops, op);
    push(p, &items, bitor(p));
  } while ((op = comp_op(p)) >= 0);
  rasp_ast *n = new_node(p, AST_COMPARE, pos);
  n->items = items.v;
  n->nitems = items.n;
  n->ops = ops.v;
  return n;
}

/* One left-associative binary level: sub (op sub)* for the ops in kinds. */
static rasp_ast *binary_level(Parser *p, rasp_ast *(*sub)(Parser *),
                              const rasp_token_kind *kinds, int nkinds) {
  rasp_ast *n = sub(p);
  for (;;) {
    int i = 0;
    while (i < nkinds && p->tok.kind != kinds[i]) i++;
    if (i == nkinds) return n;
    rasp_pos pos = p->tok.pos;
    advance(p);
    n = new_binary(p, AST_BINOP, pos, n, sub(p));
    n->op = kinds[i];
  }
}

/* term = factor (('*' | '/' | '//' | '%') factor)* */
static rasp_ast *term(Parser *p) {
  static const rasp_token_kind k[] = {TK_STAR, TK_SLASH, TK_DSLASH,
                                      TK_PERCENT};
  return binary_level(p, factor, k, 4);
}

/* arith = term (('+' | '-') term)* */
static rasp_ast *arith(Parser *p) {
  static const rasp_token_kind k[] = {TK_PLUS, TK_MINUS};
  return binary_level(p, term, k, 2);
}

/* shift = arith (('<<' | '>>') arith)* */
static rasp_ast *shift(Parser *p) {
  static const rasp_token_kind k[] = {TK_LSHIFT, TK_RSHIFT};
  return binary_level(p, arith, k, 2);
}

/* bitand = shift ('&' shift)* */
static rasp_ast *bitand(Parser *p) {
  static const rasp_token_kind k[] = {TK_AMP};
  return binary_level(p, shift, k, 1);
}

/* bitxor = bitand ('^' bitand)* */
static rasp_ast *bitxor(Parser *p) {
  static const rasp_token_kind k[] = {TK_CARET};
  return binary_level(p, bitand, k, 1);
}

/* bitor = bitxor ('|' bitxor)* */
static rasp_ast *bitor(Parser *p) {
  static const rasp_token_kind k[] = {TK_PIPE};
  return binary_level(p, bitxor, k, 1);
}

/* power = postfix ['**' factor] */
static rasp_ast *postfix(Parser *p);
static rasp_ast *power(Parser *p) {
  rasp_ast *n = postfix(p);
  if (!at(p, TK_DSTAR)) return n;
  rasp_pos pos = p->tok.pos;
  advance(p);
  enter(p);
  n = new_binary(p, AST_BINOP, pos, n, factor(p));
  leave(p);
  n->op = TK_DSTAR;
  return n;
}

/* factor = ('+' | '-' | '~') factor | power */
static rasp_ast *factor(Parser *p) {
  if (!at(p, TK_PLUS) && !at(p, TK_MINUS) && !at(p, TK_TILDE)) return power(p);
  rasp_ast *n = new_node(p, AST_UNARY, p->tok.pos);
  n->op = p->tok.kind;
  advance(p);
  enter(p);
  n->a = factor(p);
  leave(p);
  return n;
}

/* comp_for = 'for' target_list 'in' or_test ('if' or_test)*
** Fills a LISTCOMP node whose element is already set. */
static void comp_for(Parser *p, rasp_ast *n) {
  expect(p, TK_FOR);
  n->b = target_list(p);
  expect(p, TK_IN);
  n->c = or_test(p);
  AstVec conds = {0};
  while (accept(p, TK_IF)) push(p, &conds, or_test(p));
  n->items = conds.v;
  n->nitems = conds.n;
}

/* arguments = [argument (',' argument)* [',']]
** argument  = NAME '=' expr | expr
** A sole argument followed by comp_for is a generator, built as LISTCOMP. */
static void arguments(Parser *p, rasp_ast *call) {
  AstVec args = {0}, kwvals = {0};
  NameVec kwnames = {0};
  while (!at(p, TK_RPAREN)) {
    rasp_pos pos = p->tok.pos;
    if (at(p, TK_NAME) && peek(p)->kind == TK_ASSIGN) {
      const char *name = p->tok.str;
      for (int i = 0; i < kwnames.n; i++)
        if (strcmp(kwnames.v[i], name) == 0)
          fail(p, pos, "keyword argument repeated: '%s'", name);
      advance(p);
      advance(p);
      push_name(p, &kwnames, name);
      push(p, &kwvals, expr(p));
    } else {
      if (kwnames.n) fail(p, pos, "positional argument follows keyword argument");
      rasp_ast *e = expr(p);
      if (at(p, TK_FOR) && args.n == 0) {
        rasp_ast *lc = new_node(p, AST_LISTCOMP, pos);
        lc->a = e;
        comp_for(p, lc);
        push(p, &args, lc);
        if (!at(p, TK_RPAREN)) fail_expected(p, "')'");
        break;
      }
      push(p, &args, e);
    }
    if (!accept(p, TK_COMMA)) break;
  }
  call->items = args.v;
  call->nitems = args.n;
  call->names = kwnames.v;
  call->nnames = kwnames.n;
  call->items2 = kwvals.v;
  call->nitems2 = kwvals.n;
}

/* subscript = expr | [expr] ':' [expr] [':' [expr]] */
static rasp_ast *subscript(Parser *p) {
  rasp_pos pos = p->tok.pos;
  rasp_ast *lo = NULL;
  if (!at(p, TK_COLON)) {
    lo = expr(p);
    if (!at(p, TK_COLON)) return lo;
  }
  rasp_ast *n = new_node(p, AST_SLICE, pos);
  n->a = lo;
  expect(p, TK_COLON);
  if (starts_expr(p)) n->b = expr(p);
  if (accept(p, TK_COLON) && starts_expr(p)) n->c = expr(p);
  return n;
}

/* subscript_list = subscript (',' subscript)* [',']
** Several subscripts (or one with a trailing comma) make a TUPLE. */
static rasp_ast *subscript_list(Parser *p) {
  rasp_pos pos = p->tok.pos;
  rasp_ast *first = subscript(p);
  if (!at(p, TK_COMMA)) return first;
  AstVec items = {0};
  push(p, &items, first);
  while (accept(p, TK_COMMA) && (starts_expr(p) || at(p, TK_COLON)))
    push(p, &items, subscript(p));
  rasp_ast *n = new_node(p, AST_TUPLE, pos);
  n->items = items.v;
  n->nitems = items.n;
  return n;
}

/* trailer = '(' arguments ')' | '[' subscript_list ']' | '.' NAME */
static rasp_ast *trailer(Parser *p, rasp_ast *lhs, rasp_pos start) {
  rasp_ast *n;
  if (accept(p, TK_LPAREN)) {
    n = new_node(p, AST_CALL, start);
    n->a = lhs;
    arguments(p, n);
    expect(p, TK_RPAREN);
  } else if (accept(p, TK_LBRACKET)) {
    n = new_binary(p, AST_SUBSCRIPT, start, lhs, subscript_list(p));
    expect(p, TK_RBRACKET);
  } else {
    expect(p, TK_DOT);
    n = new_node(p, AST_ATTR, start);
    n->a = lhs;
    n->str = expect_name(p);
  }
  return n;
}

/* postfix = atom trailer* */
static rasp_ast *atom(Parser *p);
static rasp_ast *postfix(Parser *p) {
  rasp_pos start = p->tok.pos;
  rasp_ast *n = atom(p);
  while (at(p, TK_LPAREN) || at(p, TK_LBRACKET) || at(p, TK_DOT))
    n = trailer(p, n, start);
  return n;
}

/* paren_display = '(' [expr (comp_for | (',' expr)* [','])] ')'
** '(x)' is x itself, '()' and '(x,)' are tuples, '(e for ...)' a LISTCOMP. */
static rasp_ast *paren_display(Parser *p) {
  rasp_pos pos = expect(p, TK_LPAREN).pos;
  rasp_ast *n;
  if (at(p, TK_RPAREN)) {
    n = new_node(p, AST_TUPLE, pos);
  } else {
    rasp_ast *first = expr(p);
    if (at(p, TK_FOR)) {
      n = new_node(p, AST_LISTCOMP, pos);
      n->a = first;
      comp_for(p, n);
    } else if (!at(p, TK_COMMA)) {
      n = first;
    } else {
      AstVec items = {0};
      push(p, &items, first);
      while (accept(p, TK_COMMA) && starts_expr(p)) push(p, &items, expr(p));
      n = new_node(p, AST_TUPLE, pos);
      n->items = items.v;
      n->nitems = items.n;
    }
  }
  expect(p, TK_RPAREN);
  return n;
}

/* list_display = '[' [expr (comp_for | (',' expr)* [','])] ']' */
static rasp_ast *list_display(Parser *p) {
  rasp_pos pos = expect(p, TK_LBRACKET).pos;
  rasp_ast *n = new_node(p, AST_LIST, pos);
  if (!at(p, TK_RBRACKET)) {
    rasp_ast *first = expr(p);
    if (at(p, TK_FOR)) {
      n->kind = AST_LISTCOMP;
      n->a = first;
      comp_for(p, n);
    } else {
      AstVec items = {0};
      push(p, &items, first);
      while (accept(p, TK_COMMA) && starts_expr(p)) push(p, &items, expr(p));
      n->items = items.v;
      n->nitems = items.n;
    }
  }
  expect(p, TK_RBRACKET);
  return n;
}

/* dict_display = '{' [expr ':' expr (',' expr ':' expr)* [',']] '}' */
static rasp_ast *dict_display(Parser *p) {
  rasp_pos pos = expect(p, TK_LBRACE).pos;
  rasp_ast *n = new_node(p, AST_DICT, pos);
  AstVec keys = {0}, values = {0};
  while (!at(p, TK_RBRACE)) {
    push(p, &keys, expr(p));
    expect(p, TK_COLON);
    push(p, &values, expr(p));
    if (!accept(p, TK_COMMA)) break;
  }
  expect(p, TK_RBRACE);
  n->items = keys.v;
  n->nitems = keys.n;
  n->items2 = values.v;
  n->nitems2 = values.n;
  return n;
}

/* strings = STRING+      (adjacent literals are concatenated) */
static rasp_ast *strings(Parser *p) {
  rasp_ast *n = new_node(p, AST_STR, p->tok.pos);
  n->str = p->tok.str;
  n->len = p->tok.slen;
  advance(p);
  while (at(p, TK_STR)) {
    char *s = raspM_arena_alloc(p->arena, n->len + p->tok.slen + 1);
    memcpy(s, n->str, n->len);
    memcpy(s + n->len, p->tok.str, p->tok.slen);
    n->len += p->tok.slen;
    s[n->len] = '\0';
    n->str = s;
    advance(p);
  }
  return n;
}

/* atom = NAME | NUMBER | strings | 'True' | 'False' | 'None'
**      | paren_display | list_display | dict_display */
static rasp_ast *atom(Parser *p) {
  rasp_pos pos = p->tok.pos;
  rasp_ast *n;
  switch (p->tok.kind) {
  case TK_NAME:
  case TK_NUM:
    n = new_node(p, at(p, TK_NAME) ? AST_NAME : AST_NUM, pos);
    n->str = p->tok.str;
    n->len = p->tok.slen;
    advance(p);
    return n;
  case TK_STR: return strings(p);
  case TK_TRUE: advance(p); return new_node(p, AST_TRUE, pos);
  case TK_FALSE: advance(p); return new_node(p, AST_FALSE, pos);
  case TK_NONE: advance(p); return new_node(p, AST_NONE, pos);
  case TK_LPAREN: return paren_display(p);
  case TK_LBRACKET: return list_display(p);
  case TK_LBRACE: return dict_display(p);
  default: fail_expected(p, "an expression");
  }
}

/* ---- Entry points -------------------------------------------------- */

/* Left-associative chains (1 + 1 + ... , a[0][0]..., f()()...) are parsed
** by loops, not recursion, so the nesting guard does not see them; but
** they make trees as deep as they are long, and everything that walks a
** tree recursively (the interpreter, raspP_dump) would overflow the stack.
** This walk, with an explicit stack, bounds the depth of the whole tree. */
#define RASP_MAX_TREE_DEPTH 2000
static void check_depth(Parser *p, rasp_ast *root) {
  typedef struct { rasp_ast *node; int depth; } frame;
  size_t cap = 256, top = 0;
  frame *stack = raspM_arena_alloc(p->arena, cap * sizeof *stack);
  stack[top++] = (frame){root, 1};
  while (top) {
    frame f = stack[--top];
    if (f.depth > RASP_MAX_TREE_DEPTH) fail(p, f.node->pos, "expression nested too deeply");
    rasp_ast *kids[3] = {f.node->a, f.node->b, f.node->c};
    size_t need = top + 3 + (size_t)f.node->nitems + (size_t)f.node->nitems2;
    if (need > cap) {
      while (cap < need) cap *= 2;
      frame *bigger = raspM_arena_alloc(p->arena, cap * sizeof *stack);
      memcpy(bigger, stack, top * sizeof *stack);
      stack = bigger;
    }
    for (int i = 0; i < 3; i++)
      if (kids[i]) stack[top++] = (frame){kids[i], f.depth + 1};
    for (int i = 0; i < f.node->nitems; i++)
      if (f.node->items[i]) stack[top++] = (frame){f.node->items[i], f.depth + 1};
    for (int i = 0; i < f.node->nitems2; i++)
      if (f.node->items2[i]) stack[top++] = (frame){f.node->items2[i], f.depth + 1};
  }
}

rasp_ast *raspP_parse(const rasp_source *src, rasp_arena *arena,
                      rasp_error *err) {
  rasp_error dummy;
  Parser *p = raspM_arena_alloc(arena, sizeof *p);
  p->arena = arena;
  p->err = err ? err : &dummy;
  p->lx = raspX_new(src, arena);
  if (setjmp(p->jb)) return NULL;
  advance(p);
  rasp_ast *mod = module(p);
  check_depth(p, mod);
  return mod;
}

/* raspP_incomplete scans the text once, skipping strings and comments,
** and tracks: bracket depth, whether it ends inside a triple-quoted string,
** the last significant character of each line (':' opens a block), whether
** an indented line follows a line ending in ':', and whether the last line
** (not counting a final '\n' terminator) is blank. */
int raspP_incomplete(const char *text) {
  if (!text) return 0;
  long depth = 0;
  int in_triple = 0;       /* quote char of the open triple-quoted string */
  int last_sig = 0;        /* last significant char of the current line */
  int prev_colon = 0;      /* the previous non-blank line ended with ':' */
  int block = 0;           /* saw an indented line after a ':' line */
  int continued = 0;       /* the line ended with a backslash */
  int line_blank = 1, line_indented = 0;
  int last_line_colon = 0; /* the last non-blank line ended with ':' */
  const char *s = text;
  for (;;) {
    char c = *s;
    if (in_triple) {
      if (!c) break;
      if (c == '\\' && s[1]) s += 2;
      else if (c == in_triple && s[1] == c && s[2] == c) {
        in_triple = 0;
        s += 3;
        last_sig = c;
      } else
        s++;
      continue;
    }
    if (c == '\n' || !c) {
      if (!line_blank) {
        if (line_indented && prev_colon && depth == 0) block = 1;
        prev_colon = last_sig == ':' && depth == 0;
        last_line_colon = prev_colon;
      }
      continued = last_sig == '\\';
      if (!c) break;
      s++;
      if (!*s) break; /* a final '\n' terminates the last line */
      if (depth == 0 && !continued) {
        line_blank = 1;
        line_indented = *s == ' ' || *s == '\t';
      }
      last_sig = 0;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
      s++;
      continue;
    }
    line_blank = 0;
    if (c == '#') {
      while (*s && *s != '\n') s++;
      continue;
    }
    if (c == '\'' || c == '"') {
      if (s[1] == c && s[2] == c) {
        in_triple = c;
        s += 3;
        continue;
      }
      s++;
      while (*s && *s != c && *s != '\n') s += (*s == '\\' && s[1]) ? 2 : 1;
      if (*s == c) s++;
      last_sig = c;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') depth++;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) depth--;
    last_sig = c;
    s++;
  }
  if (in_triple || depth > 0 || continued) return 1;
  if (last_line_colon) return 1;
  if (block && !line_blank) return 1;
  return 0;
}

/* ---- Dump ---------------------------------------------------------- */

static void dump_op(int op, FILE *out) {
  switch (op) {
  case TK_NOTIN: fputs("not-in", out); return;
  case TK_ISNOT: fputs("is-not", out); return;
  default: break;
  }
  const char *s = raspX_token_name((rasp_token_kind)op);
  size_t n = strlen(s);
  if (n >= 2 && s[0] == '\'' && s[n - 1] == '\'')
    fprintf(out, "%.*s", (int)(n - 2), s + 1);
  else
    fputs(s, out);
}

static void dump_string(const char *s, size_t len, FILE *out) {
  fputc('"', out);
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    switch (c) {
    case '\n': fputs("\\n", out); break;
    case '\t': fputs("\\t", out); break;
    case '\r': fputs("\\r", out); break;
    case '\\': fputs("\\\\", out); break;
    case '"': fputs("\\\"", out); break;
    default:
      if (c < 0x20 || c >= 0x7f) fprintf(out, "\\x%02x", c);
      else fputc(c, out);
    }
  }
  fputc('"', out);
}

static void dump(const rasp_ast *n, FILE *out);

static void dump_list(rasp_ast *const *items, int n, FILE *out) {
  for (int i = 0; i < n; i++) {
    fputc(' ', out);
    dump(items[i], out);
  }
}

static void dump_params(const rasp_ast *n, FILE *out) {
  fputs("(params", out);
  int first_default = n->nnames - n->nitems2;
  for (int i = 0; i < n->nnames; i++) {
    if (i >= first_default) {
      fprintf(out, " (= %s ", n->names[i]);
      dump(n->items2[i - first_default], out);
      fputc(')', out);
    } else {
      fprintf(out, " %s", n->names[i]);
    }
  }
  fputc(')', out);
}

/* The dump of one node, in three steps by the node's kind: an atom (a
** literal or a name: its text alone), an expression and a statement (each
** "(head children...)", the closing parenthesis written here once). */
static int dump_atom(const rasp_ast *n, FILE *out) {
  switch (n->kind) {
  case AST_NUM: fprintf(out, "(num %s)", n->str); return 1;
  case AST_STR:
    fputs("(str ", out);
    dump_string(n->str, n->len, out);
    fputc(')', out);
    return 1;
  case AST_NAME: fprintf(out, "(name %s)", n->str); return 1;
  case AST_TRUE: fputs("True", out); return 1;
  case AST_FALSE: fputs("False", out); return 1;
  case AST_NONE: fputs("None", out); return 1;
  default: return 0;
  }
}

/* Compound expressions: 1 when n is one (its dump written but for the
** closing parenthesis), else 0. */
static int dump_expr(const rasp_ast *n, FILE *out) {
  switch (n->kind) {
  case AST_TUPLE: fputs("(tuple", out); dump_list(n->items, n->nitems, out); return 1;
  case AST_LIST: fputs("(list", out); dump_list(n->items, n->nitems, out); return 1;
  case AST_DICT:
    fputs("(dict", out);
    for (int i = 0; i < n->nitems && i < n->nitems2; i++) {
      fputs(" (", out);
      dump(n->items[i], out);
      fputc(' ', out);
      dump(n->items2[i], out);
      fputc(')', out);
    }
    return 1;
  case AST_BINOP:
  case AST_UNARY:
  case AST_AUGASSIGN:
    fputs(n->kind == AST_BINOP ? "(binop " : n->kind == AST_UNARY ? "(unary "
                                                                  : "(augassign ",
          out);
    dump_op(n->op, out);
    fputc(' ', out);
    dump(n->a, out);
    if (n->kind != AST_UNARY) {
      fputc(' ', out);
      dump(n->b, out);
    }
    return 1;
  case AST_NOT: fputs("(not ", out); dump(n->a, out); return 1;
  case AST_AND:
  case AST_OR:
    fputs(n->kind == AST_AND ? "(and " : "(or ", out);
    dump(n->a, out);
    fputc(' ', out);
    dump(n->b, out);
    return 1;
  case AST_COMPARE:
    fputs("(compare ", out);
    for (int i = 0; i < n->nitems; i++) {
      if (i) {
        fputc(' ', out);
        dump_op(n->ops[i - 1], out);
        fputc(' ', out);
      }
      dump(n->items[i], out);
    }
    return 1;
  case AST_CALL:
    fputs("(call ", out);
    dump(n->a, out);
    dump_list(n->items, n->nitems, out);
    for (int i = 0; i < n->nnames && i < n->nitems2; i++) {
      fprintf(out, " (kw %s ", n->names[i]);
      dump(n->items2[i], out);
      fputc(')', out);
    }
    return 1;
  case AST_SUBSCRIPT:
    fputs("(subscript ", out);
    dump(n->a, out);
    fputc(' ', out);
    dump(n->b, out);
    return 1;
  case AST_SLICE:
  case AST_IFEXP:
    fputs(n->kind == AST_SLICE ? "(slice " : "(ifexp ", out);
    dump(n->a, out);
    fputc(' ', out);
    dump(n->b, out);
    fputc(' ', out);
    dump(n->c, out);
    return 1;
  case AST_ATTR:
    fputs("(attr ", out);
    dump(n->a, out);
    fprintf(out, " %s", n->str);
    return 1;
  case AST_LAMBDA:
    fputs("(lambda ", out);
    dump_params(n, out);
    fputc(' ', out);
    dump(n->a, out);
    return 1;
  case AST_LISTCOMP:
    fputs("(listcomp ", out);
    dump(n->a, out);
    fputc(' ', out);
    dump(n->b, out);
    fputc(' ', out);
    dump(n->c, out);
    dump_list(n->items, n->nitems, out);
    return 1;
  default: return 0;
  }
}

/* Statements and the module, as dump_expr. */
static int dump_stmt(const rasp_ast *n, FILE *out) {
  switch (n->kind) {
  case AST_EXPR: fputs("(expr ", out); dump(n->a, out); return 1;
  case AST_ASSIGN:
    fputs("(assign", out);
    dump_list(n->items, n->nitems, out);
    fputc(' ', out);
    dump(n->a, out);
    return 1;
  case AST_DEF:
    fprintf(out, "(def %s ", n->str);
    dump_params(n, out);
    dump_list(n->items, n->nitems, out);
    return 1;
  case AST_RETURN:
    fputs("(return", out);
    if (n->a) {
      fputc(' ', out);
      dump(n->a, out);
    }
    return 1;
  case AST_IF:
    fputs("(if ", out);
    dump(n->a, out);
    fputs(" (then", out);
    dump_list(n->items, n->nitems, out);
    fputc(')', out);
    if (n->nitems2) {
      fputs(" (else", out);
      dump_list(n->items2, n->nitems2, out);
      fputc(')', out);
    }
    return 1;
  case AST_FOR:
    fputs("(for ", out);
    dump(n->a, out);
    fputc(' ', out);
    dump(n->b, out);
    dump_list(n->items, n->nitems, out);
    return 1;
  case AST_WHILE:
    fputs("(while ", out);
    dump(n->a, out);
    dump_list(n->items, n->nitems, out);
    return 1;
  case AST_BREAK: fputs("(break", out); return 1;
  case AST_CONTINUE: fputs("(continue", out); return 1;
  case AST_PASS: fputs("(pass", out); return 1;
  case AST_ASSERT:
    fputs("(assert ", out);
    dump(n->a, out);
    if (n->b) {
      fputc(' ', out);
      dump(n->b, out);
    }
    return 1;
  case AST_MODULE: fputs("(module", out); dump_list(n->items, n->nitems, out); return 1;
  default: return 0;
  }
}

static void dump(const rasp_ast *n, FILE *out) {
  if (!n) {
    fputc('_', out);
    return;
  }
  if (dump_atom(n, out)) return;
  if (!dump_expr(n, out) && !dump_stmt(n, out)) fprintf(out, "(?%d", (int)n->kind);
  fputc(')', out);
}

void raspP_dump(const rasp_ast *node, FILE *out) {
  dump(node, out);
  fputc('\n', out);
}
