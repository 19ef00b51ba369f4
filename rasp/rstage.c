/*
** rstage.c -- staging check() into a residual predicate.
**
** Design.  This is a small partial evaluator over the syntax tree.  It
** walks check()'s body with its three parameters bound to placeholders
** (the output, lead and target of a graph nobody has seen yet) and treats
** every expression in one of two ways:
**   - if no placeholder occurs in it, the interpreter evaluates it, once,
**     in a scope that holds the concrete locals: globals such as g_start,
**     layout arithmetic, helper calls on constants;
**   - otherwise it must be one of the few shapes that have a residual form:
**     output[i] for a constant i, == and != between elements, lead, target
**     and constants, not/and/or of those, has_pair and holds_both over the
**     output, a call of a program function (inlined, its parameters bound
**     to whatever its arguments staged to), a conditional on a constant.
** Statements are return, assignment to a name, pass, docstrings and an if
** on a constant.  Anything else stops the staging, and the verifier keeps
** calling check() through the interpreter; so a check is either staged
** exactly or not at all, never approximated.
**
** Exactness.  Element equality is the interpreter's: numbers and booleans
** by value (True == 1), symbols by identity (one id per text), a symbol
** never equal to a number.  What the interpreter would report as an error
** at run time (a scan running off the output) makes the residual answer -1,
** and the verifier then interprets that graph, so the error is reported
** as before.  Errors that would happen on every graph (an index out of
** range, a bad step) stop the staging instead.
**
** Cost.  Staging runs once per verification; a residual check is a handful
** of comparisons, or one scan over the edges, with no allocation, no lock
** and no conversion of the output to interpreter values.
*/
#include "rstage.h"

#include <string.h>

#include "rfacts.h"
#include "rlex.h"
#include "rinterp_int.h"

/* ---- the residual predicate */

enum { T_ELEM, T_LEAD, T_TARGET, T_CONST };

typedef struct sterm {
  int kind;
  int64_t index;  /* T_ELEM: position in the output */
  rasp_elem c;    /* T_CONST */
} sterm;

enum { N_CONST, N_EQ, N_NE, N_PAIR, N_HOLDS, N_NOT, N_AND, N_OR };

typedef struct snode {
  int op;
  int truth;                    /* N_CONST */
  sterm x, y;                   /* N_EQ, N_NE; N_PAIR, N_HOLDS: a and b */
  int a, b;                     /* N_NOT: a; N_AND, N_OR: a and b */
  int64_t k, start, stop, step; /* N_PAIR: gap; N_HOLDS: width */
} snode;

struct rasp_staged {
  snode *nodes;
  int nnodes, cap;
  int root;
  int len;       /* output length */
  int64_t nsyms; /* symbol ids known when staged */
};

/* ---- staging */

enum { SV_VALUE, SV_OUTPUT, SV_TERM, SV_BOOL };

typedef struct sval {
  int kind;
  value *v; /* SV_VALUE */
  sterm t;  /* SV_TERM */
  int node; /* SV_BOOL */
} sval;

#define FRAME_NAMES 32
#define MAX_INLINE 32

/* One function activation: concrete bindings live in a real scope (so the
** interpreter can evaluate expressions over them), staged ones here. */
typedef struct frame {
  env *scope;
  const char *names[FRAME_NAMES];
  sval vals[FRAME_NAMES];
  int n;
} frame;

typedef struct stager {
  rasp_ctx *ctx;
  rasp_staged *st;
  const char *name;
  const char *why;
  int depth;
  int ok;
} stager;

static _Noreturn void give_up(stager *s, rasp_pos pos, const char *why) {
  s->why = why;
  raspV_error(s->ctx, pos, "check() is not staged: %s", why);
}

static int add_node(stager *s, snode nd) {
  rasp_staged *st = s->st;
  RASP_GROW(st->nodes, st->cap, st->nnodes + 1);
  st->nodes[st->nnodes] = nd;
  return st->nnodes++;
}

