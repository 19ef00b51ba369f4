#!/bin/sh
# train_ln.sh -- pre-LN and pre-RMSNorm compiled models (`rasp compile --ln
# pre`, `--ln rms`) given to rasp-train --init: the layer norms run in
# rmodel.c's arithmetic (tnet.h, exact_ln), the RMS norms in the trainer's
# own (exact in any order), so step 0 is the compiled model's.
#   - decoder6_causal at D = 2, M = 3, V = 10, compiled with --ln pre and
#     with --ln rms, is right at every answer position before the first
#     step (accuracy 1.000, loss <= 0.01), the same step-0 row as the model
#     compiled without layer norm, and it takes a step;
#   - --ln none with those models leaves them normed (an --init model's
#     architecture is its own);
#   - a random start with --ln rms takes a step with a finite loss.
# Prints "N passed, M failed".
NAME=train_ln
. "${top_srcdir:-.}/tests/lib.sh"
use_trainer
for ln in none pre rms; do
  "$RASP" compile programs/decoder6_causal.rasp --D 2 --M 3 --V 10 --ln $ln -o "$tmp/d_$ln" \
    >"$tmp/out" 2>&1 && ok "compile --ln $ln" || bad "compile --ln $ln" "$tmp/out"
done
run() { # STEM OPTIONS...: rasp-train's output, stdout and stderr
  stem=$1; shift
  "$train" --init "$stem" --D 2 --M 3 --V 10 --st-names --no-bos --no-eos --train 8 \
    --test 32 --batch 8 --max-steps 1 --epochs 1 --dropout 0 --threads 1 "$@" >"$tmp/run" 2>&1
}
step0() { sed -n 's/^trial 0 before training: \(val \)/\1/p' "$tmp/run"; }
run "$tmp/d_none"
line0=$(step0)
for ln in pre rms; do
  name=$([ $ln = pre ] && echo pre-LN || echo pre-RMSNorm)
  run "$tmp/d_$ln" --ln $ln
  st=$?
  line=$(step0)
  if [ $st -eq 0 ] && printf '%s\n' "$line" | awk '{ if (NF != 10 || $2 > 0.01 || $4 != "1.000") exit 1;
        for (i = 8; i <= 10; i++) if ($i != "1.000") exit 1 }'; then
    ok "$name step 0: $line"
  else
    bad "$name step 0: '$line' (status $st; want loss <= 0.01, accuracy 1.000 everywhere)" "$tmp/run"
  fi
  [ -n "$line" ] && [ "$line" = "$line0" ] && ok "$name step 0 as without layer norm" ||
    bad "$name step 0 '$line', without layer norm '$line0'"
  grep -q "$name (compiled exact)" "$tmp/run" && grep -q '^step 1/1 ' "$tmp/run" &&
    ok "$name: named, one step taken" || bad "$name: run" "$tmp/run"
  # --ln is an architecture option: the --init model's own (config.txt
  # records it for every run, so a replay passes it too)
  run "$tmp/d_$ln" --ln none
  [ "$(step0)" = "$line" ] && ok "--ln none with a $name model: the model's norms" ||
    bad "--ln none with a $name model: '$(step0)'" "$tmp/run"
done
"$train" --D 2 --M 3 --V 10 --st-names --no-bos --no-eos --train 8 --test 32 --batch 8 \
  --max-steps 1 --epochs 1 --dropout 0 --threads 1 --ln rms --layers 2 --d-model 16 --heads 2 \
  --d-mlp 32 >"$tmp/run" 2>&1
st=$?
loss=$(sed -n 's/^step 1\/1 .*train loss \([0-9.]*\)$/\1/p' "$tmp/run")
[ $st -eq 0 ] && [ -n "$loss" ] && awk -v l="$loss" 'BEGIN { exit !(l + 0 == l && l < 100) }' &&
  ok "random start --ln rms: one step, loss $loss" || bad "random start --ln rms (status $st)" "$tmp/run"
finish
