#!/usr/bin/python3
"""Training throughput of the rasp-train architecture in PyTorch (CPU).

Same model as rasp-train's default (rmodel.h): pre-LN decoder, learned
positions, ReLU MLP, dropout 0.1 on embeddings and sublayer outputs,
attention dropout 0, AdamW (lr 5e-4, wd 0.01), loss on the answer tokens.
Random tokens stand in for path-star sequences (throughput does not depend
on the values).  Run with the Debian python (/usr/bin/python3) and torch.

    /usr/bin/python3 bench/torch_train.py --threads 2 --batch 64 --steps 5

With --arch STEM.json (a model written by raspN_save, e.g. `rasp compile
-o STEM`) the model is instead the one that file describes, as rasp-train
runs it (trainer/tnet.c, rmodel.h): token and position embeddings,
n_layers blocks of n_heads heads of width d_head (Q, K, V, O with biases)
and a d_mlp-wide MLP, ReLU or GELU (tanh) per its "gelu", no layer norm
unless "layer_norm", causal per "causal", a readout to --n-out logits
(default: its n_out; rasp-train rebuilds a compiled readout over the
task's V+9 token ids), no dropout unless --dropout.  Every layer has the
same widths (the format has one n_heads and one d_mlp; the compiler pads
narrower layers with zero heads and zero MLP units, and rasp-train
computes them like any other), so the FLOPs are rasp-train's.  With
--weights the parameters are read from STEM.safetensors (the readout's
first --n-out columns); --seq is then the number of model positions
(rasp-train prepends the compiled model's BOS, which stands at position 0).

    /usr/bin/python3 bench/torch_train.py --arch STEM.json --weights \
      --n-out 17 --seq 26 --answer 4 --threads 2 --batch 64 --micro 64
"""
import argparse
import json
import math
import struct
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    # dh: head width (d // h when None); ln: pre-LN (else identity);
    # gelu: GELU with the tanh approximation (rmodel.h), else ReLU.
    def __init__(s, d, h, f, p, dh=None, ln=True, gelu=False):
        super().__init__()
        s.dh = dh or d // h
        s.ln1 = nn.LayerNorm(d) if ln else nn.Identity()
        s.ln2 = nn.LayerNorm(d) if ln else nn.Identity()
        s.qkv, s.o = nn.Linear(d, 3 * h * s.dh), nn.Linear(h * s.dh, d)
        s.fc1, s.fc2 = nn.Linear(d, f), nn.Linear(f, d)
        s.h, s.drop = h, nn.Dropout(p)
        s.act = (lambda t: F.gelu(t, approximate="tanh")) if gelu else F.relu

    def forward(s, x, mask):
        B, T, D = x.shape
        HD = s.h * s.dh
        q, k, v = s.qkv(s.ln1(x)).split(HD, dim=2)
        sh = lambda t: t.view(B, T, s.h, s.dh).transpose(1, 2)
        q, k, v = sh(q), sh(k), sh(v)
        a = (q @ k.transpose(-1, -2)) / math.sqrt(s.dh)
        if mask is not None:
            a = a.masked_fill(mask, float("-inf"))
        a = a.softmax(-1)
        y = (a @ v).transpose(1, 2).reshape(B, T, HD)
        x = x + s.drop(s.o(y))
        return x + s.drop(s.fc2(s.act(s.fc1(s.ln2(x)))))


