#!/bin/sh
# verify_mpi.sh -- `rasp verify` split into ranges (rasp/rwork.h): --plan,
# checkpoints (a run killed once its checkpoint holds part of the inputs,
# then resumed, must print the unbroken run's row), bad checkpoint files;
# and in a ./configure --with-mpi build where mpirun exists, `mpirun -np 2`
# (and -np 1) against one process: random and exhaustive runs, the same
# table, JSON counts and counterexample byte for byte, and an MPI run killed (SIGTERM,
# as a preempting scheduler sends it) and resumed.  The MPI part prints
# SKIP lines in other builds.  Prints "N passed, M failed".
NAME=verify_mpi
. "${top_srcdir:-.}/tests/lib.sh"
rasp=$RASP
out=$tmp/out err=$tmp/err

p1=programs/listing1_back_target.rasp
# --plan: the inputs of each cell and one core's time for them
expect plan_row 0 "^listing1_back_target *2 *4 *1440 .*1440 inputs$" "" -- verify $p1 --D 2 --M 4 --exhaustive --plan
expect plan_total 0 "^in all: 82080 inputs, " "" -- verify $p1 --D 2 --M 4..5 --exhaustive --plan
expect plan_json 0 '^{"program":"listing1_back_target","D":2,"M":5,"inputs":80640,' "" -- verify $p1 --D 2 --M 5 --exhaustive --plan --json
expect plan_over_cap 0 "7257600 .*(over --cap: raise it to run)" "" -- verify $p1 --D 2 --M 6 --exhaustive --plan --cap 1000
# the options' errors
expect plan_needs_exhaustive 2 "" "rasp verify: --plan is for --exhaustive runs" -- verify $p1 --plan
expect checkpoint_needs_exhaustive 2 "" "rasp verify: --checkpoint is for --exhaustive runs" -- verify $p1 --checkpoint "$tmp/c"
expect resume_needs_checkpoint 2 "" "rasp verify: --resume needs --checkpoint FILE" -- verify $p1 --exhaustive --resume
expect every_needs_checkpoint 2 "" "rasp verify: --checkpoint-every needs --checkpoint FILE" -- verify $p1 --exhaustive --checkpoint-every 5
expect checkpoint_every_bad 2 "" "--checkpoint-every" -- verify $p1 --exhaustive --checkpoint "$tmp/c" --checkpoint-every -1
printf 'not a checkpoint\n' >"$tmp/bad.ckpt"
expect checkpoint_exists 2 "" "checkpoint '$tmp/bad.ckpt' exists; --resume continues" -- verify $p1 --D 2 --M 3 --exhaustive --checkpoint "$tmp/bad.ckpt"
expect checkpoint_not_one 2 "" "bad.ckpt:1: expected 'rasp-verify-checkpoint 1'" -- verify $p1 --D 2 --M 3 --exhaustive --checkpoint "$tmp/bad.ckpt" --resume
printf 'rasp-verify-checkpoint 1\ncell x\ndone 5 3 passed=9 mixed=0 probes=0 leaks=0 first_fail=-1 first_leak=-1 leak_q=0 sum=0000000000000000\n' >"$tmp/bad.ckpt"
expect checkpoint_bad_counts 2 "" "bad.ckpt:3: a malformed 'done' line" -- verify $p1 --D 2 --M 3 --exhaustive --checkpoint "$tmp/bad.ckpt" --resume
printf 'rasp-verify-checkpoint 1\ncell x\ndone 0 3 passed=3 mixed=0 probes=0 leaks=0 first_fail=-1 first_leak=-1 leak_q=0\n' >"$tmp/bad.ckpt"
expect checkpoint_no_sum 2 "" "bad.ckpt:3: a 'done' line without its checksum" -- verify $p1 --D 2 --M 3 --exhaustive --checkpoint "$tmp/bad.ckpt" --resume
# a missing file with --resume starts the run, and the finished checkpoint
# holds the cell as one range with its counts
rm -f "$tmp/c"
expect resume_missing_starts 0 "48/48  ok" "" -- verify $p1 --D 2 --M 3 --exhaustive --checkpoint "$tmp/c" --resume
if grep -q "^done 0 48 passed=48 mixed=0 probes=0 leaks=0 first_fail=-1 first_leak=-1 leak_q=0 sum=[0-9a-f]*$" "$tmp/c"; then
  ok checkpoint_contents
