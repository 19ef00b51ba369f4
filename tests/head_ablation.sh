#!/bin/sh
# head_ablation.sh -- experiments/head_ablation.py removes each attention
# head and each MLP of a model in turn and measures l_t's accuracy
# without it; on the compiled decoder2_backward_targets itself (D = 2,
# M = 3, V = 10, 40 `rasp gen` questions, saved as a trained checkpoint is):
#   - intact, every l_t is right;
#   - removing the walk's first step (layer 2's head writing
#     connecting_idxs) loses l_t, and removing layer 2's other head (the
#     look-up u_at_v, which serves the tokens after l_t) loses none;
#   - removing any head that writes none of the program's values changes
#     nothing;
#   - one row per site (3 per layer), the program's values named;
#   - --merge adds a cell's rows to the CSV (each cell's once), and
#     study_tables.py renders ablation*.csv as its .md;
#   - --out not a FILE.csv, one that cannot be made, and --merge without
#     --out are refused.
# Skipped (77) when /usr/bin/python3 has no numpy.
NAME=head_ablation
. "${top_srcdir:-.}/tests/lib.sh"
PY=/usr/bin/python3
$PY -c 'import numpy' 2>/dev/null || skip_test "no numpy"
abl="$PY experiments/head_ablation.py"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

small_decoder2
study_cell "$tmp/d2" "$tmp/exact-s1" ""

if $abl --ref "$tmp/d2" --out "$tmp/made/abl.csv" "$tmp/exact-s1" >"$tmp/out" 2>"$tmp/err"; then
  c="$tmp/made/abl.csv"
  awk -F, 'NR > 1 { n++; if ($7 != "1.0000") b++ } END { exit !(n > 0 && b == 0) }' "$c" &&
    ok "intact: every l_t right" || bad "intact accuracy" "$c"
  grep -q '^exact,1,2,head0,%29:connecting_idxs,0\.' "$c" &&
    ok "layer 2's connecting_idxs head removed: l_t lost" || bad "the walk's first step" "$c"
  grep -q '^exact,1,2,head1,%[0-9]*:u_at_v,1.0000,' "$c" &&
    ok "layer 2's u_at_v head removed: l_t kept" || bad "the look-up head" "$c"
  awk -F, 'NR > 1 && $4 ~ /^head/ && $5 == "" { n++; if ($6 != $7) b++ } END { exit !(n > 0 && b == 0) }' "$c" &&
    ok "a head that writes none of the program's values: removing it changes nothing" ||
    bad "an unused head changed l_t" "$c"
  layers=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["n_layers"])' "$tmp/d2.json")
  [ "$(($(wc -l <"$c") - 1))" = $((3 * layers)) ] && ok "one row per site ($((3 * layers)))" ||
    bad "rows: not 3 per layer" "$c"
else
  bad "head_ablation.py failed" "$tmp/err"
fi

# --merge: cells added to the CSV as they finish, each cell's rows once;
# study_tables.py renders ablation*.csv as its .md
study_cell "$tmp/d2" "$tmp/cut-s2" layers.2.attn.w_o
sites=$((3 * ${layers:-0}))
$abl --ref "$tmp/d2" --out "$tmp/g/ablation_x.csv" "$tmp/exact-s1" >"$tmp/out" 2>"$tmp/err" &&
  $abl --ref "$tmp/d2" --out "$tmp/g/ablation_x.csv" --merge "$tmp/cut-s2" >>"$tmp/out" 2>>"$tmp/err" &&
  $abl --ref "$tmp/d2" --out "$tmp/g/ablation_x.csv" --merge "$tmp/exact-s1" >>"$tmp/out" 2>>"$tmp/err"
c="$tmp/g/ablation_x.csv"
[ "$(grep -c '^exact,1,' "$c" 2>/dev/null)" = "$sites" ] && [ "$(grep -c '^cut,2,' "$c")" = "$sites" ] &&
  [ "$(($(wc -l <"$c") - 1))" = $((2 * sites)) ] &&
  grep -q '^cut,2,0,mlp,.*,0.0000,0.0000,40$' "$c" &&
  ok "--merge: both cells' rows, each once" || bad "--merge" "$tmp/err" "$c"
printf 'step,init,train_loss,val_loss,val_lead_acc,val_seq_acc,val_tok_acc,val_other_acc,val_pos0_acc,val_pos1_acc,val_pos2_acc,val_pos3_acc,val_pos4_acc,dist_compiled,program_acc,stopped\n0,exact,,0.1,1,1,1,1,1,1,1,1,1,0,1,\n' \
  >"$tmp/g/exact-s1.csv"
if python3 experiments/study_tables.py --no-plot "$tmp/g" >/dev/null 2>"$tmp/err" &&
  grep -q '^| nothing (the model as trained) | | 0.000 | 1.000 |$' "$tmp/g/ablation_x.md" &&
  grep -q '^| layer 2 head0 | %29:connecting_idxs | 0.000 | 0.000 |$' "$tmp/g/ablation_x.md" &&
  [ "$(grep -c '^| layer ' "$tmp/g/ablation_x.md")" = "$sites" ]; then
  ok "study_tables.py makes ablation_x.md of it"
else
  bad "ablation_x.md" "$tmp/err" "$tmp/g/ablation_x.md"
fi

if $abl --ref "$tmp/d2" --out "$tmp/abl" "$tmp/exact-s1" >"$tmp/out" 2>"$tmp/err"; then st=0; else st=$?; fi
[ "$st" != 0 ] && grep -q "^head_ablation.py: --out $tmp/abl: not a FILE.csv" "$tmp/err" &&
  ok "--out not a FILE.csv: refused" || bad "--out DIR: status $st" "$tmp/err"
if $abl --ref "$tmp/d2" --merge "$tmp/exact-s1" >"$tmp/out" 2>"$tmp/err"; then st=0; else st=$?; fi
[ "$st" != 0 ] && grep -q "^head_ablation.py: --merge: nothing to merge into without --out" "$tmp/err" &&
  ok "--merge without --out: refused" || bad "--merge without --out: status $st" "$tmp/err"
: >"$tmp/afile"
if $abl --ref "$tmp/d2" --out "$tmp/afile/x.csv" "$tmp/exact-s1" >"$tmp/out" 2>"$tmp/err"; then st=0; else st=$?; fi
[ "$st" != 0 ] && grep -q "^head_ablation.py: --out $tmp/afile/x.csv: Not a directory" "$tmp/err" &&
  ! grep -q Traceback "$tmp/err" && ok "--out that cannot be made: refused with the path" ||
  bad "--out under a file: status $st" "$tmp/err"
finish
