/*
** reval_kern.c -- the evaluator's heads: sel_width and the aggregates.
**
** Attention is where the cost lies.  A selector is never stored as a value:
** the head that consumes it (sel_width or an aggregate) looks at how the
** selector was made and picks an algorithm that does not build the n x n
** matrix when the predicate has structure:
**   - equality against the indices (x[i], kqv(idx, q, ...)): each query
**     selects at most one key, so the head is a gather.
**   - one equality on int-like keys of small range (token and node ids):
**     counts and sums accumulate in a table indexed by key value, in one
**     sweep for causal selects (add key q, answer query q).
**   - other equalities, and conjunctions (select_and) of equalities with
**     position windows: a hash join on the tuple of keys.  Keys and queries are
**     first mapped to group numbers (int-like keys: a direct-addressed
**     table when their range is
**     at most a few times n, else an open-addressing table whose slots carry
**     a generation stamp, so nothing is cleared between inputs); then
**     statistics (count, exact sum, max, min) are accumulated per group and
**     a query reads its group in O(1).  Causal selects (and prefix windows
**     k < q + c) sweep positions in order, adding the keys up to q + c - 1
**     before answering query q, which gives exactly the keys selected.
**   - not_equals (non-causal), lt/leq/gt/geq (non-causal): keys are sorted
**     once and prefix/suffix statistics are built; a query's selected set is
**     a prefix, a suffix, or (for not_equals) a prefix plus a suffix of the
**     sorted keys, found by binary search (or, when keys and queries are the
**     same node, by one pass over the sorted runs).  O(n log n).
**   - position windows: a select whose keys and queries are both indices
**     (and causal `always`) selects a prefix, a suffix or one position of
**     the sequence itself, so the same prefix statistics answer it in O(n).
**   - not_equals, causal: running totals minus the running statistics of the
**     query's group; max/min cannot be subtracted, so heads that need them
**     fall back to the matrix.
**   - always/never: one running or global statistic.
**   - everything else (custom predicates, causal comparisons, and/or/not
**     combinations): a byte matrix per input, capped by max_selector_cells,
**     built row by row with vectorisable compares when keys are int-like;
**     a causal combination is masked to k <= q after combining (rcausal.h).
** Statistics come in two flavours.  When the values are all integers or all
** booleans (or, for the mean heads, a mix of the two), the fast flavour
** keeps count, a 128-bit sum, the number of booleans and the max or min as
** plain numbers; otherwise the exact record (rstat) with rational sums.
** Of equal-comparing values (True and 1) a max or min keeps the one at the
** first position, whatever order a path adds them in (the matrix's row
** order).  Both end in finishing functions with the same rules, and the tests
** compare every fast path against a custom-predicate matrix on random
** inputs, which is what keeps them in exact agreement.
**
**
** The byte matrix of the last case is built in reval_matrix.c.
**
** Which of these runs is the kernel table's business (the end of this
** file): each head's plan (raspE_plan_head) records what its selector's
** shape allows, and the first kernel in preference order whose applies()
** holds for this run's values runs the batch.
*/
#include "reval_int.h"
#include "rfacts.h"

/* ---- statistics of a selected set */

/* Which parts of the statistics a head needs: computing an exact sum that a
** max never uses could only raise a spurious overflow. */
#define NEED_SUM 1u
#define NEED_EXT 2u /* max and min */

typedef struct rsum {
  i128 num, den; /* den >= 1 */
} rsum;

typedef struct rstat {
  int64_t count, nsym, nbool;
  rsum sum;
  rasp_elem max, min; /* valid when count > 0 and NEED_EXT */
  int64_t maxpos, minpos; /* their positions: of equal extremes, the first */
} rstat;

static const rstat empty_stat = {0, 0, 0, {0, 1}, {0, 0}, {0, 0}, 0, 0};

/* a += sign * b, exactly; 0 on overflow. */
static int rsum_addsub(rsum *a, i128 bn, i128 bd, int sign) {
  if (a->den == 1 && bd == 1) {
    return sign > 0 ? !__builtin_add_overflow(a->num, bn, &a->num)
                    : !__builtin_sub_overflow(a->num, bn, &a->num);
  }
  i128 l, r, s, d;
  if (__builtin_mul_overflow(a->num, bd, &l) ||
      __builtin_mul_overflow(bn, a->den, &r) ||
      __builtin_mul_overflow(a->den, bd, &d))
    return 0;
  if (sign > 0 ? __builtin_add_overflow(l, r, &s)
               : __builtin_sub_overflow(l, r, &s))
    return 0;
  i128 g = raspI_gcd128(s, d);
  if (g > 1) {
    s /= g;
    d /= g;
  }
  /* Denominators beyond 64 bits mean the mean cannot be represented
     either, and bounding them keeps den * count within 128 bits. */
  if (d > INT64_MAX) return 0;
  a->num = s;
  a->den = d;
  return 1;
}

/* Adds the value at position pos. */
static int stat_add(rstat *s, rasp_elem v, int64_t pos, unsigned need) {
  s->count++;
  if (v.den == RASP_DEN_SYM) {
    s->nsym++;
  } else {
    if (v.den == RASP_DEN_BOOL) s->nbool++;
    if ((need & NEED_SUM) && v.num &&
        !rsum_addsub(&s->sum, v.num, v.den < 0 ? 1 : v.den, 1))
      return 0;
  }
  if (need & NEED_EXT) {
    if (s->count == 1) {
      s->max = s->min = v;
      s->maxpos = s->minpos = pos;
    } else {
      /* Of equal-comparing elements (True and 1), the one at the first
         position wins, as a scan of the matrix row would have it, whatever
         order the elements are added in. */
      int c = raspI_elem_cmp(v, s->max);
      if (c > 0 || (c == 0 && pos < s->maxpos)) {
        s->max = v;
        s->maxpos = pos;
      }
      c = raspI_elem_cmp(v, s->min);
      if (c < 0 || (c == 0 && pos < s->minpos)) {
        s->min = v;
        s->minpos = pos;
      }
    }
  }
  return 1;
}

/* a = a + b (disjoint sets). */
static int stat_merge(rstat *a, const rstat *b, unsigned need) {
  if (!b->count) return 1;
  if ((need & NEED_SUM) && !rsum_addsub(&a->sum, b->sum.num, b->sum.den, 1))
    return 0;
  if (need & NEED_EXT) {
    if (!a->count) {
      a->max = b->max;
      a->min = b->min;
      a->maxpos = b->maxpos;
      a->minpos = b->minpos;
    } else {
      int c = raspI_elem_cmp(b->max, a->max);
      if (c > 0 || (c == 0 && b->maxpos < a->maxpos)) {
        a->max = b->max;
        a->maxpos = b->maxpos;
      }
      c = raspI_elem_cmp(b->min, a->min);
      if (c < 0 || (c == 0 && b->minpos < a->minpos)) {
        a->min = b->min;
        a->minpos = b->minpos;
      }
    }
  }
  a->count += b->count;
  a->nsym += b->nsym;
  a->nbool += b->nbool;
  return 1;
}

/* a - b for b a subset of a; only count and sum are meaningful after. */
static int stat_sub(rstat *out, const rstat *a, const rstat *b, unsigned need) {
  *out = *a;
  out->count -= b->count;
  out->nsym -= b->nsym;
  out->nbool -= b->nbool;
  if ((need & NEED_SUM) && !rsum_addsub(&out->sum, b->sum.num, b->sum.den, -1))
    return 0;
  return 1;
}

static unsigned head_needs(rasp_op op) {
  switch (op) {
  case RASP_OP_AGGR_MEAN: return NEED_SUM;
  case RASP_OP_AGGREGATE: return NEED_SUM | NEED_EXT;
  case RASP_OP_AGGR_MAX:
  case RASP_OP_AGGR_MIN: return NEED_EXT;
  default: return 0;
  }
}

static int overflow_at(const rasp_ir_node *nd, rasp_error *err) {
  raspI_seterr(err, nd, "integer overflow (value does not fit in 64 bits)");
  return 0;
}

static int fits64(i128 v) { return v >= INT64_MIN && v <= INT64_MAX; }

/* Turns the statistics of one query's selected set into the head's output. */
static int finish(const rasp_ir_node *nd, const rstat *s, rasp_elem *out,
                  rasp_error *err) {
  switch (nd->op) {
  case RASP_OP_SEL_WIDTH:
    out->num = s->count;
    out->den = 1;
    return 1;
  case RASP_OP_AGGR_MEAN: {
    if (!s->count) {
      *out = elem_trunc(nd->c);
      return 1;
    }
    i128 q = s->sum.num / (s->sum.den * s->count); /* truncates toward 0 */
    if (!fits64(q)) return overflow_at(nd, err);
    out->num = (int64_t)q;
    out->den = 1;
    return 1;
  }
  case RASP_OP_AGGREGATE: {
    if (!s->count) {
      *out = nd->c;
      return 1;
    }
    if (s->nsym) {
      if (s->nsym == s->count && s->max.den == RASP_DEN_SYM &&
          s->min.den == RASP_DEN_SYM && s->max.num == s->min.num) {
        *out = s->max;
        return 1;
      }
      raspI_seterr(err, nd, "mean of symbols (the selected values differ)");
      return 0;
    }
    if (s->nbool == s->count) {
      if (s->sum.num == 0) {
        out->num = 0;
        out->den = RASP_DEN_BOOL;
        return 1;
      }
      if (s->sum.den == 1 && s->sum.num == s->count) {
        out->num = 1;
        out->den = RASP_DEN_BOOL;
        return 1;
      }
    }
    i128 num = s->sum.num, den = s->sum.den * s->count;
    i128 g = raspI_gcd128(num, den);
    if (g > 1) {
      num /= g;
      den /= g;
    }
    if (!fits64(num) || !fits64(den)) return overflow_at(nd, err);
    out->num = (int64_t)num;
    out->den = (int64_t)den;
    return 1;
  }
  case RASP_OP_AGGR_MAX:
    *out = s->count ? s->max : nd->c;
    return 1;
  case RASP_OP_AGGR_MIN:
    *out = s->count ? s->min : nd->c;
    return 1;
  default: break;
  }
  raspI_seterr(err, nd, "internal error: '%s' is not a head",
            raspI_op_name(nd->op));
  return 0;
}


/* ---- heads */

/* How a head's values are summarised: VM_NONE (sel_width), the fast
** flavour on plain numbers (all integers, all booleans, or for the means a
** mix), or VM_SLOW (exact rstat records). */
enum { VM_NONE, VM_INT, VM_BOOL, VM_MIX, VM_SLOW };

