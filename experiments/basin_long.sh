#!/bin/sh
# basin_long.sh -- experiment 2 of the compiled-initialisation study (the
# basin of attraction) at the length of the Clever Hans plateau, three
# seeds (issue 14; doc/training-small.md section 4.2).  Every arm trains 640
# steps of batch 64 (STEPS=, BATCH=), evaluated every 40 steps on 100 test
# sequences, from the quarter-gain compiled decoder6_causal (GAIN=0.25,
# section 4.4), AdamW without weight decay or dropout:
#   lr 1e-3: --init-mix A for A = 0, 0.1, 0.25, 0.5, 0.75, 1, --init-noise
#            S for S = 3e-3, 1e-2, and the standard pre-LN arm;
#   lr 1e-5: the compiled point and the near starts A = 0.02, S = 3e-3
#            (the rate at which the compiled point survives, section 4.5).
# The grid is cut into jobs of one to three arms, one basin.sh call each
# into PREFIX_lrLR_GROUP/seedK: a (lr 1e-3, A = 0.1 0.25 0.5), b (A = 0
# 0.75 1), c (S = 3e-3 1e-2, standard), near (lr 1e-5, A = 0.02, S =
# 3e-3) and zero (lr 1e-5, A = 0), named a1 .. c3, n1 .. n3, z1 .. z3 with
# the seed; a seed's arms see the same batches and random weights in
# every job, so the jobs of a seed are one experiment.  JOBS="a1 n1" picks
# some (JOBS= none: only the summary of what is there), PAR= runs that
# many at once.  A job whose compare.csv already holds its last step is
# skipped, so a killed or unfinished grid is completed by running the same
# command again; rasp-train compare keeps no checkpoint, so a job killed
# part way starts over.  Writes PREFIX_summary.csv (per lr, arm and seed:
# step 0 and the last step), PREFIX_means.csv (over the seeds done),
# PREFIX_steps.csv (every evaluation), PREFIX_progress.csv (every arm's
# latest evaluation, finished or not), PREFIX_table.md (doc/training-small.md
# 4.2's tables: means over the seeds), PREFIX.png (last-step lead and
# sequence accuracy against A and S) and PREFIX_steps.png (lead and
# position 2 by step); LONG=doc/study/long_steps.csv (below) adds section
# 4.5's seed-1 runs of A = 0, A = 1 and the standard arm to the tables.
# Usage, from the repository root after make:
#   sh experiments/basin_long.sh [PREFIX]   (default experiments/out/basin_long)
# before common.sh, whose default batch is 16: the plateau is at batch 64
BATCH=${BATCH:-64}
. "$(dirname "$0")/common.sh"
prefix=${1:-experiments/out/basin_long}
out=$(dirname "$prefix")
STEPS=${STEPS:-640}
mkdir -p "$out"
here=$(dirname "$0")
start=$(date +%s)
# finished CSV N: whether a compare.csv holds the last step of N arms
finished() { [ -f "$1" ] && awk -F, -v S="$STEPS" -v n="$2" '$1 == S { c++ } END { exit c < n }' "$1"; }
# batch_of DIR: the batch size a compare in DIR ran with (its config.txt)
batch_of() { [ -f "$1/config.txt" ] && sed -n 's/^--batch //p' "$1/config.txt" || true; }
# job NAME LR SEED NARMS ENV...: one basin.sh call of NARMS arms, one seed
job() {
  name=$1 lr=$2 seed=$3 narms=$4; shift 4
  d="${prefix}_lr${lr}_$name"
  # a run of another batch size is another experiment: never overwritten
  b=$(batch_of "$d/seed$seed")
  if [ -n "$b" ] && [ "$b" != "$BATCH" ]; then
    echo "$name seed $seed lr $lr: $d/seed$seed holds a run of batch $b, not $BATCH: move it away"
    return 0
  fi
  if finished "$d/seed$seed/compare.csv" "$narms"; then echo "$name seed $seed lr $lr: done before"; return 0; fi
  env BATCH="$BATCH" STEPS="$STEPS" EVERY=40 NTEST=100 SEEDS="$seed" LR="$lr" GAIN=0.25 "$@" \
    sh "$here/basin.sh" "$d" > "$d.seed$seed.txt" 2>&1 ||
    { echo "$name seed $seed lr $lr failed:"; tail "$d.seed$seed.txt"; }
}
# the jobs, most informative first (seed 1 of every arm, then the others);
# PAR workers each take the next job no other worker has claimed (a claim
# is a mkdir in this call's own directory, so a new call claims afresh)
# `-`, not `:-`: JOBS= (empty) runs nothing and only aggregates
JOBS=${JOBS-"a1 n1 b1 c1 z1 a2 n2 z2 a3 n3 z3 b2 c2 b3 c3"}
claims=$(mktemp -d)
trap 'rm -rf "$claims"' EXIT
run_job() {
  s=${1#?}
  case $1 in
    a*) job a 1e-3 "$s" 3 MIX="10 25 50" NOISE= STANDARD=0 ;;
    b*) job b 1e-3 "$s" 3 MIX="0 75 100" NOISE= STANDARD=0 ;;
    c*) job c 1e-3 "$s" 3 MIX= NOISE="3e-3 1e-2" STANDARD=1 ;;
    n*) job near 1e-5 "$s" 2 MIX=2 NOISE=3e-3 STANDARD=0 ;;
    z*) job zero 1e-5 "$s" 1 MIX=0 NOISE= STANDARD=0 ;;
    *) echo "unknown job $1" >&2; return 2 ;;
  esac
}
worker() {
  for j in $JOBS; do
    mkdir "$claims/$j" 2>/dev/null || continue
    run_job "$j"
  done
}
w=0
while [ "$w" -lt "$PAR" ]; do
  worker &
  w=$((w + 1))