static sval *staged_name(frame *f, const char *name) {
  for (int i = 0; i < f->n; i++)
    if (f->names[i] == name) return &f->vals[i];
  return NULL;
}

static void bind(stager *s, frame *f, const char *name, sval v, rasp_pos pos) {
  sval *old = staged_name(f, name);
  if (v.kind == SV_VALUE) {
    if (old) { /* no longer staged: drop it, then bind it for real */
      int i = (int)(old - f->vals);
      f->names[i] = f->names[f->n - 1];
      f->vals[i] = f->vals[f->n - 1];
      f->n--;
    }
    raspV_env_set(s->ctx, f->scope, name, v.v);
    return;
  }
  if (old) {
    *old = v;
    return;
  }
  if (f->n == FRAME_NAMES) give_up(s, pos, "too many staged locals");
  f->names[f->n] = name;
  f->vals[f->n++] = v;
}

/* Does a staged name occur in x?  (Conservatively: any occurrence, even
** one shadowed inside a lambda, counts.) */
static int mentions(stager *s, frame *f, const rasp_ast *x) {
  if (!x || !f->n) return 0;
  if (x->kind == AST_NAME) return staged_name(f, raspV_intern(s->ctx, x->str)) != NULL;
  if (mentions(s, f, x->a) || mentions(s, f, x->b) || mentions(s, f, x->c)) return 1;
  for (int i = 0; i < x->nitems; i++)
    if (mentions(s, f, x->items[i])) return 1;
  for (int i = 0; i < x->nitems2; i++)
    if (mentions(s, f, x->items2[i])) return 1;
  return 0;
}

static sterm term_of(stager *s, sval v, rasp_pos pos) {
  if (v.kind == SV_TERM) return v.t;
  if (v.kind != SV_VALUE) give_up(s, pos, "a comparison with the whole output or a condition");
  if (v.v->kind != V_NUM && v.v->kind != V_BOOL && v.v->kind != V_STR)
    give_up(s, pos, "a comparison with a value that is not a number, boolean or string");
  sterm t = {T_CONST, 0, raspV_to_elem(s->ctx, v.v, pos)};
  return t;
}

static sval stage_expr(stager *s, frame *f, const rasp_ast *x);
static sval stage_call(stager *s, value *fn, sval *args, int nargs, const char **kwnames,
                       sval *kwvals, int nkw, rasp_pos pos);

static sval concrete(value *v) {
  sval r = {SV_VALUE, v, {0, 0, {0, 1}}, -1};
  return r;
}

static sval boolean(int node) {
  sval r = {SV_BOOL, NULL, {0, 0, {0, 1}}, node};
  return r;
}

static int truth_node(stager *s, int truth) {
  snode nd = {0};
  nd.op = N_CONST;
  nd.truth = truth;
  return add_node(s, nd);
}

/* The residual node of a staged value used as a condition. */
static int cond_node(stager *s, sval v, rasp_pos pos) {
  if (v.kind == SV_BOOL) return v.node;
  if (v.kind == SV_VALUE) return truth_node(s, raspV_truth(s->ctx, v.v, pos));
  give_up(s, pos, "the truth of an output element or of the output");
}

static sval stage_logic(stager *s, frame *f, const rasp_ast *x) {
  sval l = stage_expr(s, f, x->a);
  if (l.kind == SV_VALUE) { /* Python: the first operand decides alone, or not at all */
    int t = raspV_truth(s->ctx, l.v, x->pos);
    if (x->kind == AST_AND ? !t : t) return l;
    return stage_expr(s, f, x->b);
  }
  snode nd = {0};
  nd.op = x->kind == AST_AND ? N_AND : N_OR;
  nd.a = cond_node(s, l, x->pos);
  nd.b = cond_node(s, stage_expr(s, f, x->b), x->pos);
  return boolean(add_node(s, nd));
}