typedef struct head {
  rasp_eval *ev;
  const rasp_ir_node *nd;  /* the head */
  const rasp_ir_node *sel; /* its selector */
  unsigned need;           /* rstat needs (VM_SLOW) */
  int n;
  rasp_error *err;
  int vm;
  int64_t vden;            /* den of a max/min (VM_INT: 1, VM_BOOL: -1) */
  int fsum, fnb, fext;     /* fast flavour: sum, boolean count, max/min */
  int ismax;
  int raw;                 /* rationals may be left unreduced (plan_raw) */
  rasp_elem *counts;       /* head_direct: the selection counts too (a twin) */
  int mixed;               /* head_direct: some result averages several values */
  int tracked;             /* inputs whose result kinds are in okind */
  unsigned okind;
  const int64_t *vv;       /* fast: the values' num for the current input */
  const unsigned char *vb; /* fast, VM_MIX: 1 where the value is a boolean */
} head;

/* The fast flavour's finishing function: the same rules as finish(). */
static int ffinish(const head *h, int64_t cnt, i128 sum, int64_t nb,
                   int64_t ext, rasp_elem *out) {
  const rasp_ir_node *nd = h->nd;
  switch (nd->op) {
  case RASP_OP_SEL_WIDTH:
    out->num = cnt;
    out->den = 1;
    return 1;
  case RASP_OP_AGGR_MEAN: {
    if (!cnt) {
      *out = elem_trunc(nd->c);
      return 1;
    }
    if (sum >= INT32_MIN && sum <= INT32_MAX && cnt <= INT32_MAX) {
      out->num = (int32_t)sum / (int32_t)cnt; /* cnt >= 1: no overflow */
      out->den = 1;
      return 1;
    }
    if (fits64(sum)) { /* the common case, without 128-bit division */
      out->num = (int64_t)sum / cnt; /* truncates toward 0; |q| <= |sum| */
      out->den = 1;
      return 1;
    }
    i128 q = sum / cnt; /* truncates toward 0 */
    if (!fits64(q)) return overflow_at(nd, h->err);
    out->num = (int64_t)q;
    out->den = 1;
    return 1;
  }
  case RASP_OP_AGGREGATE: {
    if (!cnt) {
      *out = nd->c;
      return 1;
    }
    if (h->vm == VM_BOOL) nb = cnt;
    else if (h->vm == VM_INT) nb = 0;
    if (nb == cnt) {
      if (sum == 0) {
        out->num = 0;
        out->den = RASP_DEN_BOOL;
        return 1;
      }
      if (sum == cnt) {
        out->num = 1;
        out->den = RASP_DEN_BOOL;
        return 1;
      }
    }
    if (cnt == 1 && fits64(sum)) {
      out->num = (int64_t)sum;
      out->den = 1;
      return 1;
    }
    if (h->raw && fits64(sum)) { /* only compared: no gcd */
      out->num = (int64_t)sum;
      out->den = cnt;
      return 1;
    }
    if (fits64(sum)) { /* 64-bit arithmetic: cnt >= 1, no overflow */
      int64_t sn = (int64_t)sum;
      uint64_t g = raspI_gcd_u64(sn < 0 ? (uint64_t)0 - (uint64_t)sn : (uint64_t)sn,
                           (uint64_t)cnt);
      if (g > 1) {
        /* sn / g: g divides sn, and g >= 2 keeps INT64_MIN / g in range */
        if (sn >= INT32_MIN && sn <= INT32_MAX && cnt <= INT32_MAX) {
          sn = (int32_t)sn / (int32_t)g; /* exact; 32-bit division */
          cnt = (int32_t)cnt / (int32_t)g;
        } else {
          sn /= (int64_t)g;
          cnt /= (int64_t)g;
        }
      }
      out->num = sn;
      out->den = cnt;
      return 1;
    }
    i128 num = sum, den = cnt;
    if (den > 1) {
      if (num % den == 0) {
        num /= den;
        den = 1;
      } else {
        i128 g = fits64(num) ? (i128)raspI_gcd_u64(num < 0 ? (uint64_t)0 - (uint64_t)(int64_t)num
                                                     : (uint64_t)num,
                                             (uint64_t)den)
                             : raspI_gcd128(num, den);
        if (g > 1) {
          num /= g;
          den /= g;
        }
      }
    }
    if (!fits64(num) || !fits64(den)) return overflow_at(nd, h->err);
    out->num = (int64_t)num;
    out->den = (int64_t)den;
    return 1;
  }
  case RASP_OP_AGGR_MAX:
  case RASP_OP_AGGR_MIN:
    if (!cnt) {
      *out = nd->c;
    } else {
      out->num = ext;
      out->den = h->vden;
    }
    return 1;
  default: break;
  }
  raspI_seterr(h->err, nd, "internal error: '%s' is not a head",
            raspI_op_name(nd->op));
  return 0;
}

static int64_t ext2(const head *h, int64_t a, int64_t b) {
  return h->ismax ? (b > a ? b : a) : (b < a ? b : a);
}

static int head_matrix(head *h, int b, unsigned char *m, const rasp_elem *vals,
                       rasp_elem *out) {
  int n = h->n;
  if (!raspE_build_matrix(h->ev, h->nd->in[0], b, m, 0, h->err)) return 0;
  for (int q = 0; q < n; q++) {
    const unsigned char *row = m + (size_t)q * n;
    if (h->vm == VM_NONE) {
      int64_t cnt = 0;
      for (int k = 0; k < n; k++) cnt += row[k];
      out[q].num = cnt;
      out[q].den = 1;
    } else if (h->vm != VM_SLOW) {
      int64_t cnt = 0, nb = 0, ext = 0;
      i128 sum = 0;
      const int64_t *vv = h->vv;
      for (int k = 0; k < n; k++) {
        if (!row[k]) continue;
        int64_t v = vv[k];
        sum += v;
        if (h->fnb) nb += h->vb[k];
        ext = cnt ? ext2(h, ext, v) : v;
        cnt++;
      }
      if (!ffinish(h, cnt, sum, nb, ext, &out[q])) return 0;
    } else {
      rstat s = empty_stat;
      for (int k = 0; k < n; k++)
        if (row[k] && !stat_add(&s, vals[k], k, h->need))
          return overflow_at(h->nd, h->err);
      if (!finish(h->nd, &s, &out[q], h->err)) return 0;
    }
  }
  return 1;
}

/* ---- grouping for equality: keys and queries to group numbers */

static rasp_elem eq_key(rasp_elem e) {
  if (e.den == RASP_DEN_BOOL) e.den = 1;
  return e;
}

/* Makes room for a stamped table of cap slots; returns the generation. */
static uint32_t hash_prepare(rasp_eval *ev, size_t cap) {
  if (cap > ev->scr.hcap) {
    raspM_free(ev->scr.sc[SC_HKEY]);
    raspM_free(ev->scr.sc[SC_HEKEY]);
    raspM_free(ev->scr.sc[SC_HGID]);
    raspM_free(ev->scr.sc[SC_HST]);
    ev->scr.sc[SC_HKEY] = raspM_alloc(cap * sizeof(int64_t));
    ev->scr.sc[SC_HEKEY] = raspM_alloc(cap * sizeof(rasp_elem));
    ev->scr.sc[SC_HGID] = raspM_alloc(cap * sizeof(int));
    ev->scr.sc[SC_HST] = raspM_alloc(cap * sizeof(uint32_t)); /* zeroed */
    ev->scr.hcap = cap;
    ev->scr.hgen = 0;
  }
  if (++ev->scr.hgen == 0) {
    memset(ev->scr.sc[SC_HST], 0, ev->scr.hcap * sizeof(uint32_t));
    ev->scr.hgen = 1;
  }
  return ev->scr.hgen;
}

static size_t hash_cap(int n) {
  size_t cap = 16;
  while (cap < (size_t)n * 2) cap *= 2;
  return cap;
}

/* The smallest and largest num of an int-like node over the whole batch,
** once per run: every head keyed on the node then skips its own scan. */
/* Int-like keys and queries (True == 1 by num).  Returns the group count.
** keynode: the node the keys are a row of (its bounds are cached), or -1. */
static int group_int(rasp_eval *ev, int keynode, const rasp_elem *keys,
                     const rasp_elem *qs, int n, int *gid, int *gq) {
  int G = 0;
  if (!n) return 0;
  int64_t kmin, kmax;
  if (keynode >= 0) {
    raspE_node_bounds(ev, keynode, &kmin, &kmax);
  } else {
    kmin = kmax = keys[0].num;
    for (int k = 1; k < n; k++) {
      int64_t v = keys[k].num;
      kmin = v < kmin ? v : kmin;
      kmax = v > kmax ? v : kmax;
    }
  }
  uint64_t range = (uint64_t)kmax - (uint64_t)kmin;
  if (range < (uint64_t)n * 4 + 256) {
    size_t need = (size_t)range + 1;
    if (need > ev->scr.dtabcap) {
      size_t cap = ev->scr.dtabcap ? ev->scr.dtabcap : 256;
      while (cap < need) cap *= 2;
      raspM_free(ev->scr.dtab);
      ev->scr.dtab = raspM_alloc(cap * sizeof *ev->scr.dtab); /* zeroed */
      ev->scr.dtabcap = cap;
      ev->scr.dgen = 0;
    }
    if (++ev->scr.dgen == 0) {
      memset(ev->scr.dtab, 0, ev->scr.dtabcap * sizeof *ev->scr.dtab);
      ev->scr.dgen = 1;
    }
    uint64_t *t = ev->scr.dtab, stamp = (uint64_t)ev->scr.dgen << 32;
    for (int k = 0; k < n; k++) {
      uint64_t *s = &t[(uint64_t)keys[k].num - (uint64_t)kmin];
      if ((*s & ~(uint64_t)UINT32_MAX) != stamp) *s = stamp | (uint32_t)G++;
      gid[k] = (int)(uint32_t)*s;
    }
    for (int q = 0; q < n; q++) {
      uint64_t o = (uint64_t)qs[q].num - (uint64_t)kmin;
      uint64_t e = o <= range ? t[o] : 0;
      gq[q] = (e & ~(uint64_t)UINT32_MAX) == stamp ? (int)(uint32_t)e : -1;
    }
    return G;
  }
  size_t cap = hash_cap(n), mask = cap - 1;
  uint32_t gen = hash_prepare(ev, cap);
  int64_t *hk = ev->scr.sc[SC_HKEY];
  int *hg = ev->scr.sc[SC_HGID];
  uint32_t *hs = ev->scr.sc[SC_HST];
  for (int k = 0; k < n; k++) {
    int64_t v = keys[k].num;
    size_t j = raspF_mix64((uint64_t)v) & mask;
    while (hs[j] == gen && hk[j] != v) j = (j + 1) & mask;
    if (hs[j] != gen) {
      hs[j] = gen;
      hk[j] = v;
      hg[j] = G++;
    }
    gid[k] = hg[j];
  }
  for (int q = 0; q < n; q++) {
    int64_t v = qs[q].num;
    size_t j = raspF_mix64((uint64_t)v) & mask;
    while (hs[j] == gen && hk[j] != v) j = (j + 1) & mask;
    gq[q] = hs[j] == gen ? hg[j] : -1;
  }
  return G;
}

