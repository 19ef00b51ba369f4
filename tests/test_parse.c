/*
** test_parse.c -- Check unit tests of the lexer (rlex.c) and parser
** (rparse.c).  Most tests compare raspP_dump's S-expression with the
** expected one; error tests check the message, line and column.
*/
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlex.h"
#include "rparse.h"

#include "check_main.h"

static char result[65536];

/* Parses text (len bytes) and returns the dump without its newline, or
** "error LINE:COL: MESSAGE". */
static const char *parse_n(const char *text, size_t len) {
  rasp_source *src = raspR_source_new("<test>", text, len);
  rasp_arena arena;
  raspM_arena_init(&arena);
  rasp_error err;
  memset(&err, 0, sizeof err);
  rasp_ast *m = raspP_parse(src, &arena, &err);
  if (m) {
    FILE *f = fmemopen(result, sizeof result, "w");
    raspP_dump(m, f);
    fclose(f);
    size_t n = strlen(result);
    if (n && result[n - 1] == '\n') result[n - 1] = '\0';
    ck_assert(!err.set);
  } else {
    ck_assert(err.set);
    ck_assert_ptr_eq(err.pos.src, src);
    snprintf(result, sizeof result, "error %d:%d: %s", err.pos.line,
             err.pos.col, err.msg);
  }
  raspM_arena_free(&arena);
  raspR_source_free(src);
  return result;
}

static const char *parse(const char *text) {
  return parse_n(text, strlen(text));
}

/* The dump of a one-statement module holding just an expression. */
static const char *pexpr(const char *text) {
  static char inner[65536];
  const char *r = parse(text);
  const char *pre = "(module (expr ";
  if (strncmp(r, pre, strlen(pre)) != 0) return r;
  snprintf(inner, sizeof inner, "%s", r + strlen(pre));
  inner[strlen(inner) - 2] = '\0';
  return inner;
}

/* Token kinds as a string of short names, e.g. "NAME = NUM NL EOF". */
static const char *tokens(const char *text) {
  rasp_source *src = raspR_source_new("<test>", text, strlen(text));
  rasp_arena arena;
  raspM_arena_init(&arena);
  rasp_lexer *lx = raspX_new(src, &arena);
  rasp_error err;
  memset(&err, 0, sizeof err);
  result[0] = '\0';
  size_t n = 0;
  for (int i = 0; i < 1000; i++) {
    rasp_token t;
    if (!raspX_next(lx, &t, &err)) {
      snprintf(result + n, sizeof result - n, "%serror %d:%d: %s",
               n ? " " : "", err.pos.line, err.pos.col, err.msg);
      break;
    }
    const char *name;
    char buf[128];
    switch (t.kind) {
    case TK_NEWLINE: name = "NL"; break;
    case TK_INDENT: name = "INDENT"; break;
    case TK_DEDENT: name = "DEDENT"; break;
    case TK_EOF: name = "EOF"; break;
    case TK_NAME: snprintf(buf, sizeof buf, "n:%s", t.str); name = buf; break;
    case TK_NUM: snprintf(buf, sizeof buf, "#%s", t.str); name = buf; break;
    case TK_STR: snprintf(buf, sizeof buf, "s:%s", t.str); name = buf; break;
    default: {
      const char *q = raspX_token_name(t.kind);
      snprintf(buf, sizeof buf, "%.*s", (int)strlen(q) - 2, q + 1);
      name = buf;
    }
    }
    n += (size_t)snprintf(result + n, sizeof result - n, "%s%s", n ? " " : "",
                          name);
    if (t.kind == TK_EOF) break;
  }
  raspM_arena_free(&arena);
  raspR_source_free(src);
  return result;
}

/* ---- Lexer --------------------------------------------------------- */

START_TEST(lex_basic) {
  ck_assert_str_eq(tokens("x = 1"), "n:x = #1 NL EOF");
  ck_assert_str_eq(tokens(""), "EOF");
  ck_assert_str_eq(tokens("\n\n  # only a comment\n"), "EOF");
  ck_assert_str_eq(tokens("a//=b**c!=d<=e>>f"),
                   "n:a //= n:b ** n:c != n:d <= n:e >> n:f NL EOF");
  ck_assert_str_eq(tokens("def f(): return not None"),
                   "def n:f ( ) : return not None NL EOF");
  ck_assert_str_eq(tokens("x.y[0]; z"), "n:x . n:y [ #0 ] ; n:z NL EOF");
}
END_TEST

