/*
** rvalue.c -- what the interpreter computes with: values that are not
** sequences.
**
** Numbers are exact rationals (GMP), as Python's would be if its floats
** were fractions, with booleans as 0 and 1; every result is held to a size
** cap (below) so that a program cannot make GMP abort the process.  Strings
** are byte strings that know their symbol id once they have one.  Tuples
** and lists share a representation; dicts keep their insertion order and
** an open hash whose equality is raspV_equal, so True and 1 are one key, as
** in Python.  Containers can hold themselves (l.append(l)): equality,
** ordering and repr recurse only so deep.
**
** Everything here is computed on the spot.  An operation with a sequence
** or a selector among its operands never gets here: rtrace.c turns it
** into an IR node first, and sends only scalar operands on
** (raspV_scalar_binop, raspV_scalar_unop).  What does get here may still
** touch a vocabulary id, and records so (raspV_ids_seen, rtrace.c).
*/
#include "rinterp_int.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- numbers */

/* Numbers and booleans as an mpq (booleans are 0 and 1, as in Python). */
static void num_get(mpq_t out, const value *v) {
  if (v->kind == V_BOOL) mpq_set_si(out, v->u.b, 1);
  else mpq_set(out, v->u.q);
}

static int num_is_int(const value *v) {
  return v->kind == V_BOOL || mpz_cmp_ui(mpq_denref(v->u.q), 1) == 0;
}

/* ---- the size cap on numbers.  A number's size is the bits of its
** numerator and denominator together.  Every operation whose result can
** outgrow its operands is checked: '**' before GMP computes it (from the
** operands' sizes and the exponent), literals before they are converted,
** the others (at most the sum of their operands' sizes plus a bit, so GMP
** can always compute them) afterwards.  Without the cap a power of a power
** made GMP abort the process ("overflow in mpz type"). */
static size_t num_bits(const mpq_t q) {
  return mpz_sizeinbase(mpq_numref(q), 2) + mpz_sizeinbase(mpq_denref(q), 2);
}

static _Noreturn void num_too_large(rasp_ctx *ctx, rasp_pos pos) {
  raspV_raise(ctx, RASP_E_LIMIT, pos, "number too large: more than %zu bits (the size limit for numbers)",
              ctx->limits.max_num_bits);
}

static value *num_checked(rasp_ctx *ctx, value *v, rasp_pos pos) {
  if (v->kind != V_NUM) return v;
  size_t bits = num_bits(v->u.q);
  if (bits > ctx->limits.max_num_bits) num_too_large(ctx, pos);
  raspV_debt(ctx, bits / 8); /* the collector's estimate of what was made */
  return v;
}

/* Parses a numeric literal exactly: 12, 0x1f, 0.5, .5, 1e3, 2.5e-3.  The
** digits go to GMP in one mpz_set_str (subquadratic), not one multiply by
** ten per digit, which made a 400,000-digit literal take seconds. */
value *raspV_parse_number(rasp_ctx *ctx, const char *text, rasp_pos pos) {
  size_t len = strlen(text);
  if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    if ((len - 2) * 4 > ctx->limits.max_num_bits + 4) num_too_large(ctx, pos);
    value *v = raspV_new(ctx, V_NUM);
    if (mpz_set_str(mpq_numref(v->u.q), text + 2, 16) != 0)
      raspV_error(ctx, pos, "bad number '%s'", text);
    return num_checked(ctx, v, pos);
  }
  const char *p = text;
  long frac = 0, expo = 0;
  size_t digits = 0;
  int seen_dot = 0;
  for (; *p; p++) {
    if (isdigit((unsigned char)*p)) {
      digits++;
      if (seen_dot) frac++;
    } else if (*p == '.' && !seen_dot) {
      seen_dot = 1;
    } else if (*p != '_') {
      break;
    }
  }
  if (*p == 'e' || *p == 'E') {
    char *end;
    expo = strtol(p + 1, &end, 10);
    if (end == p + 1 || *end || expo > 10000 || expo < -10000) digits = 0;
    p = end;
  }
  if (!digits || *p) raspV_error(ctx, pos, "bad number '%s'", text);
  /* d decimal digits need more than (d - 1) * log2(10) > 3.32 (d - 1) bits */
  if ((double)(digits + (size_t)labs(expo) - 1) * 3.32 > (double)ctx->limits.max_num_bits)
    num_too_large(ctx, pos);
  char *buf = raspM_alloc(digits + 1), *d = buf;
  for (const char *q = text; *q && *q != 'e' && *q != 'E'; q++)
    if (isdigit((unsigned char)*q)) *d++ = *q;
  *d = '\0';
  value *v = raspV_new(ctx, V_NUM);
  mpz_t mant, scale;
  mpz_init(mant);
  mpz_init_set_ui(scale, 1);
  mpz_set_str(mant, buf, 10); /* only digits: cannot fail */
  raspM_free(buf);
  long e10 = expo - frac;
  mpz_ui_pow_ui(scale, 10, (unsigned long)(e10 < 0 ? -e10 : e10));
  if (e10 >= 0) {
    mpz_mul(mpq_numref(v->u.q), mant, scale);
  } else {
    mpz_set(mpq_numref(v->u.q), mant);
    mpz_set(mpq_denref(v->u.q), scale);
    mpq_canonicalize(v->u.q);
  }
  mpz_clears(mant, scale, NULL);
  return num_checked(ctx, v, pos);
}