class Model(nn.Module):
    # The paper's model by default; arch (a raspN_save config) overrides.
    def __init__(s, vocab, T, d, L, h, f, p, arch=None, n_out=None):
        super().__init__()
        dh, ln, gelu, causal, pos = None, True, False, True, True
        if arch:
            vocab, T, d, L = (arch["vocab_size"], arch["max_len"],
                              arch["d_model"], arch["n_layers"])
            h, dh, f = arch["n_heads"], arch["d_head"], arch["d_mlp"]
            ln, gelu = bool(arch["layer_norm"]), bool(arch["gelu"])
            causal, pos = bool(arch["causal"]), bool(arch["pos_embedding"])
            n_out = n_out or arch["n_out"]
        n_out = n_out or vocab
        s.tok = nn.Embedding(vocab, d)
        s.pos = nn.Embedding(T, d) if pos else None
        s.blocks = nn.ModuleList([Block(d, h, f, p, dh, ln, gelu)
                                  for _ in range(L)])
        s.lnf = nn.LayerNorm(d) if ln else nn.Identity()
        s.out, s.drop = nn.Linear(d, n_out), nn.Dropout(p)
        s.causal = causal
        s.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), 1))

    def forward(s, x):
        T = x.shape[1]
        h = s.tok(x)
        if s.pos is not None:
            h = h + s.pos(torch.arange(T))
        h = s.drop(h)
        for b in s.blocks:
            h = b(h, s.mask[:T, :T] if s.causal else None)
        return s.out(s.lnf(h))


class StdModel(nn.Module):
    """The paper's model from PyTorch's standard layers, as a user would
    write it: nn.TransformerEncoderLayer(norm_first=True, batch_first=True)
    with a causal mask, learned positions, a final LayerNorm and a linear
    readout.  act: "relu", or "gelu" (tanh approximation, as rmodel.h)."""

    def __init__(s, vocab, T, d, L, h, f, p, act="relu"):
        super().__init__()
        fn = F.relu if act == "relu" else (lambda t: F.gelu(t, approximate="tanh"))
        s.tok, s.pos = nn.Embedding(vocab, d), nn.Embedding(T, d)
        s.enc = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d, h, f, p, fn, batch_first=True,
                                       norm_first=True), L,
            enable_nested_tensor=False)
        s.lnf, s.out, s.drop = nn.LayerNorm(d), nn.Linear(d, vocab), nn.Dropout(p)
        s.register_buffer("mask", torch.triu(torch.full((T, T), float("-inf")), 1))

    def forward(s, x):
        T = x.shape[1]
        h = s.drop(s.tok(x) + s.pos(torch.arange(T)))
        return s.out(s.lnf(s.enc(h, mask=s.mask[:T, :T])))


