#!/usr/bin/python3
"""sdpa_smallest.py STEM... -- the smallest nonzero |q_j s|, |k_j s| and
|q_j s k_j s| that scaled_dot_product_attention forms in a compiled model
(s = d_head^(-1/4)), over the inputs in STEM.in (one a line, space-separated
symbols; `rasp gen --format text --no-bos --no-eos --st-names` writes
them).  Where every nonzero product is at least 2^-103, no partial sum of
a score is subnormal, and the model's scores are the same under that
formula and the product-first one (doc/compiler.md, "Score formulas").
The residual stream is python/rasp_model.py's trace (numpy backend)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import rasp_model  # noqa: E402

for stem in sys.argv[1:]:
    m = rasp_model.load(stem, backend="numpy")
    P, c = m.params, m.config
    s = np.float32(m._sdpa_scale())
    small = [np.inf] * 3
    for line in open(stem + ".in"):
        tr = m.trace(m.encode(line.split()))
        x = tr.residual["embed"]
        for L in range(c["n_layers"]):
            p = "layers.%d.attn." % L
            q = (np.einsum("bnd,hde->bhne", x, P[p + "w_q"]) + P[p + "b_q"][:, None]) * s
            k = (np.einsum("bnd,hde->bhne", x, P[p + "w_k"]) + P[p + "b_k"][:, None]) * s
            prod = q[..., :, None, :] * k[..., None, :, :]
            for i, a in enumerate((q, k, prod)):
                nz = np.abs(a[a != 0])
                if nz.size:
                    small[i] = min(small[i], float(nz.min()))
            x = tr.residual["layers.%d.mlp" % L]
    print("%s (d_head %d): smallest nonzero |q_j s| %.3g, |k_j s| %.3g, |q_j s k_j s| %.3g"
          % (os.path.basename(stem), c["d_head"], *small))
