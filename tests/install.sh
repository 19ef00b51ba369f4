#!/bin/sh
# install.sh -- what `make install` and `make dist` give, checked from a
# built tree as a user would meet them:
#
#  1. A copy of this built tree is configured again with its own options
#     but --prefix=$tmp/usr, then `make install`: only what uses the
#     configured paths may need rebuilding, and the installed rasp must run
#     with the installed stdlib (a marker function appended to the
#     installed core.rasp must be found), from a directory outside the
#     tree, with RASP_STDLIB unset.  rasp and rasp-train link librasp's
#     objects statically (they use its internal modules), so they load no
#     librasp.so at all (ldd), not even a stale one.
#  2. The installed library is librasp.so.N with N = rasp.h's
#     RASP_ABI_VERSION, and exports only the public prefixes of rasp.h's
#     legend (nm -D).  examples/embed.c is compiled against it with
#     `pkg-config --cflags --libs librasp` (only the staged librasp.pc
#     visible; with the build's sanitizer flags, since an ASan library
#     wants the ASan runtime first) and must print what the build's own
#     examples/embed prints.
#  3. The installed man pages rasp(1) and rasp-train(1) render with groff
#     without a warning (and pass mandoc -Tlint when mandoc is there), and
#     rasp-train(1) documents exactly the options `rasp-train --help` lists.
#  4. `make distdir` of the copy holds no build product (object, library,
#     binary, log, libtool wrapper) and, in a git checkout, exactly the
#     tracked files plus what autoreconf generates.
#
# The copy keeps the tests off the tree that `make check` is running in.
# Prints PASS:/FAIL: per check.
NAME=install.sh
. "$(dirname "$0")/lib.sh"
src=$(pwd)
bld=$top_builddir
U=$tmp/usr
# The build's own settings, from its Makefile.
mkvar() { sed -n "s/^$1 = //p" "$bld/Makefile" | head -n 1; }
CC=$(mkvar CC)
SAN_CFLAGS=$(mkvar SAN_CFLAGS)
PKG_CONFIG=$(mkvar PKG_CONFIG)
# The inner make is not part of the outer one's job server.
unset MAKEFLAGS MFLAGS MAKELEVEL
MAKE='make'

# ---- 1. reconfigure a built tree with another prefix, install, run
mkdir "$tmp/build" || exit 2
# The test logs are being written while this runs: not copied.
(cd "$bld" && tar cf - --exclude=./.git --exclude='*.log' --exclude='*.trs' \
   --exclude=./runs --exclude=./bench/out .) | (cd "$tmp/build" && tar xf -) ||
  { echo "$NAME: cannot copy $bld" >&2; exit 2; }
configure=./configure
same() { [ "$(cd "$1" && pwd -P)" = "$(cd "$2" && pwd -P)" ]; }
if ! same "$bld" "$src"; then
  configure=$src/configure
  # Out of tree (make distcheck) the dependency files name the sources by
  # a path relative to the build directory, wrong in the copy; without
  # them only the explicit rapi.lo -> rpaths.h dependency remains, as in
  # a build with --disable-dependency-tracking.
  find "$tmp/build" -path '*/.deps/*' -type f -exec sh -c \
    'for f; do echo "# dummy" > "$f"; done' sh {} +
fi
eval "set -- $("$bld/config.status" --config)"
for a; do
  shift
  case $a in --prefix=* | --srcdir=*) ;; *) set -- "$@" "$a" ;; esac
done
if (cd "$tmp/build" && "$configure" "$@" --prefix="$U" && $MAKE install) \
     > "$tmp/install.out" 2>&1; then
  ok "configure --prefix=\$tmp/usr && make install in a built tree"
else
  tail -n 30 "$tmp/install.out" >&2
  bad "configure --prefix=\$tmp/usr && make install in a built tree"
  finish; exit
fi
unset RASP_STDLIB
for f in bin/rasp bin/rasp-train share/rasp/stdlib/core.rasp \
         share/rasp/stdlib/pathstar.rasp include/rasp/rasp.h \
         lib/pkgconfig/librasp.pc share/man/man1/rasp.1 share/man/man1/rasp-train.1; do
  [ -e "$U/$f" ] || bad "installed $f"
