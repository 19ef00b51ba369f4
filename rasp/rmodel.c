/*
** rmodel.c -- transformer weights: layout, safetensors I/O, reference
** forward pass.
**
** The file formats are read by a small JSON parser of our own (a model file
** may be anything a user points us at, so the parser must survive garbage:
** it is bounded in depth, never reads past its buffer and reports the byte
** offset of the first problem).  Values are parsed into a small tree; object
** values remember where their text starts and ends so that the "layout"
** object of STEM.json can be kept verbatim.
**
** The forward pass is deliberately plain (no BLAS, no threads): it is the
** reference the trainer and the compiler are checked against.
*/
#include "rmodel.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmem.h"

/* Limits on what a model file may claim.  A model may come from anywhere,
** so nothing it says is allocated before it has been checked against these
** and against the size of the files themselves (raspN_load): a config that
** claims more parameters than its .safetensors holds is refused before any
** parameter memory exists.  No model of ours comes near them. */
#define MAXDIM (1 << 20)               /* vocab_size, max_len, d_model, ... */
#define MAXLAYERS 4096                 /* n_layers */
#define MAXPARAMS ((size_t)1 << 32)    /* floats, all tensors together */
#define MAXHEADER ((uint64_t)16 << 20) /* the safetensors JSON header */
#define MAXJSON ((size_t)64 << 20)     /* STEM.json */
#define JSON_MAXDEPTH 64
#define JSON_MAXNODES (4 << 20)        /* values in one JSON text */

/* ---- layout ------------------------------------------------------------- */

static int cfg_check(const rasp_model_config *c, rasp_error *err) {
  struct { const char *name; int v, min; } f[] = {
      {"vocab_size", c->vocab_size, 1}, {"max_len", c->max_len, 1},
      {"d_model", c->d_model, 1},       {"n_layers", c->n_layers, 0},
      {"n_heads", c->n_heads, 1},       {"d_head", c->d_head, 1},
      {"d_mlp", c->d_mlp, 1},           {"n_out", c->n_out, 1},
  };
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (f[i].v < f[i].min || f[i].v > MAXDIM) {
      raspR_setnoposc(err, RASP_E_USAGE, "model config: %s = %d is out of range [%d, %d]",
                     f[i].name, f[i].v, f[i].min, MAXDIM);
      return -1;
    }
  if (c->n_layers > MAXLAYERS) {
    raspR_setnoposc(err, RASP_E_USAGE, "model config: n_layers = %d is too large (at most %d)",
                   c->n_layers, MAXLAYERS);
    return -1;
  }
  if (c->layer_norm < 0 || c->layer_norm > RASPN_LN_RMS) {
    raspR_setnoposc(err, RASP_E_USAGE, "model config: layer_norm = %d must be 0 (none), 1 "
                        "(pre-LN) or 2 (pre-RMSNorm)", c->layer_norm);
    return -1;
  }
  if (!(c->norm_eps >= 0 && c->norm_eps < 1e38)) {
    raspR_setnoposc(err, RASP_E_USAGE, "model config: norm_eps = %g must be a positive number "
                        "below 1e38 (float32's range)", c->norm_eps);
    return -1;
  }
  struct { const char *name; int v; } b[] = {{"causal", c->causal},
                                             {"pos_embedding", c->pos_embedding},
                                             {"gelu", c->gelu}};
  for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
    if (b[i].v != 0 && b[i].v != 1) {
      raspR_setnoposc(err, RASP_E_USAGE, "model config: %s = %d must be 0 or 1", b[i].name,
                     b[i].v);
      return -1;
    }
  if (c->bos_token < -1 || c->bos_token >= c->vocab_size) {
    raspR_setnoposc(err, RASP_E_USAGE, "model config: bos_token = %d is not -1 or a token id "
                        "below vocab_size %d", c->bos_token, c->vocab_size);
    return -1;
  }
  return 0;
}

typedef struct layout {
  rasp_tensor *t;
  int n, cap;
  size_t total;
} layout;

static void lay_add(layout *l, const char *name, int ndim, int64_t a, int64_t b,
                    int64_t c) {
  RASP_GROW(l->t, l->cap, l->n + 1);
  rasp_tensor *t = &l->t[l->n++];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->ndim = ndim;
  int64_t d[3] = {a, b, c};
  size_t sz = 1;
  for (int i = 0; i < ndim; i++) {
    t->shape[i] = d[i];
    sz *= (size_t)d[i];
  }
  t->offset = l->total;
  t->size = sz;
  l->total += sz;
}

/* The one place that fixes the flat parameter order (see rmodel.h). */
static void build_layout(layout *l, const rasp_model_config *c) {
  int64_t V = c->vocab_size, T = c->max_len, D = c->d_model, H = c->n_heads,
          Dh = c->d_head, F = c->d_mlp, O = c->n_out;
  char nm[64];
  lay_add(l, "tok_emb", 2, V, D, 0);
  if (c->pos_embedding) lay_add(l, "pos_emb", 2, T, D, 0);
  for (int L = 0; L < c->n_layers; L++) {
#define NM(s) (snprintf(nm, sizeof nm, "layers.%d.%s", L, s), nm)
    if (c->layer_norm) {
      lay_add(l, NM("ln1.weight"), 1, D, 0, 0);
      if (c->layer_norm == RASPN_LN_PRE) lay_add(l, NM("ln1.bias"), 1, D, 0, 0);
    }
    lay_add(l, NM("attn.w_q"), 3, H, D, Dh);
    lay_add(l, NM("attn.w_k"), 3, H, D, Dh);
    lay_add(l, NM("attn.w_v"), 3, H, D, Dh);
    lay_add(l, NM("attn.b_q"), 2, H, Dh, 0);
    lay_add(l, NM("attn.b_k"), 2, H, Dh, 0);
    lay_add(l, NM("attn.b_v"), 2, H, Dh, 0);
    lay_add(l, NM("attn.w_o"), 3, H, Dh, D);
    lay_add(l, NM("attn.b_o"), 1, D, 0, 0);
    if (c->layer_norm) {
      lay_add(l, NM("ln2.weight"), 1, D, 0, 0);
      if (c->layer_norm == RASPN_LN_PRE) lay_add(l, NM("ln2.bias"), 1, D, 0, 0);
    }
    lay_add(l, NM("mlp.w_in"), 2, D, F, 0);
    lay_add(l, NM("mlp.b_in"), 1, F, 0, 0);
    lay_add(l, NM("mlp.w_out"), 2, F, D, 0);
    lay_add(l, NM("mlp.b_out"), 1, D, 0, 0);
#undef NM
  }
  if (c->layer_norm) {
    lay_add(l, "ln_f.weight", 1, D, 0, 0);
    if (c->layer_norm == RASPN_LN_PRE) lay_add(l, "ln_f.bias", 1, D, 0, 0);
  }
  lay_add(l, "unembed", 2, D, O, 0);
  lay_add(l, "unembed_b", 1, O, 0, 0);
}

