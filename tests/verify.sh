#!/bin/sh
# verify.sh -- the verifier, layers and draw through the real binary: good
# programs pass, deliberately broken ones are caught, bad options and files
# get clear errors.  Prints "N passed, M failed".
NAME=verify
. "${top_srcdir:-.}/tests/lib.sh"
rasp=$RASP
out=$tmp/out err=$tmp/err

# tests/verify/*.rasp include listings from programs/, outside their own
# directory tree: --allow-include programs lets them
g="--graphs 60 --jobs 2"
expect correct_listing 0 "listing1_back_target *2 *5 *60/60  ok" "" -- verify programs/listing1_back_target.rasp --D 2,3 $g
expect readout_variants 0 "readout6_causal *3 *5 *60/60  ok" "" -- verify programs/readout2_backward_targets.rasp programs/readout6_causal.rasp --D 3 $g
expect broken_walk_caught 1 "FAIL" "" -- verify tests/verify/broken_short_walk.rasp --D 2 $g --allow-include programs
expect broken_walk_counterexample 1 "counterexample (D=2" "" -- verify tests/verify/broken_short_walk.rasp --D 2 $g --allow-include programs
expect broken_check_caught 1 "0/60  FAIL" "" -- verify tests/verify/broken_check.rasp --D 2 $g --no-shrink --allow-include programs
expect known_wrong_listing4 0 "listing4_log *2 *9 *[0-9]*/60  fail\*" "" -- verify programs/listing4_log.rasp --D 2 --M 9 $g --quiet
expect known_wrong_listing6_strict 1 "fail\*" "" -- verify programs/listing6_causal.rasp --D 2 --graphs 200 --strict --quiet
expect unexpected_pass 1 "PASS!" "" -- verify tests/verify/wrongly_expected_fail.rasp --D 2 $g --allow-include programs
# check() is staged (rstage.h) unless --interpret-check; both give the same
# verdicts, also on the listing that fails a quarter of its graphs
for prog in listing6_causal listing4_log_fixed listing2_backward_targets readout1_back_target; do
  "$rasp" verify programs/$prog.rasp --D 2..3 --graphs 400 --jobs 2 --json >"$out" 2>"$err"
  staged=$(grep -o '"passed":[0-9]*' "$out" | tr '\n' ' ')
  how=$(grep -c '"check":"staged: ' "$out")
  "$rasp" verify programs/$prog.rasp --D 2..3 --graphs 400 --jobs 2 --json --interpret-check >"$out" 2>"$err"
  interp=$(grep -o '"passed":[0-9]*' "$out" | tr '\n' ' ')
  how2=$(grep -c '"check":"interpreted: --interpret-check"' "$out")
  if [ -n "$staged" ] && [ "$staged" = "$interp" ] && [ "$how" = 2 ] && [ "$how2" = 2 ]; then
    pass=$((pass + 1)); echo "PASS: staged_check_agrees_$prog"
  else
    fail=$((fail + 1)); echo "FAIL: staged_check_agrees_$prog: staged $staged ($how), interpreted $interp ($how2)"
  fi
done
expect unstaged_check_still_verdicts 1 "0/60  FAIL" "" -- verify tests/verify/broken_check.rasp --D 2 $g --no-shrink --interpret-check --allow-include programs
expect fixed_listing4_M9 0 "listing4_log_fixed *2 *9 *60/60  ok" "" -- verify programs/listing4_log_fixed.rasp --D 2 --M 9 $g
expect exhaustive_count 0 "all 48 inputs" "" -- verify programs/listing2_backward_targets.rasp --D 2 --M 3 --exhaustive
expect exhaustive_arm_order 0 "all 4 inputs (every arm order" "" -- verify programs/listing5_arms_constant.rasp --D 2 --M 3 --exhaustive
expect exhaustive_cap 1 "" "refus\|cap\|exceed" -- verify programs/listing2_backward_targets.rasp --D 3 --M 4 --exhaustive --cap 1000
# The faithful Listing 4 under its own vocabulary (j first): it fails
# exactly at M = 9, 15, 17, 19 of 3..20 (README, "Listing 4")
"$rasp" verify programs/listing4_log.rasp --D 2 --M 3..20 --graphs 300 --jobs 2 --json >"$out" 2>"$err"
failing=$(grep '"ok":false' "$out" | sed 's/.*"M":\([0-9]*\).*/\1/' | tr '\n' ' ')
if [ "$failing" = "9 15 17 19 " ] && [ "$(grep -c '"ok":true' "$out")" = 14 ]; then
  pass=$((pass + 1)); echo "PASS: listing4_failing_M"
