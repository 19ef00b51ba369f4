#!/bin/sh
# collect.sh -- the interpreter's collector (rheap.c): values a program's top
# level can no longer reach are freed between top-level statements, and no
# value it can still reach is.
#   roots      tests/collect/roots.rasp keeps values every way the collector
#              must see (closures, defaults, a function only the IR holds, a
#              for loop's items) while it makes garbage; it runs with
#              RASP_GC_STRESS=1 (a collection before every top-level
#              statement, swept values freed at once, so a sanitizer build
#              reports any use after free) and prints what it kept
#   golden     every golden case (tests/golden.sh) under RASP_GC_STRESS=1
#   bignum     tests/collect/bignum.rasp rebinds a name to a new 4 KB number
#              100,000 times: its peak resident size stays under 100 MB
#              (400 MB and more when nothing was reclaimed; not measured in
#              a sanitizer build, whose allocator is its own)
NAME=collect.sh
. "$(dirname "$0")/lib.sh"

pass=0
fail=0
ok() { echo "PASS: $1"; pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }

RASP_GC_STRESS=1 "$RASP" run tests/collect/roots.rasp --input "a b c" >"$tmp/out" 2>"$tmp/err"
status=$?
printf '%s\n' "7 2 1000xyzx {2000: [2000]} cdcd 1909" "9 9 9" >"$tmp/want"
if [ $status = 0 ] && cmp -s "$tmp/out" "$tmp/want" && [ ! -s "$tmp/err" ]; then
  ok "roots: every kept value intact under a collection per statement"
else
  bad "roots: status $status"
  diff "$tmp/want" "$tmp/out" | sed 's/^/    /'
  sed 's/^/    stderr: /' "$tmp/err" | head -20
fi

if RASP_GC_STRESS=1 sh tests/golden.sh >"$tmp/golden" 2>&1; then
  ok "golden: $(tail -1 "$tmp/golden") under RASP_GC_STRESS=1"
else
  bad "golden under RASP_GC_STRESS=1: $(tail -1 "$tmp/golden")"
  grep -A20 '^FAIL' "$tmp/golden" | head -40 | sed 's/^/    /'
fi

want="10 10000 9543"
if ldd "$RASP" 2>/dev/null | grep -q libasan; then
  echo "NOTE: bignum: peak not measured in a sanitizer build"
  out=$("$RASP" run tests/collect/bignum.rasp --input a | head -1)
  [ "$out" = "$want" ] && ok "bignum: prints $out" || bad "bignum: prints '$out', expected '$want'"
else
  res=$(python3 -c '
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, r.returncode, r.stdout.splitlines()[0] if r.stdout else "")' \
    "$RASP" run tests/collect/bignum.rasp --input a)
  peak=${res%% *}
  rest=${res#* }
  if [ "$rest" = "0 $want" ] && [ "$peak" -lt 104857600 ]; then
    ok "bignum: peak resident $peak bytes, prints $want"
  else
    bad "bignum: peak resident $peak bytes (limit 100 MB), status and output '$rest' (want '0 $want')"
  fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