/* The tensor table of cfg, without the parameters (m->params NULL): what
** raspN_load checks a file against before it allocates anything. */
static int lay_out(rasp_model *m, const rasp_model_config *cfg, rasp_error *err) {
  memset(m, 0, sizeof *m);
  if (cfg_check(cfg, err)) return -1;
  layout l = {0};
  build_layout(&l, cfg);
  if (l.total > MAXPARAMS) {
    raspR_setnoposc(err, RASP_E_USAGE, "model config: %zu parameters is too many (at most %zu)",
                   l.total, MAXPARAMS);
    raspM_free(l.t);
    return -1;
  }
  m->cfg = *cfg;
  m->tensors = l.t;
  m->ntensors = l.n;
  m->nparams = l.total;
  return 0;
}

int raspN_init(rasp_model *m, const rasp_model_config *cfg, rasp_error *err) {
  if (lay_out(m, cfg, err)) return 0;
  size_t room = raspM_room() / sizeof(float);
  if (m->nparams > room) {
    raspR_setnoposc(err, RASP_E_LIMIT,
                    "model config: %zu parameters (%zu MB) do not fit in the memory the budget "
                    "leaves (%zu MB; --max-memory)", m->nparams, m->nparams * sizeof(float) >> 20,
                    room * sizeof(float) >> 20);
    raspN_free(m);
    return 0;
  }
  m->params = raspM_alloc((m->nparams ? m->nparams : 1) * sizeof(float));
  return 1;
}

void raspN_free(rasp_model *m) {
  if (!m) return;
  raspM_free(m->params);
  raspM_free(m->tensors);
  raspM_free(m->json_extra);
  memset(m, 0, sizeof *m);
}

rasp_tensor *raspN_tensor(rasp_model *m, const char *name) {
  for (int i = 0; i < m->ntensors; i++)
    if (!strcmp(m->tensors[i].name, name)) return &m->tensors[i];
  return NULL;
}

float *raspN_data(rasp_model *m, const char *name) {
  rasp_tensor *t = raspN_tensor(m, name);
  return t ? m->params + t->offset : NULL;
}

/* ---- a small JSON parser ------------------------------------------------ */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
  jtype type;
  double num;
  int boolean;
  char *str;          /* J_STR: decoded, NUL-terminated */
  struct jval *items; /* J_ARR/J_OBJ: n values */
  char **keys;        /* J_OBJ: n keys */
  int n;
  size_t begin, end;  /* the value's text */
} jval;

typedef struct jparser {
  const char *s;
  size_t len, pos;
  const char *err; /* first problem, or NULL */
  long nodes;      /* values parsed so far (JSON_MAXNODES) */
} jparser;

static void jfree(jval *v) {
  if (v->type == J_STR) raspM_free(v->str);
  if (v->type == J_ARR || v->type == J_OBJ) {
    for (int i = 0; i < v->n; i++) {
      jfree(&v->items[i]);
      if (v->keys) raspM_free(v->keys[i]);
    }
    raspM_free(v->items);
    raspM_free(v->keys);
  }
  memset(v, 0, sizeof *v);
}

static void jws(jparser *p) {
  while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                             p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
    p->pos++;
}