else
  fail=$((fail + 1)); echo "FAIL: listing4_failing_M: failing M = '$failing'"
fi
# --sweep: one row per program naming the failing cells, its own M range
expect sweep_compact 0 "listing4_log *2 *3-17 *15 *3000  fail\* .*M=9,15,17" "" -- verify --sweep programs/listing4_log.rasp --D 2 --graphs 200 --jobs 2
expect sweep_counterexample 0 "counterexample (D=2, M=9" "" -- verify --sweep programs/listing4_log.rasp --D 2 --graphs 200 --jobs 2
expect sweep_default_M 0 "listing2_backward_targets *2,3 *3-10 *16 .* ok .* -$" "" -- verify --sweep programs/listing2_backward_targets.rasp --D 2,3 --graphs 50 --jobs 2
expect sweep_verbose 0 "listing2_backward_targets *3 *10 *50/50  ok" "" -- verify --sweep -v programs/listing2_backward_targets.rasp --D 2,3 --graphs 50 --jobs 2
expect sweep_strict 1 "fail\*" "" -- verify --sweep --strict programs/listing6_causal.rasp --D 2 --graphs 100 --quiet
# --exhaustive is a proof only for programs proven order-invariant (the
# faithful Listing 4 passes at M = 4 under its j-first vocabulary, so its
# declared expect = fail makes that run a PASS!, status 1)
expect exhaustive_proof 0 "proof (the program is order-invariant)" "" -- verify programs/listing4_log_fixed.rasp --D 2 --M 4 --exhaustive
expect exhaustive_sample 1 "sample (the id order was fixed: line 32: token ids are compared by order" "" -- verify programs/listing4_log.rasp --D 2 --M 4 --exhaustive --quiet
expect exhaustive_json_proof 0 '"proof":true,"order":"invariant"' "" -- verify programs/listing2_backward_targets.rasp --D 2 --M 3 --exhaustive --json
expect exhaustive_json_sample 0 '"proof":false,"order":"line 35: where mixes token ids' "" -- verify programs/listing1_back_target.rasp --D 2 --M 3 --exhaustive --json
expect exhaustive_watches_averages 0 "sample (the id order was fixed: an aggregate averaged different ids on 48 inputs)" "" -- verify tests/verify/averages_ids.rasp --D 2 --M 3 --exhaustive --allow-include programs
expect exhaustive_json_watched 0 '"watched_aggregates":1,"inputs_averaging_ids":0' "" -- verify programs/listing2_backward_targets.rasp --D 2 --M 3 --exhaustive --json
# --vocab-order shuffled: each graph also judged under its own random ids
expect shuffled_catches_listing4 0 "listing4_log *2 *9 .*fail\* .*/60 CHANGED" "" -- verify programs/listing4_log.rasp --D 2 --M 9 $g --vocab-order shuffled --quiet
expect shuffled_same_fixed 0 "60/60  ok .*60/60 same" "" -- verify programs/listing4_log_fixed.rasp --D 2 --M 9 $g --vocab-order shuffled
expect shuffled_json 0 '"verdicts_changed":0' "" -- verify programs/listing3_forward_start.rasp --D 2 $g --vocab-order shuffled --json
expect shuffled_sweep 0 "ids: M=4-10" "" -- verify --sweep programs/listing4_log.rasp --D 2 --M 3..10 --graphs 40 --jobs 2 --vocab-order shuffled --quiet
expect bad_vocab_order 2 "" "--vocab-order: expected fixed or shuffled, got 'sorted'" -- verify programs/listing2_backward_targets.rasp --vocab-order sorted
expect shuffled_not_exhaustive 2 "" "does not combine" -- verify programs/listing2_backward_targets.rasp --vocab-order shuffled --exhaustive
expect bad_symbols_first 2 "" "task\['symbols_first'\] must be True or False, not 'first'" -- verify tests/verify/bad_symbols_first.rasp --allow-include programs
expect json_output 0 '"program":"listing3_forward_start","D":2,"M":5,"V":100,"n":28,"mode":"random","seed":1' "" -- verify programs/listing3_forward_start.rasp --D 2 --json $g
# a rasp gen line in another layout: the error names what differs and the
# rasp gen flags that write the task's inputs, and those flags' line runs
gl=$("$rasp" gen --D 2 --M 3 --V 10 -n 1)
expect gen_layout_hint 2 "" "the input starts with BOS and the task has none; the input ends in EOS and the task has none; \`rasp gen --V 10 --no-bos --no-eos --st-names --answer none\` writes its inputs" -- verify programs/listing1_back_target.rasp --V 10 --input "$gl"
gl=$("$rasp" gen --D 2 --M 3 --V 10 -n 1 --no-bos --no-eos --st-names --answer none)
expect gen_layout_fixed 0 "verdict:  ok" "" -- verify programs/listing1_back_target.rasp --V 10 --input "$gl"
# sizes outside the task are one usage error before any cell runs
expect sizes_outside_task 2 "" "2 of the 3 cells asked for are outside the task: (D=2, M=4) (D=2, M=5); V = 5 node symbols" -- verify programs/listing1_back_target.rasp --D 2 --M 3..5 --V 5 --graphs 10
# --exhaustive --jobs 2 splits the enumeration between two threads and
# gives what one gives (seconds aside): a proof, a run with a watched
# aggregate, a failing one
same=1
for case in "programs/listing2_backward_targets.rasp --D 2 --M 5" \
            "tests/verify/averages_ids.rasp --D 2 --M 5" "tests/verify/broken_short_walk.rasp --D 2 --M 5"; do
  # shellcheck disable=SC2086
  for j in 1 2; do
    "$rasp" verify $case --allow-include programs --exhaustive --json --jobs $j 2>/dev/null |
      sed 's/"seconds":[0-9.]*//' >"$out.$j"
  done
  cmp -s "$out.1" "$out.2" && grep -q '"total":80640' "$out.1" || { same=0; echo "  differs: $case"; diff "$out.1" "$out.2"; }
