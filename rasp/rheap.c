/*
** rheap.c -- the interpreter's heap: every value and scope a context makes.
**
** A context owns everything it allocates; objects are chained in
** allocation order (serial) and freed together by rasp_ctx_free
** (raspV_heap_free), never one by one, so an error can longjmp out of any
** depth without leaking.  The one exception is early release: a caller that
** runs many short computations on one context (the verifier's check() per
** graph, the evaluator's callbacks) sets a mark and afterwards releases
** what was made since (raspV_release), into spare lists that the next
** allocations reuse.  That is safe only if nothing made after the mark is
** still reachable from something older; the write barrier (raspV_barrier),
** called wherever a value is stored into an object or a scope, sees such an
** escape and pins the heap, after which nothing is released: a missed
** release costs memory, a wrong one would be a use after free.
**
** Values are immutable except lists, dicts and scopes, so one object can
** stand for a small integer or a symbol wherever it occurs: those come from
** caches of constants, which are never released.  Interned names (pointer
** equality for scope lookups) and the symbol table (symbol id <-> text, the
** ids that sequences of strings hold; rasp_symbol and rasp_vocab_id of the
** public API read it) live here too.
**
** Collection.  A program's top level can make garbage without end (a loop
** that rebinds a name to a new big number every turn), so between top-level
** statements, once the bytes made since the last collection (an estimate:
** each object, a number's digits, a string's text, a list's slots) reach
** the larger of 8 MB and what survived the last one, raspV_collect marks
** what the globals (and their builtins), the IR's functions, ctx->retval
** and the roots reach and frees the rest.  It runs only there because
** deeper down the C stack holds values the mark cannot see (a call's
** arguments, half a list display); at the top level only a for loop holds
** one (its items), which it pushes as a root.  Constants (serial 0) hold no
** other values and are never freed.  RASP_GC_STRESS=1 in the environment
** collects before every top-level statement (the tests run the suite so,
** to catch a value held where the mark cannot see it).
*/
#include "rinterp_int.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- heap */

/* Values released early (raspV_release) go to two spare lists, so the
** verifier's thousands of check() calls do not pay malloc and mpq_init for
** every temporary; numbers keep their mpq_t. */
#define MAX_SPARE 4096

value *raspV_new(rasp_ctx *ctx, vkind kind) {
  value *v;
  if (kind == V_NUM && ctx->heap.spare_num) {
    v = ctx->heap.spare_num;
    ctx->heap.spare_num = v->next_obj;
    ctx->heap.nspare--;
    mpq_set_ui(v->u.q, 0, 1);
  } else if (kind != V_NUM && ctx->heap.spare) {
    v = ctx->heap.spare;
    ctx->heap.spare = v->next_obj;
    ctx->heap.nspare--;
    memset(v, 0, sizeof *v);
  } else {
    v = raspM_alloc(sizeof *v);
    if (kind == V_NUM) mpq_init(v->u.q);
  }
  v->kind = kind;
  v->tag = 0;
  v->gcmark = 0;
  ctx->heap.debt += sizeof *v;
  v->serial = ++ctx->heap.serial;
  v->next_obj = ctx->heap.objects;
  ctx->heap.objects = v;
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
  case V_CFUNC: raspD_free(v->u.cf); break;
  default: break;
  }
  return 0;
}

static void free_value(value *v) {
  free_parts(v, 0);
  raspM_free(v);
}

static void spare_value(rasp_ctx *ctx, value *v) {
  if (ctx->heap.nspare >= MAX_SPARE) {
    free_value(v);
    return;
  }
  if (free_parts(v, 1)) {
    v->next_obj = ctx->heap.spare_num;
    ctx->heap.spare_num = v;
  } else {
    v->kind = V_NONE; /* owns nothing now */
    v->next_obj = ctx->heap.spare;
    ctx->heap.spare = v;
  }
  ctx->heap.nspare++;
}

