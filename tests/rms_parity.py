"""rms_parity.py RASP STEM INPUTS [SEED] -- a pre-RMSNorm compiled model (`rasp
compile --ln rms`) in stock PyTorch arithmetic, in other summation orders,
against `rasp apply`.

For every line of INPUTS (one input, space-separated symbols) runs `RASP
apply STEM --input LINE --logits --json` (rmodel.c's forward pass, its
RMS norm summed in float32 in index order), then the model through PyTorch:
the module rasp_model.load builds, with every norm replaced by this file's
own RMS norm (the formula written out again: x * torch.rsqrt(x.pow(2)
.mean(-1, keepdim=True) + eps) * weight, torch's own reduction order), in
float32 and, where STEM.json's layout.arithmetic lists it, float64; each
once with the weights as stored and once with the residual dimensions and
the MLPs' hidden units permuted consistently (torch.randperm, SEED, default
1): a copy of the same model whose every sum, the norms' sums of squares
among them, runs in another order.  Requires, at every position of every
input, the argmax of rasp apply's logits.  Prints one line per type and
order; exit status 1 on any difference."""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import rasp_model  # noqa: E402


class PlainRMS(nn.Module):
    """LLaMA's RMS norm, as torch 2.4's nn.RMSNorm computes it."""

    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def permuted(sd, pd, pf):
    """The state dict with residual dimensions permuted by pd and hidden
    units by pf, consistently: the same function, other sums."""
    out = {}
    for k, v in sd.items():
        last = k.split(".")[-1]
        if k in ("tok_emb", "pos_emb") or last in ("b_o", "b_out", "weight"):
            v = v[..., pd]
        elif last in ("w_q", "w_k", "w_v"):
            v = v[:, pd, :]
        elif last == "w_o":
            v = v[:, :, pd]
        elif last == "w_in":
            v = v[pd][:, pf]
        elif last == "b_in":
            v = v[pf]
        elif last == "w_out":
            v = v[pf][:, pd]
        elif k == "unembed":
            v = v[pd]
        out[k] = v.clone()
    return out


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit("usage: rms_parity.py RASP STEM INPUTS [SEED]")
    rasp, stem, inputs = sys.argv[1:4]
    seed = int(sys.argv[4]) if len(sys.argv) == 5 else 1
    torch.set_num_threads(1)
    lines = [ln.strip() for ln in open(inputs) if ln.strip()]
    want, toks = [], []
    for line in lines:
        r = subprocess.run([rasp, "apply", stem, "--input", line, "--logits", "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        if r.returncode != 0:
            sys.exit("rms_parity: rasp apply %s --input %r failed (%d): %s"
                     % (stem, line, r.returncode, r.stderr.decode()))
        run = json.loads(r.stdout)
        want.append(torch.tensor(run["logits"], dtype=torch.float64).argmax(-1))
        toks.append(run["tokens"])
    m = rasp_model.load(stem, backend="torch")
    if m.config["layer_norm"] != 2:
        sys.exit("rms_parity: %s is not a pre-RMSNorm model (config.layer_norm %d)"
                 % (stem, m.config["layer_norm"]))
    eps = m.ln_f.eps
    D, F = m.config["d_model"], m.config["d_mlp"]
    for blk in m.layers:
        blk.ln1, blk.ln2 = PlainRMS(D, eps), PlainRMS(D, eps)
    m.ln_f = PlainRMS(D, eps)
    sd0 = {k: v.detach().clone() for k, v in rasp_model.load(stem, backend="torch")
           .state_dict().items()}
    g = torch.Generator().manual_seed(seed)
    pd, pf = torch.randperm(D, generator=g), torch.randperm(F, generator=g)
    name, bad = os.path.basename(stem), 0
    for dt in (torch.float32, torch.float64):
        tname = str(dt)[6:]
        if m.arithmetic is not None and tname not in m.arithmetic:
            print("%s %s: not run (STEM.json's layout.arithmetic lists %s only)"
                  % (name, tname, ", ".join(m.arithmetic)))
            continue
        for label, sd in (("as stored", sd0), ("permuted", permuted(sd0, pd, pf))):
            m.load_state_dict(sd)
            m.to(dt)
            agree = pos = npos = 0
            with torch.no_grad():
                for i in range(0, len(toks), 64):  # (a batch: the inputs have one length)
                    got = m(toks[i:i + 64])[:, 1:].argmax(-1)
                    for k, w in enumerate(want[i:i + 64]):
                        same = got[k] == w
                        agree += bool(same.all())
                        pos += int(same.sum())
                        npos += same.numel()
            ok = agree == len(lines)
            bad += not ok
            print("%s %s, %s: %d/%d inputs, %d/%d positions agree with rasp apply%s"
                  % (name, tname, label, agree, len(lines), pos, npos, "" if ok else "  FAIL"))
            m.to(torch.float32)
    sys.exit(1 if bad else 0)


main()
