# lib.sh -- shared set-up of the shell test runners (golden.sh, errors.sh).
# Source it with NAME set to the runner's name; it sets RASP (the binary),
# RASP_STDLIB, changes to $top_srcdir and makes a temporary directory $tmp
# that is removed on exit.
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
