#!/bin/sh
# train_recipe.sh -- rasp-train's recipe and its record, through the binary:
#   - a compare with arms of three bases and a recipe (warm-up, cosine
#     decay, clipping) replays bit for bit from its config.txt
#     (`rasp-train --config DIR/config.txt --out NEW`): every arm's final
#     checkpoint has the same parameter and optimiser checksums, compare.csv
#     is the same; so does a trials run (its trial checkpoint);
#   - config.txt says what each arm ran (the compiled architecture for the
#     compiled and random arms, the command line's for a standard one) and
#     holds no value the parser refuses;
#   - the recipe changes the run (without --clip the weights differ), and
#     is logged;
#   - progress: a line every --progress steps in a log, none with --quiet;
#   - --teacher: a random arm taught by the compiled model moves toward it;
#     a standard arm, through the fitted map, too, and resumes bit for bit;
#     --teacher-attn: the heads' KL to the teacher's falls.
# Prints "N passed, M failed".
NAME=train_recipe
. "${top_srcdir:-.}/tests/lib.sh"
use_trainer

task="--D 2 --M 3 --V 10 --st-names --no-bos --no-eos"
"$RASP" compile programs/decoder6_causal.rasp --D 2 --M 3 --V 10 -o "$tmp/m" >/dev/null 2>&1 ||
  { bad "rasp compile decoder6_causal failed"; finish; exit 1; }
small="--train 200 --test 50 --batch 16 --micro 16 --layers 1 --d-model 16 --heads 2 --d-mlp 16"
recipe="--warmup 2 --decay cosine --lr-floor 0.2 --clip 0.5"
fnvs() { # DIR: the final checkpoints' checksums (compare's arms, or trial 0)
  for f in "$1"/arm_c.ckpt "$1"/arm_r.ckpt "$1"/arm_s.ckpt "$1"/trial0.ckpt; do
    [ -f "$f" ] || continue
    printf '%s ' "$(basename "$f")"; grep _fnv "$f" | tr '\n' ' '; echo
  done
}

# shellcheck disable=SC2086
"$train" compare $task --init "$tmp/m" $small $recipe --max-steps 6 --eval-every 3 \
  --arm "c compiled --lr 1e-4" --arm "r random" --arm "s standard --dropout 0" \
  --progress 2 --out "$tmp/a" >"$tmp/a.out" 2>&1 ||
  bad "the compare run failed" "$tmp/a.out"
# compare.gp: the run's settings in the title, the legend below the panels
grep -q "^set multiplot layout 1,3 title 'D 2, M 3, |V| 10, decoder; 200 training draws, 50 test questions (held out); batch 16, lr 0.0005, warm-up 2, cosine decay, clip 0.5, weight decay 0.01, seed 1'$" "$tmp/a/compare.gp" &&
  grep -q "^set key below$" "$tmp/a/compare.gp" && ok "compare.gp: the settings in its title, the legend below" ||
  bad "compare.gp's title or legend" "$tmp/a/compare.gp"
"$train" --config "$tmp/a/config.txt" --out "$tmp/b" --quiet >"$tmp/b.out" 2>&1 ||
  bad "the replay from config.txt failed" "$tmp/b.out"
fnvs "$tmp/a" >"$tmp/a.fnv"
fnvs "$tmp/b" >"$tmp/b.fnv"
[ "$(wc -l <"$tmp/a.fnv")" = 3 ] && cmp -s "$tmp/a.fnv" "$tmp/b.fnv" &&
  cmp -s "$tmp/a/compare.csv" "$tmp/b/compare.csv" &&
  ok "compare replays bit for bit from config.txt (3 arms' checksums, compare.csv)" ||
  bad "the replay differs" "$tmp/a.fnv" "$tmp/b.fnv"
grep -q "^# arm c ran: --layers 21 .*(a BOS position first)" "$tmp/a/config.txt" &&
  grep -q "^# arm r ran: --layers 21 .*random weights of the compiled" "$tmp/a/config.txt" &&
  grep -q "^# arm s ran: --layers 1 --d-model 16 .*--dropout 0" "$tmp/a/config.txt" &&
  ok "config.txt says what each arm ran" || bad "config.txt's arms" "$tmp/a/config.txt"
grep -v '^#' "$tmp/a/config.txt" | grep -q ' yes$\| no$' &&
  bad "config.txt writes flags with values" "$tmp/a/config.txt" ||
  ok "config.txt: flags as the parser takes them"
