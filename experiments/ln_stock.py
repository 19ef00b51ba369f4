#!/usr/bin/env python3
"""ln_stock.py STEM INPUTS... -- would stock torch.nn.LayerNorm run a
compiled pre-LN model exactly if its layer norms were made the identity by
their epsilon instead of by constant dimensions?  An experiment, not a
construction rasp writes.

STEM is a `rasp compile --ln pre` model (rcompile_ln.c: a balance
dimension, constants +-K, +-J near 2^80, every layer norm's weight 2^q on
the model's dimensions).  The variant built here drops the constants (their
token embedding entries set to 0), sets every layer norm's epsilon to 4^p
and its weight to 2^p on the dimensions that had weight 2^q, with p the
smallest integer such that the largest variance the forward pass meets on
INPUTS is below 2^(2p - 58): then var + eps rounds to exactly 4^p in float32
and float64, in any summation order, so the reciprocal square root is
exactly 2^-p and the layer norm's scale is exactly 1.  What is left is the
mean: PyTorch's CPU layer norm computes it (Welford updates, float32 for a
float32 tensor) with an error, so the layer norm returns fl(x - mean), not
x, on every dimension.

Each INPUTS file (one input a line, symbols separated by spaces, as `rasp
gen --no-bos --no-eos --st-names` writes them) is run through the model as
compiled (rasp_model.load: its layer norms are rmodel.c's arithmetic, whose
argmax tests/apply_parity.sh holds to `rasp apply`) and through the variant
with torch.nn.LayerNorm, in float32 and in float64; printed per file and
type: inputs whose every position agrees, positions that agree, the largest
|mean| the stock layer norm computed (torch.native_layer_norm's own), the
largest mean of the residual as stored (summed in float64: the balance
dimension cancels the others only up to their rounding), the largest sum
of |x| over a position's dimensions (what the computed mean's error
scales with), and whether 1/rstd was 2^p everywhere.

    /usr/bin/python3 experiments/ln_stock.py STEM task.in adversarial.in

`ln_stock.py --rms STEM INPUTS...` runs the same variant with RMS norms
in place of the layer norms (x rsqrt(mean(x^2) + eps) weight, no mean
subtracted: torch.nn.RMSNorm where this torch has one, else that formula
written out), eps 4^p and weight 2^p as above: a norm with nothing to get
wrong but its scale.

`ln_stock.py --sink STEM INPUTS...` adds to that variant one dimension,
the sink: 0 in the residual at every position (no writer touches it),
weight 2^p in every layer norm, and in every reader of a layer norm's
output (queries, keys, values, the MLPs' input, the unembedding) a row
equal to minus the sum of the rows of the dimensions that norm passes.
The layer norm returns fl(x_i - mean) on every passed dimension and
-mean on the sink, so a reader's pre-activation is sum_i W_i x_i plus
only the rounding of each x_i - mean: the computed mean, a shift common to
every dimension, cancels in real arithmetic whatever order it was summed
in.

`ln_stock.py --loaded STEM INPUTS...` runs a `rasp compile --ln stock`
model as the loader builds it: its layer norms torch.nn.LayerNorm itself
(eps config.norm_eps), in float32 and in float64, against the numpy
backend's argmax (another arithmetic: the mean in float64), and prints,
per file and type, the inputs and positions that agree, the largest
|mean| the layer norms computed against the bound the model was sized for
(layout.layer_norm.mean_bound), and whether 1/rstd was 2^p everywhere
(float64 not for a model exact in float32 alone: layout.arithmetic).

`ln_stock.py --units STEM INPUTS...` finds where a `--ln stock` model
first goes wrong under torch.nn.LayerNorm: it traces every input through
the numpy backend (the reference: the mean in float64) and through torch
in float32, and for every unit the layout names (in order of writing),
reads its value off the residual stream just after the sublayer that
writes it (rasp_model.Trace.value) and prints the positions where the two
agree (a categorical value, or a number rounded to an integer:
value_text) and the largest difference on any of its dimensions (a
number's square too).  The first unit with a disagreement is marked;
units after it may only inherit it.

`ln_stock.py --orders` reads arm-ordered samples (`rasp gen --order arm`)
on stdin and writes each with its edges in the three adversarial orders
`rasp compile --check` cycles through: every arm from s outward, every arm
from its end inward, all arms interleaved from their ends inward.

Needs torch (not for --orders); run from the repository root."""
import math
import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def orders():
    """--orders: stdin's arm-ordered samples in the adversarial orders."""
    for line in sys.stdin:
        t = line.split()
        if len(t) < 5:
            continue
        parts = " ".join(t[4:]).split(" | ")
        edges, answer = parts[:-1], parts[-1]
        nd = sum(1 for e in edges if e.split()[0] == "s")
        per = len(edges) // nd
        arms = [edges[i * per:(i + 1) * per] for i in range(nd)]
        for es in ([e for a in arms for e in a], [e for a in arms for e in reversed(a)],
                   [a[k] for k in reversed(range(per)) for a in arms]):
            print(" ".join(t[:4]) + " " + " | ".join(es + [answer]))


