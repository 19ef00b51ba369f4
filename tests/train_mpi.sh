#!/bin/sh
# train_mpi.sh -- data-parallel rasp-train (trainer/tmpi.h) in a
# ./configure --with-mpi build where mpirun exists; skipped otherwise (exit
# 77; a failure under RASP_NO_SKIP=1, tests/lib.sh).  A tiny model trains 3
# steps (one per epoch: 16 sequences, --batch 16, --micro 3: 6
# micro-batches, dropout on) as one process and under mpirun; the runs must
# leave the same files byte for byte (cmp: the checkpoint manifest, model
# and optimiser; the CSV log less its seconds column):
#   - mpirun -np 2 and -np 3 (uneven shares), -np 4 with 2 micro-batches
#     (ranks with none), and mpirun -np 1;
#   - -np 2 stopped after step 1 and resumed by one process to step 3, and
#     one process stopped after step 1 and resumed by -np 2; a longer -np 2
#     run killed (SIGTERM to mpirun, as a preempting scheduler sends it)
#     once its checkpoint exists, resumed by one process;
#   - rasp-train compare under -np 2: the same compare.csv, and the other
#     ranks write nothing (their working directory stays empty);
#   - a usage error under mpirun: status 2, the message once; a resume
#     refused on rank 0 (other options) ends every rank with status 1.
NAME=train_mpi
. "$(dirname "$0")/lib.sh"
train=$top_builddir/trainer/rasp-train
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS: $1"; }
bad() {
  fail=$((fail + 1)); echo "FAIL: $1"
  shift
  for f in "$@"; do sed "s|^|  $(basename "$f"): |" "$f" | tail -15; done
}

if ! "$train" --help | grep -q "runs under mpirun"; then
  skip_test "not a ./configure --with-mpi build"
fi
command -v mpirun >/dev/null 2>&1 || skip_test "no mpirun"
# root (containers, CI) needs OpenMPI's consent; the ranks may be more than
# the cores; OpenMPI leaks by design, so leaks are not checked through
# mpirun (the last detect_leaks wins; one-process runs keep the caller's)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
mpi_asan=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
mpi() { # K ARGS...: rasp-train ARGS under mpirun -np K, at most 5 minutes
  k=$1
  shift
  ASAN_OPTIONS=$mpi_asan timeout 300 mpirun -np "$k" --oversubscribe "$train" "$@"
}
args="--D 2 --M 3 --V 6 --train 16 --test 16 --batch 16 --micro 3 --layers 1 --d-model 16
      --heads 2 --d-mlp 32 --dropout 0.1 --lr 1e-2 --threads 1"
clean() { # no sanitizer reports in file $1
  ! grep -q -e "AddressSanitizer" -e "runtime error" "$1"
}
# same NAME DIR1 DIR2 GEN: the two run directories hold the same
# checkpoint (generation GEN) and log
same() {
  name=$1 a=$2 b=$3 g=$(printf 'g%06d' "$4")
  for f in trial0.ckpt "trial0.$g.safetensors" "trial0.$g.json" "trial0.$g.opt"; do
    if ! cmp -s "$a/$f" "$b/$f"; then
      bad "$name: $f differs" "$a/err" "$b/err"
      return
    fi
  done
  for d in "$a" "$b"; do
    # the seconds column, counted from the header's end (after the answer
    # positions): seconds,dist_compiled,program_acc
    awk -F, -v OFS=, '{ $(NF - 2) = ""; print }' "$d/trial0.csv" >"$d/csv.cut"
  done
  if ! cmp -s "$a/csv.cut" "$b/csv.cut" || [ "$(wc -l <"$a/csv.cut")" -lt 2 ]; then
    bad "$name: the logs differ" "$a/csv.cut" "$b/csv.cut"
  elif ! clean "$a/err" || ! clean "$b/err"; then
    bad "$name: a sanitizer report" "$a/err" "$b/err"
  else
    ok "$name"
  fi
}
# run DIR [mpirun -np K] ARGS...: a run into DIR (its stderr in DIR.err,
# moved into DIR after), which must succeed
run() {
  d=$1
  shift
  if [ "$1" = np ]; then
    k=$2
    shift 2
    mpi "$k" $args "$@" --out "$d" >/dev/null 2>"$d.err"
  else
    "$train" $args "$@" --out "$d" >/dev/null 2>"$d.err"
  fi
  st=$?
  mkdir -p "$d" && mv "$d.err" "$d/err"
  [ $st = 0 ] || bad "$(basename "$d"): status $st" "$d/err"
}

run "$tmp/one" --epochs 3
grep -q "16 training sequences" "$tmp/one/err" && ok one_process ||
  bad "one_process: not 16 sequences" "$tmp/one/err"
