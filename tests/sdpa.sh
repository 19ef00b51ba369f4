#!/bin/sh
# sdpa.sh -- compiled models under PyTorch 2's attention formula
# (scaled_dot_product_attention: q and k each times d_head^(-1/4) before
# the product; doc/compiler.md, "Score formulas"):
#   - `rasp compile --check-orders sdpa` agrees on every --check input for
#     the default compile of readout2 and readout5 at D = 5, M = 5,
#     |V| = 1000 (d_head 16), and the same programs with --no-sdpa (d_head
#     4) disagree on some, reported as not sdpa models without failing;
#   - STEM.json's layout.attention.formulas: ["product_first", "sdpa"] by
#     default, ["product_first"] with --no-sdpa;
#   - the Python loader with attention="sdpa" (tests/sdpa_parity.py) on
#     those two models and decoder4 at D = 5, M = 5, |V| = 1000 on task
#     samples, decoder4, readout6 and encoder2 at D = 2, M = 3, |V| = 10,
#     and examples (reverse, sort, histogram, balanced_parens at n = 8 and
#     16): the outputs `rasp apply` prints, logits within 1e-5, and
#     bit-identical to the loader's own product-first pass; a --no-sdpa
#     model is refused with an error naming the field.
# Skipped (77) without numpy in /usr/bin/python3 (the loader part).
NAME=sdpa
. "${top_srcdir:-.}/tests/lib.sh"
PY=/usr/bin/python3

for p in readout2_backward_targets readout5_arms_constant; do
  expect "$p |V| = 1000: agrees under sdpa" 0 '^check order sdpa: 30/30 inputs agree' '' \
    -- compile "programs/$p.rasp" --D 5 --M 5 --V 1000 --check 30 --check-orders c,sdpa \
    -o "$tmp/$p"
  grep -q '"formulas": \["product_first", "sdpa"\]' "$tmp/$p.json" &&
    grep -q '"d_head": 16' "$tmp/$p.json" &&
    ok "$p: d_head 16, formulas product_first and sdpa" || bad "$p: layout" "$tmp/$p.json"
  # (the order disagrees, is labelled, and the check passes: exit 0)
  expect "$p |V| = 1000 --no-sdpa: disagrees under sdpa, labelled" 0 \
    '^check order sdpa: [0-9]*/30 inputs agree .*not an sdpa model' 'order sdpa: input' \
    -- compile "programs/$p.rasp" --D 5 --M 5 --V 1000 --check 30 --check-orders c,sdpa \
    --no-sdpa -o "$tmp/$p.nosdpa"
  grep -q '"formulas": \["product_first"\]' "$tmp/$p.nosdpa.json" &&
    ok "$p --no-sdpa: formulas product_first alone" || bad "$p --no-sdpa: layout" "$tmp/$p.nosdpa.json"
done

$PY -c 'import numpy' 2>/dev/null || skip_test "no numpy"
: >"$tmp/pairs"
pathstar() { # PROGRAM D M V [STEM-SUFFIX COMPILE-ARGS...]
  prog=$1 D=$2 M=$3 V=$4
  stem=$tmp/$prog.$D.$V
  extra=
  case $prog in encoder*) extra=--encoder ;; esac
  if [ ! -f "$stem.json" ] &&
     ! "$RASP" compile "programs/$prog.rasp" --D "$D" --M "$M" --V "$V" $extra -o "$stem" \
       >"$tmp/log" 2>&1; then
    bad "$prog D = $D |V| = $V: compile" "$tmp/log"
    return
  fi
  if ! "$RASP" gen --D "$D" --M "$M" --V "$V" -n 6 --seed 23 --format text --order edge \
       --no-bos --no-eos --st-names >"$stem.in" 2>"$tmp/log"; then
    bad "$prog: gen" "$tmp/log"
    return
  fi
  printf '%s\n%s\n' "$stem" "$stem.in" >>"$tmp/pairs"
}
for p in readout2_backward_targets readout5_arms_constant; do
  cp "$tmp/$p.json" "$tmp/$p.5.1000.json"
  cp "$tmp/$p.safetensors" "$tmp/$p.5.1000.safetensors"
  pathstar "$p" 5 5 1000
done
pathstar decoder4_log_meet 5 5 1000
for p in decoder4_log_meet readout6_causal encoder2_backward_targets; do pathstar "$p" 2 3 10; done
# (an encoder's inputs have MASK where the answer is; rasp apply reads them as given)
printf '%s\n%s\n' "$tmp/readout5_arms_constant.nosdpa" "$tmp/readout5_arms_constant.5.1000.in" \
  >>"$tmp/pairs"

plain() { # PROGRAM VOCAB LENGTH
  stem=$tmp/$(basename "$1" .rasp).$3
  if ! "$RASP" compile "$1" --input-vocab "$2" --length "$3" -o "$stem" >"$tmp/log" 2>&1; then
    bad "$1 n = $3: compile" "$tmp/log"
    return
  fi
  echo "$2" | awk -v n="$3" '{ s = 13; for (k = 0; k < 6; k++) { line = "";
      for (i = 0; i < n; i++) { s = (s * 1103515245 + 12345) % 2147483648;
        line = line (i ? " " : "") $(1 + int(s / 65536) % NF) } print line } }' >"$stem.in"
  printf '%s\n%s\n' "$stem" "$stem.in" >>"$tmp/pairs"
}
for n in 8 16; do
  plain examples/reverse.rasp "a b c" $n
  plain examples/sort.rasp "1 2 3" $n
  plain examples/histogram.rasp "a b c" $n
  plain examples/balanced_parens.rasp "( ) x" $n
done

if $PY tests/sdpa_parity.py "$RASP" "$tmp/pairs" >"$tmp/py" 2>&1; then
  ok "the Python loader under attention='sdpa': $(grep -c '^PASS' "$tmp/py") models and backends"
else
  bad "the Python loader under attention='sdpa'" "$tmp/py"
fi
grep '^PASS\|^FAIL\|^torch' "$tmp/py" | sed 's/^/  /'
finish
