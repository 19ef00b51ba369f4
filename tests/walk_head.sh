#!/bin/sh
# walk_head.sh -- experiments/walk_head.py trains one attention sublayer of
# a compiled model on the compiled model's own input and output:
#   - started at the compiled weights (--start compiled), every head unit
#     of the layer and every attention row's largest key agree at step 0,
#     and the CSV has a row per evaluation;
#   - from a random start they do not agree at step 0, and 200 steps lower
#     the loss;
#   - --summary tabulates the runs, a row per run and head unit;
#   - --input-model of the compiled model itself changes nothing; of the
#     compiled model with layer 1's MLP cut (the walk's inputs), step 0
#     from the compiled start no longer agrees everywhere; of another
#     architecture it is refused;
#   - training questions that are all test questions are refused (the
#     split is checked, not assumed);
#   - an --out whose directory cannot be made is refused before any
#     training, with the path.
# decoder2_backward_targets at D = 2, M = 3, V = 10, layer 2.  Skipped (77)
# when /usr/bin/python3 has no torch.
NAME=walk_head
. "${top_srcdir:-.}/tests/lib.sh"
PY=/usr/bin/python3
$PY -c 'import torch' 2>/dev/null || skip_test "no torch"
wh="$PY experiments/walk_head.py --D 2 --M 3 --V 10 --rasp $RASP"

small_decoder2

# col CSV NAME ROW: the value of column NAME in data row ROW (1: the first)
col() {
  awk -F, -v n="$2" -v r="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == n) c = i }
    NR == r + 1 && c { print $c }' "$1"
}

if $wh --ref "$tmp/d2" --test "$tmp/q.jsonl" --start compiled --steps 20 --eval-every 10 \
  --train 200 --out "$tmp/exact.csv" >"$tmp/out" 2>"$tmp/err"; then
  heads=$(head -1 "$tmp/exact.csv" | tr , '\n' | grep -c '^agree %')
  ones=$(head -2 "$tmp/exact.csv" | tail -1 | tr , '\n' | grep -c '^1.0000$')
  argm=$(head -1 "$tmp/exact.csv" | tr , '\n' | grep -c '^argmax head')
  found=$(head -1 "$tmp/exact.csv" | tr , '\n' | grep -c '^agree found')
  [ "$heads" -ge 2 ] && [ "$ones" = $((heads + found + argm)) ] &&
    ok "compiled start: $heads head units and $argm heads' attention agree at step 0" ||
    bad "compiled start: $ones of $heads units + $found + $argm columns at 1" "$tmp/exact.csv"
  [ "$(wc -l <"$tmp/exact.csv")" = 4 ] && ok "a CSV row per evaluation (0, 10, 20)" ||
    bad "CSV rows" "$tmp/exact.csv"
else
  bad "walk_head.py --start compiled failed" "$tmp/err"
fi

if $wh --ref "$tmp/d2" --test "$tmp/q.jsonl" --steps 200 --eval-every 100 --train 400 \
  --out "$tmp/rand.csv" >"$tmp/out" 2>"$tmp/err"; then
  a0=$(col "$tmp/rand.csv" "agree %29:connecting_idxs" 1)
  l1=$(col "$tmp/rand.csv" loss 2)
  l2=$(col "$tmp/rand.csv" loss 3)
  awk -v a="$a0" 'BEGIN { exit !(a < 1) }' && ok "random start: the walk's step disagrees at step 0 ($a0)" ||
    bad "random start agrees at step 0: $a0" "$tmp/rand.csv"
  awk -v x="$l1" -v y="$l2" 'BEGIN { exit !(y < x) }' && ok "training lowers the loss ($l1 -> $l2)" ||
    bad "loss $l1 -> $l2" "$tmp/rand.csv"
  # --summary: a row per run and head unit, the compiled start's from step 0
  $PY experiments/walk_head.py --summary "$tmp/exact.csv" "$tmp/rand.csv" >"$tmp/sum" 2>"$tmp/err"
  [ "$(grep -c '^| exact | %' "$tmp/sum")" = "$heads" ] &&
    [ "$(grep -c '^| rand | %' "$tmp/sum")" = "$heads" ] &&
    [ "$(grep '^| exact | %' "$tmp/sum" | grep -vc '^| exact | [^|]* | 0 |')" = 0 ] &&
    ok "--summary: a row per run and unit; the compiled start agrees from step 0" ||
    bad "--summary" "$tmp/sum" "$tmp/err"
