#!/bin/sh
# study.sh -- the compiled-initialisation study's grid: every arm on every
# seed, one `rasp-train compare` per (arm, seed), on the task where the
# question space dwarfs any training set.  Run from the repository root
# after `make`:
#     sh experiments/study.sh [--resume] [--arms "standard compiled ..."]
#        [--seeds "1 2 3 4 5"]
# Task: D = 2, M = 5, |V| = 20, decoder-only, teacher forcing, Q first,
# edges shuffled every epoch, --st-names, no BOS/EOS (the compiled models'
# format): 390,700,800 distinct questions, so 100,000 training draws hold
# 0.03% of them and the test set (2,000 questions, 500 evaluated) is
# disjoint from training by what the model reads (rasp-train checks it and
# records split.json).
# Recipe, the same for every arm: AdamW, lr 5e-4 (the paper's), linear
# warm-up over 500 steps, cosine decay to 0.1 x lr at the budget, gradient
# norm clipped to 1, weight decay 0.01 (the paper's), dropout 0 (a compiled
# circuit does not survive dropout untrained; every arm goes without it),
# batch 64, STEPS (default 10,000) steps, evaluation every 250 steps.
# Arms (an arm of one seed sees the same batches as every other arm of
# that seed, but structured, whose training set has the variants):
#   standard   pre-LN, the paper's shape: 6 layers, d_model 200, 8 heads,
#              d_mlp 800 (the paper's task is of this size: M = 5)
#   random     random weights of the compiled architecture (no layer norm)
#   compiled   decoder2_backward_targets compiled --require-proof --moves
#              one (9 layers, d_model 233, 1.2M parameters), gain 1
#   lowgain    the same program compiled with --attn-gain 0.25
#   frozen     the compiled model frozen, widened by 64 trainable dims
#   structured the standard arm on --structured 1 (the paper's remedy; its
#              Table 1, exp. 9, has it fail for the decoder on edge-wise
#              graphs, this task)
#   armwise    the standard arm on graphs written arm by arm (--order arm;
#              the paper's exp. 5, solved on every trial at D = 2 to 5):
#              the positive control, that this recipe and budget learn l_t
#              where the task allows it (its test questions are written arm
#              by arm too)
#   taught     a random start of the compiled architecture taught by the
#              compiled program (--teacher, weight 100: its loss starts
#              near the task's; annealed to 0 at half the budget, so what
#              is left at the end is learned)
#   compiledln the same program compiled --ln pre: the compiled start in
#              the pre-LN architecture (a layer norm before every attention,
#              MLP and the readout, each proven exactly the identity at step
#              0; not in the default list: --arms compiledln)
#   cstock     the same program compiled --ln stock: the compiled start in
#              the pre-LN architecture with stock layer norms (epsilon 4^p,
#              sink dimensions; every read charged the norms' rounding),
#              which rasp-train runs in its own float32 layer norm, a random
#              pre-LN start's code path (not in the default list: --arms
#              cstock)
#   stdtaught  the standard arm taught by the compiled program through the
#              linear map fitted on each batch (its state at each depth
#              against the program's at the same depth), weight 100,
#              annealed to 0 at half the budget (not in the default list:
#              --arms stdtaught)
#   taughtcat  taught as taught is, by the same program compiled with every
#              value one-hot (--encoding categorical: d_model 265), in that
#              architecture: a random start of it, the teacher's weight
#              100 annealed to 0 at half the budget (not in the default
#              list: --arms taughtcat)
#   taughtattn taughtcat with every head's attention pattern pulled too
#              (--teacher-attn 100) and the teacher's weight 1000, both
#              annealed to 0 at half the budget (not in the default list)
#   randcat    a random start of that one-hot architecture, untaught: the
#              control taughtcat and taughtattn are matched to (the random
#              arm is the numerical architecture; not in the default list)
# Each finished cell leaves doc/study/grid/ARM-sSEED.csv (compare.csv),
# ARM-sSEED.config.txt, ARM-sSEED.split.json and a line in
# doc/study/grid/timing.csv (wall and CPU seconds, load average); --resume
# skips finished cells, and a killed cell resumes from its last evaluation
# (rasp-train compare --resume; its wall and CPU times then count only the
# last part).  Cells run arm by arm,
# each arm's seeds in turn.  STUDY_OUT, STEPS, KEEP, TRAIN, RASP override.  Run directories with
# checkpoints go under $STUDY_WORK (default study-work/, not committed).
# experiments/study_tables.py makes the tables and plots from the CSVs.
set -eu
top=$(pwd)
RASP=${RASP:-$top/rasp/rasp}
TRAIN=${TRAIN:-$top/trainer/rasp-train}
[ -x "$RASP" ] && [ -x "$TRAIN" ] || { echo "$0: build first (make), run from the repository root" >&2; exit 2; }
STEPS=${STEPS:-10000}
WORK=${STUDY_WORK:-$top/study-work}
OUT=${STUDY_OUT:-$top/doc/study/grid}
arms="standard compiled random frozen structured lowgain taught armwise"
seeds="1 2 3 4 5"
resume=0
while [ $# -gt 0 ]; do
  case $1 in
    --resume) resume=1 ;;
    --arms) arms=$2; shift ;;
    --seeds) seeds=$2; shift ;;
    *) echo "usage: $0 [--resume] [--arms LIST] [--seeds LIST]" >&2; exit 2 ;;
  esac
  shift
