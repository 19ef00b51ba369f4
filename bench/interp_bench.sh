#!/bin/sh
# interp_bench.sh -- librasp's evaluator against the paper's numpy code.
#
# Runs examples/{reverse,histogram,sort,double_histogram,balanced_parens}.rasp
# on the same COUNT random inputs of length LENGTH with
#   (a) bench/interp_bench (C, librasp: trace once, evaluate all inputs in
#       one batch, and one input per run), and
#   (b) bench/numpy_rasp.py (the paper's numpy primitives, Debian's
#       /usr/bin/python3 with python3-numpy),
# checks that both give identical outputs on every input (fails loudly
# otherwise) and prints the times per input and the ratios.  Not a test.
#
# usage (from the source tree, after `make bench/interp_bench` in BUILD):
#   bench/interp_bench.sh [BUILD [COUNT [LENGTH]]]
# Use a build configured without --enable-sanitizers for meaningful times.
set -eu
build=${1:-.}
count=${2:-1000}
length=${3:-32}
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
python=${PYTHON:-/usr/bin/python3}
bench=$build/bench/interp_bench
if [ ! -x "$bench" ]; then
  echo "interp_bench.sh: no $bench; run 'make bench/interp_bench' in $build" >&2
  exit 2
fi
out=$here/out
mkdir -p "$out"
export RASP_STDLIB=${RASP_STDLIB:-$top/stdlib}

"$python" "$here/gen_inputs.py" "$count" "$length" 1 >"$out/inputs.txt"
progs="reverse histogram sort double_histogram balanced_parens"
files=
for p in $progs; do files="$files $top/examples/$p.rasp"; done

echo "== librasp (bench/interp_bench, single thread)"
# shellcheck disable=SC2086
"$bench" "$out/inputs.txt" "$out/rasp.txt" $files | tee "$out/rasp_times.txt"
echo "== numpy (the paper's primitives, $python)"
"$python" "$here/numpy_rasp.py" "$out/inputs.txt" "$out/numpy.txt" | tee "$out/numpy_times.txt"

if ! cmp -s "$out/rasp.txt" "$out/numpy.txt"; then
  echo "interp_bench.sh: OUTPUTS DIFFER between librasp and numpy:" >&2
  diff "$out/rasp.txt" "$out/numpy.txt" | head -20 >&2
  exit 1
fi
echo "== outputs identical on all $count inputs x 5 programs"
echo "== numpy time / librasp time, per input"
printf '%-22s %12s %12s\n' program "vs batch" "vs B=1"
for p in $progs; do
  r=$(grep "^$p.rasp " "$out/rasp_times.txt")
  np=$(grep "^$p.rasp " "$out/numpy_times.txt" | awk '{print $2}')
  echo "$r" | awk -v np="$np" '{ printf "%-22s %11.0fx %11.0fx\n", $1, np / $3, np / $4 }'
done
