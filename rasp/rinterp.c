/*
** rinterp.c -- the interpreter, which is also the tracer.
**
** RASP programs are Python-like code, but what they compute is a dataflow
** graph.  This file walks the syntax tree once per trace.  Scalars (exact
** rationals in GMP, booleans, strings, containers, functions) are computed
** on the spot: loops unroll, ifs pick a branch, functions are called.  Any
** operation whose operand is a sequence (SOp) or a selector does not compute
** anything; it appends a node to the context's IR and returns a value that
** names that node.  So after `main(tokens)` returns, the IR holds exactly
** the operations the program performs on its input, for the one input
** length n the context was made for, and nothing of the Python scaffolding.
**
** Because a sequence's elements are unknown while tracing, anything that
** would need them -- an `if` on a sequence, `range` of a sequence, the truth
** of a sequence -- is an error that points to `where`.
**
** Errors longjmp to the innermost catcher (set by every API entry point and
** by the evaluator callback).  That is safe because the context owns every
** allocation made while interpreting: values, environments and syntax trees
** are released together by rasp_ctx_free, never individually.
**
** Programs are untrusted (rasp_access in rasp.h): include() resolves the
** file with realpath and reads it only when it is a .rasp file inside an
** allowed tree, so neither '..' nor a link reaches other files, and a file
** that is not a program is refused before it is read (its content can then
** never show up in an error).  cfunc() is checked in rffi.c.
**
** Provenance.  The vocabulary's ids (d's values, reverse_d's keys) carry a
** tag, and the first place where the program computes with one while
** tracing, rather than moving it or testing it for equality, is recorded in
** the IR for the order analysis (rorder.h); see "provenance" below for the
** exact line between the two.  It only records: what the program does is
** the same with or without it.
*/
#include "rvalue.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rlex.h"
#include "rparse.h"

/* ---------------------------------------------------------------- heap */

/* Values released early (heap_release) go to two spare lists, so the
** verifier's thousands of check() calls do not pay malloc and mpq_init for
** every temporary; numbers keep their mpq_t. */
#define MAX_SPARE 4096

value *raspV_new(rasp_ctx *ctx, vkind kind) {
  value *v;
  if (kind == V_NUM && ctx->spare_num) {
    v = ctx->spare_num;
    ctx->spare_num = v->next_obj;
    ctx->nspare--;
    mpq_set_ui(v->u.q, 0, 1);
  } else if (kind != V_NUM && ctx->spare) {
    v = ctx->spare;
    ctx->spare = v->next_obj;
    ctx->nspare--;
    memset(v, 0, sizeof *v);
  } else {
    v = raspM_alloc(sizeof *v);
    if (kind == V_NUM) mpq_init(v->u.q);
  }
  v->kind = kind;
  v->tag = 0;
  v->serial = ++ctx->serial;
  v->next_obj = ctx->objects;
  ctx->objects = v;
  if (kind == V_STR) v->u.str.sym = -1;
  return v;
}

/* Frees what v owns; returns 1 if v still holds an initialised mpq_t. */
static int free_parts(value *v, int keep_num) {
  switch (v->kind) {
  case V_NUM:
    if (keep_num) return 1;
    mpq_clear(v->u.q);
    break;
  case V_STR: raspM_free(v->u.str.s); break;
  case V_TUPLE:
  case V_LIST: raspM_free(v->u.list.items); break;
  case V_DICT:
    raspM_free(v->u.dict.keys);
    raspM_free(v->u.dict.vals);
    raspM_free(v->u.dict.index);
    break;
  case V_FUNC: raspM_free(v->u.func.defaults); break;
  case V_CFUNC: raspF_free(v->u.cf); break;
  default: break;
  }
  return 0;
}

static void free_value(value *v) {
  free_parts(v, 0);
  raspM_free(v);
}

static void spare_value(rasp_ctx *ctx, value *v) {
  if (ctx->nspare >= MAX_SPARE) {
    free_value(v);
    return;
  }
  if (free_parts(v, 1)) {
    v->next_obj = ctx->spare_num;
    ctx->spare_num = v;
  } else {
    v->kind = V_NONE; /* owns nothing now */
    v->next_obj = ctx->spare;
    ctx->spare = v;
  }
  ctx->nspare++;
}

static env *env_new(rasp_ctx *ctx, env *parent) {
  env *const e = ctx->spare_env ? ctx->spare_env : raspM_alloc(sizeof *e);
  if (e == ctx->spare_env) { /* names and vals keep their capacity */
    ctx->spare_env = e->next_env;
    ctx->nspare_env--;
    e->n = 0;
  }
  e->parent = parent;
  e->serial = ++ctx->serial;
  e->next_env = ctx->envs;
  ctx->envs = e;
  return e;
}

static void free_env(env *e) {
  raspM_free(e->names);
  raspM_free(e->vals);
  raspM_free(e->hash);
  raspM_free(e);
}

/* Releases everything allocated after the mark, unless a barrier saw one of
** those objects escape into an older one. */
static void heap_release(rasp_ctx *ctx, unsigned long long mark) {
  if (ctx->pinned) return;
  while (ctx->objects && ctx->objects->serial > mark) {
    value *v = ctx->objects;
    ctx->objects = v->next_obj;
    spare_value(ctx, v);
  }
  while (ctx->envs && ctx->envs->serial > mark) {
    env *e = ctx->envs;
    ctx->envs = e->next_env;
    if (ctx->nspare_env >= MAX_SPARE || e->hash) {
      free_env(e);
    } else {
      e->next_env = ctx->spare_env;
      ctx->spare_env = e;
      ctx->nspare_env++;
    }
  }
}

void raspV_barrier(rasp_ctx *ctx, unsigned long long holder_serial, value *v) {
  if (ctx->mark && holder_serial <= ctx->mark && v->serial > ctx->mark)
    ctx->pinned = 1;
}

static value *small_int_value(rasp_ctx *ctx, long n);

value *raspV_num_si(rasp_ctx *ctx, long n) {
  value *v = small_int_value(ctx, n);
  if (v) return v;
  v = raspV_new(ctx, V_NUM);
  mpq_set_si(v->u.q, n, 1);
  return v;
}

value *raspV_bool(rasp_ctx *ctx, int b) { return b ? &ctx->true_v : &ctx->false_v; }

value *raspV_str(rasp_ctx *ctx, const char *s, size_t len) {
  value *v = raspV_new(ctx, V_STR);
  v->u.str.s = raspM_strndup(s, len);
  v->u.str.len = len;
  return v;
}

value *raspV_list(rasp_ctx *ctx, vkind kind, int n) {
  value *v = raspV_new(ctx, kind);
  v->u.list.items = raspM_alloc(sizeof(value *) * (size_t)(n ? n : 1));
  v->u.list.n = n;
  v->u.list.cap = n ? n : 1;
  return v;
}

/* A list or dict about to change in place: refused while ctx->frozen if it
** was made before the call (it outlives the call, so a change would make the
** call's result depend on the calls before it). */
static void check_mutable(rasp_ctx *ctx, const value *obj, rasp_pos pos) {
  if (ctx->frozen && obj->serial && obj->serial <= ctx->frozen)
    raspV_raise(ctx, RASP_E_IMPURE, pos, "a function called by tok_map, seq_map, select or "
                "check() may not change %s made outside it (its result must depend on its "
                "arguments alone)", raspV_kind_name(obj));
}

void raspV_list_push(rasp_ctx *ctx, value *list, value *item) {
  if ((size_t)list->u.list.n >= ctx->limits.max_list)
    raspV_raise(ctx, RASP_E_LIMIT, (rasp_pos){0}, "list longer than the limit of %zu elements",
                ctx->limits.max_list);
  RASP_GROW(list->u.list.items, list->u.list.cap, list->u.list.n + 1);
  list->u.list.items[list->u.list.n++] = item;
  raspV_barrier(ctx, list->serial, item);
}

value *raspV_sop(rasp_ctx *ctx, int node, vkind kind) {
  value *v = raspV_new(ctx, kind);
  v->u.node = node;
  return v;
}

/* -------------------------------------------------------------- errors */

static _Noreturn void vraise(rasp_ctx *ctx, rasp_errcode code, rasp_pos pos, const char *fmt,
                              va_list ap) {
  if (pos.src && pos.src->library && ctx->site.src) pos = ctx->site; /* blame the caller */
  if (ctx->err) {
    vsnprintf(ctx->err->msg, sizeof ctx->err->msg, fmt, ap);
    raspR_locate(ctx->err, pos);
    ctx->err->code = code;
    ctx->err->subject[0] = '\0';
    ctx->err->set = 1;
  }
  longjmp(*ctx->catcher, 1);
}

_Noreturn void raspV_error(rasp_ctx *ctx, rasp_pos pos, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vraise(ctx, RASP_E_RUNTIME, pos, fmt, ap);
}

_Noreturn void raspV_raise(rasp_ctx *ctx, rasp_errcode code, rasp_pos pos, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vraise(ctx, code, pos, fmt, ap);
}

/* An unknown name, with the name as the error's subject (front ends give
** hints about some names without reading the message). */
static _Noreturn void unknown_name(rasp_ctx *ctx, rasp_pos pos, const char *fmt, const char *name) {
  if (ctx->err) {
    raspR_setc(ctx->err, RASP_E_NAME, (rasp_pos){0}, fmt, name);
    raspR_subject(ctx->err, name);
  }
  if (pos.src && pos.src->library && ctx->site.src) pos = ctx->site;
  if (ctx->err) raspR_locate(ctx->err, pos);
  longjmp(*ctx->catcher, 1);
}

/* ------------------------------------------------------------- interning */

static size_t hash_str(const char *s) {
  size_t h = 1469598103934665603u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

const char *raspV_intern(rasp_ctx *ctx, const char *s) {
  if (ctx->ninterned * 2 >= ctx->icap) {
    size_t ncap = ctx->icap ? ctx->icap * 2 : 256;
    char **tab = raspM_alloc(ncap * sizeof *tab);
    for (size_t i = 0; i < ctx->icap; i++)
      if (ctx->interned[i]) {
        size_t j = hash_str(ctx->interned[i]) & (ncap - 1);
        while (tab[j]) j = (j + 1) & (ncap - 1);
        tab[j] = ctx->interned[i];
      }
    raspM_free(ctx->interned);
    ctx->interned = tab;
    ctx->icap = ncap;
  }
  size_t j = hash_str(s) & (ctx->icap - 1);
  while (ctx->interned[j]) {
    if (strcmp(ctx->interned[j], s) == 0) return ctx->interned[j];
    j = (j + 1) & (ctx->icap - 1);
  }
  ctx->interned[j] = raspM_strdup(s);
  ctx->ninterned++;
  return ctx->interned[j];
}

/* ------------------------------------------------------------- symbols */

/* The slot of text in the symbol hash: its id, or -1 (a free slot). */
static size_t symbol_slot(const rasp_ctx *ctx, const char *text) {
  size_t j = hash_str(text) & (ctx->symhcap - 1);
  while (ctx->symhash[j] >= 0) {
    if (strcmp(ctx->syms[ctx->symhash[j]], text) == 0) return j;
    j = (j + 1) & (ctx->symhcap - 1);
  }
  return j;
}

int64_t rasp_symbol(rasp_ctx *ctx, const char *text) {
  if ((size_t)ctx->nsyms * 2 >= ctx->symhcap) {
    size_t ncap = ctx->symhcap ? ctx->symhcap * 2 : 256;
    int *tab = raspM_alloc(ncap * sizeof *tab);
    for (size_t i = 0; i < ncap; i++) tab[i] = -1;
    for (int64_t i = 0; i < ctx->nsyms; i++) {
      size_t j = hash_str(ctx->syms[i]) & (ncap - 1);
      while (tab[j] >= 0) j = (j + 1) & (ncap - 1);
      tab[j] = (int)i;
    }
    raspM_free(ctx->symhash);
    ctx->symhash = tab;
    ctx->symhcap = ncap;
  }
  size_t j = symbol_slot(ctx, text);
  if (ctx->symhash[j] >= 0) return ctx->symhash[j];
  RASP_GROW(ctx->syms, ctx->symcap, ctx->nsyms + 1);
  ctx->syms[ctx->nsyms] = raspM_strdup(text);
  ctx->symhash[j] = (int)ctx->nsyms;
  return ctx->nsyms++;
}

int64_t raspV_symbol_of(rasp_ctx *ctx, value *str) {
  if (str->u.str.sym < 0) str->u.str.sym = rasp_symbol(ctx, str->u.str.s);
  return str->u.str.sym;
}

static const char *symname_cb(void *user, int64_t id) {
  rasp_ctx *ctx = user;
  return id >= 0 && id < ctx->nsyms ? ctx->syms[id] : NULL;
}

/* --------------------------------------------------------- environments */

static int env_find(const env *e, const char *name) {
  if (e->hash) {
    size_t j = ((uintptr_t)name >> 4) & (size_t)(e->hcap - 1);
    while (e->hash[j] >= 0) {
      if (e->names[e->hash[j]] == name) return e->hash[j];
      j = (j + 1) & (size_t)(e->hcap - 1);
    }
    return -1;
  }
  for (int i = 0; i < e->n; i++)
    if (e->names[i] == name) return i;
  return -1;
}

static void env_rehash(env *e) {
  int ncap = e->hcap ? e->hcap * 2 : 64;
  raspM_free(e->hash);
  e->hash = raspM_alloc(sizeof(int) * (size_t)ncap);
  e->hcap = ncap;
  for (int i = 0; i < ncap; i++) e->hash[i] = -1;
  for (int i = 0; i < e->n; i++) {
    size_t j = ((uintptr_t)e->names[i] >> 4) & (size_t)(ncap - 1);
    while (e->hash[j] >= 0) j = (j + 1) & (size_t)(ncap - 1);
    e->hash[j] = i;
  }
}

/* Appends a binding the scope does not have yet. */
static void env_push(env *e, const char *name, value *v) {
  int cap = e->cap;
  RASP_GROW(e->names, cap, e->n + 1);
  RASP_GROW(e->vals, e->cap, e->n + 1);
  e->names[e->n] = name;
  e->vals[e->n] = v;
  e->n++;
  if (e->n > 16 && e->n * 2 > e->hcap) env_rehash(e);
  else if (e->hash) {
    size_t j = ((uintptr_t)name >> 4) & (size_t)(e->hcap - 1);
    while (e->hash[j] >= 0) j = (j + 1) & (size_t)(e->hcap - 1);
    e->hash[j] = e->n - 1;
  }
}

static void env_set(rasp_ctx *ctx, env *e, const char *name, value *v) {
  int i = env_find(e, name);
  if (i >= 0) e->vals[i] = v;
  else env_push(e, name, v);
  raspV_barrier(ctx, e->serial, v);
}

/* A parameter into a fresh scope: the parser rejects duplicate parameter
** names, so there is nothing to look up first. */
static void env_append(rasp_ctx *ctx, env *e, const char *name, value *v) {
  env_push(e, name, v);
  raspV_barrier(ctx, e->serial, v);
}

static value *env_get(env *e, const char *name) {
  for (; e; e = e->parent) {
    int i = env_find(e, name);
    if (i >= 0) return e->vals[i];
  }
  return NULL;
}

/* ------------------------------------------------------------- numbers */

static int is_num(const value *v) { return v->kind == V_NUM || v->kind == V_BOOL; }

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
  if (v->kind == V_NUM && num_bits(v->u.q) > ctx->limits.max_num_bits) num_too_large(ctx, pos);
  return v;
}

