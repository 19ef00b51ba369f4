#!/usr/bin/python3
"""apply_parity.py RASP PAIRS -- python/rasp_model.py against `rasp apply`.
apply_parity.py --random STEM CAUSAL [LAYER_NORM] -- writes a random (not
compiled) model (LAYER_NORM 1, the default: layer norms; 2: RMS norms).

PAIRS lists models and their inputs, one path a line: STEM, INPUTS, STEM,
INPUTS, ... (one process for all: torch is slow to import).  For every line
of INPUTS (one input, space-separated symbols) runs
`RASP apply STEM --input LINE --logits --json` and the module's forward
pass on m.encode(LINE), with the numpy backend and, when torch imports,
the torch backend; requires the same decoded output (argmax) at every
position and max |logit difference| <= 1e-5.  Also checks what the module
reads from STEM.json: one name per residual dimension, every unit's name at
its first dimension, and encode() agreeing with the token ids rasp apply
used.  Prints one line per backend; exit status 1 on any difference."""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import numpy as np  # noqa: E402
import rasp_model  # noqa: E402

TOL = 1e-5


def check(rasp, stem, inputs):
    lines = [l.strip() for l in open(inputs) if l.strip()]
    if not lines:
        sys.exit("apply_parity: %s has no inputs" % inputs)
    runs = []
    for line in lines:
        r = subprocess.run([rasp, "apply", stem, "--input", line, "--logits", "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        if r.returncode != 0:
            sys.exit("apply_parity: rasp apply %s --input %r failed (%d): %s"
                     % (stem, line, r.returncode, r.stderr.decode()))
        runs.append(json.loads(r.stdout))

    backends = ["numpy"]
    if rasp_model.torch is not None:
        backends.append("torch")
    bad = 0
    for backend in backends:
        m = rasp_model.load(stem, backend=backend)
        name = os.path.basename(stem)
        if len(m.dims) != m.config["d_model"]:
            print("%s: %d dimension names for d_model %d" % (name, len(m.dims), m.config["d_model"]))
            bad += 1
        for u in m.units:
            # a reused dimension names every unit that held it, " | " between
            held = m.dims[u["dim"]].split(" | ")
            if not u.get("in_place") and not any(h.startswith(u["name"] + "=") for h in held):
                if u["name"] != "one" or m.dims[u["dim"]] != "one":
                    print("%s: unit %s at dimension %d, named %s" % (name, u["name"], u["dim"],
                                                                  m.dims[u["dim"]]))
                    bad += 1
        worst, same = 0.0, True
        for line, run in zip(lines, runs):
            tokens = m.encode(line)
            if tokens != run["tokens"]:
                print("%s: encode(%r) = %s, rasp apply used %s" % (name, line, tokens, run["tokens"]))
                bad += 1
            out = m(tokens)
            if backend == "torch":
                with rasp_model.torch.no_grad():
                    out = m(tokens)
                out = out.numpy()
            got = out[0, 1:].astype(np.float64)
            want = np.array(run["logits"], dtype=np.float64)
            if got.shape != want.shape:
                print("%s: logits of shape %s, rasp apply has %s" % (name, got.shape, want.shape))
                bad += 1
                continue
            # relative beyond 1: a numerical readout's logits -X (x - v)^2
            # reach 10^5, where float32 orders of summation differ by 10^-3
            worst = max(worst, float((np.abs(got - want) / np.maximum(1, np.abs(want))).max()))
            dec = m.decode(out.argmax(-1))[0]
            if dec != run["output"] or not (got.argmax(-1) == want.argmax(-1)).all():
                print("%s: input %r: output %s, rasp apply %s" % (name, line, dec, run["output"]))
                same = False
        ok = same and worst <= TOL
        print("%s %-6s %d inputs: argmax equal: %s, max |logit - C| / max(1, |C|) = %.3g (limit %g)%s"
              % (name, backend, len(lines), same, worst, TOL, "" if ok else "  FAIL"))
        bad += not ok
    return bad


def write_random(stem, causal, ln=1):
    """A model that is not compiled: random weights, pre-layer-norm (ln 1)
    or pre-RMSNorm (ln 2), GELU, nonzero biases, causal or not, and a layout
    with a vocabulary (a b c d) and readout values: it covers what the
    compiled ones leave at zero."""
    cfg = dict(vocab_size=6, max_len=7, d_model=12, n_layers=2, n_heads=3, d_head=4, d_mlp=16,
               n_out=5, causal=causal, layer_norm=ln, pos_embedding=1, gelu=1, bos_token=5)
    rng = np.random.default_rng(7 + causal)
    header, blobs, off = {}, [], 0
    for name, shape in rasp_model._expected(cfg).items():
        a = rng.normal(0, 0.5, shape).astype("<f4")
        if name.endswith("ln1.weight") or name.endswith("ln2.weight") or name == "ln_f.weight":
            a = (1 + 0.2 * rng.normal(size=shape)).astype("<f4")
        header[name] = {"dtype": "F32", "shape": list(shape),
                        "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes())
        off += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(stem + ".safetensors", "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))
    layout = {"bos_token": 5, "n": 6, "dims": ["d%d" % i for i in range(12)],
              "vocab": ["", "a", "b", "c", "d", ""],
              "readout": {"values": ["0", "1", "2", "x", "y"]}}
    with open(stem + ".json", "w") as f:
        json.dump({"config": cfg, "layout": layout}, f)


if len(sys.argv) in (4, 5) and sys.argv[1] == "--random":
    write_random(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) == 5 else 1)
    sys.exit(0)
if len(sys.argv) != 3:
    sys.exit("usage: apply_parity.py RASP PAIRS | --random STEM CAUSAL [LAYER_NORM]")
paths = [l.rstrip("\n") for l in open(sys.argv[2]) if l.strip()]
if not paths or len(paths) % 2:
    sys.exit("apply_parity: %s: not STEM and INPUTS lines" % sys.argv[2])
bad = 0
if rasp_model.torch is None:
    # a skip, unless the environment asks for every part (tests/lib.sh)
    if os.environ.get("RASP_NO_SKIP") == "1":
        print("FAIL: apply_parity: torch cannot be imported (RASP_NO_SKIP=1: a skip is a failure)")
        bad += 1
    else:
        print("apply_parity: torch cannot be imported: torch backend skipped")
for i in range(0, len(paths), 2):
    bad += check(sys.argv[1], paths[i], paths[i + 1])
sys.exit(1 if bad else 0)