int64_t raspV_int(rasp_ctx *ctx, value *v, rasp_pos pos, const char *what) {
  if (v->kind == V_BOOL) return v->u.b;
  if ((v->tag & TAG_ID) && !ctx->ir.ids_what && !ctx->in_callback) {
    snprintf(ctx->ids_text, sizeof ctx->ids_text, "an id used as %s", what);
    raspV_ids_seen(ctx, pos, ctx->ids_text);
  }
  if (v->kind == V_SOP)
    raspV_error(ctx, pos,
                "%s depends on the input sequence; only constants are allowed "
                "here (use where(...) for data-dependent choices)",
                what);
  if (v->kind != V_NUM || !num_is_int(v))
    raspV_error(ctx, pos, "%s must be an integer, not %s", what,
                raspV_kind_name(v));
  if (!mpz_fits_slong_p(mpq_numref(v->u.q)))
    raspV_error(ctx, pos, "%s is too large", what);
  return mpz_get_si(mpq_numref(v->u.q));
}

rasp_elem raspV_to_elem(rasp_ctx *ctx, value *v, rasp_pos pos) {
  rasp_elem e = {0, 1};
  switch (v->kind) {
  case V_BOOL:
    e.num = v->u.b;
    e.den = RASP_DEN_BOOL;
    return e;
  case V_NUM:
    if (!mpz_fits_slong_p(mpq_numref(v->u.q)) ||
        !mpz_fits_slong_p(mpq_denref(v->u.q)))
      raspV_error(ctx, pos, "the number does not fit in 64 bits inside a sequence");
    e.num = mpz_get_si(mpq_numref(v->u.q));
    e.den = mpz_get_si(mpq_denref(v->u.q));
    return e;
  case V_STR:
    e.num = raspV_symbol_of(ctx, v);
    e.den = RASP_DEN_SYM;
    return e;
  case V_NONE:
    e.num = RASP_SYM_NONE;
    e.den = RASP_DEN_SYM;
    return e;
  default:
    raspV_error(ctx, pos, "a sequence element must be a number, a boolean, a "
                          "string or None, not %s", raspV_kind_name(v));
  }
}

/* ------------------------------------------------------- generic values */

const char *raspV_kind_name(const value *v) {
  static const char *names[] = {"None", "a boolean", "a number", "a string",
                                "a tuple", "a list", "a dict", "a function",
                                "a builtin function", "a C function",
                                "a sequence", "a selector"};
  return names[v->kind];
}

/* Containers may hold themselves (l.append(l)), so comparing them
** recurses only so deep: past RASP_MAX_NEST levels the answer is -1. */
#define RASP_MAX_NEST 1000

static int equal_at(const value *a, const value *b, int depth) {
  if (a == b) return 1; /* as Python: l == l holds even when l holds itself */
  if (raspV_is_num(a) && raspV_is_num(b)) {
    if (a->kind == V_BOOL && b->kind == V_BOOL) return a->u.b == b->u.b;
    if (a->kind == V_BOOL) return mpq_cmp_si(b->u.q, a->u.b, 1) == 0;
    if (b->kind == V_BOOL) return mpq_cmp_si(a->u.q, b->u.b, 1) == 0;
    return mpq_equal(a->u.q, b->u.q);
  }
  if (a->kind != b->kind) return 0;
  switch (a->kind) {
  case V_NONE: return 1;
  case V_STR:
    return a->u.str.len == b->u.str.len &&
           memcmp(a->u.str.s, b->u.str.s, a->u.str.len) == 0;
  case V_TUPLE:
  case V_LIST:
    if (a->u.list.n != b->u.list.n) return 0;
    if (depth >= RASP_MAX_NEST) return -1;
    for (int i = 0; i < a->u.list.n; i++) {
      int e = equal_at(a->u.list.items[i], b->u.list.items[i], depth + 1);
      if (e != 1) return e;
    }
    return 1;
  default: return 0; /* a != b: other values are equal only to themselves */
  }
}

