#!/bin/sh
# time_tests.sh OUT.csv -- every test of `make check`, run alone, timed: one
# CSV row per test (test, wall seconds, CPU seconds of the test and all it
# ran, its exit status, the 1-minute load average when it started).  Run in
# a configured and built tree (`make check TESTS=` first builds the Check
# suites); tests/README.md's CPU column comes from it.  Needs /usr/bin/time.
set -u
out=${1:?usage: sh tests/time_tests.sh OUT.csv}
[ -x /usr/bin/time ] || { echo "time_tests.sh: needs /usr/bin/time (Debian: time)" >&2; exit 2; }
make check TESTS= >/dev/null 2>&1 || { echo "time_tests.sh: the build failed" >&2; exit 1; }
tests=$(make -s -f Makefile -f - print-tests <<'MK'
print-tests:
	@echo $(TESTS)
MK
)
t1=$(mktemp)
trap 'rm -f "$t1"' EXIT
echo "test,wall_s,cpu_s,status,load1" >"$out"
for t in $tests; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f "%e %U %S" -o "$t1" make check TESTS="$t" >/dev/null 2>&1
  st=$?
  echo "$t,$(awk '{ print $1 "," $2 + $3 }' "$t1"),$st,$load" >>"$out"
done