env *raspV_env_new(rasp_ctx *ctx, env *parent) {
  env *const e = ctx->heap.spare_env ? ctx->heap.spare_env : raspM_alloc(sizeof *e);
  if (e == ctx->heap.spare_env) { /* names and vals keep their capacity */
    ctx->heap.spare_env = e->next_env;
    ctx->heap.nspare_env--;
    e->n = 0;
  }
  e->gcmark = 0;
  e->parent = parent;
  e->serial = ++ctx->heap.serial;
  e->next_env = ctx->heap.envs;
  ctx->heap.envs = e;
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
void raspV_release(rasp_ctx *ctx, unsigned long long mark) {
  RASP_ASSERT(mark <= ctx->heap.serial, "a release mark is a serial already given");
  if (ctx->heap.pinned) return;
  while (ctx->heap.objects && ctx->heap.objects->serial > mark) {
    value *v = ctx->heap.objects;
    ctx->heap.objects = v->next_obj;
    spare_value(ctx, v);
  }
  while (ctx->heap.envs && ctx->heap.envs->serial > mark) {
    env *e = ctx->heap.envs;
    ctx->heap.envs = e->next_env;
    if (ctx->heap.nspare_env >= MAX_SPARE || e->hash) {
      free_env(e);
    } else {
      e->next_env = ctx->heap.spare_env;
      ctx->heap.spare_env = e;
      ctx->heap.nspare_env++;
    }
  }
}

void raspV_barrier(rasp_ctx *ctx, unsigned long long holder_serial, value *v) {
  if (ctx->heap.mark && holder_serial <= ctx->heap.mark && v->serial > ctx->heap.mark)
    ctx->heap.pinned = 1;
}

/* ------------------------------------------------------------ collection */

#define COLLECT_MIN ((size_t)8 << 20)

void raspV_root_push(rasp_ctx *ctx, value *v) {
  RASP_GROW(ctx->heap.roots, ctx->heap.rootcap, ctx->heap.nroots + 1);
  ctx->heap.roots[ctx->heap.nroots++] = v;
}

/* The mark's work list: values and scopes reached but not yet scanned. */
typedef struct gray {
  value **v;
  env **e;
  size_t nv, vcap, ne, ecap;
  size_t live; /* bytes reached (the estimate raspV_debt counts) */
} gray;

static void gray_value(gray *g, value *v) {
  if (!v || !v->serial || v->gcmark) return; /* constants hold nothing */
  v->gcmark = 1;
  RASP_GROW(g->v, g->vcap, g->nv + 1);
  g->v[g->nv++] = v;
}

static void gray_env(gray *g, env *e) {
  if (!e || e->gcmark) return;
  e->gcmark = 1;
  RASP_GROW(g->e, g->ecap, g->ne + 1);
  g->e[g->ne++] = e;
}

/* What v refers to, grayed; its size counted. */
static void scan_value(gray *g, value *v) {
  g->live += sizeof *v;
  switch (v->kind) {
  case V_NUM:
    g->live += (mpz_sizeinbase(mpq_numref(v->u.q), 2) + mpz_sizeinbase(mpq_denref(v->u.q), 2)) / 8;
    break;
  case V_STR: g->live += v->u.str.len; break;
  case V_TUPLE:
  case V_LIST:
    g->live += sizeof(value *) * (size_t)v->u.list.n;
    for (int i = 0; i < v->u.list.n; i++) gray_value(g, v->u.list.items[i]);
    break;
  case V_DICT:
    g->live += 2 * sizeof(value *) * (size_t)v->u.dict.n;
    for (int i = 0; i < v->u.dict.n; i++) {
      gray_value(g, v->u.dict.keys[i]);
      gray_value(g, v->u.dict.vals[i]);
    }
    break;
  case V_FUNC:
    gray_env(g, v->u.func.closure);
    for (int i = 0; i < v->u.func.ndefaults; i++) gray_value(g, v->u.func.defaults[i]);
    break;
  default: break; /* builtins, cfuncs, sequences and selectors: no values */
  }
}

static void scan_env(gray *g, env *e) {
  gray_env(g, e->parent);
  for (int i = 0; i < e->n; i++) gray_value(g, e->vals[i]);
}

/* Marks everything the roots reach; returns the bytes reached. */
static size_t mark_all(rasp_ctx *ctx) {
  gray g;
  memset(&g, 0, sizeof g);
  gray_env(&g, ctx->globals);
  gray_value(&g, ctx->retval);
  for (int i = 0; i < ctx->heap.nroots; i++) gray_value(&g, ctx->heap.roots[i]);
  for (int i = 0; i < ctx->ir.nnodes; i++) gray_value(&g, ctx->ir.nodes[i].fn);
  while (g.nv || g.ne) {
    if (g.nv) scan_value(&g, g.v[--g.nv]);
    else scan_env(&g, g.e[--g.ne]);
  }
  raspM_free(g.v);
  raspM_free(g.e);
  return g.live;
}

void raspV_collect(rasp_ctx *ctx) {
  size_t live = mark_all(ctx);
  RASP_ASSERT(ctx->heap.nroots >= 0, "the roots are pushed and popped in pairs");
  for (value **p = &ctx->heap.objects; *p;) {
    value *v = *p;
    /* the essay: objects are chained newest first, which early release reads */
    RASP_ASSERT(!v->next_obj || v->next_obj->serial < v->serial, "the heap in allocation order");
    if (v->gcmark) {
      v->gcmark = 0;
      p = &v->next_obj;
    } else {
      *p = v->next_obj;
      if (ctx->heap.threshold) spare_value(ctx, v);
      else free_value(v); /* stress: a sanitizer sees any use after this */
    }
  }
  for (env **p = &ctx->heap.envs; *p;) {
    env *e = *p;
    if (e->gcmark) {
      e->gcmark = 0;
      p = &e->next_env;
    } else {
      *p = e->next_env;
      free_env(e);
    }
  }
  ctx->heap.debt = 0;
  if (ctx->heap.threshold) ctx->heap.threshold = live > COLLECT_MIN ? live : COLLECT_MIN;
}

/* ----------------------------------------------------- constants, caches */

/* Moves v from the heap list to the constants, which are never released
** early: values are immutable, so one object can stand for a number or a
** symbol wherever it occurs. */
value *raspV_make_const(rasp_ctx *ctx, value *v) {
  if (ctx->heap.objects == v) {
    ctx->heap.objects = v->next_obj;
    v->next_obj = ctx->heap.consts;
    ctx->heap.consts = v;
    v->serial = 0;
  }
  return v;
}

/* The shared value of a small integer, or NULL outside the cached range. */
value *raspV_small_int(rasp_ctx *ctx, long n) {
  if (n < SMALL_INT_MIN || n > SMALL_INT_MAX) return NULL;
  value **slot = &ctx->heap.intcache[n - SMALL_INT_MIN];
  if (!*slot) {
    value *v = raspV_new(ctx, V_NUM);
    mpq_set_si(v->u.q, n, 1);
    *slot = raspV_make_const(ctx, v);
  }
  return *slot;
}

/* Elements become values often (every output check, every map call):
** small integers and symbols come from caches instead of new objects. */
value *raspV_from_elem(rasp_ctx *ctx, rasp_elem e) {
  /* the two common cases first, straight from the caches */
  if (e.den == 1 && e.num >= SMALL_INT_MIN && e.num <= SMALL_INT_MAX &&
      ctx->heap.intcache[e.num - SMALL_INT_MIN])
    return ctx->heap.intcache[e.num - SMALL_INT_MIN];
  if (e.den == RASP_DEN_SYM && e.num >= 0 && e.num < ctx->heap.symcache_n &&
      ctx->heap.symcache[e.num])
    return ctx->heap.symcache[e.num];
  if (e.den == RASP_DEN_BOOL) return raspV_bool(ctx, e.num != 0);
  if (e.den == RASP_DEN_SYM && e.num == RASP_SYM_NONE) return &ctx->none_v;
  if (e.den == RASP_DEN_SYM) {
    if (e.num >= 0 && e.num < ctx->names.nsyms) {
      if (ctx->heap.symcache_n < ctx->names.nsyms) {
        ctx->heap.symcache =
            raspM_realloc(ctx->heap.symcache, sizeof(value *) * (size_t)ctx->names.nsyms);
        for (int64_t i = ctx->heap.symcache_n; i < ctx->names.nsyms; i++)
          ctx->heap.symcache[i] = NULL;
        ctx->heap.symcache_n = ctx->names.nsyms;
      }
      if (!ctx->heap.symcache[e.num]) {
        const char *s = ctx->names.syms[e.num];
        value *v = raspV_make_const(ctx, raspV_str(ctx, s, strlen(s)));
        v->u.str.sym = e.num;
        ctx->heap.symcache[e.num] = v;
      }
      return ctx->heap.symcache[e.num];
    }
    value *v = raspV_str(ctx, "?", 1);
    v->u.str.sym = e.num;
    return v;
  }
  if (e.den == 1 && e.num >= SMALL_INT_MIN && e.num <= SMALL_INT_MAX)
    return raspV_small_int(ctx, (long)e.num);
  value *v = raspV_new(ctx, V_NUM);
  mpq_set_si(v->u.q, (long)e.num, (unsigned long)e.den);
  return v;
}

/* ---------------------------------------------------------- making values */

value *raspV_num_si(rasp_ctx *ctx, long n) {
  value *v = raspV_small_int(ctx, n);
  if (v) return v;
  v = raspV_new(ctx, V_NUM);
  mpq_set_si(v->u.q, n, 1);
  return v;
}

value *raspV_str(rasp_ctx *ctx, const char *s, size_t len) {
  value *v = raspV_new(ctx, V_STR);
  v->u.str.s = raspM_strndup(s, len);
  ctx->heap.debt += len;
  v->u.str.len = len;
  return v;
}

value *raspV_list(rasp_ctx *ctx, vkind kind, int n) {
  value *v = raspV_new(ctx, kind);
  v->u.list.items = raspM_alloc(sizeof(value *) * (size_t)(n ? n : 1));
  ctx->heap.debt += sizeof(value *) * (size_t)n;
  v->u.list.n = n;
  v->u.list.cap = n ? n : 1;
  return v;
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

/* ------------------------------------------------------------- interning */

static size_t hash_str(const char *s) {
  size_t h = 1469598103934665603u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

const char *raspV_intern(rasp_ctx *ctx, const char *s) {
  if (ctx->names.ninterned * 2 >= ctx->names.icap) {
    size_t ncap = ctx->names.icap ? ctx->names.icap * 2 : 256;
    char **tab = raspM_alloc(ncap * sizeof *tab);
    for (size_t i = 0; i < ctx->names.icap; i++)
      if (ctx->names.interned[i]) {
        size_t j = hash_str(ctx->names.interned[i]) & (ncap - 1);
        while (tab[j]) j = (j + 1) & (ncap - 1);
        tab[j] = ctx->names.interned[i];
      }
    raspM_free(ctx->names.interned);
    ctx->names.interned = tab;
    ctx->names.icap = ncap;
  }
  size_t j = hash_str(s) & (ctx->names.icap - 1);
  while (ctx->names.interned[j]) {
    if (strcmp(ctx->names.interned[j], s) == 0) return ctx->names.interned[j];
    j = (j + 1) & (ctx->names.icap - 1);
  }
  ctx->names.interned[j] = raspM_strdup(s);
  ctx->names.ninterned++;
  return ctx->names.interned[j];
}

/* ------------------------------------------------------------- symbols */

/* The slot of text in the symbol hash: its id, or -1 (a free slot). */
static size_t symbol_slot(const rasp_ctx *ctx, const char *text) {
  size_t j = hash_str(text) & (ctx->names.symhcap - 1);
  while (ctx->names.symhash[j] >= 0) {
    if (strcmp(ctx->names.syms[ctx->names.symhash[j]], text) == 0) return j;
    j = (j + 1) & (ctx->names.symhcap - 1);
  }
  return j;
}

int64_t rasp_symbol(rasp_ctx *ctx, const char *text) {
  if ((size_t)ctx->names.nsyms * 2 >= ctx->names.symhcap) {
    size_t ncap = ctx->names.symhcap ? ctx->names.symhcap * 2 : 256;
    int *tab = raspM_alloc(ncap * sizeof *tab);
    for (size_t i = 0; i < ncap; i++) tab[i] = -1;
    for (int64_t i = 0; i < ctx->names.nsyms; i++) {
      size_t j = hash_str(ctx->names.syms[i]) & (ncap - 1);
      while (tab[j] >= 0) j = (j + 1) & (ncap - 1);
      tab[j] = (int)i;
    }
    raspM_free(ctx->names.symhash);
    ctx->names.symhash = tab;
    ctx->names.symhcap = ncap;
  }
  size_t j = symbol_slot(ctx, text);
  if (ctx->names.symhash[j] >= 0) return ctx->names.symhash[j];
  RASP_GROW(ctx->names.syms, ctx->names.symcap, ctx->names.nsyms + 1);
  ctx->names.syms[ctx->names.nsyms] = raspM_strdup(text);
  ctx->names.symhash[j] = (int)ctx->names.nsyms;
  return ctx->names.nsyms++;
}

int64_t raspV_symbol_of(rasp_ctx *ctx, value *str) {
  if (str->u.str.sym < 0) str->u.str.sym = rasp_symbol(ctx, str->u.str.s);
  return str->u.str.sym;
}

/* A hash lookup of the symbol, then its token id by symbol id: reading an
** input of n distinct symbols was quadratic with a scan of the vocabulary.
** (token_of is filled by rasp_set_vocab.) */
int64_t rasp_vocab_id(const rasp_ctx *ctx, const char *symbol) {
  if (!ctx->names.symhcap) return 0;
  int64_t sym = ctx->names.symhash[symbol_slot(ctx, symbol)];
  return sym >= 0 && sym < ctx->ntoken_of ? ctx->token_of[sym] : 0;
}

const char *raspV_symbol_name(void *user, int64_t id) {
  const rasp_ctx *ctx = user;
  return id >= 0 && id < ctx->names.nsyms ? ctx->names.syms[id] : NULL;
}

/* ------------------------------------------------------------ freeing all */

void raspV_heap_free(rasp_ctx *ctx) {
  for (int pass = 0; pass < 4; pass++) {
    value *v = pass == 0 ? ctx->heap.objects : pass == 1 ? ctx->heap.consts
               : pass == 2 ? ctx->heap.spare : ctx->heap.spare_num;
    while (v) {
      value *next = v->next_obj;
      free_value(v);
      v = next;
    }
  }
  for (int pass = 0; pass < 2; pass++)
    while (pass ? ctx->heap.spare_env : ctx->heap.envs) {
      env **list = pass ? &ctx->heap.spare_env : &ctx->heap.envs;
      env *e = *list;
      *list = e->next_env;
      free_env(e);
    }
  for (size_t i = 0; i < ctx->names.icap; i++) raspM_free(ctx->names.interned[i]);
  raspM_free(ctx->names.interned);
  for (int64_t i = 0; i < ctx->names.nsyms; i++) raspM_free(ctx->names.syms[i]);
  raspM_free(ctx->names.syms);
  raspM_free(ctx->names.symhash);
  raspM_free(ctx->heap.intcache);
  raspM_free(ctx->heap.symcache);
  raspM_free(ctx->heap.roots);
}
