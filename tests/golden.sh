#!/bin/sh
# golden.sh -- runs the `rasp` binary on each case in tests/golden/ and
# compares what it prints with the expected output.
#
# A case NAME is a set of files in tests/golden/:
#   NAME.args    the command-line arguments after `rasp` (shell quoting),
#                e.g.  run examples/reverse.rasp --input "h e l l o" --symbols
#   NAME.out     the expected standard output (exact)
#   NAME.in      optional: standard input (default /dev/null)
#   NAME.status  optional: the expected exit status (default 0)
#   NAME.err     optional: the expected standard error (exact); without it,
#                standard error must be empty
#   NAME.rasp    optional: the program, when no example fits
# Commands run from $top_srcdir, so arguments name files relative to the
# source tree.  Prints PASS:/FAIL: per case and "N passed, M failed".
NAME=golden.sh
. "$(dirname "$0")/lib.sh"

pass=0
fail=0
for args_file in tests/golden/*.args; do
  name=$(basename "$args_file" .args)
  dir=tests/golden
  input=/dev/null
  [ -f "$dir/$name.in" ] && input=$dir/$name.in
  want_status=0
  [ -f "$dir/$name.status" ] && want_status=$(cat "$dir/$name.status")
  args=$(cat "$args_file")
  eval "set -- $args"
  "$RASP" "$@" <"$input" >"$tmp/out" 2>"$tmp/err"
  status=$?
  why=
  if [ "$status" != "$want_status" ]; then
    why="exit status $status, expected $want_status"
  elif ! cmp -s "$tmp/out" "$dir/$name.out"; then
    why="stdout differs"
    diff -u "$dir/$name.out" "$tmp/out" | sed 's/^/    /'
  elif [ -f "$dir/$name.err" ]; then
    if ! cmp -s "$tmp/err" "$dir/$name.err"; then
      why="stderr differs"
      diff -u "$dir/$name.err" "$tmp/err" | sed 's/^/    /'
    fi
  elif [ -s "$tmp/err" ]; then
    why="unexpected stderr"
  fi
  if [ -z "$why" ]; then
    echo "PASS: $name"
    pass=$((pass + 1))
  else
    echo "FAIL: $name ($why)"
    sed 's/^/    stderr: /' "$tmp/err" | head -20
    fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