done
wait
report "$start"
# every evaluation of every arm (PREFIX_steps.csv): only the runs of this
# BATCH; an arm that two jobs ran (a job from before basin.sh's MIX= fix
# ran every mix arm) once, since a seed's batches and random weights are
# the same in every job and the two runs agree bit for bit.  LONG=CSV
# (long.sh's PREFIX_steps.csv, e.g. doc/study/long_steps.csv) adds its
# basin calls as seed 1 of job `long` where the grid has no such arm: the
# same command line (LR, batch 64, 640 steps, seed 1) in another call
{
  echo "lr,job,seed,arm,step,lead,seq,pos0,pos1,pos2,pos3,loss,dist,program_acc,stopped"
  {
    for csv in "${prefix}"_lr*/seed*/compare.csv; do
      [ -f "$csv" ] && [ "$(batch_of "$(dirname "$csv")")" = "$BATCH" ] || continue
      j=$(echo "$csv" | sed 's/.*_lr[^_]*_\([^/]*\)\/seed.*/\1/')
      lr=$(echo "$csv" | sed 's/.*_lr\([^_]*\)_.*/\1/')
      s=$(echo "$csv" | sed 's/.*seed\([0-9]*\)\/compare.csv/\1/')
      awk -F, -v lr="$lr" -v j="$j" -v s="$s" 'NR > 1 { printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n",
        lr, j, s, $2, $1, $5, $6, $9, $10, $11, $12, $4, $13, $14, $15 }' "$csv"
    done
    if [ -n "${LONG:-}" ]; then
      [ "$BATCH" = 64 ] || { echo "$0: LONG= holds runs of batch 64, not $BATCH" >&2; exit 2; }
      awk -F, 'NR > 1 && $1 ~ /^lr/ { printf "%s,long,1,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n",
        substr($1, 3), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 }' "$LONG"
    fi
  } | awk -F, '!seen[$1 "," $3 "," $4 "," $5]++'
} > "${prefix}_steps.csv"
# the grid's progress: every arm's latest evaluation, finished or not (an
# unfinished job's arms stop short of the last step)
awk -F, 'NR == 1 { print; next } { k = $1 "," $3 "," $4; if (!(k in r)) o[++n] = k; r[k] = $0 }
  END { for (i = 1; i <= n; i++) print r[o[i]] }' "${prefix}_steps.csv" > "${prefix}_progress.csv"
awk -F, -v S="$STEPS" 'NR > 1 && $5 != S { print "unfinished: lr " $1 " job " $2 " seed " $3 " arm " $4 " at step " $5 }' \
  "${prefix}_progress.csv"
# per lr, arm and seed: step 0 and the last step (x: A or S)
awk -F, -v S="$STEPS" 'BEGIN { print "lr,arm,seed,x,lead0,seq0,lead,seq,pos0,pos1,pos2,pos3,loss,dist,program_acc,stopped" }
  NR > 1 { k = $1 "," $4 "," $3
    if ($5 == 0) { l0[k] = $6; q0[k] = $7 }
    if ($5 == S) { x = $4 ~ /^mix/ ? substr($4, 4) / 100 : $4 ~ /^noise/ ? substr($4, 6) + 0 : ""
      printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", $1, $4, $3, x, l0[k], q0[k],
        $6, $7, $8, $9, $10, $11, $12, $13, $14, $15 } }' "${prefix}_steps.csv" > "${prefix}_summary.csv"
