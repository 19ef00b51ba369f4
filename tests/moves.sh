#!/bin/sh
# moves.sh -- the compiler's moves (doc/compiler.md, "Moves"), through the
# binary: an aggregate over an equality select moves one selected value,
# which is the mean only where the selected values are equal.
#   - a bad --moves value is a usage error naming it (status 2);
#   - ties.rasp (--moves assume), whose premise is false on inputs with
#     repeated tokens:
#     --stats names the assumed move and its line, --check fails (status 1)
#     and says on how many inputs the premise held and that the model is
#     right on all of those; --moves prove averages, and --check agrees on
#     every input;
#   - a compile whose --check fails (ties) writes no model files, and
#     leaves the model an earlier compile wrote at that stem byte for byte;
#   - halfties.rasp: --moves one assumes one key per query, which --check
#     tests instead: it holds on fewer inputs than one value (a token at two
#     positions often holds one value there), the model right on those;
#   - reverse: the move is proven (keys: the indices), --stats says so and
#     STEM.json marks the head "move": "proven";
#   - a path-star readout: its moves are assumed (the task's edges), the
#     premise (one key per query, the default) holds on every task input
#     --check draws, STEM.json marks "move": "assumed" and its layout.proof
#     states the premise ("equal selected values" under --moves assume;
#     null for reverse, whose move is proven);
#   - the exact means' siblings: a mean of booleans with a numeric default
#     is right on every input, a mean mixing booleans and numbers is
#     refused at its line with a caret (status 1).
# Prints "N passed, M failed".
NAME=moves
. "${top_srcdir:-.}/tests/lib.sh"

C=tests/fuzz_compile_corpus
for v in '' maybe PROVE 1; do
  expect "--moves '$v' refused" 2 '' "moves: expected assume, prove or one, got '$v'" \
    -- compile $C/ties.rasp --input-vocab 'a b c ( )' --length 5 --dry-run --moves "$v"
done

# ties: assumed, false on ties; the model right wherever it holds
expect "ties: --stats names the assumed move" 1 \
  '^moves: 1 head moves one selected number where the program averages; 1 assumes the selected values are equal (the first: %5 same (aggregate) at tests/fuzz_compile_corpus/ties\.rasp:3:12)' \
  'the assumed move %5 same at tests/fuzz_compile_corpus/ties\.rasp:3:12 sees two values' \
  -- compile $C/ties.rasp --input-vocab 'a b c ( )' --length 5 --dry-run --stats --check 200 \
  --moves assume