int raspV_equal(const value *a, const value *b) { return equal_at(a, b, 0) == 1; }

/* raspV_equal for the program's own == and `in`: too deep an equality is
** an error at pos rather than an answer. */
int raspV_equal_checked(rasp_ctx *ctx, const value *a, const value *b, rasp_pos pos) {
  int e = equal_at(a, b, 0);
  if (e < 0)
    raspV_raise(ctx, RASP_E_LIMIT, pos, "comparing containers nested more than %d deep (does a list hold "
                          "itself?)", RASP_MAX_NEST);
  return e;
}

/* Hash consistent with raspV_equal: equal numbers (True == 1) and equal
** strings and tuples hash alike; other values hash by identity. */
static size_t value_hash(const value *v) {
  switch (v->kind) {
  case V_BOOL: return (size_t)v->u.b * 0x9E3779B97F4A7C15u;
  case V_NUM: {
    size_t h = mpz_get_ui(mpq_numref(v->u.q)) * 0x9E3779B97F4A7C15u;
    if (mpq_sgn(v->u.q) < 0) h = ~h;
    return h ^ (mpz_get_ui(mpq_denref(v->u.q)) - 1) * 0xC2B2AE3D27D4EB4Fu;
  }
  case V_STR: {
    size_t h = 1469598103934665603u;
    for (size_t i = 0; i < v->u.str.len; i++) h = (h ^ (unsigned char)v->u.str.s[i]) * 1099511628211u;
    return h;
  }
  case V_TUPLE: {
    size_t h = 0x345678u;
    for (int i = 0; i < v->u.list.n; i++) h = (h * 1000003u) ^ value_hash(v->u.list.items[i]);
    return h;
  }
  case V_NONE: return 0x1234567u;
  default: return (size_t)(uintptr_t)v >> 4;
  }
}

static int dict_slot(const value *dict, const value *key, size_t h) {
  size_t mask = (size_t)dict->u.dict.icap - 1;
  for (size_t j = h & mask;; j = (j + 1) & mask) {
    int i = dict->u.dict.index[j];
    if (i < 0 || raspV_equal(dict->u.dict.keys[i], key)) return (int)j;
  }
}

static void dict_reindex(value *dict, int icap) {
  raspM_free(dict->u.dict.index);
  dict->u.dict.index = raspM_alloc(sizeof(int) * (size_t)icap);
  dict->u.dict.icap = icap;
  for (int j = 0; j < icap; j++) dict->u.dict.index[j] = -1;
  for (int i = 0; i < dict->u.dict.n; i++)
    dict->u.dict.index[dict_slot(dict, dict->u.dict.keys[i], value_hash(dict->u.dict.keys[i]))] = i;
}

value *raspV_dict_get(value *dict, value *key) {
  if (!dict->u.dict.n) return NULL;
  int i = dict->u.dict.index[dict_slot(dict, key, value_hash(key))];
  return i < 0 ? NULL : dict->u.dict.vals[i];
}

void raspV_dict_set(rasp_ctx *ctx, value *dict, value *key, value *val) {
  if ((dict->u.dict.n + 1) * 2 > dict->u.dict.icap)
    dict_reindex(dict, dict->u.dict.icap ? dict->u.dict.icap * 2 : 16);
  int j = dict_slot(dict, key, value_hash(key));
  int i = dict->u.dict.index[j];
  if (i >= 0) {
    dict->u.dict.vals[i] = val;
    raspV_barrier(ctx, dict->serial, val);
    return;
  }
  int cap = dict->u.dict.cap;
  RASP_GROW(dict->u.dict.keys, cap, dict->u.dict.n + 1);
  RASP_GROW(dict->u.dict.vals, dict->u.dict.cap, dict->u.dict.n + 1);
  dict->u.dict.keys[dict->u.dict.n] = key;
  dict->u.dict.vals[dict->u.dict.n] = val;
  dict->u.dict.index[j] = dict->u.dict.n++;
  raspV_barrier(ctx, dict->serial, key);
  raspV_barrier(ctx, dict->serial, val);
}

