#!/bin/sh
# Training throughput (tokens/s) of rasp-train vs PyTorch on CPU, same
# model: 6 layers, d_model 200, 8 heads, d_mlp 800, pre-LN, learned
# positions, AdamW, batch 64 x 70 tokens (path-star D=5, M=5, V=100).
#
#   bench/train_bench.sh [BUILD_DIR] [STEPS] [PAIRS]
#
# For 1 and 2 threads and for ReLU with dropout 0.1 (rasp-train's default)
# and GELU with dropout 0, abbench (shared/tools/abbench, beside the clone)
# runs rasp-train (A) and PyTorch's standard layers (B:
# nn.TransformerEncoderLayer, norm_first=True, bench/torch_train.py --std)
# alternately, A B A B, PAIRS pairs (default 3), and prints each run with
# the load average before it, the medians, ranges and the ratio A/B.
# HAND=1 adds a second comparison against the hand-written PyTorch block
# (bench/torch_train.py without --std).  THREADS="1" or ACTS="gelu" narrow
# the grid; ABFLAGS passes options to abbench (e.g. --force: report on a
# busy machine anyway; abbench's verdict is then withheld, exit 3, and
# this script goes on).  CORETYPE=NAME runs both sides with
# OPENBLAS_CORETYPE=NAME: PyTorch does its matrix products in Debian's
# OpenBLAS, which may pick a slow kernel on a CPU it does not know
# (rasp-train uses its own kernels, trainer/tkern.c, where the CPU has
# AVX2 or AVX-512, and OpenBLAS otherwise); the variable is left alone
# otherwise (some kernels of older OpenBLAS builds compute wrong results
# on some CPUs, so choosing one is the user's call).
# Not a test.
#
# rasp-train's figure is the whole run (start-up, data generation, one
# tiny evaluation, STEPS steps) divided into STEPS * 64 * 70 tokens, so it
# is a slight underestimate; PyTorch's excludes a warm-up step.
#
#   bench/train_bench.sh --one rasp|std|hand BUILD THREADS ACT DROPOUT STEPS
# runs one side once (what abbench calls).
set -e
SRC=$(cd "$(dirname "$0")" && pwd)
T=70
BATCH=64
if [ "$1" = --one ]; then
  side=$2 B=$3 TH=$4 ACT=$5 DROP=$6 STEPS=$7
  case $side in
  rasp)
    [ -n "$CORETYPE" ] && export OPENBLAS_CORETYPE="$CORETYPE"
    t0=$(date +%s.%N)
    OMP_WAIT_POLICY=passive "$B/trainer/rasp-train" --threads "$TH" --D 5 \
      --M 5 --V 100 --train $BATCH --test 1 --batch $BATCH --micro $BATCH \
      --epochs "$STEPS" --max-steps "$STEPS" --act "$ACT" --dropout "$DROP" \
      >/dev/null 2>&1
    t1=$(date +%s.%N)
    echo "rasp-train: $TH threads, $ACT, dropout $DROP: $(echo "$BATCH * $T * $STEPS / ($t1 - $t0)" | bc) tokens/s"
    ;;
  std | hand)
    flag=
    [ "$side" = std ] && flag=--std
    # One threading layer each: OpenBLAS with torch's thread count.
    [ -n "$CORETYPE" ] && export OPENBLAS_CORETYPE="$CORETYPE"
    OPENBLAS_NUM_THREADS=$TH /usr/bin/python3 "$SRC/torch_train.py" $flag \
      --threads "$TH" --batch $BATCH --micro $BATCH --seq $T --steps "$STEPS" \
      --act "$ACT" --dropout "$DROP"
    ;;
  *) echo "train_bench.sh: --one expects rasp, std or hand, not '$side'" >&2; exit 2 ;;
  esac
  exit 0
fi
B=$(cd "${1:-.}" && pwd)
STEPS=${2:-3}
PAIRS=${3:-3}
AB=
for d in "$SRC/../../shared/tools" "$SRC/../shared/tools"; do
  [ -x "$d/abbench" ] && AB="$d/abbench" && break
done
[ -n "$AB" ] || { echo "train_bench.sh: shared/tools/abbench not found beside the clone" >&2; exit 1; }
me="sh $SRC/train_bench.sh --one"
echo "build: $B ($(grep -m1 '^  \$ ./configure' "$B/config.log" 2>/dev/null | sed 's/^  \$ //'))"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
for TH in ${THREADS:-1 2}; do
  for ACT in ${ACTS:-relu gelu}; do
    DROP=0.1
    [ "$ACT" = gelu ] && DROP=0
    others=std
    [ -n "$HAND" ] && others="std hand"
    for o in $others; do
      echo "== $TH threads, $ACT, dropout $DROP: A = rasp-train, B = PyTorch ($o)${CORETYPE:+, both with OPENBLAS_CORETYPE=$CORETYPE}"
      "$AB" --pairs "$PAIRS" --regex '([0-9.]+) tokens/s' $ABFLAGS -- \
        "$me rasp $B $TH $ACT $DROP $STEPS" \
        "$me $o $B $TH $ACT $DROP $STEPS" || [ $? = 3 ]
    done
  done
done
