"""paper_core.py -- the paper's RASP core functions in numpy, as printed.

The appendix "RASP core and library functions" of the path-star paper, for
the two numpy baselines (numpy_rasp.py, verify_numpy.py): select as a double
Python loop over positions, sel_width and aggr_mean as matrix products,
seq_map and where as list comprehensions.  Two typos are fixed: `full` has
one closing parenthesis too many and `select` lacks its `return A`.
`aggregate` is not in the paper: it is aggr_mean without the truncation
(rasp's exact mean), used by the classic examples.
"""
import numpy as np


def full(x, const):
    return np.full_like(x, const)


def indices(x):
    return np.arange(len(x), dtype=int)


def is_true(x, default=0):
    return x > default


def equals(x, y):
    return x == y


def not_equals(x, y):  # rasp builtin used by Listing 4
    return x != y


def lt(x, y):
    return x < y


def leq(x, y):
    return x <= y


def always(x, y):
    return True


def select(k, q, pred, causal=True):
    s = len(k)
    A = np.zeros((s, s), dtype=bool)
    for qi in range(s):
        # k index <= q index if causal
        for kj in (range(qi + 1) if causal else range(s)):
            A[qi, kj] = pred(k[kj], q[qi])
    return A


def sel_width(A):
    o = np.ones(len(A))
    return np.dot(A, o).astype(int)


def aggr_mean(A, v, default=0):
    out = np.dot(A, v)
    norm = sel_width(A)
    o = np.full_like(v, default, dtype=float)
    out = np.divide(out, norm, out=o, where=(norm != 0))
    return out.astype(int)


def aggregate(A, v, default=0):
    # aggr_mean without the astype(int)
    out = np.dot(A, v)
    norm = sel_width(A)
    o = np.full_like(v, default, dtype=float)
    return np.divide(out, norm, out=o, where=(norm != 0))


def kqv(k, q, v, pred, default=0, causal=True):
    A = select(k, q, pred, causal)
    return aggr_mean(A, v, default=default)


def seq_map(x, y, func):
    l = [func(xi, yi) for xi, yi in zip(x, y)]
    return np.array(l).astype(int)


def tok_map(x, func):
    return np.array([func(xi) for xi in x])


def where(condition, x_if, y_else):
    x_m = seq_map(x_if, condition, lambda x, m: x if m else 0)
    y_m = seq_map(y_else, condition, lambda y, m: y if not m else 0)
    return seq_map(x_m, y_m, lambda x, y: x if y == 0 else y)