/* ---------------------------------------------------------- truth, repr */

int raspV_truth(rasp_ctx *ctx, value *v, rasp_pos pos) {
  switch (v->kind) {
  case V_NONE: return 0;
  case V_BOOL: return v->u.b;
  case V_NUM: return mpq_sgn(v->u.q) != 0;
  case V_STR: return v->u.str.len != 0;
  case V_TUPLE:
  case V_LIST: return v->u.list.n != 0;
  case V_DICT: return v->u.dict.n != 0;
  case V_SOP:
  case V_SEL:
    raspV_error(ctx, pos,
                "the truth of %s depends on the input, which is not known "
                "while tracing; use where(cond, x, y) instead of if/and/or",
                raspV_kind_name(v));
  default: return 1;
  }
}

/* The growing string of repr (rinterp_int.h says why it stops at max). */
void raspV_sb_add(strbuf *b, const char *s, size_t len) {
  if (b->over) return;
  if (b->max && len > b->max - b->n) {
    len = b->max - b->n;
    b->over = 1;
  }
  RASP_GROW(b->s, b->cap, b->n + len + 1);
  memcpy(b->s + b->n, s, len);
  b->n += len;
  b->s[b->n] = '\0';
  if (b->over) {
    b->max += 3;
    b->over = 0;
    raspV_sb_add(b, "...", 3);
    b->over = 1;
  }
}

void raspV_sb_puts(strbuf *b, const char *s) { raspV_sb_add(b, s, strlen(s)); }

static void repr_into(rasp_ctx *ctx, value *v, strbuf *b, int depth) {
  if (b->over) return;
  if (depth > 50) { raspV_sb_puts(b, "..."); return; }
  char tmp[64];
  switch (v->kind) {
  case V_NONE: raspV_sb_puts(b, "None"); break;
  case V_BOOL: raspV_sb_puts(b, v->u.b ? "True" : "False"); break;
  case V_NUM: {
    char *s = mpq_get_str(NULL, 10, v->u.q);
    raspV_sb_puts(b, s);
    void (*freefn)(void *, size_t);
    mp_get_memory_functions(NULL, NULL, &freefn);
    freefn(s, strlen(s) + 1);
    break;
  }
  case V_STR:
    raspV_sb_puts(b, "'");
    raspV_sb_add(b, v->u.str.s, v->u.str.len);
    raspV_sb_puts(b, "'");
    break;
  case V_TUPLE:
  case V_LIST: {
    raspV_sb_puts(b, v->kind == V_LIST ? "[" : "(");
    for (int i = 0; i < v->u.list.n && !b->over; i++) {
      if (i) raspV_sb_puts(b, ", ");
      repr_into(ctx, v->u.list.items[i], b, depth + 1);
    }
    if (v->kind == V_TUPLE && v->u.list.n == 1) raspV_sb_puts(b, ",");
    raspV_sb_puts(b, v->kind == V_LIST ? "]" : ")");
    break;
  }
  case V_DICT:
    raspV_sb_puts(b, "{");
    for (int i = 0; i < v->u.dict.n && !b->over; i++) {
      if (i) raspV_sb_puts(b, ", ");
      repr_into(ctx, v->u.dict.keys[i], b, depth + 1);
      raspV_sb_puts(b, ": ");
      repr_into(ctx, v->u.dict.vals[i], b, depth + 1);
    }
    raspV_sb_puts(b, "}");
    break;
  case V_FUNC:
    raspV_sb_puts(b, "<function ");
    raspV_sb_puts(b, v->u.func.def->kind == AST_DEF ? v->u.func.def->str : "<lambda>");
    raspV_sb_puts(b, ">");
    break;
  case V_BUILTIN:
    raspV_sb_puts(b, "<builtin ");
    raspV_sb_puts(b, v->u.bi->name);
    raspV_sb_puts(b, ">");
    break;
  case V_CFUNC: raspV_sb_puts(b, "<C function>"); break;
  case V_SOP:
  case V_SEL:
    snprintf(tmp, sizeof tmp, "<%s #%d>", v->kind == V_SOP ? "sequence" : "selector",
             v->u.node);
    raspV_sb_puts(b, tmp);
    break;
  }
}

char *raspV_repr(rasp_ctx *ctx, value *v) {
  strbuf b = {0};
  b.max = ctx->limits.max_string;
  raspV_sb_puts(&b, "");
  repr_into(ctx, v, &b, 0);
  return b.s;
}

