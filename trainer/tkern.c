/*
** tkern.c -- the trainer's matrix product (see tkern.h).
**
** Why not just cblas_sgemm: Debian's OpenBLAS 0.3.21 picks its kernels from
** the CPU it recognises, and on this project's machine (AVX-512, Sapphire
** Rapids-like, reported as "Intel Xeon Processor") it recognises nothing
** and falls back to its SSE3 "Prescott" kernels: 20-26 GFLOP/s on one core
** against 105-112 with OPENBLAS_CORETYPE=Cooperlake (bench/README-train.md).
** Choosing OpenBLAS's kernel for the user is not ours to do (some kernels of
** older builds are wrong on some CPUs), so the trainer carries its own
** product and asks the CPU, not a table of CPU names, what it can run.
**
** The product is a three-level blocking after Goto's: B is packed in
** KC x NC blocks as panels of NR columns with k outermost, zero-padded to
** whole panels, so that the micro-kernel loads it with unit stride and
** never looks at transposes or edge columns.  A is read where it lies
** (one broadcast per row and k, at a[i * si + k * sk], either transpose):
** packing A as well (the textbook way) measured no faster on the step's
** large products and cost as much as it saved on the attention tiles (K
** 25 to 70), so only a partial last panel of rows is packed (the kernel
** reads whole panels).  The micro-kernel keeps an MR x NR tile of C in
** registers: 12 x 32 (24 zmm accumulators) with AVX-512, 6 x 16 (12 ymm)
** with AVX2, one broadcast of A and NR/16 (NR/8) loads of B per k.  Edge
** tiles are stored in place by the AVX-512 kernel (column masks, a row
** count; an edge of at most 16 columns by a one-vector kernel); AVX2's go
** through a scratch tile.  tkern_sgemm_tri skips, per micro-tile, the depth where a
** triangular A is zero and the tiles above a wanted lower triangle of C
** (causal attention).  The kernels are compiled for their
** instruction sets with the target attribute and only called after
** __builtin_cpu_supports said yes, so the default -O2 build (no -march)
** runs anywhere.  Threads: none here; tnet.c splits the output across
** OpenMP threads and calls this once per block.
**
** Measured (bench/tkern_bench.c, one thread, CPU time, the step's shapes,
** see bench/README-train.md): AVX-512 90-118 GFLOP/s, OpenBLAS 0.3.21
** with the kernel it picks on this CPU (Prescott) 15-29, with
** OPENBLAS_CORETYPE=Cooperlake 105-133: within about 10% of the best
** OpenBLAS kernel, whichever kernel OpenBLAS would have guessed.
**
** Numerics: each C entry is an ordinary float sum of K products, in k
** order within a KC block (FMA, so one rounding per step); the order
** differs from OpenBLAS's, so results differ in the last bits.  Tested
** against a double-precision reference for every kernel, transpose and
** edge case in tests/test_train.c (test_sgemm_kernels).
*/
#include "tkern.h"

#include <cblas.h>
#include <immintrin.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "rmem.h"

#define KC 256  /* depth of a packed block: a B panel (KC x 32) fits L1 */
#define MC 192  /* rows of a block of A (a multiple of both MRs): L2 */
#define NC 1024 /* columns of a packed B block: L2 */
#define SMALL 8192 /* floats: packing space on the stack up to 32 KiB */

typedef void (*ukernel)(int kc, const float *a, long si, long sk,
                        const float *b, float *c, int ldc, int add, int mr,
                        int nr);

typedef struct kdesc {
  const char *name;
  int mr, nr;
  int masked;          /* stores nr < NR columns in place */
  ukernel packed[2];   /* A packed: [0] NR columns, [1] at most NR/2 */
  ukernel strided[2];  /* A where it lies */
} kdesc;

/* ---- micro-kernels ------------------------------------------------------ */

/* c (MR x NR, leading dimension ldc) = (add ? c : 0) + a b over kc steps;
** a's entry (i, k) at a[i * si + k * sk] (packed: si 1, sk MR; A in place:
** si lda, sk 1, or transposed si 1, sk lda), b: kc groups of NR floats.
** Each kernel is one always-inline body and two instances: packed, with
** the strides constant, and strided. */

