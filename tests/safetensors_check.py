#!/usr/bin/python3
"""safetensors_check.py STEM LOGITS -- reads STEM.safetensors and STEM.json
with numpy alone, runs the forward pass of rasp/rmodel.h on the input
recorded in LOGITS (written by `rasp compile --dump-forward`) and compares
the logits with the C forward pass's."""
import json, struct, sys
import numpy as np

stem, dump = sys.argv[1], sys.argv[2]
raw = open(stem + ".safetensors", "rb").read()
hlen = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + hlen])
data = raw[8 + hlen:]
T = {}
for name, info in header.items():
    if name == "__metadata__":
        continue
    assert info["dtype"] == "F32", name
    a, b = info["data_offsets"]
    T[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(info["shape"])
cfg = json.load(open(stem + ".json"))
cfg = cfg.get("config", cfg)
lines = open(dump).read().split("\n")
n, n_out = map(int, lines[0].split())
tokens = [int(t) for t in lines[1].split()]
want = np.array([[float(x) for x in l.split()] for l in lines[2:2 + n]], dtype=np.float64)

x = T["tok_emb"][tokens].astype(np.float64)
if "pos_emb" in T:
    x = x + T["pos_emb"][:n]
L = sum(1 for k in T if k.endswith(".attn.w_q"))
causal = bool(cfg.get("causal", 0))
for l in range(L):
    p = "layers.%d." % l
    if p + "ln1.weight" in T:
        sys.exit("layer norm models are not covered by this check")
    wq, wk, wv, wo = (T[p + "attn." + s].astype(np.float64) for s in ("w_q", "w_k", "w_v", "w_o"))
    out = np.zeros_like(x)
    dh = wq.shape[2]
    for h in range(wq.shape[0]):
        q = x @ wq[h] + T[p + "attn.b_q"][h]
        k = x @ wk[h] + T[p + "attn.b_k"][h]
        v = x @ wv[h] + T[p + "attn.b_v"][h]
        s = q @ k.T / np.sqrt(dh)
        if causal:
            s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
        s = s - s.max(axis=1, keepdims=True)
        w = np.exp(s)
        w = w / w.sum(axis=1, keepdims=True)
        out += (w @ v) @ wo[h]
    x = x + out + T[p + "attn.b_o"]
    hid = np.maximum(x @ T[p + "mlp.w_in"] + T[p + "mlp.b_in"], 0)
    x = x + hid @ T[p + "mlp.w_out"] + T[p + "mlp.b_out"]
logits = x @ T["unembed"] + T["unembed_b"]
err = np.abs(logits - want).max()
same = (logits[1:].argmax(axis=1) == want[1:].argmax(axis=1)).all()
print("max |numpy - C| = %.3g, argmax equal: %s" % (err, same))
sys.exit(0 if same and err < 1e-2 * max(1.0, np.abs(want).max()) else 1)
