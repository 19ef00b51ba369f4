#!/bin/sh
# task_layout.sh -- a compiled path-star model knows its task: `rasp
# compile` records it in STEM.json (layout.task), and rasp-train --init and
# `rasp apply --program` refuse a task laid out differently (exit 2, each
# differing setting named with what fixes it) instead of running the model
# on sequences it does not compute on:
#   - readout4_log (markers = 2) compiled at D = 2, M = 3, V = 8 records
#     markers 2, st_names true, bos and eos false, model decoder;
#   - its encoder variant (answer 'lead', MASK named first) given to
#     rasp-train --init, which has no markers option, gets two-marker
#     samples (21 tokens, config.txt says "markers 2") and is right at the
#     answer before its first step (seq 1.000); the same model with layout.task deleted (as files from
#     before it was recorded) is refused by the older length check, so the
#     adoption is what makes it train;
#   - a decoder6 model given --D 3, no --st-names, --q end or no --no-eos
#     is refused (status 2) with the option that fixes each (--D 2,
#     --st-names, --q start, --no-eos), also by compare; --model encoder by
#     the loader's own check (status 1, "rasp compile --encoder"); with the right options it trains (step 0 seq 1.000), and so
#     does the model without layout.task;
#   - `rasp apply` of the decoder6 model with --program readout4_log
#     (markers 2) or --D 3 is refused naming markers / --D 2; its own
#     program runs; without layout.task nothing is compared.
# Prints "N passed, M failed".
NAME=task_layout
. "${top_srcdir:-.}/tests/lib.sh"
use_trainer
# STEM.json without layout.task, as `rasp compile` wrote it before
untask() { sed 's/, "task": {[^}]*}//' "$1.json" >"$2.json" && cp "$1.safetensors" "$2.safetensors"; }
small="--train 8 --test 32 --batch 8 --max-steps 1 --epochs 1 --dropout 0 --threads 1"

# the task recorded
"$RASP" compile programs/readout4_log.rasp --D 2 --M 3 --V 8 -o "$tmp/r4" >/dev/null 2>&1 ||
  bad "compile readout4_log"
want='"task": {"D": 2, "M": 3, "V": 8, "order": "edge", "q": "start", "answer": "forward", "bos": false, "eos": false, "markers": 2, "st_names": true, "model": "decoder"}'
if grep -qF "$want" "$tmp/r4.json"; then ok
else bad "readout4_log's layout.task: $(grep -o '"task": {[^}]*}' "$tmp/r4.json")"; fi

# rasp-train adopts the markers: step 0 right at the answer
sed -e "s/answer='forward'/answer='lead'/" \
    -e "s/symbols=pathstar_symbols()/symbols=['MASK'] + pathstar_symbols()/" \
    -e "s|include('|include('$(pwd)/programs/|" \
  programs/readout4_log.rasp >"$tmp/r4lead.rasp"
"$RASP" compile "$tmp/r4lead.rasp" --allow-include "$(pwd)/programs" --encoder --D 2 --M 3 \
  --V 8 -o "$tmp/r4e" >/dev/null 2>&1 || bad "compile readout4_log --encoder"
grep -qF '"markers": 2, "st_names": true, "model": "encoder"}' "$tmp/r4e.json" ||
  bad "encoder layout.task: $(grep -o '"task": {[^}]*}' "$tmp/r4e.json")"
enc="--model encoder --answer lead --D 2 --M 3 --V 8 --st-names --no-bos --no-eos"
out=$("$train" --init "$tmp/r4e" $enc $small --out "$tmp/run" 2>&1)
st=$?
if [ $st -eq 0 ] && grep -qx '# markers 2 (the --init model.s edge markers)' "$tmp/run/config.txt" &&
   printf '%s\n' "$out" | grep -q "was compiled for markers = 2; its samples get that many" &&
   printf '%s\n' "$out" | grep -q ' 21 tokens each' &&
   printf '%s\n' "$out" | grep -q '^trial 0 before training: val [0-9.]* seq 1\.000 lead 1\.000 pos 1\.000$'
