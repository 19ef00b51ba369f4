/*
** rast.h -- the syntax tree of the RASP surface language (a Python subset).
**
** One node type for every construct; which fields a kind uses is written
** next to it.  Nodes live in the arena of the parse that made them and are
** never freed individually.  Positions point into a rasp_source that must
** outlive the tree.
*/
#ifndef RASP_RAST_H
#define RASP_RAST_H

#include "rerror.h"

/* Kinds of node.  Fields: a, b, c are children; items/nitems a list;
** items2/nitems2 a second list; names/nnames identifiers; str/len text. */
typedef enum rasp_ast_kind {
  /* expressions */
  AST_NUM,      /* str: literal text as written ("12", "0.5", "1e3", "0x1f") */
  AST_STR,      /* str/len: contents with escapes decoded */
  AST_NAME,     /* str: identifier */
  AST_TRUE,
  AST_FALSE,
  AST_NONE,
  AST_TUPLE,    /* items */
  AST_LIST,     /* items */
  AST_DICT,     /* items: keys, items2: values (same count) */
  AST_BINOP,    /* op: TK_PLUS .. (see rlex.h), a op b */
  AST_UNARY,    /* op: TK_MINUS, TK_PLUS or TK_TILDE; a */
  AST_NOT,      /* a */
  AST_AND,      /* a and b (short-circuit on scalars) */
  AST_OR,       /* a or b */
  AST_COMPARE,  /* chain: items = operands (n >= 2), ops[n-1] = TK_EQ.. TK_IN,
                   TK_NOTIN, TK_IS, TK_ISNOT */
  AST_CALL,     /* a: callee; items: positional args; names/items2: keyword
                   names and values (nnames == nitems2); a '*args' argument
                   is not supported */
  AST_SUBSCRIPT,/* a[b] */
  AST_SLICE,    /* a:b:c inside a subscript; any of a, b, c may be NULL */
  AST_ATTR,     /* a.str */
  AST_IFEXP,    /* b if a else c   (a: condition, b: then, c: else) */
  AST_LAMBDA,   /* names: params; items2: defaults for the trailing params
                   (nitems2 <= nnames, aligned to the end); a: body expr */
  AST_LISTCOMP, /* [a for b in c if items[0] if items[1] ...]: a element,
                   b target (NAME or TUPLE of NAMEs), c iterable,
                   items: conditions.  Only one 'for' clause. */

  /* statements */
  AST_EXPR,     /* a */
  AST_ASSIGN,   /* items: targets (x = y = v gives two), a: value.
                   A target is NAME, TUPLE/LIST of targets, SUBSCRIPT or ATTR */
  AST_AUGASSIGN,/* op: the binary operator (TK_PLUS for '+='), a: target, b: value */
  AST_DEF,      /* str: name; names: params; items2: defaults for trailing
                   params; items: body statements */
  AST_RETURN,   /* a: value or NULL */
  AST_IF,       /* a: condition, items: body, items2: else body (an elif is
                   an else body holding one AST_IF) */
  AST_FOR,      /* a: target, b: iterable, items: body */
  AST_WHILE,    /* a: condition, items: body */
  AST_BREAK,
  AST_CONTINUE,
  AST_PASS,
  AST_ASSERT,   /* a: condition, b: message or NULL */
  AST_MODULE    /* items: statements of a file or a REPL entry */
} rasp_ast_kind;

typedef struct rasp_ast rasp_ast;
struct rasp_ast {
  rasp_ast_kind kind;
  int op;          /* operator token kind, for BINOP/UNARY/AUGASSIGN */
  int *ops;        /* COMPARE: nitems-1 operator tokens */
  rasp_pos pos;    /* first token of the construct; for BINOP the operator */
  const char *str; /* NUL-terminated */
  size_t len;
  rasp_ast *a, *b, *c;
  rasp_ast **items;
  int nitems;
  rasp_ast **items2;
  int nitems2;
  const char **names;
  int nnames;
  const void *cache; /* the interpreter's own: interned name, parsed number */
};

#endif