static int jfail(jparser *p, const char *why) {
  if (!p->err) p->err = why;
  return -1;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int jstring(jparser *p, char **out) {
  /* p->s[p->pos] == '"' */
  p->pos++;
  size_t cap = 16, n = 0;
  char *b = raspM_alloc(cap);
  for (;;) {
    if (p->pos >= p->len) {
      raspM_free(b);
      return jfail(p, "unterminated string");
    }
    unsigned char c = (unsigned char)p->s[p->pos++];
    if (c == '"') break;
    if (c < 0x20) {
      raspM_free(b);
      return jfail(p, "control character in string");
    }
    unsigned cp = c;
    int raw = 1;
    if (c == '\\') {
      if (p->pos >= p->len) {
        raspM_free(b);
        return jfail(p, "unterminated string");
      }
      char e = p->s[p->pos++];
      switch (e) {
      case '"': cp = '"'; break;
      case '\\': cp = '\\'; break;
      case '/': cp = '/'; break;
      case 'b': cp = '\b'; break;
      case 'f': cp = '\f'; break;
      case 'n': cp = '\n'; break;
      case 'r': cp = '\r'; break;
      case 't': cp = '\t'; break;
      case 'u': {
        if (p->len - p->pos < 4) {
          raspM_free(b);
          return jfail(p, "bad \\u escape");
        }
        cp = 0;
        for (int i = 0; i < 4; i++) {
          int h = hexval((unsigned char)p->s[p->pos++]);
          if (h < 0) {
            raspM_free(b);
            return jfail(p, "bad \\u escape");
          }
          cp = cp * 16 + (unsigned)h;
        }
        raw = 0; /* encode as UTF-8 below (surrogates kept as-is: we only
                    compare names, never render them) */
        break;
      }
      default:
        raspM_free(b);
        return jfail(p, "bad escape in string");
      }
    }
    if (n + 5 > cap) {
      cap *= 2;
      b = raspM_realloc(b, cap);
    }
    if (raw || cp < 0x80) {
      b[n++] = (char)cp;
    } else if (cp < 0x800) {
      b[n++] = (char)(0xC0 | (cp >> 6));
      b[n++] = (char)(0x80 | (cp & 0x3F));
    } else {
      b[n++] = (char)(0xE0 | (cp >> 12));
      b[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
      b[n++] = (char)(0x80 | (cp & 0x3F));
    }
  }
  b[n] = 0;
  if (memchr(b, 0, n)) { /* an embedded \u0000 would truncate names */
    raspM_free(b);
    return jfail(p, "NUL in string");
  }
  *out = b;
  return 0;
}

static int key_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether object v has a key twice (sorted copy: n log n however many). */
static int has_duplicate_key(const jval *v) {
  if (v->n < 2) return 0;
  char **k = raspM_alloc((size_t)v->n * sizeof *k);
  memcpy(k, v->keys, (size_t)v->n * sizeof *k);
  qsort(k, (size_t)v->n, sizeof *k, key_cmp);
  int dup = 0;
  for (int i = 1; i < v->n && !dup; i++) dup = !strcmp(k[i - 1], k[i]);
  raspM_free(k);
  return dup;
}

static int jvalue(jparser *p, jval *v, int depth) {
  memset(v, 0, sizeof *v);
  if (depth > JSON_MAXDEPTH) return jfail(p, "nesting too deep");
  /* a tree node (72 bytes) is ~36 times the 2 bytes "0," takes in the
  ** text: the count, not the text's size, bounds the tree */
  if (++p->nodes > JSON_MAXNODES) return jfail(p, "too many values");
  jws(p);
  if (p->pos >= p->len) return jfail(p, "unexpected end of JSON");
  v->begin = p->pos;
  char c = p->s[p->pos];
  if (c == '{' || c == '[') {
    int obj = c == '{';
    char close = obj ? '}' : ']';
    v->type = obj ? J_OBJ : J_ARR;
    p->pos++;
    jws(p);
    int cap = 0;
    if (p->pos < p->len && p->s[p->pos] == close) {
      p->pos++;
      v->end = p->pos;
      return 0;
    }
    for (;;) {
      int capk = cap;
      RASP_GROW(v->items, cap, v->n + 1);
      if (obj) {
        /* keys grow with items: same capacity */
        if (capk != cap) {
          v->keys = raspM_realloc(v->keys, (size_t)cap * sizeof *v->keys);
        }
        jws(p);
        if (p->pos >= p->len || p->s[p->pos] != '"')
          return jfail(p, "expected a string key");
        char *k = NULL;
        if (jstring(p, &k)) return -1;
        v->keys[v->n] = k;
        jws(p);
        if (p->pos >= p->len || p->s[p->pos] != ':') {
          v->items[v->n].type = J_NULL;
          v->n++; /* so that jfree frees the key */
          return jfail(p, "expected ':'");
        }
        p->pos++;
      }
      int r = jvalue(p, &v->items[v->n], depth + 1);
      v->n++;
      if (r) return -1;
      jws(p);
      if (p->pos >= p->len) return jfail(p, "unexpected end of JSON");
      if (p->s[p->pos] == ',') {
        p->pos++;
        continue;
      }
      if (p->s[p->pos] == close) {
        p->pos++;
        v->end = p->pos;
        /* a key twice would be read as its first value here and its last
        ** by Python's json: refused, so every reader sees one object */
        return obj && has_duplicate_key(v) ? jfail(p, "a key appears twice in an object") : 0;
      }
      return jfail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
  }
  if (c == '"') {
    v->type = J_STR;
    if (jstring(p, &v->str)) {
      v->type = J_NULL;
      return -1;
    }
    v->end = p->pos;
    return 0;
  }
  static const struct { const char *w; jtype t; int b; } words[] = {
      {"null", J_NULL, 0}, {"true", J_BOOL, 1}, {"false", J_BOOL, 0}};
  for (int i = 0; i < 3; i++) {
    size_t wl = strlen(words[i].w);
    if (p->len - p->pos >= wl && !memcmp(p->s + p->pos, words[i].w, wl)) {
      v->type = words[i].t;
      v->boolean = words[i].b;
      p->pos += wl;
      v->end = p->pos;
      return 0;
    }
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    /* Copy the number's characters out: strtod must not read past the
    ** buffer, which need not be NUL-terminated. */
    char buf[64];
    size_t n = 0;
    while (p->pos + n < p->len && p->s[p->pos + n] && strchr("+-0123456789.eE", p->s[p->pos + n]))
      n++;
    /* no number a model file holds needs more than a double's 17 digits and
    ** an exponent; a longer one is named as such, not as a missing ',' */
    if (n >= sizeof buf) return jfail(p, "a number longer than 63 characters");
    memcpy(buf, p->s + p->pos, n);
    p->pos += n;
    buf[n] = 0;
    char *end;
    errno = 0;
    double d = strtod(buf, &end);
    if (end != buf + n || n == 0 || errno) return jfail(p, "bad number");
    v->type = J_NUM;
    v->num = d;
    v->end = p->pos;
    return 0;
  }
  return jfail(p, "unexpected character");
}

/* Parses the whole of s[0..len); on failure returns -1 and sets *why and
** *at (the byte offset). */
static int jparse(const char *s, size_t len, jval *out, const char **why,
                  size_t *at) {
  jparser p = {s, len, 0, NULL, 0};
  int r = jvalue(&p, out, 0);
  if (!r) {
    jws(&p);
    if (p.pos != len) r = jfail(&p, "trailing data after JSON value");
  }
  if (r) {
    jfree(out);
    *why = p.err ? p.err : "invalid JSON";
    *at = p.pos;
    return -1;
  }
  return 0;
}

static jval *jget(jval *o, const char *key) {
  if (!o || o->type != J_OBJ) return NULL;
  for (int i = 0; i < o->n; i++)
    if (!strcmp(o->keys[i], key)) return &o->items[i];
  return NULL;
}

/* An integer-valued number within [lo, hi]. */
static int jint(const jval *v, double lo, double hi, int64_t *out) {
  if (!v || v->type != J_NUM || v->num != floor(v->num) || v->num < lo ||
      v->num > hi)
    return -1;
  *out = (int64_t)v->num;
  return 0;
}

/* ---- files -------------------------------------------------------------- */

static char *cat(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *s = raspM_alloc(la + lb + 1);
  memcpy(s, a, la);
  memcpy(s + la, b, lb + 1);
  return s;
}

/* Accept "x", "x.safetensors" and "x.json" as the stem "x". */
static char *stem_of(const char *stem) {
  size_t n = strlen(stem);
  static const char *sfx[] = {".safetensors", ".json"};
  for (int i = 0; i < 2; i++) {
    size_t k = strlen(sfx[i]);
    if (n > k && !strcmp(stem + n - k, sfx[i])) return raspM_strndup(stem, n - k);
  }
  return raspM_strdup(stem);
}

/* Writes a then b as path, atomically (rerror.h). */
static int write_atomic(const char *path, const void *a, size_t na,
                        const void *b, size_t nb, rasp_error *err) {
  rasp_afile af;
  if (!raspR_atomic_open(&af, path, err)) return -1;
  if (fwrite(a, 1, na, af.f) != na || (nb && fwrite(b, 1, nb, af.f) != nb)) {
    int e = errno;
    raspR_atomic_abort(&af);
    raspR_setnoposc(err, RASP_E_WRITE, "cannot write '%s': %s", path, strerror(e));
    return -1;
  }
  return raspR_atomic_commit(&af, err) ? 0 : -1;
}

/* Appends printf output to a growing string. */
typedef struct sbuf {
  char *s;
  size_t n, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  RASP_GROW(b->s, b->cap, b->n + (size_t)k + 1);
  va_start(ap, fmt);
  vsnprintf(b->s + b->n, (size_t)k + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)k;
}

#define CFG_FIELDS(X)                                                          \
  X(vocab_size) X(max_len) X(d_model) X(n_layers) X(n_heads) X(d_head)         \
  X(d_mlp) X(n_out) X(causal) X(layer_norm) X(pos_embedding) X(gelu)          \
  X(bos_token)

uint64_t raspN_fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

int raspN_save(const rasp_model *m, const char *stem, rasp_error *err) {
  return raspN_save_fnv(m, stem, NULL, err);
}

int raspN_save_fnv(const rasp_model *m, const char *stem_in, uint64_t *fnv,
                   rasp_error *err) {
  char *stem = stem_of(stem_in);
  char *pt = cat(stem, ".safetensors"), *pj = cat(stem, ".json");
  int rc = -1;
  sbuf h = {0};
  sb_printf(&h, "{");
  size_t off = 0;
  for (int i = 0; i < m->ntensors; i++) {
    const rasp_tensor *t = &m->tensors[i];
    sb_printf(&h, "\"%s\":{\"dtype\":\"F32\",\"shape\":[", t->name);
    for (int d = 0; d < t->ndim; d++)
      sb_printf(&h, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    sb_printf(&h, "],\"data_offsets\":[%zu,%zu]},", off, off + t->size * 4);
    off += t->size * 4;
  }
  sb_printf(&h, "\"__metadata__\":{\"format\":\"rasp\"}}");
  /* Pad the header with spaces (allowed by the format) so that the data
  ** starts 8-aligned, which lets readers map it directly. */
  while ((h.n + 8) % 8) sb_printf(&h, " ");
  size_t hdr = 8 + h.n;
  unsigned char *head = raspM_alloc(hdr);
  uint64_t n = h.n;
  for (int i = 0; i < 8; i++) head[i] = (unsigned char)(n >> (8 * i));
  memcpy(head + 8, h.s, h.n);
  /* Floats are written in host order: every machine we target is little
  ** endian, which is what safetensors prescribes. */
  if (write_atomic(pt, head, hdr, m->params, m->nparams * sizeof(float), err))
    goto out;

  sbuf j = {0};
  sb_printf(&j, "{\n  \"config\": {");
  const char *sep = "";
#define X(f) sb_printf(&j, "%s\n    \"" #f "\": %d", sep, m->cfg.f), sep = ",";
  CFG_FIELDS(X)
#undef X
  if (m->cfg.norm_eps > 0 && m->cfg.norm_eps != RASPN_LN_EPS)
    sb_printf(&j, ",\n    \"norm_eps\": %.17g", m->cfg.norm_eps);
  uint64_t sum = raspN_fnv1a(RASPN_FNV0, m->params, m->nparams * sizeof(float));
  sb_printf(&j, "\n  },\n  \"params_fnv\": \"%016llx\",\n  \"layout\": %s\n}\n",
            (unsigned long long)sum, m->json_extra ? m->json_extra : "null");
  rc = write_atomic(pj, j.s, j.n, NULL, 0, err);
  if (!rc && fnv) *fnv = sum;
  raspM_free(j.s);
out:
  raspM_free(head);
  raspM_free(h.s);
  raspM_free(pt);
  raspM_free(pj);
  raspM_free(stem);
  return rc == 0;
}

/* Opens path for reading and checks it is a regular file; *size gets its
** size.  NULL with err set otherwise. */
static FILE *open_regular(const char *path, uint64_t *size, rasp_error *err) {
  /* O_NONBLOCK: a FIFO opens at once (to be refused below), never waits
  ** for a writer */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (!f && fd >= 0) close(fd);
  if (!f) {
    raspR_setnoposc(err, RASP_E_READ, "cannot read '%s': %s", path, strerror(errno));
    return NULL;
  }
  struct stat sb;
  if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode) || sb.st_size < 0) {
    raspR_setnoposc(err, RASP_E_READ, "cannot read '%s': not a regular file", path);
    fclose(f);
    return NULL;
  }
  *size = (uint64_t)sb.st_size;
  return f;
}

/* n bytes at offset off of f into dst; 0, or -1 with err (a short read means
** the file shrank since it was checked). */
static int read_at(FILE *f, const char *path, uint64_t off, void *dst, size_t n,
                   rasp_error *err) {
  if (fseeko(f, (off_t)off, SEEK_SET) || fread(dst, 1, n, f) != n) {
    raspR_setnoposc(err, RASP_E_READ, "cannot read '%s': %s", path,
                   ferror(f) ? "I/O error" : "truncated while reading");
    return -1;
  }
  return 0;
}

static int load_config(const char *path, rasp_model_config *c, char **extra,
                       int *has_fnv, uint64_t *fnv, rasp_error *err) {
  uint64_t size;
  memset(c, 0, sizeof *c); /* (its padding too: a config compares as bytes) */
  FILE *f = open_regular(path, &size, err);
  if (!f) return -1;
  if (size > MAXJSON) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': %llu bytes; a model config has at most %zu",
                   path, (unsigned long long)size, MAXJSON);
    fclose(f);
    return -1;
  }
  size_t len = (size_t)size;
  char *text = raspM_alloc(len + 1);
  int bad = len && read_at(f, path, 0, text, len, err);
  fclose(f);
  if (bad) {
    raspM_free(text);
    return -1;
  }
  text[len] = 0;
  jval root;
  const char *why;
  size_t at;
  int rc = -1;
  if (jparse(text, len, &root, &why, &at)) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': not a model config: %s at byte %zu", path, why,
                   at);
    raspM_free(text);
    return -1;
  }
  jval *cfg = jget(&root, "config");
  if (!cfg || cfg->type != J_OBJ) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': not a model config: no \"config\" object", path);
    goto out;
  }
  /* a field this build does not know changes what the weights compute
  ** (norm_eps did: a reader that ignored it ran the norms with 1e-5), so
  ** a file written by a newer rasp is refused, not misread */
  for (int i = 0; i < cfg->n; i++) {
    const char *k = cfg->keys[i];
    int known = !strcmp(k, "norm_eps");
#define X(f) known |= !strcmp(k, #f);
    CFG_FIELDS(X)
#undef X
    if (!known) {
      raspR_setnoposc(err, RASP_E_FORMAT, "'%s': config field \"%.60s\" is not one this "
                      "build of rasp knows (a newer rasp wrote the file?)", path, k);
      goto out;
    }
  }
  int64_t v;
