#!/bin/sh
# security.sh -- what an untrusted program, file name or directory can make
# the binaries do (issue 11), through the binaries as a user runs them:
#   - cfunc() is refused, with a located error naming --allow-ffi, by every
#     command that runs a program (run, trace, script mode, verify, layers,
#     draw, compile, repl); with --allow-ffi (RASP_ALLOW_FFI=1 for the REPL)
#     tests/security/ffi_exit.rasp's top level calls _exit(7);
#   - include() of '../x.rasp', of /etc/passwd and through links is refused
#     without quoting the file; --allow-include DIR lets a tree in; a FIFO
#     named x.rasp is refused at once; the file read is the file checked (a
#     directory swapped for a link mid-run brings nothing in);
#   - file names holding shell and gnuplot syntax (rasp draw -o, rasp-train
#     compare --out) are written literally and run nothing;
#   - links planted at the temporary names the tools used to use (OUT.part,
#     OUT.dot.PID, ~/.rasp_history.tmp.PID, compare.png.tmp) are left alone,
#     and so are their targets.  A planted name with the PID comes from
#     `sh -c '... $$; exec rasp ...'`: exec keeps the shell's PID.
# Prints PASS:/FAIL: per check and "N passed, M failed".
NAME=security.sh
. "$(dirname "$0")/lib.sh"
TRAIN=$top_builddir/trainer/rasp-train
# failed NAME WHY: lib.sh's bad, with the stderr of the last run
failed() { bad "$1 ($2)" "$tmp/err"; }
# run ARGS...: the binary's status in $st, its output in $tmp/out, $tmp/err
run() {
  "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  st=$?
}
# has NAME TEXT: stderr contains TEXT (fixed string)
has() { grep -q -F -e "$1" "$tmp/err"; }

# ---- cfunc: off by default in every command, _exit(7) when allowed
ffi=tests/security/ffi_exit.rasp
caret='                    ^'
for cmd in run trace script verify layers draw compile; do
  case $cmd in
    run | trace) set -- "$RASP" "$cmd" "$ffi" --input "a b" ;;
    script) set -- "$RASP" "$ffi" ;;
    compile) set -- "$RASP" compile "$ffi" -o "$tmp/model" ;;
    *) set -- "$RASP" "$cmd" "$ffi" ;;
  esac
  run "$@"
  if [ "$st" = 1 ] && has "$ffi:5:17: cfunc() is off" && has "--allow-ffi" &&
     has "$caret" && ! sanitizer_report "$tmp/err"; then
    ok "ffi_refused_$cmd"
  else
    failed "ffi_refused_$cmd" "status $st"
  fi
  if [ "$cmd" = script ]; then
    set -- "$RASP" --allow-ffi "$ffi"
  else
    set -- "$@" --allow-ffi
  fi
  run "$@"
  if [ "$st" = 7 ]; then ok "ffi_allowed_$cmd"; else failed "ffi_allowed_$cmd" "status $st, wanted 7"; fi
done
[ -e "$tmp/model.json" ] && failed ffi_compile_wrote "a model was written"
repl_in="q = cfunc('libc.so.6', '_exit', 'int(int)')
q(7)
"
printf '%s' "$repl_in" | HOME=$tmp "$RASP" repl >"$tmp/out" 2>"$tmp/err"
st=$?
# (the piped session's entries failed: status 1, and not the 7 of _exit)
if [ "$st" = 1 ] && has "<repl>:1:5: cfunc() is off" && has "RASP_ALLOW_FFI=1"; then
  ok ffi_refused_repl
else
  failed ffi_refused_repl "status $st"
fi
printf '%s' "$repl_in" | HOME=$tmp RASP_ALLOW_FFI=1 "$RASP" repl >"$tmp/out" 2>"$tmp/err"
st=$?
[ "$st" = 7 ] && ok ffi_allowed_repl_env || failed ffi_allowed_repl_env "status $st"
printf '%s' "$repl_in" | HOME=$tmp "$RASP" repl --allow-ffi >"$tmp/out" 2>"$tmp/err"
st=$?
[ "$st" = 7 ] && ok ffi_allowed_repl_option || failed ffi_allowed_repl_option "status $st"
# the variable is the REPL's only: the batch commands ignore it
run env RASP_ALLOW_FFI=1 "$RASP" run "$ffi" --input "a b"
[ "$st" = 1 ] && has "cfunc() is off" && ok ffi_env_not_for_run || failed ffi_env_not_for_run "status $st"