if sys.argv[1:] == ["--orders"]:
    orders()
    sys.exit(0)
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import rasp_model  # noqa: E402


class _RMS(nn.Module):
    """torch.nn.RMSNorm's formula, for a torch without it."""

    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))  # (the file has one; unused)
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _norm(d, eps, rms):
    if not rms:
        return nn.LayerNorm(d, eps=eps)
    if hasattr(nn, "RMSNorm"):
        n = nn.RMSNorm(d, eps=eps)
        n.bias = nn.Parameter(torch.zeros(d))  # (loaded, unused)
        return n
    return _RMS(d, eps)


def variant(stem, toks, rms=False):
    """The compiled model, the eps variant (stock nn.LayerNorm, or RMS
    norms) and p."""
    m0 = rasp_model.load(stem, backend="torch")
    const = [i for i, d in enumerate(m0.dims) if d.startswith(("ln_+", "ln_-"))]
    if not const:
        sys.exit("%s: not a `rasp compile --ln pre` model (no ln_+a dimension)" % stem)
    top = 0.0
    with torch.no_grad():
        tr = m0.trace(toks)
        for s in tr.sites:
            x = tr.residual[s].double()
            x[..., const] = 0
            top = max(top, float(x.var(-1, unbiased=False).max()))
    p = math.ceil((math.log2(top) + 58) / 2) if top > 0 else 29
    sd = {k: v.detach().clone() for k, v in m0.state_dict().items()}
    sd["tok_emb"][:, const] = 0
    for k, w in sd.items():
        if k.endswith(".weight") and "ln" in k.split(".")[-2]:
            w[w != 0] = 2.0 ** p
    m1 = rasp_model.load(stem, backend="torch")
    D = len(m1.dims)
    for blk in m1.layers:
        blk.ln1 = _norm(D, 4.0 ** p, rms)
        blk.ln2 = _norm(D, 4.0 ** p, rms)
    m1.ln_f = _norm(D, 4.0 ** p, rms)
    m1.load_state_dict(sd)
    m1.arithmetic = None  # (float64 too: the question is the layer norm's)
    return m0, m1, p


def add_sink(m1, p, rms):
    """The variant with one more dimension, the sink: 0 in the residual
    at every position (no writer touches it), weight 2^p in every layer
    norm, and in every reader of a layer norm's output (the heads' queries,
    keys and values, the MLPs' input, the unembedding) the row minus the
    sum of the rows of the dimensions that norm passes.  Every reader's
    rows then sum to 0 over the passed dimensions, so a shift common to
    all of them (the computed mean) cancels in real arithmetic."""
    D = m1.tok_emb.shape[1]

    def grow(t, axis, row=None):
        shape = list(t.shape)
        shape[axis] = 1
        extra = torch.zeros(shape, dtype=t.dtype) if row is None else row.unsqueeze(axis)
        return nn.Parameter(torch.cat([t.detach(), extra], axis))

    def minus_sum(w, passed, axis):
        idx = passed.nonzero().flatten()
        return -w.detach().double().index_select(axis, idx).sum(axis).to(w.dtype)

    def norm_of(old):
        n = _norm(D + 1, old.eps, rms)
        with torch.no_grad():
            n.weight.copy_(torch.cat([old.weight.detach(), torch.tensor([2.0 ** p])]))
            n.bias.copy_(torch.cat([old.bias.detach(), torch.zeros(1)]))
        return n

    with torch.no_grad():
        m1.tok_emb = grow(m1.tok_emb, 1)
        if hasattr(m1, "pos_emb") and isinstance(m1.pos_emb, torch.Tensor):
            m1.pos_emb = grow(m1.pos_emb, 1)
        for blk in m1.layers:
            a, f = blk.attn, blk.mlp
            g1, g2 = blk.ln1.weight.detach() != 0, blk.ln2.weight.detach() != 0
            for name in ("w_q", "w_k", "w_v"):
                w = getattr(a, name)
                setattr(a, name, grow(w, 1, minus_sum(w, g1, 1)))
            a.w_o = grow(a.w_o, 2)
            a.b_o = grow(a.b_o, 0)
            f.w_in = grow(f.w_in, 0, minus_sum(f.w_in, g2, 0))
            f.w_out = grow(f.w_out, 1)
            f.b_out = grow(f.b_out, 0)
            blk.ln1, blk.ln2 = norm_of(blk.ln1), norm_of(blk.ln2)
        gf = m1.ln_f.weight.detach() != 0
        m1.unembed = grow(m1.unembed, 0, minus_sum(m1.unembed, gf, 0))
        m1.ln_f = norm_of(m1.ln_f)