/* Parses a numeric literal exactly: 12, 0x1f, 0.5, .5, 1e3, 2.5e-3.  The
** digits go to GMP in one mpz_set_str (subquadratic), not one multiply by
** ten per digit, which made a 400,000-digit literal take seconds. */
static value *parse_number(rasp_ctx *ctx, const char *text, rasp_pos pos) {
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
  default:
    raspV_error(ctx, pos, "a sequence element must be a number, a boolean or a "
                          "string, not %s", raspV_kind_name(v));
  }
}

/* Moves v from the heap list to the constants, which are never released
** early: values are immutable, so one object can stand for a number or a
** symbol wherever it occurs. */
static value *make_const(rasp_ctx *ctx, value *v) {
  if (ctx->objects == v) {
    ctx->objects = v->next_obj;
    v->next_obj = ctx->consts;
    ctx->consts = v;
    v->serial = 0;
  }
  return v;
}

#define SMALL_INT_MIN (-128)
#define SMALL_INT_MAX 4096

/* The shared value of a small integer, or NULL outside the cached range. */
static value *small_int_value(rasp_ctx *ctx, long n) {
  if (n < SMALL_INT_MIN || n > SMALL_INT_MAX) return NULL;
  value **slot = &ctx->intcache[n - SMALL_INT_MIN];
  if (!*slot) {
    value *v = raspV_new(ctx, V_NUM);
    mpq_set_si(v->u.q, n, 1);
    *slot = make_const(ctx, v);
  }
  return *slot;
}