held=$(sed -n "s|^check: the assumed moves' premise held on \([0-9]*\)/200 inputs; the model agrees on \([0-9]*\)/\([0-9]*\) of those\$|\1 \2 \3|p" "$tmp/out")
set -- $held
if [ $# -eq 3 ] && [ "$1" -lt 200 ] && [ "$1" = "$2" ] && [ "$1" = "$3" ]; then
  ok "ties: right on the $1 inputs where the premise holds"
else
  bad "ties: premise line '$held'" "$tmp/out"
fi
# a compile whose --check fails writes nothing: not at a new stem, and not
# over the model an earlier compile left at the same stem (--moves prove's,
# which passes its check)
"$RASP" compile $C/ties.rasp --input-vocab 'a b c ( )' --length 5 --moves prove --check 50 \
  -o "$tmp/keep" >/dev/null || bad "ties --moves prove -o: compile"
cp "$tmp/keep.json" "$tmp/keep0.json" && cp "$tmp/keep.safetensors" "$tmp/keep0.safetensors"
expect "ties: a failed check names the stem it leaves alone" 1 '' \
  "the check failed: no model written to $tmp/keep" \
  -- compile $C/ties.rasp --input-vocab 'a b c ( )' --length 5 --check 200 -o "$tmp/keep"
cmp -s "$tmp/keep.json" "$tmp/keep0.json" && cmp -s "$tmp/keep.safetensors" "$tmp/keep0.safetensors" &&
  ok "ties: the earlier model at the stem kept byte for byte" ||
  bad "ties: a failed check changed the model at its stem"
expect "ties: a failed check to a new stem" 1 '' 'the check failed' \
  -- compile $C/ties.rasp --input-vocab 'a b c ( )' --length 5 --check 200 -o "$tmp/gone/m"
[ ! -e "$tmp/gone/m.json" ] && [ ! -e "$tmp/gone/m.safetensors" ] &&
  ok "ties: a failed check leaves no model files" || bad "ties: model files left by a failed check"
# --moves one: the stronger premise, tested as such (halfties: one token at
# two positions often holds one value there)
premise_line() { # the counts of --check's premise line, with its qualifier $1
  sed -n "s|^check: the assumed moves' premise$1 held on \([0-9]*\)/200 inputs; the model agrees on \([0-9]*\)/\([0-9]*\) of those\$|\1 \2 \3|p" "$tmp/out"
}
expect "halfties: one value" 1 '' 'sees two values' \
  -- compile $C/halfties.rasp --input-vocab 'a b c ( )' --length 5 --dry-run --check 200 --moves assume
set -- $(premise_line '')
n_value=${1:-0}
expect "halfties --moves one: --stats names the premise" 1 \
  '^moves: 1 head moves one selected number where the program averages; 1 assumes one selected key per query (--moves one)' \
  'the assumed move %[0-9]* at tests/fuzz_compile_corpus/halfties\.rasp:6:12 sees two selected keys' \
  -- compile $C/halfties.rasp --input-vocab 'a b c ( )' --length 5 --dry-run --stats --check 200 --moves one
held=$(premise_line ' (one key each)')
# (the check fails, so the model is written by a compile without one)
"$RASP" compile $C/halfties.rasp --input-vocab 'a b c ( )' --length 5 -o "$tmp/half" --moves one ||
  bad "halfties --moves one -o: compile"
grep -q '"move": "assumed", "premise": "one key"' "$tmp/half.json" &&
  ok "halfties --moves one: STEM.json names the premise" ||
  bad "halfties --moves one: no premise in STEM.json" "$tmp/half.json"
set -- $held
if [ $# -eq 3 ] && [ "$1" -lt "$n_value" ] && [ "$1" = "$2" ] && [ "$1" = "$3" ]; then
  ok "halfties --moves one: holds on $1 < $n_value inputs, the model right on those"
else
  bad "halfties --moves one: premise line '$held' (one value held on $n_value)" "$tmp/out"
fi
expect "ties --moves prove: exact means, every input" 0 \
  '^check: 200/200 inputs agree with the interpreter' '' \
  -- compile $C/ties.rasp --input-vocab 'a b c ( )' --length 5 --dry-run --stats --check 200 \
  --moves prove
if grep -q '^moves:' "$tmp/out"; then bad "ties --moves prove: still a move" "$tmp/out"; else ok; fi
# (its readout, a categorical one over 150 means, is proven too: the MLP
# before it is bounded per combination of its inputs, doc/compiler.md
# "Errors through the active units"; histogram in proof.sh keeps an
# unproven readout named with its location)
grep -q '^fp32: proven exact against rounding: 6 of 6 heads, MLP units and readout$' "$tmp/out" &&
  ok "ties --moves prove: proven whole" || bad "ties --moves prove: fp32 line" "$tmp/out"

# reverse: proven
expect "reverse: the move proven" 0 \
  '^moves: 1 head moves one selected number where the program averages; the program proves' '' \
  -- compile examples/reverse.rasp --input-vocab 'a b c' --length 6 -o "$tmp/rev" --stats --check 100
grep -q '"move": "proven"' "$tmp/rev.json" && ok "reverse: STEM.json says proven" ||
  bad "reverse: no \"move\": \"proven\" in STEM.json" "$tmp/rev.json"

# a path-star readout: assumed, and the task keeps the premise (by default
# one key per query, which STEM.json's layout.proof states)
expect "readout3: the task keeps the premise" 0 \
  "^check: the assumed moves' premise (one key each) held on 100/100 inputs; the model agrees on 100/100 of those" '' \
  -- compile programs/readout3_forward_start.rasp --D 2 --M 3 --V 10 -o "$tmp/r3" --check 100
grep -q '"move": "assumed"' "$tmp/r3.json" && ok "readout3: STEM.json says assumed" ||
  bad "readout3: no \"move\": \"assumed\" in STEM.json" "$tmp/r3.json"
grep -q '"proof": {"proven": true, .*"premise": "one key per query", "first_assumed_move": "%' "$tmp/r3.json" &&
  ok "readout3: layout.proof states the one-key premise" ||
  bad "readout3: layout.proof lacks the premise" "$tmp/r3.json"
"$RASP" compile programs/readout3_forward_start.rasp --D 2 --M 3 --V 10 -o "$tmp/r3a" --moves assume ||
  bad "readout3 --moves assume: compile"
grep -q '"premise": "equal selected values"' "$tmp/r3a.json" &&
  ok "readout3 --moves assume: layout.proof states equal values" ||
  bad "readout3 --moves assume: layout.proof's premise" "$tmp/r3a.json"
"$RASP" compile examples/reverse.rasp --input-vocab 'a b c' --length 6 -o "$tmp/rev2" ||
  bad "reverse: compile"
grep -q '"assumed_moves": 0, "premise": null' "$tmp/rev2.json" &&
  ok "reverse: no premise (its move is proven)" || bad "reverse: layout.proof's premise" "$tmp/rev2.json"

# the exact means
expect "boolmean: a mean of booleans with default 0" 0 '^check: 100/100 inputs agree' '' \
  -- compile $C/boolmean.rasp --input-vocab 'a b c' --length 6 --dry-run --check 100
expect "mixmean --moves prove: refused at the line" 1 '' \
  "mixmean\.rasp:5:12: compile: a mean of values that mix booleans and numbers" \
  -- compile $C/mixmean.rasp --input-vocab 'a b c' --length 6 --dry-run --moves prove
grep -q '^ *\^' "$tmp/err" && ok "mixmean: a caret" || bad "mixmean: no caret" "$tmp/err"
finish