done
for b in rasp rasp-train; do
  lib=$(ldd "$U/bin/$b" 2>&1 | grep librasp | sed 's/^[[:space:]]*//')
  [ -z "$lib" ] && ok "installed $b loads no librasp.so (linked statically)" ||
    bad "installed $b loads $lib"
done
out=$(cd "$tmp" && "$U/bin/rasp" run "$src/examples/reverse.rasp" --input "h e l l o" --symbols 2>&1)
[ "$out" = "o l l e h" ] && ok "installed rasp runs examples/reverse.rasp" ||
  bad "installed rasp on examples/reverse.rasp: $out"
printf '\ndef installed_stdlib_marker():\n    return 42\n' >> "$U/share/rasp/stdlib/core.rasp"
printf 'def main(seq):\n    return full(seq, installed_stdlib_marker())\n' > "$tmp/marker.rasp"
out=$(cd "$tmp" && "$U/bin/rasp" run marker.rasp --input "a b c" 2>&1)
[ "$out" = "42 42 42" ] && ok "installed rasp reads the installed stdlib" ||
  bad "installed rasp does not read $U/share/rasp/stdlib: $out"
"$U/bin/rasp-train" --help > "$tmp/train-help" 2>&1 && ok "installed rasp-train runs" ||
  bad "installed rasp-train --help: $(cat "$tmp/train-help")"

# ---- 2. the installed library: ABI version, exports; examples/embed.c through pkg-config
abi=$(sed -n 's/^#define RASP_ABI_VERSION \([0-9][0-9]*\)$/\1/p' "$U/include/rasp/rasp.h")
if [ -n "$abi" ] && [ -f "$U/lib/librasp.so.$abi" ] &&
   [ "$(ls "$U/lib"/librasp.so.[0-9]* 2>/dev/null | sed 's/.*librasp\.so\.//; s/\..*//' | sort -u)" = "$abi" ]; then
  ok "installed librasp.so.$abi, as RASP_ABI_VERSION $abi says"
else
  bad "RASP_ABI_VERSION '$abi' but installed: $(ls "$U/lib" | tr '\n' ' ')"
fi
if command -v nm > /dev/null 2>&1; then
  nm -D --defined-only "$U/lib/librasp.so" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' > "$tmp/exports"
  inner=$(grep -v -E '^rasp(_|[AEGIKLNORT]_)' "$tmp/exports" | grep -v -E '^_' | head -n 5 | tr '\n' ' ')
  if [ -z "$inner" ] && grep -q '^rasp_abi_version$' "$tmp/exports" &&
     grep -q '^raspR_exit_status$' "$tmp/exports" && ! grep -q '^raspM_' "$tmp/exports"; then
    ok "librasp.so exports the public API only ($(wc -l < "$tmp/exports") symbols)"
  else
    bad "librasp.so exports internal symbols ($inner) or lacks public ones"
  fi
else
  bad "nm not found (Debian: binutils)"
fi
flags=$(PKG_CONFIG_LIBDIR=$U/lib/pkgconfig PKG_CONFIG_PATH='' $PKG_CONFIG --cflags --libs librasp)
case $flags in
  *"-I$U/include/rasp"*"-L$U/lib"*) ok "pkg-config librasp: $flags" ;;
  *) bad "pkg-config --cflags --libs librasp: '$flags'" ;;
esac
# shellcheck disable=SC2086
if $CC $SAN_CFLAGS -o "$tmp/embed" "$src/examples/embed.c" $flags 2> "$tmp/cc.err"; then
  (cd "$tmp" && LD_LIBRARY_PATH=$U/lib ./embed) > "$tmp/embed.out" 2>&1
  RASP_STDLIB=$src/stdlib "$bld/examples/embed" > "$tmp/embed.want" 2>&1
  if grep -q 'o l l e h' "$tmp/embed.out" && cmp -s "$tmp/embed.out" "$tmp/embed.want"; then
    ok "examples/embed.c built with pkg-config runs on the installed library"
  else
    diff "$tmp/embed.want" "$tmp/embed.out" >&2
    bad "examples/embed.c on the installed library"
  fi