#define X(f)                                                                   \
  if (jint(jget(cfg, #f), INT_MIN, INT_MAX, &v)) {                             \
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': config field \"" #f "\" is missing or not an "  \
                        "integer", path);                                      \
    goto out;                                                                  \
  }                                                                            \
  c->f = (int)v;
  CFG_FIELDS(X)
#undef X
  jval *ne = jget(cfg, "norm_eps");
  c->norm_eps = 0;
  if (ne && ne->type != J_NUM) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': config field \"norm_eps\" is not a number", path);
    goto out;
  }
  if (ne && !(ne->num > 0)) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': config field \"norm_eps\" = %g is not positive",
                    path, ne->num);
    goto out;
  }
  if (ne) c->norm_eps = ne->num;
  if (cfg_check(c, err)) {
    char m[sizeof err->msg];
    snprintf(m, sizeof m, "%s", err->msg);
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': %s", path, m);
    goto out;
  }
  jval *sum = jget(&root, "params_fnv");
  *has_fnv = sum != NULL;
  if (sum) {
    char *end = NULL;
    if (sum->type == J_STR && strlen(sum->str) == 16)
      *fnv = strtoull(sum->str, &end, 16);
    if (!end || *end) {
      raspR_setnoposc(err, RASP_E_FORMAT, "'%s': \"params_fnv\" is not 16 hex digits", path);
      goto out;
    }
  }
  jval *lay = jget(&root, "layout");
  *extra = NULL;
  if (lay && lay->type != J_NULL)
    *extra = raspM_strndup(text + lay->begin, lay->end - lay->begin);
  rc = 0;
out:
  jfree(&root);
  raspM_free(text);
  return rc;
}

typedef struct span {
  uint64_t b, e;
} span;

static int span_cmp(const void *a, const void *b) {
  const span *x = a, *y = b;
  return x->b < y->b ? -1 : x->b > y->b;
}