else
  bad checkpoint_contents "$tmp/c"
fi
expect resume_finished 0 "48/48  ok" "48 of the inputs were done in" -- verify $p1 --D 2 --M 3 --exhaustive --checkpoint "$tmp/c" --resume
expect resume_said 0 "resumed: 48 of these inputs were counted by checkpoint '$tmp/c', which is trusted input" "" -- verify $p1 --D 2 --M 3 --exhaustive --checkpoint "$tmp/c" --resume

# The known-wrong Listing 6 fails a quarter of the exhaustive inputs: a count
# that a lost or doubled range would change.  Its unbroken run:
a="programs/listing6_causal.rasp --D 2 --M 5 --exhaustive --no-shrink"
"$rasp" verify $a >"$tmp/ref" 2>"$err"
if grep -q "^listing6_causal  *2  *5  *60480/80640  fail\*" "$tmp/ref"; then
  ok exhaustive_reference
else
  bad exhaustive_reference "$tmp/ref" "$err"
fi

# a forged count (the failing run's line edited to all passed, the way a
# hand edit would make it a proof) is refused
"$rasp" verify $a --checkpoint "$tmp/f6" >/dev/null 2>&1
sed -i 's/^done 0 80640 passed=[0-9]* \(.*\)first_fail=[0-9-]*/done 0 80640 passed=80640 \1first_fail=-1/' "$tmp/f6"
if grep -q "^done 0 80640 passed=80640 .*first_fail=-1 " "$tmp/f6"; then
  expect checkpoint_forged 2 "" "f6:3: a 'done' line whose checksum does not match its counts" -- \
    verify $a --checkpoint "$tmp/f6" --resume
else
  bad "checkpoint_forged: the checkpoint was not as expected" "$tmp/f6"
fi

