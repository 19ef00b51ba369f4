#!/usr/bin/env python3
"""head_ablation.py -- which attention heads and MLPs a trained model needs
for l_t: each removed in turn, and l_t's accuracy measured without it.

usage: python3 experiments/head_ablation.py --ref STEM [--out FILE.csv [--merge]] [--questions N] [--step N] CELL...

STEM is a compiled model of the cells' architecture (study-work/d2c for
the one-hot arms): it gives the output symbols' names, which a trained
checkpoint does not keep.  Each CELL is a finished study cell's directory
(study-work/ARM-sSEED); its final model is read (with --step N, the one
rasp-train compare --keep-every kept at step N), and its questions are
the first N (default 500: those rasp-train evaluates) of
test_questions.jsonl, none of them seen in training.

For every layer, each attention head is removed by zeroing its rows of
attn.w_o (what it adds to the residual stream; the layer's b_o stays),
and the MLP by zeroing mlp.w_out (its b_out stays): zero-ablation, one
site at a time, every other weight as trained.  For each site the model's
l_t accuracy on the questions (the argmax of its logits at the position
that outputs l_t, as program_units.py reads it) is measured.  A site
whose removal takes l_t's accuracy far below the intact model's is one
the model's way of finding l_t goes through; one whose removal changes
nothing is not needed for it (it may still serve the other tokens).

Writes FILE.csv (its directory made if missing; with --merge, the rows
it holds for other cells are kept; one row per cell and
site: arm, seed, layer, site, program -- the compiled program's values
that site writes in STEM, by the dimensions its output weights reach --,
lead_acc, intact_acc, questions) and prints
a Markdown table, one column per cell.  Reads the models with numpy only;
nothing is trained or written elsewhere."""
import argparse
import json
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402
import rasp_model  # noqa: E402
from program_units import cell_name, lead_right, make_dir, model_stem, write_rows  # noqa: E402


def lead_accuracy(m, ids, lead_pos, leads):
    """m's l_t accuracy over the questions (program_units.py's reading)"""
    hits = 0
    for b in range(0, len(ids), 100):
        lg = m.forward(ids[b:b + 100])
        for k in range(lg.shape[0]):
            q = b + k
            hits += lead_right(m, lg[k], q, lead_pos, leads)
    return hits / len(ids)


def sites(cfg):
    """(layer, site name, tensor, index or None) of every removable site"""
    for L in range(cfg["n_layers"]):
        for h in range(cfg["n_heads"]):
            yield L, "head%d" % h, "layers.%d.attn.w_o" % L, h
        yield L, "mlp", "layers.%d.mlp.w_out" % L, None


def program_units_at(ref, tensor, idx):
    """the compiled program's units that a site writes in the reference
    model: those whose dimensions its output weights reach"""
    w = ref.params[tensor] if idx is None else ref.params[tensor][idx]
    cols = np.nonzero(np.abs(w).reshape(-1, w.shape[-1]).max(0))[0]
    layer = int(tensor.split(".")[1])
    kind = "mlp" if idx is None else "head"
    return [u["name"] for u in ref.units
            if u["kind"] == kind and u.get("layer") == layer and "dim" in u and
            any(u["dim"] <= c < u["dim"] + u.get("size", 1) for c in cols)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", required=True)
    ap.add_argument("--out", default=None)
    ap.add_argument("--questions", type=int, default=500)
    ap.add_argument("--step", type=int, default=None)
    ap.add_argument("--merge", action="store_true")
    ap.add_argument("cells", nargs="+")
    a = ap.parse_args()
    if a.merge and not a.out:
        sys.exit("head_ablation.py: --merge: nothing to merge into without --out")
    if a.out:  # made if missing, before any model is read
        if not a.out.endswith(".csv"):
            sys.exit("head_ablation.py: --out %s: not a FILE.csv" % a.out)
        make_dir(os.path.dirname(a.out), "head_ablation.py: --out %s" % a.out)
    ref = rasp_model.load(a.ref, backend="numpy")
    # what each site writes in the compiled model: the same for every cell
    writes = {(L, name): program_units_at(ref, tensor, idx)
              for L, name, tensor, idx in sites(ref.config)}
    rows = []
    for cell in a.cells:
        arm, seed = cell_name(cell)
        qs = [json.loads(l) for l in open(os.path.join(cell, "test_questions.jsonl"))][:a.questions]
        ids = np.array([ref.encode(q["tokens"]) for q in qs])
        lead_pos = [len(q["tokens"]) - len(q["answer"]) for q in qs]
        leads = [str(q["lead"]) for q in qs]
        stem = model_stem(cell, a.step)
        m = rasp_model.load(stem, backend="numpy")
        if m.config != ref.config:
            sys.exit("%s: not the architecture of %s (%s)" % (stem, a.ref, m.config))
        m.values = ref.values
        intact = lead_accuracy(m, ids, lead_pos, leads)
        for L, name, tensor, idx in sites(m.config):
            keep = m.params[tensor].copy()
            if idx is None:
                m.params[tensor][...] = 0
            else:
                m.params[tensor][idx] = 0
            acc = lead_accuracy(m, ids, lead_pos, leads)
            m.params[tensor] = keep
            rows.append({"arm": arm, "seed": seed, "layer": L, "site": name,
                         "program": " ".join(writes[L, name]),
                         "lead_acc": "%.4f" % acc, "intact_acc": "%.4f" % intact,
                         "questions": len(qs)})
    if a.out:
        write_rows(a.out, rows, a.merge)
    cells = sorted({(r["arm"], r["seed"]) for r in rows})
    print("| site | the program's values it writes | " + " | ".join("%s s%d" % c for c in cells)
          + " |")
    print("|---|---|" + "---:|" * len(cells))
    print("| intact | | " + " | ".join(
        next(r["intact_acc"] for r in rows if (r["arm"], r["seed"]) == c) for c in cells) + " |")
    for L, name, _, _ in sites(ref.config):
        by = {(r["arm"], r["seed"]): r for r in rows if r["layer"] == L and r["site"] == name}
        print("| layer %d %s | %s | " % (L, name, ", ".join(writes[L, name]))
              + " | ".join(by[c]["lead_acc"] for c in cells) + " |")


if __name__ == "__main__":
    main()