START_TEST(lex_numbers) {
  ck_assert_str_eq(tokens("0.5 .5 1e3 1.5e-2 0x1f 12 3."),
                   "#0.5 #.5 #1e3 #1.5e-2 #0x1f #12 #3. NL EOF");
  ck_assert_str_eq(tokens("1E+4"), "#1E+4 NL EOF");
}
END_TEST

START_TEST(lex_strings) {
  ck_assert_str_eq(tokens("'a\\tb' \"c'd\""), "s:a\tb s:c'd NL EOF");
  ck_assert_str_eq(tokens("'\\'\\\"\\\\\\n'"), "s:'\"\\\n NL EOF");
  ck_assert_str_eq(tokens("\"\"\"doc\nstring\"\"\"\nx"),
                   "s:doc\nstring NL n:x NL EOF");
  ck_assert_str_eq(tokens("''"), "s: NL EOF");
}
END_TEST

START_TEST(lex_indent) {
  ck_assert_str_eq(tokens("if x:\n  y\n  z\nw\n"),
                   "if n:x : NL INDENT n:y NL n:z NL DEDENT n:w NL EOF");
  ck_assert_str_eq(
      tokens("if a:\n  if b:\n    c\n\n   # comment\nd"),
      "if n:a : NL INDENT if n:b : NL INDENT n:c NL DEDENT DEDENT n:d NL EOF");
  /* dedents at end of input, no final newline */
  ck_assert_str_eq(tokens("if a:\n  if b:\n    c"),
                   "if n:a : NL INDENT if n:b : NL INDENT n:c NL DEDENT DEDENT "
                   "EOF");
  /* implicit joining and backslash continuation */
  ck_assert_str_eq(tokens("f(a,\n      b)\nx = 1 + \\\n  2\n"),
                   "n:f ( n:a , n:b ) NL n:x = #1 + #2 NL EOF");
  /* a tab counts as up to 8 columns */
  ck_assert_str_eq(tokens("if a:\n\tb\n        c\n"),
                   "if n:a : NL INDENT n:b NL n:c NL DEDENT EOF");
}
END_TEST

START_TEST(lex_errors) {
  ck_assert_str_eq(tokens("x = $"), "n:x = error 1:5: unexpected character '$'");
  ck_assert_str_eq(tokens("x = 'abc"), "n:x = error 1:5: unterminated string");
  ck_assert_str_eq(tokens("x = 'abc\n'"),
                   "n:x = error 1:5: unterminated string");
  ck_assert_str_eq(tokens("\n\"\"\"abc\n"),
                   "error 2:1: unterminated triple-quoted string");
  ck_assert_str_eq(tokens("12abc"), "error 1:1: bad number");
  ck_assert_str_eq(tokens("0x"), "error 1:1: bad number");
  ck_assert_str_eq(tokens("1e+"), "error 1:1: bad number");
  ck_assert_str_eq(
      tokens("if a:\n    b\n  c\n"),
      "if n:a : NL INDENT n:b NL error 3:3: "
      "unindent does not match any outer indentation level");
  ck_assert_str_eq(tokens("x \\ y"),
                   "n:x error 1:3: unexpected character after line continuation");
}
END_TEST

/* ---- Expressions --------------------------------------------------- */

