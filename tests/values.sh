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
#     (length 5 and 64; shuffle_dyck 5 and 8) prints the same with and
#     without the check.
# (test_values.c checks random graphs of every operation; fuzz.sh's harness
# runs the check on every program it tries.)
NAME=values.sh
. "$(dirname "$0")/lib.sh"

fail=0
pass=0
same_env_sweep RASP_EVAL_CHECK_VALUES 2..4 3..5 200

for p in programs/*.rasp; do
  for size in "--D 2 --M 3 --V 10" "--D 5 --M 5 --V 100"; do
    # shellcheck disable=SC2086
    same_env RASP_COMPILE_CHECK_FACTS "compile $p $size" \
      "$RASP" compile "$p" $size --dry-run --stats
  done
done
for p in examples/*.rasp; do
  voc="a b c" lens="5 64"
  # (shuffle_dyck's tables grow with n: n = 8 is 9.2M parameters)
  case $p in *balanced_parens*) voc="( ) x" ;; *shuffle_dyck*) voc="( ) { }" lens="5 8" ;; esac
  for len in $lens; do
    same_env RASP_COMPILE_CHECK_FACTS "compile $p --length $len" \
      "$RASP" compile "$p" --length "$len" \
      --input-vocab "$voc" --dry-run --stats
  done
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