# killresume NAME SIGNAL HOW COMMAND...: runs COMMAND --checkpoint F
# --checkpoint-every 0 in the background, kills it with SIGNAL as soon as F
# records a range, resumes it (HOW: "same", or "alone": one process without
# mpirun), and wants the unbroken run's stdout.
killresume() {
  name=$1 sig=$2 how=$3
  shift 3
  f=$tmp/$name.ckpt
  rm -f "$f"
  "$@" --checkpoint "$f" --checkpoint-every 0 >"$tmp/killed" 2>&1 &
  pid=$!
  i=0
  while [ $i -lt 600 ] && ! grep -q "^done" "$f" 2>/dev/null; do
    sleep 0.05
    i=$((i + 1))
  done
  kill -"$sig" $pid 2>/dev/null
  wait $pid
  partial=$(sed -n 's/^done [0-9]* \([0-9]*\) .*/\1/p' "$f" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
  if [ "$how" = alone ]; then
    "$rasp" verify $a --checkpoint "$f" --resume >"$out" 2>"$err"
  else
    "$@" --checkpoint "$f" --resume >"$out" 2>"$err"
  fi
  grep -v '^  resumed: ' "$out" >"$out.rows" # the resumed run says it was
  if ! cmp -s "$out.rows" "$tmp/ref" ||
     { [ "$partial" -gt 0 ] && ! grep -q '^  resumed: ' "$out"; } ||
     grep -q -e "AddressSanitizer" -e "runtime error" "$err"; then
    bad "$name: the resumed run is not the unbroken one" "$out" "$err" "$tmp/killed"
  elif [ "$partial" -ge 80640 ] || [ "$partial" -eq 0 ]; then
    # the run ended (or had recorded nothing) before the kill landed
    echo "SKIP: $name (the kill came after $partial of 80640 inputs; the resume matched)"
  elif grep -q "$partial of the inputs were done in" "$err"; then
    ok "$name (killed after $partial of 80640 inputs)"
  else
    bad "$name: the resumed run did not start from the checkpoint" "$err"
  fi
}
killresume killed_resumed KILL same "$rasp" verify $a

# ---- MPI
# RASP_NO_SKIP=1 (.ci/run, which builds --with-mpi): a skip is a failure
mpi_skip() { skip_part "mpi ($1)" || fail=$((fail + 1)); }
if ! "$rasp" verify --help | grep -q "runs under mpirun"; then
  mpi_skip "not a ./configure --with-mpi build"
elif ! command -v mpirun >/dev/null 2>&1; then
  mpi_skip "no mpirun"
else
  # root (containers, CI) needs OpenMPI's consent; two ranks may be more
  # than the cores; OpenMPI leaks by design, so leaks are not checked
  # through mpirun (this file's other runs check them)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  mpi="mpirun -np 2 --oversubscribe"
  ASAN_OPTIONS=$(echo "${ASAN_OPTIONS:-}" | sed 's/detect_leaks=1/detect_leaks=0/')
  export ASAN_OPTIONS
  # random: failing, causal-probed and passing programs, --jobs 1 and 2
  r="programs/listing6_causal.rasp programs/readout6_causal.rasp tests/verify/broken_short_walk.rasp
     --allow-include programs --D 2..3 --graphs 1500"
  "$rasp" verify $r --jobs 2 >"$tmp/one" 2>"$err"
  s1=$?
  "$rasp" verify $r --jobs 1 --json | sed 's/,"seconds":[0-9.]*//' >"$tmp/one.json" 2>"$err"
  $mpi "$rasp" verify $r --jobs 1 >"$out" 2>"$err"
  s2=$?
  if [ $s1 = 1 ] && [ $s2 = $s1 ] && cmp -s "$out" "$tmp/one" && grep -q "counterexample" "$out"; then
    ok mpi_random_table
  else
    bad "mpi_random_table (status $s2, one process $s1)" "$out" "$err"
  fi
  $mpi "$rasp" verify $r --jobs 2 --json 2>"$err" | sed 's/,"seconds":[0-9.]*//' >"$out"
  if cmp -s "$out" "$tmp/one.json" && grep -q '"causal_probes":96,' "$out"; then
    ok mpi_random_json
  else
    bad mpi_random_json "$out" "$tmp/one.json" "$err"
  fi
  # --vocab-order shuffled: the shuffled pass is repeated by every rank
  # (not split), so the table, with its "shuffled ids" column, is one process's
  v="programs/listing4_log.rasp --D 2 --M 4 --graphs 300 --vocab-order shuffled --jobs 1"
  "$rasp" verify $v >"$tmp/one" 2>"$err"
  s1=$?
  $mpi "$rasp" verify $v >"$out" 2>"$err"
  s2=$?
  if [ $s2 = $s1 ] && cmp -s "$out" "$tmp/one" && grep -q "141/300 CHANGED" "$out"; then
    ok mpi_vocab_shuffled
  else
    bad "mpi_vocab_shuffled (status $s2, one process $s1)" "$out" "$tmp/one" "$err"
  fi
  # exhaustive: the counts, a shrunk counterexample, the proof line
  x="tests/verify/broken_short_walk.rasp programs/listing4_log.rasp programs/listing2_backward_targets.rasp
     --allow-include programs --D 2 --M 4..5 --exhaustive"
  "$rasp" verify $x >"$tmp/one" 2>"$err"
  s1=$?
  $mpi "$rasp" verify $x >"$out" 2>"$err"
  s2=$?
  if [ $s2 = $s1 ] && cmp -s "$out" "$tmp/one" && grep -q "counterexample (D=2, M=4" "$out" &&
     grep -q "80640/80640" "$out"; then
    ok mpi_exhaustive
  else
    bad "mpi_exhaustive (status $s2, one process $s1)" "$out" "$tmp/one" "$err"
  fi
  mpirun -np 1 "$rasp" verify $x >"$out" 2>"$err"
  s2=$?
  if [ $s2 = $s1 ] && cmp -s "$out" "$tmp/one"; then
    ok mpi_exhaustive_one_rank
  else
    bad "mpi_exhaustive_one_rank (status $s2, one process $s1)" "$out" "$err"
  fi
  killresume mpi_killed_resumed TERM same $mpi "$rasp" verify $a
  # one process finishes what two ranks began
  killresume mpi_killed_resumed_alone TERM alone $mpi "$rasp" verify $a
fi

finish
