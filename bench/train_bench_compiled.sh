#!/bin/sh
# Training throughput (tokens/s) of rasp-train vs PyTorch on CPU for a
# compiled model: `rasp compile PROGRAM --D D --M M --V V`, fine-tuned with
# `rasp-train --init STEM` on the path-star task it was compiled for
# (--st-names --no-bos --no-eos, decoder, BOS prepended), and the same
# architecture in PyTorch (bench/torch_train.py --arch STEM.json --weights:
# widths, heads, MLP, activation, no layer norm, causal, max length and
# vocabulary read from STEM.json; readout over the task's V+9 token ids as
# rasp-train rebuilds it), AdamW, dropout 0, same batch, micro-batch and
# thread count, same number of model positions (the task's tokens, shifted
# by one for the decoder, plus BOS).
#   bench/train_bench_compiled.sh [BUILD_DIR] [THREADS] [BATCH] [STEPS] [MICRO]
#   environment: PROGRAM (programs/readout6_causal.rasp), D M V (2 4 8)
# Both sides report the steady step time: rasp-train's from the elapsed
# times it prints after every step (epochs of one step, one test sequence:
# the evaluation is negligible), first step excluded; PyTorch's after one
# warm-up step.  Both run with the same OMP_WAIT_POLICY (default passive:
# with torch's OpenMP threads spinning, 2 threads on a loaded 2-core machine
# were 4x slower than passive).  Not a test.  Run from anywhere; STEPS >= 2.
set -e
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}; export OMP_WAIT_POLICY
B=${1:-.}; TH=${2:-2}; BATCH=${3:-16}; STEPS=${4:-4}; MICRO=${5:-$BATCH}
SRC=$(cd "$(dirname "$0")" && pwd)
PROGRAM=${PROGRAM:-$SRC/../programs/readout6_causal.rasp}
D=${D:-2}; M=${M:-4}; V=${V:-8}
[ "$STEPS" -ge 2 ] || { echo "STEPS must be >= 2" >&2; exit 2; }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
STEM=$TMP/model
"$B/rasp/rasp" compile "$PROGRAM" --D "$D" --M "$M" --V "$V" -o "$STEM" \
  --stats 2>&1 | sed -n '1p;/^parameters/p' | sed 's/^/compiled: /'
"$B/trainer/rasp-train" --init "$STEM" \
  --D "$D" --M "$M" --V "$V" --st-names --no-bos --no-eos --model decoder \
  --threads "$TH" --train "$BATCH" --test 1 --batch "$BATCH" --micro "$MICRO" \
  --epochs "$STEPS" --max-steps "$STEPS" --lr 1e-5 --dropout 0 \
  >/dev/null 2>"$TMP/log"
# task length (tokens per sequence): the decoder reads len-1 of them, plus BOS
T=$(sed -n 's/.*, \([0-9]*\) tokens each.*/\1/p' "$TMP/log")
S=$(sed -n 's/.*step [0-9]*:.*(\([0-9.]*\)s)$/\1/p' "$TMP/log" | sed -n '1p;$p' |
    tr '\n' ' ')
set -- $S
echo "rasp-train (OMP_WAIT_POLICY=$OMP_WAIT_POLICY): $TH threads, batch $BATCH, seq $T: $(echo "($2 - $1) / ($STEPS - 1)" | bc -l | cut -c1-6) s/step, $(echo "$BATCH * $T * ($STEPS - 1) / ($2 - $1)" | bc) tokens/s"
# torch's matmuls run in OpenBLAS's own threads, which torch.set_num_threads
# does not limit (Debian's torch: "1 thread" used both cores): THREADS too
OPENBLAS_NUM_THREADS=$TH /usr/bin/python3 "$SRC/torch_train.py" --arch "$STEM.json" --weights \
  --n-out $((V + 9)) --seq "$T" --answer "$M" --lr 1e-5 --threads "$TH" \
  --batch "$BATCH" --micro "$MICRO" --steps "$((STEPS - 1))"