# ---- include(): the program's tree only, and never a quoted non-program
d=$tmp/inc
mkdir -p "$d/prog" "$d/home"
printf 'SECRET_PARENT = 1 +\n' >"$d/x.rasp"
printf 'SECRET_NOTES = 1 +\n' >"$d/prog/notes.txt"
ln -s /etc/passwd "$d/prog/passwd.rasp"
ln -s notes.txt "$d/prog/notes.rasp"
inc() { # inc NAME FILE WHY [OPTIONS]: include(FILE) is refused with WHY
  printf "include('%s')\ndef main(seq):\n    return seq\n" "$2" >"$d/prog/$1.rasp"
  run "$RASP" run "$d/prog/$1.rasp" --input "a" $4
  if [ "$st" = 1 ] && has "$d/prog/$1.rasp:1:1: include(): " && has "$3" &&
     ! grep -q -e SECRET -e 'root:' "$tmp/err" "$tmp/out" && ! sanitizer_report "$tmp/err"; then
    ok "include_$1"
  else
    failed "include_$1" "status $st"
  fi
}
inc parent ../x.rasp "is outside the program's directory tree"
inc etc_passwd /etc/passwd "is not a program"
inc dotdot_passwd ../../../../../../../etc/passwd "is not a program"
inc link_out passwd.rasp "is outside the program's directory tree"
inc link_in notes.rasp "is not a program (it is '"
inc text notes.txt "is not a program"
inc anywhere_passwd /etc/passwd "is not a program" "--allow-include /"
# a FIFO named like a program: refused at once, never waited on
mkfifo "$d/prog/fifo.rasp" 2>/dev/null &&
  { printf "include('fifo.rasp')\ndef main(seq):\n    return seq\n" >"$d/prog/fifo_inc.rasp"
    timeout 20 "$RASP" run "$d/prog/fifo_inc.rasp" --input "a" >"$tmp/out" 2>"$tmp/err"
    st=$?
    [ "$st" = 1 ] && has "is not a regular file" && ok include_fifo ||
      failed include_fifo "status $st (124: it blocked)"; }
# a directory swapped for a link to another tree while include() runs: the
# file read is the file checked, so nothing outside the tree ever runs (a
# stress check: the race it closes is rare, a few runs in a hundred at best)
mkdir -p "$d/race/prog/sub" "$d/race/out"
printf 'print("INSIDE")\n' >"$d/race/prog/sub/m.rasp"
printf 'print("OUTSIDE_RAN")\n' >"$d/race/out/m.rasp"
printf "include('sub/m.rasp')\ndef main(seq):\n    return seq\n" >"$d/race/prog/r.rasp"
python3 -c '
import os, sys, time
d = sys.argv[1]
sub, real, out, stop = d + "/prog/sub", d + "/prog/sub.real", d + "/out", d + "/stop"
t0 = time.time()
while not os.path.exists(stop) and time.time() - t0 < 300:
    os.rename(sub, real); os.symlink(out, sub); os.unlink(sub); os.rename(real, sub)
' "$d/race" &
swapper=$!
escaped=0 n=0
while [ $n -lt 100 ]; do
  "$RASP" run "$d/race/prog/r.rasp" --input "a" >"$tmp/out" 2>&1
  grep -q OUTSIDE_RAN "$tmp/out" && escaped=$((escaped + 1))
  n=$((n + 1))
done
touch "$d/race/stop"
wait $swapper
[ $escaped = 0 ] && ok "include_swap_race (100 runs, none read the other tree)" ||
  failed include_swap_race "$escaped of 100 runs ran the file outside the tree"
# --allow-include lets the parent in: x.rasp is read (its syntax error shows)
run "$RASP" run "$d/prog/parent.rasp" --input "a" --allow-include "$d"
[ "$st" = 1 ] && has "x.rasp:1:" && ok include_allowed_dir || failed include_allowed_dir "status $st"
run "$RASP" run "$d/prog/parent.rasp" --input "a" --allow-include "$d/nope"
[ "$st" = 2 ] && has "--allow-include: '$d/nope' is not a directory" &&
  ok include_bad_dir || failed include_bad_dir "status $st"
# the REPL's tree is the current directory
(cd "$d/prog" && printf "include('../x.rasp')\n" | HOME=$d/home "$RASP" repl) >"$tmp/out" 2>"$tmp/err"
st=$?
if [ "$st" = 1 ] && has "is outside the program's directory tree" && ! grep -q SECRET "$tmp/err"; then
  ok include_repl
else
  failed include_repl "status $st"
fi

# ---- rasp draw: a file name with DOT syntax stays the graph's name
if command -v dot >/dev/null 2>&1; then
  w=$tmp/dotname
  mkdir -p "$w"
  hostile="$w/x\" {a [label=pwned]} digraph \"y.rasp"
  cp examples/reverse.rasp "$hostile"
  "$RASP" draw "$hostile" --input "a b c" >"$w/g.dot" 2>"$tmp/err"
  st=$?
  dot -Tcanon "$w/g.dot" >"$w/canon" 2>>"$tmp/err"
  if [ "$st" = 0 ] && [ "$(grep -c 'pwned' "$w/canon")" = 1 ] &&
     head -1 "$w/canon" | grep -q 'label=pwned.*digraph' &&
     ! grep -q '^[[:space:]]*a[[:space:]]*\[' "$w/canon"; then
    ok "draw_dot_name_escaped"
  else
    failed "draw_dot_name_escaped" "status $st: $(head -3 "$w/canon" | tr '\n' ' ')"
  fi
fi

