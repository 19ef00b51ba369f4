#!/bin/sh
# train_ln.sh -- a pre-LN compiled model (`rasp compile --ln pre`) given to
# rasp-train --init: its layer norms run in rmodel.c's arithmetic (tnet.h,
# exact_ln), so step 0 is the compiled model's.
#   - decoder6_causal at D = 2, M = 3, V = 10, compiled with --ln pre, is
#     right at every answer position before the first step (accuracy 1.000,
#     loss <= 0.01), the same step-0 row as the model compiled without layer
#     norm, and it takes a step;
#   - --ln none with that model leaves it pre-LN (an --init model's
#     architecture is its own).
# Prints "N passed, M failed".
NAME=train_ln
. "${top_srcdir:-.}/tests/lib.sh"
use_trainer
for ln in none pre; do
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
run "$tmp/d_pre" --ln pre
st=$?
line=$(step0)
if [ $st -eq 0 ] && printf '%s\n' "$line" | awk '{ if (NF != 10 || $2 > 0.01 || $4 != "1.000") exit 1;
      for (i = 8; i <= 10; i++) if ($i != "1.000") exit 1 }'; then
  ok "pre-LN step 0: $line"
else
  bad "pre-LN step 0: '$line' (status $st; want loss <= 0.01, accuracy 1.000 everywhere)" "$tmp/run"
fi
[ -n "$line" ] && [ "$line" = "$line0" ] && ok "pre-LN step 0 as without layer norm" ||
  bad "pre-LN step 0 '$line', without layer norm '$line0'"
grep -q "pre-LN (compiled exact)" "$tmp/run" && grep -q '^step 1/1 ' "$tmp/run" &&
  ok "pre-LN: named, one step taken" || bad "pre-LN: run" "$tmp/run"
# --ln is an architecture option: the --init model's own (config.txt
# records it for every run, so a replay passes it too)
run "$tmp/d_pre" --ln none
[ "$(step0)" = "$line" ] && ok "--ln none with a pre-LN model: the model's layer norms" ||
  bad "--ln none with a pre-LN model: '$(step0)'" "$tmp/run"
finish
