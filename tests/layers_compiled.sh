#!/bin/sh
# layers_compiled.sh -- one schedule: for every program in programs/ and
# examples/ at small sizes, `rasp layers` prints the layer count and heads
# per layer of the model `rasp compile` builds (rlayers.h,
# raspL_analyse_compiled).  Where the compiler refuses a program, layers
# must say so (schedule "ir" with the compiler's reason).  Where only the
# default compile's proof refuses a unit (the width is_after of the
# listing6 family at D = 2, M = 5), layers must give the schedule of the
# size-driven model (--unproven), which it counts.  Prints "N passed, M
# failed".
NAME=layers_compiled
. "${top_srcdir:-.}/tests/lib.sh"
rasp=$RASP
lo=$tmp/layers co=$tmp/compile ce=$tmp/err

# check NAME ARGS...: the same size arguments to layers and compile
check() {
  name=$1
  shift
  ok=1
  "$rasp" layers "$@" --json >"$lo" 2>"$ce" || ok=0
  how=compiled
  # a model the default (proof-driven) compile refuses at a unit it cannot
  # prove: layers counts the planner's schedule by size, --unproven's model
  if ! "$rasp" compile "$@" --dry-run --stats >"$co" 2>"$tmp/ce1"; then
    if grep -q 'cannot be compiled exactly in fp32' "$tmp/ce1" &&
       "$rasp" compile "$@" --dry-run --stats --unproven >"$co" 2>>"$ce"; then
      how="the proof refuses; --unproven's model"
    else
      cat "$tmp/ce1" >>"$ce"
      : >"$co"
    fi
  fi
  if [ -s "$co" ]; then
    want=$(sed -n 's/^d_model [0-9]*, layers \([0-9]*\),.*/\1/p' "$co")
    wheads=$(sed -n 's/^heads per layer: *//p' "$co")
    got=$(sed -n 's/.*"layers":\([0-9]*\),.*/\1/p' "$lo")
    gheads=$(sed -n 's/.*"heads":\[\([0-9,]*\)\].*/\1/p' "$lo" | tr ',' ' ')
    grep -q '"schedule":"compiled"' "$lo" || ok=0
    [ -n "$want" ] && [ "$got" = "$want" ] || ok=0
    [ "$gheads" = "$wheads" ] || ok=0
    detail="layers $got heads [$gheads], $how $want heads [$wheads]"
  else
    # refused by the compiler: layers falls back to the IR rule and says why
    grep -q '"schedule":"ir"' "$lo" && grep -q '"why":"..*"' "$lo" || ok=0
    detail="compiler refuses; layers: $(cat "$lo")"
  fi
  if sanitizer_report "$ce"; then ok=0; fi
  if [ $ok = 1 ]; then ok "$name ($detail)"; else bad "$name ($detail)" "$ce"; fi
}

for p in programs/*.rasp; do
  check "$p M=3" "$p" --D 2 --M 3 --V 10
  check "$p M=5" "$p" --D 2 --M 5 --V 100
done
for p in examples/*.rasp; do
  voc="a b c"
  case $p in *balanced_parens*) voc="( ) x" ;; *shuffle_dyck*) voc="( ) { }" ;; esac
  check "$p" "$p" --length 5 --input-vocab "$voc"
done

finish
