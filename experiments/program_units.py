#!/usr/bin/env python3
"""program_units.py -- which of the compiled program's values a trained
model of the compiled architecture computes, unit by unit.

usage: python3 experiments/program_units.py --ref STEM [--out DIR|FILE.csv [--merge]] [--questions N] [--step N] CELL...

(--out DIR: made if missing; DIR/units.csv is written there.  --out
FILE.csv: that file, its directory made if missing -- a second reading
beside units.csv, such as the one-hot arms' against their own compiled
model, which study_tables.py renders as FILE.md.  --merge: the rows the
file already holds for other cells are kept, so cells can be added as
they finish.)

STEM is the compiled model (study-work/d2: rasp compile's STEM.json and
.safetensors); each CELL is a finished study cell's directory
(study-work/ARM-sSEED, as experiments/study.sh leaves it) whose arm has the
compiled architecture: its final model is the arm_ARM.gNNNNNN stem there
(with --step N, the model rasp-train compare --keep-every kept at step N,
arm_ARM.stepN.gNNNNNN),
its questions the first N (default 500: those rasp-train evaluates) of
test_questions.jsonl, none of them seen in training.

Every unit the compiled layout names (layout.units: the MLPs' and the
attention heads' outputs held in the residual stream; not the inputs,
nor the readout's, which is the logits) is read, in both models, off the
residual stream after the sublayer that writes it (python/rasp_model.py's
Trace.value: a categorical value by its largest dimension, a number
written with its square as x, rounded to an integer).  A unit agrees at a
position where the two models' values are equal.  Two shares per unit:

  all   every position of every question (as rasp-train's program_acc,
        which covers the categorical heads only);
  found the positions where the compiled value is not the aggregates'
        default (--default, -99: what the path-star programs' walks hold
        before they have found an edge);
  lead  the position whose output is l_t (the answer's first token, s):
        where the program's walk must hold l_t's value for the readout.

It also gives each model's own l_t accuracy on the same questions (the
argmax of its logits there).  Writes the --out CSV (one row per cell and
unit: arm, seed, unit, kind, layer, encoding, agree_all, agree_found,
agree_lead, questions, lead_acc; agree_found empty where the value is
never other than the default) and prints it as a Markdown table, one column per
cell.  Reads the models with numpy only; nothing is trained or written
elsewhere."""
import argparse
import csv
import json
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import numpy as np  # noqa: E402
import rasp_model  # noqa: E402

INPUT_UNITS = ("tokens", "indices", "one")


def make_dir(d, what):
    """d and its parents made if missing; exits with WHAT and the reason
    when it cannot be (a file in the way included)"""
    try:
        os.makedirs(d or ".", exist_ok=True)
    except OSError as e:
        sys.exit("%s: %s" % (what, "Not a directory" if os.path.exists(d) else e.strerror))


def write_rows(path, rows, merge):
    """rows into the CSV at path, atomically; with merge, the rows already
    there of cells (arm, seed) not among these are kept, before them"""
    cells = {(str(r["arm"]), str(r["seed"])) for r in rows}
    old = []
    if merge and os.path.exists(path):
        with open(path, newline="") as f:
            rd = csv.DictReader(f)
            if rd.fieldnames != list(rows[0]):
                sys.exit("%s: its columns are not these (%s): not merged"
                         % (path, ",".join(rows[0])))
            old = [r for r in rd if (r["arm"], r["seed"]) not in cells]
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(old + rows)
    os.replace(tmp, path)


def model_stem(cell, step=None):
    """The finished arm's model in CELL: arm_ARM.gNNNNNN, or with step the
    one kept at that step, arm_ARM.stepSTEP.gNNNNNN (the newest generation
    when several are left)."""
    want = r"arm_[^.]+\.g\d+\.json$" if step is None else r"arm_[^.]+\.step%d\.g\d+\.json$" % step
    stems = sorted(os.path.join(cell, f) for f in os.listdir(cell) if re.match(want, f))
    if not stems:
        sys.exit("%s: no %s (%s)" % (cell, "arm_ARM.gNNNNNN.json" if step is None
                                     else "arm_ARM.step%d.gNNNNNN.json" % step,
                                     "is the cell finished?" if step is None
                                     else "was it run with --keep-every?"))
    return stems[-1][:-len(".json")]


def cell_name(cell):
    m = re.match(r"(.+)-s(\d+)$", os.path.basename(os.path.normpath(cell)))
    if not m:
        sys.exit("%s: not a study cell directory (ARM-sSEED)" % cell)
    return m.group(1), int(m.group(2))


def lead_right(m, logits, q, lead_pos, leads):
    """whether m's output at question q's l_t position (logits: that
    question's [n, n_out]) is l_t"""
    return m.values[int(logits[lead_pos[q] + 1].argmax())] == leads[q]


