# lib.sh -- shared set-up of the shell test runners (golden.sh, errors.sh).
# Source it with NAME set to the runner's name; it sets RASP (the binary),
# RASP_STDLIB, changes to $top_srcdir and makes a temporary directory $tmp
# that is removed on exit.
#
# Skips: a test that cannot run here (no clang, no pseudo-terminal, no
# torch) calls `skip_test WHY` (the whole test: exit 77, which automake
# counts as SKIP) or `skip_part WHY` (one part; the test goes on).  With
# RASP_NO_SKIP=1 in the environment (.ci/run and the README's test command
# set it) both are failures instead, so a CI machine that lost a tool
# cannot pass by skipping what it was meant to check.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
case $top_builddir in /*) ;; *) top_builddir=$(pwd)/$top_builddir ;; esac
RASP=$top_builddir/rasp/rasp
if [ ! -x "$RASP" ]; then
  echo "$NAME: no binary at $RASP" >&2
  exit 2
fi
RASP_STDLIB=${RASP_STDLIB:-$(cd "$top_srcdir" && pwd)/stdlib}
export RASP_STDLIB
cd "$top_srcdir" || exit 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rasp-$NAME.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

skip_test() { # WHY
  if [ "${RASP_NO_SKIP:-}" = 1 ]; then
    echo "FAIL: $NAME: $1 (RASP_NO_SKIP=1: a skip is a failure)"
    exit 1
  fi
  echo "SKIP: $NAME: $1"
  exit 77
}
# 0 after printing SKIP (go on); 1 after printing FAIL under RASP_NO_SKIP=1
# (the caller counts the failure)
skip_part() { # WHY
  if [ "${RASP_NO_SKIP:-}" = 1 ]; then
    echo "FAIL: $1 (RASP_NO_SKIP=1: a skip is a failure)"
    return 1
  fi
  echo "SKIP: $1"
  return 0
}
