#!/bin/sh
# fuzz.sh -- runs the three libFuzzer harnesses (tests/fuzz_parse.c,
# tests/fuzz_trace.c, tests/fuzz_compile.c) for a bounded time each, as
# part of `make check`.
# They are built here with clang -fsanitize=fuzzer,address,undefined from
# the sources (see tests/README.md; the library's sources are compiled once
# and linked into both fuzz_trace and fuzz_compile); without clang or its
# libFuzzer runtime the test is skipped (exit 77; a failure under
# RASP_NO_SKIP=1, see lib.sh), which .ci/setup avoids in CI by installing
# them.  Each fuzzer starts from a copy of its checked-in seed corpus in a
# temporary directory (new inputs never touch the source tree) and any
# finding -- crash, sanitizer report, leak, out-of-memory (2 GB), an input
# running over 10 s (60 s for fuzz_compile: a seed's compiles and proofs
# take up to 0.7 s under the sanitizers, 16 s on a loaded machine) --
# fails the test; the input is printed and kept under $FUZZ_KEEP
# (default: the build tree's tests/fuzz-findings/).
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

flags="-g -O1 -std=c11 -D_GNU_SOURCE -DRASP_CHECKED=1 -fsanitize=fuzzer,address,undefined -Irasp"
echo "building fuzz_parse, fuzz_trace and fuzz_compile with $CC_FUZZ"
# shellcheck disable=SC2086
$CC_FUZZ $flags rasp/rmem.c rasp/rerror.c rasp/rlex.c rasp/rparse.c tests/fuzz_parse.c \
  -lgmp -o "$tmp/fuzz_parse" || exit 1
mkdir -p "$tmp/obj"
# (the compiler's modules by glob: a new one is not left out of the link)
for src in rmem rerror rlex rparse rir rfacts reval reval_plan reval_kern reval_matrix reval_ref rlayers \
  rheap rvalue rtrace rinterp rapi raux rbuiltin rffi rstage rcausal rorder rmodel \
  $(cd rasp && ls rcompile*.c | sed 's/\.c$//'); do
  # shellcheck disable=SC2086
  $CC_FUZZ $flags -DRASP_STDLIB_DIR='"stdlib"' \
    -c "rasp/$src.c" -o "$tmp/obj/$src.o" || exit 1
done
for h in fuzz_trace fuzz_compile; do
  # shellcheck disable=SC2086
  $CC_FUZZ $flags -Itests "tests/$h.c" "$tmp"/obj/*.o -lffi -lgmp -lm -lpthread \
    -o "$tmp/$h" || exit 1
done

status=0
# fuzz NAME SEEDS [TIMEOUT]: runs $tmp/NAME for $secs seconds on a copy of
# SEEDS, an input running over TIMEOUT seconds (default 10) a finding
fuzz() {
  mkdir -p "$tmp/$1.corpus" "$tmp/$1.art"
  cp "$2"/* "$tmp/$1.corpus/"
  echo "running $1 for $secs s"
  # -close_fd_mask=1: programs that print stay quiet
  timeout $((secs + 120)) "$tmp/$1" -max_total_time="$secs" -timeout="${3:-10}" -rss_limit_mb=2048 \
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
fuzz fuzz_compile tests/fuzz_compile_corpus 60
exit $status