static sval stage_expr(stager *s, frame *f, const rasp_ast *x) {
  rasp_ctx *ctx = s->ctx;
  if (!mentions(s, f, x)) return concrete(raspV_eval(ctx, f->scope, x));
  switch (x->kind) {
  case AST_NAME: return *staged_name(f, raspV_intern(ctx, x->str));
  case AST_SUBSCRIPT: {
    sval base = stage_expr(s, f, x->a);
    if (base.kind != SV_OUTPUT) give_up(s, x->pos, "a subscript of something but the output");
    if (x->b->kind == AST_SLICE) give_up(s, x->pos, "a slice of the output");
    sval at = stage_expr(s, f, x->b);
    if (at.kind != SV_VALUE) give_up(s, x->pos, "an output index that depends on the graph");
    int64_t i = raspV_int(ctx, at.v, x->pos, "a list index");
    if (i < 0) i += s->st->len;
    if (i < 0 || i >= s->st->len) give_up(s, x->pos, "an output index out of range");
    sval r = {SV_TERM, NULL, {T_ELEM, i, {0, 1}}, -1};
    return r;
  }
  case AST_COMPARE: {
    if (x->nitems != 2 || (x->ops[0] != TK_EQ && x->ops[0] != TK_NE))
      give_up(s, x->pos, "a comparison other than == or !=");
    snode nd = {0};
    nd.op = x->ops[0] == TK_EQ ? N_EQ : N_NE;
    nd.x = term_of(s, stage_expr(s, f, x->items[0]), x->pos);
    nd.y = term_of(s, stage_expr(s, f, x->items[1]), x->pos);
    return boolean(add_node(s, nd));
  }
  case AST_NOT: {
    snode nd = {0};
    nd.op = N_NOT;
    nd.a = cond_node(s, stage_expr(s, f, x->a), x->pos);
    return boolean(add_node(s, nd));
  }
  case AST_AND:
  case AST_OR: return stage_logic(s, f, x);
  case AST_IFEXP: {
    if (mentions(s, f, x->a)) give_up(s, x->pos, "a conditional that depends on the graph");
    int t = raspV_truth(ctx, raspV_eval(ctx, f->scope, x->a), x->pos);
    return stage_expr(s, f, t ? x->b : x->c);
  }
  case AST_CALL: {
    if (mentions(s, f, x->a)) give_up(s, x->pos, "a call of a staged value");
    value *fn = raspV_eval(ctx, f->scope, x->a);
    sval args[16], kwvals[16];
    const char *kwnames[16];
    if (x->nitems > 16 || x->nnames > 16) give_up(s, x->pos, "too many arguments");
    for (int i = 0; i < x->nitems; i++) args[i] = stage_expr(s, f, x->items[i]);
    for (int i = 0; i < x->nnames; i++) {
      kwnames[i] = raspV_intern(ctx, x->names[i]);
      kwvals[i] = stage_expr(s, f, x->items2[i]);
    }
    return stage_call(s, fn, args, x->nitems, kwnames, kwvals, x->nnames, x->pos);
  }
  default: give_up(s, x->pos, "an operation on the output, lead or target");
  }
}

/* Runs statements; 1 and *ret when one returned. */
static int stage_block(stager *s, frame *f, rasp_ast **body, int n, sval *ret) {
  rasp_ctx *ctx = s->ctx;
  for (int i = 0; i < n; i++) {
    const rasp_ast *st = body[i];
    switch (st->kind) {
    case AST_RETURN:
      *ret = st->a ? stage_expr(s, f, st->a) : concrete(&ctx->none_v);
      return 1;
    case AST_ASSIGN:
      if (st->nitems != 1 || st->items[0]->kind != AST_NAME)
        give_up(s, st->pos, "an assignment to something but one name");
      bind(s, f, raspV_intern(ctx, st->items[0]->str), stage_expr(s, f, st->a), st->pos);
      break;
    case AST_IF: {
      if (mentions(s, f, st->a)) give_up(s, st->pos, "an if that depends on the graph");
      int t = raspV_truth(ctx, raspV_eval(ctx, f->scope, st->a), st->pos);
      if (t ? stage_block(s, f, st->items, st->nitems, ret)
            : stage_block(s, f, st->items2, st->nitems2, ret))
        return 1;
      break;
    }
    case AST_PASS: break;
    case AST_EXPR:
      if (st->a->kind == AST_STR) break; /* a docstring */
      give_up(s, st->pos, "an expression statement");
    default: give_up(s, st->pos, "a statement other than return, assignment, if or pass");
    }
  }
  *ret = concrete(&ctx->none_v);
  return 0;
}

