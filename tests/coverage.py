#!/usr/bin/env python3
"""coverage.py -- librasp's line coverage after a test run, from gcc's counts.

Build with `./configure --enable-coverage` (gcc's -O0 --coverage), run the
tests (`make check`, or any subset), then `make coverage` (this script on
the build tree).  The library's sources are compiled twice, for librasp.so
and for the convenience library the programs and tests link
(rasp/.libs/rapi.o and rasp/rapi.o, ...);
a line counts as run when any of its objects ran it, so the figure is the
union over every object of a source, per file and in all.  The command-line
front end (rasp/cli_*.c) and the trainer are not the library and are left
out.  gcov itself does the reading (`gcov --json-format --stdout`); this
script only adds up.

Usage: coverage.py [BUILD_DIR] [--min PERCENT]
Prints one line per library source (lines run / executable lines) and the
total; with --min, exits 1 when the total is below PERCENT.
"""
import json
import os
import subprocess
import sys


def gcda_files(build):
    """Every .gcda of a library object under build/rasp: libtool names them
    after their source (rasp/.libs/rapi.o for the shared library, rasp/rapi.o
    for the convenience one); a program's own objects carry its name and a
    '-' (rasp-cli_run.o, tests_test_task-cli_gen.o) and are left out."""
    out = []
    for root, _, files in os.walk(os.path.join(build, "rasp")):  # .libs too (glob skips it)
        out += [os.path.join(root, f) for f in files if f.endswith(".gcda") and "-" not in f]
    return sorted(out)


def lines_of(gcda):
    """{source: {line: count}} for one object, read by gcov."""
    gcda = os.path.abspath(gcda)
    objdir = os.path.dirname(gcda)
    run = subprocess.run(["gcov", "--json-format", "--stdout", "-o", objdir, gcda],
                         capture_output=True, text=True, cwd=objdir, check=False)
    if run.returncode != 0:
        sys.exit("coverage.py: gcov failed on %s: %s" % (gcda, run.stderr.strip()))
    result = {}
    for doc in run.stdout.splitlines():  # one JSON document per line
        doc = doc.strip()
        if not doc:
            continue
        for f in json.loads(doc).get("files", []):
            name = os.path.normpath(os.path.join(objdir, f["file"]))
            counts = result.setdefault(name, {})
            for ln in f.get("lines", []):
                n = ln["line_number"]
                counts[n] = counts.get(n, 0) + ln["count"]
    return result


def main(argv):
    build, minimum = ".", None
    i = 0
    while i < len(argv):
        if argv[i] == "--min":
            minimum = float(argv[i + 1])
            i += 2
        else:
            build = argv[i]
            i += 1
    files = gcda_files(build)
    if not files:
        sys.exit("coverage.py: no .gcda under %s/rasp: configure --enable-coverage, "
                 "make check, then make coverage" % build)
    union = {}
    for gcda in files:
        for src, counts in lines_of(gcda).items():
            base = os.path.basename(src)
            if "/rasp/" not in src or base.startswith("cli_") or not base.endswith(".c"):
                continue  # headers' inline code counts with the file that uses it
            u = union.setdefault(base, {})
            for n, c in counts.items():
                u[n] = u.get(n, 0) + c
    total_run = total = 0
    for base in sorted(union):
        u = union[base]
        run = sum(1 for c in u.values() if c > 0)
        total_run += run
        total += len(u)
        print("%-20s %6d / %6d  %5.1f%%" % (base, run, len(u), 100.0 * run / max(len(u), 1)))
    pct = 100.0 * total_run / max(total, 1)
    print("%-20s %6d / %6d  %5.1f%%" % ("librasp", total_run, total, pct))
    if minimum is not None and pct < minimum:
        print("coverage.py: %.1f%% is below --min %.1f%%" % (pct, minimum))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
