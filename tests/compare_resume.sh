#!/bin/sh
# compare_resume.sh -- rasp-train compare saves every arm after every
# evaluation (two slots and DIR/compare.state, tresume.h) and --resume
# goes on from the last save bit for bit:
#   - stopped at --max-steps 10 (inside the first epoch of 13 batches),
#     resumed to 17 (across the epoch's end), then to 30, every arm's final
#     checkpoint and compare.csv equal an uninterrupted run's (the schedule
#     fixed by --decay-steps 30, dropout on, so the streams must line up);
#   - killed (SIGKILL) at random moments and resumed until done: the same;
#   - a resume with other options is refused, naming them; a damaged state
#     file is refused;
#   - --keep-every 8 keeps every arm at steps 8, 16 and 24 (not 4), each
#     equal bit for bit to a run stopped there, and changes nothing else;
#     one that is not a multiple of --eval-every, or outside compare, is
#     refused.
# Prints "N passed, M failed".
NAME=compare_resume
. "${top_srcdir:-.}/tests/lib.sh"
use_trainer

"$RASP" compile programs/decoder6_causal.rasp --D 2 --M 3 --V 10 -o "$tmp/m" >/dev/null 2>&1 ||
  { bad "rasp compile decoder6_causal failed"; finish; exit 1; }
ARGS='compare --D 2 --M 3 --V 10 --st-names --no-bos --no-eos --train 200 --test 50
  --batch 16 --micro 16 --layers 1 --d-model 16 --heads 2 --d-mlp 16 --dropout 0.1
  --warmup 3 --decay cosine --decay-steps 30 --clip 1 --eval-every 4 --quiet'
run() { # OUT [OPTIONS]: a small compare of a compiled and a standard arm
  out=$1
  shift
  # shellcheck disable=SC2086
  "$train" $ARGS --init "$tmp/m" --arm "c compiled --lr 1e-4" --arm "s standard" \
    --out "$out" "$@"
}
killed_run() { # SECONDS: the same, to step 30, resumed, killed after SECONDS
  # shellcheck disable=SC2086
  timeout -s KILL "$1" "$train" $ARGS --init "$tmp/m" --arm "c compiled --lr 1e-4" \
    --arm "s standard" --out "$tmp/kill" --max-steps 30 --resume
}
same() { # A B WHAT: the arms' checksums and compare.csv (less B's rows at
  # the steps where its runs stopped, 10 and 17) agree
  for k in c s; do grep _fnv "$1/arm_$k.ckpt"; done >"$tmp/x.fnv" 2>/dev/null
  for k in c s; do grep _fnv "$2/arm_$k.ckpt"; done >"$tmp/y.fnv" 2>/dev/null
  grep -v '^1[07],' "$2/compare.csv" >"$tmp/y.csv"
  if [ -s "$tmp/x.fnv" ] && cmp -s "$tmp/x.fnv" "$tmp/y.fnv" && cmp -s "$1/compare.csv" "$tmp/y.csv"
  then ok "$3"
  else bad "$3" "$tmp/x.fnv" "$tmp/y.fnv" "$tmp/y.csv"
  fi
}

t0=$(date +%s.%N)
run "$tmp/full" --max-steps 30 >"$tmp/full.out" 2>&1 || bad "the uninterrupted run failed" "$tmp/full.out"
t1=$(date +%s.%N)
full=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
run "$tmp/part" --max-steps 10 >"$tmp/p1.out" 2>&1 &&
  run "$tmp/part" --max-steps 17 --resume >"$tmp/p2.out" 2>&1 &&
  run "$tmp/part" --max-steps 30 --resume >"$tmp/p3.out" 2>&1 ||
  bad "a resumed run failed" "$tmp/p1.out" "$tmp/p2.out" "$tmp/p3.out"
grep -q "compare resumed at step 10" "$tmp/p2.out" && grep -q "compare resumed at step 17" "$tmp/p3.out" &&
  ok "resumed from the last saves (steps 10 and 17)" || bad "not resumed where saved" "$tmp/p2.out" "$tmp/p3.out"
same "$tmp/full" "$tmp/part" "stopped at 10 and 17, resumed: the uninterrupted run's arms and rows"

