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

env *raspV_env_new(rasp_ctx *ctx, env *parent) {
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
void raspV_release(rasp_ctx *ctx, unsigned long long mark) {
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

/* ----------------------------------------------------- constants, caches */

/* Moves v from the heap list to the constants, which are never released
** early: values are immutable, so one object can stand for a number or a
** symbol wherever it occurs. */
value *raspV_make_const(rasp_ctx *ctx, value *v) {
  if (ctx->objects == v) {
    ctx->objects = v->next_obj;
    v->next_obj = ctx->consts;
    ctx->consts = v;
    v->serial = 0;
  }
  return v;
}

/* The shared value of a small integer, or NULL outside the cached range. */
value *raspV_small_int(rasp_ctx *ctx, long n) {
  if (n < SMALL_INT_MIN || n > SMALL_INT_MAX) return NULL;
  value **slot = &ctx->intcache[n - SMALL_INT_MIN];
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
        value *v = raspV_make_const(ctx, raspV_str(ctx, s, strlen(s)));
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

/* A hash lookup of the symbol, then its token id by symbol id: reading an
** input of n distinct symbols was quadratic with a scan of the vocabulary.
** (token_of is filled by rasp_set_vocab.) */
int64_t rasp_vocab_id(const rasp_ctx *ctx, const char *symbol) {
  if (!ctx->symhcap) return 0;
  int64_t sym = ctx->symhash[symbol_slot(ctx, symbol)];
  return sym >= 0 && sym < ctx->ntoken_of ? ctx->token_of[sym] : 0;
}

const char *raspV_symbol_name(void *user, int64_t id) {
  const rasp_ctx *ctx = user;
  return id >= 0 && id < ctx->nsyms ? ctx->syms[id] : NULL;
}

/* ------------------------------------------------------------ freeing all */

void raspV_heap_free(rasp_ctx *ctx) {
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
  raspM_free(ctx->intcache);
  raspM_free(ctx->symcache);
}
