#!/bin/sh
# verify_bench.sh -- `rasp verify` against the paper's numpy code on the
# path-star programs (programs/listing*.rasp).  Not a test.
#
# Runs bench/verify_numpy.py (Debian's /usr/bin/python3 with python3-numpy),
# which, for each of the eight listings and each D at M:
#   - draws the verifier's graphs with `rasp gen` (the program's task
#     settings, sample indices 0..N-1 of the seed),
#   - runs the numpy version (the paper's primitives as printed) on N of
#     them, timing program + check per graph,
#   - fails loudly unless rasp's pass/fail verdict on each of those N graphs
#     (from `rasp verify --graphs k`, k = 1..N) is the numpy one, and unless
#     graph 0's output is the same token for token (`rasp run`),
#   - times `rasp verify --jobs 1` at two graph counts and reports graphs/s
#     (CPU time, so other load on the machine does not skew it)
#     from the slope (tracing and start-up drop out) and the ratio.
#
# usage (from the source tree, BUILD configured without sanitizers):
#   bench/verify_bench.sh [BUILD [NUMPY_GRAPHS [RASP_GRAPHS [D [M [REPEAT]]]]]]
# Each side is timed REPEAT times (default 3); the smallest CPU time counts.
#   defaults: BUILD=. NUMPY_GRAPHS=30 RASP_GRAPHS=2000,400000 D=2..5 M=5 REPEAT=3
# Results also go to bench/out/verify_bench.jsonl (ignored by git).
set -eu
build=${1:-.}
ngraphs=${2:-30}
rgraphs=${3:-2000,400000}
D=${4:-2..5}
M=${5:-5}
repeat=${6:-3}
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-/usr/bin/python3}
rasp=$build/rasp/rasp
if [ ! -x "$rasp" ]; then
  echo "verify_bench.sh: no $rasp; build first" >&2
  exit 2
fi
mkdir -p "$here/out"
exec "$python" "$here/verify_numpy.py" --rasp "$rasp" --D "$D" --M "$M" \
  --graphs "$ngraphs" --rasp-graphs "$rgraphs" --repeat "$repeat" \
  --json "$here/out/verify_bench.jsonl"