static sval stage_scan(stager *s, const builtin *bi, sval *args, int nargs, int nkw,
                       rasp_pos pos) {
  int windows = strcmp(bi->name, "holds_both") == 0;
  if (nargs != 7 || nkw) give_up(s, pos, "has_pair/holds_both without its 7 positional arguments");
  if (args[0].kind != SV_OUTPUT) give_up(s, pos, "has_pair/holds_both over another list");
  snode nd = {0};
  nd.op = windows ? N_HOLDS : N_PAIR;
  nd.x = term_of(s, args[1], pos);
  nd.y = term_of(s, args[2], pos);
  int64_t *ints[4] = {&nd.k, &nd.start, &nd.stop, &nd.step};
  for (int i = 0; i < 4; i++) {
    if (args[3 + i].kind != SV_VALUE) give_up(s, pos, "a scan range that depends on the graph");
    *ints[i] = raspV_int(s->ctx, args[3 + i].v, pos, "a scan bound");
  }
  if (nd.step <= 0 || (windows && nd.k < 1)) give_up(s, pos, "a bad scan range");
  return boolean(add_node(s, nd));
}

static sval stage_call(stager *s, value *fn, sval *args, int nargs, const char **kwnames,
                       sval *kwvals, int nkw, rasp_pos pos) {
  rasp_ctx *ctx = s->ctx;
  int staged = 0;
  for (int i = 0; i < nargs; i++) staged |= args[i].kind != SV_VALUE;
  for (int i = 0; i < nkw; i++) staged |= kwvals[i].kind != SV_VALUE;
  if (fn->kind == V_BUILTIN &&
      (strcmp(fn->u.bi->name, "has_pair") == 0 || strcmp(fn->u.bi->name, "holds_both") == 0))
    return stage_scan(s, fn->u.bi, args, nargs, nkw, pos);
  if (fn->kind != V_FUNC || !staged) give_up(s, pos, "a call that is not a program function");
  const rasp_ast *def = fn->u.func.def;
  int np = def->nnames, ndef = fn->u.func.ndefaults;
  if (nargs > np || np > 16) give_up(s, pos, "a call with too many arguments");
  if (s->depth >= MAX_INLINE) give_up(s, pos, "calls nested too deeply");
  sval bound[16];
  int set[16] = {0};
  const char *pnames[16];
  for (int i = 0; i < np; i++) pnames[i] = raspV_intern(ctx, def->names[i]);
  for (int i = 0; i < nargs; i++) {
    bound[i] = args[i];
    set[i] = 1;
  }
  for (int k = 0; k < nkw; k++) {
    int i = 0;
    while (i < np && pnames[i] != kwnames[k]) i++;
    if (i == np || set[i]) give_up(s, pos, "a keyword argument that does not bind");
    bound[i] = kwvals[k];
    set[i] = 1;
  }
  for (int i = 0; i < np; i++)
    if (!set[i]) {
      if (i < np - ndef) give_up(s, pos, "a call missing an argument");
      bound[i] = concrete(fn->u.func.defaults[i - (np - ndef)]);
    }
  frame callee;
  callee.scope = raspV_env_new(ctx, fn->u.func.closure);
  callee.n = 0;
  for (int i = 0; i < np; i++) bind(s, &callee, pnames[i], bound[i], pos);
  s->depth++;
  sval r;
  if (def->kind == AST_LAMBDA) r = stage_expr(s, &callee, def->a);
  else stage_block(s, &callee, def->items, def->nitems, &r);
  s->depth--;
  return r;
}

