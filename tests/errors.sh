#!/bin/sh
# errors.sh -- bad programs and bad command lines must fail cleanly: a
# message (for program errors "file:line:col: message", the source line and
# a caret), exit status 1 (program error) or 2 (usage, file or input error),
# never a crash, a sanitizer report or a hang.
#
# A case NAME is a set of files in tests/errors/:
#   NAME.expect  line 1: the expected exit status; every further line is a
#                string that must occur in stderr (exactly, as one line's
#                substring; leading spaces count, so caret lines can be
#                checked)
#   NAME.rasp    the program; by default run as
#                `rasp run tests/errors/NAME.rasp --input "a b c"`
#   NAME.args    optional: other arguments after `rasp` (shell quoting)
#   NAME.in      optional: standard input (default /dev/null)
# Prints PASS:/FAIL: per case and "N passed, M failed".
NAME=errors.sh
. "$(dirname "$0")/lib.sh"
limit=300   # seconds per case; a hang is a failure (a 10M-step limit case took
            # over 60 s under the sanitizers at load 7.5 on a 2-core machine)
TIMEOUT=
command -v timeout >/dev/null 2>&1 && TIMEOUT="timeout $limit"

pass=0
fail=0
for expect in tests/errors/*.expect; do
  name=$(basename "$expect" .expect)
  dir=tests/errors
  input=/dev/null
  [ -f "$dir/$name.in" ] && input=$dir/$name.in
  if [ -f "$dir/$name.args" ]; then
    args=$(cat "$dir/$name.args")
  else
    args="run $dir/$name.rasp --input \"a b c\""
  fi
  eval "set -- $args"
  $TIMEOUT "$RASP" "$@" <"$input" >"$tmp/out" 2>"$tmp/err"
  status=$?
  want_status=$(sed -n 1p "$expect")
  why=
  if [ "$status" -eq 124 ] && [ -n "$TIMEOUT" ]; then
    why="did not finish within ${limit}s"
  elif [ "$status" -ge 128 ]; then
    why="crashed (exit status $status)"
  elif grep -q -e AddressSanitizer -e LeakSanitizer -e 'runtime error' "$tmp/err"; then
    why="sanitizer report"
  elif [ "$status" -ne 1 ] && [ "$status" -ne 2 ]; then
    why="exit status $status, expected 1 or 2"
  elif [ "$status" != "$want_status" ]; then
    why="exit status $status, expected $want_status"
  elif [ ! -s "$tmp/err" ]; then
    why="no message on stderr"
  else
    sed 1d "$expect" >"$tmp/want"
    while IFS= read -r want; do
      [ -z "$want" ] && continue
      if ! grep -q -F -e "$want" "$tmp/err"; then
        why="stderr lacks: $want"
        break
      fi
    done <"$tmp/want"
  fi
  if [ -z "$why" ]; then
    echo "PASS: $name"
    pass=$((pass + 1))
  else
    echo "FAIL: $name ($why)"
    head -20 "$tmp/err" | sed 's/^/    stderr: /'
    fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
