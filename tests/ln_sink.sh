#!/bin/sh
# ln_sink.sh -- a `--ln pre` model made exact under stock torch.nn.LayerNorm
# (experiments/ln_stock.py --sink): each layer norm's scale exact through
# its epsilon (eps 4^p, weight 2^p), and one more dimension, the sink,
# always 0 in the residual, whose row in every reader of a layer norm is
# minus the sum of the rows it reads, so the computed mean (a shift common
# to every dimension) cancels.  decoder2_backward_targets at D = 2, M = 5,
# V = 20 (the study's teacher) and decoder3_forward_start (quantized
# widths, float32 only) at the same size, --require-proof --moves one
# --ln pre: on task samples and arm
# samples in the three adversarial orders every input's argmax agrees
# with the compiled model's own arithmetic (held to `rasp apply` by
# apply_parity.sh) in float32 and in float64.  The same variant without
# the sink is printed, not asserted (how many inputs its float32 mean
# breaks depends on PyTorch's summation).  Skipped (77) when
# /usr/bin/python3 has no torch; under RASP_NO_SKIP=1 (lib.sh) that fails.
NAME=ln_sink.sh
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import torch' 2>/dev/null || skip_test "no torch"
fail=0
for spec in "decoder2_backward_targets 2 5 20 40" "decoder3_forward_start 2 5 20 12"; do
  set -- $spec
  stem=$tmp/$1
  if ! "$RASP" compile "programs/$1.rasp" --D "$2" --M "$3" --V "$4" --require-proof --moves one \
         --ln pre -o "$stem" >"$tmp/log" 2>&1 ||
     ! "$RASP" gen --D "$2" --M "$3" --V "$4" -n "$5" --seed 41 --format text --order edge --no-bos \
         --no-eos --st-names >"$stem.task" 2>"$tmp/log" ||
     ! "$RASP" gen --D "$2" --M "$3" --V "$4" -n "$5" --seed 42 --format text --order arm --no-bos \
         --no-eos --st-names 2>"$tmp/log" | $PY experiments/ln_stock.py --orders >"$stem.adv"; then
    cat "$tmp/log"
    fail=1
    continue
  fi
  n=$(wc -l <"$stem.task")
  $PY experiments/ln_stock.py "$stem" "$stem.task" "$stem.adv" 2>/dev/null |
    sed 's/^/  without the sink (not asserted): /' | cut -c1-120
  if ! $PY experiments/ln_stock.py --sink "$stem" "$stem.task" "$stem.adv" >"$tmp/out" 2>"$tmp/err"; then
    cat "$tmp/err"
    bad "$1: ln_stock.py --sink failed"
    continue
  fi
  for set in task adv; do
    for dt in float32 float64; do
      a=$n
      [ $set = adv ] && a=$((n * 3))
      if grep -q "^$1 $1.$set $dt (eps 2^[0-9]*): $a/$a inputs" "$tmp/out"; then
        ok "$1 ($set, $dt): $a/$a inputs agree under torch.nn.LayerNorm with the sink"
      else
        bad "$1 ($set, $dt): not every input agrees" "$tmp/out"
      fi
    done
  done
done
[ $fail = 0 ] || bad "a compile or gen failed"
finish
