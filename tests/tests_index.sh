#!/bin/sh
# tests_index.sh -- tests/README.md's table is the suite: every test
# Makefile.am runs (TESTS and CHECK_SUITES) has a row there, every row
# names a test Makefile.am runs, and the rows marked quick are exactly
# QUICK_TESTS (make check-quick).  A test added without its row (what it
# checks, its time, when it skips) fails here.
# Prints "N passed, M failed".
NAME=tests_index
. "${top_srcdir:-.}/tests/lib.sh"

# the variable VAR's words in Makefile.am, every = and += of it, with
# continuation lines; $(CHECK_SUITES) left as it is
am_words() { # VAR
  awk -v v="$1" '
    cont { line = $0; cont = sub(/\\$/, "", line); print line; next }
    $1 == v && ($2 == "=" || $2 == "+=") {
      line = $0; sub(/^[^=]*=/, "", line); cont = sub(/\\$/, "", line); print line }
  ' Makefile.am | tr ' \t' '\n\n' | grep -v '^$' | grep -v '^\$(CHECK_SUITES)$' | sed 's|^tests/||' | sort -u
}
{ am_words TESTS; am_words CHECK_SUITES; } | sort -u >"$tmp/run"
am_words QUICK_TESTS >"$tmp/quick"
# the table's rows: the test's name and its quick column (third from the
# end: | CPU s | quick | skipped when |)
grep '^| `[^`]*` |' tests/README.md |
  awk -F'|' '{ n = $2; gsub(/[ `]/, "", n); q = $(NF - 2); gsub(/ /, "", q); print n, q }' >"$tmp/rows"
cut -d' ' -f1 "$tmp/rows" | sort -u >"$tmp/listed"
awk '$2 == "yes" { print $1 }' "$tmp/rows" | sort -u >"$tmp/listed_quick"

[ "$(wc -l <"$tmp/run")" -gt 40 ] && ok "Makefile.am runs $(wc -l <"$tmp/run") tests" ||
  bad "Makefile.am's tests not read" "$tmp/run"
comm -23 "$tmp/run" "$tmp/listed" >"$tmp/missing"
[ ! -s "$tmp/missing" ] && ok "every test Makefile.am runs has a row in tests/README.md" ||
  bad "tests without a row in tests/README.md" "$tmp/missing"
comm -13 "$tmp/run" "$tmp/listed" >"$tmp/stale"
[ ! -s "$tmp/stale" ] && ok "every row of tests/README.md names a test Makefile.am runs" ||
  bad "rows naming no test Makefile.am runs" "$tmp/stale"
[ -s "$tmp/quick" ] && cmp -s "$tmp/quick" "$tmp/listed_quick" &&
  ok "the rows marked quick are QUICK_TESTS ($(wc -l <"$tmp/quick"))" || {
  diff "$tmp/quick" "$tmp/listed_quick" >"$tmp/qdiff"
  bad "QUICK_TESTS (<) and the rows marked quick (>) differ" "$tmp/qdiff"
}
finish
