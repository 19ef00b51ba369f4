#!/usr/bin/env python3
"""scale_gain.py STEM OUT FACTOR [KIND] -- a compiled model with one kind of
tensor scaled by FACTOR in every layer (default KIND attn.w_q: the attention
gain, so FACTOR < 1 is the model a compiler with a smaller beta makes, as
far as the scores go).  For a power-of-two FACTOR this is byte for byte
`rasp compile --attn-gain FACTOR`'s model (tests/gain.sh), which also
proves what it can and records the gain; this script stays for other
kinds and factors: rasp-train --init OUT at step 0 says whether the
program still computes, and the study's drivers (INIT=OUT) whether it
survives training.  Writes OUT.safetensors and OUT.json
(STEM.json without its params_fnv, which no longer matches; the loader
accepts a file without one, as from before checksums existed).  Standard
library only; float32 tensors."""
import array, json, re, struct, sys

if len(sys.argv) not in (4, 5):
    sys.exit("usage: scale_gain.py STEM OUT FACTOR [KIND]")
stem, out, factor = sys.argv[1], sys.argv[2], float(sys.argv[3])
kind = sys.argv[4] if len(sys.argv) == 5 else "attn.w_q"
with open(stem + ".safetensors", "rb") as f:
    data = bytearray(f.read())
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
pat = re.compile(r"layers\.\d+\." + re.escape(kind) + "$")
hit = 0
for name, t in header.items():
    if name == "__metadata__" or not pat.match(name):
        continue
    if t["dtype"] != "F32":
        sys.exit(f"{name}: dtype {t['dtype']}, want F32")
    a, b = t["data_offsets"]
    x = array.array("f")
    x.frombytes(bytes(data[8 + n + a:8 + n + b]))
    for i in range(len(x)):
        x[i] *= factor
    data[8 + n + a:8 + n + b] = x.tobytes()
    hit += 1
if not hit:
    sys.exit(f"no tensor layers.L.{kind} in {stem}.safetensors")
with open(stem + ".json") as f:
    text = f.read()
text, k = re.subn(r'\s*"params_fnv": "[0-9a-f]+",', "", text)
if k != 1:
    sys.exit(f"{stem}.json: expected one params_fnv line, found {k}")
with open(out + ".safetensors", "wb") as f:
    f.write(data)
with open(out + ".json", "w") as f:
    f.write(text)
print(f"scaled {hit} tensors layers.*.{kind} by {factor}: {out}")