else
  cat "$tmp/cc.err" >&2
  bad "$CC examples/embed.c \$(pkg-config --cflags --libs librasp)"
fi

# ---- 3. man pages
if command -v groff > /dev/null 2>&1; then
  for p in rasp rasp-train; do
    w=$(groff -man -Tutf8 -ww -z "$U/share/man/man1/$p.1" 2>&1)
    [ -z "$w" ] && ok "groff renders $p(1) without warnings" || bad "groff on $p(1): $w"
  done
else
  bad "groff not found (Debian: groff-base; .ci/setup installs it)"
fi
if command -v mandoc > /dev/null 2>&1; then
  for p in rasp rasp-train; do
    w=$(mandoc -Tlint -W warning "$U/share/man/man1/$p.1" 2>&1)
    [ -z "$w" ] && ok "mandoc -Tlint $p(1)" || bad "mandoc -Tlint $p(1): $w"
  done
fi
# The options rasp-train --help lists (the first word of each entry; the
# texts name other options too) and the items of rasp-train(1).
sed -n 's/^  \(--[A-Za-z][A-Za-z0-9-]*\).*/\1/p' "$tmp/train-help" | sort -u > "$tmp/opts.help"
awk '/^\.TP/ { item = 1; next }
     item && /^\.B[IR]? \\-\\-/ { o = $2; gsub(/\\-/, "-", o); print o }
     { item = 0 }' "$U/share/man/man1/rasp-train.1" | sort -u > "$tmp/opts.man"
if cmp -s "$tmp/opts.help" "$tmp/opts.man"; then
  ok "rasp-train(1) documents the $(wc -l < "$tmp/opts.help") options of rasp-train --help"
else
  echo "< rasp-train --help, > rasp-train(1):" >&2
  diff "$tmp/opts.help" "$tmp/opts.man" >&2
  bad "rasp-train(1) and rasp-train --help list different options"
fi

# ---- 4. the tarball's contents
d=$tmp/dist/rasp
mkdir "$tmp/dist"
if (cd "$tmp/build" && $MAKE distdir distdir="$d") > "$tmp/dist.out" 2>&1; then
  products=$(cd "$d" && find . \( -name '*.o' -o -name '*.lo' -o -name '*.la' \
    -o -name '*.a' -o -name '*.so' -o -name '*.so.*' -o -name '*.log' -o -name '*.trs' \
    -o -name .deps -o -name .libs -o -name .dirstamp -o -name config.status \
    -o -name __pycache__ -o -name '*.pyc' -o -name runs \) -print)
  for f in $(cd "$d" && find . -type f ! -path './build-aux/*'); do
    magic=$(head -c 4 "$d/$f" | od -An -tx1 | tr -d ' \n')
    [ "$magic" = 7f454c46 ] && products="$products $f"
    grep -q 'temporary wrapper script for[ ]' "$d/$f" && products="$products $f"
  done
  [ -z "$products" ] && ok "make distdir ships no build product" ||
    bad "make distdir ships build products: $(echo "$products" | tr '\n' ' ')"
  # (only at the top of a checkout: distcheck unpacks inside one)
  top=$(git -C "$src" rev-parse --show-toplevel 2> /dev/null)
  if [ -n "$top" ] && same "$top" "$src"; then
    git -C "$src" ls-files | grep -v -x -e .gitignore -e m4/.keep | sort > "$tmp/tracked"
    (cd "$d" && find . -type f | sed 's|^\./||') |
      grep -v -x -e configure -e Makefile.in -e aclocal.m4 -e 'build-aux/.*' -e 'm4/.*\.m4' |
      sort > "$tmp/shipped"
    if cmp -s "$tmp/tracked" "$tmp/shipped"; then
      ok "make distdir ships the $(wc -l < "$tmp/tracked") tracked files and what autoreconf makes"
    else
      echo "< tracked by git, > shipped:" >&2
      diff "$tmp/tracked" "$tmp/shipped" >&2
      bad "make distdir and git ls-files differ"
    fi
  fi
else
  tail -n 30 "$tmp/dist.out" >&2
  bad "make distdir"
fi
finish
