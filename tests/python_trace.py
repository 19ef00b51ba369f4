#!/usr/bin/python3
"""python_trace.py PAIRS -- the intermediates python/rasp_model.py gives
(m.trace: the residual stream after every sublayer, the attention weights,
the logits, values read by name) against the forward pass they come from.

PAIRS is apply_parity.sh's list (STEM, INPUTS, ... one path a line).  For
every model and backend (numpy; torch when it imports), on every input:
  - the trace's logits are m(tokens)'s, bit for bit;
  - it has 1 + 2L sites, "embed" then "layers.L.attn", "layers.L.mlp";
  - the last residual, through the final layer norm (if any) and the
    unembedding, gives the logits (relative 1e-5);
  - each layer's attention rows sum to 1, and a causal model's weights
    above the diagonal are 0;
  - a compiled model that reads its tokens gives the input's symbols for
    value("tokens", "embed") (categorical tokens or numerical ids), and its
    readout unit's value after the last sublayer is what decode() of the
    logits says (categorical readouts);
  - every unit written as a number with its square (layout.units encoding
    "numerical+square") reads, after the sublayer that writes it, as an
    integer x whose square is what its second dimension holds (so value()
    reads x, not the label of the larger dimension);
  - numpy's and torch's residuals agree (relative 1e-5 of each site's scale).
Prints one line per model; exit status 1 on any failure."""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import numpy as np  # noqa: E402
import rasp_model  # noqa: E402

TOL = 1e-5


def as_np(x):
    if rasp_model.torch is not None and isinstance(x, rasp_model.torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def readout_unit(stem, m):
    """The readout's unit (named "%NODE" or by the program) when it is
    categorical, else None."""
    import json
    readout = json.load(open(stem + ".json"))["layout"].get("readout", {})
    want = {"%%%d" % readout["node"]} if "node" in readout else set()
    want |= {readout["name"]} if "name" in readout else set()
    for u in m.units:
        if u["name"] in want and u.get("encoding") == "categorical":
            return u["name"]
    return None


def check(stem, inputs):
    lines = [l.strip() for l in open(inputs) if l.strip()]
    backends = ["numpy"] + (["torch"] if rasp_model.torch is not None else [])
    name, bad, seen, numerical = os.path.basename(stem), [], {}, 0
    for backend in backends:
        m = rasp_model.load(stem, backend=backend)
        c = m.config
        compiled = m.vocab is not None and any(d.startswith("tokens=") for d in m.dims)
        unit = readout_unit(stem, m) if compiled else None
        for line in lines:
            tokens = m.encode(line)
            if backend == "torch":
                with rasp_model.torch.no_grad():
                    t = m.trace(tokens)
                    plain = as_np(m(tokens))
            else:
                t = m.trace(tokens)
                plain = m(tokens)
            logits = as_np(t.logits)
            if not np.array_equal(logits, plain):
                bad.append("%s: trace logits differ from the forward pass" % backend)
            want_sites = ["embed"] + ["layers.%d.%s" % (L, s) for L in range(c["n_layers"])
                                      for s in ("attn", "mlp")]
            if t.sites != want_sites:
                bad.append("%s: sites %s" % (backend, t.sites))
                continue
            x = as_np(t.residual[t.sites[-1]]).astype(np.float64)
            if c["layer_norm"]:
                P = {k: as_np(v) for k, v in (m.params.items() if backend == "numpy"
                                             else m.state_dict().items())}
                if c["layer_norm"] == 2:  # RMS norm
                    x = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * P["ln_f.weight"]
                else:
                    mu = x.mean(-1, keepdims=True)
                    var = ((x - mu) ** 2).mean(-1, keepdims=True)
                    x = (x - mu) / np.sqrt(var + 1e-5) * P["ln_f.weight"] + P["ln_f.bias"]
                U, b = P["unembed"], P["unembed_b"]
            else:
                sd = m.params if backend == "numpy" else m.state_dict()
                U, b = as_np(sd["unembed"]), as_np(sd["unembed_b"])
            again = x @ U.astype(np.float64) + b
            err = float((np.abs(again - logits) / np.maximum(1, np.abs(logits))).max())
            if err > TOL:
                bad.append("%s: the last residual gives logits off by %.3g" % (backend, err))
            n = len(tokens)
            for L, w in enumerate(t.attention):
                w = as_np(w).astype(np.float64)
                if w.shape != (1, c["n_heads"], n, n) or np.abs(w.sum(-1) - 1).max() > TOL:
                    bad.append("%s: layer %d attention rows do not sum to 1" % (backend, L))
                if c["causal"] and np.abs(np.triu(w, 1)).max() != 0:
                    bad.append("%s: layer %d attends to later positions" % (backend, L))
            if compiled:
                if t.value("tokens", "embed") != line.split():
                    bad.append("%s: value('tokens', 'embed') = %s" % (backend,
                                                                     t.value("tokens", "embed")))
                if unit is not None:
                    dec = m.decode(logits.argmax(-1))[0]
                    got = t.value(unit)
                    if got != dec:
                        bad.append("%s: value(%r) = %s, decode() %s" % (backend, unit, got, dec))
                for u in m.units:
                    if u.get("encoding") != "numerical+square" or u["name"] == "tokens":
                        continue
                    site = rasp_model.unit_site(u)
                    got = t.value(u["name"], site)
                    sq = as_np(t.residual[site]).astype(np.float64)[0, 1:, u["dim"] + 1]
                    off = [(g, q) for g, q in zip(got, sq) if not isinstance(g, float)
                           or abs(g - round(g)) > 1e-3 or abs(q - g * g) > 1e-3 * max(1, q)]
                    if off:
                        bad.append("%s: value(%r, %r) = %s, its square dimension %s"
                                   % (backend, u["name"], site, off[0][0], off[0][1]))
                    numerical += backend == "numpy"
            key = line
            res = np.stack([as_np(t.residual[s]) for s in t.sites]).astype(np.float64)
            if key in seen:
                scale = np.maximum(1, np.abs(seen[key]).max(axis=(1, 2, 3), keepdims=True))
                diff = float((np.abs(res - seen[key]) / scale).max())
                if diff > TOL:
                    bad.append("numpy and torch residuals differ by %.3g" % diff)
            else:
                seen[key] = res
    checked = "%d inputs, %s, readout %s, %d numerical values read" % (
        len(lines), "+".join(backends), unit or "-", numerical)
    print("%s: %s%s" % (name, checked, "" if not bad else "  FAIL: " + "; ".join(sorted(set(bad)))))
    return 1 if bad else 0


if len(sys.argv) != 2:
    sys.exit("usage: python_trace.py PAIRS")
paths = [l.rstrip("\n") for l in open(sys.argv[1]) if l.strip()]
fails = sum(check(paths[i], paths[i + 1]) for i in range(0, len(paths), 2))
sys.exit(1 if fails else 0)
