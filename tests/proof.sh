#!/bin/sh
# proof.sh -- the proof-driven fp32 compile, `rasp compile`'s default
# (doc/compiler.md, "Proof-driven fp32"), through the binary: fp32 chooses
# its encodings by the rounding proof, as fp16 and bf16 always do; the
# size-driven model it starts from is `--unproven`'s, and where the
# premise matters `--moves assume` (equal selected values) is given, the
# premise these checks were written for.
#   - a model the bound already proves whole (reverse) is byte for byte the
#     default one;
#   - readout3 at D = 5, M = 5, V = 100 is proven whole by default and
#     --require-proof keeps its weights; decoder1 is not, and --require-proof
#     (exact erasers: a few more dimensions) proves it whole with no node
#     one-hot and every output right on --check;
#   - at --attn-gain 0.25 its heads leak too much for the proof: the proof
#     sharpens them (--stats says how many and by how much, STEM.json gives
#     each one's "gain"), and the model is exact;
#   - histogram at n = 128: by size (--unproven) its readout is named as
#     unproven, and the model is labelled: --stats prints UNPROVEN MODEL,
#     STEM.json's layout.proof says "proven": false and names the unit,
#     `rasp apply` warns on stderr, the Python loader warns and sets
#     m.proven = False; the default model says "proven": true and nothing
#     warns; --unproven with --require-proof or with fp16 is bad usage;
#     proof-driven, its width is quantized (the residual holds the integer
#     2^23 + round(qv fl(1/(w+1))), STEM.json says so) and the model is
#     proven whole with nothing one-hot, and exact;
#   - numeric.rasp (the fuzz corpus) at n = 64: four nodes the bound does not
#     prove numerically are compiled one-hot (--stats counts them), exact;
#   - double_histogram at n = 128, whose widths' selectors have two parts, is
#     proven whole with them quantized;
#   - balanced_parens at n = 128, whose mean cannot be proven in fp32 and has
#     no categorical encoding, is refused at its line with a caret;
#   - shuffle_dyck at n = 6, whose mean reads a table of tables: by size
#     the mean's decode is not proven; by default the three tables are
#     written steep (STEM.json marks them "steep") and the model is proven
#     whole and exact;
#   - decoder4 with --moves one (each assumed lookup selects one key) is
#     proven whole with nothing one-hot, and --check says the premise held
#     and every output is right; readout3 at |V| = 1000 is proven whole
#     (node-id scores exact on the scale's power-of-two grain, the readout's
#     logits on X's); decoder1 at |V| = 1000 without --moves one is refused
#     (its one-hot nodes do not fit the memory budget), naming the first.
# Prints "N passed, M failed".
NAME=proof
. "${top_srcdir:-.}/tests/lib.sh"
"$RASP" compile examples/reverse.rasp --input-vocab 'a b c' --length 8 -o "$tmp/r0" --unproven ||
  bad "compile reverse"
"$RASP" compile examples/reverse.rasp --input-vocab 'a b c' --length 8 -o "$tmp/r1" \
  --require-proof || bad "compile reverse --require-proof"
cmp -s "$tmp/r0.safetensors" "$tmp/r1.safetensors" && ok "reverse: proven whole, the same weights" ||
  bad "reverse: --require-proof changed a model the bound proves"
P="programs/readout3_forward_start.rasp --D 5 --M 5 --V 100"
# shellcheck disable=SC2086
expect "readout3 default: proven whole" 0 \
  '^fp32: proven exact against rounding: 18 of 18 heads, MLP units and readout$' '' \
  -- compile $P --dry-run --stats --unproven
d0=$(sed -n 's/^d_model \([0-9]*\),.*/\1/p' "$tmp/out")
# shellcheck disable=SC2086
"$RASP" compile $P -o "$tmp/p0" --unproven && "$RASP" compile $P -o "$tmp/p1" --require-proof ||
  bad "compile readout3"
cmp -s "$tmp/p0.safetensors" "$tmp/p1.safetensors" &&
  ok "readout3 --require-proof: proven whole by default, the same weights" ||
  bad "readout3 --require-proof: changed a model the bound proves"
# decoder1: not proven whole by default; proof-driven, the erasers are exact
# and no dimension is written in the sublayer that frees it: proven whole,
# a few dimensions wider, nothing one-hot, exact
P1="programs/decoder1_back_target.rasp --D 5 --M 5 --V 100 --moves assume"
# shellcheck disable=SC2086
expect "decoder1 default: not proven whole" 0 \
  '^fp32: proven exact against rounding: [0-9]* of 25 heads, MLP units and readout; not proven' '' \
  -- compile $P1 --dry-run --stats --unproven
d0=$(sed -n 's/^d_model \([0-9]*\),.*/\1/p' "$tmp/out")
# shellcheck disable=SC2086
expect "decoder1 --require-proof: proven whole, nothing one-hot" 0 \
  '^fp32: proven exact against rounding: 25 of 25 heads, MLP units and readout$' '' \
  -- compile $P1 --dry-run --stats --check 200 --require-proof
