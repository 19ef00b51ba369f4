#!/bin/sh
# Where a training step's time goes: perf record on rasp-train (the paper's
# model, batch 64 x 70 tokens, 3 optimiser steps, 1 thread), then perf
# report's self time per symbol, summed into phases.  Not a test.
#
#   bench/train_profile.sh [BUILD_DIR] [ACT] [DROPOUT] [PERF_DATA]
#
# ACT relu (default) or gelu; DROPOUT default 0.1.  Needs perf (Debian:
# linux-perf).  The run includes start-up (parameter initialisation, data
# generation: the "start-up" row) and one tiny evaluation.  OpenMP's
# parallel regions are outlined into FUNCTION._omp_fn.N, so each loop is
# counted under its function (and the element-wise clones,
# FUNCTION.arch_x86_64_v4, under theirs); GEMM is trainer/tkern.c's
# kernels, packing and driver, and every OpenBLAS symbol.  memcpy/memmove
# (mostly tkern.c's packing of B) fall under "other".
set -e
B=$(cd "${1:-.}" && pwd)
ACT=${2:-relu}
DROP=${3:-0.1}
DATA=${4:-${TMPDIR:-/tmp}/rasp-train-profile.$$.data}
OMP_NUM_THREADS=1 "$B/libtool" --mode=execute perf record -q -o "$DATA" \
  "$B/trainer/rasp-train" --threads 1 --D 5 --M 5 --V 100 --train 64 \
  --test 1 --batch 64 --micro 64 --epochs 3 --max-steps 3 --act "$ACT" \
  --dropout "$DROP" >/dev/null 2>&1
echo "rasp-train, 1 thread, $ACT, dropout $DROP; GEMM kernel: $(perf report -i "$DATA" --sort symbol --stdio 2>/dev/null | grep -o -E 'sgemm_kernel_[A-Za-z0-9]*|k512[ps]|k256[ps]' | head -1)"
perf report -i "$DATA" --no-children --sort dso,symbol --stdio 2>/dev/null |
  awk '/^ *[0-9.]+%/ {
    p = $1; sub(/%/, "", p); dso = $2; s = $4
    if (dso ~ /openblas/ || s ~ /^(k512|k256|gemm_blocked|pack_a|pack_b|tkern_)/) c = "GEMM (tkern.c or OpenBLAS, packing included)"
    else if (s ~ /^(attention_(fwd|bwd)|softmax_)/ || s ~ /expf/) c = "attention: softmax and its backward (not GEMM)"
    else if (s ~ /^(mlp_fwd|mlp_bwd|relu_|gelu_|activation|act_bwd)/ || s ~ /tanhf/) c = "MLP activation, its derivative, b_in gradient"
    else if (s ~ /^(dropout|raspT_rng)/) c = "dropout (mask generation and multiply)"
    else if (s ~ /^layernorm/) c = "layer norm"
    else if (s ~ /^(add_bias|bias_grad|vec_|train_backward|train_forward|embedding|pack_heads|unpack_add)/) c = "biases, residuals, embeddings, dropout backward"
    else if (s ~ /adamw/) c = "optimiser (AdamW)"
    else if (s ~ /^train_loss/ || s ~ /^(exp|log)(@plt)?$/ || s ~ /__ieee754_(exp|log)/) c = "loss (softmax cross entropy)"
    else if (s ~ /memset/) c = "memset (gradient and scratch zeroing)"
    else if (s ~ /^(train_normal|init_tensor|__cos|__ieee754_log|raspT_path|raspT_)/) c = "start-up (initialisation, data)"
    else if (dso ~ /kernel/) c = "kernel (page faults, scheduling)"
    else c = "other"
    t[c] += p
  }
  END { for (c in t) printf "%6.1f%%  %s\n", t[c], c }' | sort -rn
rm -f "$DATA" "$DATA.old"