static void stage_body(rasp_ctx *ctx, void *arg) {
  stager *s = arg;
  value *fn = raspV_global(ctx, s->name);
  if (!fn) {
    s->why = NULL;
    raspV_error(ctx, (rasp_pos){0}, "no function");
  }
  sval args[3];
  args[0].kind = SV_OUTPUT;
  args[1] = (sval){SV_TERM, NULL, {T_LEAD, 0, {0, 1}}, -1};
  args[2] = (sval){SV_TERM, NULL, {T_TARGET, 0, {0, 1}}, -1};
  sval r = stage_call(s, fn, args, 3, NULL, NULL, 0, (rasp_pos){0});
  s->st->root = cond_node(s, r, (rasp_pos){0});
  s->st->nsyms = ctx->names.nsyms;
  s->ok = 1;
}

rasp_staged *raspS_stage(rasp_ctx *ctx, const char *name, int n, const char **why) {
  rasp_staged *st = raspM_alloc(sizeof *st);
  st->len = n;
  stager s = {ctx, st, name, "an error while staging", 0, 0};
  rasp_error err = {0};
  if (!raspV_protected(ctx, &err, stage_body, &s) || !s.ok) {
    if (why) *why = s.why;
    raspS_free(st);
    return NULL;
  }
  if (why) *why = NULL;
  return st;
}

void raspS_free(rasp_staged *st) {
  if (!st) return;
  raspM_free(st->nodes);
  raspM_free(st);
}

/* ---- evaluation */

typedef struct graph {
  const rasp_staged *st;
  const rasp_elem *out;
  const int64_t *vocab_sym;
  int64_t nvocab;
  rasp_elem lead, target;
} graph;

static rasp_elem term_value(const graph *g, const sterm *t) {
  switch (t->kind) {
  case T_ELEM: {
    rasp_elem e = g->out[t->index];
    if (e.den == 1 && e.num >= 1 && e.num <= g->nvocab)
      e = (rasp_elem){g->vocab_sym[e.num], RASP_DEN_SYM};
    return e;
  }
  case T_LEAD: return g->lead;
  case T_TARGET: return g->target;
  default: return t->c;
  }
}

/* raspV_equal on the values these elements stand for (raspI_elem_eq); -1
** for a symbol the staging did not know (its text could repeat a known
** one's). */
static int elem_equal(const graph *g, rasp_elem a, rasp_elem b) {
  int sa = a.den == RASP_DEN_SYM, sb = b.den == RASP_DEN_SYM;
  if ((sa && (a.num < 0 || a.num >= g->st->nsyms)) || (sb && (b.num < 0 || b.num >= g->st->nsyms)))
    return -1;
  return raspI_elem_eq(a, b);
}

/* has_pair / holds_both's element test for raspF_scan_pairs. */
typedef struct pair_scan {
  const graph *g;
  rasp_elem ab[2];
} pair_scan;

static int pair_eq(void *u, int64_t j, int which) {
  const pair_scan *ps = u;
  return elem_equal(ps->g, term_value(ps->g, &(sterm){T_ELEM, j, {0, 1}}), ps->ab[which]);
}

static int eval_node(const graph *g, int i) {
  const snode *nd = &g->st->nodes[i];
  switch (nd->op) {
  case N_CONST: return nd->truth;
  case N_EQ:
  case N_NE: {
    int eq = elem_equal(g, term_value(g, &nd->x), term_value(g, &nd->y));
    return eq < 0 ? -1 : nd->op == N_EQ ? eq : !eq;
  }
  case N_NOT: {
    int r = eval_node(g, nd->a);
    return r < 0 ? -1 : !r;
  }
  case N_AND: {
    int r = eval_node(g, nd->a);
    return r <= 0 ? r : eval_node(g, nd->b);
  }
  case N_OR: {
    int r = eval_node(g, nd->a);
    return r != 0 ? r : eval_node(g, nd->b);
  }
  default: break;
  }
  /* has_pair / holds_both, as the builtins do them (the one scan); an
     index the interpreter would report makes the answer -1 */
  pair_scan ps = {g, {term_value(g, &nd->x), term_value(g, &nd->y)}};
  int64_t bad;
  int r = raspF_scan_pairs(nd->op == N_HOLDS, g->st->len, nd->k, nd->start, nd->stop, nd->step,
                           pair_eq, &ps, &bad);
  return r < 0 ? -1 : r;
}

