/*
** tkern_bench.c -- GFLOP/s of the trainer's matrix product (trainer/tkern.c)
** per kernel on the training step's shapes, one thread.  Not a test.
**
**   make bench/tkern_bench && ./bench/tkern_bench [REPS]
**
** For each shape (the paper model's products at micro-batch 64 x 70 =
** 4480 rows, forward and both backward forms, and attention tiles), the
** kernels the CPU supports ("cblas" is OpenBLAS with whatever kernel
** OPENBLAS_CORETYPE or its CPU detection gave it) run in turn, REPS rounds
** (default 10), and each one's best time is reported, in thread CPU
** time: interleaved, best-of and CPU time because the machine is shared.
*/
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cblas.h>

#include "tkern.h"

static double now(void) {
  struct timespec ts;
  /* thread CPU time: on a shared machine wall time mostly measures the
  ** neighbours (cache sharing still shows) */
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 10;
  openblas_set_num_threads(1); /* as rasp-train does; CPU time below */
  static const struct {
    const char *what;
    int ta, tb, M, N, K, reps;
  } S[] = {
      {"mlp in   4480x800x200 NN", 0, 0, 4480, 800, 200, 1},
      {"mlp out  4480x200x800 NN", 0, 0, 4480, 200, 800, 1},
      {"dW       200x800x4480 TN", 1, 0, 200, 800, 4480, 1},
      {"dX       4480x200x800 NT", 0, 1, 4480, 200, 800, 1},
      {"qkv      4480x600x200 NN", 0, 0, 4480, 600, 200, 1},
      {"att tile 70x70x25     NT", 0, 1, 70, 70, 25, 500},
      {"att tile 70x25x70     NN", 0, 0, 70, 25, 70, 500},
  };
  const char *kinds[] = {"cblas", "avx2", "avx512"};
  size_t cap = (size_t)4480 * 800;
  float *A = malloc(cap * 4), *B = malloc(cap * 4), *C = malloc(cap * 4);
  for (size_t i = 0; i < cap; i++) {
    A[i] = (float)rand() / RAND_MAX - 0.5f;
    B[i] = (float)rand() / RAND_MAX - 0.5f;
  }
  for (size_t s = 0; s < sizeof S / sizeof S[0]; s++) {
    int M = S[s].M, N = S[s].N, K = S[s].K;
    int lda = S[s].ta ? M : K, ldb = S[s].tb ? K : N;
    double best[3] = {1e30, 1e30, 1e30};
    /* kernels interleaved, best of reps: the machine is shared */
    for (int r = 0; r < reps; r++)
      for (int k = 0; k < 3; k++) {
        if (tkern_select(kinds[k])) continue;
        double t0 = now();
        for (int i = 0; i < S[s].reps; i++)
          tkern_sgemm(S[s].ta, S[s].tb, M, N, K, A, lda, B, ldb, 0.0f, C, N);
        double t = (now() - t0) / S[s].reps;
        if (t < best[k]) best[k] = t;
      }
    printf("%-26s", S[s].what);
    for (int k = 0; k < 3; k++)
      if (best[k] < 1e30)
        printf("  %s %6.1f", kinds[k], 2.0 * M * N * K / best[k] * 1e-9);
    printf("  GFLOP/s\n");
  }
  free(A);
  free(B);
  free(C);
  return 0;
}
