#!/bin/sh
# callgrind_eval.sh -- the evaluator's and the verifier's instruction counts
# (valgrind --tool=callgrind) in two builds, for changes whose effect on
# speed is smaller than a loaded machine's wall-clock noise.  Not a test.
#
# For each of the five programs of bench/interp_bench.sh it runs
# bench/interp_bench on the same COUNT inputs of length LENGTH (batches of 64
# and one input per run) and reports the instructions inside raspE_run
# (inclusive; tracing, start-up and printing left out) and the program's
# total; then `rasp verify` on two path-star programs (GRAPHS graphs at
# D = 2..3, M = 5, one job) and reports the total.  Outputs must be the
# same in both builds (it fails otherwise).
#
# usage (from the source tree; both builds configured without sanitizers,
# with `make bench/interp_bench` done in each):
#   bench/callgrind_eval.sh OLD_BUILD NEW_BUILD [COUNT [LENGTH [GRAPHS]]]
#   defaults: COUNT=300 LENGTH=32 GRAPHS=2000
set -eu
old=$1
new=$2
count=${3:-300}
length=${4:-32}
graphs=${5:-2000}
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
export RASP_STDLIB=${RASP_STDLIB:-$top/stdlib}
out=$(mktemp -d "${TMPDIR:-/tmp}/callgrind_eval.XXXXXX")
trap 'rm -rf "$out"' EXIT INT TERM
python3 "$here/gen_inputs.py" "$count" "$length" 1 >"$out/inputs.txt"

# cg BUILD LABEL NAME CMD...: CMD of BUILD under callgrind, profile in $out
cg() {
  b=$1 label=$2 name=$3
  shift 3
  "$b/libtool" --mode=execute valgrind --tool=callgrind \
    --callgrind-out-file="$out/$label.$name.cg" "$@" >"$out/$label.$name.out" 2>"$out/$label.$name.log"
}
total() { grep -o 'Collected : [0-9]*' "$1" | awk '{print $3}'; }
inrun() {
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
    awk '/reval\.c:raspE_run / { v = $1; gsub(",", "", v); print v; exit }'
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f%%", (b - a) * 100 / a }'; }

printf '%-18s %14s %14s %8s %14s %14s %8s\n' program "raspE_run old" "new" "" "total old" "new" ""
for p in reverse histogram sort double_histogram balanced_parens; do
  for l in old new; do
    b=$old
    [ "$l" = new ] && b=$new
    cg "$b" "$l" "$p" "$b/bench/interp_bench" "$out/inputs.txt" "$out/$l.$p.txt" \
      "$top/examples/$p.rasp"
  done
  cmp -s "$out/old.$p.txt" "$out/new.$p.txt" || { echo "$p: outputs differ" >&2; exit 1; }
  ro=$(inrun "$out/old.$p.cg") rn=$(inrun "$out/new.$p.cg")
  to=$(total "$out/old.$p.log") tn=$(total "$out/new.$p.log")
  printf '%-18s %14s %14s %8s %14s %14s %8s\n' "$p" "$ro" "$rn" "$(pct "$ro" "$rn")" "$to" "$tn" \
    "$(pct "$to" "$tn")"
done
for p in listing6_causal_fixed listing2_backward_targets; do
  for l in old new; do
    b=$old
    [ "$l" = new ] && b=$new
    cg "$b" "$l" "$p" "$b/rasp/rasp" verify "$top/programs/$p.rasp" --D 2..3 --M 5 \
      --graphs "$graphs" --jobs 1
  done
  cmp -s "$out/old.$p.out" "$out/new.$p.out" || { echo "$p: verdicts differ" >&2; exit 1; }
  to=$(total "$out/old.$p.log") tn=$(total "$out/new.$p.log")
  printf '%-18s %14s %14s %8s %14s %14s %8s\n' "verify ${p%%_*}" "" "" "" "$to" "$tn" \
    "$(pct "$to" "$tn")"
done