/* The header: eight bytes of length, then that many bytes of JSON within
** the file, parsed into root (its text in *hdr, for the caller to free);
** *hn is its length and *dlen the data section's. */
static int read_header(FILE *f, const char *path, uint64_t len, char **hdr, jval *root,
                       uint64_t *hn_out, uint64_t *dlen, rasp_error *err) {
  unsigned char lenb[8];
  if (len < 8 || read_at(f, path, 0, lenb, 8, err)) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': not a safetensors file (only %llu bytes)", path,
                   (unsigned long long)len);
    return -1;
  }
  uint64_t hn = 0;
  for (int i = 0; i < 8; i++) hn |= (uint64_t)lenb[i] << (8 * i);
  if (hn < 2 || hn > MAXHEADER) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': not a safetensors file (header length %llu is "
                        "not in 2..%llu)", path, (unsigned long long)hn,
                   (unsigned long long)MAXHEADER);
    return -1;
  }
  if (hn > len - 8) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': truncated (header of %llu bytes, file of %llu)",
                   path, (unsigned long long)hn, (unsigned long long)len);
    return -1;
  }
  *hn_out = hn;
  *dlen = len - 8 - hn;
  *hdr = raspM_alloc((size_t)hn);
  if (read_at(f, path, 8, *hdr, (size_t)hn, err)) return -1;
  if ((*hdr)[0] != '{') {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': not a safetensors file (bad header)", path);
    return -1;
  }
  const char *why;
  size_t at;
  if (jparse(*hdr, (size_t)hn, root, &why, &at)) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': bad safetensors header: %s at byte %zu", path,
                   why, at + 8);
    return -1;
  }
  if (root->type != J_OBJ) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': bad safetensors header: not an object", path);
    return -1;
  }
  return 0;
}

/* Every key of the header names a tensor of m's layout, once. */
static int check_names(rasp_model *m, const jval *root, const char *path, rasp_error *err) {
  for (int i = 0; i < root->n; i++) {
    const char *k = root->keys[i];
    if (!strcmp(k, "__metadata__")) continue;
    if (!raspN_tensor(m, k)) {
      raspR_setnoposc(err, RASP_E_FORMAT, "'%s': unexpected tensor '%.64s' for this config",
                     path, k);
      return -1;
    }
    for (int j = 0; j < i; j++)
      if (!strcmp(root->keys[j], k)) {
        raspR_setnoposc(err, RASP_E_FORMAT, "'%s': tensor '%.64s' appears twice", path, k);
        return -1;
      }
  }
  return 0;
}

/* Tensor t's entry e: F32, t's shape, and offsets spanning its bytes
** within the data section (dlen bytes), returned in *s. */
static int check_entry(const rasp_tensor *t, jval *e, const char *path, uint64_t dlen, span *s,
                       rasp_error *err) {
  if (!e) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': tensor '%s' is missing", path, t->name);
    return -1;
  }
  jval *dt = jget(e, "dtype"), *sh = jget(e, "shape"),
       *of = jget(e, "data_offsets");
  if (!dt || dt->type != J_STR || strcmp(dt->str, "F32")) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': tensor '%s' has dtype %s%.16s%s, not F32",
                   path, t->name, dt && dt->type == J_STR ? "'" : "",
                   dt && dt->type == J_STR ? dt->str : "(none)",
                   dt && dt->type == J_STR ? "'" : "");
    return -1;
  }
  int ok = sh && sh->type == J_ARR && sh->n == t->ndim;
  for (int d = 0; ok && d < t->ndim; d++) {
    int64_t x;
    ok = !jint(&sh->items[d], 0, 1e15, &x) && x == t->shape[d];
  }
  if (!ok) {
    char want[96] = "", *w = want;
    for (int d = 0; d < t->ndim; d++)
      w += snprintf(w, (size_t)(want + sizeof want - w), "%s%lld",
                    d ? "," : "", (long long)t->shape[d]);
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': tensor '%s' has the wrong shape (expected "
                        "[%s])", path, t->name, want);
    return -1;
  }
  int64_t b, en;
  if (!of || of->type != J_ARR || of->n != 2 ||
      jint(&of->items[0], 0, 9e15, &b) || jint(&of->items[1], 0, 9e15, &en) ||
      en < b || (uint64_t)(en - b) != t->size * 4) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': tensor '%s' has bad data_offsets (expected "
                        "%zu bytes)", path, t->name, t->size * 4);
    return -1;
  }
  if ((uint64_t)en > dlen) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': truncated: tensor '%s' ends at byte %lld of "
                        "a %llu-byte data section", path, t->name,
                   (long long)en, (unsigned long long)dlen);
    return -1;
  }
  s->b = (uint64_t)b;
  s->e = (uint64_t)en;
  return 0;
}

/* The spans are disjoint and the data section holds m's parameters. */
static int check_spans(const rasp_model *m, const span *sp, const char *path,
                       const char *cfgpath, uint64_t dlen, rasp_error *err) {
  span *sorted = raspM_alloc(((size_t)m->ntensors + 1) * sizeof *sorted);
  memcpy(sorted, sp, (size_t)m->ntensors * sizeof *sp);
  qsort(sorted, (size_t)m->ntensors, sizeof *sorted, span_cmp);
  int overlap = 0;
  for (int i = 1; i < m->ntensors; i++)
    if (sorted[i].b < sorted[i - 1].e) overlap = 1;
  raspM_free(sorted);
  if (overlap) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': tensors overlap in the data section", path);
    return -1;
  }
  if ((uint64_t)m->nparams * 4 > dlen) {
    /* (implied by the spans above; kept as the last word before the
    ** allocation) */
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': truncated, or not the tensors of '%s': that "
                        "config needs %zu parameters (%llu bytes), the file "
                        "holds %llu bytes of tensor data",
                   path, cfgpath, m->nparams,
                   (unsigned long long)m->nparams * 4, (unsigned long long)dlen);
    return -1;
  }
  return 0;
}

/* Allocates m->params and reads each tensor into place from the data
** section at byte base of the file; every parameter must be finite. */
static int read_params(rasp_model *m, FILE *f, const char *path, uint64_t base, const span *sp,
                       rasp_error *err) {
  m->params = raspM_alloc((m->nparams ? m->nparams : 1) * sizeof(float));
  for (int i = 0; i < m->ntensors; i++) {
    rasp_tensor *t = &m->tensors[i];
    if (t->size && read_at(f, path, base + sp[i].b, m->params + t->offset,
                           t->size * 4, err))
      return -1;
  }
  for (size_t i = 0; i < m->nparams; i++)
    if (!isfinite(m->params[i])) {
      raspR_setnoposc(err, RASP_E_FORMAT, "'%s': parameter %zu is not finite", path, i);
      return -1;
    }
  return 0;
}

/* Reads the tensors of m (laid out, m->params still NULL) from path.  Order
** matters: the file's size, then its header, then every tensor's entry are
** checked against m's layout before the parameters are allocated, so that
** their size is bounded by the file's; then each tensor is read straight
** into place (no copy of the whole file). */
static int load_tensors(rasp_model *m, const char *path, const char *cfgpath,
                        rasp_error *err) {
  uint64_t len;
  FILE *f = open_regular(path, &len, err);
  if (!f) return -1;
  int rc = -1;
  jval root = {0};
  span *sp = NULL;
  char *hdr = NULL;
  uint64_t hn = 0, dlen = 0;
  if (read_header(f, path, len, &hdr, &root, &hn, &dlen, err)) goto out;
  if (check_names(m, &root, path, err)) goto out;
  sp = raspM_alloc(((size_t)m->ntensors + 1) * sizeof *sp);
  for (int i = 0; i < m->ntensors; i++)
    if (check_entry(&m->tensors[i], jget(&root, m->tensors[i].name), path, dlen, &sp[i], err))
      goto out;
  if (check_spans(m, sp, path, cfgpath, dlen, err)) goto out;
  /* every size is now known to fit in the file: allocate and read */
  if (read_params(m, f, path, 8 + hn, sp, err)) goto out;
  rc = 0;
out:
  fclose(f);
  raspM_free(sp);
  raspM_free(hdr);
  jfree(&root);
  return rc;
}