done
# every arm and seed named before any cell runs (a grid takes hours)
for arm in $arms; do
  case " standard structured armwise random compiled lowgain compiledln cstock frozen taught stdtaught taughtcat taughtattn randcat " in
    *" $arm "*) ;;
    *) echo "$0: unknown arm $arm" >&2; exit 2 ;;
  esac
done
for seed in $seeds; do
  case $seed in '' | *[!0-9]*) echo "$0: a seed is a number, not '$seed'" >&2; exit 2 ;; esac
done
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
mkdir -p "$WORK" "$OUT"
TASK="--D 2 --M 5 --V 20 --st-names --no-bos --no-eos --model decoder"
RECIPE="--lr 5e-4 --warmup 500 --decay cosine --lr-floor 0.1 --clip 1 --wd 0.01 --dropout 0"
# every arm's model is also kept at steps KEEP, 2 KEEP, ... in its run
# directory (arm_ARM.stepN: what it computed on the way, for
# program_units.py --step N); keeping changes nothing the arms compute
KEEP=${KEEP:-2500}
RUN="--train 100000 --test 2000 --batch 64 --micro 64 --max-steps $STEPS --eval-every 250 \
  --keep-every $KEEP \
  --epochs 1000 --threads 1 --progress 500"
STD="--layers 6 --d-model 200 --heads 8 --d-mlp 800 --ln pre --act relu"

# compile STEM [OPTIONS]: decoder2 for the task, proven, checked on 1000 inputs;
# --no-sdpa keeps d_head as the heads need it (33), the architecture every
# cell of the grid was run in (the default pads it to 256 for PyTorch's
# scaled_dot_product_attention)
compile() {
  stem=$1
  shift
  [ -f "$stem.safetensors" ] && return 0
  "$RASP" compile "${PROG:-$top/programs/decoder2_backward_targets.rasp}" --D 2 --M 5 --V 20 \
    --require-proof --moves one --no-sdpa --check 1000 --stats "$@" -o "$stem" >"$stem.compile.txt" 2>&1 ||
    { cat "$stem.compile.txt" >&2; exit 1; }
}
compile "$WORK/d2"
compile "$WORK/d2g" --attn-gain 0.25
case " $arms " in *" compiledln "*) compile "$WORK/d2ln" --ln pre ;; esac
case " $arms " in *" cstock "*) compile "$WORK/d2stock" --ln stock ;; esac
case " $arms " in *" taughtcat "* | *" taughtattn "* | *" randcat "*) compile "$WORK/d2c" --encoding categorical ;; esac
# armwise's task is written arm by arm: rasp-train takes the layout from the
# --init model, so the same program declared for that order (a program
# right for every order of the edges is right for this one; --check says so)
case " $arms " in *" armwise "*)
  sed -e "s|include('|include('$top/programs/|" -e "s|order='edge'|order='arm'|" \
    "$top/programs/decoder2_backward_targets.rasp" >"$WORK/d2arm.rasp"
  PROG=$WORK/d2arm.rasp compile "$WORK/d2arm" --allow-include "$top/programs" ;;
esac

# what ran a cell, recorded atop its config.txt: the trainer's version and
# its binary's digest, the source revision of this checkout (with "-dirty"
# where tracked files differ from it) and the digest of the model the cell
# starts from or is taught by (a binary built from another tree, or a
# compiler that writes other weights, shows as another digest)
digest() { sha256sum "$1" | cut -c1-16; }
rev=$(git -C "$top" rev-parse --short=12 HEAD 2>/dev/null) || rev="not a git checkout"
[ -n "$(git -C "$top" status --porcelain --untracked-files=no 2>/dev/null)" ] && rev="$rev-dirty"
build="$("$TRAIN" --version) (sha256 $(digest "$TRAIN")), rasp (sha256 $(digest "$RASP")), source $rev"

