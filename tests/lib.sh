# lib.sh -- shared set-up and helpers of the shell test runners.
# Source it with NAME set to the runner's name; it sets RASP (the binary),
# RASP_STDLIB, changes to $top_srcdir and makes a temporary directory $tmp
# that is removed on exit.
#
# Skips: a test that cannot run here (no clang, no pseudo-terminal, no
# torch) calls `skip_test WHY` (the whole test: exit 77, which automake
# counts as SKIP) or `skip_part WHY` (one part; the test goes on).  With
# RASP_NO_SKIP=1 in the environment (.ci/run and the README's test command
# set it) both are failures instead, so a CI machine that lost a tool
# cannot pass by skipping what it was meant to check.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
case $top_builddir in /*) ;; *) top_builddir=$(pwd)/$top_builddir ;; esac
RASP=$top_builddir/rasp/rasp
if [ ! -x "$RASP" ]; then
  echo "$NAME: no binary at $RASP" >&2
  exit 2
fi
RASP_STDLIB=${RASP_STDLIB:-$(cd "$top_srcdir" && pwd)/stdlib}
export RASP_STDLIB
cd "$top_srcdir" || exit 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rasp-$NAME.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

skip_test() { # WHY
  if [ "${RASP_NO_SKIP:-}" = 1 ]; then
    echo "FAIL: $NAME: $1 (RASP_NO_SKIP=1: a skip is a failure)"
    exit 1
  fi
  echo "SKIP: $NAME: $1"
  exit 77
}
# 0 after printing SKIP (go on); 1 after printing FAIL under RASP_NO_SKIP=1
# (the caller counts the failure)
skip_part() { # WHY
  if [ "${RASP_NO_SKIP:-}" = 1 ]; then
    echo "FAIL: $1 (RASP_NO_SKIP=1: a skip is a failure)"
    return 1
  fi
  echo "SKIP: $1"
  return 0
}

# Counting checks: `ok [NAME]` counts one that passed (PASS: NAME, when
# named); `bad WHAT [FILE...]` one that failed: FAIL: WHAT, then the first
# 20 lines of each FILE; `finish` prints "N passed, M failed" and is the
# exit status (last in the runner).
pass=0 fail=0
ok() {
  pass=$((pass + 1))
  if [ $# -gt 0 ]; then echo "PASS: $*"; fi
}
bad() {
  fail=$((fail + 1))
  echo "FAIL: $1"
  shift
  for f in "$@"; do
    if [ -e "$f" ]; then sed "s|^|  $(basename "$f"): |" "$f" | head -20; fi
  done
}
finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" = 0 ]
}
# sanitizer_report FILE: true when FILE holds a report of AddressSanitizer,
# LeakSanitizer or UndefinedBehaviorSanitizer (a sanitizer build's stderr)
sanitizer_report() { grep -q -e AddressSanitizer -e LeakSanitizer -e 'runtime error' "$1"; }
# expect NAME STATUS STDOUT-PATTERN STDERR-PATTERN -- ARGS...: runs rasp
# ARGS (output in $tmp/out and $tmp/err); it passes when it exits STATUS,
# each pattern (grep; empty: anything) matches its stream and no sanitizer
# spoke.
expect() {
  name=$1 want=$2 opat=$3 epat=$4
  shift 5
  "$RASP" "$@" >"$tmp/out" 2>"$tmp/err"
  got=$?
  if [ "$got" = "$want" ] && { [ -z "$opat" ] || grep -q -e "$opat" "$tmp/out"; } &&
    { [ -z "$epat" ] || grep -q -e "$epat" "$tmp/err"; } && ! sanitizer_report "$tmp/err"; then
    ok "$name"
  else
    bad "$name (status $got, wanted $want)" "$tmp/out" "$tmp/err"
  fi
}
# small_decoder2: decoder2_backward_targets compiled at D = 2, M = 3,
# V = 10 (--no-sdpa) as $tmp/d2, and 40 `rasp gen` questions of that task
# (seed 5) in $tmp/q.jsonl, for the tests that read a compiled program's
# values; counts a failure and exits with finish's status when either fails
small_decoder2() {
  if ! "$RASP" compile programs/decoder2_backward_targets.rasp --D 2 --M 3 --V 10 --no-sdpa \
    -o "$tmp/d2" >"$tmp/log" 2>&1; then
    bad "rasp compile decoder2_backward_targets" "$tmp/log"
    finish
    exit 1
  fi
  if ! "$RASP" gen --D 2 --M 3 --V 10 -n 40 --seed 5 --no-bos --no-eos --st-names \
    >"$tmp/q.jsonl" 2>"$tmp/log"; then
    bad "rasp gen" "$tmp/log"
    finish
    exit 1
  fi
}
# study_cell STEM DIR ZERO: DIR made a finished study cell (ARM-sSEED) whose
# model is STEM's weights as arm_ARM.g000001, with the tensor ZERO (if any)
# set to 0, and a config without layout or checksum (as a trained
# checkpoint has); its questions $tmp/q.jsonl (small_decoder2's)
study_cell() {
  mkdir -p "$2"
  cp "$tmp/q.jsonl" "$2/test_questions.jsonl"
  /usr/bin/python3 - "$1" "$2/arm_$(basename "$2" | sed 's/-s[0-9]*$//').g000001" "$3" <<'EOF'
import json, struct, sys
src, dst, zero = sys.argv[1], sys.argv[2], sys.argv[3]
cfg = json.load(open(src + ".json"))["config"]
json.dump({"config": cfg}, open(dst + ".json", "w"))
raw = bytearray(open(src + ".safetensors", "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
if zero:
    a, b = head[zero]["data_offsets"]
    raw[8 + n + a:8 + n + b] = bytes(b - a)
open(dst + ".safetensors", "wb").write(raw)
EOF
}
# use_trainer: $train is the built rasp-train (exit 2 when there is none),
# on one thread of OpenMP and OpenBLAS (reproducible, and fair to the
# other tests running beside it)
use_trainer() {
  train=$top_builddir/trainer/rasp-train
  if [ ! -x "$train" ]; then
    echo "$NAME: no binary at $train" >&2
    exit 2
  fi
  export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
}

# same_env VAR WHAT CMD...: CMD run as it is and with VAR=1 in its
# environment must give the same stdout, stderr and exit status (counted in
# $pass and $fail; a difference is printed).  reference.sh and values.sh
# compare an evaluator or compiler mode with the default this way.
same_env() {
  var=$1 what=$2
  shift 2
  "$@" >"$tmp/f.out" 2>"$tmp/f.err"
  fs=$?
  env "$var=1" "$@" >"$tmp/m.out" 2>"$tmp/m.err"
  ms=$?
  if [ "$fs" != "$ms" ] || ! cmp -s "$tmp/f.out" "$tmp/m.out" || ! cmp -s "$tmp/f.err" "$tmp/m.err"
  then
    echo "FAIL: $what (status $fs, $ms with $var=1)"
    diff "$tmp/f.out" "$tmp/m.out" | head -10 | sed 's/^/    /'
    diff "$tmp/f.err" "$tmp/m.err" | head -10 | sed 's/^/    /'
    fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
}

# same_env_sweep VAR D M GRAPHS: with VAR=1, the golden cases pass, and
# same_env holds for `rasp verify programs/*.rasp --D D --M M --graphs
# GRAPHS`, the sweep, and `rasp run` of the fuzz seeds and the examples on
# three inputs each.
same_env_sweep() {
  var=$1
  if env "$var=1" sh "$top_srcdir/tests/golden.sh" >"$tmp/golden.log" 2>&1; then
    echo "PASS: golden cases with $var=1 ($(tail -1 "$tmp/golden.log"))"
    pass=$((pass + 1))
  else
    grep -v '^PASS' "$tmp/golden.log" | head -40
    echo "FAIL: golden cases with $var=1"
    fail=$((fail + 1))
  fi
  # shellcheck disable=SC2046
  same_env "$var" "verify programs/*.rasp" "$RASP" verify $(ls programs/*.rasp) --D "$2" \
    --M "$3" --graphs "$4" --jobs 2
  # shellcheck disable=SC2046
  same_env "$var" "verify --sweep programs/*.rasp" "$RASP" verify $(ls programs/*.rasp) \
    --D 2 --sweep --graphs 10 --jobs 2
  for f in tests/fuzz_trace_corpus/*.rasp; do
    for input in "a b c ( ) a" "( ( ) ) c b a a" "b"; do
      same_env "$var" "run $f '$input'" "$RASP" run "$f" --input "$input"
    done
  done
  for f in examples/*.rasp; do
    for input in "h e l l o" "3 1 2 3 0 1" "( ) ( ( ) )"; do
      same_env "$var" "run $f '$input'" "$RASP" run "$f" --input "$input"
    done
  done
}
