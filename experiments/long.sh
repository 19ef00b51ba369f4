#!/bin/sh
# long.sh -- the study's basin and freeze-and-widen experiments run long
# enough for the random arms to reach the Clever Hans plateau (issue 14;
# doc/training-small.md section 4.5).  Section 1's standard arm (batch 64, AdamW
# 1e-3) has `s`, `t` and the node after l_t learned, and l_t at chance,
# from about step 600; so every call here runs 640 steps of batch 64 on
# seed 1's batches (the same in every call), evaluated every 40 steps on
# 100 test sequences:
#   PREFIX_lr1e-3   basin.sh at lr 1e-3: the compiled point (A = 0), the
#                   random arm of the compiled architecture (A = 1) and
#                   the standard pre-LN arm;
#   PREFIX_lr1e-5   basin.sh at lr 1e-5: the compiled point;
#   PREFIX_freeze   freeze_widen.sh: readout6_causal (which computes only
#                   l_t) widened by 8 and frozen, at lr 1e-3, beside the
#                   standard arm;
# and, with EXTRA=1, two shorter calls (STEPS_EXTRA, default 320): a mix
# A = 0.02 and noise S = 3e-3, both at lr 1e-5 (PREFIX_mix2,
# PREFIX_noise); CALLS="lr1e-5 noise" makes (or redraws) only those.  Every compiled arm of basin.sh starts from the model with a
# quarter of the attention gain (GAIN=0.25, section 4.4).  A call whose
# compare.csv already holds its last step is not run again, so the calls
# can be made one at a time (the study ran two at once, PAR=2 here) and
# the plot redrawn.  Writes PREFIX_steps.csv (call, arm, step,
# accuracies, loss, distance, program heads) and PREFIX.png (lead,
# position 2 and program heads by step).  Usage, from the repository root
# after make: sh experiments/long.sh [PREFIX]  (default experiments/out/long)
. "$(dirname "$0")/common.sh"
prefix=${1:-experiments/out/long}
out=$(dirname "$prefix")
STEPS=${STEPS:-640}
STEPS_EXTRA=${STEPS_EXTRA:-320}
EXTRA=${EXTRA:-0}
mkdir -p "$out"
here=$(dirname "$0")
start=$(date +%s)
# finished CSV STEPS: whether a compare.csv holds its last step
finished() { [ -f "$1" ] && awk -F, -v S="$2" '$1 == S { f = 1 } END { exit !f }' "$1"; }
call() { # NAME CSV STEPS SCRIPT ENV...
  n=$1 csv=$2 s=$3 script=$4; shift 4
  if finished "$csv" "$s"; then echo "$n: done before"; return 0; fi
  env BATCH=64 STEPS="$s" EVERY=40 NTEST=100 SEEDS=1 "$@" \
    sh "$here/$script" "${prefix}_$n" > "${prefix}_$n.txt" 2>&1 ||
    { echo "$n failed:"; tail "${prefix}_$n.txt"; }
}
calls="lr1e-3 lr1e-5 freeze"
[ "$EXTRA" = 0 ] || calls="$calls mix2 noise"
calls=${CALLS:-$calls}
for n in $calls; do
  case $n in
    lr1e-3) call $n "${prefix}_$n/seed1/compare.csv" "$STEPS" basin.sh LR=1e-3 MIX="0 100" NOISE= GAIN=0.25 ;;
    lr1e-5) call $n "${prefix}_$n/seed1/compare.csv" "$STEPS" basin.sh LR=1e-5 MIX=0 NOISE= STANDARD=0 GAIN=0.25 ;;
    freeze) call $n "${prefix}_$n/readout6_causal/compare.csv" "$STEPS" freeze_widen.sh \
      PROGRAMS=readout6_causal ARMS="frozen standard" ;;
    mix2) call $n "${prefix}_$n/seed1/compare.csv" "$STEPS_EXTRA" basin.sh LR=1e-5 MIX=2 NOISE= STANDARD=0 GAIN=0.25 ;;
    noise) call $n "${prefix}_$n/seed1/compare.csv" "$STEPS_EXTRA" basin.sh LR=1e-5 MIX= NOISE=3e-3 STANDARD=0 GAIN=0.25 ;;
  esac &
  par
done
wait
report "$start"
# one table of every evaluation of every call (an arm is CALL/ARM)
{
  echo "call,arm,step,lead,seq,pos0,pos1,pos2,pos3,loss,dist,program_acc,stopped"
  for n in $calls; do
    for csv in "${prefix}_$n"/seed1/compare.csv "${prefix}_$n"/readout6_causal/compare.csv; do
      [ -f "$csv" ] || continue
      awk -F, -v n="$n" 'NR > 1 { printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n",
        n, $2, $1, $5, $6, $9, $10, $11, $12, $4, $13, $14, $15 }' "$csv"
    done
  done
} > "${prefix}_steps.csv"
# the state at 0, 320 and 640 steps (and at each extra call's last step)
awk -F, 'NR == 1 || $3 == 0 || $3 == 320 || $3 == 640' "${prefix}_steps.csv"
gp="${prefix}.gp"
cat > "$gp" <<GP
set datafile separator ','
set terminal pngcairo size 1500,450 font ',9' noenhanced
set output '${prefix}.png'
set multiplot layout 1,3 title 'D=$D M=$M V=$V, AdamW, batch 64, seed 1 (the same batches in every arm); compiled arms from decoder6_causal with w_q x 1/4, frozen: readout6_causal widened by 8'
set yrange [-0.05:1.05]
set xlabel 'step'
set key bottom right font ',8'
GP
for c in 4:'leading node l_t (chance 0.5)' 8:'position 2 (the node after l_t)' 12:'program heads (compiled arms)'; do
  col=${c%%:*}
  printf "set title '%s'\nset ylabel 'val accuracy'\nplot " "${c#*:}" >> "$gp"
  sep=""
  for key in $(awk -F, 'NR > 1 { k = $1 "/" $2; if (!(k in s)) { s[k] = 1; print k } }' "${prefix}_steps.csv"); do
    printf "%s'< grep \"^%s,%s,\" %s' using 3:%s with linespoints pt 7 ps 0.4 title '%s'" \
      "$sep" "${key%/*}" "${key#*/}" "${prefix}_steps.csv" "$col" "$key" >> "$gp"
    sep=", "
  done
  echo >> "$gp"
done
echo "unset multiplot" >> "$gp"
gnuplot "$gp" && echo "wrote ${prefix}.png"
