#!/usr/bin/python3
"""sdpa_parity.py RASP PAIRS -- compiled models run the way PyTorch 2's
scaled_dot_product_attention runs them (q and k each times d_head^(-1/4)
before the product) against `rasp apply`.

PAIRS lists models and their inputs, one path a line: STEM, INPUTS, STEM,
INPUTS, ...; a STEM ending in ".nosdpa" is a `rasp compile --no-sdpa`
model.  For every other model and backend (numpy; torch when it imports):
  - STEM.json's layout.attention.formulas lists "sdpa";
  - the forward pass in that formula gives, on every input line, the output
    `rasp apply` prints (argmax at every position) and logits within 1e-5
    of its (relative beyond 1, as apply_parity.py: other summation orders);
  - and logits bit-identical to the same backend's product-first pass (the
    scores differ only by exact power-of-two scalings), where the formula
    is written out (numpy; a torch without scaled_dot_product_attention).
The arithmetic is run even where formulas lacks "sdpa" (forced), so that a
model compiled with a d_head whose fourth root is not a power of two fails
on its outputs, not only on the field.  For a --no-sdpa model: loading with
attention="sdpa" raises ValueError naming layout.attention.formulas.
Prints one line per model and backend; exit status 1 on any failure."""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import numpy as np  # noqa: E402
import rasp_model  # noqa: E402

TOL = 1e-5


def apply_runs(rasp, stem, lines):
    runs = []
    for line in lines:
        r = subprocess.run([rasp, "apply", stem, "--input", line, "--logits", "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        if r.returncode != 0:
            sys.exit("sdpa_parity: rasp apply %s --input %r failed (%d): %s"
                     % (stem, line, r.returncode, r.stderr.decode()))
        runs.append(json.loads(r.stdout))
    return runs


def logits(m, tokens):
    out = m(tokens)
    if rasp_model.torch is not None and isinstance(out, rasp_model.torch.Tensor):
        out = out.detach().numpy()
    return out


def check(rasp, stem, inputs, backends):
    name = os.path.basename(stem)
    lines = [l.strip() for l in open(inputs) if l.strip()]
    if stem.endswith(".nosdpa"):
        try:
            rasp_model.load(stem, backend="numpy", attention="sdpa")
        except ValueError as e:
            if "layout.attention.formulas" in str(e):
                print("PASS: %s: attention='sdpa' refused (%s)" % (name, e))
                return 0
            print("FAIL: %s: refused, but the message does not name the field: %s" % (name, e))
            return 1
        print("FAIL: %s: a --no-sdpa model loaded with attention='sdpa'" % name)
        return 1
    runs = apply_runs(rasp, stem, lines)
    bad = 0
    for backend in backends:
        m = rasp_model.load(stem, backend=backend)
        msgs = []
        if "sdpa" not in (m.formulas or ()):
            msgs.append("layout.attention.formulas is %s (d_head %d)"
                        % (list(m.formulas) if m.formulas else None, m.config["d_head"]))
        agree, same, worst = 0, 0, 0.0
        for line, run in zip(lines, runs):
            tokens = m.encode(line)
            m._attention = "product"
            prod = logits(m, tokens)
            m._attention = "sdpa"  # (forced: the field is checked above)
            out = logits(m, tokens)
            same += bool(np.array_equal(out, prod))
            got = out[0, 1:].astype(np.float64)
            want = np.array(run["logits"], dtype=np.float64)
            worst = max(worst, float((np.abs(got - want) / np.maximum(1, np.abs(want))).max()))
            agree += m.decode(out.argmax(-1))[0] == run["output"]
        if agree < len(lines):
            msgs.append("outputs agree with rasp apply on %d/%d inputs" % (agree, len(lines)))
        if worst > TOL:
            msgs.append("max relative logit difference %.3g > %g" % (worst, TOL))
        # (torch 2's own function may block its sums differently: the
        # outputs and the tolerance hold it there, not bit-identity)
        exact_path = backend == "numpy" or rasp_model._SDPA is None
        if same < len(lines) and exact_path:
            msgs.append("logits bit-identical to the product-first pass on %d/%d inputs"
                        % (same, len(lines)))
        if msgs:
            print("FAIL: %s (%s, d_head %d): %s" % (name, backend, m.config["d_head"],
                                                   "; ".join(msgs)))
            bad += 1
        else:
            print("PASS: %s (%s, d_head %d): %d/%d inputs agree, bit-identical to the "
                  "product-first pass, max relative logit difference %.3g"
                  % (name, backend, m.config["d_head"], agree, len(lines), worst))
    return bad


def main():
    rasp, pairs = sys.argv[1], sys.argv[2]
    paths = [l.strip() for l in open(pairs) if l.strip()]
    backends = ["numpy"] + (["torch"] if rasp_model.torch is not None else [])
    if rasp_model.torch is not None:
        rasp_model.torch.set_grad_enabled(False)
        print("torch %s: %s" % (rasp_model.torch.__version__,
                                "its scaled_dot_product_attention" if rasp_model._SDPA
                                else "no scaled_dot_product_attention; its math path written out"))
    bad = sum(check(rasp, paths[i], paths[i + 1], backends) for i in range(0, len(paths), 2))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
