#!/bin/sh
# Compiles two programs, dumps one forward pass of each, and checks it
# against an independent numpy forward pass over the safetensors file.
# Skipped (77) when /usr/bin/python3 has no numpy (a failure under
# RASP_NO_SKIP=1, as tests/lib.sh's skips).
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  [ "${RASP_NO_SKIP:-}" = 1 ] && { echo "FAIL: compile_python.sh: no numpy (RASP_NO_SKIP=1)"; exit 1; }
  exit 77
fi
set -e
RASP=${top_builddir:-.}/rasp/rasp
SRC=${top_srcdir:-.}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$RASP compile "$SRC/examples/reverse.rasp" --input-vocab "a b c" --length 6 \
    -o "$T/reverse" --dump-forward "$T/reverse.txt" --check 20
/usr/bin/python3 "$SRC/tests/safetensors_check.py" "$T/reverse" "$T/reverse.txt"
$RASP compile "$SRC/examples/balanced_parens.rasp" --input-vocab "( ) x" --length 8 \
    -o "$T/parens" --dump-forward "$T/parens.txt" --check 20
/usr/bin/python3 "$SRC/tests/safetensors_check.py" "$T/parens" "$T/parens.txt"
