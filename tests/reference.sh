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
# same WHAT CMD...: runs CMD in both modes and compares stdout, stderr, status
same() {
  what=$1
  shift
  "$@" >"$tmp/f.out" 2>"$tmp/f.err"
  fs=$?
  RASP_EVAL_REFERENCE=1 "$@" >"$tmp/r.out" 2>"$tmp/r.err"
  rs=$?
  if [ "$fs" != "$rs" ] || ! cmp -s "$tmp/f.out" "$tmp/r.out" || ! cmp -s "$tmp/f.err" "$tmp/r.err"
  then
    echo "FAIL: $what (status $fs fast, $rs reference)"
    diff "$tmp/f.out" "$tmp/r.out" | head -10 | sed 's/^/    /'
    diff "$tmp/f.err" "$tmp/r.err" | head -10 | sed 's/^/    /'
    fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
}

if RASP_EVAL_REFERENCE=1 sh "$top_srcdir/tests/golden.sh" >"$tmp/golden.log" 2>&1; then
  echo "PASS: golden cases in reference mode ($(tail -1 "$tmp/golden.log"))"
  pass=$((pass + 1))
else
  grep -v '^PASS' "$tmp/golden.log" | head -40
  echo "FAIL: golden cases in reference mode"
  fail=$((fail + 1))
fi

# shellcheck disable=SC2046
same "verify programs/*.rasp" "$RASP" verify $(ls programs/*.rasp) --D 2..3 --M 3..4 \
  --graphs 40 --jobs 2
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
