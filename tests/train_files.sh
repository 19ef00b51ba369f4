#!/bin/sh
# train_files.sh -- rasp-train and the files it reads and writes, through the
# binary: model files that claim more than they hold (a 400-byte STEM.json
# claiming 4 GiB of parameters, safetensors headers whose length lies) are
# refused with the file and the value named, under a 2 GB address-space
# limit (or, in a sanitizer build, AddressSanitizer's 1 GiB allocation cap),
# before anything of that size is allocated; --resume refuses a checkpoint
# made with other options (or another --init model under the same name),
# naming each with both values; compare writes its rows, and an arm that
# cannot be set up fails the run (status 1) before compare.csv; a damaged
# manifest is refused by name; temporaries and uncommitted generations of killed runs
# are removed on the next start; a directory in use by another run is
# refused.  Prints "N passed, M failed".
NAME=train_files
. "${top_srcdir:-.}/tests/lib.sh"
use_trainer
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}max_allocation_size_mb=1024"
export ASAN_OPTIONS
# an address-space limit, where the binary runs under one (not with ASan)
limit=2000000
sh -c 'ulimit -v "$1" && "$2" --help; echo $?' sh $limit "$train" 2>/dev/null |
  grep -qx 0 || limit=unlimited
task="--D 2 --M 3 --V 6 --train 8 --test 8 --batch 8 --threads 1"
small="$task --layers 1 --d-model 16 --heads 2 --d-mlp 32"

# expect NAME STATUS STDERR-PATTERN... -- ARGS: runs rasp-train ARGS (this
# runner's own expect, in place of lib.sh's for rasp: several patterns, and
# under the address-space limit)
expect() {
  name=$1 want=$2
  shift 2
  pats=
  while [ "$1" != "--" ]; do
    pats="$pats
$1"
    shift
  done
  shift
  (ulimit -v $limit && exec timeout 120 "$train" "$@") >"$tmp/out" 2>"$tmp/err"
  got=$?
  ok=1
  [ "$got" = "$want" ] || ok=0
  echo "$pats" | while IFS= read -r p; do
    [ -z "$p" ] || grep -q -e "$p" "$tmp/err" || echo "missing: $p"
  done >"$tmp/missing"
  [ -s "$tmp/missing" ] && ok=0
  grep -q -e "AddressSanitizer" -e "runtime error" -e "out of memory" "$tmp/err" && ok=0
  if [ $ok = 1 ]; then
    ok "$name"
  else
    bad "$name (status $got, wanted $want)" "$tmp/missing"
    sed 's/^/  err: /' "$tmp/err" | tail -20
  fi
}

expect small_run 0 "trial 0 epoch 2" -- $small --epochs 2 --out "$tmp/run"
# --init: the model's contents are part of the configuration, not only its name
i="$tmp/i"
cp "$tmp/run/trial0.g000002.json" "$i.json"
cp "$tmp/run/trial0.g000002.safetensors" "$i.safetensors"
expect init_run 0 "trial 0 epoch 1" -- $small --init "$i" --epochs 1 --out "$tmp/run2"
cp "$tmp/run2/trial0.g000001.json" "$i.json"
cp "$tmp/run2/trial0.g000001.safetensors" "$i.safetensors"
expect init_changed 1 "the checkpoint was made with other options: init-weights [0-9a-f]* (checkpoint: [0-9a-f]*);" \
  -- $small --init "$i" --epochs 2 --out "$tmp/run2" --resume
# compare: the arms' rows at steps 0 and 1; an arm that cannot be set up
# ends the run with status 1 and its message, before compare.csv is written
expect compare_run 0 "step 1 b: val" -- compare $small --init "$i" --max-steps 1 \
  --eval-every 1 --arm "a compiled" --arm "b random" --out "$tmp/cmp"
if [ "$(wc -l <"$tmp/cmp/compare.csv")" = 5 ]; then
  pass=$((pass + 1)); echo "PASS: compare_rows"