grep -q "cosine decay to 0.2 x lr by step 6, gradient norm clipped to 0.5" "$tmp/a.out" &&
  ok "the recipe is logged" || bad "no recipe line" "$tmp/a.out"
[ "$(grep -c '^step [0-9]*/6 ' "$tmp/a.out")" = 3 ] && ok "--progress 2: three progress lines" ||
  bad "--progress 2: not three progress lines" "$tmp/a.out"
grep -q '^step [0-9]*/' "$tmp/b.out" && bad "--quiet printed progress" "$tmp/b.out" ||
  ok "--quiet: no progress lines"

# the recipe is not a no-op: without --clip the compiled arm ends elsewhere
# shellcheck disable=SC2086
"$train" compare $task --init "$tmp/m" $small --warmup 2 --decay cosine --lr-floor 0.2 \
  --max-steps 6 --eval-every 3 --arm "c compiled --lr 1e-4" --quiet --out "$tmp/c" \
  >"$tmp/c.out" 2>&1 || bad "the run without --clip failed" "$tmp/c.out"
a=$(grep params_fnv "$tmp/a/arm_c.ckpt") c=$(grep params_fnv "$tmp/c/arm_c.ckpt")
[ -n "$a" ] && [ "$a" != "$c" ] && ok "--clip changes the compiled arm's weights" ||
  bad "--clip changed nothing ($a, $c)"

# trials replay too
# shellcheck disable=SC2086
"$train" $task $small $recipe --max-steps 4 --quiet --out "$tmp/t" >"$tmp/t.out" 2>&1 ||
  bad "the trials run failed" "$tmp/t.out"
"$train" --config "$tmp/t/config.txt" --out "$tmp/u" >"$tmp/u.out" 2>&1 ||
  bad "the trials replay failed" "$tmp/u.out"
[ -n "$(grep params_fnv "$tmp/t/trial0.ckpt")" ] &&
  [ "$(grep _fnv "$tmp/t/trial0.ckpt")" = "$(grep _fnv "$tmp/u/trial0.ckpt")" ] &&
  ok "a trials run replays bit for bit from config.txt" ||
  bad "the trials replay differs" "$tmp/t/trial0.ckpt" "$tmp/u/trial0.ckpt"
# loss_falls NAME STEPS RATIO WHAT: the teacher loss $tmp/NAME.out's progress
# lines show at step STEPS is below RATIO times step 1's
loss_falls() {
  first=$(sed -n "s/^step 1\/$2 .*teacher loss \([0-9.e+-]*\)$/\1/p" "$tmp/$1.out")
  last=$(sed -n "s/^step $2\/$2 .*teacher loss \([0-9.e+-]*\)$/\1/p" "$tmp/$1.out")
  if awk -v a="$first" -v b="$last" -v r="$3" 'BEGIN { exit !(a > 0 && b < r * a) }'; then
    ok "$4 falls ($first at step 1, $last at step $2)"
  else
    bad "$4 did not fall ($first at step 1, $last at step $2)" "$tmp/$1.out"
  fi
}

# the compiled program as a teacher: a random arm of its architecture
# taught by it moves its states toward the teacher's (the teacher loss
# falls) and agrees with more of the program's heads than the same arm
# untaught
# shellcheck disable=SC2086
"$train" compare $task --init "$tmp/m" --train 400 --test 50 --batch 16 --micro 8 --dropout 0 \
  --lr 1e-3 --max-steps 40 --eval-every 40 --progress 1 --arm "r random" \
  --arm "t random --teacher $tmp/m --teacher-weight 100" --out "$tmp/teach" \
  >"$tmp/teach.out" 2>&1 || bad "the taught run failed" "$tmp/teach.out"
loss_falls teach 40 0.7 "the taught arm's teacher loss"
pr=$(sed -n 's/^arm r: .*program heads \([0-9.]*\)$/\1/p' "$tmp/teach.out")
pt=$(sed -n 's/^arm t: .*program heads \([0-9.]*\)$/\1/p' "$tmp/teach.out")
awk -v r="$pr" -v t="$pt" 'BEGIN { exit !(t > r + 0.2) }' &&
  ok "taught, the random arm agrees with the program's heads on $pt (untaught $pr)" ||
  bad "program heads: taught $pt, untaught $pr" "$tmp/teach.out"
grep -q "^--teacher-weight 100$" "$tmp/teach/config.txt" 2>/dev/null ||
  grep -q "^# arm t ran: .*--teacher .* --teacher-weight 100" "$tmp/teach/config.txt" &&
  ok "config.txt records the teacher" || bad "config.txt lacks the teacher" "$tmp/teach/config.txt"