START_TEST(precedence) {
  ck_assert_str_eq(pexpr("1 + 2 * 3"),
                   "(binop + (num 1) (binop * (num 2) (num 3)))");
  ck_assert_str_eq(pexpr("1 - 2 - 3"),
                   "(binop - (binop - (num 1) (num 2)) (num 3))");
  ck_assert_str_eq(pexpr("-2**2"), "(unary - (binop ** (num 2) (num 2)))");
  ck_assert_str_eq(pexpr("2**3**2"),
                   "(binop ** (num 2) (binop ** (num 3) (num 2)))");
  ck_assert_str_eq(pexpr("2**-1"), "(binop ** (num 2) (unary - (num 1)))");
  ck_assert_str_eq(pexpr("a or b and not c"),
                   "(or (name a) (and (name b) (not (name c))))");
  ck_assert_str_eq(pexpr("not a == b"),
                   "(not (compare (name a) == (name b)))");
  ck_assert_str_eq(pexpr("a | b ^ c & d << 1 + 2"),
                   "(binop | (name a) (binop ^ (name b) (binop & (name c) "
                   "(binop << (name d) (binop + (num 1) (num 2))))))");
  ck_assert_str_eq(pexpr("a < b <= c != d"),
                   "(compare (name a) < (name b) <= (name c) != (name d))");
  ck_assert_str_eq(pexpr("a in b not in c is d is not e"),
                   "(compare (name a) in (name b) not-in (name c) is (name d) "
                   "is-not (name e))");
  ck_assert_str_eq(pexpr("a % b // c / d"),
                   "(binop / (binop // (binop % (name a) (name b)) (name c)) "
                   "(name d))");
  ck_assert_str_eq(pexpr("~-+x"), "(unary ~ (unary - (unary + (name x))))");
  ck_assert_str_eq(pexpr("a | b == c"),
                   "(compare (binop | (name a) (name b)) == (name c))");
  ck_assert_str_eq(pexpr("(1 + 2) * 3"),
                   "(binop * (binop + (num 1) (num 2)) (num 3))");
  ck_assert_str_eq(pexpr("a if b else c if d else e"),
                   "(ifexp (name b) (name a) (ifexp (name d) (name c) "
                   "(name e)))");
  ck_assert_str_eq(pexpr("a or b if c or d else e"),
                   "(ifexp (or (name c) (name d)) (or (name a) (name b)) "
                   "(name e))");
  ck_assert_str_eq(pexpr("-x.y[0](1)"),
                   "(unary - (call (subscript (attr (name x) y) (num 0)) "
                   "(num 1)))");
}
END_TEST

START_TEST(atoms) {
  ck_assert_str_eq(pexpr("()"), "(tuple)");
  ck_assert_str_eq(pexpr("(x,)"), "(tuple (name x))");
  ck_assert_str_eq(pexpr("(x)"), "(name x)");
  ck_assert_str_eq(pexpr("(1, 2,)"), "(tuple (num 1) (num 2))");
  ck_assert_str_eq(pexpr("[]"), "(list)");
  ck_assert_str_eq(pexpr("[1, [2], 3,]"),
                   "(list (num 1) (list (num 2)) (num 3))");
  ck_assert_str_eq(pexpr("{}"), "(dict)");
  ck_assert_str_eq(pexpr("{'a': 1, 2: [],}"),
                   "(dict ((str \"a\") (num 1)) ((num 2) (list)))");
  ck_assert_str_eq(pexpr("True, False, None"), "(tuple True False None)");
  ck_assert_str_eq(pexpr("'a' \"b\" '''c'''"), "(str \"abc\")");
  ck_assert_str_eq(pexpr("'tab\\there\\\\'"), "(str \"tab\\there\\\\\")");
  ck_assert_str_eq(pexpr("1.5e-2 + 0x1f"),
                   "(binop + (num 1.5e-2) (num 0x1f))");
}
END_TEST

START_TEST(calls_and_lambdas) {
  ck_assert_str_eq(pexpr("f()"), "(call (name f))");
  ck_assert_str_eq(pexpr("f(x, default=-99, causal=False)"),
                   "(call (name f) (name x) (kw default (unary - (num 99))) "
                   "(kw causal False))");
  ck_assert_str_eq(pexpr("f(a, b,)"), "(call (name f) (name a) (name b))");
  ck_assert_str_eq(pexpr("f(a == b)"),
                   "(call (name f) (compare (name a) == (name b)))");
  ck_assert_str_eq(pexpr("lambda a, b=2: a + b"),
                   "(lambda (params a (= b (num 2))) (binop + (name a) "
                   "(name b)))");
  ck_assert_str_eq(pexpr("lambda: 0"), "(lambda (params) (num 0))");
  ck_assert_str_eq(pexpr("select(k, q, lambda k, q: k < q)"),
                   "(call (name select) (name k) (name q) (lambda (params k q) "
                   "(compare (name k) < (name q))))");
  ck_assert_str_eq(pexpr("lambda x: x if x else 1"),
                   "(lambda (params x) (ifexp (name x) (name x) (num 1)))");
  ck_assert_str_eq(pexpr("any(x > 0 for x in xs)"),
                   "(call (name any) (listcomp (compare (name x) > (num 0)) "
                   "(name x) (name xs)))");
}
END_TEST