done
if [ $same = 1 ]; then
  pass=$((pass + 1)); echo "PASS: exhaustive_jobs_same"
else
  fail=$((fail + 1)); echo "FAIL: exhaustive_jobs_same"
fi
rm -f "$out.1" "$out.2"
# a failing cell's JSON carries its first failing input, which `verify
# --input` reads and fails on again
"$rasp" verify programs/listing6_causal.rasp --D 2 --M 5 --graphs 50 --json >"$out" 2>"$err"
ce=$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["counterexample"]["input"])' "$out" 2>/dev/null)
if [ -n "$ce" ] && "$rasp" verify programs/listing6_causal.rasp --input "$ce" 2>&1 | grep -q "verdict:  FAIL"; then
  pass=$((pass + 1)); echo "PASS: json_counterexample_replays"
else
  fail=$((fail + 1)); echo "FAIL: json_counterexample_replays ('$ce')"; head -c 600 "$out"
fi
expect causal_declared_checked 1 "" "not_causal.rasp:5:12: the program declares task\['causal'\] = True, but this select (equals, not causal) reads later positions" -- verify tests/verify/not_causal.rasp --D 2 $g --allow-include programs
# causality: the static check names the node that reads ahead (in verify and
# compile); the dynamic one counts its probes; ~ of a causal select stays
# causal, so the issue's look-ahead program now fails honestly and its
# compiled model agrees with the interpreter
expect lookahead_refused 1 "" "lookahead.rasp:13:30: the program declares task\['causal'\] = True, but this select (equals, not causal) reads later positions" -- verify tests/verify/lookahead.rasp --D 2 $g
expect lookahead_compile_refused 1 "" "lookahead.rasp:13:30: .* reads later positions" -- compile tests/verify/lookahead.rasp --D 2 --M 4 --V 8 -o "$out.model"
expect lookahead_not_fails 1 "lookahead_not *2 *5 *0/60  FAIL" "" -- verify tests/verify/lookahead_not.rasp --D 2 $g --quiet
expect lookahead_not_compiles 0 "check: 20/20 inputs agree" "" -- compile tests/verify/lookahead_not.rasp --D 2 --M 4 --V 8 -o "$out.model" --check 20
rm -f "$out.model" "$out.model.json" "$out.model.safetensors"
# compile -o creates the directories STEM needs; --dry-run writes nothing
d=$(mktemp -d)
expect compile_makes_dirs 0 "check: 3/3 inputs agree" "" -- compile examples/histogram.rasp --input-vocab "a b" --check 3 -o "$d/new/deeper/h"
[ -f "$d/new/deeper/h.json" ] && [ -f "$d/new/deeper/h.safetensors" ] ||
  { fail=$((fail + 1)); echo "FAIL: compile_makes_dirs (no model in $d/new/deeper)"; }