[ -f "$OUT/timing.csv" ] ||
  echo "arm,seed,steps,wall_s,cpu_s,load_start,load_end,from_step" >"$OUT/timing.csv"
for arm in $arms; do
  for seed in $seeds; do
    cell=$arm-s$seed
    if [ $resume = 1 ] && [ -f "$OUT/$cell.csv" ]; then continue; fi
    init=$WORK/d2 extra=
    case $arm in
      standard) spec="standard standard" ;;
      structured) spec="structured standard" extra="--structured 1" ;;
      armwise) spec="armwise standard" extra="--order arm" init=$WORK/d2arm ;;
      random) spec="random random" ;;
      compiled) spec="compiled compiled" ;;
      lowgain) spec="lowgain compiled" init=$WORK/d2g ;;
      compiledln) spec="compiledln compiled" init=$WORK/d2ln ;;
      cstock) spec="cstock compiled" init=$WORK/d2stock ;;
      frozen) spec="frozen compiled --freeze compiled --widen 64" ;;
      taught) spec="taught random --teacher $WORK/d2 --teacher-weight 100 --teacher-until $((STEPS / 2))" ;;
      taughtcat) spec="taughtcat random --teacher $WORK/d2c --teacher-weight 100 --teacher-until $((STEPS / 2))"
        init=$WORK/d2c ;;
      taughtattn) spec="taughtattn random --teacher $WORK/d2c --teacher-weight 1000 --teacher-attn 100 --teacher-until $((STEPS / 2))"
        init=$WORK/d2c ;;
      randcat) spec="randcat random" init=$WORK/d2c ;;
      stdtaught) spec="stdtaught standard --teacher $WORK/d2 --teacher-weight 100 --teacher-until $((STEPS / 2))" ;;
      *) echo "$0: unknown arm $arm" >&2; exit 2 ;;
    esac
    dir=$WORK/$cell
    [ $resume = 1 ] || rm -rf "$dir"
    # a resumed cell's times cover its steps from the saved one on
    from=0
    [ -f "$dir/compare.state" ] && from=$(awk '$1 == "step" { print $2 }' "$dir/compare.state")
    l0=$(cut -d' ' -f1 /proc/loadavg)
    t0=$(date +%s)
    # shellcheck disable=SC2086
    /usr/bin/time -f "%U %S" -o "$WORK/$cell.time" \
      nice "$TRAIN" compare $TASK $extra --init "$init" $STD $RECIPE $RUN --seed "$seed" \
      --arm "$spec" --out "$dir" --resume >>"$WORK/$cell.log" 2>&1 ||
      { echo "$0: $cell failed; see $WORK/$cell.log" >&2; tail -5 "$WORK/$cell.log" >&2; exit 1; }
    t1=$(date +%s)
    cpu=$(awk '{ print $1 + $2 }' "$WORK/$cell.time")
    # the record names the run directory from the repository root, not as
    # this checkout's absolute path
    models=
    for f in $init ${spec#*--teacher }; do
      case $f,$models in
        *", ${f##*/}.safetensors "*) ;;
        "$WORK"/*) [ -f "$f.safetensors" ] && models="$models, ${f##*/}.safetensors sha256 $(digest "$f.safetensors")" ;;
      esac
    done
    { echo "# build: $build$models"; sed "s|$top/||g" "$dir/config.txt"; } >"$OUT/$cell.config.txt"
    cp "$dir/split.json" "$OUT/$cell.split.json"
    cp "$dir/compare.csv" "$OUT/$cell.csv.tmp" && mv "$OUT/$cell.csv.tmp" "$OUT/$cell.csv"
    echo "$arm,$seed,$STEPS,$((t1 - t0)),$cpu,$l0,$(cut -d' ' -f1 /proc/loadavg),$from" >>"$OUT/timing.csv"
    echo "$cell: $((t1 - t0)) s; $(tail -1 "$dir/compare.csv" | cut -d, -f1-6)"
    # the two resume slots are not needed once the cell is done
    rm -f "$dir"/arm_*.slot[01].* "$dir/compare.state"
  done
done