int raspS_eval(const rasp_staged *st, const rasp_elem *out, const int64_t *vocab_sym,
               int64_t nvocab, rasp_elem lead, rasp_elem target) {
  graph g = {st, out, vocab_sym, nvocab, lead, target};
  return eval_node(&g, st->root);
}

/* ---- description */

static void put(char *buf, size_t size, size_t *at, const char *s) {
  size_t l = strlen(s);
  if (*at + l + 1 > size) l = *at + 1 < size ? size - *at - 1 : 0;
  memcpy(buf + *at, s, l);
  *at += l;
  buf[*at] = 0;
}

static void describe_term(const sterm *t, char *buf, size_t size, size_t *at) {
  char tmp[64];
  switch (t->kind) {
  case T_ELEM: snprintf(tmp, sizeof tmp, "output[%lld]", (long long)t->index); break;
  case T_LEAD: snprintf(tmp, sizeof tmp, "lead"); break;
  case T_TARGET: snprintf(tmp, sizeof tmp, "target"); break;
  default:
    if (t->c.den == RASP_DEN_SYM) snprintf(tmp, sizeof tmp, "symbol#%lld", (long long)t->c.num);
    else if (t->c.den == RASP_DEN_BOOL) snprintf(tmp, sizeof tmp, "%s", t->c.num ? "True" : "False");
    else if (t->c.den == 1) snprintf(tmp, sizeof tmp, "%lld", (long long)t->c.num);
    else snprintf(tmp, sizeof tmp, "%lld/%lld", (long long)t->c.num, (long long)t->c.den);
  }
  put(buf, size, at, tmp);
}

static void describe_node(const rasp_staged *st, int i, char *buf, size_t size, size_t *at) {
  const snode *nd = &st->nodes[i];
  char tmp[96];
  switch (nd->op) {
  case N_CONST: put(buf, size, at, nd->truth ? "True" : "False"); return;
  case N_EQ:
  case N_NE:
    describe_term(&nd->x, buf, size, at);
    put(buf, size, at, nd->op == N_EQ ? " == " : " != ");
    describe_term(&nd->y, buf, size, at);
    return;
  case N_NOT:
    put(buf, size, at, "not (");
    describe_node(st, nd->a, buf, size, at);
    put(buf, size, at, ")");
    return;
  case N_AND:
  case N_OR:
    put(buf, size, at, "(");
    describe_node(st, nd->a, buf, size, at);
    put(buf, size, at, nd->op == N_AND ? ") and (" : ") or (");
    describe_node(st, nd->b, buf, size, at);
    put(buf, size, at, ")");
    return;
  default:
    put(buf, size, at, nd->op == N_PAIR ? "has_pair(output, " : "holds_both(output, ");
    describe_term(&nd->x, buf, size, at);
    put(buf, size, at, ", ");
    describe_term(&nd->y, buf, size, at);
    snprintf(tmp, sizeof tmp, ", %lld, %lld, %lld, %lld)", (long long)nd->k,
             (long long)nd->start, (long long)nd->stop, (long long)nd->step);
    put(buf, size, at, tmp);
  }
}

void raspS_describe(const rasp_staged *st, char *buf, size_t size) {
  size_t at = 0;
  if (!size) return;
  buf[0] = 0;
  describe_node(st, st->root, buf, size, &at);
}