/* Any keys: grouped by numeric value (True == 1), symbols apart. */
static int group_any(rasp_eval *ev, const rasp_elem *keys, const rasp_elem *qs,
                     int n, int *gid, int *gq) {
  int G = 0;
  size_t cap = hash_cap(n), mask = cap - 1;
  uint32_t gen = hash_prepare(ev, cap);
  rasp_elem *hk = ev->scr.sc[SC_HEKEY];
  int *hg = ev->scr.sc[SC_HGID];
  uint32_t *hs = ev->scr.sc[SC_HST];
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n; i++) {
      rasp_elem e = eq_key(pass ? qs[i] : keys[i]);
      size_t j = hash_elems(&e, 1) & mask;
      while (hs[j] == gen && (hk[j].num != e.num || hk[j].den != e.den))
        j = (j + 1) & mask;
      if (pass) {
        gq[i] = hs[j] == gen ? hg[j] : -1;
      } else {
        if (hs[j] != gen) {
          hs[j] = gen;
          hk[j] = e;
          hg[j] = G++;
        }
        gid[i] = hg[j];
      }
    }
  return G;
}

/* Equality (and causal not_equals) from the group numbers: query q sees
** the keys k < q + off of its group (off > n: all keys; causal: off = 1);
** ne: the keys outside its group instead (count/sum heads only). */
static int head_groups(head *h, int G, const int *gid, const int *gq, int off,
                       int ne, const rasp_elem *vals, rasp_elem *out) {
  rasp_eval *ev = h->ev;
  int n = h->n, ins = 0;
  size_t gs = (size_t)G + 1;
  if (off > n) off = n;
  if (h->vm == VM_NONE) {
    int64_t *gc = scratch(ev, SC_GCNT, gs * sizeof *gc);
    memset(gc, 0, gs * sizeof *gc);
    for (int q = 0; q < n; q++) {
      int lim = q + off < n ? q + off : n;
      for (; ins < lim; ins++) gc[gid[ins]]++;
      int64_t c = gq[q] >= 0 ? gc[gq[q]] : 0;
      out[q].num = ne ? ins - c : c;
      out[q].den = 1;
    }
    return 1;
  }
  if (h->vm != VM_SLOW) {
    int64_t *gc = scratch(ev, SC_GCNT, gs * sizeof *gc);
    i128 *gsum = scratch(ev, SC_GSUM, gs * sizeof *gsum);
    int64_t *gnb = scratch(ev, SC_GNB, gs * sizeof *gnb);
    int64_t *gext = scratch(ev, SC_GEXT, gs * sizeof *gext);
    memset(gc, 0, gs * sizeof *gc);
    if (h->fsum) memset(gsum, 0, gs * sizeof *gsum);
    if (h->fnb) memset(gnb, 0, gs * sizeof *gnb);
    /* the values' nums straight from the elements: the scatter below does
       not vectorise, so a packed copy would only cost a pass */
    const rasp_elem *ve = vals;
    const unsigned char *vb = h->vb;
    /* the flags in locals: the stores below cannot change them */
    const int fsum = h->fsum, fnb = h->fnb, fext = h->fext;
    rasp_elem none; /* the result for an empty selection, once per input */
    if (!ffinish(h, 0, 0, 0, 0, &none)) return 0;
    if (fsum && !fnb && !fext && !ne) {
      /* aggregate / aggr_mean of integers or of booleans: the common case,
         with the single-value result inline (passes through; a mean of one
         value is the value) */
      const int64_t one_den = h->nd->op == RASP_OP_AGGREGATE ? h->vden : 1;
      for (int q = 0; q < n; q++) {
        int lim = q + off < n ? q + off : n;
        for (; ins < lim; ins++) {
          int g = gid[ins];
          gsum[g] += ve[ins].num;
          gc[g]++;
        }
        int g = gq[q];
        if (g < 0 || !gc[g]) {
          out[q] = none;
        } else if (gc[g] == 1) {
          out[q].num = (int64_t)gsum[g]; /* one int64 value */
          out[q].den = one_den;
        } else if (!ffinish(h, gc[g], gsum[g], 0, 0, &out[q])) {
          return 0;
        }
      }
      return 1;
    }
    int64_t tnb = 0;
    i128 ts = 0;
    for (int q = 0; q < n; q++) {
      int lim = q + off < n ? q + off : n;
      for (; ins < lim; ins++) {
        int g = gid[ins];
        int64_t v = ve[ins].num;
        if (fsum) gsum[g] += v;
        if (fnb) gnb[g] += vb[ins];
        if (fext) gext[g] = gc[g] ? ext2(h, gext[g], v) : v;
        gc[g]++;
        if (ne) {
          ts += v;
          if (fnb) tnb += vb[ins];
        }
      }
      int g = gq[q];
      int ok = 1;
      if (ne) {
        if (g >= 0)
          ok = ffinish(h, ins - gc[g], ts - gsum[g], h->fnb ? tnb - gnb[g] : 0,
                       0, &out[q]);
        else
          ok = ffinish(h, ins, ts, tnb, 0, &out[q]);
      } else if (g >= 0 && gc[g]) {
        ok = ffinish(h, gc[g], h->fsum ? gsum[g] : 0, h->fnb ? gnb[g] : 0,
                     h->fext ? gext[g] : 0, &out[q]);
      } else {
        out[q] = none;
      }
      if (!ok) return 0;
    }
    return 1;
  }
  rstat *gst = scratch(ev, SC_GSTAT, gs * sizeof *gst);
  for (int g = 0; g < G; g++) gst[g] = empty_stat;
  rstat total = empty_stat;
  for (int q = 0; q < n; q++) {
    int lim = q + off < n ? q + off : n;
    for (; ins < lim; ins++) {
      rasp_elem v = vals[ins];
      if (!stat_add(&gst[gid[ins]], v, ins, h->need) ||
          (ne && !stat_add(&total, v, ins, h->need)))
        return overflow_at(h->nd, h->err);
    }
    int g = gq[q];
    rstat s;
    if (ne) {
      if (!stat_sub(&s, &total, g >= 0 ? &gst[g] : &empty_stat, h->need))
        return overflow_at(h->nd, h->err);
    } else {
      s = g >= 0 ? gst[g] : empty_stat;
    }
    if (!finish(h->nd, &s, &out[q], h->err)) return 0;
  }
  return 1;
}

/* ---- order statistics: sorted keys, position windows */


/* sel_width over windows: the counts alone. */
static int order_count(head *h, int wt, const int *qa, const int *qb, rasp_elem *out) {
  int n = h->n;
  for (int q = 0; q < n; q++) out[q].den = 1;
  switch (wt) {
  case W_PREF: for (int q = 0; q < n; q++) out[q].num = qa[q]; break;
  case W_SUF: for (int q = 0; q < n; q++) out[q].num = n - qa[q]; break;
  case W_BOTH: for (int q = 0; q < n; q++) out[q].num = qa[q] + (n - qb[q]); break;
  case W_ONE: for (int q = 0; q < n; q++) out[q].num = 1; break;
  default: for (int q = 0; q < n; q++) out[q].num = 0; break;
  }
  return 1;
}

/* Prefix means of integers (a running balance) from the prefix sums ps:
** the common case inline, with the result kinds tracked so nothing
** rescans them. */
static int prefix_means(head *h, const i128 *ps, const int *qa, rasp_elem *out) {
  int n = h->n;
  rasp_elem none;
  if (!ffinish(h, 0, 0, 0, 0, &none)) return 0;
  const int mean = h->nd->op == RASP_OP_AGGR_MEAN;
  unsigned k = 0;
  for (int q = 0; q < n; q++) {
    int64_t c = qa[q];
    i128 sum = ps[c];
    if (!c) {
      out[q] = none;
      k |= elem_kind(none);
    } else if (h->raw && fits64(sum)) { /* only compared: no division */
      out[q].num = (int64_t)sum;
      out[q].den = c;
      k |= c == 1 ? K_INT : K_RAT;
    } else if (fits64(sum) && (mean || (int64_t)sum % c == 0)) {
      out[q].num = (int64_t)sum / c; /* truncates toward zero */
      out[q].den = 1;
      k |= K_INT;
    } else {
      if (!ffinish(h, c, sum, 0, 0, &out[q])) return 0;
      k |= elem_kind(out[q]);
    }
  }
  h->okind |= k;
  h->tracked++;
  return 1;
}

/* The fast flavour: prefix sums, boolean counts and max/min (pv: the
** values in the order perm), suffix max/min where a window needs them;
** a window's statistics are a prefix, a suffix, both, or one value. */
static int order_fast(head *h, const int *perm, int wt, const int *qa, const int *qb,
                      rasp_elem *out) {
  rasp_eval *ev = h->ev;
  int n = h->n;
  size_t n1 = (size_t)n + 1;
  int64_t *pv = (int64_t *)h->vv;
  if (perm) {
    pv = scratch(ev, SC_KK, n1 * sizeof *pv);
    for (int i = 0; i < n; i++) pv[i] = h->vv[perm[i]];
  }
  i128 *ps = scratch(ev, SC_PSUM, n1 * sizeof *ps);
  int64_t *pnb = scratch(ev, SC_PNB, n1 * sizeof *pnb);
  int64_t *pe = scratch(ev, SC_PEXT, n1 * sizeof *pe);
  int64_t *se = scratch(ev, SC_SEXT, n1 * sizeof *se);
  ps[0] = 0;
  pnb[0] = 0;
  pe[0] = 0;
  for (int i = 0; i < n; i++) {
    ps[i + 1] = ps[i] + pv[i];
    if (h->fnb) pnb[i + 1] = pnb[i] + h->vb[perm ? perm[i] : i];
    if (h->fext) pe[i + 1] = i ? ext2(h, pe[i], pv[i]) : pv[i];
  }
  if (wt == W_PREF && h->fsum && !h->fnb && h->vm == VM_INT) return prefix_means(h, ps, qa, out);
  if (h->fext && (wt == W_SUF || wt == W_BOTH)) {
    se[n] = 0;
    for (int i = n - 1; i >= 0; i--)
      se[i] = i == n - 1 ? pv[i] : ext2(h, se[i + 1], pv[i]);
  }
  for (int q = 0; q < n; q++) {
    int64_t c = 0, nb = 0, e = 0;
    i128 s = 0;
    int a = wt == W_NONE ? 0 : qa[q];
    switch (wt) {
    case W_PREF:
      c = a;
      s = ps[a];
      nb = pnb[a];
      e = pe[a];
      break;
    case W_SUF:
      c = n - a;
      s = ps[n] - ps[a];
      nb = pnb[n] - pnb[a];
      e = se[a];
      break;
    case W_BOTH: {
      int bb = qb[q];
      c = a + (n - bb);
      s = ps[a] + (ps[n] - ps[bb]);
      nb = pnb[a] + (pnb[n] - pnb[bb]);
      if (h->fext) {
        if (a && bb < n) e = ext2(h, pe[a], se[bb]);
        else e = a ? pe[a] : se[bb];
      }
      break;
    }
    case W_ONE:
      c = 1;
      s = pv[a];
      nb = pnb[a + 1] - pnb[a];
      e = pv[a];
      break;
    default: break;
    }
    if (!ffinish(h, c, s, nb, e, &out[q])) return 0;
  }
  return 1;
}