int raspN_load(rasp_model *m, const char *stem, rasp_error *err) {
  return raspN_load_fnv(m, stem, NULL, err);
}

int raspN_load_fnv(rasp_model *m, const char *stem_in, uint64_t *sum,
                   rasp_error *err) {
  memset(m, 0, sizeof *m);
  char *stem = stem_of(stem_in);
  char *pt = cat(stem, ".safetensors"), *pj = cat(stem, ".json");
  rasp_model_config c;
  char *extra = NULL;
  int rc = -1;
  int has_fnv = 0;
  uint64_t fnv = 0;
  if (load_config(pj, &c, &extra, &has_fnv, &fnv, err)) goto out;
  if (lay_out(m, &c, err)) {
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s': %s", pj, msg);
    raspM_free(extra);
    goto out;
  }
  m->json_extra = extra;
  if (load_tensors(m, pt, pj, err)) {
    raspN_free(m);
    goto out;
  }
  /* one pass over the parameters serves the check and the caller */
  uint64_t got = has_fnv || sum ? raspN_fnv1a(RASPN_FNV0, m->params,
                                              m->nparams * sizeof(float))
                                : 0;
  if (has_fnv && got != fnv) {
    raspR_setnoposc(err, RASP_E_FORMAT, "'%s' and '%s' are not one model: the parameters' "
                        "checksum differs from the one the config records "
                        "(one of the pair was replaced or a write was "
                        "interrupted); write the model again",
                   pj, pt);
    raspN_free(m);
    goto out;
  }
  if (sum) *sum = got;
  rc = 0;
out:
  raspM_free(stem);
  raspM_free(pt);
  raspM_free(pj);
  return rc == 0;
}

/* ---- the layout of a compiled model ------------------------------------- */

/* json_extra parsed into root; -1 without a (parsable) layout. */
static int layout_parse(const rasp_model *m, jval *root) {
  const char *why;
  size_t at;
  memset(root, 0, sizeof *root);
  if (!m->json_extra) return -1;
  return jparse(m->json_extra, strlen(m->json_extra), root, &why, &at);
}

/* The value at a dotted path of object keys, or NULL. */
static jval *jpath(jval *v, const char *path) {
  char key[128];
  while (v && *path) {
    const char *dot = strchr(path, '.');
    size_t n = dot ? (size_t)(dot - path) : strlen(path);
    if (n >= sizeof key) return NULL;
    memcpy(key, path, n);
    key[n] = 0;
    v = jget(v, key);
    path += n + (dot != NULL);
  }
  return v;
}

int raspN_layout_bool(const rasp_model *m, const char *path) {
  jval root;
  if (layout_parse(m, &root)) return -1;
  jval *v = jpath(&root, path);
  int r = v && v->type == J_BOOL ? v->boolean != 0 : -1;
  jfree(&root);
  return r;
}

int raspN_layout_is(const rasp_model *m, const char *path, const char *str) {
  jval root;
  if (layout_parse(m, &root)) return 0;
  jval *v = jpath(&root, path);
  int r = v && v->type == J_STR && !strcmp(v->str, str);
  jfree(&root);
  return r;
}

int raspN_ln_exact(const rasp_model *m) {
  return m->cfg.layer_norm == RASPN_LN_PRE &&
         raspN_layout_is(m, "layer_norm.construction", "exact identity");
}

int raspN_layout_has(const rasp_model *m, const char *path) {
  jval root;
  if (layout_parse(m, &root)) return 0;
  int r = jpath(&root, path) != NULL;
  jfree(&root);
  return r;
}

char **raspN_layout_strings(const rasp_model *m, const char *path, int *n) {
  jval root;
  *n = 0;
  if (layout_parse(m, &root)) return NULL;
  jval *a = jpath(&root, path);
  char **v = NULL;
  int ok = a && a->type == J_ARR;
  for (int i = 0; ok && i < a->n; i++) ok = a->items[i].type == J_STR;
  if (ok) {
    v = raspM_alloc(((size_t)a->n + 1) * sizeof *v);
    for (int i = 0; i < a->n; i++) v[i] = raspM_strdup(a->items[i].str);
    *n = a->n;
  }
  jfree(&root);
  return v;
}

void raspN_free_strings(char **v, int n) {
  for (int i = 0; v && i < n; i++) raspM_free(v[i]);
  raspM_free(v);
}

int raspN_layout_unit_dim(const rasp_model *m, const char *kind) {
  jval root;
  if (layout_parse(m, &root)) return -1;
  jval *u = jget(&root, "units");
  int dim = -1;
  for (int i = 0; u && u->type == J_ARR && i < u->n; i++) {
    jval *k = jget(&u->items[i], "kind");
    if (!k || k->type != J_STR || strcmp(k->str, kind)) continue;
    int64_t d;
    if (!jint(jget(&u->items[i], "dim"), 0, INT_MAX, &d)) dim = (int)d;
    break;
  }
  jfree(&root);
  return dim;
}

rasp_layout_unit *raspN_layout_units(const rasp_model *m, int *n) {
  *n = 0;
  jval root;
  if (layout_parse(m, &root)) return NULL;
  jval *u = jget(&root, "units");
  rasp_layout_unit *out = NULL;
  if (u && u->type == J_ARR && u->n > 0) {
    out = raspM_alloc((size_t)u->n * sizeof *out);
    for (int i = 0; i < u->n; i++) {
      jval *nm = jget(&u->items[i], "name"), *k = jget(&u->items[i], "kind"),
           *e = jget(&u->items[i], "encoding");
      int64_t d, sz, l;
      if (!nm || nm->type != J_STR || !k || k->type != J_STR || !e ||
          e->type != J_STR ||
          jint(jget(&u->items[i], "dim"), 0, m->cfg.d_model, &d) ||
          jint(jget(&u->items[i], "size"), 1, m->cfg.d_model, &sz) ||
          jint(jget(&u->items[i], "layer"), -1, m->cfg.n_layers - 1, &l) ||
          d + sz > m->cfg.d_model)
        continue;
      rasp_layout_unit *o = &out[(*n)++];
      snprintf(o->name, sizeof o->name, "%s", nm->str);
      snprintf(o->kind, sizeof o->kind, "%s", k->str);
      o->categorical = !strcmp(e->str, "categorical");
      o->dim = (int)d;
      o->size = (int)sz;
      o->layer = (int)l;
    }
  }
  jfree(&root);
  if (!*n) {
    raspM_free(out);
    out = NULL;
  }
  return out;
}

/* ---- reference forward pass --------------------------------------------- */