abs=$(cd "$(dirname "$rasp")" && pwd)/rasp here=$(pwd)
(cd "$d" && RASP_STDLIB="$here/stdlib" "$abs" compile "$here/examples/histogram.rasp" --input-vocab "a b" --dry-run --stats >/dev/null 2>&1)
[ $? = 0 ] && [ "$(ls "$d")" = new ] && pass=$((pass + 1)) && echo "PASS: compile_dry_run_writes_nothing" ||
  { fail=$((fail + 1)); echo "FAIL: compile_dry_run_writes_nothing ($(ls "$d"))"; }
rm -rf "$d"
expect causal_probes_json 0 '"causal_probes":64,"causal_leaks":0' "" -- verify programs/readout6_causal.rasp --D 2 --graphs 1000 --json
# --input: one input, D and M read off its graph.  The counterexample the
# verifier prints for Listing 4 fails again when given back and its fix
# passes it; a `rasp gen` JSON line is read as it is; what is not an input of
# the program's task is refused (status 2) naming the token at fault
cx=$("$rasp" verify programs/listing4_log.rasp --D 2 --M 9 $g | sed -n 's/^    input:    //p' | head -1)
expect input_counterexample_fails 1 "verdict:  FAIL (check() failed)" "" -- verify programs/listing4_log.rasp --input "$cx"
expect input_fix_passes 0 "listing4_log_fixed on one input (D=2, M=9, n=68):" "" -- verify programs/listing4_log_fixed.rasp --input "$cx"
json=$("$rasp" gen --D 3 --M 4 -n 1 --seed 5 --st-names --no-bos --no-eos --answer forward)
expect input_gen_json 0 "verdict:  ok (check() passed)" "" -- verify programs/readout2_backward_targets.rasp --input "$json"
expect input_wrong_answer 2 "" "--input: input token 18 '5': the answer has 't' here" -- verify programs/readout2_backward_targets.rasp --input "/ s t = s 3 | 3 t | s 5 | 5 7 | s 3 5"
expect input_not_star 2 "" "input token 14 '3': a second edge into this node" -- verify programs/readout2_backward_targets.rasp --input "/ s t = s 3 | 3 t | s 5 | 5 3 | s 3 t"
expect input_not_token 2 "" "input token 4 'x': not a token of the task" -- verify programs/listing1_back_target.rasp --input "/ s t = x 3 | 3 t | s 5 | 5 7 |"
expect input_bad_json 2 "" "a JSON input needs a \"tokens\" array" -- verify programs/listing1_back_target.rasp --input '{"D": 2}'
expect input_alone 2 "" "does not combine" -- verify programs/listing1_back_target.rasp --input "/ s t = s 3 | 3 t | s 5 | 5 7 |" --D 2
expect input_below_min_M 1 "" "needs M >= 3" -- verify programs/listing1_back_target.rasp --input "/ s t = s t | s 5 |"
# rasp run takes a path-star program's input as verify --input does
expect run_task_bad_input 2 "" "rasp run: --input: the input has 0 '|' tokens" -- run programs/listing1_back_target.rasp --input "1 2 3"
expect no_task 2 "" "declares no task settings" -- verify tests/verify/no_task.rasp
expect bad_task_order 2 "" "task\['order'\] must be 'edge' or 'arm', not 'diagonal'" -- verify tests/verify/bad_order.rasp --allow-include programs
expect misspelt_setting 2 "" "unknown task setting 'ordr'" -- verify tests/verify/misspelt_setting.rasp --allow-include programs
expect syntax_error 1 "" "syntax_error.rasp:3:17: expected an expression" -- verify tests/verify/syntax_error.rasp
expect missing_file 2 "" "cannot read 'tests/verify/nope.rasp'" -- verify tests/verify/nope.rasp
expect bad_D 2 "" "--D: expected an integer in 1..1000000, got 'x'" -- verify programs/listing1_back_target.rasp --D x
expect bad_range 2 "" "empty range '5..2'" -- verify programs/listing1_back_target.rasp --D 5..2
expect bad_graphs 2 "" "--graphs: expected an integer" -- verify programs/listing1_back_target.rasp --graphs 0
expect unknown_option 2 "" "unknown option '--frobnicate'" -- verify programs/listing1_back_target.rasp --frobnicate
expect no_program 2 "" "no program given" -- verify
expect V_too_small 2 "" "fewer than" -- verify programs/listing1_back_target.rasp --D 5 --V 10
expect M_below_min 2 "" "needs M >= 3" -- verify programs/listing1_back_target.rasp --M 2 --D 2
expect layers_linear 0 "growth: linear in M" "" -- layers programs/listing2_backward_targets.rasp --M 3..12
expect layers_log 0 "growth: logarithmic in M" "" -- layers programs/listing4_log_fixed.rasp --M 3..33
expect layers_constant 0 "growth: constant (5 layers" "" -- layers programs/listing5_arms_constant.rasp --M 3..12
expect draw_dot 0 "digraph \"listing5_arms_constant\"" "" -- draw programs/listing5_arms_constant.rasp
expect draw_bad_format 2 "" "--format: expected dot, svg, png, pdf or json, got 'gif'" -- draw programs/listing5_arms_constant.rasp --format gif
# the table fits 100 columns: heads per layer abbreviated ("2x2" for a run),
# in full under -v; a one-line legend explains fail*
"$rasp" verify programs/readout6_causal.rasp --D 2 --graphs 20 --jobs 2 >"$out" 2>"$err"
w=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$out")
if [ "$w" -le 100 ] && grep -q "readout6_causal .* 0x3 2 3 1 2 1 2 0x3 2 1 2" "$out"; then
  pass=$((pass + 1)); echo "PASS: table_width"