awk -F, 'NR > 1 { k = $1 "," $2; if (!(k in n)) o[++m] = k; n[k]++
    l0[k] += $5; l[k] += $7; q[k] += $8; p2[k] += $11
    if (!(k in lo) || $7 < lo[k]) lo[k] = $7; if (!(k in hi) || $7 > hi[k]) hi[k] = $7 }
  END { print "lr,arm,seeds,lead0,lead,lead_min,lead_max,seq,pos2"
    for (i = 1; i <= m; i++) { k = o[i]
      printf "%s,%d,%.3f,%.3f,%.2f,%.2f,%.3f,%.3f\n", k, n[k], l0[k] / n[k], l[k] / n[k], lo[k], hi[k],
        q[k] / n[k], p2[k] / n[k] } }' "${prefix}_summary.csv" > "${prefix}_means.csv"
cat "${prefix}_means.csv"
# doc/training-small.md 4.2's tables (PREFIX_table.md): per lr and arm, over the
# seeds that reached the last step, the mean at steps 0, STEPS/2 and STEPS
# (lead, node after l_t, sequence accuracy), the last step's lead per seed
# (and the step at which rasp-train stopped an arm whose loss diverged),
# and the mean loss (over the seeds not stopped) and program-head accuracy
awk -F, -v S="$STEPS" 'function name(a) {
    if (a == "mix0") return "A = 0 (compiled)"
    if (a == "mix100") return "A = 1 (random, compiled architecture)"
    if (a == "standard") return "standard (pre-LN, random)"
    if (a ~ /^mix/) return "A = " substr(a, 4) / 100
    if (a ~ /^noise/) return "S = " substr(a, 6)
    return a }
  function f(x) { return sprintf("%.2f", x) }
  NR > 1 { k = $1 SUBSEP $4 SUBSEP $3; v[k, $5] = $6 "," $10 "," $7; loss[k, $5] = $12; pa[k, $5] = $14
    if ($5 == 0) d0[k] = $13
    if ($5 == S) { a = $1 SUBSEP $4; ns[a]++; has[a, $3] = 1; if ($15 != "") stop[k] = $15 } }
  END { h = S / 2
    for (lr = 1; lr <= 2; lr++) { L = lr == 1 ? "1e-3" : "1e-5"; head = 0
      na = split("mix0 mix2 mix10 mix25 mix50 mix75 mix100 noise3e-3 noise1e-2 standard", arms, " ")
      for (ai = 1; ai <= na; ai++) { i = L SUBSEP arms[ai]; if (!(i in ns)) continue; ka[2] = arms[ai]
        if (!head++) { printf "\n| lr %s | seeds | L2 distance at step 0 | step 0: lead, pos 2, seq | step %d | step %d | lead at %d, per seed | loss at %d (seeds not stopped) | program heads at %d |\n", L, h, S, S, S, S
          print "|---|---|---:|---|---|---|---|---:|---:|" }
        n = 0; for (sdj = 1; sdj <= 99; sdj++) if ((i, sdj) in has) sd[i, ++n] = sdj
        seeds = ""; per = ""; dl = 0; ls = 0; lsn = 0; pg = 0; pgn = 0
        for (st = 0; st <= 2; st++) for (c = 1; c <= 3; c++) acc[st, c] = 0
        for (j = 1; j <= n; j++) { sdj = sd[i, j]; k = i SUBSEP sdj
          seeds = seeds (j > 1 ? ", " : "") sdj; dl += d0[k]; if (!(k in stop)) { ls += loss[k, S]; lsn++ }
          if (pa[k, S] != "") { pg += pa[k, S]; pgn++ }
          split(v[k, S], x, ","); per = per (j > 1 ? ", " : "") f(x[1]) (k in stop ? " (diverged: stopped at " stop[k] ")" : "")
          for (st = 0; st <= 2; st++) { at = st == 0 ? 0 : (st == 1 ? h : S); split(v[k, at], x, ",")
            for (c = 1; c <= 3; c++) acc[st, c] += x[c] } }
        d = d0[i SUBSEP sd[i, 1]] == "" ? "-" : sprintf("%.4g", dl / n)
        printf "| %s | %s | %s | %s, %s, %s | %s, %s, %s | %s, %s, %s | %s | %s | %s |\n", name(ka[2]), seeds, d,
          f(acc[0, 1] / n), f(acc[0, 2] / n), f(acc[0, 3] / n), f(acc[1, 1] / n), f(acc[1, 2] / n), f(acc[1, 3] / n),
          f(acc[2, 1] / n), f(acc[2, 2] / n), f(acc[2, 3] / n), per, lsn ? sprintf("%.3g", ls / lsn) : "-", pgn ? sprintf("%.3f", pg / pgn) : "-" } } }' \
  "${prefix}_steps.csv" > "${prefix}_table.md"