run "$tmp/np2" np 2 --epochs 3
same np2 "$tmp/one" "$tmp/np2" 3
run "$tmp/np3" np 3 --epochs 3
same np3 "$tmp/one" "$tmp/np3" 3
run "$tmp/np1" np 1 --epochs 3
same np1 "$tmp/one" "$tmp/np1" 3
run "$tmp/one8" --epochs 3 --micro 8
run "$tmp/np4" np 4 --epochs 3 --micro 8
same np4_two_micro_batches "$tmp/one8" "$tmp/np4" 3
# not a vacuous equality: the micro-batches change the sums' order, and
# the parameters moved
if cmp -s "$tmp/one/trial0.g000003.safetensors" "$tmp/one8/trial0.g000003.safetensors"; then
  bad "micro_batches_matter: --micro 3 and 8 give the same model"
else
  ok micro_batches_matter
fi

# stopped after step 1, resumed with the other kind of run
run "$tmp/r1" np 2 --epochs 1
run "$tmp/r1" --epochs 3 --resume
same np2_then_one "$tmp/one" "$tmp/r1" 3
run "$tmp/r2" --epochs 1
run "$tmp/r2" np 2 --epochs 3 --resume
grep -q "resumed after epoch 1" "$tmp/r2/err" && same one_then_np2 "$tmp/one" "$tmp/r2" 3 ||
  bad "one_then_np2: not resumed" "$tmp/r2/err"

# killed: a run of 300 steps, SIGTERM to mpirun once a checkpoint exists
long="--epochs 300 --train 64 --d-model 32 --d-mlp 64"
run "$tmp/ref" $long
mkdir -p "$tmp/k"
ASAN_OPTIONS=$mpi_asan mpirun -np 2 --oversubscribe "$train" $args $long --out "$tmp/k" \
  >/dev/null 2>"$tmp/k.killed" &
pid=$!
i=0
while [ $i -lt 600 ] && ! [ -f "$tmp/k/trial0.ckpt" ]; do
  sleep 0.05
  i=$((i + 1))
done
kill -TERM $pid 2>/dev/null
wait $pid
at=$(sed -n 's/^epoch //p' "$tmp/k/trial0.ckpt" 2>/dev/null)
run "$tmp/k" $long --resume
if [ -z "$at" ]; then
  bad "killed_resumed: no checkpoint before the kill" "$tmp/k.killed"
elif [ "$at" -ge 300 ]; then
  echo "SKIP: killed_resumed (the run ended before the kill; the resume is checked)"
  same killed_resumed "$tmp/ref" "$tmp/k" 300
else
  grep -q "resumed after epoch" "$tmp/k/err" && same "killed_resumed (at epoch $at)" \
    "$tmp/ref" "$tmp/k" 300 || bad killed_resumed "$tmp/k/err"
fi

# compare: the other ranks write nothing, anywhere
if "$RASP" compile programs/encoder2_backward_targets.rasp --D 2 --M 3 --V 6 --encoder \
     -o "$tmp/enc" >"$tmp/out" 2>&1; then
  cargs="--D 2 --M 3 --V 6 --st-names --no-bos --no-eos --model encoder --train 16 --test 16
         --batch 16 --micro 3 --lr 1e-3 --dropout 0.1 --threads 1 --max-steps 3 --eval-every 1"
  mkdir "$tmp/c1" "$tmp/c2" "$tmp/cwd"
  "$train" compare $cargs --init "$tmp/enc" --out "$tmp/c1" >/dev/null 2>"$tmp/c1.err"
  s1=$?
  (cd "$tmp/cwd" && mpi 2 compare $cargs --init "$tmp/enc" --out "$tmp/c2") >/dev/null \
    2>"$tmp/c2.err"
  s2=$?
  if [ $s1 = 0 ] && [ $s2 = 0 ] && cmp -s "$tmp/c1/compare.csv" "$tmp/c2/compare.csv" &&
     [ "$(wc -l <"$tmp/c1/compare.csv")" = 9 ] && [ -z "$(ls -A "$tmp/cwd")" ]; then
    ok compare_np2
  else
    bad "compare_np2 (status $s2, one process $s1; cwd: $(ls -A "$tmp/cwd"))" \
      "$tmp/c2.err" "$tmp/c2/compare.csv"
  fi
else
  bad "compare_np2: rasp compile failed" "$tmp/out"
fi

# errors: every rank parses the same command line
mpi 2 $args --frobnicate 1 >"$tmp/out" 2>"$tmp/err"
st=$?
n=$(grep -c "unknown option '--frobnicate'" "$tmp/err")
[ $st = 2 ] && [ "$n" = 1 ] && ok usage_error_once ||
  bad "usage_error_once (status $st, $n messages)" "$tmp/err"
# rank 0 refuses the checkpoint, the others wait for its state: all end
mpi 2 $args --epochs 4 --lr 1e-3 --out "$tmp/one" --resume >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st = 1 ] && grep -q "made with other options" "$tmp/err" && ok refused_resume_ends_all ||
  bad "refused_resume_ends_all (status $st)" "$tmp/err"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