else
  fail=$((fail + 1)); echo "FAIL: table_width ($w columns)"; cat "$out"
fi
expect table_verbose_heads 0 " 0 0 0 2 3 1 2 1 2 0 0 0 2 1 2 1 2 0 0 0 2 1 2 1 2 0 0 0 2 1 1 1 1 0 0 1 0 1$" "" -- verify programs/readout6_causal.rasp --D 2 --graphs 20 --jobs 2 -v
expect sweep_width 0 "^listing1_back_target         2-5   3-10    32      1280  ok     10-66  -$" "" -- verify programs/listing1_back_target.rasp --sweep --graphs 40 --jobs 2
expect legend_fail_star 0 "^fail\*: failed as its task\['expect'\] = 'fail' declares" "" -- verify programs/listing4_log.rasp --D 2 --M 9 $g --quiet
# --exhaustive prints a counterexample as random mode does, and shows its
# progress on a terminal (a run of 3 s or more; `script` gives the terminal)
expect exhaustive_counterexample 1 "counterexample (D=2, M=4, n=22; exhaustive input 0" "" -- verify tests/verify/broken_short_walk.rasp --allow-include programs --exhaustive --D 2 --M 4
expect exhaustive_no_shrink 1 "first failing input: exhaustive input 0" "" -- verify tests/verify/broken_short_walk.rasp --allow-include programs --exhaustive --D 2 --M 4 --no-shrink
if command -v script >/dev/null 2>&1 && script -qc true /dev/null >/dev/null 2>&1; then
  t0=$(date +%s)
  script -qc "'$rasp' verify programs/listing1_back_target.rasp --D 3 --M 4 --exhaustive" /dev/null >"$out" 2>&1
  t1=$(date +%s)
  if grep -q "listing1_back_target D=3 M=4: [0-9]*/1088640 inputs" "$out"; then
    pass=$((pass + 1)); echo "PASS: exhaustive_progress"
  elif [ $((t1 - t0)) -lt 3 ]; then
    echo "SKIP: exhaustive_progress (the run took under 3 s)"
  else
    fail=$((fail + 1)); echo "FAIL: exhaustive_progress"; tr '\r' '\n' <"$out" | head
  fi
else
  echo "SKIP: exhaustive_progress (no script(1))"
