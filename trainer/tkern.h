/*
** tkern.h -- the trainer's matrix product: C = A B + beta C in single
** precision, row-major, either operand optionally transposed (the cblas
** convention), computed by a blocked product with AVX-512 or AVX2 FMA
** micro-kernels, the best one the CPU supports, chosen at run time; cblas
** (OpenBLAS) where the CPU has neither.  See tkern.c for why.
*/
#ifndef RASP_TKERN_H
#define RASP_TKERN_H

/* C (M x N, leading dimension ldc) = op(A) op(B) + beta C, op(A) M x K,
** op(B) K x N; ta (tb) non-zero: A (B) is stored transposed, K x M (N x K).
** beta 0 never reads C (NaNs there are overwritten).  Single-threaded. */
void tkern_sgemm(int ta, int tb, int M, int N, int K, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc);

/* tkern_sgemm where the operands' structure lets the product skip work
** (causal attention: the probabilities and their gradients are lower
** triangular).  tri is one of:
**   TKERN_FULL     the whole product (tkern_sgemm);
**   TKERN_C_LOWER  only C's entries on or below the diagonal (j <= i) are
**                  wanted: those above it are left as they were or set;
**   TKERN_A_LOWER  the caller promises op(A)[i][k] == 0 for k > i;
**   TKERN_A_UPPER  the caller promises op(A)[i][k] == 0 for k < i.
** The products skipped are the zero ones (or C's unwanted entries), so C
** is what tkern_sgemm would give, up to the sign of zeros, as long as B
** holds no infinities or NaNs in the rows the zeros multiply. */
enum { TKERN_FULL, TKERN_C_LOWER, TKERN_A_LOWER, TKERN_A_UPPER };
void tkern_sgemm_tri(int tri, int ta, int tb, int M, int N, int K,
                     const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc);

/* Chooses the kernel: "avx512", "avx2" or "cblas"; NULL: the best this CPU
** supports (the default).  Returns 0, or -1 (nothing changed) when the CPU
** lacks the instructions or the name is unknown.  For tests and benchmarks;
** not thread-safe against concurrent tkern_sgemm calls. */
int tkern_select(const char *name);
/* The kernel in use: "avx512", "avx2" or "cblas". */
const char *tkern_name(void);

#endif