# ---- rasp draw: a file name full of shell syntax; links at the old names
prog=$(pwd)/programs/listing1_back_target.rasp
if command -v dot >/dev/null 2>&1; then
  for fmt in svg png; do
    w=$tmp/draw_$fmt
    mkdir -p "$w"
    out="g'; touch pwned; echo '.$fmt"
    printf 'precious\n' >"$w/target"
    ln -s target "$w/$out.part"
    (cd "$w" && sh -c 'ln -s target "$1.dot.$$"; exec "$2" draw "$3" --format "$4" -o "$1"' \
       sh "$out" "$RASP" "$prog" "$fmt") >"$tmp/out" 2>"$tmp/err"
    st=$?
    magic=$(head -c 4 "$w/$out" 2>/dev/null | tr -dc 'a-zA-Z<?')
    want='<?xm'
    [ "$fmt" = png ] && want=PNG
    if [ "$st" = 0 ] && [ ! -e "$w/pwned" ] && [ ! -e pwned ] && [ "$magic" = "$want" ]; then
      ok "draw_literal_name_$fmt"
    else
      failed "draw_literal_name_$fmt" "status $st, magic '$magic'"
    fi
    n=$(ls -A "$w" | wc -l)
    if [ -L "$w/$out.part" ] && [ "$(cat "$w/target")" = precious ] && [ "$n" = 4 ]; then
      ok "draw_planted_links_$fmt"
    else
      failed "draw_planted_links_$fmt" "$(ls -lA "$w" | tr '\n' ' ')"
    fi
  done
else
  skip_part "draw svg/png (no dot)" || fail=$((fail + 1))
fi
# without dot, a clear error
run env PATH=/nonexistent "$RASP" draw "$prog" --format svg -o "$tmp/nodot.svg"
[ "$st" = 2 ] && has "cannot run 'dot': not found in PATH" && [ ! -e "$tmp/nodot.svg" ] &&
  ok draw_no_dot || failed draw_no_dot "status $st"

# ---- the REPL's history: a link at ~/.rasp_history.tmp.PID stays a link
h=$tmp/home
mkdir -p "$h"
printf 'precious\n' >"$h/target"
printf 'old_entry\n' >"$h/.rasp_history"
chmod 600 "$h/.rasp_history"
printf 'x = 1\n' | HOME=$h sh -c 'ln -s target "$HOME/.rasp_history.tmp.$$"; exec "$1" repl' sh "$RASP" \
  >"$tmp/out" 2>"$tmp/err"
st=$?
links=$(find "$h" -name '.rasp_history.tmp.*' -type l | wc -l)
others=$(find "$h" -name '.rasp_history.tmp.*' ! -type l | wc -l)
mode=$(stat -c %a "$h/.rasp_history")
if [ "$st" = 0 ] && [ "$(cat "$h/target")" = precious ] && [ "$links" = 1 ] && [ "$others" = 0 ] &&
   grep -q '^old_entry$' "$h/.rasp_history" && grep -q '^x = 1$' "$h/.rasp_history" &&
   [ "$mode" = 600 ]; then
  ok repl_history_planted_link
else
  failed repl_history_planted_link "status $st, links $links, others $others, mode $mode"
fi

# ---- rasp-train compare --out: shell and gnuplot syntax in the directory
if [ -x "$TRAIN" ]; then
  c=$tmp/cmp
  mkdir -p "$c"
  task="--D 2 --M 3 --V 6"
  if "$RASP" compile programs/encoder2_backward_targets.rasp $task --encoder -o "$c/enc" \
       >"$tmp/out" 2>"$tmp/err"; then
    for name in quote pipe; do
      out="x'; touch pwned; echo '"
      [ "$name" = pipe ] && out="<touch pwned; echo "
      mkdir -p "$c/$out"
      printf 'precious\n' >"$c/target"
      ln -s ../target "$c/$out/compare.png.tmp"
      (cd "$c" && "$TRAIN" compare $task --st-names --no-bos --no-eos --model encoder \
         --objective nar --train 16 --test 16 --batch 8 --micro 8 --dropout 0 --threads 1 \
         --init enc --max-steps 1 --eval-every 1 --out "$out") >"$tmp/out" 2>"$tmp/err"
      st=$?
      if [ "$st" = 0 ] && [ ! -e "$c/pwned" ] && [ ! -e pwned ] && [ -s "$c/$out/compare.csv" ] &&
         [ -L "$c/$out/compare.png.tmp" ] && [ "$(cat "$c/target")" = precious ]; then
        ok "compare_literal_out_$name"
      else
        failed "compare_literal_out_$name" "status $st"
      fi
      if command -v gnuplot >/dev/null 2>&1; then
        magic=$(head -c 4 "$c/$out/compare.png" 2>/dev/null | tr -dc 'A-Z')
        [ "$magic" = PNG ] && ok "compare_png_$name" || failed "compare_png_$name" "magic '$magic'"
      fi
    done
  else
    failed compare_model "rasp compile failed"
  fi
fi

finish