/* ------------------------------------------------------ scalar arithmetic */

/* A unary operator on a value that is not a sequence or a selector. */
value *raspV_scalar_unop(rasp_ctx *ctx, rasp_unop op, value *a, rasp_pos pos) {
  switch (op) {
  case RASP_UN_NOT: return raspV_bool(ctx, !raspV_truth(ctx, a, pos));
  case RASP_UN_POS:
  case RASP_UN_NEG:
  case RASP_UN_ABS:
  case RASP_UN_INVERT: {
    if (!raspV_is_num(a))
      raspV_error(ctx, pos, "bad operand for unary '%s': %s", raspI_unop_name(op),
                  raspV_kind_name(a));
    if (a->tag & TAG_ID) {
      if (op == RASP_UN_POS || op == RASP_UN_ABS) return a; /* ids are positive */
      raspV_ids_seen(ctx, pos, "arithmetic on an id");
    }
    value *r = raspV_new(ctx, V_NUM);
    num_get(r->u.q, a);
    if (op == RASP_UN_NEG) mpq_neg(r->u.q, r->u.q);
    if (op == RASP_UN_ABS) mpq_abs(r->u.q, r->u.q);
    if (op == RASP_UN_INVERT) {
      if (a->kind == V_BOOL) return raspV_bool(ctx, !a->u.b);
      if (!num_is_int(a)) raspV_error(ctx, pos, "'~' needs an integer");
      mpz_com(mpq_numref(r->u.q), mpq_numref(r->u.q));
    }
    return num_checked(ctx, r, pos);
  }
  case RASP_UN_TRUNC:
  case RASP_UN_ROUND: {
    if (!raspV_is_num(a))
      raspV_error(ctx, pos, "%s() of %s", raspI_unop_name(op), raspV_kind_name(a));
    if (a->tag & TAG_ID) return a; /* an id is an integer: the same id */
    mpq_t x;
    mpq_init(x);
    num_get(x, a);
    value *r = raspV_new(ctx, V_NUM);
    mpz_ptr q = mpq_numref(r->u.q);
    if (op == RASP_UN_TRUNC) {
      mpz_tdiv_q(q, mpq_numref(x), mpq_denref(x));
    } else { /* Python's round: the nearest integer, ties to the even one */
      mpz_t rem;
      mpz_init(rem);
      mpz_fdiv_qr(q, rem, mpq_numref(x), mpq_denref(x));
      mpz_mul_2exp(rem, rem, 1);
      int c = mpz_cmp(rem, mpq_denref(x));
      if (c > 0 || (c == 0 && mpz_odd_p(q))) mpz_add_ui(q, q, 1);
      mpz_clear(rem);
    }
    mpq_clear(x);
    return r;
  }
  default: break;
  }
  raspV_error(ctx, pos, "bad unary operator");
}

static int value_cmp_at(rasp_ctx *ctx, value *a, value *b, rasp_pos pos, int depth) {
  if (raspV_is_num(a) && raspV_is_num(b)) {
    if ((a->tag | b->tag) & TAG_ID)
      raspV_ids_seen(ctx, pos, "an id compared by order (<, >, min, max, sorted)");
    mpq_t x, y;
    mpq_inits(x, y, NULL);
    num_get(x, a);
    num_get(y, b);
    int c = mpq_cmp(x, y);
    mpq_clears(x, y, NULL);
    return c < 0 ? -1 : c > 0;
  }
  if (a->kind == V_STR && b->kind == V_STR) {
    size_t n = a->u.str.len < b->u.str.len ? a->u.str.len : b->u.str.len;
    int c = memcmp(a->u.str.s, b->u.str.s, n);
    if (c) return c < 0 ? -1 : 1;
    return a->u.str.len < b->u.str.len ? -1 : a->u.str.len > b->u.str.len;
  }
  if ((a->kind == V_TUPLE || a->kind == V_LIST) && a->kind == b->kind) {
    if (a == b) return 0;
    if (depth >= RASP_MAX_NEST)
      raspV_raise(ctx, RASP_E_LIMIT, pos, "ordering containers nested more than %d deep (does a list hold "
                            "itself?)", RASP_MAX_NEST);
    for (int i = 0; i < a->u.list.n && i < b->u.list.n; i++) {
      int c = value_cmp_at(ctx, a->u.list.items[i], b->u.list.items[i], pos, depth + 1);
      if (c) return c;
    }
    return a->u.list.n < b->u.list.n ? -1 : a->u.list.n > b->u.list.n;
  }
  raspV_raise(ctx, RASP_E_TYPE, pos, "cannot order %s and %s", raspV_kind_name(a), raspV_kind_name(b));
}

