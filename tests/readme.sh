#!/bin/sh
# readme.sh -- the commands of README.md and doc/*.md, run as printed
# against the build tree.
#
# A page marks what a reader is meant to run: fenced blocks with the info
# string `sh` (every line a command; a trailing backslash continues it; #
# lines are comments), `console` (the lines starting "$ " are commands, the
# rest their output) and `python` (run whole with /usr/bin/python3, which
# has numpy; without it, a skip).
# Each page's commands run in document order in a scratch directory of its
# own that holds the repository's examples/, programs/, tests/, stdlib/ and
# python/ (as a fresh clone's top does), with `rasp` and `rasp-train`
# meaning the built ./rasp/rasp and ./trainer/rasp-train, so later commands
# see the files earlier ones wrote (a compiled model, then `rasp apply` on
# it).  A command passes when it exits 0 and, in a `console` block, prints
# the output written under it (stdout and stderr together, line by line; a
# line `...` stands for any lines); the test fails naming each one that
# does not.
# The few that take minutes, a cluster or a root install are listed below
# (why_skipped) with the reason, and reported as not run.
NAME=readme
. "${top_srcdir:-.}/tests/lib.sh"
pages="README.md $(ls doc/*.md)"
pass=0 fail=0 skipped=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# The commands not run here, and why (a case pattern each).
why_skipped() { # COMMAND
  case $1 in
  "sh .ci/setup "*) echo "installs packages and builds from scratch as root (minutes; CI does it)" ;;
  "rasp verify programs/*.rasp --D 2 --M 7 --exhaustive --plan")
    echo "calibrates every program for a second of CPU (24 s)" ;;
  "srun "* | "mpirun "*) echo "MPI on a cluster" ;;
  "rasp-train "*"--epochs 30 "*) echo "trains five seeds, 1 to 7 minutes each" ;;
  "rasp-train compare "*"--max-steps 600 "*) echo "trains for 3.5 minutes" ;;
  "rasp-train compare "*"--init r6 "*) echo "trains a 3.69M-parameter model for 40 steps (minutes under the sanitizers)" ;;
  "/opt/rasp/"* | "cc examples/embed.c "* | "LD_LIBRARY_PATH=/opt/rasp/"* | "man -l /opt/rasp/"*)
    echo "the tree installed as root in /opt/rasp (tests/install.sh: the same in a staging prefix)" ;;
  *) return 1 ;;
  esac
}

# rasp and rasp-train on PATH: the build tree's
mkdir "$tmp/bin"
for p in rasp/rasp trainer/rasp-train; do
  printf '#!/bin/sh\nexec "%s" "$@"\n' "$top_builddir/$p" >"$tmp/bin/${p#*/}"
  chmod +x "$tmp/bin/${p#*/}"
done
PATH=$tmp/bin:$PATH
PY=/usr/bin/python3 # Debian's, with numpy (.ci/setup), as apply_parity.sh
export PATH OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

# Whether the output file $1 shows what the expected file $2 says: its
# lines in order, a line "..." matching any run of lines.
shows() { # OUT EXPECT
  $PY - "$1" "$2" <<'PYEOF'
import sys
out = open(sys.argv[1], errors="replace").read().split("\n")
want = open(sys.argv[2]).read().rstrip("\n").split("\n")
def match(i, j):
    if j == len(want):
        return all(l == "" for l in out[i:])
    if want[j].strip() == "...":
        return any(match(k, j + 1) for k in range(i, len(out) + 1))
    return i < len(out) and out[i].rstrip() == want[j].rstrip() and match(i + 1, j + 1)
sys.exit(0 if match(0, 0) else 1)
PYEOF
}

total=0
for page in $pages; do
  top=$tmp/top.$(basename "$page" .md)
  mkdir "$top"
  for d in examples programs tests stdlib python; do ln -s "$(pwd)/$d" "$top/$d"; done
  # The marked commands: "LINE<tab>sh<tab>COMMAND" or "LINE<tab>py<tab>FILE"
  # (the block's code, written to FILE); a console command's output is
  # written to $top.expect.LINE.
  awk -v dir="$top" '
    /^ *```/ {
      if (!inb) {
        inb = 1; lang = $0; sub(/^ *```/, "", lang); ind = match($0, /[^ ]/) - 1
        if (lang == "python") { py = dir "/block" NR ".py"; printf "" > py; print NR "\tpy\t" py }
        next
      }
      inb = 0; if (py != "") close(py); py = ""; if (ef != "") close(ef); ef = ""; next
    }
    !inb { next }
    lang == "python" { print substr($0, ind + 1) > py; next }
    lang != "sh" && lang != "console" { next }
    {
      line = $0; sub(/^ +/, "", line)
      if (cont == "") {
        if (lang == "console") {
          if (line !~ /^\$ /) { if (ef != "") print substr($0, ind + 1) > ef; next }
          sub(/^\$ /, "", line); at = NR
          if (ef != "") close(ef)
          ef = dir ".expect." NR
        } else { if (line == "" || line ~ /^#/) next; at = NR }
      }
      if (line ~ /\\$/) { sub(/\\$/, "", line); cont = cont line; next }
      print at "\tsh\t" cont line; cont = ""
    }' "$page" >"$tmp/commands"
  n=$(wc -l <"$tmp/commands")
  total=$((total + n))
  tab=$(printf '\t')
  while IFS=$tab read -r line kind cmd; do
    if [ "$kind" = py ]; then
      if ! $PY -c 'import numpy' 2>/dev/null; then
        skip_part "$page:$line: the Python block (no numpy)" || bad "$page:$line: python"
        continue
      fi
      if (cd "$top" && PYTHONPATH=$top/python $PY "$cmd") >"$tmp/out" 2>&1; then ok
      else bad "$page:$line: the Python block exited $?: $(tail -3 "$tmp/out")"; fi
      continue
    fi
    if why=$(why_skipped "$cmd"); then
      echo "not run: $page:$line: $cmd ($why)"
      skipped=$((skipped + 1))
      continue
    fi
    if (cd "$top" && sh -c "$cmd") >"$tmp/out" 2>&1 </dev/null; then
      if [ -s "$top.expect.$line" ] && ! shows "$tmp/out" "$top.expect.$line"; then
        bad "$page:$line: '$cmd' printed other output:"
        diff "$top.expect.$line" "$tmp/out" | head -20
      else
        ok
      fi
    else
      bad "$page:$line: '$cmd' exited $?: $(tail -3 "$tmp/out")"
    fi
  done <"$tmp/commands"
done
[ "$total" -ge 15 ] && ok || bad "only $total marked commands found"

echo "$pass passed, $fail failed, $skipped not run"
[ $fail = 0 ]