# SIGKILL at random moments until the run completes
# at random moments within the uninterrupted run's time, so most kills
# come after a save (then one run without a kill finishes it, however slow
# the machine)
n=0 kills=0 done=0
seed=${SEED:-$$}
while [ $n -lt 16 ] && [ $done = 0 ]; do
  n=$((n + 1))
  t=$(awk -v s="$seed" -v n="$n" -v f="$full" 'BEGIN { srand(s + n); printf "%.2f", f * (0.4 + 0.6 * rand()) }')
  if killed_run "$t" >"$tmp/kill.$n.out" 2>&1; then done=1; else kills=$((kills + 1)); fi
  # finished before any kill (the machine got faster than when the
  # uninterrupted run was timed): start over, killing sooner
  if [ $done = 1 ] && [ $kills = 0 ]; then
    done=0
    rm -rf "$tmp/kill" "$tmp"/kill.*.out
    full=$(awk -v f="$full" 'BEGIN { printf "%.2f", f / 2 }')
  fi
done
[ $done = 1 ] || killed_run 3600 >"$tmp/kill.last.out" 2>&1 || bad "the last resume failed" "$tmp/kill.last.out"
resumed=$(cat "$tmp"/kill.*.out | grep -c "compare resumed at step")
echo "compare_resume: $kills kills in $n runs (seed $seed; an uninterrupted run: $full s), $resumed resumed from a save"
[ $kills -ge 1 ] && [ "$resumed" -ge 1 ] && ok "killed $kills times, resumed $resumed times" ||
  bad "the killed runs: $kills kills, $resumed resumed"
same "$tmp/full" "$tmp/kill" "$kills kills, resumed to the end: the uninterrupted run's arms and rows"

# other options: refused, naming them
run "$tmp/part" --max-steps 30 --resume --wd 0.02 >"$tmp/other.out" 2>&1
rc=$?
[ $rc != 0 ] && grep -q "arm c was saved with other options: --wd 0.02" "$tmp/other.out" &&
  ok "a resume with another --wd: refused, naming it" || bad "another --wd: exit $rc" "$tmp/other.out"
# --keep-every: the models at steps 8, 16, 24, as runs stopped there
run "$tmp/keep" --max-steps 30 --keep-every 8 >"$tmp/keep.out" 2>&1 || bad "--keep-every 8 failed" "$tmp/keep.out"
run "$tmp/at8" --max-steps 8 >"$tmp/at8.out" 2>&1 || bad "the run to step 8 failed" "$tmp/at8.out"
same "$tmp/full" "$tmp/keep" "--keep-every 8: the uninterrupted run's arms and rows"
kept=$(cd "$tmp/keep" && ls arm_*.step*.ckpt 2>/dev/null | tr '\n' ' ')
[ "$kept" = "arm_c.step16.ckpt arm_c.step24.ckpt arm_c.step8.ckpt arm_s.step16.ckpt arm_s.step24.ckpt arm_s.step8.ckpt " ] &&
  ok "--keep-every 8 kept steps 8, 16 and 24 of both arms" || bad "kept: '$kept'"
for k in c s; do grep params_fnv "$tmp/keep/arm_$k.step8.ckpt"; done >"$tmp/k8.fnv" 2>/dev/null
for k in c s; do grep params_fnv "$tmp/at8/arm_$k.ckpt"; done >"$tmp/a8.fnv" 2>/dev/null
[ "$(wc -l <"$tmp/k8.fnv")" = 2 ] && cmp -s "$tmp/k8.fnv" "$tmp/a8.fnv" &&
  ok "the models kept at step 8: a run stopped at step 8's, bit for bit" ||
  bad "kept at 8 differ from the run to 8" "$tmp/k8.fnv" "$tmp/a8.fnv"
grep -q '"layers"\|n_layers' "$tmp/keep/arm_s.step16.g000001.json" 2>/dev/null &&
  ok "a kept model is a model file (arm_s.step16.g000001.json)" ||
  bad "no model file for a kept step" "$tmp/keep/arm_s.step16.g000001.json"
run "$tmp/k6" --max-steps 8 --keep-every 6 >"$tmp/k6.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "bad value '6' for --keep-every: .*multiple of --eval-every" "$tmp/k6.out" &&
  ok "--keep-every 6 with --eval-every 4: refused" || bad "--keep-every 6: exit $rc" "$tmp/k6.out"
"$train" --D 2 --M 3 --V 10 --keep-every 10 --max-steps 1 --out "$tmp/kt" >"$tmp/kt.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "for --keep-every: keeps models of rasp-train compare" "$tmp/kt.out" &&
  ok "--keep-every outside compare: refused" || bad "--keep-every in trials: exit $rc" "$tmp/kt.out"

sed -i 's/^slot .*/slot 7/' "$tmp/part/compare.state"
run "$tmp/part" --max-steps 30 --resume >"$tmp/dmg.out" 2>&1
rc=$?
[ $rc != 0 ] && grep -q "not a compare state file" "$tmp/dmg.out" &&
  ok "a damaged compare.state: refused" || bad "damaged state: exit $rc" "$tmp/dmg.out"
finish