fi
# layers and draw take plain programs (no `task`) too, like compile: traced
# for --length over --input-vocab, --vocab or --input's symbols; --json
# everywhere; draw -o picks the format from the file's extension
expect layers_plain 0 "growth: constant (3 layers for every n)" "" -- layers examples/sort.rasp --input-vocab "a b c" --length 1..6
expect layers_plain_input 0 '"program":"histogram","length":4,"n":4,"layers":1' "" -- layers examples/histogram.rasp --input "a b a c" --json
expect layers_plain_no_vocab 2 "" "a plain program (no \`task\`) needs --input TEXT, --input-vocab TEXT or --vocab FILE" -- layers examples/sort.rasp
expect layers_task_sizes_kept 2 "" "rasp layers: --M is for programs that declare \`task\`; examples/sort.rasp does not" -- layers examples/sort.rasp --M 3..5 --input-vocab "a b"
expect layers_json_rows 0 '"D":2,"M":4,"n":22,"layers":5,"attention_layers":4,"mlp_layers":4,"heads":\[0,1,1,1,1\],"schedule":"compiled","ir_layers":4,"heads_total":4,"heads_written":4,"chained":3,"decodes":1}' "" -- layers programs/listing5_arms_constant.rasp --M 3..5 --json
expect layers_json_growth 0 '"growth":"constant","in":"M","min_layers":5,"max_layers":5' "" -- layers programs/listing5_arms_constant.rasp --M 3..5 --json
# layers prints the compiled model's schedule (tests/layers_compiled.sh checks
# it against compile for every program); the IR rule, with the compiler's
# reason, for a program the compiler refuses; --length is the lengths asked for
expect layers_refused 0 "(IR rule: the compiler refuses: task\['symbols_first'\] renumbers the tokens)" "" -- layers programs/listing4_log.rasp --M 3
expect layers_cse 0 '"layers":1,"attention_layers":1,"mlp_layers":0,"heads":\[1\],"schedule":"compiled","ir_layers":2,"heads_total":1,"heads_written":3' "" -- layers tests/verify/head_twice.rasp --input-vocab "a b c" --length 5 --json
expect layers_plain_length 0 '"program":"sort","length":17,"n":17,"layers":3' "" -- layers examples/sort.rasp --input-vocab "a b c" --length 17 --json
expect draw_plain 0 "digraph \"sort\"" "" -- draw examples/sort.rasp --input "3 1 2"
expect draw_plain_length 0 "digraph \"reverse\"" "" -- draw examples/reverse.rasp --input-vocab "a b" --length 5
expect draw_json 0 '^{"program":"listing5_arms_constant","outputs":\[[0-9]*\],"nodes":\[{"id":' "" -- draw programs/listing5_arms_constant.rasp --json
expect draw_json_format_conflict 2 "" "--json does not combine with --format svg" -- draw programs/listing5_arms_constant.rasp --json --format svg
expect draw_one_program 2 "" "one program at a time" -- draw programs/listing5_arms_constant.rasp programs/listing4_log.rasp
# draw and the verifier's counterexamples place each node by the one
# schedule, the compiled model's (rlayers.h): draw's deepest node is in the
# last of the layers `rasp layers` counts, where the IR rule (ir_layers)
# gives fewer for most of these programs (listing1: 10 against 4)
differ=0 bad=
for prog in programs/*.rasp examples/sort.rasp examples/histogram.rasp; do
  case $prog in
    programs/*) set -- --D 2 --M 4 ;;
    *) set -- --input "3 1 2 1" ;;
  esac
  "$rasp" layers "$prog" "$@" --json 2>"$err" | grep '"schedule":"compiled"' >"$out"
  want=$(sed -n 's/.*"layers":\([0-9]*\),.*/\1/p' "$out")
  ir=$(sed -n 's/.*"ir_layers":\([0-9]*\),.*/\1/p' "$out")
  [ -n "$want" ] || continue # the compiler refuses it: the IR rule in both
  got=$("$rasp" draw "$prog" "$@" --json 2>>"$err" | grep -o '"layer":[0-9]*' | cut -d: -f2 |
    sort -n | tail -n 1)
  [ "$got" = "$want" ] || bad="$bad $prog (draw $got, layers $want)"
  [ "$ir" = "$want" ] || differ=$((differ + 1))