d1=$(sed -n 's/^d_model \([0-9]*\),.*/\1/p' "$tmp/out")
if [ -n "$d0" ] && [ -n "$d1" ] && [ "$d1" -ge "$d0" ] && [ "$d1" -le $((d0 + 8)) ] &&
   grep -q '^check: 200/200 inputs agree with the interpreter' "$tmp/out"; then
  ok "decoder1 --require-proof: d_model $d0 -> $d1, 200/200"
else
  bad "decoder1 --require-proof: d_model '$d0' -> '$d1'" "$tmp/out"
fi
# shellcheck disable=SC2086
expect "readout3 --attn-gain 0.25 --require-proof: heads sharpened" 0 \
  '^sharpened: 9 heads scaled by up to 4 beyond the model' '' \
  -- compile $P -o "$tmp/s" --stats --check 100 --require-proof --attn-gain 0.25
if grep -q '^check: 100/100 inputs agree with the interpreter' "$tmp/out" &&
   grep -q '^fp32: proven exact against rounding: 18 of 18' "$tmp/out" &&
   [ "$(grep -o '"gain": 4[,}]' "$tmp/s.json" | wc -l)" -eq 9 ]; then
  ok "readout3 sharpened: proven, exact, STEM.json gives 9 gains of 4"
else
  bad "readout3 sharpened" "$tmp/out"
fi
expect "histogram n = 128 default: compiled, its readout unproven" 0 \
  'not proven: 1, the first %5 (sel_width) at examples/histogram\.rasp:11:12' '' \
  -- compile examples/histogram.rasp --input-vocab 'a b c' --length 128 --dry-run --stats --unproven
expect "histogram n = 128 --unproven -o: labelled" 0 '^UNPROVEN MODEL: not proven exact in float32' '' \
  -- compile examples/histogram.rasp --input-vocab 'a b c' --length 128 --stats --unproven -o "$tmp/hu"
grep -q '"proof": {"proven": false, "units": 3, "not_proven": 1, "first_not_proven": "%5 (sel_width) at examples/histogram.rasp:11:12' \
  "$tmp/hu.json" && ok "histogram --unproven: layout.proof says not proven, naming the unit" ||
  bad "histogram --unproven: layout.proof" "$tmp/hu.json"
hin=$(awk 'BEGIN { for (i = 0; i < 128; i++) printf "%s%s", i ? " " : "", substr("abc", i % 3 + 1, 1) }')
expect "histogram --unproven: rasp apply warns" 0 '' "rasp apply: warning: '$tmp/hu' is not proven exact" \
  -- apply "$tmp/hu" --input "$hin"
expect "--unproven --require-proof: bad usage" 2 '' '--unproven and --require-proof contradict' \
  -- compile examples/reverse.rasp --input-vocab 'a b' --length 4 --dry-run --unproven --require-proof
expect "--unproven --precision fp16: bad usage" 2 '' '--unproven is for fp32' \
  -- compile examples/reverse.rasp --input-vocab 'a b' --length 4 --dry-run --unproven --precision fp16
expect "histogram n = 128 --require-proof: proven whole, exact" 0 \
  '^check: 300/300 inputs agree with the interpreter' '' \
  -- compile examples/histogram.rasp --input-vocab 'a b c' --length 128 -o "$tmp/h" --stats \
  --require-proof --check 300
grep -q '^fp32: proven exact against rounding: 3 of 3 heads, MLP units and readout$' "$tmp/out" &&
  grep -q '=2^23+qv/(w+1)"' "$tmp/h.json" &&
  ok "histogram: its width quantized, nothing one-hot" || bad "histogram: fp32 line" "$tmp/out"
if grep -q '"proof": {"proven": true, ' "$tmp/h.json" && ! grep -q UNPROVEN "$tmp/out"; then
  ok "histogram default: layout.proof says proven"
else
  bad "histogram default: labelled unproven" "$tmp/h.json"
fi
expect "histogram default: rasp apply does not warn" 0 '' '' -- apply "$tmp/h" --input "$hin"
if [ -s "$tmp/err" ]; then bad "histogram default: apply wrote to stderr" "$tmp/err"; else ok; fi
# the Python loader: a warning and m.proven for the unproven model, neither
# for the proven one
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  PYTHONPATH="${top_srcdir:-.}/python" /usr/bin/python3 - "$tmp/hu" "$tmp/h" >"$tmp/py" 2>&1 <<'EOF'
import sys, warnings, rasp_model
for stem, want in ((sys.argv[1], False), (sys.argv[2], True)):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = rasp_model.load(stem, backend="numpy")
    warned = any(issubclass(x.category, rasp_model.UnprovenModelWarning) for x in w)
    assert m.proven is want and warned is (not want), (stem, m.proven, [str(x.message) for x in w])
print("ok")
EOF
  grep -q '^ok$' "$tmp/py" && ok "the Python loader warns for the unproven model only" ||
    bad "the Python loader: proven / warning" "$tmp/py"
else
  skip_part "no numpy for the Python loader" || fail=$((fail + 1))
