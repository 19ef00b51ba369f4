#!/bin/sh
# ln_pre.sh -- `rasp compile --ln pre` (doc/compiler.md, "Pre-LN models"),
# through the binary: the pre-LN architecture, every layer norm made the
# identity on what the model reads.
#   - decoder4 at D = 5, M = 5, V = 100 (--require-proof --moves one) is
#     proven whole with its layer norms, at most 5 dimensions wider than
#     without them, and exact on --check (the sparse pass and, with
#     RASP_COMPILE_DENSE=1, raspN_forward); STEM.json says layer_norm 1 and
#     names the balance and the constants;
#   - histogram at n = 128, whose quantized width puts 2^23 in the residual,
#     is proven and exact too; `rasp apply` gives the no-LN model's output
#     and logits on an input;
#   - readout3 (non-causal) is exact;
#   - decoder6 at D = 2, M = 5, V = 20, whose quantized widths need their
#     selected keys' scores exact: the layer norms' charge on tiny values
#     leaves those scores within float32's spacing of the exact ones, which
#     pins them (raspG_f32_pinned), so it is proven whole and exact;
#   - --ln pre in bf16 and an unknown --ln are usage errors.
# Prints "N passed, M failed".
NAME=ln_pre
. "${top_srcdir:-.}/tests/lib.sh"
P="programs/decoder4_log_meet.rasp --D 5 --M 5 --V 100 --require-proof --moves one"
# shellcheck disable=SC2086
expect "decoder4 without layer norm" 0 '^d_model ' '' -- compile $P --dry-run --stats
d0=$(sed -n 's/^d_model \([0-9]*\),.*/\1/p' "$tmp/out")
# shellcheck disable=SC2086
expect "decoder4 --ln pre: every layer norm proven the identity" 0 \
  '^layer norm: pre-LN (--ln pre), .*every layer norm proven exactly the identity' '' \
  -- compile $P --ln pre -o "$tmp/d4" --stats --check 200
d1=$(sed -n 's/^d_model \([0-9]*\),.*/\1/p' "$tmp/out")
if grep -q '^fp32: proven exact against rounding: 36 of 36 heads, MLP units and readout$' "$tmp/out" &&
   grep -q '^check: 200/200 inputs agree with the interpreter' "$tmp/out" &&
   [ -n "$d0" ] && [ -n "$d1" ] && [ "$d1" -gt "$d0" ] && [ "$d1" -le $((d0 + 5)) ]; then
  ok "decoder4 --ln pre: proven whole, d_model $d0 -> $d1, 200/200"
else
  bad "decoder4 --ln pre: d_model '$d0' -> '$d1'" "$tmp/out"
fi
grep -q '"layer_norm": 1' "$tmp/d4.json" && grep -q '"ln_balance"' "$tmp/d4.json" &&
  grep -q '"ln_+a"' "$tmp/d4.json" && grep -q '"layer_norm": {"kind": "pre", .*"proven": true}' "$tmp/d4.json" &&
  ok "decoder4 --ln pre: STEM.json" || bad "decoder4 --ln pre: STEM.json" "$tmp/d4.json"
# shellcheck disable=SC2086
RASP_COMPILE_DENSE=1 "$RASP" compile $P --ln pre --dry-run --check 20 >"$tmp/out" 2>&1 &&
  grep -q '^check: 20/20 inputs agree with the interpreter' "$tmp/out" &&
  ok "decoder4 --ln pre: raspN_forward agrees too" || bad "decoder4 --ln pre: dense check" "$tmp/out"
expect "histogram n = 128 --ln pre: quantized width, proven, exact" 0 \
  '^check: 300/300 inputs agree with the interpreter' '' \
  -- compile examples/histogram.rasp --input-vocab 'a b c' --length 128 --require-proof --ln pre \
  -o "$tmp/h1" --stats --check 300
grep -q '^fp32: proven exact against rounding: 3 of 3' "$tmp/out" &&
  grep -q 'every layer norm proven exactly the identity' "$tmp/out" &&
  ok "histogram --ln pre: proven" || bad "histogram --ln pre: proven" "$tmp/out"
"$RASP" compile examples/histogram.rasp --input-vocab 'a b c' --length 128 --require-proof \
  -o "$tmp/h0" || bad "histogram without layer norm"
in=$(awk 'BEGIN { for (i = 0; i < 128; i++) printf "%s%s", i ? " " : "", substr("abcab", i % 5 + 1, 1) }')
"$RASP" apply "$tmp/h0" --input "$in" --logits >"$tmp/a0" 2>&1 &&
  "$RASP" apply "$tmp/h1" --input "$in" --logits >"$tmp/a1" 2>&1 &&
  cmp -s "$tmp/a0" "$tmp/a1" && ok "histogram: rasp apply, the same output and logits" ||
  bad "histogram: rasp apply differs" "$tmp/a0" "$tmp/a1"
expect "readout3 (non-causal) --ln pre: exact" 0 \
  '^check: 100/100 inputs agree with the interpreter' '' \
  -- compile programs/readout3_forward_start.rasp --D 5 --M 5 --V 100 --ln pre --dry-run --check 100
expect "decoder6 D = 2 --ln pre: proven, exact" 0 \
  '^check: 100/100 inputs agree with the interpreter' '' \
  -- compile programs/decoder6_causal.rasp --D 2 --M 5 --V 20 --require-proof --moves one \
  --ln pre --dry-run --stats --check 100
grep -q 'every layer norm proven exactly the identity' "$tmp/out" &&
  ok "decoder6 D = 2 --ln pre: layer norms proven" ||
  bad "decoder6 D = 2 --ln pre: layer norms proven" "$tmp/out"
expect "--ln pre --precision bf16: refused" 2 '' 'compile: --ln pre is for fp32 only' \
  -- compile examples/histogram.rasp --input-vocab 'a b c' --length 8 --ln pre --precision bf16 --dry-run
expect "--ln post: a usage error" 2 '' "rasp compile: --ln: expected none, pre, rms or stock, got 'post'" \
  -- compile examples/histogram.rasp --input-vocab 'a b c' --length 8 --ln post --dry-run
finish