static int value_cmp(rasp_ctx *ctx, value *a, value *b, rasp_pos pos) {
  return value_cmp_at(ctx, a, b, pos, 0);
}

static value *concat(rasp_ctx *ctx, value *a, value *b) {
  value *r = raspV_list(ctx, a->kind, 0);
  for (int i = 0; i < a->u.list.n; i++) raspV_list_push(ctx, r, a->u.list.items[i]);
  for (int i = 0; i < b->u.list.n; i++) raspV_list_push(ctx, r, b->u.list.items[i]);
  return r;
}

/* Integers that fit a long: most trace-time arithmetic (loop counters,
** positions, ids) takes this path instead of GMP. */
static int as_long(const value *v, long *out) {
  if (v->kind == V_BOOL) {
    *out = v->u.b;
    return 1;
  }
  if (v->kind == V_NUM) { /* one-limb integers without calls into GMP */
    const __mpz_struct *num = mpq_numref(v->u.q), *den = mpq_denref(v->u.q);
    if (den->_mp_size == 1 && den->_mp_d[0] == 1 && num->_mp_size >= -1 &&
        num->_mp_size <= 1 && (num->_mp_size == 0 || num->_mp_d[0] <= (mp_limb_t)LONG_MAX)) {
      *out = num->_mp_size == 0 ? 0
             : num->_mp_size > 0 ? (long)num->_mp_d[0] : -(long)num->_mp_d[0];
      return 1;
    }
  }
  if (v->kind != V_NUM || mpz_cmp_ui(mpq_denref(v->u.q), 1) != 0 ||
      !mpz_fits_slong_p(mpq_numref(v->u.q)))
    return 0;
  *out = mpz_get_si(mpq_numref(v->u.q));
  return 1;
}

static value *long_binop(rasp_ctx *ctx, rasp_binop op, long x, long y) {
  long r;
  switch (op) {
  case RASP_BIN_EQ: return raspV_bool(ctx, x == y);
  case RASP_BIN_NE: return raspV_bool(ctx, x != y);
  case RASP_BIN_LT: return raspV_bool(ctx, x < y);
  case RASP_BIN_LE: return raspV_bool(ctx, x <= y);
  case RASP_BIN_GT: return raspV_bool(ctx, x > y);
  case RASP_BIN_GE: return raspV_bool(ctx, x >= y);
  case RASP_BIN_ADD: if (__builtin_add_overflow(x, y, &r)) return NULL; break;
  case RASP_BIN_SUB: if (__builtin_sub_overflow(x, y, &r)) return NULL; break;
  case RASP_BIN_MUL: if (__builtin_mul_overflow(x, y, &r)) return NULL; break;
  case RASP_BIN_FLOORDIV:
  case RASP_BIN_MOD:
    if (y == 0 || (x == LONG_MIN && y == -1)) return NULL; /* GMP path reports it */
    r = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) r--;
    if (op == RASP_BIN_MOD) r = x - r * y;
    break;
  default: return NULL;
  }
  return raspV_num_si(ctx, r);
}

static const char *ids_binop_what(rasp_binop op) {
  switch (op) {
  case RASP_BIN_LT: case RASP_BIN_LE: case RASP_BIN_GT: case RASP_BIN_GE:
  case RASP_BIN_MIN: case RASP_BIN_MAX:
    return "an id compared by order (<, >, min, max, sorted)";
  default: return "arithmetic on an id";
  }
}

/* The tracer's provenance: an id that reaches arithmetic or an order
** comparison is recorded (raspV_ids_seen), and equality is checked to
** compare ids with ids (raspV_ids_eq), also inside tuples and lists. */
static void note_ids(rasp_ctx *ctx, rasp_binop op, value *a, value *b, rasp_pos pos) {
  if (__builtin_expect((a->tag | b->tag) & TAG_ID, 0) && !ctx->ir.ids_what) {
    if (op == RASP_BIN_EQ || op == RASP_BIN_NE) raspV_ids_eq(ctx, a, b, pos);
    else if (op != RASP_BIN_AND && op != RASP_BIN_OR) /* those read truth only */
      raspV_ids_seen(ctx, pos, ids_binop_what(op));
  } else if (__builtin_expect(op == RASP_BIN_EQ || op == RASP_BIN_NE, 0) &&
             (a->kind == V_TUPLE || a->kind == V_LIST) && !ctx->ir.ids_what) {
    raspV_ids_eq(ctx, a, b, pos);
  }
}

