#!/usr/bin/python3
"""numpy_rasp.py -- the example programs on the paper's numpy primitives.

A straightforward Python/numpy implementation of RASP exactly as the paper
prints it (appendix "RASP core and library functions": select as a double
loop over positions, sel_width and aggr_mean as matrix products), running
the same programs as examples/*.rasp on the same inputs, as the baseline
for bench/interp_bench.sh.  Not a test.

usage: /usr/bin/python3 bench/numpy_rasp.py INPUTS OUTPUTS

Writes the outputs in interp_bench's format ("# program" and one line per
input) and prints the time per input for each program.

The paper's library has only the truncating aggr_mean.  `aggregate` below
is the same matrix product without the truncation (rasp's exact mean); on
these programs its results are either a single selected value or only
compared with 0, which floating point gets exactly right.
"""
import sys
import time

import numpy as np

VOCAB = ["(", ")", "a", "b", "c", "d", "e", "f"]   # ids 1..8, as interp_bench
reverse_d = {i + 1: s for i, s in enumerate(VOCAB)}

# ---- the paper's primitives, as printed: bench/paper_core.py

from paper_core import (aggr_mean, aggregate, always, equals, full,  # noqa: E402,F401
                        indices, leq, lt, sel_width, select, tok_map)


def make_length(x):
    return sel_width(select(x, x, always, causal=False))

# ---- the programs (examples/*.rasp)


def reverse(seq):
    length = make_length(seq)
    idx = indices(seq)
    flip = select(idx, length - idx - 1, equals, causal=False)
    return aggregate(flip, seq).astype(int)


def histogram(seq):
    return sel_width(select(seq, seq, equals, causal=False))


def sort(seq):
    idx = indices(seq)
    keys = seq + idx / len(seq)
    target_pos = sel_width(select(keys, keys, lt, causal=False))
    sel_new = select(target_pos, idx, equals, causal=False)
    return aggregate(sel_new, seq).astype(int)


def double_histogram(seq):
    idx = indices(seq)
    same_tok = select(seq, seq, equals, causal=False)
    hist = sel_width(same_tok)
    earlier_same = same_tok & select(idx, idx, lt, causal=False)
    first = sel_width(earlier_same) == 0
    same_count = select(hist, hist, equals, causal=False)
    is_first = select(first, full(first, True), equals, causal=False)
    return sel_width(same_count & is_first)


def balanced_parens(seq):
    length = make_length(seq)
    opens = tok_map(seq, lambda t: 1 if reverse_d[t] == "(" else 0)
    closes = tok_map(seq, lambda t: 1 if reverse_d[t] == ")" else 0)
    idx = indices(seq)
    balance = aggregate(select(idx, idx, leq, causal=True), opens - closes)
    negative = np.where(balance < 0, 1, 0)
    has_neg = aggregate(select(idx, idx, always, causal=False), negative) > 0
    last = select(idx, length - 1, equals, causal=False)
    last_zero = aggregate(last, np.where(balance == 0, 1, 0)) == 1
    return last_zero & ~has_neg


PROGRAMS = [("reverse.rasp", reverse), ("histogram.rasp", histogram),
            ("sort.rasp", sort), ("double_histogram.rasp", double_histogram),
            ("balanced_parens.rasp", balanced_parens)]


def fmt(v):
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    return str(int(v))


def main():
    ids = {s: i + 1 for i, s in enumerate(VOCAB)}
    with open(sys.argv[1]) as f:
        inputs = [np.array([ids[s] for s in line.split()], dtype=int)
                  for line in f if line.strip()]
    names = [a for a in sys.argv[3:]] or [p for p, _ in PROGRAMS]
    print("%d inputs of length %d" % (len(inputs), len(inputs[0])))
    print("%-22s %14s" % ("program", "us/input"))
    with open(sys.argv[2], "w") as out:
        for name, fn in PROGRAMS:
            if name not in names:
                continue
            out.write("# %s\n" % name)
            lines = []
            t0 = time.perf_counter()
            for x in inputs:
                lines.append(fn(x))
            t = time.perf_counter() - t0
            for r in lines:
                out.write(" ".join(fmt(v) for v in r) + "\n")
            print("%-22s %14.2f" % (name, t * 1e6 / len(inputs)))


if __name__ == "__main__":
    main()