/* The exact flavour: prefix and suffix records (rstat) in the order perm
** (the values, or ones when there are none), merged per window. */
static int order_exact(head *h, const int *perm, int wt, const int *qa, const int *qb,
                       const rasp_elem *vals, rasp_elem *out) {
  int n = h->n;
  size_t n1 = (size_t)n + 1;
  rasp_elem one = {1, 1};
  rstat *pre = scratch(h->ev, SC_PRE, n1 * sizeof *pre);
  rstat *suf = scratch(h->ev, SC_SUF, n1 * sizeof *suf);
  pre[0] = empty_stat;
  for (int i = 0; i < n; i++) {
    pre[i + 1] = pre[i];
    int k = perm ? perm[i] : i;
    if (!stat_add(&pre[i + 1], vals ? vals[k] : one, k, h->need))
      return overflow_at(h->nd, h->err);
  }
  if (wt == W_SUF || wt == W_BOTH) {
    suf[n] = empty_stat;
    for (int i = n - 1; i >= 0; i--) {
      suf[i] = suf[i + 1];
      int k = perm ? perm[i] : i;
      if (!stat_add(&suf[i], vals ? vals[k] : one, k, h->need))
        return overflow_at(h->nd, h->err);
    }
  }
  for (int q = 0; q < n; q++) {
    rstat s = empty_stat;
    switch (wt) {
    case W_PREF: s = pre[qa[q]]; break;
    case W_SUF: s = suf[qa[q]]; break;
    case W_BOTH:
      s = pre[qa[q]];
      if (!stat_merge(&s, &suf[qb[q]], h->need))
        return overflow_at(h->nd, h->err);
      break;
    case W_ONE:
      if (!stat_add(&s, vals[perm ? perm[qa[q]] : qa[q]],
                    perm ? perm[qa[q]] : qa[q], h->need))
        return overflow_at(h->nd, h->err);
      break;
    default: break;
    }
    if (!finish(h->nd, &s, &out[q], h->err)) return 0;
  }
  return 1;
}

/* Statistics over keys in the order perm (NULL: positions), answering each
** query q from its window (wt, qa[q], qb[q]).  VM_SLOW supports W_SUF and
** W_BOTH only with a perm (the sorted path, built exactly as before). */
static int head_order(head *h, const int *perm, int wt, const int *qa,
                      const int *qb, const rasp_elem *vals, rasp_elem *out) {
  if (h->vm == VM_NONE) return order_count(h, wt, qa, qb, out);
  if (h->vm != VM_SLOW) return order_fast(h, perm, wt, qa, qb, out);
  return order_exact(h, perm, wt, qa, qb, vals, out);
}

/* Sums and means of integers over a prefix window, query q reading the
** first min(q + woff, n) values: running balances (causal means of +1/-1)
** and global means (non-causal always, woff > n).  Straight from the
** values, with int64 prefix sums; 2 (nothing decided) when one overflows. */
static int head_prefix_sum(head *h, int woff, const rasp_elem *vals, rasp_elem *out) {
  int n = h->n;
  int64_t *ps = scratch(h->ev, SC_PSUM, ((size_t)n + 1) * sizeof *ps);
  int bad = 0;
  ps[0] = 0;
  for (int i = 0; i < n; i++) bad |= __builtin_add_overflow(ps[i], vals[i].num, &ps[i + 1]);
  if (bad) return 2;
  rasp_elem none;
  if (!ffinish(h, 0, 0, 0, 0, &none)) return 0;
  const int mean = h->nd->op == RASP_OP_AGGR_MEAN;
  unsigned k = 0;
  if (h->raw && woff >= 1) { /* every row selects something: sum / count */
    int64_t c = woff > n ? n : woff;
    k |= (unsigned)(c == 1) * K_INT;
    for (int q = 0; q < n; q++) {
      out[q].num = ps[c];
      out[q].den = c;
      c += c < n;
    }
    k |= (unsigned)(n > 1 || c > 1) * K_RAT;
    h->okind |= k;
    h->tracked++;
    return 1;
  }
  for (int q = 0; q < n; q++) {
    int64_t c = woff > n - q ? n : q + woff;
    if (c <= 0) {
      out[q] = none;
      k |= elem_kind(none);
    } else if (h->raw) { /* only compared: no division */
      out[q].num = ps[c];
      out[q].den = c;
      k |= (unsigned)(c == 1) * K_INT | (unsigned)(c > 1) * K_RAT;
    } else if (mean || ps[c] % c == 0) {
      out[q].num = ps[c] / c; /* truncates toward zero; c >= 1 */
      out[q].den = 1;
      k |= K_INT;
    } else {
      if (!ffinish(h, c, ps[c], 0, 0, &out[q])) return 0;
      k |= elem_kind(out[q]);
    }
  }
  h->okind |= k;
  h->tracked++;
  return 1;
}

/* Maps numbers (integers, booleans, rationals; no symbols) a[0..na) and
** b[0..nb) to integers over one common denominator L, so that x < y exactly
** when its image is smaller (and equal when equal); *amin and *amax get the
** range of a's images.  0 when there is a
** symbol or L or a scaled numerator does not fit in 64 bits: callers then
** compare the elements themselves. */
static int scale_common(const rasp_elem *a, int na, const rasp_elem *b, int nb,
                        int64_t *oa, int64_t *ob, int64_t *amin, int64_t *amax) {
  /* Denominators repeat (i/n takes a handful of them), so each distinct
     small one costs one division: a bit per denominator below 64 says it
     is already in L, and its factor L/d is computed once. */
  int64_t L = 1;
  uint64_t in_l = 0;
  for (int pass = 0; pass < 2; pass++) {
    const rasp_elem *v = pass ? b : a;
    int nv = pass ? nb : na;
    for (int i = 0; i < nv; i++) {
      int64_t d = v[i].den;
      if (d == RASP_DEN_SYM) return 0;
      if (d <= 1) continue;
      if (d < 64) {
        if (in_l >> d & 1) continue;
        in_l |= (uint64_t)1 << d;
      }
      if (L % d == 0) continue;
      int64_t g = (int64_t)raspI_gcd_u64((uint64_t)L, (uint64_t)d);
      if (__builtin_mul_overflow(L / g, d, &L)) return 0;
    }
  }
  int64_t factor[64];
  uint64_t have = 0;
  for (int pass = 0; pass < 2; pass++) {
    const rasp_elem *v = pass ? b : a;
    int64_t *o = pass ? ob : oa;
    int nv = pass ? nb : na;
    int64_t mn = INT64_MAX, mx = INT64_MIN; /* of oa: the keys' range */
    for (int i = 0; i < nv; i++) {
      int64_t d = v[i].den < 1 ? 1 : v[i].den, f;
      if (d < 64) {
        if (!(have >> d & 1)) {
          factor[d] = L / d;
          have |= (uint64_t)1 << d;
        }
        f = factor[d];
      } else {
        f = L / d;
      }
      if (__builtin_mul_overflow(v[i].num, f, &o[i])) return 0;
      mn = o[i] < mn ? o[i] : mn;
      mx = o[i] > mx ? o[i] : mx;
    }
    if (!pass) {
      *amin = mn;
      *amax = mx;
    }
  }
  return 1;
}