else
  fail=$((fail + 1)); echo "FAIL: compare_rows"; cat "$tmp/cmp/compare.csv"
fi
expect compare_bad_arm 1 "rasp-train: --reinit-layers: layer 5, the model has 1" -- compare \
  $small --init "$i" --max-steps 1 --arm "a compiled" --arm "b compiled --reinit-layers 5" \
  --out "$tmp/cmp2"
if [ -d "$tmp/cmp2" ] && [ ! -e "$tmp/cmp2/compare.csv" ]; then
  pass=$((pass + 1)); echo "PASS: compare_bad_arm_no_csv"
else
  fail=$((fail + 1)); echo "FAIL: compare_bad_arm_no_csv"
fi

m="$tmp/m"
cp "$tmp/run/trial0.g000002.safetensors" "$m.safetensors"

# the same tensors as the small model, 1048576 x 1024 of them in tok_emb
sed -e 's/"vocab_size": [0-9]*/"vocab_size": 1048576/' \
    -e 's/"d_model": [0-9]*/"d_model": 1024/' -e 's/"d_head": [0-9]*/"d_head": 512/' \
    "$tmp/run/trial0.g000002.json" >"$m.json"
[ $(wc -c <"$m.json") -le 1024 ] || { fail=$((fail + 1)); echo "FAIL: huge.json is not small"; }
expect huge_config_honest_tensors 1 "m.safetensors': tensor 'tok_emb' has the wrong shape (expected \[1048576,1024\])" \
  -- $small --init "$m" --epochs 1
# a header claiming those shapes over 64 bytes of data
hdr='{"tok_emb":{"dtype":"F32","shape":[1048576,1024],"data_offsets":[0,4294967296]}}'
hl=$(printf '%s' "$hdr" | wc -c)
# an 8-byte little-endian length below 256
le8() { printf "\\$(printf %03o "$1")\\000\\000\\000\\000\\000\\000\\000"; }
{ le8 $hl; printf '%s' "$hdr"; head -c 64 /dev/zero; } >"$m.safetensors"
expect huge_config_forged_header 1 "m.safetensors': truncated: tensor 'tok_emb' ends at byte 4294967296 of a 64-byte data section" \
  -- $small --init "$m" --epochs 1
# header lengths that lie: 2^40, and more than the file
{ printf '\000\000\000\000\000\001\000\000'; printf '%s' "$hdr"; } >"$m.safetensors"
expect header_length_huge 1 "m.safetensors': not a safetensors file (header length 1099511627776 is not in 2\.\.16777216)" \
  -- $small --init "$m" --epochs 1
{ printf '\377\000\000\000\000\000\000\000'; printf '%s' "$hdr"; } >"$m.safetensors"
expect header_length_past_end 1 "m.safetensors': truncated (header of 255 bytes, file of $((hl + 8)))" \
  -- $small --init "$m" --epochs 1
printf '\126\000\000' >"$m.safetensors"
expect header_truncated 1 "m.safetensors': not a safetensors file (only 3 bytes)" \
  -- $small --init "$m" --epochs 1

# --resume with other options: each named, with both values
expect resume_other_options 1 \
  "trial0.ckpt': the checkpoint was made with other options" \
  "--heads 4 (checkpoint: 2)" "--lr 0.001 (checkpoint: 0.0005)" \
  "--seed 7 (checkpoint: 1)" "--train 9 (checkpoint: 8)" \
  "--model encoder (checkpoint: decoder)" "--dropout 0 (checkpoint: 0.1)" \
  -- $small --heads 4 --lr 0.001 --seed 7 --train 9 --model encoder --dropout 0 \
     --epochs 3 --out "$tmp/run" --resume
expect resume_same_options 0 "trial 0: resumed after epoch 2 (step 2)" "trial 0 epoch 3" \
  -- $small --epochs 3 --out "$tmp/run" --resume