/* + on strings and on lists or tuples, * of a list or tuple by a count;
** NULL for any other operands. */
static value *container_binop(rasp_ctx *ctx, rasp_binop op, value *a, value *b, rasp_pos pos) {
  if (op == RASP_BIN_ADD && a->kind == V_STR && b->kind == V_STR) {
    if (a->u.str.len + b->u.str.len > ctx->limits.max_string)
      raspV_raise(ctx, RASP_E_LIMIT, pos, "string too long: more than %zu bytes (the size limit for strings)",
                  ctx->limits.max_string);
    value *r = raspV_new(ctx, V_STR);
    r->u.str.len = a->u.str.len + b->u.str.len;
    r->u.str.s = raspM_alloc(r->u.str.len + 1);
    memcpy(r->u.str.s, a->u.str.s, a->u.str.len);
    memcpy(r->u.str.s + a->u.str.len, b->u.str.s, b->u.str.len);
    return r;
  }
  if (op == RASP_BIN_ADD && (a->kind == V_LIST || a->kind == V_TUPLE) && a->kind == b->kind)
    return concat(ctx, a, b);
  if (op == RASP_BIN_MUL && (a->kind == V_LIST || a->kind == V_TUPLE) && raspV_is_num(b)) {
    int64_t k = raspV_int(ctx, b, pos, "the repeat count");
    if (a->u.list.n == 0 || k < 0) k = 0; /* [] * 10**18 looped 10**18 times */
    if (k > 0 && (uint64_t)k > ctx->limits.max_list / (uint64_t)a->u.list.n)
      raspV_raise(ctx, RASP_E_LIMIT, pos, "list longer than the limit of %zu elements", ctx->limits.max_list);
    value *r = raspV_list(ctx, a->kind, 0);
    for (int64_t i = 0; i < k; i++)
      for (int j = 0; j < a->u.list.n; j++) raspV_list_push(ctx, r, a->u.list.items[j]);
    return r;
  }
  return NULL;
}

/* r = x ** y for an integer y; the reason when it cannot be computed, or
** *too_big when the result would pass the size cap. */
static const char *num_pow(rasp_ctx *ctx, mpq_t r, const mpq_t x, const mpq_t y, int *too_big) {
  if (mpz_cmp_ui(mpq_denref(y), 1) != 0) return "'**' needs an integer exponent";
  if (!mpz_fits_slong_p(mpq_numref(y)) || labs(mpz_get_si(mpq_numref(y))) > 100000)
    return "exponent too large";
  long e = mpz_get_si(mpq_numref(y));
  if (e < 0 && mpq_sgn(x) == 0) return "division by zero";
  unsigned long ue = (unsigned long)(e < 0 ? -e : e);
  /* |a|**e has more than (bits(|a|) - 1) * e bits, and at most
     bits(|a|) * e, which is then below twice the cap: safe to compute */
  size_t bn = mpz_sizeinbase(mpq_numref(x), 2), bd = mpz_sizeinbase(mpq_denref(x), 2);
  if ((double)(bn - 1 + bd - 1) * (double)ue > (double)ctx->limits.max_num_bits) {
    *too_big = 1;
    return NULL;
  }
  mpz_pow_ui(mpq_numref(r), mpq_numref(x), ue);
  mpz_pow_ui(mpq_denref(r), mpq_denref(x), ue);
  if (e < 0) mpq_inv(r, r);
  return NULL;
}