/* Stable merge sort of idx[0..n) by key; tmp has room for n. */
#define MERGE_SORT(NAME, T, LESS)                                              \
  static void NAME(T *a, T *tmp, int n) {                                      \
    if (n < 2) return;                                                         \
    if (n <= 16) {                                                             \
      for (int i = 1; i < n; i++) {                                            \
        T x = a[i];                                                            \
        int j = i;                                                             \
        while (j > 0 && LESS(x, a[j - 1])) {                                   \
          a[j] = a[j - 1];                                                     \
          j--;                                                                 \
        }                                                                      \
        a[j] = x;                                                              \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    int m = n / 2;                                                             \
    NAME(a, tmp, m);                                                           \
    NAME(a + m, tmp, n - m);                                                   \
    if (!LESS(a[m], a[m - 1])) return;                                         \
    memcpy(tmp, a, sizeof *a * (size_t)m);                                     \
    int i = 0, j = m, k = 0;                                                   \
    while (i < m && j < n) a[k++] = LESS(a[j], tmp[i]) ? a[j++] : tmp[i++];    \
    while (i < m) a[k++] = tmp[i++];                                           \
  }

typedef struct ikey {
  int64_t key;
  int idx;
} ikey;

typedef struct ekey {
  rasp_elem key;
  int idx;
} ekey;


#define IKEY_LESS(x, y) ((x).key < (y).key)
#define EKEY_LESS(x, y) (raspI_elem_cmp((x).key, (y).key) < 0)
MERGE_SORT(sort_ikey, ikey, IKEY_LESS)
MERGE_SORT(sort_ekey, ekey, EKEY_LESS)

/* Keys of small range (token ids, counts, positions, and rationals of one
** small denominator once scaled) are ranked by counting instead of sorting:
** lo[k] is the number of keys smaller than key k, hi[k] that plus the keys
** equal to it, and perm the stable (key, index) order that the sort would
** give.  Only the occupied key values are visited (a bitmap of them), so
** the cost is O(n + range / 64); 0 (nothing done) when the range is wide. */
static int count_ranks(head *h, const int64_t *kv, int64_t mn, int64_t mx, int *perm,
                       int *lo, int *hi) {
  int n = h->n;
  if (n < 2) return 0;
  uint64_t range = (uint64_t)mx - (uint64_t)mn; /* no overflow in uint64 */
  if (range > 64 * (uint64_t)n + 4096) return 0;
  size_t words = (size_t)(range >> 6) + 1;
  uint64_t *occupied = scratch(h->ev, SC_GEXT, words * sizeof *occupied);
  int *at = scratch(h->ev, SC_GCNT, ((size_t)range + 1) * sizeof *at);
  int *slot = scratch(h->ev, SC_GID2, (size_t)n * sizeof *slot);
  memset(occupied, 0, words * sizeof *occupied);
  for (int k = 0; k < n; k++) {
    int r = (int)(kv[k] - mn);
    slot[k] = r;
    at[r] = 0;
    occupied[r >> 6] |= (uint64_t)1 << (r & 63);
  }
  for (int k = 0; k < n; k++) at[slot[k]]++;
  int run = 0; /* at[r]: the keys smaller than mn + r */
  for (size_t w = 0; w < words; w++)
    for (uint64_t bits = occupied[w]; bits; bits &= bits - 1) {
      size_t r = w * 64 + (size_t)__builtin_ctzll(bits);
      int here = at[r];
      at[r] = run;
      run += here;
    }
  for (int k = 0; k < n; k++) lo[k] = at[slot[k]];
  if (perm) /* the order is needed only to aggregate values */
    for (int k = 0; k < n; k++) perm[at[slot[k]]++] = k;
  else if (hi)
    for (int k = 0; k < n; k++) at[slot[k]]++;
  if (hi)
    for (int k = 0; k < n; k++) hi[k] = at[slot[k]];
  return 1;
}

/* Keys (and queries, unless same) as integers that compare as the values
** do: int-like values as they are, other numbers scaled to a common
** denominator (exact, so the sort and the searches run on integers).
** *kv stays NULL when neither applies. */
static void scaled_keys(head *h, const rasp_elem *keys, const rasp_elem *qs, int same,
                        int intlike, const int64_t **kv, const int64_t **qv, int64_t *kmin,
                        int64_t *kmax) {
  rasp_eval *ev = h->ev;
  int n = h->n;
  size_t n1 = (size_t)n + 1;
  if (intlike) {
    int64_t *a = scratch(ev, SC_SCK, n1 * sizeof *a);
    *kmin = *kmax = n ? keys[0].num : 0;
    for (int k = 0; k < n; k++) {
      a[k] = keys[k].num;
      *kmin = a[k] < *kmin ? a[k] : *kmin;
      *kmax = a[k] > *kmax ? a[k] : *kmax;
    }
    *kv = a;
    if (!same) {
      int64_t *b = scratch(ev, SC_SCQ, n1 * sizeof *b);
      for (int q = 0; q < n; q++) b[q] = qs[q].num;
      *qv = b;
    }
  } else {
    int64_t *a = scratch(ev, SC_SCK, n1 * sizeof *a);
    int64_t *b = same ? NULL : scratch(ev, SC_SCQ, n1 * sizeof *b);
    if (scale_common(keys, n, same ? NULL : qs, same ? 0 : n, a, b, kmin, kmax)) {
      *kv = a;
      *qv = b;
    }
  }
}

/* sel_width of a comparison: the counts are the ranks. */
static int width_from_ranks(int n, rasp_pred pred, const int *lo, const int *hi,
                            rasp_elem *out) {
  for (int q = 0; q < n; q++) {
    int c = pred == RASP_PRED_LT   ? lo[q]
            : pred == RASP_PRED_GE ? n - lo[q]
            : pred == RASP_PRED_LE ? hi[q]
            : pred == RASP_PRED_GT ? n - hi[q]
                                   : n - (hi[q] - lo[q]); /* NE */
    out[q].num = c;
    out[q].den = 1;
  }
  return 1;
}

/* Integer keys sorted by (key, index) into perm; lo[q] and hi[q] bound
** the keys below and up to query q's: its run of equal keys when the
** queries are the keys, else by binary search. */
static void rank_ints(head *h, const int64_t *kv, const int64_t *qv, int same, int *perm,
                      int *lo, int *hi) {
  rasp_eval *ev = h->ev;
  int n = h->n;
  size_t n1 = (size_t)n + 1;
  ikey *ks = scratch(ev, SC_KS, n1 * sizeof *ks);
  ikey *tmp = scratch(ev, SC_KS2, n1 * sizeof *tmp);
  for (int k = 0; k < n; k++) {
    ks[k].key = kv[k];
    ks[k].idx = k;
  }
  sort_ikey(ks, tmp, n);
  for (int i = 0; i < n; i++) perm[i] = ks[i].idx;
  if (same) {
    for (int s = 0, e; s < n; s = e) {
      for (e = s + 1; e < n && ks[e].key == ks[s].key; e++) {}
      for (int i = s; i < e; i++) {
        lo[ks[i].idx] = s;
        hi[ks[i].idx] = e;
      }
    }
    return;
  }
  int64_t *sk = scratch(ev, SC_SK, n1 * sizeof *sk);
  for (int i = 0; i < n; i++) sk[i] = ks[i].key;
  for (int q = 0; q < n; q++) {
    int64_t v = qv[q];
    int a = 0, b = n;
    while (a < b) {
      int mid = (a + b) >> 1;
      if (sk[mid] < v) a = mid + 1;
      else b = mid;
    }
    lo[q] = a;
    b = n;
    while (a < b) {
      int mid = (a + b) >> 1;
      if (sk[mid] <= v) a = mid + 1;
      else b = mid;
    }
    hi[q] = a;
  }
}

/* rank_ints for keys that are not numbers on a common scale: the
** elements themselves, compared by raspI_elem_cmp. */
static void rank_elems(head *h, const rasp_elem *keys, const rasp_elem *qs, int same, int *perm,
                       int *lo, int *hi) {
  rasp_eval *ev = h->ev;
  int n = h->n;
  size_t n1 = (size_t)n + 1;
  ekey *ks = scratch(ev, SC_KS, n1 * sizeof *ks);
  ekey *tmp = scratch(ev, SC_KS2, n1 * sizeof *tmp);
  for (int k = 0; k < n; k++) {
    ks[k].key = keys[k];
    ks[k].idx = k;
  }
  sort_ekey(ks, tmp, n);
  for (int i = 0; i < n; i++) perm[i] = ks[i].idx;
  if (same) {
    for (int s = 0, e; s < n; s = e) {
      for (e = s + 1; e < n && raspI_elem_cmp(ks[e].key, ks[s].key) == 0; e++) {}
      for (int i = s; i < e; i++) {
        lo[ks[i].idx] = s;
        hi[ks[i].idx] = e;
      }
    }
    return;
  }
  for (int q = 0; q < n; q++) {
    rasp_elem v = qs[q];
    int a = 0, b = n;
    while (a < b) {
      int mid = (a + b) >> 1;
      if (raspI_elem_cmp(ks[mid].key, v) < 0) a = mid + 1;
      else b = mid;
    }
    lo[q] = a;
    b = n;
    while (a < b) {
      int mid = (a + b) >> 1;
      if (raspI_elem_cmp(ks[mid].key, v) <= 0) a = mid + 1;
      else b = mid;
    }
    hi[q] = a;
  }
}

/* Non-causal comparisons and not_equals on sorted keys: rank the keys
** (counting sort when the queries are the keys and their range allows,
** else a sort), then each predicate selects a prefix, a suffix or both of
** the sorted order. */
static int head_sorted(head *h, const rasp_elem *keys, const rasp_elem *qs,
                       int same, int intlike, const rasp_elem *vals,
                       rasp_elem *out) {
  rasp_eval *ev = h->ev;
  int n = h->n;
  size_t n1 = (size_t)n + 1;
  int *perm = scratch(ev, SC_GID, n1 * sizeof *perm);
  int *lo = scratch(ev, SC_QA, n1 * sizeof *lo);
  int *hi = scratch(ev, SC_QB, n1 * sizeof *hi);
  /* Stable sorting by key gives (key, index) order, which makes the scan
     order, and so which of two equal-comparing elements max/min keep,
     deterministic. */
  const int64_t *kv = NULL, *qv = NULL;
  int64_t kmin = 0, kmax = 0; /* of kv */
  scaled_keys(h, keys, qs, same, intlike, &kv, &qv, &kmin, &kmax);
  rasp_pred pred = (rasp_pred)h->sel->aux;
  int width = h->vm == VM_NONE;
  if (kv && same &&
      count_ranks(h, kv, kmin, kmax, width ? NULL : perm, lo,
                  width && (pred == RASP_PRED_LT || pred == RASP_PRED_GE) ? NULL : hi)) {
    if (width) return width_from_ranks(n, pred, lo, hi, out);
  } else if (kv) {
    rank_ints(h, kv, qv, same, perm, lo, hi);
  } else {
    rank_elems(h, keys, qs, same, perm, lo, hi);
  }
  switch (pred) {
  case RASP_PRED_LT: return head_order(h, perm, W_PREF, lo, NULL, vals, out);
  case RASP_PRED_LE: return head_order(h, perm, W_PREF, hi, NULL, vals, out);
  case RASP_PRED_GT: return head_order(h, perm, W_SUF, hi, NULL, vals, out);
  case RASP_PRED_GE: return head_order(h, perm, W_SUF, lo, NULL, vals, out);
  default: return head_order(h, perm, W_BOTH, lo, hi, vals, out); /* NE */
  }
}

/* Windows of positions: a select on indices against indices, or always. */
static int window_of(const rasp_eval *ev, const rasp_ir_node *sel, int *wt,
                     int *off) {
  const rasp_ir *ir = ev->ir;
  int causal = (sel->flags & RASP_CAUSAL) != 0;
  rasp_pred p = (rasp_pred)sel->aux;
  *off = 0;
  if (p == RASP_PRED_TRUE) {
    *wt = W_PREF;
    *off = causal ? 1 : ev->n + 1; /* n + 1: the whole sequence */
    return 1;
  }
  if (p == RASP_PRED_FALSE) {
    *wt = W_NONE;
    return 1;
  }
  if (ir->nodes[sel->in[0]].op != RASP_OP_INDICES ||
      ir->nodes[sel->in[1]].op != RASP_OP_INDICES)
    return 0;
  switch (p) {
  case RASP_PRED_EQ: *wt = W_ONE; return 1;
  case RASP_PRED_LE: *wt = W_PREF; *off = 1; return 1;
  case RASP_PRED_LT: *wt = W_PREF; return 1;
  case RASP_PRED_GE: *wt = causal ? W_ONE : W_SUF; return 1;
  case RASP_PRED_GT:
    *wt = causal ? W_NONE : W_SUF;
    *off = 1;
    return 1;
  case RASP_PRED_NE:
    *wt = causal ? W_PREF : W_BOTH;
    return 1;
  default: return 0;
  }
}

/* Conjunctions of equality selects and position windows (or causal):
** the equalities become one equality on the tuple of keys, the windows
** intersect to one.  Fills leaves with the equality selects; wt and off
** the window (W_PREF with off > n: everything). */

static int conj_window(int *wt, int *off, int wt2, int off2) {
  /* both windows are W_PREF(off), W_ONE or W_NONE */
  if (*wt == W_NONE || wt2 == W_NONE) {
    *wt = W_NONE;
  } else if (*wt == W_ONE || wt2 == W_ONE) {
    int o = *wt == W_ONE ? off2 : *off; /* the other, if W_PREF */
    int other = *wt == W_ONE ? wt2 : *wt;
    *wt = other == W_PREF && o < 1 ? W_NONE : W_ONE;
  } else {
    *off = off2 < *off ? off2 : *off;
  }
  return 1;
}

static int conj_of(const rasp_eval *ev, int id, int *leaves, int *nleaves,
                   int *wt, int *off) {
  const rasp_ir_node *nd = &ev->ir->nodes[id];
  if (nd->op == RASP_OP_SEL_AND)
    return conj_of(ev, nd->in[0], leaves, nleaves, wt, off) &&
           conj_of(ev, nd->in[1], leaves, nleaves, wt, off) &&
           (!(nd->flags & RASP_CAUSAL) || conj_window(wt, off, W_PREF, 1));
  if (nd->op != RASP_OP_SELECT) return 0;
  int w, o;
  if (window_of(ev, nd, &w, &o)) {
    if (w != W_PREF && w != W_ONE && w != W_NONE) return 0;
    return conj_window(wt, off, w, o);
  }
  if (nd->aux != RASP_PRED_EQ || *nleaves >= MAX_CONJ) return 0;
  leaves[(*nleaves)++] = id;
  if (nd->flags & RASP_CAUSAL) conj_window(wt, off, W_PREF, 1);
  return 1;
}

/* Group numbers for the equality leaves of input b (off: its offset). */
static int conj_groups(rasp_eval *ev, const int *leaves, int nl, size_t off,
                       int n, int *gid, int *gq) {
  int G = 0;
  size_t n1 = (size_t)n + 1;
  for (int l = 0; l < nl; l++) {
    const rasp_ir_node *s = &ev->ir->nodes[leaves[l]];
    const rasp_elem *keys = ev->val[s->in[0]] + off;
    const rasp_elem *qs = ev->val[s->in[1]] + off;
    int intl = INTLIKE(ev->kind[s->in[0]]) && INTLIKE(ev->kind[s->in[1]]);
    if (l == 0) {
      G = intl ? group_int(ev, s->in[0], keys, qs, n, gid, gq)
               : group_any(ev, keys, qs, n, gid, gq);
      continue;
    }
    int *g2 = scratch(ev, SC_GID2, n1 * sizeof *g2);
    int *q2 = scratch(ev, SC_GQ2, n1 * sizeof *q2);
    int G2 = intl ? group_int(ev, s->in[0], keys, qs, n, g2, q2)
                  : group_any(ev, keys, qs, n, g2, q2);
    /* the pair (group, group2) as one integer key */
    rasp_elem *pk = scratch(ev, SC_PK, n1 * sizeof *pk);
    rasp_elem *pq = scratch(ev, SC_PQ, n1 * sizeof *pq);
    int64_t mul = (int64_t)G2 + 1;
    for (int i = 0; i < n; i++) {
      pk[i].num = (int64_t)gid[i] * mul + g2[i];
      pk[i].den = 1;
      pq[i].num = gq[i] < 0 || q2[i] < 0 ? -1 : (int64_t)gq[i] * mul + q2[i];
      pq[i].den = 1;
    }
    G = group_int(ev, -1, pk, pq, n, gid, gq);
  }
  return G;
}

/* select(indices, q, ==): query q selects at most the one key at position
** qs[q] (x[i], kqv(idx, ...)), so the head is a gather, with the same
** results as the general paths: a single selected value passes through
** aggregate, max and min unchanged, and aggr_mean truncates it. */
static void head_gather(const head *h, const rasp_elem *qs, int qintlike, int causal,
                        const rasp_elem *vals, rasp_elem *out) {
  const rasp_ir_node *nd = h->nd;
  const int n = h->n;
  const rasp_op op = nd->op;
  const rasp_elem none = op == RASP_OP_SEL_WIDTH ? (rasp_elem){0, 1}
                         : op == RASP_OP_AGGR_MEAN ? elem_trunc(nd->c)
                                                   : nd->c;
  /* the key a query selects, or -1: True == 1; rationals are never whole
     (normalised) and symbols never equal a number */
#define GATHER_KEY(q)                                                         \
  ((qintlike || qs[q].den == 1 || qs[q].den == RASP_DEN_BOOL) &&              \
           (uint64_t)qs[q].num < (uint64_t)n && (!causal || qs[q].num <= (q))  \
       ? qs[q].num                                                            \
       : -1)
  if (op == RASP_OP_SEL_WIDTH) {
    for (int q = 0; q < n; q++) out[q] = (rasp_elem){GATHER_KEY(q) >= 0, 1};
  } else if (op == RASP_OP_AGGR_MEAN) {
    for (int q = 0; q < n; q++) {
      int64_t k = GATHER_KEY(q);
      rasp_elem v = k >= 0 ? vals[k] : none;
      if (v.den != 1) v = elem_trunc(v); /* the mean of one value */
      out[q] = v;
    }
  } else if (qintlike && !causal) { /* the common case: x[i], kqv(idx, ...) */
    for (int q = 0; q < n; q++) {
      uint64_t k = (uint64_t)qs[q].num;
      out[q] = k < (uint64_t)n ? vals[k] : none;
    }
  } else { /* aggregate, max, min: the one value passes through */
    for (int q = 0; q < n; q++) {
      int64_t k = GATHER_KEY(q);
      out[q] = k >= 0 ? vals[k] : none;
    }
  }
#undef GATHER_KEY
}

/* Adds v to key slot at; returns 0 if the int64 sum overflowed. */
static inline __attribute__((always_inline)) int
dacc_add(struct dacc *t, uint32_t gen, int64_t at, int64_t v, const int cleared) {
  struct dacc *a = &t[at];
  if (cleared) { /* the table was zeroed for this input: no stamps */
    a->cnt++;
    return !__builtin_add_overflow(a->sum, v, &a->sum);
  }
  /* without a branch on the stamp: whether a key repeats is data */
  int fresh = a->stamp != gen;
  int64_t base = fresh ? 0 : a->sum;
  a->stamp = gen;
  a->cnt = fresh ? 1 : a->cnt + 1;
  return !__builtin_add_overflow(base, v, &a->sum);
}

/* One equality select on int-like keys of small range (token ids, node
** ids, positions), causal or not, under sel_width or a sum head over
** integers or booleans (returns 2 if a sum overflows int64, for the
** general path to redo the input): the statistics live in a
** table indexed by key value, so there is no group numbering and, when
** causal, one sweep that adds key q and then answers query q. */
/* The sweep, inlined with causal and width as constants. */
static inline __attribute__((always_inline)) int
direct_sweep(head *h, struct dacc *t, uint32_t gen, const rasp_elem *keys,
             const rasp_elem *qs, int64_t kmin, uint64_t range, const int causal,
             const int width, const int cleared, int64_t one_den, rasp_elem none,
             const rasp_elem *vals, rasp_elem *out) {
  const int n = h->n;
  /* causal: add key q, then answer query q; else all keys, then all queries */
  if (!causal)
    for (int k = 0; k < n; k++)
      if (!dacc_add(t, gen, keys[k].num - kmin, width ? 0 : vals[k].num, cleared)) return 2;
  for (int q = 0; q < n; q++) {
    if (causal && !dacc_add(t, gen, keys[q].num - kmin, width ? 0 : vals[q].num, cleared))
      return 2;
    /* a query outside the keys' range reads slot range + 1, never stamped;
       selects, not branches, where the outcome is data */
    uint64_t o = (uint64_t)qs[q].num - (uint64_t)kmin;
    const struct dacc *a = &t[o > range ? range + 1 : o];
    int hit = cleared ? a->cnt != 0 : a->stamp == gen;
    if (!width && h->counts) {
      h->counts[q].num = hit ? a->cnt : 0;
      h->counts[q].den = 1;
    }
    if (width) {
      out[q].num = hit ? a->cnt : 0;
      out[q].den = 1;
    } else if (hit && a->cnt != 1) {
      h->mixed = 1;
      if (!ffinish(h, a->cnt, a->sum, 0, 0, &out[q])) return 0;
    } else {
      out[q].num = hit ? a->sum : none.num;
      out[q].den = hit ? one_den : none.den;
    }
  }
  return 1;
}

/* none: the head's result on an empty selection. */
static int head_direct(head *h, const rasp_elem *keys, const rasp_elem *qs,
                       int64_t kmin, uint64_t range, int causal, rasp_elem none,
                       const rasp_elem *vals, rasp_elem *out) {
  rasp_eval *ev = h->ev;
  size_t need = (size_t)range + 2; /* the last slot: queries out of range */
  if (need > ev->scr.dacccap) {
    size_t cap = ev->scr.dacccap ? ev->scr.dacccap : 256;
    while (cap < need) cap *= 2;
    raspM_free(ev->scr.dacc);
    ev->scr.dacc = raspM_alloc(cap * sizeof *ev->scr.dacc); /* zeroed: stamp 0 */
    ev->scr.dacccap = cap;
    ev->scr.daccgen = 0;
  }
  if (++ev->scr.daccgen == 0) {
    memset(ev->scr.dacc, 0, ev->scr.dacccap * sizeof *ev->scr.dacc);
    ev->scr.daccgen = 1;
  }
  struct dacc *t = ev->scr.dacc;
  const uint32_t gen = ev->scr.daccgen;
  const int64_t one_den = h->nd->op == RASP_OP_AGGREGATE ? h->vden : 1;
  const int width = h->nd->op == RASP_OP_SEL_WIDTH;
  /* A table no longer than the input is cheaper to clear than to stamp
     (token ids: a few slots); stamp 0 then reads as stale later on. */
  if (need <= (size_t)h->n + 64) {
    memset(t, 0, need * sizeof *t);
    if (width)
      return causal ? direct_sweep(h, t, gen, keys, qs, kmin, range, 1, 1, 1, one_den, none, vals, out)
                    : direct_sweep(h, t, gen, keys, qs, kmin, range, 0, 1, 1, one_den, none, vals, out);
    return causal ? direct_sweep(h, t, gen, keys, qs, kmin, range, 1, 0, 1, one_den, none, vals, out)
                  : direct_sweep(h, t, gen, keys, qs, kmin, range, 0, 0, 1, one_den, none, vals, out);
  }
  if (width)
    return causal ? direct_sweep(h, t, gen, keys, qs, kmin, range, 1, 1, 0, one_den, none, vals, out)
                  : direct_sweep(h, t, gen, keys, qs, kmin, range, 0, 1, 0, one_den, none, vals, out);
  return causal ? direct_sweep(h, t, gen, keys, qs, kmin, range, 1, 0, 0, one_den, none, vals, out)
                : direct_sweep(h, t, gen, keys, qs, kmin, range, 0, 0, 0, one_den, none, vals, out);
}


/* A gather through static_positions: query q selects the position
** inv[qs[q] - kmin] (numbers equal to a key: integers and booleans; a
** rational is never whole, a symbol never a number), if any and, when
** causal, not after q.  none: the head's value for an empty selection. */
static void head_kgather(const head *h, const int *inv, int64_t kmin, uint64_t range,
                         const rasp_elem *qs, const rasp_elem *vals, rasp_elem none,
                         rasp_elem *out) {
  const int n = h->n, causal = (h->sel->flags & RASP_CAUSAL) != 0;
  const rasp_op op = h->nd->op;
  for (int q = 0; q < n; q++) {
    uint64_t o = (uint64_t)qs[q].num - (uint64_t)kmin;
    int64_t k = (qs[q].den == 1 || qs[q].den == RASP_DEN_BOOL) && o <= range ? inv[o] : -1;
    if (causal && k > q) k = -1;
    if (op == RASP_OP_SEL_WIDTH) {
      out[q].num = k >= 0;
      out[q].den = 1;
      continue;
    }
    rasp_elem v = k >= 0 ? vals[k] : none;
    if (op == RASP_OP_AGGR_MEAN && v.den != 1) v = elem_trunc(v); /* of one value */
    out[q] = v;
  }
}

/* Keys that read no token and are distinct integers (idx + 1, start + 2,
** any shifted or permuted position) select at most one position per query,
** the same for every input: inv[v - kmin] is the position holding key v, or
** -1, built once per head per run, and the head becomes a gather.  NULL
** when the keys are not such. */
static const int *static_positions(rasp_eval *ev, int keys, int64_t *kmin, uint64_t *range) {
  int n = ev->n;
  if (!ev->isstatic[keys] || !INTLIKE(ev->kind[keys]) || n < 1) return NULL;
  int64_t lo, hi;
  raspE_node_bounds(ev, keys, &lo, &hi);
  uint64_t r = (uint64_t)hi - (uint64_t)lo;
  if (r > 4 * (uint64_t)n + 256) return NULL;
  int *inv = scratch(ev, SC_INV, ((size_t)r + 1) * sizeof *inv);
  for (uint64_t v = 0; v <= r; v++) inv[v] = -1;
  const rasp_elem *kv = ev->val[keys]; /* every input's row is the same */
  for (int k = 0; k < n; k++) {
    uint64_t o = (uint64_t)kv[k].num - (uint64_t)lo;
    if (o > r || inv[o] >= 0) return NULL; /* a repeated key */
    inv[o] = k;
  }
  *kmin = lo;
  *range = r;
  return inv;
}

/* A window's rows for head_order: query q reads the first qa[q] positions
** (W_PREF) and the positions from qb[q] on (W_BOTH, W_SUF). */
static int *window_rows(rasp_eval *ev, int woff) {
  int n = ev->n;
  int *qa = scratch(ev, SC_QT, ((size_t)n + 1) * sizeof *qa);
  int *qb = scratch(ev, SC_QB, ((size_t)n + 1) * sizeof *qb);
  for (int q = 0; q < n; q++) {
    qa[q] = woff > n ? n : q + woff;
    qb[q] = q + 1;
  }
  return qa;
}

/* ---- the head plan and the kernel table
**
** What can be known about a head from the graph alone -- the shape of its
** selector: a window of positions, a gather, a conjunction of equalities
** and which, a comparison -- is worked out once per plan (plan_heads) into
** an hplan.  What depends on the run -- the kinds of the values (integers
** only, or symbols too), the range of the keys, whether static keys are
** distinct -- is for each kernel's applies() to check against this run.
** eval_head runs the first kernel of the table, in order, whose applies()
** holds for the batch; a kernel may decline one input (returns 2: an int64
** sum overflowed), and the next kernel that applies takes that input.  The
** order is the preference: the cheaper and narrower kernels first, the
** matrix (which handles every selector) last.  In reference mode eval_head
** starts at the reference kernel instead (reval_ref.c), which takes every
** head alone. */

/* The kernels the selector's shape leaves possible for head nd, whatever
** the values (their applies() decide the rest at run time). */
static void plan_candidates(const rasp_eval *ev, const rasp_ir_node *nd, hplan *p) {
  int sum = nd->op == RASP_OP_AGGR_MEAN || nd->op == RASP_OP_AGGREGATE;
  unsigned c = 1u << RASPE_K_MATRIX;
  if (p->win) c |= 1u << RASPE_K_WINDOW;
  if (p->win && p->wt == W_PREF && sum) c |= 1u << RASPE_K_PREFIX;
  if (p->gather) c |= 1u << RASPE_K_GATHER;
  if (p->conj) c |= 1u << RASPE_K_JOIN;
  if (p->conj && ev->ir->nodes[nd->in[0]].op == RASP_OP_SELECT) c |= 1u << RASPE_K_KGATHER;
  if (p->conj && p->nl == 1 && p->cwt == W_PREF && (p->coff == 1 || p->coff > ev->n))
    c |= 1u << RASPE_K_DIRECT;
  if (p->sort) c |= 1u << RASPE_K_SORT;
  if (p->causal_ne && (sum || nd->op == RASP_OP_SEL_WIDTH)) c |= 1u << RASPE_K_CAUSAL_NE;
  p->cand = c;
}

void raspE_plan_head(const rasp_eval *ev, int id, hplan *p) {
  const rasp_ir *ir = ev->ir;
  const rasp_ir_node *nd = &ir->nodes[id];
  const rasp_ir_node *sel = &ir->nodes[nd->in[0]];
  memset(p, 0, sizeof *p);
  p->cwt = W_PREF;
  p->coff = ev->n + 1;
  if (ev->reference) { /* the reference kernel alone */
    p->cand = 1u << RASPE_K_REFERENCE;
    return;
  }
  p->cand = 1u << RASPE_K_MATRIX;
  if (sel->op == RASP_OP_SEL_AND) {
    int nl = 0;
    p->conj = conj_of(ev, nd->in[0], p->leaves, &nl, &p->cwt, &p->coff) && nl;
    p->nl = nl;
    plan_candidates(ev, nd, p);
    return;
  }
  if (sel->op != RASP_OP_SELECT) return;
  int causal = (sel->flags & RASP_CAUSAL) != 0;
  rasp_pred pred = (rasp_pred)sel->aux;
  p->win = (unsigned char)window_of(ev, sel, &p->wt, &p->woff);
  p->gather = pred == RASP_PRED_EQ && ir->nodes[sel->in[0]].op == RASP_OP_INDICES;
  if (pred == RASP_PRED_EQ) {
    int nl = 0;
    p->conj = conj_of(ev, nd->in[0], p->leaves, &nl, &p->cwt, &p->coff) && nl;
    p->nl = nl;
  }
  p->sort = !causal && (pred == RASP_PRED_NE || pred == RASP_PRED_LT || pred == RASP_PRED_LE ||
                        pred == RASP_PRED_GT || pred == RASP_PRED_GE);
  p->causal_ne = causal && pred == RASP_PRED_NE;
  plan_candidates(ev, nd, p);
}

/* One evaluation of one head: the plan, this run's facts, and what the
** chosen kernels set up. */
typedef struct hrun {
  head h;
  ctx *c;
  const hplan *p;
  const rasp_ir_node *sel;
  const rasp_elem *allvals; /* the values (NULL for sel_width) */
  unsigned kv;              /* their kind bits */
  int has_sym;              /* some value is a symbol */
  int keys_int, same;       /* select: int-like keys and queries; the same node */
  rasp_elem *counts;        /* a sel_width twin's buffer, or NULL */
  int fused;                /* ... and every input filled it */
  unsigned char *m;         /* matrix: the scratch matrix */
  int *qa;                  /* window: rows */
  const int *inv;           /* key-gather: position of each key value */
  int64_t kmin;             /* key-gather, direct: the least key */
  uint64_t range;           /* ... and the range of the keys */
  rasp_elem none;           /* key-gather, direct: the result of an empty selection */
} hrun;

/* Loads the current input's numbers (num) and boolean marks for the fast
** flavour. */
static void load_vals(hrun *r, const rasp_elem *vals, int num) {
  int n = r->h.n;
  int64_t *vv = (int64_t *)r->h.vv;
  unsigned char *vb = (unsigned char *)r->h.vb;
  if (!vv) return;
  if (num)
    for (int k = 0; k < n; k++) vv[k] = vals[k].num;
  if (vb)
    for (int k = 0; k < n; k++) vb[k] = vals[k].den == RASP_DEN_BOOL;
}

static int ap_prefix(hrun *r) {
  const hplan *p = r->p;
  return p->win && p->wt == W_PREF && r->h.fsum && r->h.vm == VM_INT && !r->h.fnb;
}
static int run_prefix(hrun *r, int b, size_t off, const rasp_elem *vals, rasp_elem *out) {
  (void)b;
  (void)off;
  return head_prefix_sum(&r->h, r->p->woff, vals, out);
}

static int ap_window(hrun *r) {
  const hplan *p = r->p;
  if (!p->win || (r->h.vm == VM_SLOW && p->wt != W_PREF && p->wt != W_ONE && p->wt != W_NONE))
    return 0;
  r->qa = window_rows(r->h.ev, p->woff);
  return 1;
}
static int run_window(hrun *r, int b, size_t off, const rasp_elem *vals, rasp_elem *out) {
  (void)b;
  (void)off;
  load_vals(r, vals, 1);
  return head_order(&r->h, NULL, r->p->wt, r->qa, r->h.ev->scr.sc[SC_QB], vals, out);
}

static int ap_gather(hrun *r) { return r->p->gather; }
static int run_gather(hrun *r, int b, size_t off, const rasp_elem *vals, rasp_elem *out) {
  (void)b;
  const rasp_ir_node *sel = r->sel;
  rasp_eval *ev = r->h.ev;
  head_gather(&r->h, ev->val[sel->in[1]] + off, INTLIKE(ev->kind[sel->in[1]]),
              (sel->flags & RASP_CAUSAL) != 0, vals, out);
  return 1;
}

static int ap_kgather(hrun *r) {
  const rasp_ir_node *nd = r->h.nd, *sel = r->sel;
  if (!r->p->conj || sel->op != RASP_OP_SELECT ||
      !(r->inv = static_positions(r->h.ev, sel->in[0], &r->kmin, &r->range)))
    return 0;
  r->none = nd->op == RASP_OP_SEL_WIDTH   ? (rasp_elem){0, 1}
            : nd->op == RASP_OP_AGGR_MEAN ? elem_trunc(nd->c)
                                          : nd->c;
  return 1;
}
static int run_kgather(hrun *r, int b, size_t off, const rasp_elem *vals, rasp_elem *out) {
  (void)b;
  head_kgather(&r->h, r->inv, r->kmin, r->range, r->h.ev->val[r->sel->in[1]] + off, vals,
               r->none, out);
  return 1;
}

/* head_direct applies for the whole batch or not at all */
static int ap_direct(hrun *r) {
  const hplan *p = r->p;
  rasp_eval *ev = r->h.ev;
  int n = ev->n, vm = r->h.vm;
  if (!p->conj || p->nl != 1 || p->cwt != W_PREF || !(p->coff == 1 || p->coff > n) ||
      !(vm == VM_NONE || ((vm == VM_INT || vm == VM_BOOL) && r->h.fsum)) || n <= 0)
    return 0;
  const rasp_ir_node *leaf = &ev->ir->nodes[p->leaves[0]];
  if (!INTLIKE(ev->kind[leaf->in[0]]) || !INTLIKE(ev->kind[leaf->in[1]])) return 0;
  int64_t kmax;
  raspE_node_bounds(ev, leaf->in[0], &r->kmin, &kmax);
  r->range = (uint64_t)kmax - (uint64_t)r->kmin;
  if (!(r->range < (uint64_t)n * 4 + 256 && n <= INT32_MAX / 2)) return 0;
  r->none = (rasp_elem){0, 1};
  return ffinish(&r->h, 0, 0, 0, 0, &r->none) ? 1 : -1;
}
static int run_direct(hrun *r, int b, size_t off, const rasp_elem *vals, rasp_elem *out) {
  (void)b;
  rasp_eval *ev = r->h.ev;
  const rasp_ir_node *leaf = &ev->ir->nodes[r->p->leaves[0]];
  load_vals(r, vals, 0);
  r->h.counts = r->counts ? r->counts + off : NULL;
  int ok = head_direct(&r->h, ev->val[leaf->in[0]] + off, ev->val[leaf->in[1]] + off, r->kmin,
                       r->range, r->p->coff == 1, r->none, vals, out);
  if (ok == 2) { /* the 128-bit path redoes this input, and the twin counts itself */
    r->h.mixed = 1;
    r->fused = 0;
  }
  return ok;
}

static int ap_conj(hrun *r) { return r->p->conj; }
static int run_conj(hrun *r, int b, size_t off, const rasp_elem *vals, rasp_elem *out) {
  (void)b;
  const hplan *p = r->p;
  rasp_eval *ev = r->h.ev;
  int n = ev->n;
  size_t n1 = (size_t)n + 1;
  load_vals(r, vals, p->cwt == W_NONE);
  int *gid = scratch(ev, SC_GID, n1 * sizeof *gid);
  int *gq = scratch(ev, SC_GQ, n1 * sizeof *gq);
  int G = conj_groups(ev, p->leaves, p->nl, off, n, gid, gq);
  if (p->cwt == W_NONE) return head_order(&r->h, NULL, W_NONE, NULL, NULL, vals, out);
  if (p->cwt == W_ONE) {
    /* key q alone, if it is in query q's group */
    for (int q = 0; q < n; q++) {
      gq[q] = gid[q] == gq[q] ? q : -1;
      gid[q] = q;
    }
    return head_groups(&r->h, n, gid, gq, n + 1, 0, vals, out);
  }
  return head_groups(&r->h, G, gid, gq, p->coff, 0, vals, out);
}

static int ap_sort(hrun *r) { return r->p->sort; }
static int run_sort(hrun *r, int b, size_t off, const rasp_elem *vals, rasp_elem *out) {
  (void)b;
  rasp_eval *ev = r->h.ev;
  load_vals(r, vals, 1);
  return head_sorted(&r->h, ev->val[r->sel->in[0]] + off, ev->val[r->sel->in[1]] + off, r->same,
                     r->keys_int, vals, out);
}

/* Causal not_equals subtracts from running totals, which works for counts
** and sums but not for max/min (needed by symbol pass-through). */
static int ap_causal_ne(hrun *r) {
  rasp_op op = r->h.nd->op;
  if (!r->p->causal_ne || !(op == RASP_OP_SEL_WIDTH || op == RASP_OP_AGGR_MEAN ||
                            (op == RASP_OP_AGGREGATE && !r->has_sym)))
    return 0;
  r->h.need &= ~NEED_EXT;
  return 1;
}
static int run_causal_ne(hrun *r, int b, size_t off, const rasp_elem *vals, rasp_elem *out) {
  (void)b;
  rasp_eval *ev = r->h.ev;
  int n = ev->n;
  size_t n1 = (size_t)n + 1;
  const rasp_elem *keys = ev->val[r->sel->in[0]] + off, *qs = ev->val[r->sel->in[1]] + off;
  load_vals(r, vals, 0);
  int *gid = scratch(ev, SC_GID, n1 * sizeof *gid);
  int *gq = scratch(ev, SC_GQ, n1 * sizeof *gq);
  int G = r->keys_int ? group_int(ev, r->sel->in[0], keys, qs, n, gid, gq)
                      : group_any(ev, keys, qs, n, gid, gq);
  return head_groups(&r->h, G, gid, gq, 1, 1, vals, out);
}

static int ap_matrix(hrun *r) {
  if (!raspE_cells_ok(r->h.ev, r->sel, r->c->err)) return -1;
  r->m = scratch(r->h.ev, SC_MAT0, (size_t)r->h.n * r->h.n + 1);
  return 1;
}
static int run_matrix(hrun *r, int b, size_t off, const rasp_elem *vals, rasp_elem *out) {
  (void)off;
  load_vals(r, vals, 1);
  return head_matrix(&r->h, b, r->m, vals, out);
}


/* Reference mode starts at this kernel (and no other applies then). */
static int ap_reference(hrun *r) { return r->h.ev->reference; }
static int run_reference(hrun *r, int b, size_t off, const rasp_elem *vals, rasp_elem *out) {
  (void)off;
  return raspE_ref_head(r->h.ev, r->c->id, b, vals, out, r->c->err);
}

/* applies: 1, 0, or -1 with the error set; run: 1, 0 with the error set,
** or 2 when it declines this input.  pass: the results are values of the
** head's operand or its default (for the result's kind bits). */
typedef struct kernel {
  const char *name;
  int (*applies)(hrun *r);
  int (*run)(hrun *r, int b, size_t off, const rasp_elem *vals, rasp_elem *out);
  int pass;
} kernel;

static const kernel kernels[RASPE_NKERNELS] = {
    [RASPE_K_PREFIX] = {"prefix", ap_prefix, run_prefix, 0},
    [RASPE_K_WINDOW] = {"window", ap_window, run_window, 0},
    [RASPE_K_GATHER] = {"gather", ap_gather, run_gather, 1},
    [RASPE_K_KGATHER] = {"key-gather", ap_kgather, run_kgather, 1},
    [RASPE_K_DIRECT] = {"direct", ap_direct, run_direct, 1},
    [RASPE_K_JOIN] = {"hash-join", ap_conj, run_conj, 0},
    [RASPE_K_SORT] = {"sorted", ap_sort, run_sort, 0},
    [RASPE_K_CAUSAL_NE] = {"causal-ne", ap_causal_ne, run_causal_ne, 0},
    [RASPE_K_MATRIX] = {"matrix", ap_matrix, run_matrix, 0},
    [RASPE_K_REFERENCE] = {"reference", ap_reference, run_reference, 0},
};

/* The first kernel from k on that applies, RASPE_NKERNELS if none, -1 on
** error. */
int raspE_kernel_count(void) { return RASPE_NKERNELS; }

const char *raspE_kernel_name(int k) {
  return k >= 0 && k < RASPE_NKERNELS ? kernels[k].name : NULL;
}

static int first_applying(hrun *r, int k) {
  for (; k < RASPE_NKERNELS; k++) {
    if (!(r->p->cand & (1u << k))) continue; /* the plan ruled it out */
    int a = kernels[k].applies(r);
    if (a) return a < 0 ? -1 : k;
  }
  return k;
}

/* Evaluates head c->id for the whole batch; counts: a sel_width twin's
** buffer to fill as well (c->fused says whether it was, for every input). */
int raspE_eval_head(ctx *c) {
  rasp_eval *ev = c->ev;
  const rasp_ir_node *nd = c->nd;
  hrun r;
  memset(&r, 0, sizeof r);
  head *h = &r.h;
  r.c = c;
  r.p = &ev->plan.hplans[c->id];
  r.sel = &ev->ir->nodes[nd->in[0]];
  r.counts = c->counts;
  r.fused = c->counts != NULL;
  c->fused = 0;
  h->ev = ev;
  h->nd = nd;
  h->sel = r.sel;
  h->need = head_needs(nd->op);
  h->n = ev->n;
  h->err = c->err;
  int n = ev->n;
  r.allvals = nd->op == RASP_OP_SEL_WIDTH ? NULL : operand(c, 1);
  r.kv = r.allvals ? operand_kind(c, 1) : 0;
  unsigned kv = r.kv;
  if (r.allvals && (kv & K_SYM))
    for (size_t i = 0; i < c->total && !r.has_sym; i++)
      r.has_sym = r.allvals[i].den == RASP_DEN_SYM;
  if (r.has_sym && nd->op == RASP_OP_AGGR_MEAN) {
    raspI_seterr(c->err, nd, "aggr_mean needs numbers or booleans, not symbols");
    return 0;
  }
  if (!r.allvals) h->vm = VM_NONE;
  else if (kv == K_INT || kv == 0) h->vm = VM_INT;
  else if (kv == K_BOOL) h->vm = VM_BOOL;
  else if (INTLIKE(kv) && (nd->op == RASP_OP_AGGR_MEAN || nd->op == RASP_OP_AGGREGATE))
    h->vm = VM_MIX;
  else h->vm = VM_SLOW;
  h->vden = h->vm == VM_BOOL ? RASP_DEN_BOOL : 1;
  h->fsum = nd->op == RASP_OP_AGGR_MEAN || nd->op == RASP_OP_AGGREGATE;
  h->fnb = nd->op == RASP_OP_AGGREGATE && h->vm == VM_MIX;
  h->fext = nd->op == RASP_OP_AGGR_MAX || nd->op == RASP_OP_AGGR_MIN;
  h->ismax = nd->op == RASP_OP_AGGR_MAX;
  h->raw = nd->op == RASP_OP_AGGREGATE && ev->plan.raw[c->id];
  if (h->vm != VM_NONE && h->vm != VM_SLOW) {
    size_t n1 = (size_t)n + 1;
    h->vv = scratch(ev, SC_VV, n1 * sizeof *h->vv);
    if (h->fnb) h->vb = scratch(ev, SC_VB, n1);
  }
  if (r.sel->op == RASP_OP_SELECT) {
    r.keys_int = INTLIKE(ev->kind[r.sel->in[0]]) && INTLIKE(ev->kind[r.sel->in[1]]);
    r.same = r.sel->in[0] == r.sel->in[1];
  }
  int k0 = first_applying(&r, 0);
  if (k0 < 0) return 0;
  if (k0 >= RASPE_NKERNELS) {
    raspI_seterr(c->err, nd, "internal error: no kernel for this head");
    return 0;
  }
  int next = -2; /* the kernel after a decline, found when first needed */
  int ok = 1, pass = 1;
  uint64_t *hits = ev->hits + (size_t)c->id * RASPE_NKERNELS;
  for (int b = 0; ok && b < ev->B; b++) {
    size_t off = (size_t)b * n;
    const rasp_elem *vals = r.allvals ? r.allvals + off : NULL;
    rasp_elem *out = c->out + off;
    int k = k0;
    ok = kernels[k].run(&r, b, off, vals, out);
    if (ok == 2) {
      if (next == -2) next = first_applying(&r, k0 + 1);
      if (next < 0) return 0;
      if (next >= RASPE_NKERNELS) {
        raspI_seterr(c->err, nd, "internal error: no kernel to take a declined input");
        return 0;
      }
      k = next;
      ok = kernels[k].run(&r, b, off, vals, out);
    }
    hits[k]++;
    pass &= kernels[k].pass;
  }
  if (ok) {
    switch (nd->op) {
    case RASP_OP_SEL_WIDTH:
    case RASP_OP_AGGR_MEAN:
    case RASP_OP_AGGR_MAX:
    case RASP_OP_AGGR_MIN: c->kind = KIND_RULE; break; /* raspF_transfer's */
    default:
      /* aggregate: a gather, or a sweep that only ever found one value,
         passes values (or the default) through, so their kinds bound it */
      if (pass && !h->mixed && k0 != RASPE_K_REFERENCE)
        c->kind = c->total ? kv | elem_kind(nd->c) : 0;
      else if (h->tracked == ev->B && k0 != RASPE_K_REFERENCE)
        c->kind = h->okind;
      else
        c->kind = KIND_SCAN;
      break;
    }
  }
  /* the twin's counts are all there */
  c->fused = ok && r.fused && k0 == RASPE_K_DIRECT;
  return ok;
}