def _inputs(path):
    """INPUTS: one input a line, blank lines skipped."""
    with open(path) as f:
        return [ln.strip() for ln in f if ln.strip()]


def _backends(stem):
    """A model loaded for torch and for numpy (the warning that a --ln
    stock model's layer norms are not proven silenced: known here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rasp_model.load(stem, backend="torch"), rasp_model.load(stem, backend="numpy")


def loaded(stem, paths):
    """--loaded: a --ln stock model, torch.nn.LayerNorm against numpy."""
    import numpy as np
    mt, mn = _backends(stem)
    import json
    with open(stem + ".json") as f:
        lay = (json.load(f).get("layout") or {}).get("layer_norm") or {}
    if lay.get("construction") != "stock":
        sys.exit("%s: not a `rasp compile --ln stock` model" % stem)
    p = lay["weight_log2"]
    for path in paths:
        lines = _inputs(path)
        toks = [mt.encode(ln) for ln in lines]
        ref = mn.forward(np.array(toks)).argmax(-1)
        st = {}

        def hook(mod, inp, out):
            x = inp[0]
            _, mu, rs = torch.native_layer_norm(x, (x.shape[-1],), mod.weight, mod.bias, mod.eps)
            s = st.setdefault(x.dtype, [0.0, True])
            s[0] = max(s[0], float(mu.abs().max()))
            s[1] = s[1] and bool((rs.double() == 2.0 ** -p).all())

        dv = lay["value_dims"]

        def bos_hook(mod, inp, out):
            # BOS's residual at an attention's layer norm against is_bos's
            # one-hot, on the model's own dimensions (the proof's bound)
            x = inp[0][:, 0, :dv].double().clone()
            x[:, 0] -= 1
            s = st.setdefault(("bos", inp[0].dtype), [0.0])
            s[0] = max(s[0], float(x.abs().max()))

        hooks = [m.register_forward_hook(hook) for m in mt.modules() if isinstance(m, nn.LayerNorm)]
        hooks += [b.ln1.register_forward_hook(bos_hook) for b in mt.layers]
        for dt in (torch.float32, torch.float64):
            if dt == torch.float64 and mt.arithmetic and "float64" not in mt.arithmetic:
                print("%s %s float64: not run (a float32-only model: layout.arithmetic)"
                      % (os.path.basename(stem), os.path.basename(path)))
                continue
            mt.to(dt)
            with torch.no_grad():
                out = mt(torch.tensor(toks)).argmax(-1).numpy()
            ag = (out == ref)[:, 1:]
            s = st[dt]
            bb = lay.get("bos_bound")
            bos = st[("bos", dt)][0]
            print("%s %s %s: %d/%d inputs, %d/%d positions agree; max |mean| %.3g (sized for %.3g), "
                  "rstd 2^-%d everywhere: %s; BOS's residual off its one-hot by %.3g (bound %s): %s"
                  % (os.path.basename(stem), os.path.basename(path), str(dt)[6:],
                     int(ag.all(-1).sum()), len(lines), int(ag.sum()), ag.size, s[0],
                     lay["mean_bound"], p, "yes" if s[1] else "no", bos,
                     "none" if bb is None else "%.3g" % bb,
                     "within" if bb is not None and bos <= bb else "NOT within"))
        for h in hooks:
            h.remove()


def units(stem, paths):
    """--units: unit by unit, torch.nn.LayerNorm (float32) against numpy."""
    import numpy as np
    mt, mn = _backends(stem)
    lines = [ln for path in paths for ln in _inputs(path)]
    toks = [mt.encode(ln) for ln in lines]
    mt.to(torch.float32)
    with torch.no_grad():
        tt = mt.trace(torch.tensor(toks))
    tn = mn.trace(np.array(toks))
    us = [u for u in mt.units if isinstance(u, dict) and u.get("layer", -1) >= 0]
    us.sort(key=lambda u: tn.sites.index(rasp_model.unit_site(u)))
    first = None
    print("%s: %d inputs; unit (site): positions agreeing, torch float32 against numpy"
          % (os.path.basename(stem), len(lines)))
    for u in us:
        site, name = rasp_model.unit_site(u), u["name"]
        agree = total = 0
        diff = 0.0
        for b in range(len(toks)):
            try:
                vt, vn = tt.value(name, site, b), tn.value(name, site, b)
            except KeyError:  # (a unit with no dimension of its own: the readout's)
                break
            at, an = rasp_model.value_text(vt), rasp_model.value_text(vn)
            agree += sum(x == y for x, y in zip(at, an))
            total += len(at)
        if total and "dim" in u:  # every dimension of the unit (x^2 too)
            d0, d1 = int(u["dim"]), int(u["dim"]) + int(u.get("size", 1))
            rt = tt.residual[site].detach().numpy()[:, 1:, d0:d1].astype(np.float64)
            diff = float(np.abs(rt - tn.residual[site][:, 1:, d0:d1]).max())
        if not total:
            continue
        mark = ""
        if agree < total and first is None:
            first, mark = name, "   <- the first to disagree"
        print("  %-28s %-16s %6d/%d%s%s" % (name, site, agree, total,
                                          "  max |diff| %.3g" % diff if diff else "", mark))
    print("first unit to disagree: %s" % (first or "none"))


def main():
    args = sys.argv[1:]
    if args[:1] in (["--units"], ["--loaded"]) and len(args) < 3:
        sys.exit("usage: ln_stock.py %s STEM INPUTS..." % args[0])
    if args[:1] == ["--units"]:
        torch.set_num_threads(1)
        units(args[1], args[2:])
        return
    if args[:1] == ["--loaded"]:
        torch.set_num_threads(1)
        loaded(args[1], args[2:])
        return
    rms = args[:1] == ["--rms"]
    if rms:
        args = args[1:]
    sink = args[:1] == ["--sink"]
    if sink:
        args = args[1:]
    if len(args) < 2:
        sys.exit("usage: ln_stock.py [--rms] [--sink] STEM INPUTS... (or --loaded, --units, --orders)")
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    stem = args[0]
    for path in args[1:]:
        lines = _inputs(path)
        m0 = rasp_model.load(stem, backend="torch")
        toks = torch.tensor([m0.encode(ln) for ln in lines])
        m0, m1, p = variant(stem, toks, rms)
        if sink:
            add_sink(m1, p, rms)
        with torch.no_grad():
            ref = m0(toks).argmax(-1)
        st = {}
        if rms:
            for dt in (torch.float32, torch.float64):
                m1.to(dt)
                with torch.no_grad():
                    ag = (m1(toks).argmax(-1) == ref)[:, 1:]
                print("%s %s %s, RMS norms (eps 2^%d): %d/%d inputs, %d/%d positions agree"
                      % (os.path.basename(stem), os.path.basename(path), str(dt)[6:], 2 * p,
                         int(ag.all(-1).sum()), len(lines), int(ag.sum()), ag.numel()))
            continue

        def hook(mod, inp, out):
            x = inp[0]
            _, mu, rs = torch.native_layer_norm(x, (x.shape[-1],), mod.weight, mod.bias, mod.eps)
            s = st.setdefault(x.dtype, [0.0, 0.0, True, 0.0])
            own = x.double().mean(-1, keepdim=True)
            s[0] = max(s[0], float(mu.abs().max()))
            s[1] = max(s[1], float(x.double().abs().sum(-1).max()))
            s[2] = s[2] and bool((rs.double() == 2.0 ** -p).all())
            s[3] = max(s[3], float(own.abs().max()))

        hooks = [m.register_forward_hook(hook) for m in m1.modules() if isinstance(m, nn.LayerNorm)]
        for dt in (torch.float32, torch.float64):
            m1.to(dt)
            with torch.no_grad():
                out = m1(toks).argmax(-1)
            ag = (out == ref)[:, 1:]
            s = st[dt]
            print("%s %s %s (eps 2^%d): %d/%d inputs, %d/%d positions agree; max |mean| %.3g "
                  "(of the residual as stored %.3g), max sum |x| %.4g, rstd 2^-%d everywhere: %s"
                  % (os.path.basename(stem), os.path.basename(path), str(dt)[6:], 2 * p,
                     int(ag.all(-1).sum()), len(lines), int(ag.sum()), ag.numel(), s[0], s[3],
                     s[1], p, "yes" if s[2] else "no"))
        for h in hooks:
            h.remove()


try:
    main()
except (OSError, rasp_model.FormatError) as e:  # a missing or malformed file
    sys.exit("ln_stock.py: %s" % e)
