#!/bin/sh
# killresume.sh -- a checkpoint is one atomic unit.  A tiny rasp-train run
# (checkpointing every step) is killed with SIGKILL at random moments, at
# least KILLS times (default 50), and resumed with --resume after every
# kill; the checkpoint writes dominate its time, so many kills land inside
# one (counted: a temporary or an uncommitted generation left behind, at
# least MIN_IN_WRITE of them).  Every run must start cleanly (exit status 0
# or death by the kill, never an error), the committed generation must
# never go back, and the final checkpoint must be byte-identical (cmp) to an
# uninterrupted run's.  The delays come from awk's srand(SEED), printed:
# SEED=n sh tests/killresume.sh reproduces a failure.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
train="$top_builddir/trainer/rasp-train"
if [ ! -x "$train" ]; then
  echo "killresume: no binary at $train" >&2
  exit 2
fi
SEED=${SEED:-11}
KILLS=${KILLS:-50}
MIN_IN_WRITE=${MIN_IN_WRITE:-5}
EPOCHS=${EPOCHS:-250}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rasp-killresume.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
args="--D 2 --M 3 --V 6 --layers 2 --d-model 32 --heads 2 --d-mlp 64
      --train 2 --test 2 --batch 2 --epochs $EPOCHS --threads 1"

fail() {
  echo "FAIL: $*"
  [ -f "$tmp/log" ] && sed 's/^/  log: /' "$tmp/log" | tail -20
  echo "  (reproduce: SEED=$SEED KILLS=$KILLS sh tests/killresume.sh)"
  exit 1
}

now() { date +%s%N; }
# the uninterrupted run, and one of a single epoch: startup and epoch times
t0=$(now)
"$train" $args --out "$tmp/ref" >"$tmp/log" 2>&1 || fail "uninterrupted run"
t1=$(now)
"$train" $args --epochs 1 --out "$tmp/one" >"$tmp/log" 2>&1 || fail "one-epoch run"
t2=$(now)
# a kill lands between half the start-up time and three epochs after it
set -- $(awk -v a="$t0" -v b="$t1" -v c="$t2" -v e="$EPOCHS" 'BEGIN {
           one = (c - b) / 1e9; ep = ((b - a) / 1e9 - one) / (e - 1);
           if (ep < 0.001) ep = 0.001; up = one - ep; if (up < 0) up = 0;
           printf "%.4f %.4f %.4f\n", up / 2, up / 2 + 3 * ep, ep }')
lo=$1 span=$2 ep=$3
echo "killresume: SEED=$SEED KILLS=$KILLS; an epoch takes ${ep}s; kills after ${lo}s + up to ${span}s"

gen_of() { sed -n 's/^generation //p' "$1/trial0.ckpt" 2>/dev/null; }

kills=0 in_write=0 runs=0 last=0
# delays in seconds, uniform over [lo, lo + span]
for d in $(awk -v s="$SEED" -v lo="$lo" -v span="$span" 'BEGIN { srand(s);
             for (i = 0; i < 400; i++) printf "%.4f\n", lo + rand() * span }'); do
  # (past KILLS while too few kills landed in a write: a loaded machine
  # slows the start-up the delays were timed on, and the kills land there)
  [ $kills -ge "$KILLS" ] && [ $in_write -ge "$MIN_IN_WRITE" ] && break
  "$train" $args --out "$tmp/run" --resume >"$tmp/log" 2>&1 &
  pid=$!
  sleep "$d"
  kill -9 $pid 2>/dev/null
  { wait $pid; } 2>/dev/null
  st=$?
  runs=$((runs + 1))
  case $st in
  137) kills=$((kills + 1)) ;;
  0) ;;
  *) fail "run $runs (after $kills kills) exited with status $st" ;;
  esac
  grep -q -e "AddressSanitizer" -e "runtime error" "$tmp/log" && fail "run $runs: sanitizer report"
  g=$(gen_of "$tmp/run")
  g=${g:-0}
  [ "$g" -ge "$last" ] || fail "committed generation went back from $last to $g"
  last=$g
  # the kill interrupted a checkpoint: a temporary of one of its files, or
  # a generation written and not committed
  left=0
  for f in "$tmp/run"/trial0.ckpt.tmp.* "$tmp/run"/trial0.g*; do
    [ -e "$f" ] || continue
    case $f in
    *.tmp.*) left=1 ;;
    *.g$(printf %06d "$g").*) ;;
    *) left=1 ;;
    esac
  done
  [ $st = 137 ] && in_write=$((in_write + left))
done
[ $kills -ge "$KILLS" ] || fail "only $kills kills in $runs runs (the run finished too soon)"
before=$last
"$train" $args --out "$tmp/run" --resume >"$tmp/log" 2>&1 || fail "final resume"
ls "$tmp/run"/*.tmp.* >/dev/null 2>&1 && fail "temporaries left after the final resume"
for f in "$tmp/ref"/trial0.ckpt "$tmp/ref"/trial0.g*; do
  cmp "$f" "$tmp/run/${f##*/}" || fail "final checkpoint differs: ${f##*/}"
done
ref=$(cd "$tmp/ref" && ls | tr '\n' ' ')
got=$(cd "$tmp/run" && ls | tr '\n' ' ')
[ "$ref" = "$got" ] || fail "files differ: '$got' (uninterrupted: '$ref')"
[ $in_write -ge "$MIN_IN_WRITE" ] || fail "only $in_write of $kills kills landed in a checkpoint write"
echo "PASS: $kills kills in $runs runs ($in_write inside a checkpoint write), every resume clean; generation $before reached under the kills, final checkpoint (generation $(gen_of "$tmp/run")) identical"