START_TEST(subscripts_and_slices) {
  ck_assert_str_eq(pexpr("x[i]"), "(subscript (name x) (name i))");
  ck_assert_str_eq(pexpr("x[i:j]"),
                   "(subscript (name x) (slice (name i) (name j) _))");
  ck_assert_str_eq(pexpr("x[::2]"), "(subscript (name x) (slice _ _ (num 2)))");
  ck_assert_str_eq(pexpr("x[:]"), "(subscript (name x) (slice _ _ _))");
  ck_assert_str_eq(pexpr("x[1:]"), "(subscript (name x) (slice (num 1) _ _))");
  ck_assert_str_eq(pexpr("x[:-1]"),
                   "(subscript (name x) (slice _ (unary - (num 1)) _))");
  ck_assert_str_eq(pexpr("x[a:b:c]"),
                   "(subscript (name x) (slice (name a) (name b) (name c)))");
  ck_assert_str_eq(pexpr("x[1, 2:3]"),
                   "(subscript (name x) (tuple (num 1) (slice (num 2) (num 3) "
                   "_)))");
  ck_assert_str_eq(pexpr("a.b.c"), "(attr (attr (name a) b) c)");
}
END_TEST

START_TEST(list_comprehensions) {
  ck_assert_str_eq(pexpr("[e for x in it]"),
                   "(listcomp (name e) (name x) (name it))");
  ck_assert_str_eq(pexpr("[e for x in it if c if d]"),
                   "(listcomp (name e) (name x) (name it) (name c) (name d))");
  ck_assert_str_eq(pexpr("[a + b for a, b in zip(x, y)]"),
                   "(listcomp (binop + (name a) (name b)) (tuple (name a) "
                   "(name b)) (call (name zip) (name x) (name y)))");
  ck_assert_str_eq(pexpr("[x for (i, x) in enumerate(y) if i > 0 and x]"),
                   "(listcomp (name x) (tuple (name i) (name x)) (call "
                   "(name enumerate) (name y)) (and (compare (name i) > "
                   "(num 0)) (name x)))");
}
END_TEST

/* ---- Statements ---------------------------------------------------- */

START_TEST(assignments) {
  ck_assert_str_eq(parse("x = 1 + 2"),
                   "(module (assign (name x) (binop + (num 1) (num 2))))");
  ck_assert_str_eq(parse("a = b = 1"),
                   "(module (assign (name a) (name b) (num 1)))");
  ck_assert_str_eq(parse("a, b = f()"),
                   "(module (assign (tuple (name a) (name b)) (call "
                   "(name f))))");
  ck_assert_str_eq(parse("(a, b) = 1, 2"),
                   "(module (assign (tuple (name a) (name b)) (tuple (num 1) "
                   "(num 2))))");
  ck_assert_str_eq(parse("[a, (b, c)] = x"),
                   "(module (assign (list (name a) (tuple (name b) (name c))) "
                   "(name x)))");
  ck_assert_str_eq(parse("x[0] = True"),
                   "(module (assign (subscript (name x) (num 0)) True))");
  ck_assert_str_eq(parse("o.f = None"),
                   "(module (assign (attr (name o) f) None))");
  const char *ops[] = {"+", "-", "*", "/", "//", "%", "&", "|"};
  for (int i = 0; i < 8; i++) {
    char src[64], want[128];
    snprintf(src, sizeof src, "x %s= y", ops[i]);
    snprintf(want, sizeof want, "(module (augassign %s (name x) (name y)))",
             ops[i]);
    ck_assert_str_eq(parse(src), want);
  }
  ck_assert_str_eq(parse("x[i] += 1"),
                   "(module (augassign + (subscript (name x) (name i)) "
                   "(num 1)))");
}
END_TEST

