#!/usr/bin/env python3
"""weight_stats.py STEM -- the size of a compiled model's weights, per kind of
tensor over all layers (max |w|, RMS, count) and the L2 norm of all of them:
the table of doc/training-small.md section 4.  Reads STEM.safetensors (float32)
with the standard library only."""
import array, collections, json, math, re, struct, sys

if len(sys.argv) != 2:
    sys.exit("usage: weight_stats.py STEM")
with open(sys.argv[1] + ".safetensors", "rb") as f:
    data = f.read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
kinds = collections.defaultdict(lambda: [0.0, 0.0, 0])
for name, t in header.items():
    if name == "__metadata__":
        continue
    if t["dtype"] != "F32":
        sys.exit(f"{name}: dtype {t['dtype']}, want F32")
    a, b = t["data_offsets"]
    x = array.array("f")
    x.frombytes(data[8 + n + a:8 + n + b])
    kind = re.sub(r"heads?\.\d+\.", "", re.sub(r"layers\.\d+\.", "", name))
    k = kinds[kind]
    k[0] = max(k[0], max((abs(v) for v in x), default=0.0))
    k[1] += sum(v * v for v in x)
    k[2] += len(x)
for kind, (mx, ss, c) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
    print(f"{kind:12s} max {mx:9.3g}  rms {math.sqrt(ss / c) if c else 0:9.3g}  n {c}")
print("L2 %.4g" % math.sqrt(sum(k[1] for k in kinds.values())))
