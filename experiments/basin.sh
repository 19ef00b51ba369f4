#!/bin/sh
# basin.sh -- experiment 2 of the compiled-initialisation study: the basin
# of attraction of the compiled decoder6_causal.  Arms start from
# (1 - A) compiled + A random (--init-mix A, A = 0 .. 1) or from the
# compiled point plus relative Gaussian noise (--init-noise S), train with
# AdamW (lr 1e-3, batch 16) on the same batches, three seeds (--seed: the
# random weights and the batch order); a `standard` arm (random pre-LN
# decoder, 4 layers, d_model 64) shows what random initialisation reaches
# in the same steps.  Does training from near the compiled program recover
# it, or fall into the Clever Hans solution (every answer token but the
# leading node)?
# SEEDS="1 2" runs some seeds (PAR at a time); the summary covers every
# OUTDIR/seedK there.  MIX="0 100" (percent) and NOISE="3e-3" choose the
# arms (MIX= or NOISE=, empty, none of that kind), STANDARD=0 drops the
# standard arm, and GAIN=0.25 starts every compiled arm from the model
# with its attention gain scaled by 0.25 (scale_gain.py; section 4.4), so
# that a long run can be split into several calls, one per learning rate
# (LR=): the same seed gives the same batches and the same random weights
# in every call.  Writes OUTDIR/seedK/compare.csv, OUTDIR/summary.csv (per
# arm and seed: step-0 and final lead and sequence accuracies, final
# position-2 accuracy, distance, program heads, the step a non-finite
# value stopped it at), OUTDIR/means.csv (the mean over seeds) and
# OUTDIR/basin.png.
. "$(dirname "$0")/common.sh"
out=${1:-experiments/out/basin}
STEPS=${STEPS:-100}
EVERY=${EVERY:-20}
NTEST=${NTEST:-100}
SEEDS=${SEEDS:-1 2 3}
LR=${LR:-1e-3}
# `-`, not `:-`: MIX= (empty) means no mix arm, not the default list
MIX=${MIX-0 10 25 50 75 100}
GAIN=${GAIN:-1}
STANDARD=${STANDARD:-1}
mkdir -p "$out"
compile decoder6_causal "$out/d6"
model="$out/d6"
if [ "$GAIN" != 1 ]; then
  model="$out/d6_gain$GAIN"
  [ -f "$model.safetensors" ] || python3 "$top/experiments/scale_gain.py" "$out/d6" "$model" "$GAIN"
fi
start=$(date +%s)
arms=""
# arm names cannot hold '.': mixP is A = P/100
for P in $MIX; do
  A=$(awk -v p="$P" 'BEGIN { print p / 100 }')
  arms="$arms --arm 'mix$P compiled --init-mix $A'"
done
# relative noise around the edge of the compiled solution at step 0
# (stability.sh's noise curve; 1e-15 1e-12 1e-6 for the numerical model of
# 080f53b, whose edge was near 1e-15)
NOISE=${NOISE-1e-3 3e-3 1e-2}
for S in $NOISE; do arms="$arms --arm 'noise$S compiled --init-noise $S'"; done
[ "$STANDARD" = 0 ] || arms="$arms --arm 'standard standard'"
run() {
  eval "\"$TRAIN\" compare $TASK --init \"$model\" --layers 4 --d-model 64 --heads 4 \
    --d-mlp 256 --train 20000 --test $NTEST --batch $BATCH --micro $BATCH --lr $LR \
    --wd 0 --dropout 0 --seed $1 --max-steps $STEPS --eval-every $EVERY --threads 1 \
    --out \"$out/seed$1\" $arms" > "$out/seed$1.log" 2>&1 ||
    { echo "seed $1 failed:"; tail "$out/seed$1.log"; }
}
for s in $SEEDS; do
  run "$s" & par
