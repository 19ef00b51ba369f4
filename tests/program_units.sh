#!/bin/sh
# program_units.sh -- experiments/program_units.py reads which of a compiled
# program's values a model of the compiled architecture computes:
#   - a cell whose model is the compiled one itself (saved as a trained
#     checkpoint is: a config with no layout) agrees on every unit, at
#     every position and at l_t's, and answers every l_t;
#   - the same model with layer 2's attention output zeroed agrees on
#     every unit written before layer 2 (the MLPs of layers 0 and 1), not
#     on every unit layer 2's heads write, and loses l_t on some question;
#   - units.csv has one row per cell and unit, and study_tables.py makes
#     units.md of it (the compiled cell's shares are 1.000);
#   - --step N reads the model kept at step N (arm_ARM.stepN.gNNNNNN, as
#     rasp-train compare --keep-every keeps it), not the final one; a step
#     not kept is refused; --out DIR is made if missing, and one that
#     cannot be made is refused with its path; --out FILE.csv writes that
#     file, which study_tables.py renders as FILE.md;
#   - a directory that is not a cell is refused.
# decoder2_backward_targets at D = 2, M = 3, V = 10 on 40 `rasp gen`
# questions.  Skipped (77) when /usr/bin/python3 has no numpy.
NAME=program_units
. "${top_srcdir:-.}/tests/lib.sh"
PY=/usr/bin/python3
$PY -c 'import numpy' 2>/dev/null || skip_test "no numpy"
units="$PY experiments/program_units.py"

small_decoder2

study_cell "$tmp/d2" "$tmp/exact-s1" ""
study_cell "$tmp/d2" "$tmp/cut-s1" layers.2.attn.w_o

if $units --ref "$tmp/d2" --out "$tmp" "$tmp/exact-s1" "$tmp/cut-s1" >"$tmp/out" 2>"$tmp/err"; then
  awk -F, 'NR > 1 && $1 == "exact" && ($7 != "1.0000" || ($8 != "" && $8 != "1.0000") || $9 != "1.0000" || $11 != "1.0000") { b++ }
           NR > 1 && $1 == "exact" { n++ } END { exit !(n > 5 && b == 0) }' "$tmp/units.csv" &&
    ok "the compiled model against itself: every unit agrees everywhere, l_t right" ||
    bad "the compiled model does not agree with itself" "$tmp/units.csv"
  awk -F, 'NR > 1 && $1 == "cut" && $5 < 2 && $7 != "1.0000" { b++ }
           NR > 1 && $1 == "cut" && $5 < 2 { n++ } END { exit !(n > 0 && b == 0) }' "$tmp/units.csv" &&
    ok "layer 2's attention cut: the units before it still agree" ||
    bad "layer 2's attention cut: a unit before it disagrees" "$tmp/units.csv"
  awk -F, 'NR > 1 && $1 == "cut" && $4 == "head" && $5 == 2 && $7 == "1.0000" { b++ }
           NR > 1 && $1 == "cut" && $4 == "head" && $5 == 2 { n++ }
           NR > 1 && $1 == "cut" { acc = $11 } END { exit !(n > 0 && b == 0 && acc < 1) }' \
    "$tmp/units.csv" &&
    ok "layer 2's attention cut: its heads' values and some l_t lost" ||
    bad "layer 2's attention cut: not seen" "$tmp/units.csv"
  rows=$(($(wc -l <"$tmp/units.csv") - 1))
  per=$(grep -c '^exact,' "$tmp/units.csv")
  [ "$rows" = $((2 * per)) ] && ok "units.csv: one row per cell and unit ($rows)" ||
    bad "units.csv has $rows rows for $per units and 2 cells" "$tmp/units.csv"
  mkdir "$tmp/grid"
  cp "$tmp/units.csv" "$tmp/grid/"
  printf 'step,init,train_loss,val_loss,val_lead_acc,val_seq_acc,val_tok_acc,val_other_acc,val_pos0_acc,val_pos1_acc,val_pos2_acc,val_pos3_acc,val_pos4_acc,dist_compiled,program_acc,stopped\n0,exact,,0.1,1,1,1,1,1,1,1,1,1,0,1,\n' \
    >"$tmp/grid/exact-s1.csv"
  if python3 experiments/study_tables.py --no-plot "$tmp/grid" >/dev/null 2>"$tmp/err" &&
    grep -q '^| mlp .* | 1.000 | 1.000 |' "$tmp/grid/units.md" &&
    [ "$(grep -c '^| ' "$tmp/grid/units.md")" = $((per + 3)) ]; then
    ok "study_tables.py makes units.md of units.csv"
  else
    bad "units.md" "$tmp/err" "$tmp/grid/units.md"
  fi