START_TEST(statements) {
  ck_assert_str_eq(parse("def f(a, b=1, c=None):\n    return a, b\n"),
                   "(module (def f (params a (= b (num 1)) (= c None)) "
                   "(return (tuple (name a) (name b)))))");
  ck_assert_str_eq(parse("def f():\n  return\n"),
                   "(module (def f (params) (return)))");
  ck_assert_str_eq(parse("def g(x): return x"),
                   "(module (def g (params x) (return (name x))))");
  ck_assert_str_eq(parse("if x: return 1"),
                   "(module (if (name x) (then (return (num 1)))))");
  ck_assert_str_eq(
      parse("if a:\n  x = 1\nelif b:\n  x = 2\nelif c: pass\nelse:\n  x = 3\n"),
      "(module (if (name a) (then (assign (name x) (num 1))) (else (if "
      "(name b) (then (assign (name x) (num 2))) (else (if (name c) (then "
      "(pass)) (else (assign (name x) (num 3)))))))))");
  ck_assert_str_eq(parse("for i in range(3):\n  if i: continue\n  break\n"),
                   "(module (for (name i) (call (name range) (num 3)) (if "
                   "(name i) (then (continue))) (break)))");
  ck_assert_str_eq(parse("for a, b in x:\n  pass"),
                   "(module (for (tuple (name a) (name b)) (name x) (pass)))");
  ck_assert_str_eq(parse("while x < 3:\n  x += 1\n"),
                   "(module (while (compare (name x) < (num 3)) (augassign + "
                   "(name x) (num 1))))");
  ck_assert_str_eq(parse("assert x, 'msg'\nassert y"),
                   "(module (assert (name x) (str \"msg\")) (assert (name y)))");
  ck_assert_str_eq(parse("pass; x = 1; f(x);"),
                   "(module (pass) (assign (name x) (num 1)) (expr (call "
                   "(name f) (name x))))");
  ck_assert_str_eq(parse("def f():\n  \"\"\"Doc\n  string.\"\"\"\n  pass\n"),
                   "(module (def f (params) (expr (str \"Doc\\n  string.\")) "
                   "(pass)))");
  ck_assert_str_eq(parse("\n\n# comment\n\n"), "(module)");
  ck_assert_str_eq(parse("x = [1,\n  2,  # two\n\n  3]\ny = \\\n  4\n"),
                   "(module (assign (name x) (list (num 1) (num 2) (num 3))) "
                   "(assign (name y) (num 4)))");
  ck_assert_str_eq(parse("x = 1\r\ny = 2\r\n"),
                   "(module (assign (name x) (num 1)) (assign (name y) "
                   "(num 2)))");
}
END_TEST

START_TEST(positions) {
  rasp_source *src = raspR_source_new("<t>", "x = 1\ny = a +  b\n", 17);
  rasp_arena arena;
  raspM_arena_init(&arena);
  rasp_ast *m = raspP_parse(src, &arena, NULL);
  ck_assert_ptr_nonnull(m);
  ck_assert_int_eq(m->nitems, 2);
  rasp_ast *s = m->items[1];
  ck_assert_int_eq(s->kind, AST_ASSIGN);
  ck_assert_int_eq(s->pos.line, 2);
  ck_assert_int_eq(s->pos.col, 1);
  ck_assert_int_eq(s->a->kind, AST_BINOP);
  ck_assert_int_eq(s->a->op, TK_PLUS);
  ck_assert_int_eq(s->a->pos.col, 7); /* the operator */
  ck_assert_int_eq(s->a->b->pos.col, 10);
  ck_assert_str_eq(s->a->b->str, "b");
  raspM_arena_free(&arena);
  raspR_source_free(src);
}
END_TEST