done
wait
report "$start"
{
  echo "arm,seed,lead0,seq0,lead,seq,pos2,loss,dist,program_acc,x,stopped"
  # every seed run in OUTDIR so far (seeds can be run in separate calls)
  for s in $(ls "$out" | sed -n 's/^seed\([0-9]*\)$/\1/p' | sort -n); do
    awk -F, -v s="$s" -v S="$STEPS" 'NR > 1 {
        if ($1 == 0) { l0[$2] = $5; q0[$2] = $6; if (!($2 in seen)) { seen[$2] = 1; o[++n] = $2 } }
        if ($1 == S) { x = $2 ~ /^mix/ ? substr($2, 4) / 100 : $2 ~ /^noise/ ? substr($2, 6) + 0 : ""
          printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", $2, s, l0[$2], q0[$2], $5, $6, $11, $4, $13, $14, x, $15 } }' \
      "$out/seed$s/compare.csv"
  done
} > "$out/summary.csv"
awk -F, 'NR > 1 { if (!($1 in n)) o[++k] = $1; n[$1]++; l0[$1] += $3; q0[$1] += $4; l[$1] += $5; q[$1] += $6; p[$1] += $7 }
  END { print "arm,seeds,lead0,seq0,lead,seq,pos2";
    for (i = 1; i <= k; i++) { a = o[i]; printf "%s,%d,%.3f,%.3f,%.3f,%.3f,%.3f\n", a, n[a], l0[a] / n[a], q0[a] / n[a], l[a] / n[a], q[a] / n[a], p[a] / n[a] } }' \
  "$out/summary.csv" > "$out/means.csv"
cat "$out/summary.csv" "$out/means.csv"
sseq=$(awk -F, '$1 == "standard" { print $6 + 0 }' "$out/means.csv")
slead=$(awk -F, '$1 == "standard" { print $5 + 0 }' "$out/means.csv")
cat > "$out/basin.gp" <<GP
set datafile separator ','
set terminal pngcairo size 1200,450 font ',9'
set output '$out/basin.png'
set multiplot layout 1,2 title 'decoder6\_causal (D=$D M=$M V=$V): accuracy after $STEPS AdamW steps (lr $LR, batch $BATCH), $(ls "$out" | grep -c '^seed[0-9]*$') seeds; dashed: the standard pre-LN random arm'
set yrange [-0.05:1.05]
set key top right font ',8'
set xlabel 'init-mix A (0 compiled, 1 random)'
set ylabel 'val accuracy'
plot '< grep ^mix $out/summary.csv' using 11:6 pt 7 ps 0.7 title 'seq (each seed)', \\
  '' using 11:5 pt 6 ps 0.9 title 'lead (each seed)', \\
  '' using 11:7 pt 2 ps 0.7 title 'pos 2 (each seed)', \\
  '' using 11:4 pt 4 ps 0.7 title 'lead at step 0', \\
  ${sseq:-0} with lines dt 2 title 'standard: seq', ${slead:-0} with lines dt 3 title 'standard: lead'
set logscale x
set xrange [*:*]
set xlabel 'init-noise S (relative to each tensor RMS)'
plot '< grep ^noise $out/summary.csv' using 11:6 pt 7 ps 0.7 title 'seq (each seed)', \\
  '' using 11:5 pt 6 ps 0.9 title 'lead (each seed)', \\
  '' using 11:7 pt 2 ps 0.7 title 'pos 2 (each seed)', \\
  '' using 11:4 pt 4 ps 0.7 title 'lead at step 0', \\
  ${sseq:-0} with lines dt 2 title 'standard: seq', ${slead:-0} with lines dt 3 title 'standard: lead'
unset multiplot
GP
# the plot is of final accuracy against A and S: it needs both kinds of arm
# (long.sh plots its calls by step instead)
if [ -n "$MIX" ] && [ -n "$NOISE" ]; then
  gnuplot "$out/basin.gp" && echo "wrote $out/basin.png"
else
  echo "no basin.png: it needs MIX and NOISE arms"
fi
