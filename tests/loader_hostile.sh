#!/bin/sh
# loader_hostile.sh -- the Python loader (python/rasp_model.py) holds a
# model's files to what `rasp apply` holds them to: for each damaged or
# hostile copy of a small compiled model, `rasp apply` exits non-zero and
# rasp_model.load raises FormatError, each within seconds and without a
# large allocation (the Python side runs under a 2 GB address-space
# limit): configs out of range (n_layers 10^8, 10^6, -1; causal 2), a key
# given twice, a config field neither knows, a 100,000-digit number, a non-finite weight, overlapping tensors, a checksum that does not match,
# /dev/zero and a 30 GB sparse file as the tensor file, a FIFO.
# Prints "N passed, M failed".
NAME=loader_hostile
. "${top_srcdir:-.}/tests/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" -c "import numpy" 2>/dev/null || skip_test "no numpy for $PY"

"$RASP" compile examples/reverse.rasp --input-vocab "a b c" --length 6 -o "$tmp/m" >/dev/null 2>&1 ||
  { bad "rasp compile failed"; finish; exit 1; }
"$RASP" apply "$tmp/m" --input "a b c a b c" >/dev/null 2>&1 || bad "the intact model does not apply"

variant() { # NAME: a fresh copy of the model as $tmp/NAME.{json,safetensors}
  cp "$tmp/m.json" "$tmp/$1.json"
  cp "$tmp/m.safetensors" "$tmp/$1.safetensors"
}
both_refuse() { # NAME WHAT
  timeout 20 "$RASP" apply "$tmp/$1" --input "a b c a b c" >"$tmp/c.out" 2>&1
  cst=$?
  ( ulimit -v 2000000; cd python && timeout 20 "$PY" -c '
import sys, rasp_model
try:
    rasp_model.load(sys.argv[1], backend="numpy")
except rasp_model.FormatError as e:
    print("refused:", e); sys.exit(3)
print("loaded"); sys.exit(0)
' "$tmp/$1" ) >"$tmp/p.out" 2>&1
  pst=$?
  if [ $cst != 0 ] && [ $cst != 124 ] && [ $pst = 3 ]; then
    ok "$2: both refuse (C: $(head -1 "$tmp/c.out" | cut -c1-90); Python: $(cut -c1-90 "$tmp/p.out"))"
  else
    bad "$2: rasp apply exit $cst, Python exit $pst" "$tmp/c.out" "$tmp/p.out"
  fi
}
json_edit() { # NAME SED: edit NAME.json
  sed -i "$2" "$tmp/$1.json"
}

variant big8; json_edit big8 's/"n_layers": [0-9]*/"n_layers": 100000000/'
both_refuse big8 "n_layers 10^8"
variant big6; json_edit big6 's/"n_layers": [0-9]*/"n_layers": 1000000/'
both_refuse big6 "n_layers 10^6"
variant neg; json_edit neg 's/"n_layers": [0-9]*/"n_layers": -1/'
both_refuse neg "n_layers -1"
variant causal; json_edit causal 's/"causal": [0-9]*/"causal": 2/'
both_refuse causal "causal 2"
variant dup; json_edit dup 's/"n_layers": \([0-9]*\)/"n_layers": \1, "n_layers": 4000/'
both_refuse dup "a key twice in STEM.json (C read the first, Python the last)"
# a config field neither reader knows (a newer rasp's, as norm_eps once
# was to older builds): refused by name, not ignored
variant newer; json_edit newer 's/"n_layers": \([0-9]*\)/"n_layers": \1, "norm_kind": 3/'
both_refuse newer "a config field this build does not know"
if grep -q 'config field "norm_kind" is not one' "$tmp/c.out" && grep -q 'config field "norm_kind" is not one' "$tmp/p.out"; then
  ok "both name the unknown field"
else bad "the unknown field's message" "$tmp/c.out" "$tmp/p.out"; fi
variant sum; json_edit sum 's/"params_fnv": "[0-9a-f]*"/"params_fnv": "0000000000000000"/'
both_refuse sum "a checksum that does not match"
# a 100,000-digit number: named as a number too long (C), refused (Python)
variant long; json_edit long "s/\"n_layers\": [0-9]*/\"n_layers\": $(head -c 100000 /dev/zero | tr '\0' 7)/"
both_refuse long "a 100,000-digit number in STEM.json"
if grep -q "number longer than" "$tmp/c.out"; then ok "rasp apply names the long number"
else bad "rasp apply's message for a long number" "$tmp/c.out"; fi
# a NaN weight and overlapping tensors: the tensor file edited (Python)
variant nan
"$PY" - "$tmp/nan.safetensors" <<'PYEOF'
import json, struct, sys
p = sys.argv[1]
raw = bytearray(open(p, "rb").read())
(hl,) = struct.unpack("<Q", raw[:8])
hdr = json.loads(raw[8:8 + hl])
a = hdr["tok_emb"]["data_offsets"][0]
raw[8 + hl + a:8 + hl + a + 4] = struct.pack("<I", 0x7fc00000)
open(p, "wb").write(raw)
PYEOF
both_refuse nan "a NaN weight"
variant over
"$PY" - "$tmp/over.safetensors" <<'PYEOF'
import json, struct, sys
p = sys.argv[1]
raw = open(p, "rb").read()
(hl,) = struct.unpack("<Q", raw[:8])
hdr = json.loads(raw[8:8 + hl])
data = raw[8 + hl:]
hdr["layers.0.attn.b_k"]["data_offsets"] = list(hdr["layers.0.attn.b_q"]["data_offsets"])
h = json.dumps(hdr).encode()
open(p, "wb").write(struct.pack("<Q", len(h)) + h + data)
PYEOF
both_refuse over "overlapping tensors"
variant zero; rm -f "$tmp/zero.safetensors"; ln -s /dev/zero "$tmp/zero.safetensors"
both_refuse zero "/dev/zero as the tensor file"
variant sparse; rm -f "$tmp/sparse.safetensors"; truncate -s 30G "$tmp/sparse.safetensors"
both_refuse sparse "a 30 GB sparse file"
variant fifo; rm -f "$tmp/fifo.safetensors"; mkfifo "$tmp/fifo.safetensors"
both_refuse fifo "a FIFO as the tensor file"
finish