def read_model(m, ids, units, lead_pos, leads):
    """One forward pass of m over the questions: unit name -> [questions, n]
    array of its values (str, a number rounded to an integer's text), and
    m's l_t accuracy (the argmax of its logits at l_t's position)."""
    out, hits = {u["name"]: [] for u in units}, 0
    for b in range(0, len(ids), 100):
        t = m.trace(ids[b:b + 100])
        for k in range(len(ids[b:b + 100])):
            for u in units:
                out[u["name"]].append(rasp_model.value_text(
                    t.value(u["name"], rasp_model.unit_site(u), batch=k)))
            q = b + k
            hits += lead_right(m, t.logits[k], q, lead_pos, leads)
    return {k: np.array(v, dtype=object) for k, v in out.items()}, hits / len(ids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", required=True)
    ap.add_argument("--out", default=None)
    ap.add_argument("--questions", type=int, default=500)
    ap.add_argument("--default", default="-99")
    ap.add_argument("--step", type=int, default=None)
    ap.add_argument("--merge", action="store_true")
    ap.add_argument("cells", nargs="+")
    a = ap.parse_args()
    if a.merge and not a.out:
        sys.exit("program_units.py: --merge: nothing to merge into without --out")
    # --out: a directory (DIR/units.csv) or a FILE.csv; made if missing,
    # before any model is read
    out_csv = None
    if a.out:
        out_csv = a.out if a.out.endswith(".csv") else os.path.join(a.out, "units.csv")
        make_dir(os.path.dirname(out_csv), "program_units.py: --out %s" % a.out)
    ref = rasp_model.load(a.ref, backend="numpy")
    held = {p.split("=")[0] for d in ref.dims for p in d.split(" | ")}
    # (the readout's own unit is the logits, held in no dimension)
    units = [u for u in ref.units if u["name"] not in INPUT_UNITS and u["name"] in held]
    rows, cache = [], {}
    for cell in a.cells:
        arm, seed = cell_name(cell)
        qs = [json.loads(l) for l in open(os.path.join(cell, "test_questions.jsonl"))][:a.questions]
        key = tuple(" ".join(q["tokens"]) for q in qs)
        ids = np.array([ref.encode(q["tokens"]) for q in qs])
        lead_pos = [len(q["tokens"]) - len(q["answer"]) for q in qs]
        leads = [str(q["lead"]) for q in qs]
        if key not in cache:
            cache[key] = read_model(ref, ids, units, lead_pos, leads)
        want, ref_acc = cache[key]
        if ref_acc != 1:
            sys.exit("%s: the compiled model answers l_t on %.3f of %s's questions, not all"
                     % (a.ref, ref_acc, cell))
        stem = model_stem(cell, a.step)
        m = rasp_model.load(stem, backend="numpy")
        if m.config != ref.config:
            sys.exit("%s: not the compiled architecture (%s)" % (stem, m.config))
        # a trained model's STEM.json keeps no layout of its own: its
        # dimensions are read where the compiled model keeps each value
        m.dims, m.units, m.values = ref.dims, ref.units, ref.values
        got, acc = read_model(m, ids, units, lead_pos, leads)
        rows_at = np.arange(len(qs))
        for u in units:
            eq = got[u["name"]] == want[u["name"]]
            found = want[u["name"]] != a.default
            rows.append({"arm": arm, "seed": seed, "unit": u["name"], "kind": u["kind"],
                         "layer": u["layer"], "encoding": u.get("encoding", ""),
                         "agree_all": "%.4f" % eq.mean(),
                         "agree_found": "%.4f" % eq[found].mean() if found.any() else "",
                         "agree_lead": "%.4f" % eq[rows_at, lead_pos].mean(),
                         "questions": len(qs), "lead_acc": "%.4f" % acc})
    if out_csv:
        write_rows(out_csv, rows, a.merge)
    cells = sorted({(r["arm"], r["seed"]) for r in rows})
    print("| unit | layer | " + " | ".join("%s s%d (all / found / lead)" % c for c in cells)
          + " |")
    print("|---|---:|" + "---|" * len(cells))
    for u in units:
        by = {(r["arm"], r["seed"]): r for r in rows if r["unit"] == u["name"]}
        print("| %s %s | %d | " % (u["kind"], u["name"], u["layer"]) +
              " | ".join("%s / %s / %s" % (by[c]["agree_all"], by[c]["agree_found"] or "-",
                                            by[c]["agree_lead"]) for c in cells)
              + " |")
    print("| l_t accuracy | | " + " | ".join(
        next(r["lead_acc"] for r in rows if (r["arm"], r["seed"]) == c) for c in cells) + " |")


if __name__ == "__main__":
    main()