void raspN_layer_norm(const float *x, const float *w, const float *b, int d, double eps,
                      float *out) {
  double mean = 0, var = 0;
  for (int i = 0; i < d; i++) mean += x[i];
  mean /= d;
  for (int i = 0; i < d; i++) var += (x[i] - mean) * (x[i] - mean);
  var /= d;
  float rs = (float)(1.0 / sqrt(var + eps));
  for (int i = 0; i < d; i++) out[i] = (float)((x[i] - mean) * rs) * w[i] + b[i];
}

void raspN_rms_norm(const float *x, const float *w, int d, float *out) {
  float ss = 0;
  for (int i = 0; i < d; i++) ss += x[i] * x[i];
  float rs = 1.0f / sqrtf(ss / (float)d + RASPN_RMS_EPS);
  for (int i = 0; i < d; i++) out[i] = (x[i] * rs) * w[i];
}

void raspN_norm_rows(int kind, const float *x, const float *w, const float *b, int n, int d,
                     double eps, float *out) {
  for (int i = 0; i < n; i++) {
    const float *xi = x + (size_t)i * d;
    float *oi = out + (size_t)i * d;
    if (kind == RASPN_LN_RMS) raspN_rms_norm(xi, w, d, oi);
    else raspN_layer_norm(xi, w, b, d, eps, oi);
  }
}

