#!/bin/sh
# apply_parity.sh -- python/rasp_model.py against `rasp apply --logits`:
# the examples that `rasp compile` takes, two path-star readout models (one
# non-causal, one causal) on `rasp gen` samples of their task, a pre-LN
# compiled decoder (`--ln pre`) on task samples and adversarial inputs, and
# three random models (layer norm or RMS norm, GELU), each on a few inputs, with the numpy backend
# and (when /usr/bin/python3 imports torch; Debian's python3-torch,
# installed by .ci/setup) the torch backend: tests/apply_parity.py requires
# identical argmax and logits within 1e-5.  Then load() with torch made
# unimportable must fall back to numpy and decode as `rasp apply` does.
# tests/python_trace.py checks m.trace's intermediates on the same models.
# Skipped (77) when /usr/bin/python3 has no numpy; under RASP_NO_SKIP=1 (lib.sh)
# that, and a torch that does not import, fail instead.
NAME=apply_parity.sh
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import numpy' 2>/dev/null || skip_test "no numpy"
fail=0
# the models are checked by one python process (torch imports slowly):
# $tmp/pairs lists STEM and INPUTS, one path a line
parity() { # STEM INPUTS
  printf '%s\n%s\n' "$1" "$2" >>"$tmp/pairs"
}

# plain programs: five inputs each, drawn from the vocabulary by a fixed LCG
plain() { # PROGRAM VOCAB LENGTH
  stem=$tmp/$(basename "$1" .rasp)
  if ! "$RASP" compile "$1" --input-vocab "$2" --length "$3" -o "$stem" >"$tmp/log" 2>&1; then
    cat "$tmp/log"
    fail=1
    return
  fi
  echo "$2" | awk -v n="$3" '{ s = 7; for (k = 0; k < 5; k++) { line = "";
      for (i = 0; i < n; i++) { s = (s * 1103515245 + 12345) % 2147483648;
        line = line (i ? " " : "") $(1 + int(s / 65536) % NF) } print line } }' >"$stem.in"
  parity "$stem" "$stem.in"
}
plain examples/length.rasp "1 2 3" 5
plain examples/histogram.rasp "a b c" 6
plain examples/reverse.rasp "a b c" 6
plain examples/sort.rasp "1 2 3" 5
plain examples/double_histogram.rasp "a b c" 6
plain examples/balanced_parens.rasp "( ) x" 6

# path-star readouts (D=2 M=3 V=10), on five samples of their own task
pathstar() { # PROGRAM ORDER
  stem=$tmp/$(basename "$1" .rasp)
  if ! "$RASP" compile "$1" --D 2 --M 3 --V 10 -o "$stem" >"$tmp/log" 2>&1 ||
     ! "$RASP" gen --D 2 --M 3 --V 10 -n 5 --seed 11 --format text --order "$2" \
         --no-bos --no-eos --st-names >"$stem.in" 2>"$tmp/log"; then
    cat "$tmp/log"
    fail=1
    return
  fi
  parity "$stem" "$stem.in"
}
pathstar programs/readout5_arms_constant.rasp arm
pathstar programs/readout6_causal.rasp edge

# a pre-LN model (rasp compile --ln pre: its layer norms run as
# rasp_model.ExactLayerNorm), node ids numerical (V = 40), on task samples
# under both orders and on adversarial inputs: each sample's symbols in a
# scrambled order, and one symbol repeated
stem=$tmp/decoder4_ln
if "$RASP" compile programs/decoder4_log_meet.rasp --D 2 --M 3 --V 40 --require-proof \
     --moves one --ln pre -o "$stem" >"$tmp/log" 2>&1 &&
   "$RASP" gen --D 2 --M 3 --V 40 -n 4 --seed 11 --format text --order edge --no-bos \
     --no-eos --st-names >"$stem.task" 2>"$tmp/log" &&
   "$RASP" gen --D 2 --M 3 --V 40 -n 4 --seed 12 --format text --order arm --no-bos \
     --no-eos --st-names >>"$stem.task" 2>"$tmp/log"; then
  cp "$stem.task" "$stem.in"
  awk '{ s = 5 + NR; for (i = NF; i > 1; i--) { s = (s * 1103515245 + 12345) % 2147483648;
      j = 1 + int(s / 65536) % i; t = $i; $i = $j; $j = t } print }' "$stem.task" >>"$stem.in"
  awk 'NR == 1 { line = ""; for (i = 1; i <= NF; i++) line = line (i > 1 ? " " : "") $5; print line }' \
    "$stem.task" >>"$stem.in"
  printf '%s\n%s\n' "$stem" "$stem.in" >"$tmp/pairs_ln"
else
  cat "$tmp/log"
  fail=1
fi

# random models (pre-layer-norm, GELU, biases; non-causal and causal)
for causal in 0 1; do
  $PY tests/apply_parity.py --random "$tmp/random$causal" $causal || fail=1
  printf '%s\n' "a b c d a b" "d d c a b a" "b a d c c c" >"$tmp/random$causal.in"
  parity "$tmp/random$causal" "$tmp/random$causal.in"
done
# and one with RMS norms (config.layer_norm 2: rasp_model.RMSNorm, torch's
# own formula, against raspN_rms_norm)
$PY tests/apply_parity.py --random "$tmp/random_rms" 1 2 || fail=1
cp "$tmp/random1.in" "$tmp/random_rms.in"
parity "$tmp/random_rms" "$tmp/random_rms.in"
$PY tests/apply_parity.py "$RASP" "$tmp/pairs" || fail=1
[ -s "$tmp/pairs_ln" ] && { $PY tests/apply_parity.py "$RASP" "$tmp/pairs_ln" || fail=1; }
# the same models' intermediates (m.trace): residual after every sublayer,
# attention weights, values read by name, against the forward pass
$PY tests/python_trace.py "$tmp/pairs" || fail=1
[ -s "$tmp/pairs_ln" ] && { $PY tests/python_trace.py "$tmp/pairs_ln" || fail=1; }

# without torch, load() falls back to the numpy forward pass by itself
want=$("$RASP" apply "$tmp/reverse" --input "a b c a b b" --symbols)
got=$(PYTHONDONTWRITEBYTECODE=1 $PY -c 'import sys
sys.modules["torch"] = None  # import torch fails
sys.path.insert(0, "python")
import rasp_model
m = rasp_model.load(sys.argv[1])
print(type(m).__name__, " ".join(m.decode(m(m.encode("a b c a b b")).argmax(-1), True)[0]))
' "$tmp/reverse")
if [ "$got" = "NumpyModel $want" ]; then echo "no torch: NumpyModel, output $want"
else echo "FAIL: no torch: '$got', rasp apply '$want'"; fail=1
fi
exit $fail
