#!/usr/bin/python3
"""verify_numpy.py -- `rasp verify` against the paper's numpy code.

A straightforward Python/numpy implementation of the path-star programs in
programs/listing*.rasp, on the paper's RASP primitives exactly as printed
(appendix "RASP core and library functions": `select` a double Python loop
over positions, `sel_width` and `aggr_mean` matrix products with
`astype(int)`, `seq_map` and `where` as list comprehensions), with the
helpers of stdlib/pathstar.rasp and stdlib/core.rasp and the same check()
criteria, run on the same graphs as `rasp verify`.  Not a test.

For each program and D (M fixed) it
  1. writes the program's inputs with `rasp gen` (the program's task
     settings, sample indices 0..N-1 of --seed): the same samples the
     verifier draws (raspT_sample(opts, seed, index));
  2. runs the numpy version on them, timing program + check per graph;
  3. gets rasp's verdict for every one of those graphs (rasp verify
     --graphs k for k = 1..N: passed(k) - passed(k-1)) and fails loudly
     unless every verdict agrees;
  4. compares the numpy output of graph 0 with `rasp run` on the same
     tokens and layout globals (token for token);
  5. times `rasp verify --jobs 1` at two graph counts and takes graphs/s
     from the slope, so tracing and start-up (fixed per run) drop out.
Times are CPU time (the numpy loop's process time; the rasp process's
user + system time), so other load on the machine does not skew them; the
wall-clock figures go to the --json file too.

usage: /usr/bin/python3 bench/verify_numpy.py --rasp BUILD/rasp/rasp
           [--D 2..5] [--M 5] [--V 100] [--seed 1] [--graphs 30]
           [--rasp-graphs 2000,400000] [--json FILE] [PROGRAM ...]
(PROGRAM: names under programs/ without .rasp; default all eight.)
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)

# ---------------------------------------------------------------------------
# The paper's core functions, as printed: bench/paper_core.py

from paper_core import (aggr_mean, equals, full, indices, is_true,  # noqa: E402,F401
                        kqv, not_equals, sel_width, select, seq_map, where)


# ---------------------------------------------------------------------------
# The layout globals (set per (D, M), as the verifier sets them) and the
# vocabulary: node "v" is id v (1..V), then | / = BOS EOS s t (V+1..V+7),
# then the program's extra symbols in order, duplicates dropped.

arm_len = degree = num_symbols = g_start = edge_width = markers = 0
d = {}
reverse_d = {}


def set_layout(D, M, V, nmarkers, gstart, extra, extra_first=False):
    global arm_len, degree, num_symbols, g_start, edge_width, markers, d, reverse_d
    arm_len, degree, num_symbols, markers = M, D, V, nmarkers
    g_start = gstart
    edge_width = 2 + nmarkers
    syms = [str(v) for v in range(1, V + 1)] + ["|", "/", "=", "BOS", "EOS", "s", "t"]
    extras = []
    for s in extra:
        if s not in syms and s not in extras:
            extras.append(s)
    # task['symbols_first']: the extra symbols take the lowest ids
    syms = extras + syms if extra_first else syms + extras
    d = {s: i + 1 for i, s in enumerate(syms)}
    reverse_d = {i + 1: s for i, s in enumerate(syms)}
    return syms


# ---------------------------------------------------------------------------
# stdlib/pathstar.rasp


def specification_mask(seq):
    idx = indices(seq)
    g_end = g_start + degree * (arm_len - 1) * edge_width
    in_g = (idx >= g_start) & (idx < g_end)
    return where(in_g, seq, full(seq, d['j']))


def edge_slot_nodes(seq, masked_x, slot):
    idx = indices(seq)
    return where((idx - g_start) % edge_width == slot, masked_x,
                 full(masked_x, d['j']))


def pathstar_inputs(seq):
    idx = indices(seq)
    masked_x = specification_mask(seq)
    i_nodes = edge_slot_nodes(seq, masked_x, 0)
    j_nodes = edge_slot_nodes(seq, masked_x, 1)
    return idx, masked_x, g_start, i_nodes, j_nodes


def get_cur_marker(step, before=False):
    if before:
        return 'b' + str(step)
    return 'a' + str(step)


def pathstar_symbols():
    return ['j'] + ['a' + str(i) for i in range(arm_len)] + \
           ['b' + str(i) for i in range(arm_len)]


def edges_of(output, width):
    g_end = g_start + degree * (arm_len - 1) * edge_width
    return [tuple(output[i:i + width]) for i in range(g_start, g_end, edge_width)]


def some_edge_has(output, width, first, second, a, b):
    for edge in edges_of(output, width):
        if edge[first] == a and edge[second] == b:
            return True
    return False


# ---------------------------------------------------------------------------
# Listing 1 (programs/listing1_back_target.rasp)


def non_causal_propagate_back_target(seq):
    idx, masked_x, g_start, i_nodes, j_nodes = pathstar_inputs(seq)

    write_in_mask = full(seq, False)
    write_in_mask[0] = True

    target_idx = kqv(j_nodes, full(j_nodes, d['t']), idx, equals,
                     default=-99, causal=False)
    cur_state = where(write_in_mask, target_idx, seq)

    for step in range(0, arm_len - 2):
        cur_idx = where(write_in_mask, cur_state, full(cur_state, -99))
        cur_state = where(cur_idx[0] == idx,
                          full(cur_state, d[get_cur_marker(step)]), cur_state)
        cur_idx = where(write_in_mask, cur_state, full(cur_state, -100)) - 1
        cur_state = where(cur_idx[0] == idx,
                          full(cur_state, d[get_cur_marker(step, True)]), cur_state)
        connecting_token = kqv(idx, cur_idx, i_nodes, equals,
                               default=-99, causal=False)
        cur_state = where(write_in_mask, connecting_token, cur_state)
        if step < arm_len - 3:
            cur_idx = kqv(j_nodes, connecting_token, idx, equals,
                          default=-99, causal=False)
            cur_state = where(write_in_mask, cur_idx, cur_state)

    return cur_state


def main_listing1(seq):
    return non_causal_propagate_back_target(seq)


def check_listing1(output, lead, target):
    return output[0] == lead


# ---------------------------------------------------------------------------
# Listing 2 (programs/listing2_backward_targets.rasp)


def non_causal_propagate_backward_targets(seq, idx, masked_x,
                                          g_start, i_nodes, j_nodes):
    counts = sel_width(select(masked_x, masked_x, equals, causal=False))
    is_final = equals(counts, full(counts, 1))

    final_nodes = where(is_final, j_nodes, full(idx, -99))
    final_idx = where(is_final, idx, full(idx, -99))
    final_idx_slash = where(is_final, idx + 1, full(idx, -99))
    is_final_slash = kqv(idx + 1, idx, is_final, equals,
                         default=False, causal=False)

    cur_state = seq
    connecting_nodes = kqv(final_idx_slash, idx, final_nodes, equals,
                           default=-99, causal=False)
    for step in range(0, arm_len - 2):
        connecting_idxs = kqv(j_nodes, connecting_nodes, idx, equals,
                              default=-99, causal=False)
        cur_state = where(is_final_slash, connecting_idxs, seq)
        connecting_nodes = kqv(idx, connecting_idxs - 1, i_nodes, equals,
                               default=-99, causal=False)
        cur_state = where(is_final_slash, connecting_nodes, seq)

    return cur_state


def main_listing2(seq):
    idx, masked_x, g_start, i_nodes, j_nodes = pathstar_inputs(seq)
    return non_causal_propagate_backward_targets(seq, idx, masked_x, g_start,
                                                 i_nodes, j_nodes)


def check_listing2(output, lead, target):
    return some_edge_has(output, 3, 1, 2, target, lead)


# ---------------------------------------------------------------------------
# Listing 3 (programs/listing3_forward_start.rasp)


def non_causal_propagate_forward_start(seq, idx, masked_x,
                                       g_start, i_nodes, j_nodes):
    is_start = equals(i_nodes, full(j_nodes, d['s']))
    start_idx = where(is_start, idx, full(idx, -99))
    cur_state = where(is_start, start_idx, seq)

    leading_nodes = kqv(idx, start_idx + 1, j_nodes, equals,
                        default=-99, causal=False)
    cur_state = where(is_start, leading_nodes, seq)

    connecting_nodes = leading_nodes
    for step in range(0, arm_len - 2):
        connecting_idxs = kqv(i_nodes, connecting_nodes, idx, equals,
                              default=-99, causal=False)
        cur_state = where(is_start, connecting_idxs, seq)
        connecting_nodes = kqv(idx, connecting_idxs + 1, j_nodes, equals,
                               default=-99, causal=False)
        cur_state = where(is_start, connecting_nodes, seq)

    return cur_state


def main_listing3(seq):
    idx, masked_x, g_start, i_nodes, j_nodes = pathstar_inputs(seq)
    return non_causal_propagate_forward_start(seq, idx, masked_x, g_start,
                                              i_nodes, j_nodes)


def check_listing3(output, lead, target):
    return some_edge_has(output, 2, 0, 1, target, lead)


# ---------------------------------------------------------------------------
# Listing 4, as printed and corrected (programs/listing4_log*.rasp).  The
# printed one runs, as its .rasp file declares, with 'j' (and the other
# extra symbols) first in the vocabulary, as its author assumed.
SYMBOLS_FIRST = {"listing4_log"}



def non_causal_propagate_log(seq, idx, masked_x,
                             g_start, i_nodes, j_nodes, fixed=False):
    i_nodes_pos = where(not_equals(i_nodes, full(idx, d['j'])),
                        idx, full(idx, -99))
    if fixed:  # FIX 1
        j_nodes_pos = where(not_equals(j_nodes, full(idx, d['j'])),
                            idx, full(idx, -99))
    else:
        j_nodes_pos = where(is_true(j_nodes, full(idx, d['j'])),
                            idx, full(idx, -99))
    k1_nodes_pos = kqv(idx, i_nodes_pos + 2, idx, equals,
                       default=-89, causal=False)
    k2_nodes_pos = kqv(idx, j_nodes_pos + 2, idx, equals,
                       default=-99, causal=False)
    k1_nodes = kqv(k1_nodes_pos, idx, i_nodes, equals,
                   default=-89, causal=False)
    k2_nodes = kqv(k2_nodes_pos, idx, j_nodes, equals,
                   default=-99, causal=False)

    k1_orig = k1_nodes
    k2_orig = k2_nodes
    for step in range(0, int(np.ceil(np.log2(arm_len - 1)))):
        connecting_k1_pos = kqv(k2_orig if fixed else k2_nodes, k1_nodes, idx - 1,
                                equals, default=-89, causal=False)
        new_k1_nodes = kqv(idx, connecting_k1_pos, k1_nodes, equals,
                           default=-89, causal=False)
        k1_nodes = where(is_true(new_k1_nodes), new_k1_nodes, k1_nodes)

        connecting_k2_pos = kqv(k1_orig if fixed else k1_nodes, k2_nodes, idx + 1,
                                equals, default=-99, causal=False)
        new_k2_nodes = kqv(idx, connecting_k2_pos, k2_nodes, equals,
                           default=-99, causal=False)
        k2_nodes = where(is_true(new_k2_nodes), new_k2_nodes, k2_nodes)

        cur_state = where(is_true(k1_nodes), k1_nodes, seq)
        cur_state = where(is_true(k2_nodes), k2_nodes, cur_state)

    conn = kqv(k1_nodes, j_nodes, idx + 1, equals,
               default=-99, causal=False)
    new_j_nodes = kqv(idx, conn, k2_nodes, equals,
                      default=-99, causal=False)
    j_nodes = where(is_true(new_j_nodes), new_j_nodes, j_nodes)
    cur_state = where(is_true(j_nodes_pos), j_nodes, cur_state)

    return cur_state


def main_listing4(seq):
    idx, masked_x, g_start, i_nodes, j_nodes = pathstar_inputs(seq)
    return non_causal_propagate_log(seq, idx, masked_x, g_start, i_nodes, j_nodes)


def main_listing4_fixed(seq):
    idx, masked_x, g_start, i_nodes, j_nodes = pathstar_inputs(seq)
    return non_causal_propagate_log(seq, idx, masked_x, g_start, i_nodes, j_nodes,
                                    fixed=True)


def check_listing4(output, lead, target):
    for edge in edges_of(output, 4):
        if target in edge and lead in edge:
            return True
    return False


# ---------------------------------------------------------------------------
# Listing 5 (programs/listing5_arms_constant.rasp)


def non_causal_arms_propagate_backward_targets(seq, idx,
                                               masked_x, g_start,
                                               i_nodes, j_nodes):
    counts = sel_width(select(masked_x, masked_x, equals, causal=False))
    is_final = equals(counts, full(counts, 1))

    final_nodes = where(is_final, j_nodes, full(idx, -99))
    final_idx = where(is_final, idx, full(idx, -99))
    final_idx_slash = where(is_final, idx + 1, full(idx, -99))
    is_final_slash = kqv(idx + 1, idx, is_final, equals,
                         default=False, causal=False)

    leading_offset = (arm_len - 3) * 3 + 1
    leading_idx = final_idx - leading_offset
    leading_nodes = kqv(idx, leading_idx, i_nodes, equals,
                        default=-99, causal=False)
    leading_nodes = kqv(final_idx_slash, idx, leading_nodes, equals,
                        default=-99, causal=False)
    cur_state = where(is_final_slash, leading_nodes, seq)

    return cur_state


def main_listing5(seq):
    idx, masked_x, g_start, i_nodes, j_nodes = pathstar_inputs(seq)
    return non_causal_arms_propagate_backward_targets(seq, idx, masked_x, g_start,
                                                      i_nodes, j_nodes)


# ---------------------------------------------------------------------------
# Listing 6, as printed and corrected (programs/listing6_causal*.rasp)


def causal_propagate(seq, idx, masked_x, g_start, i_nodes, j_nodes, fixed=False):
    is_start = equals(i_nodes, full(j_nodes, d['s']))
    start_idx = where(is_start, idx, full(idx, -99))
    leading_idx = kqv(start_idx + 2, idx, idx + 1, equals,
                      default=-99, causal=True)
    leading_nodes = kqv(idx, leading_idx, j_nodes, equals,
                        default=-99, causal=True)

    cur_state = where(is_true(leading_nodes), leading_nodes, seq)

    cur_j_idx = kqv(start_idx + 1, idx, idx + 1, equals,
                    default=-99, causal=True)
    cur_k_nodes = leading_nodes
    cur_j_nodes = where(is_true(cur_j_idx), j_nodes, full(j_nodes, -99))

    for step in range(0, arm_len - 1):
        # rule 1
        is_before = sel_width(select(i_nodes, cur_j_nodes,
                                     equals, causal=True))
        connecting_i_idx = kqv(i_nodes, cur_j_nodes, idx,
                               equals, default=-99, causal=True)
        connecting_i_node = kqv(idx - 1, connecting_i_idx, j_nodes, equals,
                                default=-99, causal=True)
        cur_j_nodes = where(is_before, connecting_i_node, cur_j_nodes)
        cur_state = where(is_before, connecting_i_node, cur_state)

        # rule 2
        is_after = sel_width(select(cur_j_nodes, i_nodes,
                                    equals, causal=True))
        connecting_i_idx = kqv(cur_j_nodes, i_nodes, idx, equals,
                               default=-99, causal=True)
        connecting_k_idx = kqv(idx + 2, idx, connecting_i_idx, equals,
                               default=-99, causal=True)
        connecting_k_node = kqv(idx, connecting_k_idx + 1, cur_k_nodes, equals,
                                default=-99, causal=True)
        new_after = is_true(connecting_k_node)
        cur_k_nodes = where(new_after, connecting_k_node, cur_k_nodes)

        cur_j_idx_at_i = where(is_after, idx + 1, full(idx, -99))
        cur_j_idx = kqv(cur_j_idx_at_i, idx, idx + 1, equals,
                        default=-99, causal=True)
        new_cur_j_nodes = where(is_true(cur_j_idx), j_nodes, full(j_nodes, -99))
        if fixed:  # FIX
            start_here = is_true(new_cur_j_nodes) & ~is_true(cur_j_nodes)
            cur_j_nodes = where(start_here, new_cur_j_nodes, cur_j_nodes)
        else:
            cur_j_nodes = where(is_true(new_cur_j_nodes), new_cur_j_nodes, cur_j_nodes)
        cur_state = where(new_after, cur_k_nodes, cur_state)

    return cur_state


def main_listing6(seq):
    idx, masked_x, g_start, i_nodes, j_nodes = pathstar_inputs(seq)
    return causal_propagate(seq, idx, masked_x, g_start, i_nodes, j_nodes)


def main_listing6_fixed(seq):
    idx, masked_x, g_start, i_nodes, j_nodes = pathstar_inputs(seq)
    return causal_propagate(seq, idx, masked_x, g_start, i_nodes, j_nodes, fixed=True)


# ---------------------------------------------------------------------------
# The programs and their task settings (the `task` dicts of the .rasp files;
# all have q='start', st_names=True, bos=eos=False, answer='none').

PROGRAMS = {
    "listing1_back_target": ("edge", 1, main_listing1, check_listing1),
    "listing2_backward_targets": ("edge", 1, main_listing2, check_listing2),
    "listing3_forward_start": ("edge", 1, main_listing3, check_listing3),
    "listing4_log": ("edge", 2, main_listing4, check_listing4),
    "listing4_log_fixed": ("edge", 2, main_listing4_fixed, check_listing4),
    "listing5_arms_constant": ("arm", 1, main_listing5, check_listing2),
    "listing6_causal": ("edge", 1, main_listing6, check_listing2),
    "listing6_causal_fixed": ("edge", 1, main_listing6_fixed, check_listing2),
}


def gen_samples(rasp, order, nmarkers, D, M, V, seed, n):
    cmd = [rasp, "gen", "--D", str(D), "--M", str(M), "--V", str(V), "--seed", str(seed),
           "-n", str(n), "--order", order, "--q", "start", "--answer", "none",
           "--no-bos", "--no-eos", "--markers", str(nmarkers), "--st-names"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def symbolic(output):
    # check() sees vocabulary ids as their symbols, other values as they are
    n = len(reverse_d)
    return [reverse_d[int(v)] if 1 <= v <= n else int(v) for v in output]


def rasp_verify(rasp, name, D, M, V, seed, graphs):
    path = os.path.join(TOP, "programs", name + ".rasp")
    cmd = [rasp, "verify", path, "--D", str(D), "--M", str(M), "--V", str(V),
           "--seed", str(seed), "--graphs", str(graphs), "--jobs", "1", "--json",
           "--no-shrink", "--stdlib", os.path.join(TOP, "stdlib")]
    u0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, capture_output=True, text=True)
    u1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if not lines:
        sys.exit("verify_numpy.py: rasp verify gave no result: %s\n%s" % (cmd, r.stderr))
    res = json.loads(lines[0])
    # CPU time of the whole process (start-up and tracing included; they
    # cancel in the slope), robust against other load on the machine
    res["cpu"] = (u1.ru_utime - u0.ru_utime) + (u1.ru_stime - u0.ru_stime)
    return res


def rasp_run_output(rasp, name, syms, sample, D, M, V, nmarkers, tmpdir):
    """`rasp run` on one sample with the verifier's layout globals."""
    vocab = os.path.join(tmpdir, "vocab.txt")
    with open(vocab, "w") as f:
        f.write("\n".join(syms) + "\n")
    n = len(sample["tokens"])
    sets = {"arm_len": M, "degree": D, "num_symbols": V, "seq_len": n, "markers": nmarkers,
            "edge_width": 2 + nmarkers, "q_before_g": "True", "g_start": sample["g_start"],
            "q_start": sample["q_start"], "ans_start": sample.get("ans_start", 0)}
    cmd = [rasp, "run", os.path.join(TOP, "programs", name + ".rasp"), "--input",
           " ".join(sample["tokens"]), "--vocab", vocab, "--symbols", "--stdlib", os.path.join(TOP, "stdlib")]
    for k, v in sets.items():
        cmd += ["--set", "%s=%s" % (k, v)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return r.stdout.split(), None


def parse_range(text):
    if ".." in text:
        a, b = text.split("..")
        return list(range(int(a), int(b) + 1))
    return [int(x) for x in text.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rasp", required=True)
    ap.add_argument("--D", default="2..5")
    ap.add_argument("--M", type=int, default=5)
    ap.add_argument("--V", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--graphs", type=int, default=30, help="graphs for numpy")
    ap.add_argument("--rasp-graphs", default="2000,400000",
                    help="two graph counts for rasp verify's slope")
    ap.add_argument("--repeat", type=int, default=3,
                    help="time each side this many times and keep the smallest")
    ap.add_argument("--json", help="also write one JSON object per (program, D) here")
    ap.add_argument("programs", nargs="*")
    a = ap.parse_args()
    names = a.programs or list(PROGRAMS)
    n1, n2 = [int(x) for x in a.rasp_graphs.split(",")]
    tmpdir = os.path.join(HERE, "out")
    os.makedirs(tmpdir, exist_ok=True)
    jout = open(a.json, "w") if a.json else None
    M, V, N = a.M, a.V, a.graphs
    bad = 0
    print("%-26s %2s %2s %3s  %-13s %-13s %10s %12s %12s %8s" %
          ("program", "D", "M", "n", "numpy pass", "rasp pass", "numpy g/s",
           "rasp g/s", "rasp g/s", "ratio"))
    print("%-26s %2s %2s %3s  %-13s %-13s %10s %12s %12s %8s" %
          ("", "", "", "", "(N graphs)", "(same N)", "", "(slope)", "(%d, whole" % n2,
           "(slope)"))
    print("%-26s %2s %2s %3s  %-13s %-13s %10s %12s %12s %8s" %
          ("", "", "", "", "", "", "", "", "process)", ""))
    for name in names:
        order, nmarkers, prog_main, prog_check = PROGRAMS[name]
        for D in parse_range(a.D):
            samples = gen_samples(a.rasp, order, nmarkers, D, M, V, a.seed, N)
            gs = samples[0]["g_start"]
            if any(s["g_start"] != gs for s in samples):
                sys.exit("verify_numpy.py: g_start differs between samples")
            set_layout(D, M, V, nmarkers, gs, [])
            syms = set_layout(D, M, V, nmarkers, gs, pathstar_symbols(), name in SYMBOLS_FIRST)
            seqs = [np.array([d[t] for t in s["tokens"]], dtype=int) for s in samples]
            leads = [str(s["lead"]) for s in samples]  # node v is the symbol "v"
            target = 't'
            # numpy: program + check per graph, timed
            # (the smallest CPU time of --repeat runs: the machine is shared)
            np_cpu = np_secs = None
            for rep in range(max(a.repeat, 1)):
                verdicts = []
                outputs = []
                t0 = time.perf_counter()
                c0 = time.process_time()
                for seq, lead in zip(seqs, leads):
                    out = prog_main(seq)
                    verdicts.append(bool(prog_check(symbolic(out), lead, target)))
                    outputs.append(out)
                cpu = time.process_time() - c0
                secs = time.perf_counter() - t0
                np_cpu = cpu if np_cpu is None else min(np_cpu, cpu)
                np_secs = secs if np_secs is None else min(np_secs, secs)
            np_gps = N / np_cpu
            # rasp's verdict for each of the same N graphs: prefix counts
            rasp_verdicts = []
            prev = 0
            for k in range(1, N + 1):
                r = rasp_verify(a.rasp, name, D, M, V, a.seed, k)
                rasp_verdicts.append(r["passed"] - prev == 1)
                prev = r["passed"]
            if rasp_verdicts != verdicts:
                diff = [i for i in range(N) if rasp_verdicts[i] != verdicts[i]]
                print("VERDICTS DIFFER for %s D=%d: graphs %s" % (name, D, diff[:20]))
                bad = 1
            # graph 0's output, token for token, against `rasp run`
            ro, rerr = rasp_run_output(a.rasp, name, syms, samples[0], D, M, V, nmarkers,
                                       tmpdir)
            mine = [str(x) for x in symbolic(outputs[0])]
            if ro is None:
                print("  (rasp run failed on graph 0: %s)" % rerr)
                bad = 1
            elif ro != mine:
                print("OUTPUTS DIFFER for %s D=%d graph 0:\n  rasp:  %s\n  numpy: %s" %
                      (name, D, " ".join(ro), " ".join(mine)))
                bad = 1
            # rasp verify speed: slope between two graph counts
            r1 = r2 = None
            for rep in range(max(a.repeat, 1)):
                x1 = rasp_verify(a.rasp, name, D, M, V, a.seed, n1)
                x2 = rasp_verify(a.rasp, name, D, M, V, a.seed, n2)
                r1 = x1 if r1 is None or x1["cpu"] < r1["cpu"] else r1
                r2 = x2 if r2 is None or x2["cpu"] < r2["cpu"] else r2
            slope = (n2 - n1) / max(r2["cpu"] - r1["cpu"], 1e-9)
            whole = n2 / max(r2["cpu"], 1e-9)
            wall_slope = (n2 - n1) / max(r2["seconds"] - r1["seconds"], 1e-9)
            print("%-26s %2d %2d %3d  %-13s %-13s %10.1f %12.0f %12.0f %7.0fx" %
                  (name, D, M, len(seqs[0]), "%d/%d" % (sum(verdicts), N),
                   "%d/%d" % (sum(rasp_verdicts), N), np_gps, slope, whole, slope / np_gps))
            print("%-26s %2s %2s %3s  %-13s %-13s" %
                  ("", "", "", "", "", "%d/%d, %d/%d" % (r1["passed"], n1, r2["passed"], n2)))
            sys.stdout.flush()
            if jout:
                jout.write(json.dumps({
                    "program": name, "D": D, "M": M, "n": len(seqs[0]), "numpy_graphs": N,
                    "numpy_passed": sum(verdicts), "rasp_passed_same": sum(rasp_verdicts),
                    "verdicts_agree": rasp_verdicts == verdicts,
                    "graph0_output_agrees": ro == mine, "numpy_seconds": np_secs, "numpy_cpu": np_cpu,
                    "numpy_graphs_per_s": np_gps, "rasp_graphs": [n1, n2],
                    "rasp_passed": [r1["passed"], r2["passed"]],
                    "rasp_seconds": [r1["seconds"], r2["seconds"]],
                    "rasp_cpu": [r1["cpu"], r2["cpu"]], "rasp_graphs_per_s_wall_slope": wall_slope,
                    "rasp_graphs_per_s_slope": slope, "rasp_graphs_per_s_whole": whole,
                    "ratio_slope": slope / np_gps}) + "\n")
    if jout:
        jout.close()
    if bad:
        sys.exit("verify_numpy.py: rasp and numpy DISAGREE (see above)")
    print("verdicts agree on every graph; graph 0's outputs agree token for token")


if __name__ == "__main__":
    main()
