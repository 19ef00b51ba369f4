#!/bin/sh
# study_grid.sh -- experiments/study.sh, the study's grid, end to end on a
# budget of 20 steps (STEPS=20) in a temporary work and output directory:
#   - the standard arm and armwise (the positive control, on graphs written
#     arm by arm) each leave ARM-s1.csv with the evaluations at steps 0 and
#     20, ARM-s1.config.txt (armwise's with --order arm, its --init compiled
#     for that order; the standard arm's with --order edge) and
#     ARM-s1.split.json with no test question seen in training;
#   - timing.csv has a row per cell, from_step 0 (each ran in one piece);
#   - --resume skips finished cells: no new row, the CSVs unchanged;
#   - randcat (the untaught control of the one-hot teacher's arms) is a
#     random start of the one-hot (--encoding categorical) architecture,
#     d_model 265, with no teacher; taughtattn is a random start of the
#     same, taught by the one-hot program at weight 1000 with its patterns
#     pulled (--teacher-attn 100), annealed to 0 at half the budget;
#   - each config.txt opens with the build that ran it: the trainer's
#     version and digest, the source revision and the digest of the model
#     it starts from or is taught by (once where they are the same file);
#   - an unknown arm is refused (status 2) before anything runs.
# Prints "N passed, M failed".
NAME=study_grid
. "${top_srcdir:-.}/tests/lib.sh"
TRAIN=$top_builddir/trainer/rasp-train
[ -x "$TRAIN" ] || { echo "$NAME: no binary at $TRAIN" >&2; exit 2; }
export RASP TRAIN
run_grid() { # ARGS...: study.sh on the temporary directories
  STEPS=20 STUDY_WORK=$tmp/w STUDY_OUT=$tmp/o sh experiments/study.sh "$@" >"$tmp/out" 2>&1
}
mkdir -p "$tmp/w" "$tmp/o"

if run_grid --arms "standard armwise" --seeds 1; then
  ok "study.sh --arms 'standard armwise' --seeds 1 at STEPS=20"
else
  bad "study.sh at STEPS=20" "$tmp/out"
fi
for arm in standard armwise; do
  csv=$tmp/o/$arm-s1.csv
  if [ -f "$csv" ] && sed -n 2p "$csv" | grep -q "^0,$arm," && tail -1 "$csv" | grep -q "^20,$arm,"; then
    ok "$arm: evaluations at steps 0 and 20"
  else
    bad "$arm: the CSV" "$csv"
  fi
  grep -q '"test_seen_in_training":0' "$tmp/o/$arm-s1.split.json" &&
    ok "$arm: no test question seen in training" || bad "$arm: split.json" "$tmp/o/$arm-s1.split.json"
done
cfg=$tmp/o/armwise-s1.config.txt
grep -q '^--order arm$' "$cfg" && grep -q '^--init .*/d2arm$' "$cfg" &&
  ok "armwise: --order arm, its --init compiled for that order" || bad "armwise: config" "$cfg"
grep -q "order='arm'" "$tmp/w/d2arm.rasp" && grep -q '^check: 1000/1000' "$tmp/w/d2arm.compile.txt" &&
  ok "armwise: the program compiled for order arm, 1000/1000 on --check" ||
  bad "armwise: the compile" "$tmp/w/d2arm.compile.txt"
# the build line: the trainer's version and digest, the source revision,
# the --init model's digest (the same file the run directory started from)
cfg=$tmp/o/standard-s1.config.txt
d2=$(sha256sum "$tmp/w/d2.safetensors" | cut -c1-16)
head -1 "$cfg" | grep -q "^# build: rasp-train [0-9.]* (sha256 [0-9a-f]\{16\}), rasp (sha256 [0-9a-f]\{16\}), source .*, d2.safetensors sha256 $d2\$" &&
  ok "config.txt: the build that ran the cell and its model's digest" || bad "config.txt: build line" "$cfg"
grep -q '^--order edge$' "$tmp/o/standard-s1.config.txt" &&
  ok "standard: --order edge" || bad "standard: config" "$tmp/o/standard-s1.config.txt"
if head -1 "$tmp/o/timing.csv" | grep -q ',from_step$' &&
   [ "$(grep -c '^standard,1,20,.*,0$' "$tmp/o/timing.csv")" = 1 ] &&
   [ "$(grep -c '^armwise,1,20,.*,0$' "$tmp/o/timing.csv")" = 1 ]; then
  ok "timing.csv: one row per cell, from step 0"
else
  bad "timing.csv" "$tmp/o/timing.csv"
fi

cp "$tmp/o/standard-s1.csv" "$tmp/before.csv"
if run_grid --resume --arms "standard armwise" --seeds 1 &&
   [ "$(wc -l <"$tmp/o/timing.csv")" = 3 ] && cmp -s "$tmp/before.csv" "$tmp/o/standard-s1.csv"; then
  ok "--resume: finished cells are skipped"
else
  bad "--resume: finished cells" "$tmp/out" "$tmp/o/timing.csv"
fi

cfg=$tmp/o/randcat-s1.config.txt
if run_grid --arms "randcat taughtattn" --seeds 1 && grep -q '^--init .*/d2c$' "$cfg" &&
   grep -q '^--arm randcat random$' "$cfg" && grep -q '^# arm randcat ran: .*--d-model 265 .*from random weights' "$cfg" &&
   ! grep -q '^--teacher ' "$cfg" && grep -q '^d_model 265,' "$tmp/w/d2c.compile.txt"; then
  ok "randcat: a random start of the one-hot architecture (d_model 265), untaught"
else
  bad "randcat: config" "$tmp/out" "$cfg"
fi
cfg=$tmp/o/taughtattn-s1.config.txt
grep -q '^--init .*/d2c$' "$cfg" &&
  grep -q '^--arm taughtattn random --teacher .*/d2c --teacher-weight 1000 --teacher-attn 100 --teacher-until 10$' "$cfg" &&
  tail -1 "$tmp/o/taughtattn-s1.csv" | grep -q '^20,taughtattn,' &&
  head -1 "$cfg" | grep -q "^# build: .*source [^,]*, d2c.safetensors sha256 [0-9a-f]\{16\}\$" &&
  ok "taughtattn: the one-hot teacher at 1000, patterns pulled at 100, annealed by step 10 of 20" ||
  bad "taughtattn: config" "$tmp/out" "$cfg"

if run_grid --arms "standard bogus" --seeds 2; then st=0; else st=$?; fi
[ "$st" = 2 ] && grep -q 'unknown arm bogus' "$tmp/out" && [ ! -f "$tmp/o/standard-s2.csv" ] &&
  ok "an unknown arm: refused before any cell runs" || bad "an unknown arm: status $st" "$tmp/out"
finish
