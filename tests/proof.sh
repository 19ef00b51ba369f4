#!/bin/sh
# proof.sh -- `rasp compile --require-proof` (doc/compiler.md, "Proof-driven
# fp32"), through the binary: fp32 chooses its encodings by the rounding
# proof, as fp16 and bf16 always do.
#   - a model the bound already proves whole (reverse) is byte for byte the
#     default one;
#   - readout3 at D = 5, M = 5, V = 100 (4 units the bound does not prove
#     numerically at the default) compiles with those nodes one-hot: --stats
#     says every unit is proven and how many nodes fell back, the model is
#     wider than the default one, and --check agrees on every input;
#   - histogram at n = 128, whose width cannot be proven in fp32 and has no
#     categorical encoding, is refused at its line with a caret (status 1),
#     where the default compiles it and says how many units are unproven.
# Prints "N passed, M failed".
NAME=proof
. "${top_srcdir:-.}/tests/lib.sh"

"$RASP" compile examples/reverse.rasp --input-vocab 'a b c' --length 8 -o "$tmp/r0" ||
  bad "compile reverse"
"$RASP" compile examples/reverse.rasp --input-vocab 'a b c' --length 8 -o "$tmp/r1" \
  --require-proof || bad "compile reverse --require-proof"
cmp -s "$tmp/r0.safetensors" "$tmp/r1.safetensors" && ok "reverse: proven whole, the same weights" ||
  bad "reverse: --require-proof changed a model the bound proves"

P="programs/readout3_forward_start.rasp --D 5 --M 5 --V 100"
# shellcheck disable=SC2086
expect "readout3 default: 4 units unproven" 0 \
  '^fp32: proven exact against rounding: 14 of 18 heads, MLP units and readout; not proven: 4' '' \
  -- compile $P --dry-run --stats
d0=$(sed -n 's/^d_model \([0-9]*\),.*/\1/p' "$tmp/out")
# shellcheck disable=SC2086
expect "readout3 --require-proof: all proven, 4 nodes one-hot" 0 \
  '^fp32: every head, MLP unit and the readout proven against rounding; 4 nodes compiled categorically' '' \
  -- compile $P --dry-run --stats --check 200 --require-proof
d1=$(sed -n 's/^d_model \([0-9]*\),.*/\1/p' "$tmp/out")
if [ -n "$d0" ] && [ -n "$d1" ] && [ "$d1" -gt "$d0" ] &&
   grep -q '^check: 200/200 inputs agree with the interpreter' "$tmp/out"; then
  ok "readout3 --require-proof: d_model $d0 -> $d1, 200/200"
else
  bad "readout3 --require-proof: d_model '$d0' -> '$d1'" "$tmp/out"
fi

expect "histogram n = 128 default: compiled, its readout unproven" 0 \
  'not proven: 1, the first %5 (sel_width) at examples/histogram\.rasp:11:12' '' \
  -- compile examples/histogram.rasp --input-vocab 'a b c' --length 128 --dry-run --stats
expect "histogram n = 128 --require-proof: refused at the width" 1 '' \
  'examples/histogram\.rasp:11:12: compile: %5 (sel_width) cannot be compiled exactly in fp32' \
  -- compile examples/histogram.rasp --input-vocab 'a b c' --length 128 --dry-run --require-proof
grep -q '^ *\^' "$tmp/err" && ok "histogram: a caret" || bad "histogram: no caret" "$tmp/err"
finish
