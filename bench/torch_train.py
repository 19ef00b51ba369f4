#!/usr/bin/python3
"""Training throughput of the rasp-train architecture in PyTorch (CPU).

Same model as rasp-train's default (rmodel.h): pre-LN decoder, learned
positions, ReLU MLP, dropout 0.1 on embeddings and sublayer outputs,
attention dropout 0, AdamW (lr 5e-4, wd 0.01), loss on the answer tokens.
Random tokens stand in for path-star sequences (throughput does not depend
on the values).  Run with the Debian python (/usr/bin/python3) and torch.

    /usr/bin/python3 bench/torch_train.py --threads 2 --batch 64 --steps 5
"""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(s, d, h, f, p):
        super().__init__()
        s.ln1, s.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        s.qkv, s.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        s.fc1, s.fc2 = nn.Linear(d, f), nn.Linear(f, d)
        s.h, s.drop = h, nn.Dropout(p)

    def forward(s, x, mask):
        B, T, D = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(D, dim=2)
        sh = lambda t: t.view(B, T, s.h, D // s.h).transpose(1, 2)
        q, k, v = sh(q), sh(k), sh(v)
        a = (q @ k.transpose(-1, -2)) / math.sqrt(D // s.h)
        a = a.masked_fill(mask, float("-inf")).softmax(-1)
        y = (a @ v).transpose(1, 2).reshape(B, T, D)
        x = x + s.drop(s.o(y))
        return x + s.drop(s.fc2(F.relu(s.fc1(s.ln2(x)))))


class Model(nn.Module):
    def __init__(s, vocab, T, d, L, h, f, p):
        super().__init__()
        s.tok, s.pos = nn.Embedding(vocab, d), nn.Embedding(T, d)
        s.blocks = nn.ModuleList([Block(d, h, f, p) for _ in range(L)])
        s.lnf, s.out, s.drop = nn.LayerNorm(d), nn.Linear(d, vocab), nn.Dropout(p)
        s.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), 1))

    def forward(s, x):
        T = x.shape[1]
        h = s.drop(s.tok(x) + s.pos(torch.arange(T)))
        for b in s.blocks:
            h = b(h, s.mask[:T, :T])
        return s.out(s.lnf(h))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--micro", type=int, default=64)
    ap.add_argument("--seq", type=int, default=69)
    ap.add_argument("--answer", type=int, default=5)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--vocab", type=int, default=109)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    m = Model(a.vocab, a.seq, 200, 6, 8, 800, 0.1)
    opt = torch.optim.AdamW(m.parameters(), lr=5e-4, weight_decay=0.01)
    x = torch.randint(1, a.vocab, (a.batch, a.seq + 1))
    w = torch.zeros(a.batch, a.seq)
    w[:, -a.answer:] = 1

    def step():
        opt.zero_grad()
        for s in range(0, a.batch, a.micro):
            xb = x[s:s + a.micro]
            lg = m(xb[:, :-1])
            l = F.cross_entropy(lg.reshape(-1, a.vocab), xb[:, 1:].reshape(-1),
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


if __name__ == "__main__":
    main()
