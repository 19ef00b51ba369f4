#!/bin/sh
# ln_rms.sh -- `rasp compile --ln rms` (doc/compiler.md, "Pre-RMSNorm
# models"), through the binary: RMS norms before every sublayer and the
# readout, each made the identity on what the model reads in any
# summation order.
#   - decoder4 at D = 5, M = 5, V = 100 (--require-proof --moves one) is
#     proven whole with its RMS norms, at most 6 dimensions wider than
#     without them, and exact on --check in the C order and reversed,
#     pairwise and permuted (the sparse pass and, with
#     RASP_COMPILE_DENSE=1, raspN_forward); STEM.json says layer_norm 2,
#     names the constants and has no norm biases;
#   - histogram at n = 128 (a quantized width: 2^23 in the residual) is
#     proven and exact in those orders; `rasp apply` gives the model
#     without norms' output and logits;
#   - readout3 (non-causal) is exact;
#   - --ln rms in bf16 is a usage error.
# Prints "N passed, M failed".
NAME=ln_rms
. "${top_srcdir:-.}/tests/lib.sh"
P="programs/decoder4_log_meet.rasp --D 5 --M 5 --V 100 --require-proof --moves one"
# shellcheck disable=SC2086
expect "decoder4 --ln rms: every RMS norm proven the identity" 0 \
  '^layer norm: pre-RMSNorm (--ln rms), .*every RMS norm proven exactly the identity' '' \
  -- compile $P --ln rms -o "$tmp/d4" --stats --check 100 --check-orders perm,rev,pair
d0=$(sed -n 's/^layer norm: pre-RMSNorm (--ln rms), d_model [0-9]* = \([0-9]*\) .*/\1/p' "$tmp/out")
d1=$(sed -n 's/^d_model \([0-9]*\),.*/\1/p' "$tmp/out")
if grep -q '^fp32: proven exact against rounding: 36 of 36 heads, MLP units and readout$' "$tmp/out" &&
   grep -q '^check: 100/100 inputs agree with the interpreter' "$tmp/out" &&
   [ "$(grep -c '^check order [a-z]*: 100/100 inputs agree' "$tmp/out")" = 3 ] &&
   [ -n "$d0" ] && [ -n "$d1" ] && [ "$d1" -gt "$d0" ] && [ "$d1" -le $((d0 + 6)) ]; then
  ok "decoder4 --ln rms: proven whole, d_model $d0 -> $d1, 100/100 in four orders"
else
  bad "decoder4 --ln rms: d_model '$d0' -> '$d1'" "$tmp/out"
fi
grep -q '"layer_norm": 2' "$tmp/d4.json" && grep -q '"rms_const0"' "$tmp/d4.json" &&
  grep -q '"layer_norm": {"kind": "rms", .*"proven": true}' "$tmp/d4.json" &&
  grep -q '"ln_f.weight"' "$tmp/d4.safetensors" && ! grep -q '"ln_f.bias"' "$tmp/d4.safetensors" &&
  ok "decoder4 --ln rms: STEM.json and the tensors" || bad "decoder4 --ln rms: STEM.json" "$tmp/d4.json"
# shellcheck disable=SC2086
RASP_COMPILE_DENSE=1 "$RASP" compile $P --ln rms --dry-run --check 20 >"$tmp/out" 2>&1 &&
  grep -q '^check: 20/20 inputs agree with the interpreter' "$tmp/out" &&
  ok "decoder4 --ln rms: raspN_forward agrees too" || bad "decoder4 --ln rms: dense check" "$tmp/out"
expect "histogram n = 128 --ln rms: quantized width, proven, exact in four orders" 0 \
  '^check: 200/200 inputs agree with the interpreter' '' \
  -- compile examples/histogram.rasp --input-vocab 'a b c' --length 128 --require-proof --ln rms \
  -o "$tmp/h1" --stats --check 200 --check-orders perm,rev,pair
grep -q '^fp32: proven exact against rounding: 3 of 3' "$tmp/out" &&
  grep -q 'every RMS norm proven exactly the identity' "$tmp/out" &&
  [ "$(grep -c '^check order [a-z]*: 200/200 inputs agree' "$tmp/out")" = 3 ] &&
  ok "histogram --ln rms: proven" || bad "histogram --ln rms: proven" "$tmp/out"
"$RASP" compile examples/histogram.rasp --input-vocab 'a b c' --length 128 --require-proof \
  -o "$tmp/h0" || bad "histogram without norms"
in=$(awk 'BEGIN { for (i = 0; i < 128; i++) printf "%s%s", i ? " " : "", substr("abcab", i % 5 + 1, 1) }')
"$RASP" apply "$tmp/h0" --input "$in" --logits >"$tmp/a0" 2>&1 &&
  "$RASP" apply "$tmp/h1" --input "$in" --logits >"$tmp/a1" 2>&1 &&
  cmp -s "$tmp/a0" "$tmp/a1" && ok "histogram: rasp apply, the same output and logits" ||
  bad "histogram: rasp apply differs" "$tmp/a0" "$tmp/a1"
expect "readout3 (non-causal) --ln rms: exact" 0 \
  '^check: 100/100 inputs agree with the interpreter' '' \
  -- compile programs/readout3_forward_start.rasp --D 5 --M 5 --V 100 --ln rms --dry-run --check 100
expect "--ln rms --precision bf16: refused" 2 '' 'compile: --ln rms is for fp32 only' \
  -- compile examples/histogram.rasp --input-vocab 'a b c' --length 8 --ln rms --precision bf16 --dry-run
finish
