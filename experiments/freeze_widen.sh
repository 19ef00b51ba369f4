#!/bin/sh
# freeze_widen.sh -- experiment 3 of the compiled-initialisation study:
# the compiled circuit embedded in a wider model (--widen K: K more
# residual dimensions, more heads and MLP units, the step-0 outputs
# unchanged), with the compiled weights frozen (--freeze compiled) or not.
# Do the added weights learn the answer tokens the program does not
# compute, and does the leading node l_t stay solved?
#   - decoder6_causal computes every answer token: nothing is left to
#     learn, the question is only whether l_t survives;
#   - readout6_causal computes only l_t (its other answer positions are
#     not token ids: the trainer gives them the floor logit), so the
#     added capacity has s, the node after l_t, and t to learn.
# One compare per program, on the same batches: the plain compiled arm,
# widened, widened and frozen (AdamW lr 1e-3 and 1e-5), and the random arm
# of the compiled architecture (PAR compares at once, common.sh).
# PROGRAMS= and ARMS= (names: compiled widen frozen frozen_lr1e-5 random
# standard) choose the compares and their arms, e.g. for a long run of one
# arm: PROGRAMS=readout6_causal ARMS="frozen standard" BATCH=64 STEPS=640;
# with the same batch (and --seed 1, the default) its batches are those of
# basin.sh's seed 1.
# Writes OUTDIR/<program>/compare.csv, OUTDIR/summary.csv (per arm: at
# step 0 and at the end, lead, sequence and per-position accuracies,
# distance, program heads) and OUTDIR/freeze_widen.png (lead and sequence
# accuracy by step).
. "$(dirname "$0")/common.sh"
out=${1:-experiments/out/freeze_widen}
STEPS=${STEPS:-100}
EVERY=${EVERY:-20}
NTEST=${NTEST:-100}
K=${K:-8}
PROGRAMS=${PROGRAMS:-decoder6_causal readout6_causal}
ARMS=${ARMS:-compiled widen frozen frozen_lr1e-5 random}
mkdir -p "$out"
for p in $PROGRAMS; do compile "$p" "$out/$p"; done
start=$(date +%s)
# armspec NAME: the --arm of each arm name ARMS may list (standard: the
# random pre-LN decoder of basin.sh, cheap, on the same batches)
armspec() {
  case $1 in
    compiled) echo "compiled compiled" ;;
    widen) echo "widen compiled --widen $K" ;;
    frozen) echo "frozen compiled --widen $K --freeze compiled" ;;
    frozen_lr1e-5) echo "frozen_lr1e-5 compiled --widen $K --freeze compiled --lr 1e-5" ;;
    random) echo "random random" ;;
    standard) echo "standard standard" ;;
    *) echo "$0: unknown arm $1" >&2; exit 2 ;;
  esac
}
for a in $ARMS; do armspec "$a" > /dev/null; done
run() {
  set -- "$1"
  for a in $ARMS; do set -- "$@" --arm "$(armspec "$a")"; done
  p=$1; shift
  "$TRAIN" compare $TASK --init "$out/$p" --layers 4 --d-model 64 --heads 4 --d-mlp 256 \
    --train 20000 --test "$NTEST" \
    --batch "$BATCH" --micro "$BATCH" --lr 1e-3 --wd 0 --dropout 0 \
    --max-steps "$STEPS" --eval-every "$EVERY" --threads 1 --out "$out/$p" \
    "$@" > "$out/$p.log" 2>&1 || { echo "$p failed:"; tail "$out/$p.log"; }
}
for p in $PROGRAMS; do
  run "$p" & par
done
wait
report "$start"
{
  echo "program,arm,step,lead,seq,pos0,pos1,pos2,pos3,loss,dist,program_acc,stopped"
  for p in $PROGRAMS; do
    awk -F, -v p="$p" -v S="$STEPS" 'NR > 1 && ($1 == 0 || $1 == S) {
        printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", p, $2, $1, $5, $6, $9, $10, $11, $12, $4, $13, $14, $15 }' \
      "$out/$p/compare.csv"
  done
} > "$out/summary.csv"
cat "$out/summary.csv"
cat > "$out/freeze_widen.gp" <<GP
set datafile separator ','
set terminal pngcairo size 1200,800 font ',9' noenhanced
set output '$out/freeze_widen.png'
set multiplot layout $(echo $PROGRAMS | wc -w),2 title 'compiled circuit widened by K=$K (D=$D M=$M V=$V, AdamW lr 1e-3 unless named, batch $BATCH)'
set yrange [-0.05:1.05]
set key bottom right font ',8'
set xlabel 'step'
GP
for p in $PROGRAMS; do
  for c in 5:lead 6:sequence; do
    col=${c%%:*} what=${c#*:}
    printf "set title '%s: %s accuracy'\nset ylabel 'val %s acc'\nplot " "$p" "$what" "$what" >> "$out/freeze_widen.gp"
    sep=""
    for a in $ARMS; do
      printf "%s'< grep \",%s,\" %s/%s/compare.csv' using 1:%s with linespoints pt 7 ps 0.5 title '%s'" \
        "$sep" "$a" "$out" "$p" "$col" "$(echo $a | sed 's/_/ /')" >> "$out/freeze_widen.gp"
      sep=", "
    done
    echo >> "$out/freeze_widen.gp"
  done
done
echo "unset multiplot" >> "$out/freeze_widen.gp"
gnuplot "$out/freeze_widen.gp" && echo "wrote $out/freeze_widen.png"
