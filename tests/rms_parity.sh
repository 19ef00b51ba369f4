#!/bin/sh
# rms_parity.sh -- pre-RMSNorm compiled models (`rasp compile --ln rms`) in
# stock PyTorch arithmetic: tests/rms_parity.py runs each with its own RMS
# norm (x * torch.rsqrt(x.pow(2).mean(-1) + eps) * weight) in float32 and,
# where the model lists it, float64, as stored and with its residual
# dimensions and hidden units permuted, and requires rasp apply's argmax
# at every position.  Models: decoder1 at D = 2, M = 3, V = 10 (exact in
# float32 and float64) and decoder4 at D = 2, M = 3, V = 40 (node ids
# numerical; float32 only), --require-proof --moves one.  Inputs: task
# samples in edge order, arm-order samples in the three adversarial orders
# of experiments/ln_stock.py --orders, each sample's symbols scrambled, and
# one symbol repeated.  Skipped (77) when /usr/bin/python3 has no torch;
# under RASP_NO_SKIP=1 (lib.sh) that fails instead.
NAME=rms_parity.sh
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import torch' 2>/dev/null || skip_test "no torch"
fail=0
for spec in "decoder1_back_target 10" "decoder4_log_meet 40"; do
  set -- $spec
  stem=$tmp/$1
  if ! "$RASP" compile "programs/$1.rasp" --D 2 --M 3 --V "$2" --require-proof --moves one \
         --ln rms -o "$stem" >"$tmp/log" 2>&1 ||
     ! "$RASP" gen --D 2 --M 3 --V "$2" -n 6 --seed 11 --format text --order edge --no-bos \
         --no-eos --st-names >"$stem.in" 2>"$tmp/log" ||
     ! "$RASP" gen --D 2 --M 3 --V "$2" -n 3 --seed 12 --format text --order arm --no-bos \
         --no-eos --st-names 2>"$tmp/log" | $PY experiments/ln_stock.py --orders >>"$stem.in"; then
    cat "$tmp/log"
    fail=1
    continue
  fi
  cp "$stem.in" "$stem.task"
  awk '{ s = 5 + NR; for (i = NF; i > 1; i--) { s = (s * 1103515245 + 12345) % 2147483648;
      j = 1 + int(s / 65536) % i; t = $i; $i = $j; $j = t } print }' "$stem.task" >>"$stem.in"
  awk 'NR == 1 { line = ""; for (i = 1; i <= NF; i++) line = line (i > 1 ? " " : "") $5; print line }' \
    "$stem.task" >>"$stem.in"
  $PY tests/rms_parity.py "$RASP" "$stem" "$stem.in" 7 || fail=1
done
exit $fail