# what a killed run leaves: temporaries (in the run's own DIR/.rasp-train.tmp)
# and an uncommitted generation (named in trial0.pending before it was
# written); and files of the user's that merely look like them (a
# temporary's name, a generation's), which stay
mkdir -p "$tmp/run/.rasp-train.tmp"
for f in .rasp-train.tmp/trial0.g000004.opt.tmp.a1B2c3 .rasp-train.tmp/trial0.ckpt.tmp.ZZ99zz \
         .rasp-train.tmp/trial0.csv.tmp.q1w2e3 trial0.g000004.safetensors trial0.g000004.json \
         notes.tmp.txt thesis.tmp.draft1 results.csv.tmp.backup trial0.g000009.json; do
  echo partial >"$tmp/run/$f"
done
printf 'rasp-train pending generation 4 after 2\n' >"$tmp/run/trial0.pending"
expect leftovers_removed 0 "removed 3 temporary files left in '.*run/.rasp-train.tmp' by a killed run" \
  -- $small --epochs 3 --out "$tmp/run" --resume
left=$(cd "$tmp/run" && ls | tr '\n' ' ')
if [ "$left" = "config.txt notes.tmp.txt rasp-train.lock results.csv.tmp.backup split.json test_questions.jsonl thesis.tmp.draft1 trial0.ckpt trial0.csv trial0.g000003.json trial0.g000003.opt trial0.g000003.safetensors trial0.g000009.json " ] &&
   [ -z "$(ls -A "$tmp/run/.rasp-train.tmp")" ]; then
  pass=$((pass + 1)); echo "PASS: leftovers_gone, the user's files kept"
else
  fail=$((fail + 1)); echo "FAIL: leftovers_gone: $left / $(ls -A "$tmp/run/.rasp-train.tmp")"
fi

# a damaged manifest
sed -i 's/^generation .*/generation x/' "$tmp/run/trial0.ckpt"
expect damaged_manifest 1 "trial0.ckpt': not a rasp-train checkpoint manifest (or a damaged one)" \
  -- $small --epochs 4 --out "$tmp/run" --resume

# --out makes missing parents; the run directory records every option
expect out_parents 0 "trial 0 epoch 1" -- $small --epochs 1 --lr 0.002 --out "$tmp/new/deeper/run"
for line in "--d-model 16" "--lr 0.002" "--epochs 1" "--stop-loss 0.001" "--trials 1" \
            "--optim adamw" "--threads 1" "--out $tmp/new/deeper/run"; do
  if grep -qxF -e "$line" "$tmp/new/deeper/run/config.txt" 2>/dev/null; then
    pass=$((pass + 1)); echo "PASS: config_txt '$line'"
  else
    fail=$((fail + 1)); echo "FAIL: config_txt lacks '$line'"
  fi
done
: >"$tmp/plainfile"
expect out_under_file 1 "--out: cannot create directory '$tmp/plainfile/run': '$tmp/plainfile' exists and is not a directory" \
  -- $small --epochs 1 --out "$tmp/plainfile/run"

# --opt=VALUE and --version, as in rasp
expect option_equals 0 "trial 0 epoch 1" -- $small --epochs=1 --lr=0.003 --out="$tmp/eq"
grep -qxF -e "--lr 0.003" "$tmp/eq/config.txt" && pass=$((pass + 1)) && echo "PASS: option_equals_recorded" ||
  { fail=$((fail + 1)); echo "FAIL: option_equals_recorded"; }
expect option_equals_bad 2 "bad value 'x' for --lr" -- $small --lr=x
if "$train" --version | grep -qx "rasp-train [0-9][0-9.]*"; then
  pass=$((pass + 1)); echo "PASS: version"
else
  fail=$((fail + 1)); echo "FAIL: version"
fi

# one run per directory
if command -v flock >/dev/null 2>&1; then
  flock "$tmp/run/rasp-train.lock" sleep 3 &
  sleep 0.5
  expect directory_in_use 1 "another rasp-train is using the directory" \
    -- $small --epochs 4 --out "$tmp/run"
  wait
fi

finish
