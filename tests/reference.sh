#!/bin/sh
# reference.sh -- the evaluator's reference mode (RASP_EVAL_REFERENCE=1,
# rasp/reval_ref.c) against its fast kernels, through the binary:
#   - the golden cases (tests/golden.sh) pass in reference mode too;
#   - the programs' verdicts: `rasp verify programs/*.rasp` at small sizes
#     prints the same table in both modes, with the same exit status;
#   - the fuzz seeds (tests/fuzz_trace_corpus) and the examples under
#     `rasp run` on a few inputs: the same output, errors and exit status.
# (fuzz.sh's harness also compares the two modes on every input it tries.)
# And the kernel counters through `rasp trace --explain`: the fast paths
# the evaluator promises run (prefix sums on a causal balance, sorting for
# `lt`, the gather of x[i]), and with RASP_EVAL_REFERENCE=1 only the
# reference kernel does.
NAME=reference.sh
. "$(dirname "$0")/lib.sh"

fail=0
pass=0
same_env_sweep RASP_EVAL_REFERENCE 2..3 3..4 40

# explain WANT ARGS...: `rasp trace ARGS --explain` prints the line WANT
explain() {
  want=$1
  shift
  "$RASP" trace "$@" --explain >"$tmp/x.out" 2>&1
  if grep -qxF "$want" "$tmp/x.out"; then
    pass=$((pass + 1))
  else
    echo "FAIL: rasp trace $* --explain: no line '$want'"
    sed -n '/^kernels/,$p' "$tmp/x.out" | sed 's/^/    /'
    fail=$((fail + 1))
  fi
}
explain "%8 = aggregate  # balance: kernel prefix x1" examples/balanced_parens.rasp --input "( ) ("
explain "%8 = sel_width  # target_pos: kernel sorted x1" examples/sort.rasp --input "3 1 2"
explain "%10 = aggregate: kernel direct x1" examples/sort.rasp --input "3 1 2"
explain "%8 = aggregate: kernel gather x1" examples/reverse.rasp --input "a b c"
explain "%8 = sel_width: kernel hash-join x1" examples/double_histogram.rasp --input "a b b"

# the mode is really on: the reference kernel ran, and no other
RASP_EVAL_REFERENCE=1 "$RASP" trace examples/sort.rasp --input "3 1 2" --explain >"$tmp/x.out" 2>&1
if grep -qxF "%10 = aggregate: kernel reference x1" "$tmp/x.out" &&
  ! grep '^%.*: kernel ' "$tmp/x.out" | grep -v ': kernel reference x1$' | grep -q .; then
  pass=$((pass + 1))
else
  echo "FAIL: --explain under RASP_EVAL_REFERENCE=1 shows other kernels:"
  sed 's/^/    /' "$tmp/x.out" | head -20
  fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
