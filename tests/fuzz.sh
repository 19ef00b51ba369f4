#!/bin/sh
# fuzz.sh -- runs the two libFuzzer harnesses (tests/fuzz_parse.c,
# tests/fuzz_trace.c) for a bounded time each, as part of `make check`.
# They are built here with clang -fsanitize=fuzzer,address,undefined from
# the sources (see tests/README.md); without clang or its libFuzzer runtime
# the test is skipped (exit 77; a failure under RASP_NO_SKIP=1, see lib.sh),
# which .ci/setup avoids in CI by installing them.  Each fuzzer starts from a copy of its checked-in seed corpus in a
# temporary directory (new inputs never touch the source tree) and any
# finding -- crash, sanitizer report, leak, out-of-memory (2 GB), an input
# running over 10 s -- fails the test; the input is printed and kept under
# $FUZZ_KEEP (default: the build tree's tests/fuzz-findings/).
#
# FUZZ_SECONDS sets the time per fuzzer (default 60).
NAME=fuzz.sh
. "$(dirname "$0")/lib.sh"
secs=${FUZZ_SECONDS:-60}
keep=${FUZZ_KEEP:-$top_builddir/tests/fuzz-findings}
CC_FUZZ=${CC_FUZZ:-clang}

if ! command -v "$CC_FUZZ" >/dev/null 2>&1; then
  skip_test "no $CC_FUZZ (Debian: clang libclang-rt-14-dev)"
fi
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)\n{ (void)d; (void)n; return 0; }\n' \
  >"$tmp/probe.c"
if ! "$CC_FUZZ" -fsanitize=fuzzer,address,undefined "$tmp/probe.c" -o "$tmp/probe" 2>"$tmp/probe.err"; then
  sed 3q "$tmp/probe.err"
  skip_test "$CC_FUZZ cannot link libFuzzer (Debian: libclang-rt-14-dev)"
fi

flags="-g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -Irasp"
echo "building fuzz_parse and fuzz_trace with $CC_FUZZ"
# shellcheck disable=SC2086
$CC_FUZZ $flags rasp/rmem.c rasp/rerror.c rasp/rlex.c rasp/rparse.c tests/fuzz_parse.c \
  -lgmp -o "$tmp/fuzz_parse" || exit 1
# shellcheck disable=SC2086
$CC_FUZZ $flags -DRASP_STDLIB_DIR='"stdlib"' rasp/rmem.c rasp/rerror.c rasp/rlex.c \
  rasp/rparse.c rasp/rir.c rasp/rfacts.c rasp/reval.c rasp/reval_plan.c rasp/reval_kern.c \
  rasp/reval_ref.c rasp/rlayers.c rasp/rinterp.c rasp/rbuiltin.c \
  rasp/rffi.c rasp/rstage.c rasp/rcausal.c rasp/rorder.c rasp/rcompile.c rasp/rmodel.c \
  tests/fuzz_trace.c -lffi -lgmp -lm -lpthread \
  -o "$tmp/fuzz_trace" || exit 1

status=0
# fuzz NAME SEEDS: runs $tmp/NAME for $secs seconds on a copy of SEEDS
fuzz() {
  mkdir -p "$tmp/$1.corpus" "$tmp/$1.art"
  cp "$2"/* "$tmp/$1.corpus/"
  echo "running $1 for $secs s"
  # -close_fd_mask=1: programs that print stay quiet
  timeout $((secs + 120)) "$tmp/$1" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -close_fd_mask=1 -print_final_stats=1 -artifact_prefix="$tmp/$1.art/" \
    "$tmp/$1.corpus" >"$tmp/$1.log" 2>&1
  rc=$?
  grep -E '^stat::number_of_executed_units|^Done' "$tmp/$1.log"
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: $1 (exit status $rc)"
    grep -E -A12 'ERROR|==[0-9]+==|runtime error|deadly' "$tmp/$1.log" | sed 40q
    mkdir -p "$keep"
    for f in "$tmp/$1.art"/*; do
      [ -f "$f" ] || continue
      cp "$f" "$keep/$1-$(basename "$f")"
      echo "--- input $keep/$1-$(basename "$f"):"
      head -c 2000 "$f"
      echo
    done
    status=1
  else
    echo "PASS: $1"
  fi
}
fuzz fuzz_parse tests/fuzz_corpus
fuzz fuzz_trace tests/fuzz_trace_corpus
exit $status
