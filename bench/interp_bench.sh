#!/bin/sh
# interp_bench.sh -- librasp's evaluator against the paper's numpy code.
#
# Runs examples/{reverse,histogram,sort,double_histogram,balanced_parens}.rasp
# on the same COUNT random inputs of length LENGTH with
#   (a) bench/interp_bench (C, librasp: trace once, evaluate all inputs in
#       batches of 64 inputs per run, as rasp verify does, and one input
#       per run), and
#   (b) bench/numpy_rasp.py (the paper's numpy primitives, Debian's
#       /usr/bin/python3 with python3-numpy),
# checks that both give identical outputs on every input (fails loudly
# otherwise) and prints the times per input and the ratios.  Both sides run
# REPEAT times, alternately, and each time is the smallest of its runs (the
# machine is shared; the minimum is the run least disturbed).  Not a test.
#
# usage (from the source tree, after `make bench/interp_bench` in BUILD):
#   bench/interp_bench.sh [BUILD [COUNT [LENGTH [REPEAT]]]]
# Use a build configured without --enable-sanitizers for meaningful times.
set -eu
build=${1:-.}
count=${2:-1000}
length=${3:-32}
repeat=${4:-3}
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

# the smallest value of each column over the runs, per program
minof() {
  awk 'NR == FNR && /\.rasp / { n[$1] = NF; for (i = 2; i <= NF; i++) m[$1, i] = $i; next }
       /\.rasp / { for (i = 2; i <= NF; i++) if ($i < m[$1, i]) m[$1, i] = $i }
       END { for (p in n) { printf "%s", p; for (i = 2; i <= n[p]; i++) printf " %s", m[p, i];
                            printf "\n" } }' "$@"
}
r=1
while [ "$r" -le "$repeat" ]; do
  echo "== run $r of $repeat: librasp (bench/interp_bench, single thread)"
  # shellcheck disable=SC2086
  "$bench" "$out/inputs.txt" "$out/rasp.txt" $files | tee "$out/rasp_times.$r.txt"
  echo "== run $r of $repeat: numpy (the paper's primitives, $python)"
  "$python" "$here/numpy_rasp.py" "$out/inputs.txt" "$out/numpy.txt" | tee "$out/numpy_times.$r.txt"
  r=$((r + 1))
done
minof "$out"/rasp_times.*.txt >"$out/rasp_times.txt"
minof "$out"/numpy_times.*.txt >"$out/numpy_times.txt"
rm -f "$out"/rasp_times.*.txt "$out"/numpy_times.*.txt
echo "== smallest of $repeat runs, us per input: librasp trace ms, batch, B=1"
sort "$out/rasp_times.txt"
echo "== smallest of $repeat runs, us per input: numpy"
sort "$out/numpy_times.txt"

if ! cmp -s "$out/rasp.txt" "$out/numpy.txt"; then
  echo "interp_bench.sh: OUTPUTS DIFFER between librasp and numpy:" >&2
  diff "$out/rasp.txt" "$out/numpy.txt" | head -20 >&2
  exit 1
fi
echo "== outputs identical on all $count inputs x 5 programs"
echo "== numpy time / librasp time, per input"
printf '%-22s %12s %12s\n' program "vs batch 64" "vs B=1"
for p in $progs; do
  r=$(grep "^$p.rasp " "$out/rasp_times.txt")
  np=$(grep "^$p.rasp " "$out/numpy_times.txt" | awk '{print $2}')
  echo "$r" | awk -v np="$np" '{ printf "%-22s %11.0fx %11.0fx\n", $1, np / $3, np / $4 }'
done