/* Elements become values often (every output check, every map call):
** small integers and symbols come from caches instead of new objects. */
value *raspV_from_elem(rasp_ctx *ctx, rasp_elem e) {
  /* the two common cases first, straight from the caches */
  if (e.den == 1 && e.num >= SMALL_INT_MIN && e.num <= SMALL_INT_MAX &&
      ctx->intcache[e.num - SMALL_INT_MIN])
    return ctx->intcache[e.num - SMALL_INT_MIN];
  if (e.den == RASP_DEN_SYM && e.num >= 0 && e.num < ctx->symcache_n && ctx->symcache[e.num])
    return ctx->symcache[e.num];
  if (e.den == RASP_DEN_BOOL) return raspV_bool(ctx, e.num != 0);
  if (e.den == RASP_DEN_SYM) {
    if (e.num >= 0 && e.num < ctx->nsyms) {
      if (ctx->symcache_n < ctx->nsyms) {
        ctx->symcache = raspM_realloc(ctx->symcache, sizeof(value *) * (size_t)ctx->nsyms);
        for (int64_t i = ctx->symcache_n; i < ctx->nsyms; i++) ctx->symcache[i] = NULL;
        ctx->symcache_n = ctx->nsyms;
      }
      if (!ctx->symcache[e.num]) {
        const char *s = ctx->syms[e.num];
        value *v = make_const(ctx, raspV_str(ctx, s, strlen(s)));
        v->u.str.sym = e.num;
        ctx->symcache[e.num] = v;
      }
      return ctx->symcache[e.num];
    }
    value *v = raspV_str(ctx, "?", 1);
    v->u.str.sym = e.num;
    return v;
  }
  if (e.den == 1 && e.num >= SMALL_INT_MIN && e.num <= SMALL_INT_MAX)
    return small_int_value(ctx, (long)e.num);
  value *v = raspV_new(ctx, V_NUM);
  mpq_set_si(v->u.q, (long)e.num, (unsigned long)e.den);
  return v;
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
  if (is_num(a) && is_num(b)) {
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
static int equal_checked(rasp_ctx *ctx, const value *a, const value *b, rasp_pos pos) {
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

/* ------------------------------------------------------------ provenance
** What may be done with an id (a TAG_ID number) without looking at the
** numbering: move it anywhere (the value object, and so its tag, is
** shared); compare it with == / != to another id or to a non-number;
** test its truth (every id is at least 1); take abs(), +x or int() of it
** (the id itself); look reverse_d up with it; hand it to a sequence
** operation (the IR analysis judges those).  Everything else -- and
** every walk over d or reverse_d, whose order is the id order -- is
** recorded here, at its first place, for rorder.  Callbacks from the
** evaluator are left out: their results are judged on the IR (tok_map,
** seq_map and custom predicates are never invariant there). */
void raspV_ids_seen(rasp_ctx *ctx, rasp_pos pos, const char *what) {
  if (ctx->ir.ids_what || ctx->in_callback) return;
  ctx->ir.ids_what = what;
  ctx->ir.ids_pos = pos.src ? pos : ctx->site;
}

/* Whether v holds an id or is d / reverse_d, searching lists, tuples and
** dicts.  A list can hold itself, so the search goes at most 64 deep and
** visits at most *budget values, and past either answers yes, which only
** ever costs a proof. */
static int holds_id_in(const value *v, long *budget, int depth) {
  if (v->tag || --*budget < 0) return 1;
  if (v->kind == V_LIST || v->kind == V_TUPLE) {
    if (v->u.list.n && depth > 64) return 1;
    for (int i = 0; i < v->u.list.n; i++)
      if (holds_id_in(v->u.list.items[i], budget, depth + 1)) return 1;
  } else if (v->kind == V_DICT) {
    if (v->u.dict.n && depth > 64) return 1;
    for (int i = 0; i < v->u.dict.n; i++)
      if (holds_id_in(v->u.dict.keys[i], budget, depth + 1) ||
          holds_id_in(v->u.dict.vals[i], budget, depth + 1))
        return 1;
  }
  return 0;
}

static int holds_id(const value *v) {
  long budget = 1L << 22;
  return holds_id_in(v, &budget, 0);
}

void raspV_ids_in(rasp_ctx *ctx, value *v, rasp_pos pos, const char *what) {
  if (!ctx->ir.ids_what && !ctx->in_callback && holds_id(v)) raspV_ids_seen(ctx, pos, what);
}

/* A number that is not an id, anywhere in v (reverse_d's keys are ids). */
static int holds_plain_number(const value *v) {
  if (is_num(v)) return !(v->tag & TAG_ID);
  if (v->kind == V_TUPLE)
    for (int i = 0; i < v->u.list.n; i++)
      if (holds_plain_number(v->u.list.items[i])) return 1;
  return 0;
}

void raspV_ids_key(rasp_ctx *ctx, value *dict, value *key, rasp_pos pos) {
  if (ctx->ir.ids_what || ctx->in_callback) return;
  if (dict->tag & TAG_REVERSE_D) {
    if (holds_plain_number(key))
      raspV_ids_seen(ctx, pos, "reverse_d looked up with a number that is not an id from d");
  } else if (holds_id(key)) {
    raspV_ids_seen(ctx, pos, "an id used as the key of a dict other than reverse_d");
  }
}

/* a == b says nothing about the numbering unless it sets an id against a
** number that is not one (d['a'] == 3), here or inside tuples and lists. */
static void ids_eq_in(rasp_ctx *ctx, const value *a, const value *b, rasp_pos pos, int depth) {
  if (is_num(a) && is_num(b)) {
    if ((a->tag ^ b->tag) & TAG_ID)
      raspV_ids_seen(ctx, pos, "an id compared with a number that is not an id");
    return;
  }
  if ((a->kind == V_LIST || a->kind == V_TUPLE) && a->kind == b->kind &&
      a->u.list.n == b->u.list.n && a != b) {
    if (depth > 64) { /* lists that hold themselves: assume the worst */
      raspV_ids_seen(ctx, pos, "an id compared with a number that is not an id");
      return;
    }
    for (int i = 0; i < a->u.list.n && !ctx->ir.ids_what; i++)
      ids_eq_in(ctx, a->u.list.items[i], b->u.list.items[i], pos, depth + 1);
  }
}

static void ids_eq(rasp_ctx *ctx, const value *a, const value *b, rasp_pos pos) {
  ids_eq_in(ctx, a, b, pos, 0);
}

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

/* A growing string for repr.  With max set it stops at max bytes and ends
** in "..." then (over is set): lists can share items, so the text of a
** small structure can be exponentially long. */
typedef struct strbuf { char *s; size_t n, cap, max; int over; } strbuf;

static void sb_add(strbuf *b, const char *s, size_t len) {
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
    sb_add(b, "...", 3);
    b->over = 1;
  }
}

static void sb_puts(strbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

static void repr_into(rasp_ctx *ctx, value *v, strbuf *b, int depth) {
  if (b->over) return;
  if (depth > 50) { sb_puts(b, "..."); return; }
  char tmp[64];
  switch (v->kind) {
  case V_NONE: sb_puts(b, "None"); break;
  case V_BOOL: sb_puts(b, v->u.b ? "True" : "False"); break;
  case V_NUM: {
    char *s = mpq_get_str(NULL, 10, v->u.q);
    sb_puts(b, s);
    void (*freefn)(void *, size_t);
    mp_get_memory_functions(NULL, NULL, &freefn);
    freefn(s, strlen(s) + 1);
    break;
  }
  case V_STR:
    sb_puts(b, "'");
    sb_add(b, v->u.str.s, v->u.str.len);
    sb_puts(b, "'");
    break;
  case V_TUPLE:
  case V_LIST: {
    sb_puts(b, v->kind == V_LIST ? "[" : "(");
    for (int i = 0; i < v->u.list.n && !b->over; i++) {
      if (i) sb_puts(b, ", ");
      repr_into(ctx, v->u.list.items[i], b, depth + 1);
    }
    if (v->kind == V_TUPLE && v->u.list.n == 1) sb_puts(b, ",");
    sb_puts(b, v->kind == V_LIST ? "]" : ")");
    break;
  }
  case V_DICT:
    sb_puts(b, "{");
    for (int i = 0; i < v->u.dict.n && !b->over; i++) {
      if (i) sb_puts(b, ", ");
      repr_into(ctx, v->u.dict.keys[i], b, depth + 1);
      sb_puts(b, ": ");
      repr_into(ctx, v->u.dict.vals[i], b, depth + 1);
    }
    sb_puts(b, "}");
    break;
  case V_FUNC:
    sb_puts(b, "<function ");
    sb_puts(b, v->u.func.def->kind == AST_DEF ? v->u.func.def->str : "<lambda>");
    sb_puts(b, ">");
    break;
  case V_BUILTIN:
    sb_puts(b, "<builtin ");
    sb_puts(b, v->u.bi->name);
    sb_puts(b, ">");
    break;
  case V_CFUNC: sb_puts(b, "<C function>"); break;
  case V_SOP:
  case V_SEL:
    snprintf(tmp, sizeof tmp, "<%s #%d>", v->kind == V_SOP ? "sequence" : "selector",
             v->u.node);
    sb_puts(b, tmp);
    break;
  }
}

char *raspV_repr(rasp_ctx *ctx, value *v) {
  strbuf b = {0};
  b.max = ctx->limits.max_string;
  sb_puts(&b, "");
  repr_into(ctx, v, &b, 0);
  return b.s;
}

/* ---------------------------------------------------------------- nodes */

rasp_type raspV_node_type(rasp_ctx *ctx, int node) { return ctx->ir.nodes[node].type; }

int raspV_add_node(rasp_ctx *ctx, rasp_op op, rasp_type type, int aux,
                   const int *in, int nin, rasp_pos pos) {
  /* a map's function (ir_callback) and check() (rasp_call_check) run while
  ** evaluators hold the IR (its nodes, their plans sized to them; the
  ** verifier's threads evaluate as check() runs): a node made there would
  ** move it under them */
  if (ctx->frozen)
    raspV_raise(ctx, RASP_E_IMPURE, pos, "a function called by tok_map, seq_map, select or "
                "check() may not make a sequence operation (it runs on values, not on "
                "sequences)");
  if (ctx->ir.nnodes >= ctx->limits.max_nodes)
    raspV_raise(ctx, RASP_E_LIMIT, pos, "the program makes more than %d sequence operations "
                          "(the limit); is a loop running too long?",
                ctx->limits.max_nodes);
  rasp_ir_node node;
  memset(&node, 0, sizeof node);
  node.op = op;
  node.type = type;
  node.aux = aux;
  node.nin = nin;
  for (int i = 0; i < nin; i++) node.in[i] = in[i];
  /* a node made inside the stdlib is attributed to the user's call */
  node.pos = pos.src && pos.src->library && ctx->site.src ? ctx->site : pos;
  node.c.den = 1;
  return raspI_add(&ctx->ir, &node);
}

static rasp_type elem_type(rasp_elem e) {
  return e.den == RASP_DEN_BOOL ? RASP_T_BOOL : e.den == 1 ? RASP_T_INT : RASP_T_ANY;
}

static int full_node(rasp_ctx *ctx, rasp_elem c, rasp_pos pos) {
  int id = raspV_add_node(ctx, RASP_OP_FULL, elem_type(c), 0, NULL, 0, pos);
  ctx->ir.nodes[id].c = c;
  return id;
}

value *raspV_as_sop(rasp_ctx *ctx, value *v, rasp_pos pos) {
  if (v->kind == V_SOP) return v;
  if (v->kind == V_SEL)
    raspV_raise(ctx, RASP_E_TYPE, pos, "expected a sequence, got a selector (aggregate it first)");
  return raspV_sop(ctx, full_node(ctx, raspV_to_elem(ctx, v, pos), pos), V_SOP);
}

static int intish(rasp_type t) { return t == RASP_T_INT || t == RASP_T_BOOL; }

static rasp_type binop_type(rasp_binop op, rasp_type a, rasp_type b) {
  switch (op) {
  case RASP_BIN_EQ: case RASP_BIN_NE: case RASP_BIN_LT: case RASP_BIN_LE:
  case RASP_BIN_GT: case RASP_BIN_GE: case RASP_BIN_AND: case RASP_BIN_OR:
    return RASP_T_BOOL;
  case RASP_BIN_BITAND: case RASP_BIN_BITOR: case RASP_BIN_BITXOR:
  case RASP_BIN_MIN: case RASP_BIN_MAX:
    if (a == RASP_T_BOOL && b == RASP_T_BOOL) return RASP_T_BOOL;
    return intish(a) && intish(b) ? RASP_T_INT : RASP_T_ANY;
  case RASP_BIN_DIV: case RASP_BIN_POW: return RASP_T_ANY;
  default: return intish(a) && intish(b) ? RASP_T_INT : RASP_T_ANY;
  }
}

static value *sel_combine(rasp_ctx *ctx, rasp_op op, value *a, value *b, rasp_pos pos) {
  if (a->kind != V_SEL || (b && b->kind != V_SEL))
    raspV_raise(ctx, RASP_E_TYPE, pos, "cannot combine a selector with %s",
                raspV_kind_name(a->kind != V_SEL ? a : b));
  int in[2] = {a->u.node, b ? b->u.node : 0};
  int id = raspV_add_node(ctx, op, RASP_T_SEL, 0, in, b ? 2 : 1, pos);
  /* causal is contagious: the mask k <= q applies after the combination,
     so ~causal(A) is causal(~A) (rcausal.h) */
  ctx->ir.nodes[id].flags = (ctx->ir.nodes[in[0]].flags | (b ? ctx->ir.nodes[in[1]].flags : 0u)) &
                            RASP_CAUSAL;
  return raspV_sop(ctx, id, V_SEL);
}

static value *scalar_binop(rasp_ctx *ctx, rasp_binop op, value *a, value *b, rasp_pos pos);

/* Token-valued sequences hold vocabulary ids, so `tokens == "l"` would
** compare ids with a symbol and be False everywhere.  A string compared for
** equality with them becomes its id; any other operation on the two is
** refused, saying how to write it. */
static value *token_operand(rasp_ctx *ctx, rasp_binop op, value *v, value *other, rasp_pos pos) {
  if (v->kind != V_STR || other->kind != V_SOP ||
      !(ctx->ir.nodes[other->u.node].flags & RASP_TOKEN_IDS))
    return v;
  if (op != RASP_BIN_EQ && op != RASP_BIN_NE)
    raspV_error(ctx, pos, "'%s' between token ids and the string '%s': the tokens are "
                "vocabulary ids; use the id d['%s']", raspI_binop_name(op), v->u.str.s,
                v->u.str.s);
  if (ctx->nvocab == 0)
    raspV_error(ctx, pos, "the tokens are vocabulary ids and there is no vocabulary to "
                "look '%s' up in", v->u.str.s);
  int64_t id = strlen(v->u.str.s) == v->u.str.len ? rasp_vocab_id(ctx, v->u.str.s) : 0;
  if (!id)
    raspV_error(ctx, pos, "'%s' is not in the vocabulary, so no token can equal it "
                "(the tokens are vocabulary ids: d maps symbols to them)", v->u.str.s);
  return raspV_num_si(ctx, (long)id);
}

value *raspV_binop(rasp_ctx *ctx, rasp_binop op, value *a, value *b, rasp_pos pos) {
  if (a->kind == V_SEL || b->kind == V_SEL) {
    if (op == RASP_BIN_AND || op == RASP_BIN_BITAND)
      return sel_combine(ctx, RASP_OP_SEL_AND, a, b, pos);
    if (op == RASP_BIN_OR || op == RASP_BIN_BITOR)
      return sel_combine(ctx, RASP_OP_SEL_OR, a, b, pos);
    raspV_error(ctx, pos, "operator '%s' is not defined on selectors (only & | ~ and/or/not)",
                raspI_binop_name(op));
  }
  if (a->kind != V_SOP && b->kind != V_SOP) return scalar_binop(ctx, op, a, b, pos);
  a = token_operand(ctx, op, a, b, pos);
  b = token_operand(ctx, op, b, a, pos);
  value *sa = raspV_as_sop(ctx, a, pos), *sb = raspV_as_sop(ctx, b, pos);
  int in[2] = {sa->u.node, sb->u.node};
  rasp_type t = binop_type(op, raspV_node_type(ctx, in[0]), raspV_node_type(ctx, in[1]));
  return raspV_sop(ctx, raspV_add_node(ctx, RASP_OP_BINARY, t, op, in, 2, pos), V_SOP);
}

value *raspV_unop(rasp_ctx *ctx, rasp_unop op, value *a, rasp_pos pos) {
  if (a->kind == V_SEL) {
    if (op == RASP_UN_NOT || op == RASP_UN_INVERT)
      return sel_combine(ctx, RASP_OP_SEL_NOT, a, NULL, pos);
    raspV_error(ctx, pos, "operator '%s' is not defined on selectors", raspI_unop_name(op));
  }
  if (a->kind == V_SOP) {
    rasp_type ta = raspV_node_type(ctx, a->u.node), t;
    if (op == RASP_UN_NOT) t = RASP_T_BOOL;
    else if (op == RASP_UN_INVERT) t = ta == RASP_T_BOOL ? RASP_T_BOOL : intish(ta) ? RASP_T_INT : RASP_T_ANY;
    else t = intish(ta) ? RASP_T_INT : RASP_T_ANY;
    int in[1] = {a->u.node};
    return raspV_sop(ctx, raspV_add_node(ctx, RASP_OP_UNARY, t, op, in, 1, pos), V_SOP);
  }
  switch (op) {
  case RASP_UN_NOT: return raspV_bool(ctx, !raspV_truth(ctx, a, pos));
  case RASP_UN_POS:
  case RASP_UN_NEG:
  case RASP_UN_ABS:
  case RASP_UN_INVERT: {
    if (!is_num(a))
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
  default: break;
  }
  raspV_error(ctx, pos, "bad unary operator");
}

static int value_cmp_at(rasp_ctx *ctx, value *a, value *b, rasp_pos pos, int depth) {
  if (is_num(a) && is_num(b)) {
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

static value *scalar_binop(rasp_ctx *ctx, rasp_binop op, value *a, value *b, rasp_pos pos) {
  long lx, ly;
  if (__builtin_expect((a->tag | b->tag) & TAG_ID, 0) && !ctx->ir.ids_what) {
    if (op == RASP_BIN_EQ || op == RASP_BIN_NE) ids_eq(ctx, a, b, pos);
    else if (op != RASP_BIN_AND && op != RASP_BIN_OR) /* those read truth only */
      raspV_ids_seen(ctx, pos, ids_binop_what(op));
  } else if (__builtin_expect(op == RASP_BIN_EQ || op == RASP_BIN_NE, 0) &&
             (a->kind == V_TUPLE || a->kind == V_LIST) && !ctx->ir.ids_what) {
    ids_eq(ctx, a, b, pos);
  }
  if (op != RASP_BIN_AND && op != RASP_BIN_OR && !(a->kind == V_BOOL && b->kind == V_BOOL) &&
      as_long(a, &lx) && as_long(b, &ly)) {
    value *r = long_binop(ctx, op, lx, ly);
    if (r) return r;
  }
  switch (op) {
  case RASP_BIN_EQ: return raspV_bool(ctx, equal_checked(ctx, a, b, pos));
  case RASP_BIN_NE: return raspV_bool(ctx, !equal_checked(ctx, a, b, pos));
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
  if (op == RASP_BIN_MUL && (a->kind == V_LIST || a->kind == V_TUPLE) && is_num(b)) {
    int64_t k = raspV_int(ctx, b, pos, "the repeat count");
    if (a->u.list.n == 0 || k < 0) k = 0; /* [] * 10**18 looped 10**18 times */
    if (k > 0 && (uint64_t)k > ctx->limits.max_list / (uint64_t)a->u.list.n)
      raspV_raise(ctx, RASP_E_LIMIT, pos, "list longer than the limit of %zu elements", ctx->limits.max_list);
    value *r = raspV_list(ctx, a->kind, 0);
    for (int64_t i = 0; i < k; i++)
      for (int j = 0; j < a->u.list.n; j++) raspV_list_push(ctx, r, a->u.list.items[j]);
    return r;
  }
  if (!is_num(a) || !is_num(b))
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
  const char *fail = NULL;
  int too_big = 0;
  switch (op) {
  case RASP_BIN_ADD: mpq_add(r->u.q, x, y); break;
  case RASP_BIN_SUB: mpq_sub(r->u.q, x, y); break;
  case RASP_BIN_MUL: mpq_mul(r->u.q, x, y); break;
  case RASP_BIN_DIV:
    if (mpq_sgn(y) == 0) fail = "division by zero";
    else mpq_div(r->u.q, x, y);
    break;
  case RASP_BIN_FLOORDIV:
  case RASP_BIN_MOD: {
    if (mpq_sgn(y) == 0) { fail = "division by zero"; break; }
    mpq_t qt;
    mpq_init(qt);
    mpq_div(qt, x, y);
    mpz_fdiv_q(mpq_numref(r->u.q), mpq_numref(qt), mpq_denref(qt));
    mpz_set_ui(mpq_denref(r->u.q), 1);
    if (op == RASP_BIN_MOD) { /* x - y * floor(x / y) */
      mpq_mul(qt, y, r->u.q);
      mpq_sub(r->u.q, x, qt);
    }
    mpq_clear(qt);
    break;
  }
  case RASP_BIN_POW: {
    if (mpz_cmp_ui(mpq_denref(y), 1) != 0) { fail = "'**' needs an integer exponent"; break; }
    if (!mpz_fits_slong_p(mpq_numref(y)) || labs(mpz_get_si(mpq_numref(y))) > 100000) {
      fail = "exponent too large";
      break;
    }
    long e = mpz_get_si(mpq_numref(y));
    if (e < 0 && mpq_sgn(x) == 0) { fail = "division by zero"; break; }
    unsigned long ue = (unsigned long)(e < 0 ? -e : e);
    /* |a|**e has more than (bits(|a|) - 1) * e bits, and at most
       bits(|a|) * e, which is then below twice the cap: safe to compute */
    size_t bn = mpz_sizeinbase(mpq_numref(x), 2), bd = mpz_sizeinbase(mpq_denref(x), 2);
    if ((double)(bn - 1 + bd - 1) * (double)ue > (double)ctx->limits.max_num_bits) {
      too_big = 1;
      break;
    }
    mpz_pow_ui(mpq_numref(r->u.q), mpq_numref(x), ue);
    mpz_pow_ui(mpq_denref(r->u.q), mpq_denref(x), ue);
    if (e < 0) mpq_inv(r->u.q, r->u.q);
    break;
  }
  case RASP_BIN_BITAND:
  case RASP_BIN_BITOR:
  case RASP_BIN_BITXOR:
    if (mpz_cmp_ui(mpq_denref(x), 1) || mpz_cmp_ui(mpq_denref(y), 1)) {
      fail = "bitwise operators need integers";
      break;
    }
    if (op == RASP_BIN_BITAND) mpz_and(mpq_numref(r->u.q), mpq_numref(x), mpq_numref(y));
    else if (op == RASP_BIN_BITOR) mpz_ior(mpq_numref(r->u.q), mpq_numref(x), mpq_numref(y));
    else mpz_xor(mpq_numref(r->u.q), mpq_numref(x), mpq_numref(y));
    break;
  default: fail = "unsupported operator"; break;
  }
  mpq_clears(x, y, NULL);
  if (too_big) num_too_large(ctx, pos);
  if (fail) raspV_error(ctx, pos, "%s", fail);
  return num_checked(ctx, r, pos);
}

/* ------------------------------------------------------------ evaluation */

typedef enum flow { FLOW_NORMAL, FLOW_RETURN, FLOW_BREAK, FLOW_CONTINUE } flow;

static value *eval(rasp_ctx *ctx, env *e, const rasp_ast *x);
static flow exec_block(rasp_ctx *ctx, env *e, rasp_ast **body, int n);

/* A literal's value, made once and kept with the tree. */
static value *const_value(rasp_ctx *ctx, const rasp_ast *x, value *v) {
  ((rasp_ast *)x)->cache = make_const(ctx, v);
  return v;
}

static const char *ast_name(rasp_ctx *ctx, const rasp_ast *x) {
  if (!x->cache) ((rasp_ast *)x)->cache = raspV_intern(ctx, x->str);
  return x->cache;
}

static rasp_binop tok_binop(int tk) {
  switch (tk) {
  case TK_PLUS: case TK_PLUSEQ: return RASP_BIN_ADD;
  case TK_MINUS: case TK_MINUSEQ: return RASP_BIN_SUB;
  case TK_STAR: case TK_STAREQ: return RASP_BIN_MUL;
  case TK_SLASH: case TK_SLASHEQ: return RASP_BIN_DIV;
  case TK_DSLASH: case TK_DSLASHEQ: return RASP_BIN_FLOORDIV;
  case TK_PERCENT: case TK_PERCENTEQ: return RASP_BIN_MOD;
  case TK_DSTAR: return RASP_BIN_POW;
  case TK_AMP: case TK_AMPEQ: return RASP_BIN_BITAND;
  case TK_PIPE: case TK_PIPEEQ: return RASP_BIN_BITOR;
  case TK_CARET: return RASP_BIN_BITXOR;
  case TK_EQ: return RASP_BIN_EQ;
  case TK_NE: return RASP_BIN_NE;
  case TK_LT: return RASP_BIN_LT;
  case TK_LE: return RASP_BIN_LE;
  case TK_GT: return RASP_BIN_GT;
  case TK_GE: return RASP_BIN_GE;
  default: return RASP_BIN__COUNT;
  }
}

/* The rare paths of check_steps, out of line so that it stays inlined. */
static __attribute__((noinline)) void steps_rare(rasp_ctx *ctx, rasp_pos pos) {
  if (ctx->interrupted) { /* rasp_interrupt: Ctrl-C in the REPL */
    ctx->interrupted = 0;
    raspV_raise(ctx, RASP_E_INTERRUPTED, pos, "interrupted");
  }
  const char *why = raspM_over_budget(); /* --max-memory, --timeout */
  if (why) raspV_raise(ctx, RASP_E_LIMIT, pos, "%s", why);
  if (ctx->steps <= ctx->limits.max_steps) return;
  if (ctx->in_callback)
    raspV_raise(ctx, RASP_E_LIMIT, pos, "the functions given to tok_map/seq_map/select ran more than "
                          "%lld steps together (the limit per trace); is a loop not "
                          "terminating?", ctx->limits.max_steps);
  raspV_raise(ctx, RASP_E_LIMIT, pos, "the program ran more than %lld steps (the limit); "
                        "is a loop not terminating?", ctx->limits.max_steps);
}

/* Counts a step and polls the budgets. */
static inline void check_steps(rasp_ctx *ctx, rasp_pos pos) {
  if (++ctx->steps > ctx->limits.max_steps || raspM_exhausted || ctx->interrupted)
    steps_rare(ctx, pos);
}

/* Items of an iterable scalar value, as a list or tuple value. */
static value *iterate(rasp_ctx *ctx, value *v, rasp_pos pos) {
  switch (v->kind) {
  case V_LIST:
  case V_TUPLE: return v;
  case V_DICT: {
    raspV_ids_iter(ctx, v, pos);
    value *r = raspV_list(ctx, V_LIST, 0);
    for (int i = 0; i < v->u.dict.n; i++) raspV_list_push(ctx, r, v->u.dict.keys[i]);
    return r;
  }
  case V_STR: {
    value *r = raspV_list(ctx, V_LIST, 0);
    for (size_t i = 0; i < v->u.str.len; i++)
      raspV_list_push(ctx, r, raspV_str(ctx, v->u.str.s + i, 1));
    return r;
  }
  case V_SOP:
    raspV_error(ctx, pos, "cannot iterate over a sequence while tracing: its "
                          "values depend on the input (use sequence operations, "
                          "or x[i] for a fixed position i)");
  default:
    raspV_raise(ctx, RASP_E_TYPE, pos, "cannot iterate over %s", raspV_kind_name(v));
  }
}

static int64_t index_of(rasp_ctx *ctx, value *idx, int64_t len, rasp_pos pos) {
  int64_t i = raspV_int(ctx, idx, pos, "the index");
  if (i < 0) i += len;
  if (i < 0 || i >= len)
    raspV_error(ctx, pos, "index %lld out of range for length %lld",
                (long long)raspV_int(ctx, idx, pos, "the index"), (long long)len);
  return i;
}

/* x[i] on a sequence, i static: an attention head that broadcasts. */
static value *sop_static_index(rasp_ctx *ctx, value *sop, int64_t i, rasp_pos pos) {
  int q = full_node(ctx, (rasp_elem){i, 1}, pos);
  int in_sel[2] = {ctx->indices_node, q};
  int sel = raspV_add_node(ctx, RASP_OP_SELECT, RASP_T_SEL, RASP_PRED_EQ, in_sel, 2, pos);
  int in_agg[2] = {sel, sop->u.node};
  int agg = raspV_add_node(ctx, RASP_OP_AGGREGATE, raspV_node_type(ctx, sop->u.node), 0,
                           in_agg, 2, pos);
  ctx->ir.nodes[agg].c = (rasp_elem){0, 1};
  return raspV_sop(ctx, agg, V_SOP);
}

static void slice_bounds(rasp_ctx *ctx, env *e, const rasp_ast *sl, int64_t len,
                         int64_t *start, int64_t *stop, int64_t *step) {
  *step = sl->c ? raspV_int(ctx, eval(ctx, e, sl->c), sl->pos, "the slice step") : 1;
  if (*step == 0) raspV_error(ctx, sl->pos, "slice step cannot be zero");
  int64_t lo = *step > 0 ? 0 : -1, hi = *step > 0 ? len : len - 1;
  for (int k = 0; k < 2; k++) {
    const rasp_ast *b = k ? sl->b : sl->a;
    int64_t *dst = k ? stop : start;
    if (!b || eval(ctx, e, b)->kind == V_NONE) {
      *dst = k ? (*step > 0 ? len : -1) : (*step > 0 ? 0 : len - 1);
      continue;
    }
    int64_t v = raspV_int(ctx, eval(ctx, e, b), b->pos, "a slice bound");
    if (v < 0) v += len;
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    *dst = v;
  }
}

static value *subscript(rasp_ctx *ctx, env *e, const rasp_ast *x) {
  value *obj = eval(ctx, e, x->a);
  if (x->b->kind == AST_SLICE) {
    int64_t len;
    if (obj->kind == V_LIST || obj->kind == V_TUPLE) len = obj->u.list.n;
    else if (obj->kind == V_STR) len = (int64_t)obj->u.str.len;
    else raspV_error(ctx, x->pos, "cannot slice %s", raspV_kind_name(obj));
    int64_t start, stop, step;
    slice_bounds(ctx, e, x->b, len, &start, &stop, &step);
    if (obj->kind == V_STR) {
      strbuf b = {0};
      sb_puts(&b, "");
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
        sb_add(&b, obj->u.str.s + i, 1);
      value *r = raspV_str(ctx, b.s, b.n);
      raspM_free(b.s);
      return r;
    }
    int64_t count = 0;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) count++;
    value *r = raspV_list(ctx, obj->kind, (int)count); /* count <= len */
    count = 0;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
      r->u.list.items[count++] = obj->u.list.items[i];
    return r;
  }
  value *idx = eval(ctx, e, x->b);
  switch (obj->kind) {
  case V_LIST:
  case V_TUPLE: return obj->u.list.items[index_of(ctx, idx, obj->u.list.n, x->b->pos)];
  case V_STR: {
    int64_t i = index_of(ctx, idx, (int64_t)obj->u.str.len, x->b->pos);
    return raspV_str(ctx, obj->u.str.s + i, 1);
  }
  case V_DICT: {
    raspV_ids_key(ctx, obj, idx, x->b->pos);
    value *v = raspV_dict_get(obj, idx);
    if (!v) {
      /* copy to the stack so that nothing leaks across the longjmp */
      char *k = raspV_repr(ctx, idx), msg[200];
      snprintf(msg, sizeof msg, "%s", k);
      raspM_free(k);
      raspV_error(ctx, x->b->pos, "key %s is not in the dict", msg);
    }
    return v;
  }
  case V_SOP:
    return sop_static_index(ctx, obj, index_of(ctx, idx, ctx->n, x->b->pos), x->pos);
  default:
    raspV_raise(ctx, RASP_E_TYPE, x->pos, "%s cannot be subscripted", raspV_kind_name(obj));
  }
}

static void assign(rasp_ctx *ctx, env *e, const rasp_ast *target, value *v);

/* x[i] = v: lists and dicts change in place; a sequence is replaced by a
** new one (element-wise: where(indices == i, v, x)) bound to the same name. */
static void assign_subscript(rasp_ctx *ctx, env *e, const rasp_ast *target, value *v) {
  value *obj = eval(ctx, e, target->a);
  if (target->b->kind == AST_SLICE)
    raspV_error(ctx, target->pos, "slice assignment is not supported");
  value *idx = eval(ctx, e, target->b);
  if (obj->kind == V_LIST || obj->kind == V_DICT) check_mutable(ctx, obj, target->pos);
  if (obj->kind == V_LIST) {
    obj->u.list.items[index_of(ctx, idx, obj->u.list.n, target->b->pos)] = v;
    raspV_barrier(ctx, obj->serial, v);
  } else if (obj->kind == V_DICT) {
    raspV_ids_key(ctx, obj, idx, target->b->pos);
    raspV_dict_set(ctx, obj, idx, v);
  } else if (obj->kind == V_SOP) {
    int64_t i = index_of(ctx, idx, ctx->n, target->b->pos);
    value *at = raspV_binop(ctx, RASP_BIN_EQ, raspV_sop(ctx, ctx->indices_node, V_SOP),
                            raspV_num_si(ctx, (long)i), target->pos);
    value *nv = raspV_as_sop(ctx, v, target->pos);
    int in[3] = {at->u.node, nv->u.node, obj->u.node};
    rasp_type ta = raspV_node_type(ctx, in[1]), tb = raspV_node_type(ctx, in[2]);
    int w = raspV_add_node(ctx, RASP_OP_WHERE, ta == tb ? ta : RASP_T_ANY, 0, in, 3,
                           target->pos);
    assign(ctx, e, target->a, raspV_sop(ctx, w, V_SOP));
  } else {
    raspV_error(ctx, target->pos, "%s does not support item assignment",
                raspV_kind_name(obj));
  }
}

static void assign(rasp_ctx *ctx, env *e, const rasp_ast *target, value *v) {
  switch (target->kind) {
  case AST_NAME: {
    const char *name = ast_name(ctx, target);
    if ((v->kind == V_SOP || v->kind == V_SEL) && !ctx->ir.nodes[v->u.node].label)
      ctx->ir.nodes[v->u.node].label = name;
    env_set(ctx, e, name, v);
    return;
  }
  case AST_TUPLE:
  case AST_LIST: {
    value *items = iterate(ctx, v, target->pos);
    if (items->u.list.n != target->nitems)
      raspV_error(ctx, target->pos, "cannot unpack %d values into %d targets",
                  items->u.list.n, target->nitems);
    for (int i = 0; i < target->nitems; i++)
      assign(ctx, e, target->items[i], items->u.list.items[i]);
    return;
  }
  case AST_SUBSCRIPT: assign_subscript(ctx, e, target, v); return;
  default: raspV_error(ctx, target->pos, "cannot assign to this expression");
  }
}

static value *make_function(rasp_ctx *ctx, env *e, const rasp_ast *def) {
  value *f = raspV_new(ctx, V_FUNC);
  f->u.func.def = def;
  f->u.func.closure = e;
  f->u.func.ndefaults = def->nitems2;
  if (def->nitems2) {
    f->u.func.defaults = raspM_alloc(sizeof(value *) * (size_t)def->nitems2);
    for (int i = 0; i < def->nitems2; i++) f->u.func.defaults[i] = eval(ctx, e, def->items2[i]);
  }
  return f;
}

static value *compare(rasp_ctx *ctx, env *e, const rasp_ast *x) {
  value *left = eval(ctx, e, x->items[0]);
  value *acc = NULL;
  for (int i = 1; i < x->nitems; i++) {
    value *right = eval(ctx, e, x->items[i]);
    int op = x->ops[i - 1];
    value *r;
    if (op == TK_IN || op == TK_NOTIN) {
      int found = 0;
      if (right->kind == V_DICT) {
        raspV_ids_key(ctx, right, left, x->pos);
        found = raspV_dict_get(right, left) != NULL;
      }
      else if (right->kind == V_STR && left->kind == V_STR)
        found = left->u.str.len == 0 ||
                memmem(right->u.str.s, right->u.str.len, left->u.str.s, left->u.str.len) != NULL;
      else {
        value *items = iterate(ctx, right, x->items[i]->pos);
        for (int k = 0; k < items->u.list.n && !found; k++) {
          ids_eq(ctx, items->u.list.items[k], left, x->pos);
          found = equal_checked(ctx, items->u.list.items[k], left, x->pos);
        }
      }
      r = raspV_bool(ctx, op == TK_IN ? found : !found);
    } else if (op == TK_IS || op == TK_ISNOT) {
      int same = left == right || (left->kind == V_NONE && right->kind == V_NONE) ||
                 (left->kind == V_BOOL && right->kind == V_BOOL && left->u.b == right->u.b);
      r = raspV_bool(ctx, op == TK_IS ? same : !same);
    } else {
      r = raspV_binop(ctx, tok_binop(op), left, right, x->pos);
    }
    if (!acc) acc = r;
    else acc = raspV_binop(ctx, RASP_BIN_AND, acc, r, x->pos);
    if (acc->kind != V_SOP && !raspV_truth(ctx, acc, x->pos)) return acc;
    left = right;
  }
  return acc;
}

static value *list_comp(rasp_ctx *ctx, env *e, const rasp_ast *x) {
  value *items = iterate(ctx, eval(ctx, e, x->c), x->c->pos);
  value *out = raspV_list(ctx, V_LIST, 0);
  env *scope = env_new(ctx, e);
  for (int i = 0; i < items->u.list.n; i++) {
    check_steps(ctx, x->pos);
    assign(ctx, scope, x->b, items->u.list.items[i]);
    int keep = 1;
    for (int k = 0; k < x->nitems && keep; k++)
      keep = raspV_truth(ctx, eval(ctx, scope, x->items[k]), x->items[k]->pos);
    if (keep) raspV_list_push(ctx, out, eval(ctx, scope, x->a));
  }
  return out;
}

static value *method_call(rasp_ctx *ctx, value *obj, const char *name, value **args,
                          int nargs, rasp_pos pos) {
  if (obj->kind == V_LIST && strcmp(name, "append") == 0 && nargs == 1) {
    check_mutable(ctx, obj, pos);
    raspV_list_push(ctx, obj, args[0]);
    return &ctx->none_v;
  }
  if (obj->kind == V_LIST && strcmp(name, "extend") == 0 && nargs == 1) {
    check_mutable(ctx, obj, pos);
    value *items = iterate(ctx, args[0], pos);
    for (int i = 0; i < items->u.list.n; i++) raspV_list_push(ctx, obj, items->u.list.items[i]);
    return &ctx->none_v;
  }
  if ((obj->kind == V_LIST || obj->kind == V_TUPLE) && strcmp(name, "index") == 0 && nargs == 1) {
    for (int i = 0; i < obj->u.list.n; i++) {
      ids_eq(ctx, obj->u.list.items[i], args[0], pos);
      if (equal_checked(ctx, obj->u.list.items[i], args[0], pos)) return raspV_num_si(ctx, i);
    }
    raspV_error(ctx, pos, "value is not in the list");
  }
  if (obj->kind == V_DICT) {
    if (strcmp(name, "get") == 0 && (nargs == 1 || nargs == 2)) {
      raspV_ids_key(ctx, obj, args[0], pos);
      value *v = raspV_dict_get(obj, args[0]);
      return v ? v : nargs == 2 ? args[1] : &ctx->none_v;
    }
    int keys = strcmp(name, "keys") == 0, vals = strcmp(name, "values") == 0,
        items = strcmp(name, "items") == 0;
    if ((keys || vals || items) && nargs == 0) {
      raspV_ids_iter(ctx, obj, pos);
      value *r = raspV_list(ctx, V_LIST, 0);
      for (int i = 0; i < obj->u.dict.n; i++) {
        value *it;
        if (items) {
          it = raspV_list(ctx, V_TUPLE, 2);
          it->u.list.items[0] = obj->u.dict.keys[i];
          it->u.list.items[1] = obj->u.dict.vals[i];
        } else {
          it = keys ? obj->u.dict.keys[i] : obj->u.dict.vals[i];
        }
        raspV_list_push(ctx, r, it);
      }
      return r;
    }
  }
  raspV_error(ctx, pos, "%s has no method '%s' taking %d argument(s)", raspV_kind_name(obj),
              name, nargs);
}

static value *call_expr(rasp_ctx *ctx, env *e, const rasp_ast *x) {
  value *argv_small[8], *kwv_small[8];
  int nargs = x->nitems, nkw = x->nitems2;
  /* Arguments live in the context's objects only; the arrays are on the
  ** stack or in a list value so an error cannot leak them. */
  value **args = argv_small, **kwvals = kwv_small;
  if (nargs > 8) args = raspV_list(ctx, V_TUPLE, nargs)->u.list.items;
  if (nkw > 8) kwvals = raspV_list(ctx, V_TUPLE, nkw)->u.list.items;
  value *obj = NULL;
  value *fn = NULL;
  if (x->a->kind == AST_ATTR) {
    obj = eval(ctx, e, x->a->a);
    if (obj->kind == V_DICT) {
      value *key = raspV_str(ctx, x->a->str, strlen(x->a->str));
      fn = raspV_dict_get(obj, key);
      if (fn && (fn->kind == V_FUNC || fn->kind == V_BUILTIN || fn->kind == V_CFUNC)) obj = NULL;
      else fn = NULL;
    }
  } else {
    fn = eval(ctx, e, x->a);
  }
  for (int i = 0; i < nargs; i++) args[i] = eval(ctx, e, x->items[i]);
  for (int i = 0; i < nkw; i++) kwvals[i] = eval(ctx, e, x->items2[i]);
  if (!fn) {
    if (nkw) raspV_error(ctx, x->pos, "methods take no keyword arguments");
    return method_call(ctx, obj, x->a->str, args, nargs, x->pos);
  }
  const char *kwnames_small[8];
  const char **kwnames = kwnames_small;
  if (nkw > 8) kwnames = (const char **)raspV_list(ctx, V_TUPLE, nkw)->u.list.items;
  for (int i = 0; i < nkw; i++) kwnames[i] = raspV_intern(ctx, x->names[i]);
  if (!x->pos.src || x->pos.src->library) return raspV_call(ctx, fn, args, nargs, kwnames, kwvals, nkw, x->pos);
  rasp_pos saved = ctx->site;
  ctx->site = x->pos;
  value *r = raspV_call(ctx, fn, args, nargs, kwnames, kwvals, nkw, x->pos);
  ctx->site = saved;
  return r;
}

static value *eval(rasp_ctx *ctx, env *e, const rasp_ast *x) {
  switch (x->kind) {
  case AST_NUM:
    if (x->cache) return (value *)x->cache;
    return const_value(ctx, x, parse_number(ctx, x->str, x->pos));
  case AST_STR:
    if (x->cache) return (value *)x->cache;
    return const_value(ctx, x, raspV_str(ctx, x->str, x->len));
  case AST_NAME: {
    value *v = env_get(e, ast_name(ctx, x));
    if (!v) unknown_name(ctx, x->pos, "unknown name '%s'", x->str);
    return v;
  }
  case AST_TRUE: return &ctx->true_v;
  case AST_FALSE: return &ctx->false_v;
  case AST_NONE: return &ctx->none_v;
  case AST_TUPLE:
  case AST_LIST: {
    value *r = raspV_list(ctx, x->kind == AST_LIST ? V_LIST : V_TUPLE, 0);
    for (int i = 0; i < x->nitems; i++) raspV_list_push(ctx, r, eval(ctx, e, x->items[i]));
    return r;
  }
  case AST_DICT: {
    value *r = raspV_new(ctx, V_DICT);
    for (int i = 0; i < x->nitems; i++) {
      value *k = eval(ctx, e, x->items[i]);
      if (k->kind == V_SOP || k->kind == V_SEL || k->kind == V_LIST || k->kind == V_DICT)
        raspV_error(ctx, x->items[i]->pos, "%s cannot be a dict key", raspV_kind_name(k));
      raspV_ids_key(ctx, r, k, x->items[i]->pos);
      raspV_dict_set(ctx, r, k, eval(ctx, e, x->items2[i]));
    }
    return r;
  }
  case AST_BINOP: {
    value *a = eval(ctx, e, x->a), *b = eval(ctx, e, x->b);
    rasp_binop op = tok_binop(x->op);
    if (op == RASP_BIN__COUNT) raspV_error(ctx, x->pos, "unsupported operator");
    return raspV_binop(ctx, op, a, b, x->pos);
  }
  case AST_UNARY: {
    value *a = eval(ctx, e, x->a);
    rasp_unop op = x->op == TK_MINUS ? RASP_UN_NEG : x->op == TK_PLUS ? RASP_UN_POS : RASP_UN_INVERT;
    return raspV_unop(ctx, op, a, x->pos);
  }
  case AST_NOT: return raspV_unop(ctx, RASP_UN_NOT, eval(ctx, e, x->a), x->pos);
  case AST_AND:
  case AST_OR: {
    value *a = eval(ctx, e, x->a);
    if (a->kind == V_SOP || a->kind == V_SEL)
      return raspV_binop(ctx, x->kind == AST_AND ? RASP_BIN_AND : RASP_BIN_OR, a,
                         eval(ctx, e, x->b), x->pos);
    int t = raspV_truth(ctx, a, x->pos);
    if (x->kind == AST_AND ? !t : t) return a;
    value *b = eval(ctx, e, x->b);
    if (b->kind == V_SOP || b->kind == V_SEL)
      return raspV_binop(ctx, x->kind == AST_AND ? RASP_BIN_AND : RASP_BIN_OR, a, b, x->pos);
    return b;
  }
  case AST_COMPARE: return compare(ctx, e, x);
  case AST_CALL: return call_expr(ctx, e, x);
  case AST_SUBSCRIPT: return subscript(ctx, e, x);
  case AST_ATTR: {
    value *obj = eval(ctx, e, x->a);
    if (obj->kind == V_DICT) {
      value *v = raspV_dict_get(obj, raspV_str(ctx, x->str, strlen(x->str)));
      if (v) return v;
    }
    raspV_error(ctx, x->pos, "%s has no attribute '%s'", raspV_kind_name(obj), x->str);
  }
  case AST_IFEXP: {
    value *c = eval(ctx, e, x->a);
    if (c->kind == V_SOP)
      raspV_error(ctx, x->a->pos, "the condition depends on the input sequence; "
                                  "use where(cond, x, y) instead of 'x if cond else y'");
    return eval(ctx, e, raspV_truth(ctx, c, x->a->pos) ? x->b : x->c);
  }
  case AST_LAMBDA: return make_function(ctx, e, x);
  case AST_LISTCOMP: return list_comp(ctx, e, x);
  case AST_SLICE: raspV_error(ctx, x->pos, "a slice is only allowed inside [ ]");
  default: raspV_error(ctx, x->pos, "this statement is not an expression");
  }
}

static flow exec_stmt(rasp_ctx *ctx, env *e, const rasp_ast *s) {
  check_steps(ctx, s->pos);
  switch (s->kind) {
  case AST_EXPR: eval(ctx, e, s->a); return FLOW_NORMAL;
  case AST_ASSIGN: {
    value *v = eval(ctx, e, s->a);
    for (int i = 0; i < s->nitems; i++) assign(ctx, e, s->items[i], v);
    return FLOW_NORMAL;
  }
  case AST_AUGASSIGN: {
    value *cur = eval(ctx, e, s->a);
    value *rhs = eval(ctx, e, s->b);
    rasp_binop op = tok_binop(s->op);
    value *nv;
    if (op == RASP_BIN_ADD && cur->kind == V_LIST && rhs->kind == V_LIST) {
      check_mutable(ctx, cur, s->pos);
      for (int i = 0; i < rhs->u.list.n; i++) raspV_list_push(ctx, cur, rhs->u.list.items[i]);
      nv = cur;
    } else {
      nv = raspV_binop(ctx, op, cur, rhs, s->pos);
    }
    assign(ctx, e, s->a, nv);
    return FLOW_NORMAL;
  }
  case AST_DEF: {
    value *f = make_function(ctx, e, s);
    env_set(ctx, e, raspV_intern(ctx, s->str), f);
    return FLOW_NORMAL;
  }
  case AST_RETURN:
    ctx->retval = s->a ? eval(ctx, e, s->a) : &ctx->none_v;
    return FLOW_RETURN;
  case AST_IF: {
    value *c = eval(ctx, e, s->a);
    if (c->kind == V_SOP)
      raspV_error(ctx, s->a->pos, "an 'if' on a sequence: its value depends on the "
                                  "input, which is not known while tracing; use "
                                  "where(cond, x, y)");
    if (raspV_truth(ctx, c, s->a->pos)) return exec_block(ctx, e, s->items, s->nitems);
    return exec_block(ctx, e, s->items2, s->nitems2);
  }
  case AST_FOR: {
    value *it = eval(ctx, e, s->b);
    value *items = iterate(ctx, it, s->b->pos);
    for (int i = 0; i < items->u.list.n; i++) {
      assign(ctx, e, s->a, items->u.list.items[i]);
      flow f = exec_block(ctx, e, s->items, s->nitems);
      if (f == FLOW_RETURN) return f;
      if (f == FLOW_BREAK) break;
    }
    return FLOW_NORMAL;
  }
  case AST_WHILE:
    for (;;) {
      value *c = eval(ctx, e, s->a);
      if (c->kind == V_SOP)
        raspV_error(ctx, s->a->pos, "a 'while' on a sequence: its value depends on "
                                    "the input; use where(cond, x, y)");
      if (!raspV_truth(ctx, c, s->a->pos)) break;
      flow f = exec_block(ctx, e, s->items, s->nitems);
      if (f == FLOW_RETURN) return f;
      if (f == FLOW_BREAK) break;
      check_steps(ctx, s->pos);
    }
    return FLOW_NORMAL;
  case AST_BREAK: return FLOW_BREAK;
  case AST_CONTINUE: return FLOW_CONTINUE;
  case AST_PASS: return FLOW_NORMAL;
  case AST_ASSERT: {
    value *c = eval(ctx, e, s->a);
    if (c->kind == V_SOP)
      raspV_error(ctx, s->a->pos, "assert on a sequence: its value depends on the input");
    if (!raspV_truth(ctx, c, s->a->pos)) {
      if (s->b) {
        value *m = eval(ctx, e, s->b);
        char msg[300];
        if (m->kind == V_STR) snprintf(msg, sizeof msg, "%.*s", (int)m->u.str.len, m->u.str.s);
        else {
          char *r = raspV_repr(ctx, m);
          snprintf(msg, sizeof msg, "%s", r);
          raspM_free(r);
        }
        raspV_error(ctx, s->pos, "assertion failed: %s", msg);
      }
      raspV_error(ctx, s->pos, "assertion failed");
    }
    return FLOW_NORMAL;
  }
  default:
    eval(ctx, e, s);
    return FLOW_NORMAL;
  }
}

static flow exec_block(rasp_ctx *ctx, env *e, rasp_ast **body, int n) {
  for (int i = 0; i < n; i++) {
    flow f = exec_stmt(ctx, e, body[i]);
    if (f != FLOW_NORMAL) return f;
  }
  return FLOW_NORMAL;
}

/* ----------------------------------------------------------------- calls */

/* Binds call arguments to parameter names (Python's rules without *args):
** out[i] is the value for params[i], or NULL when it takes its default. */
static void bind_args(rasp_ctx *ctx, const char *fname, const char **params, int nparams,
                      int nrequired, value **args, int nargs, const char **kwnames,
                      value **kwvals, int nkw, value **out, rasp_pos pos) {
  if (nargs > nparams)
    raspV_error(ctx, pos, "%s() takes %d argument%s but %d were given", fname, nparams,
                nparams == 1 ? "" : "s", nargs);
  for (int i = 0; i < nparams; i++) out[i] = i < nargs ? args[i] : NULL;
  for (int k = 0; k < nkw; k++) {
    int i = 0;
    while (i < nparams && params[i] != kwnames[k]) i++;
    if (i == nparams)
      raspV_error(ctx, pos, "%s() got an unexpected keyword argument '%s'", fname, kwnames[k]);
    if (out[i]) raspV_error(ctx, pos, "%s() got multiple values for argument '%s'", fname, kwnames[k]);
    out[i] = kwvals[k];
  }
  for (int i = 0; i < nrequired; i++)
    if (!out[i]) raspV_error(ctx, pos, "%s() missing required argument '%s'", fname, params[i]);
}

static value *call_function(rasp_ctx *ctx, value *fn, value **args, int nargs,
                            const char **kwnames, value **kwvals, int nkw, rasp_pos pos) {
  const rasp_ast *def = fn->u.func.def;
  const char *fname = def->kind == AST_DEF ? def->str : "<lambda>";
  int np = def->nnames;
  value *small[16];
  value **bound = np <= 16 ? small : raspV_list(ctx, V_TUPLE, np)->u.list.items;
  /* the parameter names, interned once per definition (the syntax tree
     belongs to this context, like the name caches of AST_NAME) */
  if (!def->cache && np) {
    const char **interned = raspM_arena_alloc(&ctx->ast_arena, sizeof(char *) * (size_t)np);
    for (int i = 0; i < np; i++) interned[i] = raspV_intern(ctx, def->names[i]);
    ((rasp_ast *)def)->cache = interned;
  }
  const char **pnames = (const char **)def->cache;
  bind_args(ctx, fname, pnames, np, np - fn->u.func.ndefaults, args, nargs, kwnames, kwvals,
            nkw, bound, pos);
  if (ctx->depth >= ctx->limits.max_depth)
    raspV_raise(ctx, RASP_E_LIMIT, pos, "recursion too deep (more than %d nested calls)", ctx->limits.max_depth);
  env *local = env_new(ctx, fn->u.func.closure);
  for (int i = 0; i < np; i++) {
    value *v = bound[i] ? bound[i] : fn->u.func.defaults[i - (np - fn->u.func.ndefaults)];
    env_append(ctx, local, pnames[i], v);
  }
  ctx->depth++;
  value *result;
  if (def->kind == AST_LAMBDA) {
    result = eval(ctx, local, def->a);
  } else {
    flow f = exec_block(ctx, local, def->items, def->nitems);
    result = f == FLOW_RETURN ? ctx->retval : &ctx->none_v;
  }
  ctx->depth--;
  return result;
}

/* Parses a builtin's parameter spec "k,q,pred,causal=True". */
/* A builtin's parameter list, parsed on its first call in a context (the
** names are interned per context; the defaults are constants). */
typedef struct bi_sig {
  int ready, np, nreq;
  const char *pnames[12];
  value *defaults[12];
} bi_sig;

static bi_sig *builtin_sig(rasp_ctx *ctx, const builtin *bi, rasp_pos pos) {
  int count;
  const builtin *table = raspB_table(&count);
  if (bi < table || bi >= table + count)
    raspV_error(ctx, pos, "internal error: builtin '%s' is not in the table", bi->name);
  if (!ctx->bisigs) {
    ctx->bisigs = raspM_alloc((size_t)count * sizeof *ctx->bisigs);
    ctx->nbisigs = count;
  }
  bi_sig *sig = &ctx->bisigs[bi - table];
  if (sig->ready) return sig;
  int np = 0, nreq = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", bi->params);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && np < 12;
       tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    sig->defaults[np] = NULL;
    if (eq) {
      *eq = '\0';
      const char *d = eq + 1;
      if (strcmp(d, "True") == 0) sig->defaults[np] = &ctx->true_v;
      else if (strcmp(d, "False") == 0) sig->defaults[np] = &ctx->false_v;
      else if (strcmp(d, "None") == 0) sig->defaults[np] = &ctx->none_v;
      else sig->defaults[np] = make_const(ctx, raspV_num_si(ctx, strtol(d, NULL, 10)));
    } else {
      nreq = np + 1;
    }
    sig->pnames[np++] = raspV_intern(ctx, tok);
  }
  sig->np = np;
  sig->nreq = nreq;
  sig->ready = 1;
  return sig;
}

static value *call_builtin(rasp_ctx *ctx, const builtin *bi, value **args, int nargs,
                           const char **kwnames, value **kwvals, int nkw, rasp_pos pos) {
  if (strcmp(bi->params, "pairs=None,**") == 0) { /* dict(pairs, key=value, ...) */
    value *d = bi->fn(ctx, args, nargs > 1 ? 1 : nargs, pos);
    for (int i = 0; i < nkw; i++)
      raspV_dict_set(ctx, d, raspV_str(ctx, kwnames[i], strlen(kwnames[i])), kwvals[i]);
    return d;
  }
  if (strcmp(bi->params, "*") == 0) {
    if (nkw) raspV_error(ctx, pos, "%s() takes no keyword arguments", bi->name);
    return bi->fn(ctx, args, nargs, pos);
  }
  bi_sig *sig = builtin_sig(ctx, bi, pos);
  const char **pnames = sig->pnames;
  value **defaults = sig->defaults;
  int np = sig->np, nreq = sig->nreq;
  value *bound[12];
  bind_args(ctx, bi->name, pnames, np, nreq, args, nargs, kwnames, kwvals, nkw, bound, pos);
  int given = np;
  while (given > 0 && !bound[given - 1] && !defaults[given - 1]) given--;
  for (int i = 0; i < np; i++)
    if (!bound[i]) bound[i] = defaults[i];
  return bi->fn(ctx, bound, given, pos);
}

value *raspV_call(rasp_ctx *ctx, value *fn, value **args, int nargs, const char **kwnames,
                  value **kwvals, int nkw, rasp_pos pos) {
  switch (fn->kind) {
  case V_FUNC: return call_function(ctx, fn, args, nargs, kwnames, kwvals, nkw, pos);
  case V_BUILTIN: return call_builtin(ctx, fn->u.bi, args, nargs, kwnames, kwvals, nkw, pos);
  case V_CFUNC:
    if (nkw) raspV_error(ctx, pos, "C functions take no keyword arguments");
    for (int i = 0; i < nargs; i++) raspV_ids_in(ctx, args[i], pos, "an id passed to a C function");
    return raspF_call(ctx, fn->u.cf, args, nargs, pos);
  default: raspV_raise(ctx, RASP_E_TYPE, pos, "%s is not callable", raspV_kind_name(fn));
  }
}

/* ------------------------------------------------------------ callbacks */

/* The evaluator calls program functions (tok_map, seq_map, custom
** predicates) through this, possibly from several threads.  Values made
** during the call are released afterwards unless they escaped.  All the
** calls made for one trace share one step budget (cb_steps, reset by
** rasp_trace): a budget restarted per call would let n*n calls of a custom
** predicate run n*n times the limit. */
static int ir_callback(void *user, void *fnp, int nargs, const rasp_elem *args,
                       rasp_elem *out, rasp_error *err) {
  rasp_ctx *ctx = user;
  value *fn = fnp;
  pthread_mutex_lock(&ctx->lock);
  jmp_buf jb, *saved = ctx->catcher;
  rasp_error *saved_err = ctx->err;
  unsigned long long saved_mark = ctx->mark;
  long long saved_steps = ctx->steps;
  int saved_depth = ctx->depth;
  rasp_pos saved_site = ctx->site;
  ctx->catcher = &jb;
  ctx->err = err;
  ctx->mark = ctx->serial;
  ctx->steps = ctx->cb_steps;
  int saved_in_callback = ctx->in_callback;
  ctx->in_callback = 1;
  unsigned long long saved_frozen = ctx->frozen;
  ctx->frozen = ctx->serial;
  int ok = 0;
  if (setjmp(jb) == 0) {
    value *argv[3];
    for (int i = 0; i < nargs && i < 3; i++) argv[i] = raspV_from_elem(ctx, args[i]);
    value *r = raspV_call(ctx, fn, argv, nargs, NULL, NULL, 0, (rasp_pos){0});
    if (r->kind == V_SOP || r->kind == V_SEL)
      raspV_error(ctx, (rasp_pos){0}, "a function used by tok_map/seq_map/select must "
                                      "return a scalar, not %s", raspV_kind_name(r));
    *out = raspV_to_elem(ctx, r, (rasp_pos){0});
    ok = 1;
  }
  heap_release(ctx, ctx->mark);
  ctx->mark = saved_mark;
  ctx->catcher = saved;
  ctx->err = saved_err;
  ctx->cb_steps = ctx->steps;
  ctx->steps = saved_steps;
  ctx->in_callback = saved_in_callback;
  ctx->frozen = saved_frozen;
  ctx->depth = saved_depth;
  ctx->site = saved_site;
  pthread_mutex_unlock(&ctx->lock);
  return ok;
}

/* ------------------------------------------------------------------ API */

void rasp_default_limits(rasp_limits *limits) {
  limits->max_length = 1 << 20;
  limits->max_nodes = 1 << 20;
  limits->max_depth = 200;
  limits->max_steps = 10000000LL;
  limits->max_selector_cells = RASP_DEFAULT_MAX_SELECTOR_CELLS;
  limits->max_list = 10000000;
  limits->max_num_bits = (size_t)1 << 22; /* 4 Mbit: 1.26 million decimal digits */
  limits->max_string = (size_t)16 << 20;
}

int rasp_abi_version(void) { return RASP_ABI_VERSION; }

rasp_ctx *rasp_ctx_new(int n, const rasp_limits *limits, rasp_error *err) {
  rasp_limits lim;
  if (limits) lim = *limits;
  else rasp_default_limits(&lim);
  if (n < 1 || n > lim.max_length) {
    raspR_setnoposc(err, RASP_E_USAGE, "input length %d is outside 1..%d", n, lim.max_length);
    return NULL;
  }
  rasp_ctx *ctx = raspM_alloc(sizeof *ctx);
  ctx->limits = lim;
  ctx->n = n;
  ctx->intcache = raspM_alloc(sizeof(value *) * (SMALL_INT_MAX - SMALL_INT_MIN + 1));
  raspI_init(&ctx->ir, n);
  ctx->ir.call = ir_callback;
  ctx->ir.symname = symname_cb;
  ctx->ir.user = ctx;
  ctx->none_v.kind = V_NONE;
  ctx->true_v.kind = V_BOOL;
  ctx->true_v.u.b = 1;
  ctx->false_v.kind = V_BOOL;
  raspM_arena_init(&ctx->ast_arena);
  pthread_mutex_init(&ctx->lock, NULL);
  env *builtins = env_new(ctx, NULL);
  ctx->globals = env_new(ctx, builtins);
  jmp_buf jb;
  ctx->catcher = &jb;
  ctx->err = err;
  if (setjmp(jb) != 0) { /* only the node limit can fail here */
    rasp_ctx_free(ctx);
    return NULL;
  }
  ctx->input_node = raspV_add_node(ctx, RASP_OP_INPUT, RASP_T_INT, 0, NULL, 0, (rasp_pos){0});
  ctx->ir.nodes[ctx->input_node].label = raspV_intern(ctx, "tokens");
  ctx->indices_node = raspV_add_node(ctx, RASP_OP_INDICES, RASP_T_INT, 0, NULL, 0, (rasp_pos){0});
  ctx->ir.nodes[ctx->indices_node].label = raspV_intern(ctx, "indices");
  int count;
  const builtin *tab = raspB_table(&count);
  for (int i = 0; i < count; i++) {
    value *b = raspV_new(ctx, V_BUILTIN);
    b->u.bi = &tab[i];
    env_set(ctx, builtins, raspV_intern(ctx, tab[i].name), b);
  }
  env_set(ctx, ctx->globals, raspV_intern(ctx, "tokens"), raspV_sop(ctx, ctx->input_node, V_SOP));
  ctx->catcher = NULL;
  ctx->err = NULL;
  return ctx;
}

void rasp_ctx_free(rasp_ctx *ctx) {
  if (!ctx) return;
  for (int pass = 0; pass < 4; pass++) {
    value *v = pass == 0 ? ctx->objects : pass == 1 ? ctx->consts
               : pass == 2 ? ctx->spare : ctx->spare_num;
    while (v) {
      value *next = v->next_obj;
      free_value(v);
      v = next;
    }
  }
  for (int pass = 0; pass < 2; pass++)
    while (pass ? ctx->spare_env : ctx->envs) {
      env **list = pass ? &ctx->spare_env : &ctx->envs;
      env *e = *list;
      *list = e->next_env;
      free_env(e);
    }
  for (size_t i = 0; i < ctx->icap; i++) raspM_free(ctx->interned[i]);
  raspM_free(ctx->interned);
  for (int64_t i = 0; i < ctx->nsyms; i++) raspM_free(ctx->syms[i]);
  raspM_free(ctx->syms);
  raspM_free(ctx->symhash);
  raspM_free(ctx->vocab);
  raspM_free(ctx->token_of);
  raspM_free(ctx->intcache);
  raspM_free(ctx->symcache);
  raspM_free(ctx->bisigs);
  for (int i = 0; i < ctx->nsources; i++) raspR_source_free(ctx->sources[i]);
  raspM_free(ctx->sources);
  raspM_arena_free(&ctx->ast_arena);
  raspI_free(&ctx->ir);
  pthread_mutex_destroy(&ctx->lock);
  raspM_free(ctx->stdlib_dir);
  raspM_free(ctx->include_root);
  for (int i = 0; i < ctx->ninclude_dirs; i++) raspM_free(ctx->include_dirs[i]);
  raspM_free(ctx->include_dirs);
  for (int i = 0; i < ctx->ndl; i++) dlclose(ctx->dl_handles[i]);
  raspM_free(ctx->dl_handles);
  raspM_free(ctx);
}

int rasp_ctx_length(const rasp_ctx *ctx) { return ctx->n; }
rasp_ir *rasp_ctx_ir(rasp_ctx *ctx) { return &ctx->ir; }

/* Every API entry runs its body under a catcher. */
#define PROTECT_BEGIN(ctx, errp)                                               \
  jmp_buf jb_, *saved_catcher_ = (ctx)->catcher;                               \
  rasp_error *saved_err_ = (ctx)->err;                                         \
  (ctx)->catcher = &jb_;                                                       \
  (ctx)->err = (errp);                                                         \
  volatile int ok_ = 0;                                                        \
  if (setjmp(jb_) == 0) {
#define PROTECT_END(ctx)                                                       \
  ok_ = 1;                                                                     \
  }                                                                            \
  (ctx)->catcher = saved_catcher_;                                             \
  (ctx)->err = saved_err_;                                                     \
  (ctx)->depth = 0;                                                            \
  (ctx)->site = (rasp_pos){0};                                                 \
  return ok_;

int rasp_set_vocab(rasp_ctx *ctx, const char *const *symbols, int count, rasp_error *err) {
  PROTECT_BEGIN(ctx, err)
  raspM_free(ctx->token_of);
  ctx->token_of = NULL;
  ctx->ntoken_of = 0;
  raspM_free(ctx->vocab);
  ctx->vocab = raspM_alloc(sizeof(int64_t) * (size_t)(count ? count : 1));
  ctx->nvocab = count;
  value *d = raspV_new(ctx, V_DICT), *rd = raspV_new(ctx, V_DICT);
  d->tag = TAG_D_BY_ID;
  rd->tag = TAG_REVERSE_D;
  for (int i = 0; i < count; i++) {
    value *s = raspV_str(ctx, symbols[i], strlen(symbols[i]));
    ctx->vocab[i] = raspV_symbol_of(ctx, s);
    if (raspV_dict_get(d, s))
      raspV_raise(ctx, RASP_E_USAGE, (rasp_pos){0}, "vocabulary symbol '%s' appears twice", symbols[i]);
    value *id = raspV_new(ctx, V_NUM); /* its own object: the tag is not shared */
    mpq_set_si(id->u.q, i + 1, 1);
    id->tag = TAG_ID;
    raspV_dict_set(ctx, d, s, id);
    raspV_dict_set(ctx, rd, id, s);
  }
  ctx->ntoken_of = ctx->nsyms;
  ctx->token_of = raspM_alloc(sizeof(int64_t) * (size_t)(ctx->nsyms ? ctx->nsyms : 1));
  for (int i = 0; i < count; i++) ctx->token_of[ctx->vocab[i]] = i + 1;
  env_set(ctx, ctx->globals, raspV_intern(ctx, "d"), d);
  env_set(ctx, ctx->globals, raspV_intern(ctx, "reverse_d"), rd);
  env_set(ctx, ctx->globals, raspV_intern(ctx, "vocab_size"), raspV_num_si(ctx, count));
  PROTECT_END(ctx)
}

int rasp_vocab_size(const rasp_ctx *ctx) { return ctx->nvocab; }

const char *rasp_vocab_symbol(const rasp_ctx *ctx, int64_t id) {
  if (id < 1 || id > ctx->nvocab) return NULL;
  return ctx->syms[ctx->vocab[id - 1]];
}

/* A hash lookup of the symbol, then its token id by symbol id: reading an
** input of n distinct symbols was quadratic with a scan of the vocabulary. */
int64_t rasp_vocab_id(const rasp_ctx *ctx, const char *symbol) {
  if (!ctx->symhcap) return 0;
  int64_t sym = ctx->symhash[symbol_slot(ctx, symbol)];
  return sym >= 0 && sym < ctx->ntoken_of ? ctx->token_of[sym] : 0;
}

void rasp_set_int(rasp_ctx *ctx, const char *name, int64_t v) {
  env_set(ctx, ctx->globals, raspV_intern(ctx, name), raspV_num_si(ctx, (long)v));
}

void rasp_set_bool(rasp_ctx *ctx, const char *name, int v) {
  env_set(ctx, ctx->globals, raspV_intern(ctx, name), raspV_bool(ctx, v));
}

void rasp_set_string(rasp_ctx *ctx, const char *name, const char *text) {
  env_set(ctx, ctx->globals, raspV_intern(ctx, name), raspV_str(ctx, text, strlen(text)));
}

static rasp_source *keep_source(rasp_ctx *ctx, rasp_source *src) {
  RASP_GROW(ctx->sources, ctx->srccap, ctx->nsources + 1);
  ctx->sources[ctx->nsources++] = src;
  return src;
}

static int run_source(rasp_ctx *ctx, rasp_source *src, rasp_error *err) {
  keep_source(ctx, src);
  ctx->site = (rasp_pos){0};
  rasp_ast *mod = raspP_parse(src, &ctx->ast_arena, err);
  if (!mod) return 0;
  ctx->steps = 0;
  PROTECT_BEGIN(ctx, err)
  exec_block(ctx, ctx->globals, mod->items, mod->nitems);
  PROTECT_END(ctx)
}

/* The real path of an existing directory, malloc'd; NULL with err. */
static char *real_dir(const char *dir, rasp_error *err) {
  char buf[PATH_MAX];
  struct stat st;
  if (!realpath(dir, buf) || stat(buf, &st) != 0) {
    raspR_setnoposc(err, RASP_E_USAGE, "include directory '%s': %s", dir, strerror(errno));
    return NULL;
  }
  if (!S_ISDIR(st.st_mode)) {
    raspR_setnoposc(err, RASP_E_USAGE, "include directory '%s': not a directory", dir);
    return NULL;
  }
  return raspM_strdup(buf);
}

int rasp_set_access(rasp_ctx *ctx, const rasp_access *access, rasp_error *err) {
  rasp_access none = {0};
  if (!access) access = &none;
  char *root = NULL;
  char **dirs = raspM_alloc(sizeof(char *) * (size_t)(access->ninclude_dirs + 1));
  int n = 0;
  if (access->root && !(root = real_dir(access->root, err))) goto fail;
  for (; n < access->ninclude_dirs; n++)
    if (!(dirs[n] = real_dir(access->include_dirs[n], err))) goto fail;
  ctx->allow_ffi = access->allow_ffi != 0;
  if (root) {
    raspM_free(ctx->include_root);
    ctx->include_root = root;
  }
  for (int i = 0; i < ctx->ninclude_dirs; i++) raspM_free(ctx->include_dirs[i]);
  raspM_free(ctx->include_dirs);
  ctx->include_dirs = dirs;
  ctx->ninclude_dirs = n;
  return 1;
fail:
  raspM_free(root);
  for (int i = 0; i < n; i++) raspM_free(dirs[i]);
  raspM_free(dirs);
  return 0;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Whether the real path p lies in the tree of the real directory dir. */
static int inside(const char *dir, const char *p) {
  size_t n = strlen(dir);
  if (n == 1 && dir[0] == '/') return 1;
  return strncmp(dir, p, n) == 0 && (p[n] == '/' || p[n] == '\0');
}

/* include('file.rasp'): runs another file in the global scope, its path
** relative to the including file's directory.  Only programs inside the
** trees rasp_access allows are read (see the top of this file). */
value *raspV_include(rasp_ctx *ctx, value *path, rasp_pos pos) {
  if (path->kind != V_STR) raspV_error(ctx, pos, "include() needs a file name");
  const char *name = path->u.str.s;
  char full[4096];
  const char *base = pos.src ? pos.src->name : "";
  const char *slash = strrchr(base, '/');
  if (name[0] == '/' || !slash)
    snprintf(full, sizeof full, "%s", name);
  else
    snprintf(full, sizeof full, "%.*s/%s", (int)(slash - base), base, name);
  if (ctx->depth >= ctx->limits.max_depth)
    raspV_raise(ctx, RASP_E_LIMIT, pos, "include() nested too deeply");
  if (!ends_with(full, ".rasp"))
    raspV_raise(ctx, RASP_E_ACCESS, pos, "include(): '%s' is not a program; only .rasp files can be included",
                name);
  /* opened once; the checks below are of the file opened (its real path
  ** as the kernel names the descriptor), so swapping a directory for a link
  ** between a check and the read cannot bring another file in */
  char real[PATH_MAX], dir[PATH_MAX];
  rasp_error inner = {0};
  rasp_source *src = raspR_source_open(full, 64u << 20, real, sizeof real, &inner);
  if (!src) {
    if (inner.code == RASP_E_ACCESS || inner.code == RASP_E_LIMIT)
      raspV_raise(ctx, inner.code, pos, "include(): %s", inner.msg);
    raspV_error(ctx, pos, "include(): %s", inner.msg);
  }
  keep_source(ctx, src); /* freed with the context, whatever is raised below */
  const char *root = ctx->include_root;
  if (!root && !(root = realpath(".", dir)))
    raspV_error(ctx, pos, "include(): cannot resolve the current directory: %s", strerror(errno));
  int ok = inside(root, real);
  for (int i = 0; !ok && i < ctx->ninclude_dirs; i++) ok = inside(ctx->include_dirs[i], real);
  if (!ok && ctx->stdlib_dir && realpath(ctx->stdlib_dir, dir)) ok = inside(dir, real);
  if (!ok)
    raspV_raise(ctx, RASP_E_ACCESS, pos, "include(): '%s' is outside the program's directory tree '%s'; "
                "--allow-include DIR allows another tree", full, root);
  /* a link named x.rasp inside the tree may still point at another file */
  if (!ends_with(real, ".rasp"))
    raspV_raise(ctx, RASP_E_ACCESS, pos, "include(): '%s' is not a program (it is '%s'); only .rasp files can "
                "be included", full, real);
  if (memchr(src->text, '\0', src->len))
    raspV_raise(ctx, RASP_E_ACCESS, pos, "include(): '%s' is not a program (it is not text)", full);
  rasp_ast *mod = raspP_parse(src, &ctx->ast_arena, &inner);
  if (!mod) {
    *ctx->err = inner;
    longjmp(*ctx->catcher, 1);
  }
  ctx->depth++;
  exec_block(ctx, ctx->globals, mod->items, mod->nitems);
  ctx->depth--;
  return &ctx->none_v;
}

int rasp_exec_string(rasp_ctx *ctx, const char *name, const char *text, rasp_error *err) {
  return run_source(ctx, raspR_source_new(name, text, strlen(text)), err);
}

int rasp_exec_file(rasp_ctx *ctx, const char *path, rasp_error *err) {
  rasp_source *src = raspR_source_file(path, err);
  if (!src) return 0;
  if (!ctx->include_root) { /* the top-level program's tree */
    const char *slash = strrchr(path, '/');
    char *dir = slash ? raspM_strndup(path, slash == path ? 1 : (size_t)(slash - path))
                      : raspM_strdup(".");
    char buf[PATH_MAX];
    if (realpath(dir, buf)) ctx->include_root = raspM_strdup(buf);
    raspM_free(dir);
  }
  return run_source(ctx, src, err);
}

/* The build's rpaths.h gives the installed stdlib and the source tree's;
   a compile without it (the fuzzers) uses ./stdlib or -DRASP_STDLIB_DIR. */
#ifdef RASP_HAVE_RPATHS_H
#include "rpaths.h"
#endif
#ifndef RASP_STDLIB_DIR
#define RASP_STDLIB_DIR "stdlib"
#endif

int rasp_load_stdlib(rasp_ctx *ctx, const char *dir, rasp_error *err) {
  if (!dir) dir = getenv("RASP_STDLIB");
  char path[4096];
  if (!dir) {
    /* installed copy first; an uninstalled build finds the source tree's */
    dir = RASP_STDLIB_DIR;
    snprintf(path, sizeof path, "%s/core.rasp", dir);
#ifdef RASP_SRC_STDLIB_DIR
    if (access(path, R_OK) != 0) dir = RASP_SRC_STDLIB_DIR;
#endif
  }
  raspM_free(ctx->stdlib_dir);
  ctx->stdlib_dir = raspM_strdup(dir);
  static const char *files[] = {"core.rasp", "pathstar.rasp"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    rasp_source *src = raspR_source_file(path, err);
    if (!src) return 0;
    src->library = 1;
    if (!run_source(ctx, src, err)) return 0;
  }
  return 1;
}

static void add_output(rasp_ctx *ctx, value *v, rasp_pos pos) {
  if (v->kind != V_SOP)
    raspV_error(ctx, pos, "the entry function must return a sequence or a tuple of "
                          "sequences, not %s", raspV_kind_name(v));
  ctx->ir.outputs = raspM_realloc(ctx->ir.outputs, sizeof(int) * (size_t)(ctx->ir.noutputs + 1));
  ctx->ir.outputs[ctx->ir.noutputs++] = v->u.node;
}

int rasp_trace(rasp_ctx *ctx, const char *entry, rasp_error *err) {
  ctx->steps = 0;
  ctx->cb_steps = 0;
  ctx->site = (rasp_pos){0};
  PROTECT_BEGIN(ctx, err)
  value *fn = env_get(ctx->globals, raspV_intern(ctx, entry));
  if (!fn) unknown_name(ctx, (rasp_pos){0}, "the program defines no function '%s'", entry);
  value *input = raspV_sop(ctx, ctx->input_node, V_SOP);
  value *r = raspV_call(ctx, fn, &input, 1, NULL, NULL, 0,
                        fn->kind == V_FUNC ? fn->u.func.def->pos : (rasp_pos){0});
  ctx->ir.noutputs = 0;
  rasp_pos pos = fn->kind == V_FUNC ? fn->u.func.def->pos : (rasp_pos){0};
  if (r->kind == V_TUPLE) {
    for (int i = 0; i < r->u.list.n; i++) add_output(ctx, r->u.list.items[i], pos);
  } else {
    add_output(ctx, r, pos);
  }
  PROTECT_END(ctx)
}

int rasp_has_global(rasp_ctx *ctx, const char *name) {
  return env_find(ctx->globals, raspV_intern(ctx, name)) >= 0;
}

int rasp_get_int(rasp_ctx *ctx, const char *name, int64_t *out, rasp_error *err) {
  PROTECT_BEGIN(ctx, err)
  value *v = env_get(ctx->globals, raspV_intern(ctx, name));
  if (!v) unknown_name(ctx, (rasp_pos){0}, "the program defines no '%s'", name);
  *out = raspV_int(ctx, v, (rasp_pos){0}, name);
  PROTECT_END(ctx)
}

/* Runs body(ctx, arg) with errors caught into err and releases the values
** it made; the caller holds the context's lock. */
static int run_protected(rasp_ctx *ctx, rasp_error *err, void (*body)(rasp_ctx *, void *),
                         void *arg) {
  ctx->steps = 0;
  unsigned long long saved_mark = ctx->mark;
  ctx->mark = ctx->serial;
  volatile int result;
  {
    PROTECT_BEGIN(ctx, err)
    body(ctx, arg);
    ok_ = 1;
    }
    ctx->catcher = saved_catcher_;
    ctx->err = saved_err_;
    ctx->depth = 0;
    result = ok_;
  }
  heap_release(ctx, ctx->mark);
  ctx->mark = saved_mark;
  return result;
}

typedef struct check_call {
  const char *name;
  const rasp_arg *args;
  int nargs;
  int *truth;
} check_call;

static void check_body(rasp_ctx *ctx, void *arg) {
  const check_call *cc = arg;
  /* the verifier calls the same function for every graph */
  if (cc->name != ctx->check_name) {
    ctx->check_interned = raspV_intern(ctx, cc->name);
    ctx->check_name = cc->name;
  }
  value *fn = env_get(ctx->globals, ctx->check_interned);
  if (!fn) unknown_name(ctx, (rasp_pos){0}, "the program defines no function '%s'", cc->name);
  value *argv[8];
  if (cc->nargs > 8) raspV_error(ctx, (rasp_pos){0}, "too many arguments");
  for (int i = 0; i < cc->nargs; i++) {
    if (cc->args[i].elems) {
      value *l = raspV_list(ctx, V_LIST, cc->args[i].count);
      for (int k = 0; k < cc->args[i].count; k++)
        l->u.list.items[k] = raspV_from_elem(ctx, cc->args[i].elems[k]);
      argv[i] = l;
    } else {
      argv[i] = raspV_from_elem(ctx, cc->args[i].elem);
    }
  }
  value *r = raspV_call(ctx, fn, argv, cc->nargs, NULL, NULL, 0, (rasp_pos){0});
  *cc->truth = raspV_truth(ctx, r, fn->kind == V_FUNC ? fn->u.func.def->pos : (rasp_pos){0});
}

/* Serialised: verifier threads check outputs through one context. */
int rasp_call_check(rasp_ctx *ctx, const char *name, const rasp_arg *args, int nargs,
                    int *truth, rasp_error *err) {
  check_call cc = {name, args, nargs, truth};
  pthread_mutex_lock(&ctx->lock);
  unsigned long long saved_frozen = ctx->frozen;
  ctx->frozen = ctx->serial; /* check() too: the verifier checks graphs in any order */
  int ok = run_protected(ctx, err, check_body, &cc);
  ctx->frozen = saved_frozen;
  pthread_mutex_unlock(&ctx->lock);
  return ok;
}

void rasp_interrupt(rasp_ctx *ctx, int on) { ctx->interrupted = on != 0; }

int rasp_repl_entry(rasp_ctx *ctx, const char *text, int *node, int *is_sel, char **shown,
                    rasp_error *err) {
  *node = -1;
  *is_sel = 0;
  *shown = NULL;
  rasp_source *src = keep_source(ctx, raspR_source_new("<repl>", text, strlen(text)));
  rasp_ast *mod = raspP_parse(src, &ctx->ast_arena, err);
  if (!mod) return 0;
  ctx->steps = 0;
  ctx->cb_steps = 0; /* each entry is evaluated anew, like a trace */
  PROTECT_BEGIN(ctx, err)
  if (mod->nitems == 1 && mod->items[0]->kind == AST_EXPR) {
    value *v = eval(ctx, ctx->globals, mod->items[0]->a);
    if (v->kind == V_SOP || v->kind == V_SEL) {
      *node = v->u.node;
      *is_sel = v->kind == V_SEL;
    } else if (v->kind != V_NONE) {
      *shown = raspV_repr(ctx, v);
    }
  } else {
    exec_block(ctx, ctx->globals, mod->items, mod->nitems);
  }
  PROTECT_END(ctx)
}

int rasp_dict_keys(rasp_ctx *ctx, const char *dict, void (*fn)(void *, const char *),
                   void *user) {
  value *d = env_get(ctx->globals, raspV_intern(ctx, dict));
  if (!d || d->kind != V_DICT) return 0;
  for (int i = 0; i < d->u.dict.n; i++) {
    value *k = d->u.dict.keys[i];
    fn(user, k->kind == V_STR ? k->u.str.s : "?");
  }
  return 1;
}

void rasp_complete(rasp_ctx *ctx, const char *prefix, void (*fn)(void *, const char *),
                   void *user) {
  size_t len = strlen(prefix);
  for (env *e = ctx->globals; e; e = e->parent)
    for (int i = 0; i < e->n; i++)
      if (strncmp(e->names[i], prefix, len) == 0) fn(user, e->names[i]);
}

char *rasp_describe(rasp_ctx *ctx, const char *name) {
  value *v = env_get(ctx->globals, raspV_intern(ctx, name));
  if (!v) return NULL;
  strbuf b = {0};
  sb_puts(&b, "");
  if (v->kind == V_BUILTIN) {
    sb_puts(&b, v->u.bi->name);
    sb_puts(&b, "(");
    sb_puts(&b, v->u.bi->params);
    sb_puts(&b, ") -- ");
    sb_puts(&b, v->u.bi->doc);
  } else if (v->kind == V_FUNC) {
    const rasp_ast *def = v->u.func.def;
    sb_puts(&b, name);
    sb_puts(&b, "(");
    for (int i = 0; i < def->nnames; i++) {
      if (i) sb_puts(&b, ", ");
      sb_puts(&b, def->names[i]);
    }
    sb_puts(&b, ")");
    if (def->pos.src) {
      char tmp[300];
      snprintf(tmp, sizeof tmp, " -- defined at %s:%d", def->pos.src->name, def->pos.line);
      sb_puts(&b, tmp);
    }
  } else {
    char *r = raspV_repr(ctx, v);
    sb_puts(&b, r);
    raspM_free(r);
  }
  return b.s;
}

int rasp_format_symbolic(const rasp_ctx *ctx, rasp_elem e, char *buf, size_t size) {
  if (e.den == 1) {
    const char *s = rasp_vocab_symbol(ctx, e.num);
    if (s) return snprintf(buf, size, "%s", s);
  }
  return raspI_elem_format(&ctx->ir, e, buf, size);
}

int rasp_get_setting(rasp_ctx *ctx, const char *dict, const char *key, char *buf, size_t size,
                     rasp_error *err) {
  buf[0] = '\0';
  value *d = env_get(ctx->globals, raspV_intern(ctx, dict));
  if (!d || d->kind != V_DICT) return 0;
  value *k = raspV_str(ctx, key, strlen(key));
  value *v = raspV_dict_get(d, k);
  if (!v) return 0;
  strbuf b = {0};
  sb_puts(&b, "");
  value *items = v;
  int n = 1;
  if (v->kind == V_LIST || v->kind == V_TUPLE) n = v->u.list.n;
  for (int i = 0; i < n; i++) {
    value *it = (items->kind == V_LIST || items->kind == V_TUPLE) ? items->u.list.items[i] : v;
    if (i) sb_puts(&b, " ");
    if (it->kind == V_STR) sb_add(&b, it->u.str.s, it->u.str.len);
    else {
      char *r = raspV_repr(ctx, it);
      sb_puts(&b, r);
      raspM_free(r);
    }
  }
  int ok = 1;
  if (b.n + 1 > size) {
    raspR_setnoposc(err, RASP_E_TASK, "setting %s['%s'] is too long", dict, key);
    ok = -1;
  } else {
    memcpy(buf, b.s, b.n + 1);
  }
  raspM_free(b.s);
  return ok;
}

/* ------------------------------------------------ hooks for rstage.c */

value *raspV_eval(rasp_ctx *ctx, env *e, const rasp_ast *x) { return eval(ctx, e, x); }

env *raspV_env_new(rasp_ctx *ctx, env *parent) { return env_new(ctx, parent); }

void raspV_env_set(rasp_ctx *ctx, env *e, const char *name, value *v) {
  env_set(ctx, e, name, v);
}

value *raspV_global(rasp_ctx *ctx, const char *name) {
  return env_get(ctx->globals, raspV_intern(ctx, name));
}

/* Runs body under an error catcher, with the context's lock held (so no
** evaluator callback runs meanwhile), and releases the values it made. */
int raspV_protected(rasp_ctx *ctx, rasp_error *err, void (*body)(rasp_ctx *, void *),
                    void *arg) {
  pthread_mutex_lock(&ctx->lock);
  int ok = run_protected(ctx, err, body, arg);
  pthread_mutex_unlock(&ctx->lock);
  return ok;
}
