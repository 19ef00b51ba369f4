#!/usr/bin/python3
"""gen_inputs.py -- the benchmark's inputs: COUNT lines of LENGTH symbols.

A third are random over the whole vocabulary, a third random '(' / ')'
strings, a third balanced parenthesis strings (so balanced_parens sees both
answers).  Deterministic (seeded).  usage: gen_inputs.py COUNT LENGTH SEED
"""
import random
import sys

count, length, seed = (int(a) for a in sys.argv[1:4])
rng = random.Random(seed)
VOCAB = ["(", ")", "a", "b", "c", "d", "e", "f"]


def balanced(n):
    # a random Dyck word of length n (n even): open while it can still close
    out, depth = [], 0
    for i in range(n):
        left = n - i
        if depth == 0 or (depth < left and rng.random() < 0.5):
            out.append("(")
            depth += 1
        else:
            out.append(")")
            depth -= 1
    return out


for k in range(count):
    if k % 3 == 0:
        toks = [rng.choice(VOCAB) for _ in range(length)]
    elif k % 3 == 1:
        toks = [rng.choice("()") for _ in range(length)]
    else:
        toks = balanced(length)
    print(" ".join(toks))
