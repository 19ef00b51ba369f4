#!/bin/sh
# apply.sh -- `rasp apply` from the command line: on the examples its
# decoded output must be the interpreter's (`rasp run` with the same
# vocabulary file, plain and --symbols), --logits must print one row of
# n_out numbers per input position, --json one object; and bad input must
# fail cleanly (exit status 2, a message naming the culprit, no sanitizer
# report): an unknown symbol, a symbol the model has no input for, the
# wrong length, a missing or truncated model, a model without vocabulary
# (written before STEM.json carried it), one without layout (not compiled),
# a bad option, no --input.
NAME=apply.sh
. "$(dirname "$0")/lib.sh"

# the interpreter's output and the model's, for inputs drawn by a fixed LCG
same() { # PROGRAM VOCAB LENGTH
  stem=$tmp/$(basename "$1" .rasp)
  printf '%s\n' $2 >"$tmp/vocab"
  "$RASP" compile "$1" --vocab "$tmp/vocab" --length "$3" -o "$stem" >/dev/null ||
    { bad "rasp compile $1"; return; }
  echo "$2" | awk -v n="$3" '{ s = 3; for (k = 0; k < 6; k++) { line = "";
      for (i = 0; i < n; i++) { s = (s * 1103515245 + 12345) % 2147483648;
        line = line (i ? " " : "") $(1 + int(s / 65536) % NF) } print line } }' >"$stem.in"
  while read -r input; do
    for sym in "" --symbols; do
      want=$("$RASP" run "$1" --vocab "$tmp/vocab" --input "$input" $sym)
      got=$("$RASP" apply "$stem" --input "$input" $sym)
      [ "$got" = "$want" ] || bad "$1 '$input' $sym: rasp apply '$got', rasp run '$want'"
    done
  done <"$stem.in"
  echo "ok: $1: rasp apply = rasp run on $(wc -l <"$stem.in") inputs"
}
same examples/length.rasp "1 2 3" 5
same examples/histogram.rasp "a b c" 6
same examples/reverse.rasp "a b c" 6
same examples/sort.rasp "1 2 3" 5
same examples/double_histogram.rasp "a b c" 6
same examples/balanced_parens.rasp "( ) x" 6

# --logits: the output line, then n rows of n_out numbers
rev=$tmp/reverse
"$RASP" apply "$rev" --input "a b c a b c" --logits >"$tmp/out" || bad "--logits"
[ "$(sed -n 1p "$tmp/out")" = "3 2 1 3 2 1" ] || bad "--logits: output line $(sed -n 1p "$tmp/out")"
nout=$(sed -n 's/.*"n_out": \([0-9]*\).*/\1/p' "$rev.json")
awk -v c="$nout" 'NR > 1 { if (NF != c) exit 1; for (i = 1; i <= NF; i++)
    if ($i !~ /^-?[0-9.]+(e[-+][0-9]+)?$/) exit 1; rows++ } END { exit rows != 6 }' \
  "$tmp/out" || bad "--logits: not 6 rows of $nout numbers"
# --json: one object with the input, the tokens (BOS 4 first) and the output
"$RASP" apply "$rev" --input "a b c a b c" --json --symbols >"$tmp/out" || bad "--json"
grep -qx '{"input": \["a", "b", "c", "a", "b", "c"\], "tokens": \[4, 1, 2, 3, 1, 2, 3\], "output": \["c", "b", "a", "c", "b", "a"\]}' \
  "$tmp/out" || bad "--json: $(cat "$tmp/out")"
echo "ok: --logits and --json"

# errors: exit status 2 and a message naming the culprit
"$RASP" compile programs/readout5_arms_constant.rasp --D 2 --M 3 --V 10 -o "$tmp/ps" >/dev/null ||
  bad "rasp compile readout5_arms_constant"
sed 's/, "vocab": \[[^]]*\]//' "$rev.json" >"$tmp/old.json"
cp "$rev.safetensors" "$tmp/old.safetensors"
head -c 100 "$rev.safetensors" >"$tmp/cut.safetensors"
cp "$rev.json" "$tmp/cut.json"
fails() { # EXPECTED-STDERR-SUBSTRING ARGS...
  want=$1
  shift
  "$RASP" apply "$@" >"$tmp/out" 2>"$tmp/err"
  status=$?
  if [ "$status" -ne 2 ]; then bad "rasp apply $*: exit status $status, expected 2"
  elif grep -q -e AddressSanitizer -e LeakSanitizer -e 'runtime error' "$tmp/err"; then
    bad "rasp apply $*: sanitizer report"
  elif ! grep -qF -- "$want" "$tmp/err"; then bad "rasp apply $*: no '$want' in: $(cat "$tmp/err")"
  else echo "ok: rasp apply $* -> $want"
  fi
}
fails "input symbol 'd' (position 2) is not in the model's vocabulary: a b c" \
  "$rev" --input "a b d a b c"
fails "input symbol 'j' (position 0) is in the vocabulary but the model was not compiled with it" \
  "$tmp/ps" --input "j / s t = s 2 | 2 3 | s 10 | 10 t | s 10"