done
if [ -z "$bad" ] && [ "$differ" -ge 10 ]; then
  pass=$((pass + 1)); echo "PASS: draw_layers_one_schedule ($differ programs where the IR rule differs)"
else
  fail=$((fail + 1)); echo "FAIL: draw_layers_one_schedule:$bad; IR rule differs in $differ"; cat "$err"
fi
# `rasp trace` of a plain program prints the same schedule as `rasp layers`
# (sort at n = 3: the IR rule has 1 MLP sublayer, the compiled model 2)
"$rasp" layers examples/sort.rasp --input "3 1 2" --json >"$out" 2>"$err"
want=$(sed -n 's/.*"layers":\([0-9]*\),"attention_layers":\([0-9]*\),"mlp_layers":\([0-9]*\),.*/\1 layers (\2 attention, \3 MLP)/p' "$out")
if [ -n "$want" ] && "$rasp" trace examples/sort.rasp --input "3 1 2" 2>>"$err" | grep -q "^$want; .*the compiled model's"; then
  pass=$((pass + 1)); echo "PASS: trace_layers_one_schedule ($want)"
else
  fail=$((fail + 1)); echo "FAIL: trace_layers_one_schedule (layers: '$want')"; cat "$err"
fi
# -o g.json writes JSON, -o g.dot DOT, -o g.png (with dot installed) a PNG
d=$(mktemp -d)
"$rasp" draw examples/sort.rasp --input "1 2" -o "$d/g.json" >"$out" 2>"$err" &&
  "$rasp" draw examples/sort.rasp --input "1 2" -o "$d/g.dot" >>"$out" 2>>"$err"
if [ $? = 0 ] && [ ! -s "$out" ] && grep -q '^{"program":"sort"' "$d/g.json" &&
   grep -q '^digraph "sort"' "$d/g.dot"; then
  pass=$((pass + 1)); echo "PASS: draw_format_from_extension"
else
  fail=$((fail + 1)); echo "FAIL: draw_format_from_extension"; cat "$err"
fi
if command -v dot >/dev/null 2>&1; then
  "$rasp" draw examples/sort.rasp --input "1 2" -o "$d/g.png" >"$out" 2>"$err"
  if [ $? = 0 ] && [ "$(head -c 4 "$d/g.png" | tail -c 3)" = PNG ]; then
    pass=$((pass + 1)); echo "PASS: draw_png_from_extension"
  else
    fail=$((fail + 1)); echo "FAIL: draw_png_from_extension"; cat "$err"
  fi
  "$rasp" draw examples/sort.rasp --input "1 2" -o "$d/g.pdf" >"$out" 2>"$err"
  if [ $? = 0 ] && [ "$(head -c 5 "$d/g.pdf")" = %PDF- ]; then
    pass=$((pass + 1)); echo "PASS: draw_pdf_from_extension"
  else
    fail=$((fail + 1)); echo "FAIL: draw_pdf_from_extension"; cat "$err"
  fi
else
  if [ "${RASP_NO_SKIP:-}" = 1 ]; then # a skip is a failure then (tests/lib.sh)
    fail=$((fail + 1)); echo "FAIL: draw_png_from_extension (no dot; RASP_NO_SKIP=1)"
  else
    echo "SKIP: draw_png_from_extension (no dot)"
  fi
fi
# an extension draw does not write is refused, not filled with DOT text
"$rasp" draw examples/sort.rasp --input "1 2" -o "$d/g.jpg" >"$out" 2>"$err"
if [ $? = 2 ] && [ ! -e "$d/g.jpg" ] && grep -q "an extension draw does not write" "$err"; then
  pass=$((pass + 1)); echo "PASS: draw_unknown_extension"
else
  fail=$((fail + 1)); echo "FAIL: draw_unknown_extension"; cat "$err"