static const char *paper =
    "def non_causal_propagate_log(seq, idx, masked_x,\n"
    "                             g_start, i_nodes, j_nodes):\n"
    "\n"
    "    # each edge is (i, j, k1, k2)\n"
    "    i_nodes_pos = where(not_equals(i_nodes, full(idx,  d['j'])),\n"
    "                        idx, full(idx, -99))\n"
    "    for step in range(0, ceil_log2(arm_len - 1)):\n"
    "        connecting_k1_pos = kqv(k2_nodes, k1_nodes, idx - 1, equals,\n"
    "                                default=-89, causal=False)\n"
    "        k1_nodes = where(is_true(new_k1_nodes), new_k1_nodes, k1_nodes)\n"
    "    edges = [(output[i], output[i+1], output[i+2], output[i+3])\n"
    "             for i in range(g_start, len(output), 4)]\n"
    "    is_valid = False\n"
    "    for edge in edges:\n"
    "        has_t = any([edge[i] == 't' for i in range(4)])\n"
    "        if has_t and has_initial:\n"
    "            is_valid = True\n"
    "            break\n"
    "    assert is_valid\n"
    "    return cur_state\n";

START_TEST(paper_listing) {
  const char *r = parse(paper);
  ck_assert_msg(strncmp(r, "(module (def non_causal_propagate_log (params seq "
                           "idx masked_x g_start i_nodes j_nodes) (assign "
                           "(name i_nodes_pos)",
                        96) == 0,
                "%s", r);
  ck_assert_ptr_nonnull(strstr(
      r, "(kw default (unary - (num 89))) (kw causal False))"));
  ck_assert_ptr_nonnull(
      strstr(r, "(listcomp (compare (subscript (name edge) (name i)) == (str "
                "\"t\")) (name i) (call (name range) (num 4)))"));
  ck_assert_ptr_nonnull(strstr(r, "(then (assign (name is_valid) True) "
                                  "(break))))"));
  ck_assert_ptr_nonnull(strstr(r, "(assert (name is_valid)) (return "
                                  "(name cur_state))))"));
}
END_TEST

/* ---- Errors -------------------------------------------------------- */

START_TEST(syntax_errors) {
  ck_assert_str_eq(parse("f(1, 2"),
                   "error 1:7: expected ')' but found end of input");
  ck_assert_str_eq(parse("f(1 foo)"),
                   "error 1:5: expected ')' but found 'foo'");
  ck_assert_str_eq(parse("x = \n"),
                   "error 1:5: expected an expression but found newline");
  ck_assert_str_eq(parse("if x\n  y\n"),
                   "error 1:5: expected ':' but found newline");
  ck_assert_str_eq(parse("if x:\ny\n"),
                   "error 2:1: expected an indented block but found 'y'");
  ck_assert_str_eq(parse("x = 1\n  y = 2\n"), "error 2:3: unexpected indent");
  ck_assert_str_eq(parse("f(a=1, 2)"),
                   "error 1:8: positional argument follows keyword argument");
  ck_assert_str_eq(parse("f(a=1, a=2)"),
                   "error 1:8: keyword argument repeated: 'a'");
  ck_assert_str_eq(parse("1 = x"), "error 1:1: cannot assign to literal");
  ck_assert_str_eq(parse("x\nf() = 3"),
                   "error 2:1: cannot assign to function call");
  ck_assert_str_eq(parse("a, b += 1"),
                   "error 1:1: illegal target for augmented assignment");
  ck_assert_str_eq(parse("def f(a=1, b): pass"),
                   "error 1:12: parameter without a default follows "
                   "parameter with a default");
  ck_assert_str_eq(parse("def f(a, a): pass"),
                   "error 1:10: duplicate parameter 'a'");
  ck_assert_str_eq(parse("def 1(): pass"),
                   "error 1:5: expected a name but found '1'");
  ck_assert_str_eq(parse("x = 1 2"), "error 1:7: expected newline but found '2'");
  ck_assert_str_eq(parse("x = (1,\n 2,\n ]"),
                   "error 3:2: expected ')' but found ']'");
  ck_assert_str_eq(parse("break"), "error 1:1: 'break' outside loop");
  ck_assert_str_eq(parse("for x in y:\n  def f():\n    continue\n"),
                   "error 3:5: 'continue' outside loop");
  ck_assert_str_eq(parse("a not b"), "error 1:7: expected 'in' but found 'b'");
  ck_assert_str_eq(parse("x = a if b"),
                   "error 1:11: expected 'else' but found newline");
  ck_assert_str_eq(parse("{1, 2}"), "error 1:3: expected ':' but found ','");
  ck_assert_str_eq(parse("for 1 in x: pass"),
                   "error 1:5: expected a name but found '1'");
  ck_assert_str_eq(parse("x = 'a' + )"),
                   "error 1:11: expected an expression but found ')'");
  ck_assert_str_eq(parse("def f():\n    x\n  y\n"),
                   "error 3:3: unindent does not match any outer indentation "
                   "level");
  ck_assert_str_eq(parse("x = 1\ny = 'abc\n"),
                   "error 2:5: unterminated string");
  ck_assert_str_eq(parse("y = 3 @ 4"), "error 1:7: unexpected character '@'");
  ck_assert_str_eq(parse("y = 3abc"), "error 1:5: bad number");
  ck_assert_str_eq(parse_n("x = 1\0", 6), "error 1:6: unexpected NUL byte");
  ck_assert_str_eq(parse_n("x = '\0'", 7), "error 1:6: unexpected NUL byte");
  ck_assert_str_eq(parse_n("# c\0\nx", 6), "error 1:4: unexpected NUL byte");
  ck_assert_str_eq(parse("elif x: pass"),
                   "error 1:1: expected a statement but found 'elif'");
  ck_assert_str_eq(parse("return )"),
                   "error 1:8: expected newline but found ')'");
  ck_assert_str_eq(parse("x = [1 for]"),
                   "error 1:11: expected a name but found ']'");
}
END_TEST