def read_safetensors(path):
    """name -> float32 tensor, from a safetensors file (F32 only)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = torch.frombuffer(bytearray(data[a:b]),
                                  dtype=torch.float32).reshape(v["shape"])
    return out


def load_weights(m, t, cfg):
    """Copies rmodel.h tensors into m (the layouts of Model)."""
    H, D, Dh = cfg["n_heads"], cfg["d_model"], cfg["d_head"]
    cols = lambda w: w.permute(1, 0, 2).reshape(D, H * Dh)  # [H,D,Dh] -> D x HD
    with torch.no_grad():
        m.tok.weight.copy_(t["tok_emb"])
        if m.pos is not None:
            m.pos.weight.copy_(t["pos_emb"])
        for l, b in enumerate(m.blocks):
            g = lambda n: t[f"layers.{l}.{n}"]
            b.qkv.weight.copy_(torch.cat([cols(g("attn.w_q")), cols(g("attn.w_k")),
                                          cols(g("attn.w_v"))], 1).t())
            b.qkv.bias.copy_(torch.cat([g("attn.b_q").reshape(-1),
                                        g("attn.b_k").reshape(-1),
                                        g("attn.b_v").reshape(-1)]))
            b.o.weight.copy_(g("attn.w_o").reshape(H * Dh, D).t())
            b.o.bias.copy_(g("attn.b_o"))
            b.fc1.weight.copy_(g("mlp.w_in").t())
            b.fc1.bias.copy_(g("mlp.b_in"))
            b.fc2.weight.copy_(g("mlp.w_out").t())
            b.fc2.bias.copy_(g("mlp.b_out"))
            if cfg["layer_norm"]:
                for ln in ("ln1", "ln2"):
                    getattr(b, ln).weight.copy_(g(ln + ".weight"))
                    getattr(b, ln).bias.copy_(g(ln + ".bias"))
        n = m.out.weight.shape[0]
        m.out.weight.copy_(t["unembed"][:, :n].t())
        m.out.bias.copy_(t["unembed_b"][:n])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--micro", type=int, default=64)
    ap.add_argument("--seq", type=int, default=69)
    ap.add_argument("--answer", type=int, default=5)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--vocab", type=int, default=109)
    ap.add_argument("--arch", help="STEM.json: that model instead of the paper's")
    ap.add_argument("--weights", action="store_true",
                    help="with --arch: load STEM.safetensors")
    ap.add_argument("--n-out", type=int, help="with --arch: readout width")
    ap.add_argument("--dropout", type=float,
                    help="default 0.1 (paper's model), 0 with --arch")
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--std", action="store_true",
                    help="paper's model from nn.TransformerEncoderLayer")
    ap.add_argument("--act", choices=("relu", "gelu"), default="relu",
                    help="paper's model: MLP activation (GELU: tanh form)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.arch:
        with open(a.arch) as f:
            cfg = json.load(f)["config"]
        p = 0.0 if a.dropout is None else a.dropout
        m = Model(0, 0, 0, 0, 0, 0, p, arch=cfg, n_out=a.n_out)
        if a.weights:
            stem = a.arch[:-5] if a.arch.endswith(".json") else a.arch
            load_weights(m, read_safetensors(stem + ".safetensors"), cfg)
        vocab, n_out = cfg["vocab_size"], m.out.weight.shape[0]
        what = (f"--arch {a.arch} (d_model {cfg['d_model']}, {cfg['n_layers']} "
                f"layers, {cfg['n_heads']}x{cfg['d_head']} heads, d_mlp "
                f"{cfg['d_mlp']}, n_out {n_out}, "
                f"{sum(t.numel() for t in m.parameters())} parameters)")
    else:
        p = 0.1 if a.dropout is None else a.dropout
        if a.std:
            m = StdModel(a.vocab, a.seq, 200, 6, 8, 800, p, a.act)
        else:
            m = Model(a.vocab, a.seq, 200, 6, 8, 800, p,
                      arch={"vocab_size": a.vocab, "max_len": a.seq,
                            "d_model": 200, "n_layers": 6, "n_heads": 8,
                            "d_head": 25, "d_mlp": 800, "layer_norm": 1,
                            "gelu": a.act == "gelu", "causal": 1,
                            "pos_embedding": 1, "n_out": a.vocab})
        vocab, n_out = a.vocab, a.vocab
        what = ("paper's model, nn.TransformerEncoderLayer" if a.std
                else "paper's model, hand-written block") + f", {a.act}, dropout {p}"
    opt = torch.optim.AdamW(m.parameters(), lr=a.lr, weight_decay=0.01)
    x = torch.randint(1, min(vocab, n_out), (a.batch, a.seq + 1))
    if a.arch and cfg["bos_token"] >= 0:
        x[:, 0] = cfg["bos_token"]
    w = torch.zeros(a.batch, a.seq)
    w[:, -a.answer:] = 1

    def step():
        opt.zero_grad()
        for s in range(0, a.batch, a.micro):
            xb = x[s:s + a.micro]
            lg = m(xb[:, :-1])
            l = F.cross_entropy(lg.reshape(-1, n_out), xb[:, 1:].reshape(-1),
                                reduction="none")
            (l * w[s:s + a.micro].reshape(-1)).sum().div(w.sum()).backward()
        opt.step()

    step()  # warm-up
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    dt = time.perf_counter() - t0
    tok = a.batch * a.seq * a.steps
    print(f"torch {torch.__version__}: {a.threads} threads, batch {a.batch}, "
          f"seq {a.seq}: {dt / a.steps:.3f} s/step, {tok / dt:.0f} tokens/s")
    print(f"  model: {what}")


if __name__ == "__main__":
    main()