fi
rm -rf "$d"
# an option the command would not use is refused, naming it
expect unused_option_draw 2 "" "rasp draw: option '--graphs' is for rasp verify; draw does not use it" -- draw programs/listing1_back_target.rasp --graphs 3
expect unused_option_verify 2 "" "rasp verify: option '--length' is for rasp layers, draw and compile; verify does not use it" -- verify programs/listing1_back_target.rasp --length 3
expect unused_plain_option 2 "" "rasp layers: --input is for plain programs; listing1_back_target declares a task" -- layers programs/listing1_back_target.rasp --input "a b"
# one convention: --opt=VALUE everywhere, --version everywhere, rasp help CMD
expect option_equals 0 "listing1_back_target *2 *5 *20/20  ok" "" -- verify programs/listing1_back_target.rasp --D=2 --graphs=20 --jobs=2
expect option_equals_run 0 "^1 2 3$" "" -- run examples/sort.rasp --input="3 1 2"
expect option_equals_bad 2 "" "--graphs: expected an integer" -- verify programs/listing1_back_target.rasp --graphs=x
expect option_equals_unknown 2 "" "unknown option '--frob'" -- layers programs/listing1_back_target.rasp --frob=1
for cmd in run trace verify layers draw gen compile apply repl; do
  expect "version_$cmd" 0 "^rasp $cmd [0-9][0-9.]*$" "" -- $cmd --version
  # the one option parser (rasp/cli_opts.c) in every command
  expect "unknown_option_$cmd" 2 "" "rasp $cmd: unknown option '--bogus'" -- $cmd --bogus=1
  expect "help_$cmd" 0 "^usage: rasp $cmd" "" -- $cmd x --help
  expect "help_cmd_$cmd" 0 "^usage: rasp $cmd" "" -- help $cmd
  expect "flag_value_$cmd" 2 "" "rasp $cmd: --help takes no value, got '1'" -- $cmd --help=1
done
expect unused_option_apply_verify 2 "" "rasp verify: option '--logits' is for rasp apply; verify does not use it" -- verify programs/listing1_back_target.rasp --logits
expect needs_value 2 "" "rasp trace: --entry needs a value (NAME)" -- trace examples/sort.rasp --input "1 2" --entry
# a path-star program's own input for run, trace and draw (the verifier's context)
ps_in="/ s t = s 3 | 3 t | s 5 | 5 7 |"
expect run_task_verdict 0 "verdict:  ok (check() passed)" "" -- run programs/listing1_back_target.rasp --input "$ps_in"
expect run_task_failing_verdict 0 "verdict:  FAIL (check() failed)" "" -- run programs/listing4_log.rasp --D 2 --M 9 --seed 1
expect run_task_drawn 0 "on one input (D=3, M=4, n=31)" "" -- run programs/listing1_back_target.rasp --D 3 --M 4 --seed 9
expect run_task_below_min 2 "" "rasp run: programs/listing1_back_target.rasp needs M >= 3" -- run programs/listing1_back_target.rasp --M 2
expect run_task_symbols 2 "" "rasp run: --symbols is for plain programs; programs/listing1_back_target.rasp declares \`task\`" -- run programs/listing1_back_target.rasp --input "$ps_in" --symbols
expect run_task_set 2 "" "rasp run: --set is for plain programs" -- run programs/listing1_back_target.rasp --set arm_len=3 --input "$ps_in"
expect run_task_input_and_D 2 "" "rasp run: --D draws a sample; with --input, D and M come from the input's graph" -- run programs/listing1_back_target.rasp --input "$ps_in" --D 2
expect run_plain_D 2 "" "rasp run: --D is for programs that declare \`task\`; examples/sort.rasp does not" -- run examples/sort.rasp --input "1 2" --D 2
expect trace_plain_seed 2 "" "rasp trace: --seed is for programs that declare \`task\`" -- trace examples/sort.rasp --input "1 2" --seed 2
expect trace_task_drawn 0 "^outputs: " "" -- trace programs/listing2_backward_targets.rasp --D 2 --M 4
expect draw_task_input 0 'digraph "listing1_back_target"' "" -- draw programs/listing1_back_target.rasp --input "$ps_in"
expect draw_task_input_and_M 2 "" "rasp draw: --input gives D and M (from its graph); it does not combine with --M" -- draw programs/listing1_back_target.rasp --input "$ps_in" --M 4
expect draw_plain_D 2 "" "rasp draw: --D is for programs that declare \`task\`; examples/sort.rasp does not" -- draw examples/sort.rasp --input "1 2" --D 3
expect help_command 0 "^usage: rasp layers PROGRAM" "" -- help layers
expect help_unknown 2 "" "rasp help: unknown command 'nope'" -- help nope
expect gen_count 0 "" "" -- gen --count --D 2 --M 3 --V 5

finish
