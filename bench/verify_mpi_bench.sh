#!/bin/sh
# verify_mpi_bench.sh -- `rasp verify --exhaustive` on 1 and 2 MPI ranks
# (and one process without mpirun), on this machine.  Not a test.
#
# The arms run in turn, ABCABC... (as bench/abbench does it), so that load
# that comes and goes on a shared machine falls on every arm alike; each
# run's wall time and the 1-minute load average just before it are
# recorded, and the summary gives each arm's median and the speedup of the
# medians.  Every run must print the same table (cmp): the counts do not
# depend on the number of ranks.
#
# usage (from the source tree; a --with-mpi build without sanitizers):
#   bench/verify_mpi_bench.sh [RASP [REPEAT [PROGRAM [D [M]]]]]
#   defaults: RASP=rasp/rasp REPEAT=3 PROGRAM=programs/listing6_causal.rasp D=3 M=4
# Results: bench/out/verify_mpi_bench.jsonl (ignored by git), a line per run.
set -eu
rasp=${1:-rasp/rasp}
repeat=${2:-3}
prog=${3:-programs/listing6_causal.rasp}
D=${4:-3}
M=${5:-4}
here=$(cd "$(dirname "$0")" && pwd)
export RASP_STDLIB=${RASP_STDLIB:-$here/../stdlib}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if ! "$rasp" verify --help | grep -q "runs under mpirun"; then
  echo "verify_mpi_bench.sh: $rasp is not a --with-mpi build" >&2
  exit 2
fi
mkdir -p "$here/out"
log=$here/out/verify_mpi_bench.jsonl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args="verify $prog --D $D --M $M --exhaustive --jobs 1 --quiet --cap 100000000"
now() { date +%s.%N; }
i=0
while [ $i -lt "$repeat" ]; do
  for arm in plain np1 np2; do
    case $arm in
      plain) cmd="$rasp" ;;
      np1) cmd="mpirun -np 1 $rasp" ;;
      np2) cmd="mpirun -np 2 --oversubscribe $rasp" ;;
    esac
    load=$(cut -d' ' -f1 /proc/loadavg)
    t0=$(now)
    $cmd $args >"$tmp/$arm.out" 2>/dev/null || true
    t1=$(now)
    if [ -f "$tmp/first.out" ]; then
      cmp -s "$tmp/first.out" "$tmp/$arm.out" || { echo "verify_mpi_bench.sh: $arm printed another table" >&2; exit 1; }
    else
      cp "$tmp/$arm.out" "$tmp/first.out"
    fi
    secs=$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')
    echo "{\"arm\":\"$arm\",\"program\":\"$(basename "$prog" .rasp)\",\"D\":$D,\"M\":$M,\"run\":$i,\"seconds\":$secs,\"load1\":$load,\"cores\":$(nproc)}" | tee -a "$log" | tee -a "$tmp/runs"
  done
  i=$((i + 1))
done
head -3 "$tmp/first.out"
awk -F'[{:,}]' '{ for (k = 1; k < NF; k++) { if ($k == "\"arm\"") a = $(k + 1); if ($k == "\"seconds\"") s = $(k + 1) }
               gsub(/"/, "", a); t[a, ++n[a]] = s }
     END { for (a in n) { m = n[a]; for (x = 1; x <= m; x++) v[x] = t[a, x];
             for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++) if (v[y] < v[x]) { z = v[x]; v[x] = v[y]; v[y] = z }
             med[a] = m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
           printf "median wall: one process %.2f s, mpirun -np 1 %.2f s, -np 2 %.2f s; speedup np2 vs np1 %.2fx\n",
                  med["plain"], med["np1"], med["np2"], med["np1"] / med["np2"] }' "$tmp/runs"