static float act(float x, int gelu) {
  if (!gelu) return x > 0 ? x : 0;
  const float k = 0.7978845608028654f; /* sqrt(2/pi) */
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

float raspN_softmax_exp(float *att, int nk) {
  float mx = -INFINITY;
  for (int j = 0; j < nk; j++)
    if (att[j] > mx) mx = att[j];
  float sum = 0;
  for (int j = 0; j < nk; j++) {
    att[j] = expf(att[j] - mx);
    sum += att[j];
  }
  return sum;
}

/* d_head^(-1/4) = 2^-k exactly when d_head = 2^(4k): 1, 16, 256, ... */
int raspN_sdpa_exact(int d_head) {
  for (long d = 1; d <= (1L << 28); d <<= 4) /* long: 2^28 << 4 still fits */
    if (d == d_head) return 1;
  return 0;
}

int raspN_sdpa_round(int d_head) {
  int d = 1;
  while (d < d_head && d < (1 << 28)) d <<= 4;
  return d;
}

int raspN_check_input(const rasp_model_config *c, const int *tokens, int n, rasp_error *err) {
  if (n < 1 || n > c->max_len) {
    raspR_setnoposc(err, RASP_E_USAGE, "forward: sequence length %d is not in 1..%d", n,
                   c->max_len);
    return 0;
  }
  for (int i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= c->vocab_size) {
      raspR_setnoposc(err, RASP_E_USAGE, "forward: token %d at position %d is not below "
                          "vocab_size %d", tokens[i], i, c->vocab_size);
      return 0;
    }
  return 1;
}

/* raspN_forward's state: the model, n positions, the residual stream x,
** its (layer-normed) copy h, and the scratch of one layer. */
typedef struct {
  const rasp_model_config *c;
  rasp_model *m;
  int n;
  float *x, *h, *q, *k, *v, *att, *o, *z, *hv;
} fwd;

/* Tensor s of layer L ("layers.L.s"). */
static const float *layer_data(rasp_model *m, int L, const char *s) {
  char nm[64];
  snprintf(nm, sizeof nm, "layers.%d.%s", L, s);
  return raspN_data(m, nm);
}

/* h = the residual stream, layer-normed when the model has layer norms
** (by tensors w and b of layer L, or the model's own when L < 0), else
** copied. */
static void norm_into(fwd *f, int L, const char *wname, const char *bname) {
  int D = f->c->d_model;
  size_t nD = (size_t)f->n * D;
  if (f->c->layer_norm) {
    const float *w = L < 0 ? raspN_data(f->m, wname) : layer_data(f->m, L, wname);
    const float *b = L < 0 ? raspN_data(f->m, bname) : layer_data(f->m, L, bname);
    raspN_norm_rows(f->c->layer_norm, f->x, w, b, f->n, D, raspN_norm_eps(f->c), f->h);
  } else {
    memcpy(f->h, f->x, nD * sizeof *f->h);
  }
}

/* Head hd of layer L: q, k, v of every position, then each query's
** softmax-weighted values through w_o, added to the layer's output o. */
static void attn_head(fwd *f, int L, int hd, float scale) {
  const rasp_model_config *c = f->c;
  int n = f->n, D = c->d_model, Dh = c->d_head;
  const float *h = f->h;
  float *q = f->q, *k = f->k, *v = f->v, *att = f->att, *hv = f->hv, *o = f->o;
  const float *wq = layer_data(f->m, L, "attn.w_q"), *wk = layer_data(f->m, L, "attn.w_k"),
              *wv = layer_data(f->m, L, "attn.w_v");
  const float *bq = layer_data(f->m, L, "attn.b_q"), *bk = layer_data(f->m, L, "attn.b_k"),
              *bv = layer_data(f->m, L, "attn.b_v");
  const float *wo = layer_data(f->m, L, "attn.w_o");
  const float *Wq = wq + (size_t)hd * D * Dh, *Wk = wk + (size_t)hd * D * Dh,
              *Wv = wv + (size_t)hd * D * Dh, *Wo = wo + (size_t)hd * Dh * D;
  for (int i = 0; i < n; i++)
    for (int e = 0; e < Dh; e++) {
      float sq = bq[hd * Dh + e], sk = bk[hd * Dh + e], sv = bv[hd * Dh + e];
      for (int j = 0; j < D; j++) {
        float hj = h[(size_t)i * D + j];
        sq += hj * Wq[(size_t)j * Dh + e];
        sk += hj * Wk[(size_t)j * Dh + e];
        sv += hj * Wv[(size_t)j * Dh + e];
      }
      q[(size_t)i * Dh + e] = sq;
      k[(size_t)i * Dh + e] = sk;
      v[(size_t)i * Dh + e] = sv;
    }
  for (int i = 0; i < n; i++) {
    int nk = c->causal ? i + 1 : n;
    for (int j = 0; j < nk; j++) {
      float s = 0;
      for (int e = 0; e < Dh; e++) s += q[(size_t)i * Dh + e] * k[(size_t)j * Dh + e];
      att[j] = s * scale;
    }
    float sum = raspN_softmax_exp(att, nk);
    for (int e = 0; e < Dh; e++) hv[e] = 0;
    for (int j = 0; j < nk; j++) {
      float a = att[j] / sum;
      for (int e = 0; e < Dh; e++) hv[e] += a * v[(size_t)j * Dh + e];
    }
    for (int e = 0; e < Dh; e++)
      for (int j = 0; j < D; j++)
        o[(size_t)i * D + j] += hv[e] * Wo[(size_t)e * D + j];
  }
}

/* Layer L's attention: o starts at the bias, every head adds to it, then
** o is added to the residual stream. */
static void attn_layer(fwd *f, int L, float scale) {
  int D = f->c->d_model;
  size_t nD = (size_t)f->n * D;
  norm_into(f, L, "ln1.weight", "ln1.bias");
  const float *bo = layer_data(f->m, L, "attn.b_o");
  for (size_t i = 0; i < nD; i++) f->o[i] = bo[i % D];
  for (int hd = 0; hd < f->c->n_heads; hd++) attn_head(f, L, hd, scale);
  for (size_t i = 0; i < nD; i++) f->x[i] += f->o[i];
}

/* Layer L's MLP, position by position, added to the residual stream. */
static void mlp_layer(fwd *f, int L) {
  const rasp_model_config *c = f->c;
  int D = c->d_model, F = c->d_mlp;
  float *z = f->z, *h = f->h, *x = f->x;
  norm_into(f, L, "ln2.weight", "ln2.bias");
  const float *wi = layer_data(f->m, L, "mlp.w_in"), *bi = layer_data(f->m, L, "mlp.b_in"),
              *wt = layer_data(f->m, L, "mlp.w_out"), *bt = layer_data(f->m, L, "mlp.b_out");
  for (int i = 0; i < f->n; i++) {
    for (int g = 0; g < F; g++) z[g] = bi[g];
    for (int j = 0; j < D; j++) {
      float hj = h[(size_t)i * D + j];
      for (int g = 0; g < F; g++) z[g] += hj * wi[(size_t)j * F + g];
    }
    for (int g = 0; g < F; g++) z[g] = act(z[g], c->gelu);
    for (int j = 0; j < D; j++) {
      float s = bt[j];
      for (int g = 0; g < F; g++) s += z[g] * wt[(size_t)g * D + j];
      x[(size_t)i * D + j] += s;
    }
  }
}

/* The plan: embed, then per layer attention and MLP (each added to the
** residual stream, which residual records after the embedding and after
** each), then the final norm and the readout. */
int raspN_forward(const rasp_model *m, const int *tokens, int n, float *logits,
                  float *residual, rasp_error *err) {
  const rasp_model_config *c = &m->cfg;
  if (!raspN_check_input(c, tokens, n, err)) return 0;
  rasp_model *mm = (rasp_model *)m; /* raspN_data does not modify */
  int D = c->d_model, Dh = c->d_head, F = c->d_mlp, O = c->n_out;
  size_t nD = (size_t)n * D;
  fwd f = {c, mm, n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  float *x = f.x = raspM_alloc(nD * sizeof *x), *h = f.h = raspM_alloc(nD * sizeof *h);
  f.q = raspM_alloc((size_t)n * Dh * sizeof *f.q);
  f.k = raspM_alloc((size_t)n * Dh * sizeof *f.k);
  f.v = raspM_alloc((size_t)n * Dh * sizeof *f.v);
  f.att = raspM_alloc((size_t)n * sizeof *f.att);
  f.o = raspM_alloc(nD * sizeof *f.o);
  f.z = raspM_alloc((size_t)F * sizeof *f.z);
  f.hv = raspM_alloc((size_t)Dh * sizeof *f.hv);
  const float *te = raspN_data(mm, "tok_emb"), *pe = raspN_data(mm, "pos_emb");
  for (int i = 0; i < n; i++)
    for (int j = 0; j < D; j++)
      x[(size_t)i * D + j] = te[(size_t)tokens[i] * D + j] +
                             (pe ? pe[(size_t)i * D + j] : 0.0f);
  int slot = 0;
  if (residual) memcpy(residual + (size_t)slot++ * nD, x, nD * sizeof *x);
  float scale = 1.0f / sqrtf((float)Dh);
  for (int L = 0; L < c->n_layers; L++) {
    attn_layer(&f, L, scale);
    if (residual) memcpy(residual + (size_t)slot++ * nD, x, nD * sizeof *x);
    mlp_layer(&f, L);
    if (residual) memcpy(residual + (size_t)slot++ * nD, x, nD * sizeof *x);
  }
  norm_into(&f, -1, "ln_f.weight", "ln_f.bias");
  const float *U = raspN_data(mm, "unembed"), *ub = raspN_data(mm, "unembed_b");
  for (int i = 0; i < n; i++)
    for (int r = 0; r < O; r++) {
      float s = ub[r];
      for (int j = 0; j < D; j++) s += h[(size_t)i * D + j] * U[(size_t)j * O + r];
      logits[(size_t)i * O + r] = s;
    }
  raspM_free(x);
  raspM_free(h);
  raspM_free(f.q);
  raspM_free(f.k);
  raspM_free(f.v);
  raspM_free(f.att);
  raspM_free(f.o);
  raspM_free(f.z);
  raspM_free(f.hv);
  return 1;
}


/* ---- settings objects in the layout ------------------------------------ */

/* A JSON value as a setting of kind `kind` writes it; "(missing)" for
** anything else (an object edited by hand). */
static void setting_jtext(const jval *v, int kind, char *buf, size_t n) {
  int64_t i;
  if (kind == RASPN_SET_INT && !jint(v, INT_MIN, INT_MAX, &i)) snprintf(buf, n, "%lld", (long long)i);
  else if (kind == RASPN_SET_STR && v && v->type == J_STR) snprintf(buf, n, "%s", v->str);
  else if (kind == RASPN_SET_BOOL && v && v->type == J_BOOL) snprintf(buf, n, "%s", v->boolean ? "true" : "false");
  else snprintf(buf, n, "(missing)");
}

int raspN_layout_set_object(rasp_model *m, const char *name, const raspN_setting *s, int n) {
  size_t len = m->json_extra ? strlen(m->json_extra) : 0;
  while (len && strchr(" \t\r\n", m->json_extra[len - 1])) len--;
  if (!len || m->json_extra[len - 1] != '}') return 0;
  sbuf b = {0};
  sb_printf(&b, "%.*s, \"%s\": {", (int)(len - 1), m->json_extra, name);
  for (int k = 0; k < n; k++)
    sb_printf(&b, "%s\"%s\": %s%s%s", k ? ", " : "", s[k].key,
              s[k].kind == RASPN_SET_STR ? "\"" : "", s[k].text,
              s[k].kind == RASPN_SET_STR ? "\"" : "");
  sb_printf(&b, "}}");
  raspM_free(m->json_extra);
  m->json_extra = b.s;
  return 1;
}

int raspN_layout_object_diff(const rasp_model *m, const char *name, const raspN_setting *s,
                             int n, raspN_task_diff *d) {
  jval root;
  if (layout_parse(m, &root)) return -1;
  jval *t = jget(&root, name);
  int nd = -1;
  if (t && t->type == J_OBJ) {
    nd = 0;
    for (int k = 0; k < n; k++) {
      raspN_task_diff *e = &d[nd];
      setting_jtext(jget(t, s[k].key), s[k].kind, e->model, sizeof e->model);
      snprintf(e->ours, sizeof e->ours, "%s", s[k].text);
      e->key = s[k].key;
      nd += strcmp(e->model, e->ours) != 0;
    }
  }
  jfree(&root);
  return nd;
}

int raspN_load_config(rasp_model *m, const char *stem_in, rasp_error *err) {
  memset(m, 0, sizeof *m);
  char *stem = stem_of(stem_in), *pj = cat(stem, ".json");
  int has_fnv = 0;
  uint64_t fnv = 0;
  int rc = load_config(pj, &m->cfg, &m->json_extra, &has_fnv, &fnv, err);
  raspM_free(stem);
  raspM_free(pj);
  return rc == 0;
}
