#!/usr/bin/env python3
"""listing4_model.py -- why the faithful Listing 4 fails exactly where it does.

A model of Listing 4's pointer jumping on one arm, without tokens: edge i
(i = 0 .. L-1, L = M - 1) joins arm nodes i and i+1 and carries two
pointers, k1 (initially i) and k2 (initially i+1).  One doubling step, as
printed:

  k1: "if this k1 == other k2, other k1 -> this k1"  (k2 as it is now)
  k2: "if this k2 == other k1, other k2 -> this k2"  (k1 just updated)

then, after ceil(log2 L) steps, the extra step ("if j = k1, then k2 -> j")
and the check: some edge must hold both l_t (node 1) and t (node L) among
its u, j, k1, k2.  A lookup that matches no edge leaves the pointer alone
(the program's where(is_true(new), new, old)).  A lookup that matches
several edges is where the real program averages their positions (kqv is
aggr_mean) and lands on an edge that depends on how the edges are written;
the model leaves the pointer alone there too, which is what the program
does on most edge orders.

Because each half-step keys on the other pointer's *moved* value, k1 moves
back by 1, 5, 21, ... and k2 forward by 2, 8, 32, ... ((4^k - 1)/3 and
2 * 4^(k-1)) instead of doubling, and a jump past the end of the arm finds
no edge and stays put.  Whether k2 of the first edge ends exactly on t
then depends on L in the irregular way printed below.

Usage: python3 bench/listing4_model.py [LMAX]   (default 40)
Prints the L = M - 1 for which the model fails.  `rasp verify
programs/listing4_log.rasp --M 3..41 --D 2,3 --V 200` measures the same set
(README, "Listing 4").
"""
import math
import sys


def passes(L):
    k1 = list(range(L))
    k2 = [i + 1 for i in range(L)]
    for _ in range(math.ceil(math.log2(L))):
        new = k1[:]
        for i in range(L):
            m = [j for j in range(L) if k2[j] == k1[i]]
            if len(m) == 1:
                new[i] = k1[m[0]]
        k1 = new
        new = k2[:]
        for i in range(L):
            m = [j for j in range(L) if k1[j] == k2[i]]
            if len(m) == 1:
                new[i] = k2[m[0]]
        k2 = new
    jn = [i + 1 for i in range(L)]
    for i in range(L):
        m = [k for k in range(L) if k1[k] == jn[i]]
        if len(m) == 1:
            jn[i] = k2[m[0]]
    return any(1 in (i, jn[i], k1[i], k2[i]) and L in (i, jn[i], k1[i], k2[i])
               for i in range(L))


def main():
    lmax = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    failing = [L for L in range(2, lmax + 1) if not passes(L)]
    print("M - 1 failing:", " ".join(map(str, failing)))


if __name__ == "__main__":
    main()
