#!/bin/sh
# repl.sh -- the REPL, through a pipe and through a pseudo-terminal.
#
# Pipe: tests/repl/pipe.in is typed into `rasp repl` on standard input;
# stdout and stderr must equal tests/repl/pipe.out and pipe.err exactly (no
# prompts on a pipe; every colon command, blocks, symbols, errors), the
# line after :quit must not run, and the history file must hold the lines.
# A piped session with a failed entry exits with that entry's status;
# :load is confined as include() is; a path-star program loads on a task
# sample (tests/repl/pathstar.in).
# Then: the end of piped input in the middle of a block runs the block,
# SIGTERM while waiting for piped input saves the history (status 143), a
# SIGHUP ignored at the start stays ignored, and `rasp repl --help` / a bad
# option.
# Pty: tests/repl_pty.py types into the REPL with Readline on (completion,
# history, Ctrl-C, colon commands, blocks, each way out).
# HOME is a temporary directory throughout.  Prints PASS:/FAIL: lines.
NAME=repl.sh
. "$(dirname "$0")/lib.sh"
TIMEOUT=
command -v timeout >/dev/null 2>&1 && TIMEOUT="timeout 120"
# sanitizer_clean FILE WHAT: a failure when FILE holds a sanitizer report
sanitizer_clean() {
  if sanitizer_report "$1"; then bad "$2: sanitizer report" "$1"; fi
}

# ---------------------------------------------------------------- pipe
mkdir "$tmp/home"
HOME=$tmp/home $TIMEOUT "$RASP" repl <tests/repl/pipe.in >"$tmp/out" 2>"$tmp/err"
status=$?
# pipe.in has failing entries: the first is a type error (status 1, as `rasp run`)
[ "$status" -eq 1 ] && ok "piped session with failed entries: status 1" || bad "piped session: status $status"
sanitizer_clean "$tmp/err" "piped session"
if diff -u tests/repl/pipe.out "$tmp/out" >"$tmp/diff"; then
  ok "piped session: stdout"
else
  bad "piped session: stdout differs"
  cat "$tmp/diff"
fi
if diff -u tests/repl/pipe.err "$tmp/err" >"$tmp/diff"; then
  ok "piped session: stderr"
else
  bad "piped session: stderr differs"
  cat "$tmp/diff"
fi
hist=$tmp/home/.rasp_history
if [ -f "$hist" ] && grep -qx ':quit' "$hist" && grep -qx 'count(tokens)' "$hist" &&
   ! grep -q 'this line is not read' "$hist"; then
  ok "piped session: history saved up to :quit"
else
  bad "piped session: history file"
  cat "$hist" 2>/dev/null
fi

# :draw -o FILE writes the graph as `rasp draw -o` does (a PDF through
# Graphviz; the DOT text itself is in pipe.out)
if command -v dot >/dev/null 2>&1; then
  printf 'r = aggregate(select(indices(tokens), indices(tokens), equals), tokens)\n:draw -o %s r\n' \
    "$tmp/r.pdf" | HOME=$tmp/home $TIMEOUT "$RASP" repl >"$tmp/out" 2>"$tmp/err"
  if [ $? -eq 0 ] && head -c 5 "$tmp/r.pdf" 2>/dev/null | grep -q '^%PDF' &&
     grep -q "wrote $tmp/r.pdf" "$tmp/out"; then
    ok ":draw -o r.pdf writes a PDF"
  else
    bad ":draw -o r.pdf"
    cat "$tmp/err"
  fi
else
  skip_part ":draw -o r.pdf (no Graphviz dot)" || fail=$((fail + 1))
fi

# path-star mode: :load of a program that declares `task` runs it on a task
# sample, `output` shows as the task's symbols, :example draws another
# sample (D= M= V= seed=) or takes an input or a `rasp gen` line, and bad
# ones are refused with the reason (tests/repl/pathstar.*)
HOME=$tmp/home $TIMEOUT "$RASP" repl <tests/repl/pathstar.in >"$tmp/out" 2>"$tmp/err"
status=$?
[ "$status" -eq 2 ] && ok "path-star session: status 2 (its first failure, a bad input)" ||
  bad "path-star session: status $status"
sanitizer_clean "$tmp/err" "path-star session"
for f in out err; do
  if diff -u "tests/repl/pathstar.$f" "$tmp/$f" >"$tmp/diff"; then
    ok "path-star session: std$f"
  else
    bad "path-star session: std$f differs"
    cat "$tmp/diff"
  fi
done