else
  bad "walk_head.py failed" "$tmp/err"
fi

# --input-model: the compiled model itself as the input's source changes
# nothing (every unit agrees at step 0 from the compiled start); a model of
# another architecture is refused
if $wh --ref "$tmp/d2" --test "$tmp/q.jsonl" --start compiled --steps 1 --train 50 \
  --input-model "$tmp/d2" --out "$tmp/self.csv" >"$tmp/out" 2>"$tmp/err" &&
  [ "$(head -2 "$tmp/self.csv" | tail -1 | cut -d, -f3-)" = "$(head -2 "$tmp/exact.csv" | tail -1 | cut -d, -f3-)" ]; then
  ok "--input-model: the compiled model's own input, the same step 0"
else
  bad "--input-model of the compiled model itself" "$tmp/err" "$tmp/self.csv"
fi
# the same weights with layer 1's MLP output zeroed (a config without
# layout or checksum, as a trained model's): the layer's input changes
$PY - "$tmp/d2" "$tmp/cut" <<'EOF2'
import json, struct, sys
src, dst = sys.argv[1], sys.argv[2]
json.dump({"config": json.load(open(src + ".json"))["config"]}, open(dst + ".json", "w"))
raw = bytearray(open(src + ".safetensors", "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
a, b = json.loads(raw[8:8 + n])["layers.1.mlp.w_out"]["data_offsets"]
raw[8 + n + a:8 + n + b] = bytes(b - a)
open(dst + ".safetensors", "wb").write(raw)
EOF2
if $wh --ref "$tmp/d2" --test "$tmp/q.jsonl" --start compiled --steps 1 --train 50 \
  --input-model "$tmp/cut" --out "$tmp/cut.csv" >"$tmp/out" 2>"$tmp/err" &&
  [ "$(head -2 "$tmp/cut.csv" | tail -1 | cut -d, -f3- | tr , '\n' | grep -c '^1.0000$')" -lt \
    "$(head -2 "$tmp/exact.csv" | tail -1 | cut -d, -f3- | tr , '\n' | grep -c '^1.0000$')" ]; then
  ok "--input-model with layer 1's MLP cut: step 0 agrees on fewer units"
else
  bad "--input-model with layer 1's MLP cut" "$tmp/err" "$tmp/cut.csv"
fi
"$RASP" compile programs/decoder2_backward_targets.rasp --D 2 --M 3 --V 12 --no-sdpa \
  -o "$tmp/d2v12" >"$tmp/log" 2>&1 || bad "compile V 12" "$tmp/log"
if $wh --ref "$tmp/d2" --test "$tmp/q.jsonl" --steps 1 --train 50 --input-model "$tmp/d2v12" \
  >"$tmp/out" 2>"$tmp/err"; then st=0; else st=$?; fi
[ "$st" != 0 ] && grep -q "not .*architecture" "$tmp/err" &&
  ok "--input-model of another architecture: refused" || bad "another architecture: status $st" "$tmp/err"

# the training draw is rasp gen --seed 1000 + S: with S = 0 and a test file
# of that very draw, every training question is a test question
"$RASP" gen --D 2 --M 3 --V 10 -n 30 --seed 1000 --no-bos --no-eos --st-names >"$tmp/same.jsonl"
if $wh --ref "$tmp/d2" --test "$tmp/same.jsonl" --seed 0 --train 30 --steps 1 >"$tmp/out" 2>"$tmp/err"; then
  st=0
else
  st=$?
fi
[ "$st" != 0 ] && grep -q "training questions is a test question" "$tmp/err" &&
  ok "training questions all in the test set: refused" || bad "not refused: status $st" "$tmp/err"

: >"$tmp/afile"
if $wh --ref "$tmp/d2" --test "$tmp/same.jsonl" --out "$tmp/afile/x.csv" >"$tmp/out" 2>"$tmp/err"; then
  st=0
else
  st=$?
fi
[ "$st" != 0 ] && grep -q "^walk_head.py: --out $tmp/afile/x.csv: cannot make its directory" "$tmp/err" &&
  ! grep -q Traceback "$tmp/err" && ok "--out under a file: refused before training, with the path" ||
  bad "--out under a file: status $st" "$tmp/err"
finish
