#!/bin/sh
# train_mpi_bench.sh -- rasp-train's training rate (tokens per second) on
# one process and on 2 MPI ranks, on this machine.  Not a test.
#
# Arms: one process with 1 and with 2 OpenMP threads (t1, t2), and mpirun
# -np 1 and -np 2 with 1 thread per rank (np1, np2): t2 and np2 use two
# cores each way.  They run in turn (t1 t2 np1 np2, t1 t2 ...: as
# bench/abbench alternates, so that load that comes and goes on a shared
# machine falls on every arm alike); each run's wall time and the 1-minute
# load average just before it are recorded, and the summary gives each
# arm's median.  The rate counts the training tokens (steps x --batch x
# sequence length) over the whole run's wall time (start-up, data and the
# two small evaluations included).  Every run must leave the same model
# (cmp): the result does not depend on the ranks (nor on --threads).
#
# usage (from the source tree; a --with-mpi build without sanitizers):
#   bench/train_mpi_bench.sh [RASP_TRAIN [REPEAT [STEPS]]]
#   defaults: RASP_TRAIN=trainer/rasp-train REPEAT=3 STEPS=8
# Results: bench/out/train_mpi_bench.jsonl (ignored by git), a line per run.
set -eu
train=${1:-trainer/rasp-train}
repeat=${2:-3}
steps=${3:-8}
here=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
if ! "$train" --help | grep -q "runs under mpirun"; then
  echo "train_mpi_bench.sh: $train is not a --with-mpi build" >&2
  exit 2
fi
mkdir -p "$here/out"
log=$here/out/train_mpi_bench.jsonl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
batch=256
# the paper's model (6 layers, d_model 200, 8 heads, d_mlp 800) on D=2,
# M=5: one epoch of STEPS steps, 64 test samples
args="--D 2 --M 5 --V 50 --train $((batch * steps)) --test 64 --batch $batch --micro 32
      --epochs 1 --dropout 0.1"
now() { date +%s.%N; }
i=0
while [ $i -lt "$repeat" ]; do
  for arm in t1 t2 np1 np2; do
    case $arm in
      t1) cmd="$train --threads 1" ;;
      t2) cmd="$train --threads 2" ;;
      np1) cmd="mpirun -np 1 $train --threads 1" ;;
      np2) cmd="mpirun -np 2 --oversubscribe $train --threads 1" ;;
    esac
    rm -rf "$tmp/$arm"
    load=$(cut -d' ' -f1 /proc/loadavg)
    t0=$(now)
    $cmd $args --out "$tmp/$arm" >/dev/null 2>"$tmp/err"
    t1=$(now)
    model=$tmp/$arm/trial0.g000001.safetensors
    if [ -f "$tmp/first" ]; then
      cmp -s "$tmp/first" "$model" || { echo "train_mpi_bench.sh: $arm trained another model" >&2; exit 1; }
    else
      cp "$model" "$tmp/first"
    fi
    len=$(sed -n 's/.*, \([0-9]*\) tokens each$/\1/p' "$tmp/err")
    secs=$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')
    tps=$(echo "$secs $steps $batch $len" | awk '{ printf "%.0f", $2 * $3 * $4 / $1 }')
    echo "{\"arm\":\"$arm\",\"steps\":$steps,\"batch\":$batch,\"seq_len\":$len,\"run\":$i,\"seconds\":$secs,\"tokens_per_s\":$tps,\"load1\":$load,\"cores\":$(nproc)}" |
      tee -a "$log" | tee -a "$tmp/runs"
  done
  i=$((i + 1))
done
awk -F'[{:,}]' '{ for (k = 1; k < NF; k++) { if ($k == "\"arm\"") a = $(k + 1); if ($k == "\"tokens_per_s\"") s = $(k + 1) }
               gsub(/"/, "", a); t[a, ++n[a]] = s }
     END { for (a in n) { m = n[a]; for (x = 1; x <= m; x++) v[x] = t[a, x];
             for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++) if (v[y] < v[x]) { z = v[x]; v[x] = v[y]; v[y] = z }
             med[a] = m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
           printf "median tokens/s: one process 1 thread %.0f, 2 threads %.0f; mpirun -np 1 %.0f, -np 2 %.0f (1 thread each); np2/np1 %.2fx, np2/t2 %.2fx\n",
                  med["t1"], med["t2"], med["np1"], med["np2"], med["np2"] / med["np1"], med["np2"] / med["t2"] }' "$tmp/runs"