# a piped session's status: 0 when every entry ran, else the first failure's
# (a usage error in a colon command is 2, an unknown name 1)
for case in "x = 1|0" "x = 1
:frob|2" "y = nosuch
:frob|1" ":doc nosuch
x = 1|1" ":load|2"; do
  want=${case##*|}
  printf '%s\n' "${case%|*}" | HOME=$tmp/home $TIMEOUT "$RASP" repl >/dev/null 2>"$tmp/err"
  got=$?
  [ "$got" = "$want" ] && ok "piped status $want for: $(echo "${case%|*}" | tr '\n' ';')" ||
    bad "piped status $got, not $want, for: ${case%|*}" "$tmp/err"
done

# :load is confined as include() is: a .rasp file in the session's tree
# (the current directory) or an --allow-include tree, opened once; any
# other file is refused without being quoted
mkdir -p "$tmp/tree/sub" "$tmp/other"
printf 'x = 3\n' >"$tmp/tree/sub/a.rasp"
printf 'x = 5\n' >"$tmp/other/b.rasp"
printf 'secret first line\n' >"$tmp/other/secret.txt"
load_case() { # WANT-STATUS WANT-OUT WANT-ERR REPL-ARGS...: ':load' line on stdin
  w_st=$1 w_out=$2 w_err=$3
  shift 3
  (cd "$tmp/tree" && printf '%s\nx\n' "$load_line" | HOME=$tmp/home $TIMEOUT "$RASP" repl "$@") \
    >"$tmp/out" 2>"$tmp/err"
  st=$?
  if [ "$st" = "$w_st" ] && { [ -z "$w_out" ] || grep -q -e "$w_out" "$tmp/out"; } &&
     { [ -z "$w_err" ] || grep -q -e "$w_err" "$tmp/err"; } &&
     ! grep -q "secret first line" "$tmp/out" "$tmp/err"; then
    ok "$load_line $*: status $st"
  else
    bad "$load_line $*: status $st (wanted $w_st)" "$tmp/out" "$tmp/err"
  fi
}
load_line=":load sub/a.rasp" load_case 0 "^3$" ""
load_line=":load $tmp/other/b.rasp" load_case 1 "" "outside the program's directory tree"
load_line=":load $tmp/other/b.rasp" load_case 0 "^5$" "" --allow-include "$tmp/other"
load_line=":load $tmp/other/secret.txt" load_case 1 "" "is not a program; only .rasp files can be loaded"
ln -s "$tmp/other/secret.txt" "$tmp/tree/link.rasp"
load_line=":load link.rasp" load_case 1 "" "outside the program's directory tree"

# the input ends inside a block: the block still runs
printf 'def f(s):\n    return s + 1\n' >"$tmp/block.in"
printf 'f(indices(tokens))' >>"$tmp/block.in" # no final newline either
HOME=$tmp/home $TIMEOUT "$RASP" repl <"$tmp/block.in" >"$tmp/out" 2>"$tmp/err"
if grep -qx '1 2 3 4 5' "$tmp/out"; then
  ok "piped block without an empty line and last line without newline"
else
  bad "piped block: got $(cat "$tmp/out" "$tmp/err")"
fi

# SIGTERM while the REPL waits for piped input
if command -v mkfifo >/dev/null 2>&1; then
  mkdir "$tmp/home2"
  mkfifo "$tmp/fifo"
  HOME=$tmp/home2 "$RASP" repl <"$tmp/fifo" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  exec 3>"$tmp/fifo"
  printf 'waiting = 5\nwaiting\n' >&3
  i=0
  while ! grep -qx 5 "$tmp/out" 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  kill -TERM $pid
  wait $pid
  status=$?
  exec 3>&-
  [ "$status" -eq 143 ] && ok "SIGTERM on piped input: status 143" ||
    bad "SIGTERM on piped input: status $status"
  grep -qx 'waiting = 5' "$tmp/home2/.rasp_history" 2>/dev/null &&
    ok "SIGTERM on piped input: history saved" || bad "SIGTERM on piped input: no history"
  # a signal ignored at the start stays ignored (nohup): SIGHUP does not end it
  rm -f "$tmp/out"
  (trap '' HUP && HOME=$tmp/home2 exec "$RASP" repl) <"$tmp/fifo" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  exec 3>"$tmp/fifo"
  printf 'still = 6\nstill\n' >&3
  i=0
  while ! grep -qx 6 "$tmp/out" 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  kill -HUP $pid 2>/dev/null
  printf 'still + 1\n' >&3
  exec 3>&-
  wait $pid
  status=$?
  if [ "$status" -eq 0 ] && grep -qx 7 "$tmp/out"; then
    ok "an ignored SIGHUP stays ignored"
  else
    bad "ignored SIGHUP: status $status, output $(cat "$tmp/out")"
  fi
fi

# --help and a bad option
"$RASP" repl --help >"$tmp/out" 2>"$tmp/err"
status=$?
if [ "$status" -eq 0 ] && grep -q '^usage: rasp repl' "$tmp/out" && [ ! -s "$tmp/err" ]; then
  ok "rasp repl --help"
else
  bad "rasp repl --help: status $status"
fi
"$RASP" repl --bogus </dev/null >"$tmp/out" 2>"$tmp/err"
status=$?
if [ "$status" -eq 2 ] && grep -q "unknown option '--bogus'" "$tmp/err"; then
  ok "rasp repl --bogus: status 2"
else
  bad "rasp repl --bogus: status $status"
fi

# ----------------------------------------------------------------- pty
PYTHON=${PYTHON:-python3}
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  [ $fail -eq 0 ] && skip_test "no $PYTHON for the pty test"
  exit 1
fi
mkdir "$tmp/pty"
$TIMEOUT "$PYTHON" tests/repl_pty.py "$RASP" "$tmp/pty" >"$tmp/pty.log" 2>&1
status=$?
cat "$tmp/pty.log"
# 77: no pseudo-terminal here (a skip; a failure under RASP_NO_SKIP=1)
if [ "$status" -eq 77 ]; then
  skip_part "pty session (no pseudo-terminal)" || fail=$((fail + 1))
elif [ "$status" -ne 0 ]; then
  bad "pty session (status $status)"
fi
finish
