#!/bin/sh
# train_opts.sh -- rasp-train's command line against its documentation:
#   - every option in trainer/main.c's option table (the parser accepts
#     exactly those) is known to the binary, has an entry in --help and one
#     in doc/rasp-train.1; every option --help or the manual lists is known
#     to the binary;
#   - every default a run records in config.txt is the default --help
#     states for that option;
#   - an unknown option is refused with status 2, naming it; --opt=VALUE is
#     --opt VALUE (a bad value named with its option, a good one recorded).
# Prints "N passed, M failed".
NAME=train_opts
. "${top_srcdir:-.}/tests/lib.sh"
use_trainer

# the table's names: its entries start with OPT("--name" (--help and
# --version are rows of the table too)
sed -n 's/^ *OPT("\(--[A-Za-z-]*\)".*/\1/p; s/^ *{\.name = "\(--[A-Za-z-]*\)".*/\1/p' \
  "$top_srcdir/trainer/main.c" | sort -u >"$tmp/table"
n=$(wc -l <"$tmp/table")
[ "$n" -ge 40 ] && ok || bad "only $n options found in trainer/main.c's table"
"$train" --help >"$tmp/help" 2>&1 && ok || bad "--help exits non-zero"
# --help's entries, each joined onto one line: "  --name ARG  text..."
awk '/^  -/ { if (e != "") print e; e = $0; next }
     /^                         / { sub(/^ +/, " "); e = e $0; next }
     { if (e != "") print e; e = "" }
     END { if (e != "") print e }' "$tmp/help" >"$tmp/entries"
sed -n 's/^  \(--[A-Za-z-]*\).*/\1/p' "$tmp/entries" | sort -u >"$tmp/helped"
# the manual's options: the terms of its .TP entries (\-\-name after .B,
# .BI or .BR)
awk 'tp { print } { tp = $0 == ".TP" }' "$top_srcdir/doc/rasp-train.1" |
  sed -n 's/^\.B[IR]* \(\\-\\-[A-Za-z\\-]*\).*/\1/p' |
  sed 's/\\-/-/g' | sort -u >"$tmp/manual"

known() { # the binary knows option $1 (with a value that may be bad)
  "$train" "$1" x --D 0 >"$tmp/out" 2>&1
  ! grep -q "unknown option" "$tmp/out"
}
while read -r o; do
  known "$o" || bad "the table's $o is unknown to the binary"
  grep -qx -e "$o" "$tmp/helped" || bad "$o is not in --help"
  grep -qx -e "$o" "$tmp/manual" || bad "$o is not in doc/rasp-train.1"
  ok
done <"$tmp/table"
for o in $(cat "$tmp/helped" "$tmp/manual" | sort -u); do
  case $o in --help|--version) continue ;; esac
  known "$o" && ok || bad "$o (--help or the manual) is unknown to the binary"
done

# defaults: a run that sets only what makes it small
"$train" --train=4 --test 4 --layers 1 --d-model 8 --heads 1 --d-mlp 8 --batch 4 \
  --micro 4 --epochs 1 --threads 1 --out "$tmp/run" >"$tmp/out" 2>&1 ||
  bad "a small run failed: $(tail -3 "$tmp/out")"
given=" --train --test --layers --d-model --heads --d-mlp --batch --micro --epochs --threads --out "
checked=0
while read -r name value; do
  case $name in \#*|"") continue ;; esac
  case "$given" in *" $name "*) continue ;; esac
  case $value in yes|no|"") continue ;; esac
  if grep -q -e "^  $name .*default $value[;):, ]" "$tmp/entries"; then
    checked=$((checked + 1))
  else
    bad "config.txt records '$name $value'; --help says: $(grep -e "^  $name " "$tmp/entries")"
  fi
done <"$tmp/run/config.txt"
echo "defaults compared: $checked"; [ $checked -ge 25 ] && ok || bad "only $checked defaults compared"
grep -qx -e "--train 4" "$tmp/run/config.txt" && ok || bad "--train=4 not recorded as --train 4"

# --answer takes rasp gen's words (forward, reverse, lead); the older fwd
# and rev read as forward and reverse, and config.txt records gen's word
for w in forward reverse lead; do
  "$RASP" gen --answer "$w" -n 1 >/dev/null 2>&1 || bad "rasp gen --answer $w refused"
done
"$train" --answer rev --train=4 --test 4 --layers 1 --d-model 8 --heads 1 --d-mlp 8 --batch 4 \
  --micro 4 --epochs 1 --threads 1 --out "$tmp/run_rev" >"$tmp/out" 2>&1 ||
  bad "--answer rev: $(tail -3 "$tmp/out")"
grep -qx -e "--answer reverse" "$tmp/run_rev/config.txt" && ok ||
  bad "--answer rev not recorded as --answer reverse: $(grep answer "$tmp/run_rev/config.txt")"

# unknown options and --opt=VALUE
"$train" --D 3 --frobnicate 1 >"$tmp/out" 2>&1
st=$?
[ $st = 2 ] && grep -q "unknown option '--frobnicate'" "$tmp/out" && ok ||
  bad "unknown option: status $st, $(cat "$tmp/out")"
"$train" --frob=1 >"$tmp/out" 2>&1
st=$?
[ $st = 2 ] && grep -q "unknown option '--frob'" "$tmp/out" && ok ||
  bad "unknown --opt=VALUE: status $st, $(cat "$tmp/out")"
"$train" --M=1 >"$tmp/out" 2>&1
st=$?
[ $st = 2 ] && grep -q "bad value '1' for --M: expected an integer in 2\.\.1000" "$tmp/out" && ok ||
  bad "--M=1: status $st, $(cat "$tmp/out")"
# a FIFO as --config is refused at once (fopen waited for a writer)
mkfifo "$tmp/fifo"
timeout 10 "$train" --config "$tmp/fifo" >"$tmp/out" 2>&1
st=$?
[ $st = 2 ] && grep -q "is not a regular file" "$tmp/out" && ok ||
  bad "--config FIFO: status $st, $(cat "$tmp/out")"

finish
