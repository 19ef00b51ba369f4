#!/bin/sh
# Training throughput (tokens/s) of rasp-train vs PyTorch on CPU, same
# model: 6 layers, d_model 200, 8 heads, d_mlp 800, pre-LN, dropout 0.1;
# path-star D=5, M=5, V=100 (70 tokens per training sequence).
#   bench/train_bench.sh [BUILD_DIR] [THREADS] [BATCH] [STEPS]
# Not a test.  rasp-train's time includes one tiny evaluation and data
# generation (negligible next to the steps).
set -e
B=${1:-.}; TH=${2:-2}; BATCH=${3:-64}; STEPS=${4:-5}
SRC=$(dirname "$0")
T=70
t0=$(date +%s.%N)
OMP_WAIT_POLICY=passive "$B/trainer/rasp-train" --threads "$TH" --D 5 --M 5 --V 100 \
  --train "$BATCH" --test 1 --batch "$BATCH" --micro 64 --epochs "$STEPS" \
  --max-steps "$STEPS" >/dev/null 2>&1
t1=$(date +%s.%N)
echo "rasp-train: $TH threads, batch $BATCH, seq $T: $(echo "($t1 - $t0) / $STEPS" | bc -l | cut -c1-6) s/step, $(echo "$BATCH * $T * $STEPS / ($t1 - $t0)" | bc) tokens/s"
# OpenBLAS threads: see train_bench_compiled.sh
OPENBLAS_NUM_THREADS=$TH /usr/bin/python3 "$SRC/torch_train.py" --threads "$TH" --batch "$BATCH" \
  --micro 64 --seq $T --steps "$STEPS"
