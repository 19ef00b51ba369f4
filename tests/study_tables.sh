#!/bin/sh
# study_tables.sh -- the study's tables are what its CSVs give, and
# doc/training.md shows those tables:
#   - experiments/study_tables.py, run on a copy of the committed cells
#     (doc/study/grid/ARM-sSEED.csv and nothing else), writes final.md,
#     final.csv, summary.csv, questions.md and the plots' data
#     byte-identical to the committed ones (a cell added without
#     regenerating them fails here);
#   - every row of questions.md for an arm that has cells is in
#     doc/training.md, word for word (a number changed in the CSVs and
#     not in the prose's tables fails here);
#   - the arithmetic, on a made-up arm of three seeds whose l_t ends at
#     0.4, 0.5 and 0.6: mean 0.500 and Student-t interval 0.5 -+ 4.303 x
#     0.1 / sqrt(3) = [0.252, 0.748]; one seed's last l_t changed changes
#     final.md;
#   - a bad option is a usage error (status 2).
# Prints "N passed, M failed".
NAME=study_tables
. "${top_srcdir:-.}/tests/lib.sh"
command -v python3 >/dev/null 2>&1 || skip_test "no python3"
src=${top_srcdir:-.}
tables="python3 $src/experiments/study_tables.py"

if $tables --bogus >"$tmp/out" 2>"$tmp/err"; then st=0; else st=$?; fi
[ "$st" = 2 ] && grep -q usage "$tmp/err" && ok "a bad option: usage, status 2" ||
  bad "a bad option: status $st" "$tmp/err"

mkdir "$tmp/grid"
for f in "$src"/doc/study/grid/*-s*.csv; do cp "$f" "$tmp/grid/"; done
made="final.md final.csv summary.csv questions.md lead.dat lead.gp"
made="$made q_plateau.dat q_start.dat q_teacher.dat q_frozen.dat"
# the per-unit accounts and the ablations (experiments/program_units.py's
# units*.csv, experiments/head_ablation.py's ablation*.csv), if any
for f in "$src"/doc/study/grid/units*.csv "$src"/doc/study/grid/ablation*.csv; do
  [ -f "$f" ] || continue
  cp "$f" "$tmp/grid/"
  made="$made $(basename "$f" .csv).md"
done
if $tables --no-plot "$tmp/grid" >"$tmp/out" 2>"$tmp/err"; then
  for f in $made; do
    cmp -s "$tmp/grid/$f" "$src/doc/study/grid/$f" && ok "doc/study/grid/$f is what the CSVs give" ||
      bad "doc/study/grid/$f differs from what the CSVs give (run experiments/study_tables.py)"
  done
  n=0 missing=0
  while IFS= read -r row; do
    case $row in
      "| "*" | 0 | not run yet"* | "| arm |"* | "|---"*) continue ;;
      "| "*) n=$((n + 1))
        grep -qxF "$row" "$src/doc/training.md" || { missing=$((missing + 1)); echo "  not in doc/training.md: $row"; } ;;
    esac
  done <<EOF
$(cat "$tmp/grid/questions.md" "$tmp/grid"/units*.md "$tmp/grid"/ablation*.md 2>/dev/null)
EOF
  [ "$n" -gt 0 ] && [ "$missing" = 0 ] &&
    ok "doc/training.md shows all $n rows of questions.md (and units*.md, ablation*.md)" ||
    bad "doc/training.md lacks $missing of the $n rows of questions.md (and units*.md, ablation*.md)"
else
  bad "study_tables.py failed" "$tmp/err"
fi

# a made-up arm: three seeds, l_t at the end 0.4, 0.5, 0.6
mkdir "$tmp/made"
hdr="step,init,train_loss,val_loss,val_lead_acc,val_seq_acc,val_tok_acc,val_other_acc,val_pos0_acc,val_pos1_acc,val_pos2_acc,val_pos3_acc,val_pos4_acc,dist_compiled,program_acc,stopped"
s=1
for lead in 0.4 0.5 0.6; do
  printf '%s\n0,made,,3.4,0.05,0,0.2,0.2,1,0.05,0,0,0,,,\n100,made,0.2,0.2,%s,%s,0.9,1,1,%s,1,1,1,,,\n' \
    "$hdr" "$lead" "$lead" "$lead" >"$tmp/made/made-s$s.csv"
  s=$((s + 1))
done
if $tables --no-plot "$tmp/made" >"$tmp/out" 2>"$tmp/err" &&
  grep -qF '| made | 3 | 100 | 0 | 0.500 [0.252, 0.748] |' "$tmp/made/final.md"; then
  ok "three seeds 0.4, 0.5, 0.6: 0.500 [0.252, 0.748]"
else
  bad "the made-up arm's interval" "$tmp/made/final.md" "$tmp/err"
fi
cp "$tmp/made/final.md" "$tmp/final.before"
sed -i 's/^100,made,0.2,0.2,0.6,/100,made,0.2,0.2,0.9,/' "$tmp/made/made-s3.csv"
$tables --no-plot "$tmp/made" >"$tmp/out" 2>"$tmp/err" || true
cmp -s "$tmp/made/final.md" "$tmp/final.before" && bad "a changed seed left final.md as it was" ||
  ok "a changed seed changes final.md"

finish