static char *repeat(const char *a, int n, const char *mid, const char *b) {
  size_t la = strlen(a), lm = strlen(mid), lb = strlen(b);
  char *s = malloc(la * (size_t)n + lm + lb * (size_t)n + 1), *q = s;
  for (int i = 0; i < n; i++, q += la) memcpy(q, a, la);
  memcpy(q, mid, lm);
  q += lm;
  for (int i = 0; i < n; i++, q += lb) memcpy(q, b, lb);
  *q = '\0';
  return s;
}

START_TEST(deep_nesting) {
  char *s = repeat("(", 100000, "", "");
  ck_assert_str_eq(parse(s), "error 1:201: nesting too deep");
  free(s);
  s = repeat("[", 100000, "1", "]");
  ck_assert_ptr_nonnull(strstr(parse(s), "nesting too deep"));
  free(s);
  s = repeat("-", 100000, "1", "");
  ck_assert_ptr_nonnull(strstr(parse(s), "nesting too deep"));
  free(s);
  s = repeat("not ", 100000, "1", "");
  ck_assert_ptr_nonnull(strstr(parse(s), "nesting too deep"));
  free(s);
  s = repeat("2**", 100000, "1", "");
  ck_assert_ptr_nonnull(strstr(parse(s), "nesting too deep"));
  free(s);
  s = repeat("lambda: ", 100000, "1", "");
  ck_assert_ptr_nonnull(strstr(parse(s), "nesting too deep"));
  free(s);
  s = repeat("a if b else ", 100000, "1", "");
  ck_assert_ptr_nonnull(strstr(parse(s), "nesting too deep"));
  free(s);
  char *t = repeat("(", 100000, "a", "");
  s = repeat("for ", 1, t, "");
  ck_assert_ptr_nonnull(strstr(parse(s), "nesting too deep"));
  free(t);
  free(s);
  /* deeply nested blocks */
  size_t cap = 5000 * 5000 / 2 + 100000, n = 0;
  s = malloc(cap);
  for (int i = 0; i < 1000; i++) {
    for (int j = 0; j < i; j++) s[n++] = ' ';
    memcpy(s + n, "if x:\n", 6);
    n += 6;
  }
  s[n] = '\0';
  ck_assert_ptr_nonnull(strstr(parse(s), "nesting too deep"));
  free(s);
  /* moderate nesting is fine */
  s = repeat("(", 50, "1", ")");
  ck_assert_str_eq(parse(s), "(module (expr (num 1)))");
  free(s);
  /* long flat sequences parse, up to the tree-depth bound that keeps
  ** recursive walkers (interpreter, dump) off the end of the stack */
  s = repeat("1 + ", 1000, "1", "");
  ck_assert_int_eq(strncmp(parse(s), "(module (expr (binop +", 22), 0);
  free(s);
  s = repeat("1 + ", 100000, "1", "");
  ck_assert_ptr_nonnull(strstr(parse(s), "expression nested too deeply"));
  free(s);
  s = repeat("", 100000, "a", "[0]");
  ck_assert_ptr_nonnull(strstr(parse(s), "expression nested too deeply"));
  free(s);
}
END_TEST