cat "${prefix}_table.md"
sum="${prefix}_summary.csv"
slead=$(awk -F, '$2 == "standard" { s += $7; n++ } END { if (n) print s / n; else print 0 }' "$sum")
sseq=$(awk -F, '$2 == "standard" { s += $8; n++ } END { if (n) print s / n; else print 0 }' "$sum")
cat > "${prefix}.gp" <<GP
set datafile separator ','
set terminal pngcairo size 1200,450 font ',9' noenhanced
set output '${prefix}.png'
set multiplot layout 1,2 title 'decoder6_causal (D=$D M=$M V=$V), quarter gain: accuracy after $STEPS AdamW steps of batch $BATCH, each seed a point; dashed: the standard pre-LN arm (lr 1e-3, mean)'
set yrange [-0.05:1.05]
set key bottom left font ',8'
set xlabel 'init-mix A (0 compiled, 1 random)'
set ylabel 'val accuracy at the last step'
plot '< grep "^1e-3,mix" $sum' using 4:7 pt 6 ps 0.9 title 'lead, lr 1e-3', \\
  '' using 4:11 pt 2 ps 0.7 title 'node after l_t, lr 1e-3', \\
  '< grep "^1e-5,mix" $sum' using 4:7 pt 7 ps 0.9 title 'lead, lr 1e-5', \\
  $slead with lines dt 2 title 'standard: lead', $sseq with lines dt 3 title 'standard: seq'
set logscale x
set xrange [1e-3:3e-2]
set xlabel 'init-noise S (relative to each tensor RMS)'
plot '< grep "^1e-3,noise" $sum' using 4:7 pt 6 ps 0.9 title 'lead, lr 1e-3', \\
  '' using 4:11 pt 2 ps 0.7 title 'node after l_t, lr 1e-3', \\
  '< grep "^1e-5,noise" $sum' using 4:7 pt 7 ps 0.9 title 'lead, lr 1e-5', \\
  $slead with lines dt 2 title 'standard: lead', $sseq with lines dt 3 title 'standard: seq'
unset multiplot
GP
gnuplot "${prefix}.gp" && echo "wrote ${prefix}.png"
# lead and position 2 by step, every lr, arm and seed a line
cat > "${prefix}_steps.gp" <<GP
set datafile separator ','
set terminal pngcairo size 1400,500 font ',9' noenhanced
set output '${prefix}_steps.png'
set multiplot layout 1,2 title 'decoder6_causal (D=$D M=$M V=$V), quarter gain, AdamW, batch $BATCH: by step (lr/arm/seed)'
set yrange [-0.05:1.05]
set xlabel 'step'
set ylabel 'val accuracy'
set key outside right font ',7'
GP
for c in 6:'leading node l_t (chance 0.5)' 10:'position 2 (the node after l_t)'; do
  col=${c%%:*}
  printf "set title '%s'\nplot " "${c#*:}" >> "${prefix}_steps.gp"
  sep="" i=0
  # an arm's colour (12, then again), lr 1e-5 dashed, a seed's point type
  for key in $(awk -F, 'NR > 1 { k = $1 "/" $4 "/" $3; if (!(k in s)) { s[k] = 1; print k } }' "${prefix}_steps.csv" |
      sort -t/ -k1,1r -k2,2 -k3,3n); do
    lr=${key%%/*} rest=${key#*/}
    arm=${rest%/*} seed=${rest#*/}
    c=$(awk -F, -v a="$lr/$arm" 'NR > 1 && !(($1 "/" $4) in s) { s[$1 "/" $4] = ++n; if ($1 "/" $4 == a) { print n; exit } }' "${prefix}_steps.csv")
    col_rgb=$(echo "#000000 #e41a1c #377eb8 #4daf4a #984ea3 #ff7f00 #a65628 #f781bf #999999 #66c2a5 #1b9e77 #d95f02" |
      awk -v c="$c" '{ print $((c - 1) % NF + 1) }')
    dt=1; [ "$lr" = 1e-3 ] || dt=2
    printf "%s'< awk -F, \"\\\$1 == \\\"%s\\\" && \\\$4 == \\\"%s\\\" && \\\$3 == %s\" %s' using 5:%s with linespoints lc rgb '%s' dt %s pt %s ps 0.5 title '%s'" \
      "$sep" "$lr" "$arm" "$seed" "${prefix}_steps.csv" "$col" "$col_rgb" "$dt" "$((seed + 4))" "$key" >> "${prefix}_steps.gp"
    sep=", " i=$((i + 1))
  done
  echo >> "${prefix}_steps.gp"
done
echo "unset multiplot" >> "${prefix}_steps.gp"
gnuplot "${prefix}_steps.gp" && echo "wrote ${prefix}_steps.png"