/* The AVX-512 kernel stores through column masks (nr valid columns, 1 to
** 32) and only its first mr rows (A packed, zero-padded, for an edge of
** rows), so an edge tile of C is written in place, not through a scratch
** tile and a copy; and an edge of at most 16 columns runs the
** one-vector instance (`two` 0), half the FMAs: d_model 200 is 6 panels
** and 8 columns, and half of a step's products have N = d_model.  Masked
** lanes are neither read nor written (no faults past the row's end). */
#define Z512(i) __m512 x##i##a = _mm512_setzero_ps(), x##i##b = _mm512_setzero_ps();
#define F512(i)                                                                \
  {                                                                            \
    __m512 ai = _mm512_set1_ps(a[(i) * si]);                                   \
    x##i##a = _mm512_fmadd_ps(ai, b0, x##i##a);                                \
    if (two) x##i##b = _mm512_fmadd_ps(ai, b1, x##i##b);                      \
  }
#define S512(i)                                                                \
  if ((i) < mr) {                                                              \
    float *ci = c + (size_t)(i) * ldc;                                         \
    if (add) {                                                                 \
      x##i##a = _mm512_add_ps(x##i##a, _mm512_maskz_loadu_ps(m0, ci));         \
      if (two)                                                                 \
        x##i##b = _mm512_add_ps(x##i##b, _mm512_maskz_loadu_ps(m1, ci + 16));  \
    }                                                                          \
    _mm512_mask_storeu_ps(ci, m0, x##i##a);                                    \
    if (two) _mm512_mask_storeu_ps(ci + 16, m1, x##i##b);                      \
  }

__attribute__((target("avx512f"), always_inline)) static inline void
k512(int kc, const float *a, long si, long sk, const float *b, float *c,
     int ldc, int add, int mr, int nr, int two) {
  __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1),
            m1 = nr >= 32 ? 0xffff : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
  Z512(0) Z512(1) Z512(2) Z512(3) Z512(4) Z512(5)
  Z512(6) Z512(7) Z512(8) Z512(9) Z512(10) Z512(11)
  for (int k = 0; k < kc; k++) {
    __m512 b0 = _mm512_loadu_ps(b), b1 = two ? _mm512_loadu_ps(b + 16) : b0;
    F512(0) F512(1) F512(2) F512(3) F512(4) F512(5)
    F512(6) F512(7) F512(8) F512(9) F512(10) F512(11)
    a += sk;
    b += 32;
  }
  S512(0) S512(1) S512(2) S512(3) S512(4) S512(5)
  S512(6) S512(7) S512(8) S512(9) S512(10) S512(11)
}

#define Z256(i) __m256 x##i##a = _mm256_setzero_ps(), x##i##b = _mm256_setzero_ps();
#define F256(i)                                                                \
  {                                                                            \
    __m256 ai = _mm256_broadcast_ss(a + (i) * si);                                  \
    x##i##a = _mm256_fmadd_ps(ai, b0, x##i##a);                                \
    x##i##b = _mm256_fmadd_ps(ai, b1, x##i##b);                                \
  }
#define S256(i)                                                                \
  {                                                                            \
    float *ci = c + (size_t)(i) * ldc;                                         \
    if (add) {                                                                 \
      x##i##a = _mm256_add_ps(x##i##a, _mm256_loadu_ps(ci));                   \
      x##i##b = _mm256_add_ps(x##i##b, _mm256_loadu_ps(ci + 8));               \
    }                                                                          \
    _mm256_storeu_ps(ci, x##i##a);                                             \
    _mm256_storeu_ps(ci + 8, x##i##b);                                         \
  }

__attribute__((target("avx2,fma"), always_inline)) static inline void
k256(int kc, const float *a, long si, long sk, const float *b, float *c,
     int ldc, int add) {
  Z256(0) Z256(1) Z256(2) Z256(3) Z256(4) Z256(5)
  for (int k = 0; k < kc; k++) {
    __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    F256(0) F256(1) F256(2) F256(3) F256(4) F256(5)
    a += sk;
    b += 16;
  }
  S256(0) S256(1) S256(2) S256(3) S256(4) S256(5)
}

/* Instances: A packed (si 1, sk MR) or where it lies; two vectors of
** columns or one (an edge of at most 16).  The AVX2 kernel has no masks:
** its edge tiles go through the scratch tile (nr is always 16 there). */
__attribute__((target("avx512f"))) static void
k512p(int kc, const float *a, long si, long sk, const float *b, float *c,
      int ldc, int add, int mr, int nr) {
  (void)si, (void)sk;
  k512(kc, a, 1, 12, b, c, ldc, add, mr, nr, 1);
}
__attribute__((target("avx512f"))) static void
k512s(int kc, const float *a, long si, long sk, const float *b, float *c,
      int ldc, int add, int mr, int nr) {
  k512(kc, a, si, sk, b, c, ldc, add, mr, nr, 1);
}
__attribute__((target("avx512f"))) static void
k512p1(int kc, const float *a, long si, long sk, const float *b, float *c,
       int ldc, int add, int mr, int nr) {
  (void)si, (void)sk;
  k512(kc, a, 1, 12, b, c, ldc, add, mr, nr, 0);
}
__attribute__((target("avx512f"))) static void
k512s1(int kc, const float *a, long si, long sk, const float *b, float *c,
       int ldc, int add, int mr, int nr) {
  k512(kc, a, si, sk, b, c, ldc, add, mr, nr, 0);
}
__attribute__((target("avx2,fma"))) static void
k256p(int kc, const float *a, long si, long sk, const float *b, float *c,
      int ldc, int add, int mr, int nr) {
  (void)si, (void)sk, (void)mr, (void)nr;
  k256(kc, a, 1, 6, b, c, ldc, add);
}
__attribute__((target("avx2,fma"))) static void
k256s(int kc, const float *a, long si, long sk, const float *b, float *c,
      int ldc, int add, int mr, int nr) {
  (void)mr, (void)nr;
  k256(kc, a, si, sk, b, c, ldc, add);
}

static const kdesc K512 = {"avx512", 12, 32, 1, {k512p, k512p1}, {k512s, k512s1}};
static const kdesc K256 = {"avx2", 6, 16, 0, {k256p, k256p}, {k256s, k256s}};

/* ---- packing ------------------------------------------------------------ */

/* Rows i0 .. i0+mc-1, depth p0 .. p0+kc-1 of op(A), as panels of MR rows:
** ap[(panel * kc + k) * MR + i], rows past mc zero. */
static void pack_a(float *restrict ap, const float *restrict A, int lda,
                   int ta, int i0, int p0, int mc, int kc, int MR) {
  for (int ir = 0; ir < mc; ir += MR) {
    int mr = mc - ir < MR ? mc - ir : MR;
    float *d = ap + (size_t)ir * kc;
    if (ta) {
      for (int k = 0; k < kc; k++) {
        const float *s = A + (size_t)(p0 + k) * lda + i0 + ir;
        for (int i = 0; i < mr; i++) d[k * MR + i] = s[i];
        for (int i = mr; i < MR; i++) d[k * MR + i] = 0.0f;
      }
    } else {
      /* k outermost: contiguous writes, and the MR rows' reads stay in
      ** MR cache lines for 16 steps (i outermost wrote with a stride of
      ** MR floats, a cache miss per write once the block outgrew L1) */
      const float *s = A + (size_t)(i0 + ir) * lda + p0;
      for (int k = 0; k < kc; k++) {
        for (int i = 0; i < mr; i++) d[k * MR + i] = s[(size_t)i * lda + k];
        for (int i = mr; i < MR; i++) d[k * MR + i] = 0.0f;
      }
    }
  }
}

/* Depth p0 .. p0+kc-1, columns j0 .. j0+nc-1 of op(B), as panels of NR
** columns: bp[(panel * kc + k) * NR + j], columns past nc zero. */
static void pack_b(float *restrict bp, const float *restrict B, int ldb,
                   int tb, int p0, int j0, int kc, int nc, int NR) {
  for (int jr = 0; jr < nc; jr += NR) {
    int nr = nc - jr < NR ? nc - jr : NR;
    float *d = bp + (size_t)jr * kc;
    if (tb) { /* k outermost, as in pack_a */
      const float *s = B + (size_t)(j0 + jr) * ldb + p0;
      for (int k = 0; k < kc; k++) {
        for (int j = 0; j < nr; j++) d[k * NR + j] = s[(size_t)j * ldb + k];
        for (int j = nr; j < NR; j++) d[k * NR + j] = 0.0f;
      }
    } else {
      for (int k = 0; k < kc; k++) {
        const float *s = B + (size_t)(p0 + k) * ldb + j0 + jr;
        memcpy(d + k * NR, s, (size_t)nr * sizeof *d);
        for (int j = nr; j < NR; j++) d[k * NR + j] = 0.0f;
      }
    }
  }
}

/* pack_b for the AVX-512 kernel (NR 32) and B not transposed: two masked
** loads and two stores per depth step, the padding zeroed by the masks
** (memcpy's call per row of 25 to 32 floats cost more than the copy on
** the attention tiles: 3% of a step in memmove). */
__attribute__((target("avx512f"))) static void
pack_b512(float *restrict bp, const float *restrict B, int ldb, int p0, int j0,
          int kc, int nc) {
  for (int jr = 0; jr < nc; jr += 32) {
    int nr = nc - jr < 32 ? nc - jr : 32;
    __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1),
              m1 = nr >= 32 ? 0xffff : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
    float *d = bp + (size_t)jr * kc;
    const float *s = B + (size_t)p0 * ldb + j0 + jr;
    for (int k = 0; k < kc; k++, s += ldb, d += 32) {
      _mm512_storeu_ps(d, _mm512_maskz_loadu_ps(m0, s));
      _mm512_storeu_ps(d + 16, _mm512_maskz_loadu_ps(m1, s + 16));
    }
  }
}

/* ---- the blocked product ------------------------------------------------ */

static int round_up(int x, int m) { return (x + m - 1) / m * m; }

static void gemm_blocked(const kdesc *kd, int tri, int ta, int tb, int M,
                         int N, int K, const float *A, int lda, const float *B,
                         int ldb, float beta, float *C, int ldc) {
  int MR = kd->mr, NR = kd->nr;
  if (beta != 0.0f && beta != 1.0f)
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] *= beta;
  if (K == 0) {
    if (beta == 0.0f)
      for (int i = 0; i < M; i++)
        memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof *C);
    return;
  }
  size_t ncap = (size_t)round_up(N < NC ? N : NC, NR),
         kcap = (size_t)(K < KC ? K : KC);
  /* one buffer: a partial panel of A, the B block, an edge tile, 64-byte
  ** alignment; on the stack when small (attention tiles: thousands of
  ** products per step) */
  size_t need = (size_t)MR * kcap + kcap * ncap + (size_t)MR * NR + 16;
  float small[SMALL], *buf = need <= SMALL ? small : raspM_alloc(need * sizeof(float));
  float *ap = (float *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
  float *bp = ap + (size_t)MR * kcap, *tmp = bp + kcap * ncap;
  /* depth blocks of equal size (K = 800: 3 x 267, not 3 x 256 + 32: a thin
  ** last block pays the C tile's load and store for little work) */
  int nkb = (K + KC - 1) / KC, kb = (K + nkb - 1) / nkb; /* kb <= kcap */
  long si = ta ? 1 : lda, sk = ta ? lda : 1; /* A's strides in place */
  for (int jc = 0; jc < N; jc += NC) {
    int nc = N - jc < NC ? N - jc : NC;
    for (int pc = 0; pc < K; pc += kb) {
      int kc = K - pc < kb ? K - pc : kb;
      int add = pc > 0 || beta != 0.0f;
      if (kd->masked && !tb)
        pack_b512(bp, B, ldb, pc, jc, kc, nc);
      else
        pack_b(bp, B, ldb, tb, pc, jc, kc, nc, NR);
      /* rows in blocks of MC: a block's rows of A and tiles of C stay in
      ** L2 while B's panels go by */
      for (int ic = 0; ic < M; ic += MC) {
        int mc = M - ic < MC ? M - ic : MC, mfull = mc / MR * MR;
        if (mfull < mc) pack_a(ap, A, lda, ta, ic + mfull, pc, mc - mfull, kc, MR);
        for (int jr = 0; jr < nc; jr += NR) {
          int nr = nc - jr < NR ? nc - jr : NR;
          int half = kd->masked && nr <= NR / 2;
          for (int ir = 0; ir < mc; ir += MR) {
            int mr = mc - ir < MR ? mc - ir : MR, i0 = ic + ir;
            /* the depth this tile needs, k0 .. k1-1 of the block (tri) */
            int k0 = 0, k1 = kc;
            if (tri == TKERN_C_LOWER && jc + jr > i0 + mr - 1) continue;
            if (tri == TKERN_A_LOWER && i0 + mr - pc < k1)
              k1 = i0 + mr - pc > 0 ? i0 + mr - pc : 0;
            if (tri == TKERN_A_UPPER && i0 - pc > 0) k0 = i0 - pc < kc ? i0 - pc : kc;
            if (k1 <= k0) {
              if (add) continue;
              k0 = k1 = 0; /* nothing to add, but C must be written: zeros */
            }
            float *cp = C + (size_t)i0 * ldc + jc + jr;
            const float *b = bp + (size_t)jr * kc + (size_t)k0 * NR;
            const float *as = A + (size_t)i0 * si + (size_t)(pc + k0) * sk;
            if (mr == MR && (nr == NR || kd->masked)) {
              kd->strided[half](k1 - k0, as, si, sk, b, cp, ldc, add, MR, nr);
              continue;
            }
            if (kd->masked) { /* edge rows: A packed, stores up to mr */
              kd->packed[half](k1 - k0, ap + (size_t)k0 * MR, 1, MR, b, cp,
                               ldc, add, mr, nr);
              continue;
            }
            if (mr == MR)
              kd->strided[half](k1 - k0, as, si, sk, b, tmp, NR, 0, MR, NR);
            else
              kd->packed[half](k1 - k0, ap + (size_t)k0 * MR, 1, MR, b, tmp,
                               NR, 0, MR, NR);
            for (int i = 0; i < mr; i++) {
              float *restrict ci = cp + (size_t)i * ldc;
              const float *restrict ti = tmp + i * NR;
              if (add)
                for (int j = 0; j < nr; j++) ci[j] += ti[j];
              else
                memcpy(ci, ti, (size_t)nr * sizeof *ci);
            }
          }
        }
      }
    }
  }
  if (buf != small) raspM_free(buf);
}

/* ---- dispatch ----------------------------------------------------------- */

/* 0 cblas, 1 AVX2, 2 AVX-512; -1 not chosen yet.  Atomic: the first
** products may come from several OpenMP threads at once. */
static _Atomic int kind = -1;

static int cpu_best(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 2;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 1;
  return 0;
}

int tkern_select(const char *name) {
  int best = cpu_best(), k;
  if (!name)
    k = best;
  else if (!strcmp(name, "avx512"))
    k = 2;
  else if (!strcmp(name, "avx2"))
    k = 1;
  else if (!strcmp(name, "cblas"))
    k = 0;
  else
    return -1;
  /* AVX-512 implies AVX2 and FMA on every CPU that has it */
  if (k > best) return -1;
  atomic_store(&kind, k);
  return 0;
}

static int current(void) {
  int k = atomic_load(&kind);
  if (k < 0) {
    k = cpu_best();
    atomic_store(&kind, k);
  }
  return k;
}

const char *tkern_name(void) {
  static const char *names[] = {"cblas", "avx2", "avx512"};
  return names[current()];
}

void tkern_sgemm_tri(int tri, int ta, int tb, int M, int N, int K,
                     const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc) {
  if (M <= 0 || N <= 0) return;
  switch (current()) {
  case 2:
    gemm_blocked(&K512, tri, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    return;
  case 1:
    gemm_blocked(&K256, tri, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    return;
  default: /* the whole product: what tri allows to skip is zero or unread */
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A, lda, B, ldb,
                beta, C, ldc);
  }
}

void tkern_sgemm(int ta, int tb, int M, int N, int K, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc) {
  tkern_sgemm_tri(TKERN_FULL, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
}