/* r = x op y for an arithmetic or bitwise op on rationals; the reason
** when it cannot be computed. */
static const char *num_arith(rasp_ctx *ctx, rasp_binop op, mpq_t r, const mpq_t x,
                             const mpq_t y, int *too_big) {
  switch (op) {
  case RASP_BIN_ADD: mpq_add(r, x, y); return NULL;
  case RASP_BIN_SUB: mpq_sub(r, x, y); return NULL;
  case RASP_BIN_MUL: mpq_mul(r, x, y); return NULL;
  case RASP_BIN_DIV:
    if (mpq_sgn(y) == 0) return "division by zero";
    mpq_div(r, x, y);
    return NULL;
  case RASP_BIN_FLOORDIV:
  case RASP_BIN_MOD: {
    if (mpq_sgn(y) == 0) return "division by zero";
    mpq_t qt;
    mpq_init(qt);
    mpq_div(qt, x, y);
    mpz_fdiv_q(mpq_numref(r), mpq_numref(qt), mpq_denref(qt));
    mpz_set_ui(mpq_denref(r), 1);
    if (op == RASP_BIN_MOD) { /* x - y * floor(x / y) */
      mpq_mul(qt, y, r);
      mpq_sub(r, x, qt);
    }
    mpq_clear(qt);
    return NULL;
  }
  case RASP_BIN_POW: return num_pow(ctx, r, x, y, too_big);
  case RASP_BIN_BITAND:
  case RASP_BIN_BITOR:
  case RASP_BIN_BITXOR:
    if (mpz_cmp_ui(mpq_denref(x), 1) || mpz_cmp_ui(mpq_denref(y), 1))
      return "bitwise operators need integers";
    if (op == RASP_BIN_BITAND) mpz_and(mpq_numref(r), mpq_numref(x), mpq_numref(y));
    else if (op == RASP_BIN_BITOR) mpz_ior(mpq_numref(r), mpq_numref(x), mpq_numref(y));
    else mpz_xor(mpq_numref(r), mpq_numref(x), mpq_numref(y));
    return NULL;
  default: return "unsupported operator";
  }
}

/* A binary operator on two values that are not sequences or selectors
** (raspV_binop in rtrace.c sends those to the IR): computed now, with
** machine longs where the operands allow and GMP otherwise.  The plan:
** record ids, try longs, then comparisons and logic on any values, then
** strings and containers, then numbers (booleans bitwise stay booleans). */
value *raspV_scalar_binop(rasp_ctx *ctx, rasp_binop op, value *a, value *b, rasp_pos pos) {
  long lx, ly;
  note_ids(ctx, op, a, b, pos);
  if (op != RASP_BIN_AND && op != RASP_BIN_OR && !(a->kind == V_BOOL && b->kind == V_BOOL) &&
      as_long(a, &lx) && as_long(b, &ly)) {
    value *r = long_binop(ctx, op, lx, ly);
    if (r) return r;
  }
  switch (op) {
  case RASP_BIN_EQ: return raspV_bool(ctx, raspV_equal_checked(ctx, a, b, pos));
  case RASP_BIN_NE: return raspV_bool(ctx, !raspV_equal_checked(ctx, a, b, pos));
  case RASP_BIN_LT: return raspV_bool(ctx, value_cmp(ctx, a, b, pos) < 0);
  case RASP_BIN_LE: return raspV_bool(ctx, value_cmp(ctx, a, b, pos) <= 0);
  case RASP_BIN_GT: return raspV_bool(ctx, value_cmp(ctx, a, b, pos) > 0);
  case RASP_BIN_GE: return raspV_bool(ctx, value_cmp(ctx, a, b, pos) >= 0);
  case RASP_BIN_MIN: return value_cmp(ctx, a, b, pos) <= 0 ? a : b;
  case RASP_BIN_MAX: return value_cmp(ctx, a, b, pos) >= 0 ? a : b;
  case RASP_BIN_AND: return raspV_truth(ctx, a, pos) ? b : a;
  case RASP_BIN_OR: return raspV_truth(ctx, a, pos) ? a : b;
  default: break;
  }
  value *c = container_binop(ctx, op, a, b, pos);
  if (c) return c;
  if (!raspV_is_num(a) || !raspV_is_num(b))
    raspV_raise(ctx, RASP_E_TYPE, pos, "unsupported operand types for '%s': %s and %s",
                raspI_binop_name(op), raspV_kind_name(a), raspV_kind_name(b));
  if (a->kind == V_BOOL && b->kind == V_BOOL &&
      (op == RASP_BIN_BITAND || op == RASP_BIN_BITOR || op == RASP_BIN_BITXOR)) {
    int r = op == RASP_BIN_BITAND ? a->u.b & b->u.b
          : op == RASP_BIN_BITOR  ? a->u.b | b->u.b : a->u.b ^ b->u.b;
    return raspV_bool(ctx, r);
  }
  value *r = raspV_new(ctx, V_NUM);
  mpq_t x, y;
  mpq_inits(x, y, NULL);
  num_get(x, a);
  num_get(y, b);
  int too_big = 0;
  const char *fail = num_arith(ctx, op, r->u.q, x, y, &too_big);
  mpq_clears(x, y, NULL);
  if (too_big) num_too_large(ctx, pos);
  if (fail) raspV_error(ctx, pos, "%s", fail);
  return num_checked(ctx, r, pos);
}