else
  bad "program_units.py failed" "$tmp/err"
fi

# --step: the cut model kept at step 250 beside the exact final one
for f in json safetensors; do cp "$tmp/cut-s1/arm_cut.g000001.$f" "$tmp/exact-s1/arm_exact.step250.g000001.$f"; done
mkdir "$tmp/st0"   # (--out st is made by program_units.py)
$units --ref "$tmp/d2" --out "$tmp/st" --step 250 "$tmp/exact-s1" >"$tmp/out" 2>"$tmp/err"
$units --ref "$tmp/d2" --out "$tmp/st0" "$tmp/exact-s1" >"$tmp/out0" 2>>"$tmp/err"
awk -F, 'NR > 1 && $4 == "head" && $5 == 2 && $7 == "1.0000" { b++ }
         NR > 1 && $4 == "head" && $5 == 2 { n++ } END { exit !(n > 0 && b == 0) }' "$tmp/st/units.csv" 2>/dev/null &&
  ! grep -q ',0\.[0-9]*,' "$tmp/st0/units.csv" &&
  ok "--step 250: the model kept at step 250 (layer 2 cut), not the final one" ||
  bad "--step 250 did not read the kept model" "$tmp/err" "$tmp/st/units.csv" "$tmp/st0/units.csv"
if $units --ref "$tmp/d2" --step 500 "$tmp/exact-s1" >"$tmp/out" 2>"$tmp/err"; then st=0; else st=$?; fi
[ "$st" != 0 ] && grep -q "no arm_ARM.step500.gNNNNNN.json (was it run with --keep-every?)" "$tmp/err" &&
  ok "--step 500, not kept: refused" || bad "--step 500: status $st" "$tmp/err"

# --out FILE.csv: that file (its directory made), a second reading that
# study_tables.py renders as FILE.md beside units.md
$units --ref "$tmp/d2" --out "$tmp/g2/units_onehot.csv" "$tmp/exact-s1" >"$tmp/out" 2>"$tmp/err"
cp "$tmp/grid/exact-s1.csv" "$tmp/grid/units.csv" "$tmp/g2/" 2>/dev/null
if [ "$(grep -c '^exact,' "$tmp/g2/units_onehot.csv" 2>/dev/null)" = "$per" ] &&
  python3 experiments/study_tables.py --no-plot "$tmp/g2" >/dev/null 2>>"$tmp/err" &&
  [ "$(grep -c '^| ' "$tmp/g2/units_onehot.md")" = $((per + 3)) ] && [ -f "$tmp/g2/units.md" ]; then
  ok "--out DIR/units_onehot.csv: that file, rendered as units_onehot.md beside units.md"
else
  bad "--out FILE.csv" "$tmp/err" "$tmp/g2/units_onehot.csv"
fi

: >"$tmp/afile"
if $units --ref "$tmp/d2" --out "$tmp/afile/x" "$tmp/exact-s1" >"$tmp/out" 2>"$tmp/err"; then st=0; else st=$?; fi
[ "$st" != 0 ] && grep -q "^program_units.py: --out $tmp/afile/x: Not a directory" "$tmp/err" &&
  ! grep -q Traceback "$tmp/err" && ok "--out that cannot be made: refused with the path" ||
  bad "--out under a file: status $st" "$tmp/err"

mkdir "$tmp/notacell"
if $units --ref "$tmp/d2" "$tmp/notacell" >"$tmp/out" 2>"$tmp/err"; then st=0; else st=$?; fi
[ "$st" != 0 ] && grep -q "not a study cell" "$tmp/err" && ok "a directory that is not a cell: refused" ||
  bad "not a cell: status $st" "$tmp/err"
finish