# attention patterns as targets (--teacher-attn, the states' weight 0):
# the heads' KL to the teacher's falls; a standard arm is refused
# shellcheck disable=SC2086
"$train" compare $task --init "$tmp/m" --train 400 --test 50 --batch 16 --micro 8 --dropout 0 \
  --lr 1e-3 --max-steps 20 --eval-every 20 --progress 1 \
  --arm "a random --teacher $tmp/m --teacher-weight 0 --teacher-attn 10" --out "$tmp/teacha" \
  >"$tmp/teacha.out" 2>&1 || bad "the run taught by attention failed" "$tmp/teacha.out"
loss_falls teacha 20 0.6 "taught by attention patterns: the heads' KL"
grep -q "^# arm a ran: .*--teacher-attn 10" "$tmp/teacha/config.txt" &&
  ok "config.txt records --teacher-attn" || bad "config.txt lacks --teacher-attn" "$tmp/teacha/config.txt"
# shellcheck disable=SC2086
"$train" compare $task --init "$tmp/m" $small --max-steps 1 \
  --arm "s standard --teacher $tmp/m --teacher-attn 1" >"$tmp/teacha2.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "teacher-attn: attention patterns are compared head by head" "$tmp/teacha2.out" &&
  ok "--teacher-attn on another architecture: refused (exit 2)" ||
  bad "--teacher-attn on a standard arm: exit $rc" "$tmp/teacha2.out"

# a standard arm (pre-LN, another width and depth, no BOS) is taught
# through the map fitted on each batch: its teacher loss falls as well,
# and a resumed run of it is the same run (the map keeps nothing)
# shellcheck disable=SC2086
"$train" compare $task --init "$tmp/m" --train 400 --test 50 --batch 16 --micro 8 --dropout 0 \
  --layers 2 --d-model 48 --heads 2 --d-mlp 48 --ln pre --lr 3e-3 --max-steps 30 \
  --eval-every 15 --progress 1 --arm "s standard --teacher $tmp/m --teacher-weight 100" \
  --out "$tmp/teachs" >"$tmp/teachs.out" 2>&1 || bad "the taught standard run failed" "$tmp/teachs.out"
loss_falls teachs 30 0.7 "a standard arm taught through the fitted map: its teacher loss"
# shellcheck disable=SC2086
"$train" compare $task --init "$tmp/m" --train 400 --test 50 --batch 16 --micro 8 --dropout 0 \
  --layers 2 --d-model 48 --heads 2 --d-mlp 48 --ln pre --lr 3e-3 --max-steps 15 \
  --eval-every 15 --quiet --arm "s standard --teacher $tmp/m --teacher-weight 100" \
  --out "$tmp/teachr" >"$tmp/teachr.out" 2>&1 &&
  "$train" compare $task --init "$tmp/m" --train 400 --test 50 --batch 16 --micro 8 --dropout 0 \
  --layers 2 --d-model 48 --heads 2 --d-mlp 48 --ln pre --lr 3e-3 --max-steps 30 \
  --eval-every 15 --quiet --arm "s standard --teacher $tmp/m --teacher-weight 100" \
  --out "$tmp/teachr" --resume >>"$tmp/teachr.out" 2>&1 || bad "the resumed taught run failed" "$tmp/teachr.out"
a=$(grep _fnv "$tmp/teachs/arm_s.ckpt") b=$(grep _fnv "$tmp/teachr/arm_s.ckpt")
[ -n "$a" ] && [ "$a" = "$b" ] && ok "a taught standard arm resumed at step 15 ends bit for bit where the unbroken run ends" ||
  bad "the resumed taught arm differs" "$tmp/teachs/arm_s.ckpt" "$tmp/teachr/arm_s.ckpt"

# a value with a line break would replay as another option: refused
"$train" --init "$(printf 'x\n--lr 10')" >"$tmp/nl.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "a line break in the value" "$tmp/nl.out" &&
  ok "a line break in a value: refused (exit 2)" || bad "a line break in a value: exit $rc" "$tmp/nl.out"

# a bad --config line is named with its file and line
printf -- '--D 2\nbogus line\n' >"$tmp/bad.txt"
"$train" --config "$tmp/bad.txt" >"$tmp/bad.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "bad.txt:2: expected" "$tmp/bad.out" &&
  ok "a bad --config line: exit 2, file:line" || bad "bad --config: exit $rc" "$tmp/bad.out"
finish