fi
expect "numeric.rasp n = 64 --require-proof: four nodes one-hot, exact" 0 \
  '^fp32: every head, MLP unit and the readout proven against rounding; 4 nodes compiled categorically' '' \
  -- compile tests/fuzz_compile_corpus/numeric.rasp --input-vocab 'a b c' --length 64 --dry-run \
  --stats --require-proof --check 300
grep -q '^check: 300/300 inputs agree with the interpreter' "$tmp/out" &&
  ok "numeric.rasp: the fallback model exact" || bad "numeric.rasp: check" "$tmp/out"
expect "double_histogram n = 128 --require-proof: proven whole, exact" 0 \
  '^fp32: proven exact against rounding: 7 of 7 heads, MLP units and readout$' '' \
  -- compile examples/double_histogram.rasp --input-vocab 'a b c' --length 128 --dry-run --stats \
  --require-proof --check 300
grep -q '^check: 300/300 inputs agree with the interpreter' "$tmp/out" &&
  ok "double_histogram: exact" || bad "double_histogram: check" "$tmp/out"
expect "balanced_parens n = 128 --require-proof: refused at the mean" 1 '' \
  'examples/balanced_parens\.rasp:22:12: compile: %8 balance (aggregate) cannot be compiled exactly in fp32' \
  -- compile examples/balanced_parens.rasp --input-vocab '( ) x' --length 128 --dry-run \
  --require-proof
grep -q '^ *\^' "$tmp/err" && ok "balanced_parens: a caret" || bad "balanced_parens: no caret" "$tmp/err"
# shuffle_dyck at n = 6: by size its mean of "below zero" is not proven (the
# tables before it written with a hinge on an integer); proof-driven the
# three tables upstream are written steep, STEM.json marks them, and the
# model is proven whole and exact
expect "shuffle_dyck n = 6 --unproven: the mean's decode not proven" 0 \
  'not proven: 3, the first %36 (unary) at examples/shuffle_dyck\.rasp:38:25' '' \
  -- compile examples/shuffle_dyck.rasp --input-vocab '( ) { }' --length 6 --dry-run --stats \
  --unproven
expect "shuffle_dyck n = 6: proven whole" 0 \
  '^fp32: proven exact against rounding: 17 of 17 heads, MLP units and readout$' '' \
  -- compile examples/shuffle_dyck.rasp --input-vocab '( ) { }' --length 6 --stats --check 300 \
  -o "$tmp/sd"
grep -q '^check: 300/300 inputs agree with the interpreter' "$tmp/out" &&
  ok "shuffle_dyck: exact" || bad "shuffle_dyck: check" "$tmp/out"
steep=$(grep -o '"name": "%[0-9]*:[a-z_]*", "kind": "mlp"[^}]*"steep": true' "$tmp/sd.json" |
  sed 's/"name": "%[0-9]*:\([a-z_]*\)".*/\1/' | tr '\n' ' ')
[ "$steep" = "round_ curly below " ] && ok "shuffle_dyck: the three tables steep in STEM.json" ||
  bad "shuffle_dyck: steep tables '$steep'" "$tmp/sd.json"
expect "decoder4 --require-proof --moves one: proven whole" 0 \
  '^fp32: proven exact against rounding: 36 of 36 heads, MLP units and readout$' '' \
  -- compile programs/decoder4_log_meet.rasp --D 5 --M 5 --V 100 --dry-run --stats \
  --require-proof --moves one --check 200
grep -q "^check: the assumed moves' premise (one key each) held on 200/200 inputs; the model agrees on 200/200 of those$" \
  "$tmp/out" && ok "decoder4 --moves one: premise held, exact" || bad "decoder4 --moves one: check" "$tmp/out"
expect "readout3 |V| = 1000 --require-proof: proven whole" 0 \
  '^fp32: proven exact against rounding: 18 of 18 heads, MLP units and readout$' '' \
  -- compile programs/readout3_forward_start.rasp --D 5 --M 5 --V 1000 --dry-run --stats \
  --require-proof --check 100
grep -q '^check: 100/100 inputs agree with the interpreter' "$tmp/out" &&
  ok "readout3 |V| = 1000: exact" || bad "readout3 |V| = 1000: check" "$tmp/out"
# decoder1 at |V| = 1000 without --moves one: its lookups may tie, nodes go
# one-hot, and the model does not fit the memory budget: refused at once
# (not by the allocator's backstop), naming the first one-hot node and the
# premise that would spare them
expect "decoder1 |V| = 1000 --require-proof: refused, naming the one-hot nodes" 1 '' \
  'do not fit in the memory the budget leaves .*after the proof made [0-9]* nodes one-hot (the first: %[0-9]* .* at programs/decoder1_back_target\.rasp:[0-9]*:[0-9]*); --moves one' \
  -- compile programs/decoder1_back_target.rasp --D 5 --M 5 --V 1000 --dry-run --moves assume
# (decoder4 there passes the parameter cap: a size refusal too, status 1)
expect "decoder4 |V| = 1000 --require-proof: refused for size" 1 '' \
  'parameters is too many .*after the proof made [0-9]* nodes one-hot' \
  -- compile programs/decoder4_log_meet.rasp --D 5 --M 5 --V 1000 --dry-run --moves assume
finish
