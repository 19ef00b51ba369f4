# common.sh -- shared settings and helpers of the compiled-initialisation
# experiments (doc/training-small.md, "The compiled-initialisation
# study").  Sourced by stability.sh, basin.sh and freeze_widen.sh, which
# are run from the repository root after `make`:
#     sh experiments/stability.sh [OUTDIR]
# Each writes its runs, a summary CSV and a gnuplot PNG under OUTDIR
# (default experiments/out/NAME, not committed); the PNGs and summaries
# quoted in doc/training-small.md are copied from there into doc/.
# The task is the one of doc/training-small.md section 1, where random
# initialisation shows the Clever Hans plateau: D = 2, M = 4, |V| = 8,
# decoder-only, Q at the start, edge-wise order, st-names, no BOS/EOS.
# Override the size with D=, M=, V=, the steps with STEPS=, the batch with
# BATCH=.  PAR=N runs N compares at once (default 1: one after the other,
# as the study's runs were, on a machine shared with other work).  Each
# script ends with its wall-clock and CPU time and the load average.
# An arm whose loss, gradient or weights stop being finite is stopped by
# rasp-train (the last column of compare.csv, `stopped`, is that step).
set -eu
top=$(pwd)
RASP=${RASP:-$top/rasp/rasp}
TRAIN=${TRAIN:-$top/trainer/rasp-train}
[ -x "$RASP" ] && [ -x "$TRAIN" ] || { echo "$0: build first (make), run from the repository root" >&2; exit 2; }
D=${D:-2} M=${M:-4} V=${V:-8}
BATCH=${BATCH:-16}
export OMP_NUM_THREADS=1
TASK="--D $D --M $M --V $V --st-names --no-bos --no-eos --model decoder"

# compile PROGRAM STEM: compiles and checks the program for the task
compile() {
  [ -f "$2.safetensors" ] && return 0
  "$RASP" compile "$top/programs/$1.rasp" --D "$D" --M "$M" --V "$V" -o "$2" \
    --stats --check 100 > "$2.compile.txt" 2>&1 || { cat "$2.compile.txt" >&2; exit 1; }
  grep '^check:' "$2.compile.txt" | head -1
}



PAR=${PAR:-1}
# par: after starting a compare in the background, waits when PAR are running
npar=0
par() {
  npar=$((npar + 1))
  [ $((npar % PAR)) -eq 0 ] && wait
  return 0
}
# report START: wall clock since START, CPU of the finished children, load
report() {
  # `times` in this shell, not in a command substitution's subshell (which
  # has no children): its second line is the finished children's time
  times > "$out/.times.$$"
  cpu=$(tail -1 "$out/.times.$$" | awk '{ split($1, u, "m"); split($2, s, "m");
    printf "%.1f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }')
  rm -f "$out/.times.$$"
  echo "wall clock $(( $(date +%s) - $1 )) s; CPU ${cpu} s (user + system of the compares); load average $(cut -d' ' -f1-3 /proc/loadavg)"
}
