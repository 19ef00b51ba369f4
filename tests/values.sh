#!/bin/sh
# values.sh -- the value facts of rfacts.h (raspF_values: every node's kinds
# and bounds) against what the evaluator computes, through the binary: with
# RASP_EVAL_CHECK_VALUES=1 every run checks every value it holds against its
# node's fact for the run's tokens (an internal error otherwise), so
#   - the golden cases (tests/golden.sh) pass in that mode;
#   - the programs' verdicts: `rasp verify programs/*.rasp` on random graphs
#     at small sizes prints the same table as without the check;
#   - the fuzz seeds (tests/fuzz_trace_corpus) and the examples under
#     `rasp run` on a few inputs give the same output, errors and status;
#   - the compiler's exact value sets: with RASP_COMPILE_CHECK_FACTS=1 the
#     planner checks every value of every node's view against the node's
#     fact (an internal error otherwise), so `rasp compile --dry-run
#     --stats` of every program (D=2 M=3 V=10, D=5 M=5 V=100) and example
#     (length 5 and 64) prints the same with and without the check.
# (test_values.c checks random graphs of every operation; fuzz.sh's harness
# runs the check on every program it tries.)
NAME=values.sh
. "$(dirname "$0")/lib.sh"

fail=0
pass=0
# same WHAT CMD...: CMD without and with the check (the variable in $check,
# RASP_EVAL_CHECK_VALUES unless set): same stdout, stderr, status
same() {
  what=$1
  shift
  "$@" >"$tmp/f.out" 2>"$tmp/f.err"
  fs=$?
  env "${check:-RASP_EVAL_CHECK_VALUES}=1" "$@" >"$tmp/c.out" 2>"$tmp/c.err"
  cs=$?
  if [ "$fs" != "$cs" ] || ! cmp -s "$tmp/f.out" "$tmp/c.out" || ! cmp -s "$tmp/f.err" "$tmp/c.err"
  then
    echo "FAIL: $what (status $fs, $cs with the check)"
    diff "$tmp/f.out" "$tmp/c.out" | head -10 | sed 's/^/    /'
    diff "$tmp/f.err" "$tmp/c.err" | head -10 | sed 's/^/    /'
    fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
}

if RASP_EVAL_CHECK_VALUES=1 sh "$top_srcdir/tests/golden.sh" >"$tmp/golden.log" 2>&1; then
  echo "PASS: golden cases with every value checked ($(tail -1 "$tmp/golden.log"))"
  pass=$((pass + 1))
else
  grep -v '^PASS' "$tmp/golden.log" | head -40
  echo "FAIL: golden cases with every value checked"
  fail=$((fail + 1))
fi

# shellcheck disable=SC2046
same "verify programs/*.rasp" "$RASP" verify $(ls programs/*.rasp) --D 2..4 --M 3..5 \
  --graphs 200 --jobs 2
same "verify --sweep programs/*.rasp" "$RASP" verify $(ls programs/*.rasp) --D 2 \
  --sweep --graphs 10 --jobs 2

for f in tests/fuzz_trace_corpus/*.rasp; do
  for input in "a b c ( ) a" "( ( ) ) c b a a" "b"; do
    same "run $f '$input'" "$RASP" run "$f" --input "$input"
  done
done
for f in examples/*.rasp; do
  for input in "h e l l o" "3 1 2 3 0 1" "( ) ( ( ) )"; do
    same "run $f '$input'" "$RASP" run "$f" --input "$input"
  done
done

check=RASP_COMPILE_CHECK_FACTS
for p in programs/*.rasp; do
  for size in "--D 2 --M 3 --V 10" "--D 5 --M 5 --V 100"; do
    # shellcheck disable=SC2086
    same "compile $p $size" "$RASP" compile "$p" $size --dry-run --stats
  done
done
for p in examples/*.rasp; do
  voc="a b c"
  case $p in *balanced_parens*) voc="( ) x" ;; esac
  for len in 5 64; do
    same "compile $p --length $len" "$RASP" compile "$p" --length "$len" \
      --input-vocab "$voc" --dry-run --stats
  done
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