/* ---- raspP_incomplete ---------------------------------------------- */

START_TEST(incomplete) {
  ck_assert_int_eq(raspP_incomplete(""), 0);
  ck_assert_int_eq(raspP_incomplete("x = 1"), 0);
  ck_assert_int_eq(raspP_incomplete("x = 1\n"), 0);
  ck_assert_int_eq(raspP_incomplete("f(1,"), 1);
  ck_assert_int_eq(raspP_incomplete("f(1,\n  2"), 1);
  ck_assert_int_eq(raspP_incomplete("f(1,\n  2)"), 0);
  ck_assert_int_eq(raspP_incomplete("x = [1, {2: (3"), 1);
  ck_assert_int_eq(raspP_incomplete("x = ')'"), 0);
  ck_assert_int_eq(raspP_incomplete("x = '('"), 0);
  ck_assert_int_eq(raspP_incomplete("x = 1  # (comment"), 0);
  ck_assert_int_eq(raspP_incomplete("def f():"), 1);
  ck_assert_int_eq(raspP_incomplete("def f():  # comment"), 1);
  ck_assert_int_eq(raspP_incomplete("def f():\n"), 1);
  ck_assert_int_eq(raspP_incomplete("def f():\n  return 1"), 1);
  ck_assert_int_eq(raspP_incomplete("def f():\n  return 1\n"), 1);
  ck_assert_int_eq(raspP_incomplete("def f():\n  return 1\n\n"), 0);
  ck_assert_int_eq(raspP_incomplete("def f():\n  return 1\n   \n"), 0);
  ck_assert_int_eq(raspP_incomplete("if x:\n  y\nelse:"), 1);
  ck_assert_int_eq(raspP_incomplete("if x: y"), 0);
  ck_assert_int_eq(raspP_incomplete("d = {'a':"), 1);
  ck_assert_int_eq(raspP_incomplete("x = \"\"\"doc"), 1);
  ck_assert_int_eq(raspP_incomplete("x = \"\"\"doc\nmore\"\"\""), 0);
  ck_assert_int_eq(raspP_incomplete("x = 1 + \\"), 1);
  ck_assert_int_eq(raspP_incomplete(")))"), 0);
  ck_assert_int_eq(raspP_incomplete("'unterminated"), 0);
  ck_assert_int_eq(raspP_incomplete(NULL), 0);
}
END_TEST

static Suite *parse_suite(void) {
  Suite *s = suite_create("parse");
  TCase *tc = tcase_create("lexer");
  tcase_add_test(tc, lex_basic);
  tcase_add_test(tc, lex_numbers);
  tcase_add_test(tc, lex_strings);
  tcase_add_test(tc, lex_indent);
  tcase_add_test(tc, lex_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("parser");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, precedence);
  tcase_add_test(tc, atoms);
  tcase_add_test(tc, calls_and_lambdas);
  tcase_add_test(tc, subscripts_and_slices);
  tcase_add_test(tc, list_comprehensions);
  tcase_add_test(tc, assignments);
  tcase_add_test(tc, statements);
  tcase_add_test(tc, positions);
  tcase_add_test(tc, paper_listing);
  tcase_add_test(tc, syntax_errors);
  tcase_add_test(tc, deep_nesting);
  tcase_add_test(tc, incomplete);
  suite_add_tcase(s, tc);
  return s;
}

RASP_CHECK_MAIN(parse_suite())