fails "the model was compiled for inputs of 6 symbols; the input has 3" "$rev" --input "a b c"
fails "cannot read '$tmp/nope.json'" "$tmp/nope" --input "a b c"
fails "'$tmp/cut.safetensors'" "$tmp/cut" --input "a b c a b c"
fails "no list of strings \"vocab\" (a model compiled by an older rasp: compile it again)" \
  "$tmp/old" --input "a b c a b c"
sed 's/"layout": .*/"layout": null/' "$rev.json" >"$tmp/plain.json"
cp "$rev.safetensors" "$tmp/plain.safetensors"
fails "not a compiled model (STEM.json has no layout)" "$tmp/plain" --input "a b c a b c"
fails "unknown option '--bogus'" "$rev" --input "a b c a b c" --bogus
fails "no --input given" "$rev"
fails "no model STEM given" --input "a"
fails "--input needs a value" "$rev" --input

# a path-star model with --program: the input checked as one of the task's,
# or a sample drawn as `rasp run PROGRAM --D --M --seed` draws it; the
# model's output must be the interpreter's on it
ps=programs/readout5_arms_constant.rasp
"$RASP" apply "$tmp/ps" --program $ps --D 2 --M 3 --V 10 --seed 4 >"$tmp/out" 2>"$tmp/err" ||
  bad "apply --program --seed: $(cat "$tmp/err")"
"$RASP" run $ps --D 2 --M 3 --V 10 --seed 4 >"$tmp/run" 2>"$tmp/err" ||
  bad "run --seed: $(cat "$tmp/err")"
drawn=$(sed -n 's/^input:  //p' "$tmp/out")
[ -n "$drawn" ] && [ "$drawn" = "$(sed -n 's/^ *input: *//p' "$tmp/run")" ] ||
  bad "apply --program --seed: input '$drawn', rasp run's $(sed -n 2p "$tmp/run")"
want=$(sed -n 's/^ *output: *//p' "$tmp/run")
[ "$(sed -n 's/^output: //p' "$tmp/out")" = "$want" ] ||
  bad "apply --program --seed: output $(sed -n 2p "$tmp/out"), interpreter $want"
"$RASP" apply "$tmp/ps" --program $ps --V 10 --input "$drawn" >"$tmp/out2" 2>"$tmp/err" ||
  bad "apply --program --input: $(cat "$tmp/err")"
[ "$(sed -n 1p "$tmp/out2")" = "$want" ] || bad "apply --program --input: $(cat "$tmp/out2"), want $want"
# the verdict: the program's check() on the model's output, as rasp run's on
# the interpreter's
verdict=$(sed -n 's/^ *verdict: *//p' "$tmp/run")
[ -n "$verdict" ] && [ "$(sed -n 's/^verdict: //p' "$tmp/out2")" = "$verdict" ] ||
  bad "apply --program verdict: '$(sed -n 2p "$tmp/out2")', rasp run's '$verdict'"
echo "ok: path-star model on the drawn sample = rasp run (--seed and --input), its verdict too"
# a known-wrong listing compiled exactly: its model fails where the listing
# fails, and --symbols shows the output as the task's symbols
l6=programs/listing6_causal.rasp
bad_in='/ s t = 96 4 | 10 57 | 50 7 | s 74 | s 96 | 57 t | 74 10 | 4 50 |'
"$RASP" compile $l6 --D 2 --M 5 --V 100 --unproven --check 200 -o "$tmp/l6" >/dev/null 2>&1 || bad "compile $l6"
"$RASP" apply "$tmp/l6" --program $l6 --input "$bad_in" --symbols >"$tmp/out3" 2>"$tmp/err" ||
  bad "apply listing6: $(cat "$tmp/err")"
[ "$(sed -n 1p "$tmp/out3")" = "/ s t = 96 4 | 10 57 | 50 7 | s 74 74 s 4 96 57 t | 74 57 74 4 7 96" ] &&
  [ "$(sed -n 2p "$tmp/out3")" = "verdict: FAIL (check() failed)" ] ||
  bad "apply listing6 --symbols: $(cat "$tmp/out3")"
fails "rasp apply: --input: the input has" "$tmp/ps" --program $ps --V 10 --input "/ s t = s 2 |"
fails "rasp apply: --D is for a path-star model: give --program FILE" "$tmp/ps" --D 2
fails "rasp apply: --seed draws a sample; with --input, D and M come from the input's graph" \
  "$tmp/ps" --program $ps --input "$drawn" --V 10 --seed 3
# the model's layout.task names the setting (tests/task_layout.sh: the length
# check, for models without one)
fails "was compiled for M = 3, $ps's task has M = 4 (give --M 3, or an --input whose graph has M = 3)" \
  "$tmp/ps" --program $ps --D 2 --M 4 --V 10
# a rasp-train checkpoint: its layout records the task only
if [ -x "$top_builddir/trainer/rasp-train" ]; then
  OMP_NUM_THREADS=1 "$top_builddir/trainer/rasp-train" --D 2 --M 3 --V 10 --train 8 --test 2 \
    --batch 4 --micro 4 --epochs 1 --layers 1 --d-model 16 --heads 2 --d-mlp 16 \
    --out "$tmp/ck" >/dev/null 2>&1 || bad "rasp-train for a checkpoint"
  fails "a model trained by rasp-train, not a compiled one" "$tmp/ck/trial0.g000001" --input "a b"
fi
[ "$fail" = 0 ]