then ok
else bad "rasp-train --init readout4_log encoder (status $st)"; printf '%s\n' "$out"; fi
untask "$tmp/r4e" "$tmp/r4e_old"
out=$("$train" --init "$tmp/r4e_old" $enc $small 2>&1)
st=$?
if [ $st -ne 0 ] && printf '%s\n' "$out" | grep -q 'the task needs exactly 18'; then ok
else bad "readout4_log without layout.task (status $st)"; printf '%s\n' "$out"; fi

# a decoder6 model and rasp-train's options
"$RASP" compile programs/decoder6_causal.rasp --D 2 --M 3 --V 10 -o "$tmp/d6" >/dev/null 2>&1 ||
  bad "compile decoder6_causal"
refused() { # FIX OPTIONS...: status 2, and FIX named
  fix=$1; shift
  out=$("$train" --init "$tmp/d6" --M 3 --V 10 $small "$@" 2>&1)
  st=$?
  if [ $st -eq 2 ] && printf '%s\n' "$out" | grep -q "^rasp-train: --init '.*d6' was compiled for .*(fix: $fix)$" &&
     ! printf '%s\n' "$out" | grep -q 'training sequences'; then ok
  else bad "rasp-train $* (status $st, wanted 'fix: $fix')"; printf '%s\n' "$out"; fi
}
refused "--D 2" --D 3 --st-names --no-bos --no-eos
refused "--st-names" --D 2 --no-bos --no-eos
out=$("$train" --init "$tmp/d6" --model encoder --D 2 --M 3 --V 10 --st-names --no-bos --no-eos $small 2>&1)
st=$?
if [ $st -eq 2 ] && printf '%s\n' "$out" | grep -q 'rasp compile --encoder'; then ok
else bad "--model encoder of a decoder (status $st)"; printf '%s\n' "$out"; fi
refused "--q start" --q end --D 2 --st-names --no-bos --no-eos
refused "--no-eos" --D 2 --st-names --no-bos
out=$("$train" compare --init "$tmp/d6" --D 3 --M 3 --V 10 --st-names --no-bos --no-eos $small 2>&1)
st=$?
if [ $st -eq 2 ] && printf '%s\n' "$out" | grep -q '(fix: --D 2)$'; then ok
else bad "compare --D 3 (status $st)"; printf '%s\n' "$out"; fi
dec="--D 2 --M 3 --V 10 --st-names --no-bos --no-eos"
untask "$tmp/d6" "$tmp/d6_old"
for stem in d6 d6_old; do
  out=$("$train" --init "$tmp/$stem" $dec $small 2>&1)
  st=$?
  if [ $st -eq 0 ] && printf '%s\n' "$out" | grep -q '^trial 0 before training: val [0-9.]* seq 1\.000 '
  then ok
  else bad "rasp-train --init $stem with its own task (status $st)"; printf '%s\n' "$out"; fi
done

# rasp apply --program
out=$("$RASP" apply "$tmp/d6" --program programs/readout4_log.rasp --D 2 --M 3 --V 10 2>&1)
st=$?
if [ $st -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
   printf '%s\n' "$out" | grep -q "compiled for markers = 1, programs/readout4_log.rasp's task has markers = 2 (the model needs task\['markers'\] = 1)"
then ok
else bad "apply --program readout4_log (status $st)"; printf '%s\n' "$out"; fi
out=$("$RASP" apply "$tmp/d6" --program programs/decoder6_causal.rasp --D 3 --M 3 --V 10 2>&1)
st=$?
if [ $st -eq 2 ] && printf '%s\n' "$out" | grep -q 'compiled for D = 2, .* has D = 3 (give --D 2, or an --input whose graph has D = 2)$'
then ok
else bad "apply --D 3 (status $st)"; printf '%s\n' "$out"; fi
"$RASP" apply "$tmp/d6" --program programs/decoder6_causal.rasp --D 2 --M 3 --V 10 >/dev/null 2>&1 &&
  ok || bad "apply with its own program"
out=$("$RASP" apply "$tmp/d6_old" --program programs/readout4_log.rasp --D 2 --M 3 --V 10 2>&1)
st=$?
if [ $st -eq 2 ] && printf '%s\n' "$out" | grep -q 'compiled for inputs of 19 symbols; the input has 23$'
then ok
else bad "apply without layout.task (status $st)"; printf '%s\n' "$out"; fi

finish
