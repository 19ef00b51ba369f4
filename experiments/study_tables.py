#!/usr/bin/env python3
"""study_tables.py -- the study's tables and plots from its CSVs alone.

usage: python3 experiments/study_tables.py [--no-plot] [--update-doc=FILE] [GRID_DIR]
       (GRID_DIR: doc/study/grid by default; --update-doc=doc/training.md
       puts questions.md's tables in place of that file's, in order)

Reads every ARM-sSEED.csv that experiments/study.sh left (rasp-train
compare's rows: step, arm, losses, accuracies per answer position) and
writes into GRID_DIR:
  summary.csv   per arm and evaluated step: seeds, mean and 95% interval
                (Student t over the seeds, cut to [0, 1]) of l_t accuracy
                and whole-answer accuracy, and the median and range of the
                validation loss (one diverged seed's loss, 1e10, would make
                a mean and a t interval say nothing); where the arm has a
                compiled model at hand, the share of the program's head
                values the model still computes (mean and interval) and
                its distance from the compiled point (median and range);
  final.csv     per arm: seeds, the budget (the last evaluated step), the
                seeds whose run stopped early (a non-finite gradient: the
                arm takes no more steps, so its last evaluation holds to the
                budget), the same measures at the budget, the share of seeds
                that reached 95% whole-answer accuracy at an evaluation
                after step 0, the median step they reached it, and the share
                at 95% at the end;
  final.md      final.csv as a Markdown table (for doc/training.md);
  lead.gp, lead.png
                l_t accuracy by step, per arm: the mean and the interval
                (the PNG when gnuplot is installed);
  units.md      where GRID_DIR has units.csv (experiments/program_units.py:
                per cell of the compiled architecture and per unit of the
                compiled program, the share of its values the trained model
                computes, at every position, where the value is found
                and at l_t's), per unit and arm the mean and interval
                over seeds of the three shares; and UNITS.md for every
                other UNITS.csv whose name starts with "units" (a reading
                against another compiled model: units_onehot.csv, the
                one-hot arms against the program compiled one-hot);
  ABL.md        for every ABL.csv whose name starts with "ablation"
                (experiments/head_ablation.py: per cell and per head or
                MLP, l_t's accuracy with that site removed), per site and
                arm the mean and interval over seeds, the intact model's
                first.
An interval is printed only from 2 seeds up.  Nothing here reads anything
but the CSVs, so the tables can be regenerated anywhere."""
import csv
import glob
import math
import os
import re
import shutil
import subprocess
import sys

# two-sided 95% Student t quantiles by degrees of freedom
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(df):
    for k in sorted(T95, reverse=True):
        if df >= k:
            return T95[k] if df <= 30 else 1.96
    return float("nan")


def mean_ci(xs):
    """mean and 95% Student t interval, cut to [0, 1] (accuracies)"""
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, float("nan"), float("nan")
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    h = t95(n - 1) * sd / math.sqrt(n)
    return m, max(0.0, m - h), min(1.0, m + h)


def median_range(xs):
    """median, min and max (losses: robust to a diverged seed)"""
    ys = sorted(xs)
    n = len(ys)
    med = ys[n // 2] if n % 2 else (ys[n // 2 - 1] + ys[n // 2]) / 2
    if n < 2:
        return med, float("nan"), float("nan")
    return med, ys[0], ys[-1]


def stat(k, xs):
    """the columns k, k_lo, k_hi: accuracies (l_t, whole answer, the
    share of the program's head values still computed) as mean and t
    interval; the loss and the distance from the compiled point as median
    and range; all empty where the arm does not measure k (the distance
    and "still the program" exist only where a compiled model is at hand)"""
    if not xs:
        return {k: "", k + "_lo": "", k + "_hi": ""}
    m, lo, hi = (median_range if k in ("loss", "dist") else mean_ci)(xs)
    return {k: m, k + "_lo": lo, k + "_hi": hi}


def lost_text(lost):
    """when the seeds exact at step 0 lost their whole answers: the median
    first evaluation below 0.95 and how many kept it to the end"""
    if not lost:
        return ""
    steps = sorted(x for x in lost if x is not None)
    kept = len(lost) - len(steps)
    med = f"median step {steps[len(steps) // 2]}" if steps else ""
    keep = f"{kept} of {len(lost)} kept it" if kept else ""
    return "; ".join(x for x in (med, keep) if x)


def held(rows, steps):
    """a seed's rows at every step of steps: a run that stopped early
    keeps its last evaluation (it takes no more steps)"""
    by = {int(r["step"]): r for r in rows}
    out, last = {}, None
    for st in steps:
        if st in by:
            last = by[st]
        elif last is None or not last.get("stopped"):
            continue
        out[st] = last
    return out


def read_cells(grid):
    cells = {}  # arm -> seed -> list of rows (dict)
    for path in sorted(glob.glob(os.path.join(grid, "*-s*.csv"))):
        m = re.match(r"(.+)-s(\d+)\.csv$", os.path.basename(path))
        if not m:
            continue
        with open(path) as f:
            rows = [r for r in csv.DictReader(f)]
        cells.setdefault(m.group(1), {})[int(m.group(2))] = rows
    return cells


def fmt(m, lo, hi, spec=".3f"):
    if m == "":
        return ""
    if math.isnan(lo):
        return f"{m:{spec}}"
    return f"{m:{spec}} [{lo:{spec}}, {hi:{spec}}]"


def main():
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    doc = [f.split("=", 1)[1] for f in flags if f.startswith("--update-doc=")]
    if [f for f in flags if f != "--no-plot" and not f.startswith("--update-doc=")] \
            or len(args) > 1:
        print("usage: study_tables.py [--no-plot] [--update-doc=FILE] [GRID_DIR]",
              file=sys.stderr)
        return 2
    grid = args[0] if args else "doc/study/grid"
    cells = read_cells(grid)
    if not cells:
        print(f"study_tables.py: no ARM-sSEED.csv in {grid}", file=sys.stderr)
        return 1
    # the steps evaluated by a run that went the whole budget
    grid_steps = {int(r["step"]) for arm in cells.values() for rows in arm.values()
                  if not rows[-1].get("stopped") for r in rows}
    measures = [("lead", "val_lead_acc"), ("seq", "val_seq_acc"), ("loss", "val_loss"),
                ("program", "program_acc"), ("dist", "dist_compiled")]
    summary, final = [], []
    for arm in sorted(cells):
        seeds = cells[arm]
        # every step this arm evaluated, and the grid's evaluations past
        # them: a seed that stopped early holds its last evaluation there
        steps = sorted({int(r["step"]) for rows in seeds.values() for r in rows} | grid_steps)
        at = {s: held(rows, steps) for s, rows in seeds.items()}
        for st in steps:
            vals = {k: [float(h[st][c]) for h in at.values() if st in h and h[st].get(c)]
                    for k, c in measures}
            n = len(vals["lead"])
            if n == 0:
                continue
            row = {"arm": arm, "step": st, "seeds": n}
            for k, _ in measures:
                row.update(stat(k, vals[k]))
            summary.append(row)
        last = {s: rows[-1] for s, rows in seeds.items()}
        stopped = sorted(int(r["stopped"]) for r in last.values() if r.get("stopped"))
        reach = []
        for s, rows in seeds.items():
            hit = [int(r["step"]) for r in rows
                   if int(r["step"]) > 0 and float(r["val_seq_acc"]) >= 0.95]
            reach.append(hit[0] if hit else None)
        got = sorted(x for x in reach if x is not None)
        # an arm exact at step 0: the first evaluation its whole answer is
        # below 0.95 (the solution lost), per seed; None if it never is
        lost = []
        for s, rows in seeds.items():
            if float(rows[0]["val_seq_acc"]) >= 0.95:
                low = [int(r["step"]) for r in rows[1:] if float(r["val_seq_acc"]) < 0.95]
                lost.append(low[0] if low else None)
        fr = {"arm": arm, "seeds": len(seeds),
              "last_step": max(st for st in steps
                               if any(st in h for h in at.values())),
              "stopped": f"{len(stopped)} (at {', '.join(map(str, stopped))})" if stopped
                         else "0",
              "reached95": f"{len(got)}/{len(seeds)}",
              "ends95": f"{sum(float(r['val_seq_acc']) >= 0.95 for r in last.values())}"
                        f"/{len(seeds)}",
              "median_step95": got[len(got) // 2] if got else "",
              "lead0": mean_ci([float(rows[0]["val_lead_acc"]) for rows in seeds.values()])[0],
              "exact0": f"{len(lost)}/{len(seeds)}",
              "lost": lost_text(lost)}
        for k, c in measures:
            fr.update(stat(k, [float(r[c]) for r in last.values() if r.get(c)]))
        final.append(fr)
    keys = ["arm", "step", "seeds"] + [k + s for k, _ in measures for s in ("", "_lo", "_hi")]
    with open(os.path.join(grid, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(summary)
    fkeys = ["arm", "seeds", "last_step", "stopped", "reached95", "median_step95", "ends95",
             "lead0", "exact0", "lost"] + \
        [k + s for k, _ in measures for s in ("", "_lo", "_hi")]
    with open(os.path.join(grid, "final.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fkeys)
        w.writeheader()
        w.writerows(final)
    with open(os.path.join(grid, "final.md"), "w") as f:
        f.write("| arm | seeds | budget | stopped early | l_t accuracy (mean, 95% interval) | "
                "whole answer | validation loss (median, range) | seeds at 95% (after step "
                "0) | median step there | seeds at 95% at the end | still the program (mean, "
                "95% interval) | distance from the compiled point (median, range) |\n")
        f.write("|---|---:|---:|---|---|---|---|---:|---:|---:|---|---|\n")
        for r in final:
            f.write(f"| {r['arm']} | {r['seeds']} | {r['last_step']} | {r['stopped']} | "
                    f"{fmt(r['lead'], r['lead_lo'], r['lead_hi'])} | "
                    f"{fmt(r['seq'], r['seq_lo'], r['seq_hi'])} | "
                    f"{fmt(r['loss'], r['loss_lo'], r['loss_hi'], '.4g')} | {r['reached95']} | "
                    f"{r['median_step95']} | {r['ends95']} | "
                    f"{fmt(r['program'], r['program_lo'], r['program_hi'])} | "
                    f"{fmt(r['dist'], r['dist_lo'], r['dist_hi'], '.4g')} |\n")
    plot = shutil.which("gnuplot") and "--no-plot" not in flags
    write_plot(grid, "lead", sorted(cells), summary, plot,
               "leading-node accuracy on unseen questions (mean, 95% interval over seeds)")
    write_questions(grid, cells, final, summary, plot)
    mds = [os.path.join(grid, "questions.md")]
    for src in sorted(glob.glob(os.path.join(grid, "units*.csv"))):
        mds.append(write_units(src))
    for src in sorted(glob.glob(os.path.join(grid, "ablation*.csv"))):
        mds.append(write_ablation(src))
    for path in doc:
        update_doc(path, mds)
    print(open(os.path.join(grid, "final.md")).read(), end="")
    return 0


def write_plot(grid, name, arms, summary, plot, title):
    """NAME.dat (one block per arm: step, mean, interval), NAME.gp and,
    where gnuplot runs, NAME.png"""
    dat = os.path.join(grid, name + ".dat")
    with open(dat, "w") as f:
        for arm in arms:
            f.write(f"# {arm}\n")
            for r in summary:
                if r["arm"] == arm:
                    lo = r["lead_lo"] if not math.isnan(r["lead_lo"]) else r["lead"]
                    hi = r["lead_hi"] if not math.isnan(r["lead_hi"]) else r["lead"]
                    f.write(f"{r['step']} {r['lead']:.6g} {lo:.6g} {hi:.6g}\n")
            f.write("\n\n")
    gp = os.path.join(grid, name + ".gp")
    with open(gp, "w") as f:
        f.write(f"# gnuplot -c {name}.gp DAT PNG (written by experiments/study_tables.py)\n"
                "set terminal pngcairo size 900,500 font ',10' noenhanced\nset output ARG2\n"
                # (gnuplot's single-quoted strings write a quote as two)
                "set title '" + title.replace("'", "''") + "'\nset xlabel 'step'\n"
                "set ylabel 'l_t accuracy'\n"
                "set yrange [0:1.05]\nset key outside right\n")
        parts = []
        for i, arm in enumerate(arms):
            parts.append(f"ARG1 index {i} using 1:3:4 with filledcurves fs transparent "
                         f"solid 0.2 lc {i + 1} notitle")
            parts.append(f"ARG1 index {i} using 1:2 with lines lw 2 lc {i + 1} "
                         f"title '{arm}'")
        f.write("plot " + ", \\\n     ".join(parts) + "\n")
    if plot:
        subprocess.run(["gnuplot", "-c", gp, dat, os.path.join(grid, name + ".png")], check=True)


# The questions doc/training.md answers, each with the arms that answer it
# (the reference arm last); an arm with no cell yet shows as not run.
QUESTIONS = [
    ("q_plateau", "Does the standard decoder stay on the plateau, and does it leave it "
     "where the paper's decoder does?", ["armwise", "structured", "standard"]),
    ("q_start", "Does a compiled start solve l_t, and does it survive training at the "
     "standard rate?", ["compiled", "lowgain", "compiledln", "cstock", "standard"]),
    ("q_teacher", "Does a compiled teacher make l_t learnable?",
     ["taught", "taughtcat", "taughtattn", "stdtaught", "randcat", "random", "standard"]),
    ("q_frozen", "Does freezing and widening learn the rest?", ["frozen", "compiled"]),
]


def write_questions(grid, cells, final, summary, plot):
    """questions.md: per question, a table of its arms (the columns a
    reader needs for it) and a plot of their l_t accuracy by step"""
    by = {r["arm"]: r for r in final}
    with open(os.path.join(grid, "questions.md"), "w") as f:
        for name, title, arms in QUESTIONS:
            f.write(f"### {title}\n\n")
            f.write("| arm | seeds | l_t at step 0 | l_t at the budget (mean, 95% interval) | "
                    "whole answer at the budget | seeds at 95% after step 0 | exact at "
                    "step 0: lost its whole answer at | still the program at the budget | "
                    "stopped early |\n")
            f.write("|---|---:|---:|---|---|---:|---|---|---|\n")
            for arm in arms:
                r = by.get(arm)
                if r is None:
                    f.write(f"| {arm} | 0 | not run yet | | | | | | |\n")
                    continue
                f.write(f"| {arm} | {r['seeds']} | {r['lead0']:.3f} | "
                        f"{fmt(r['lead'], r['lead_lo'], r['lead_hi'])} | "
                        f"{fmt(r['seq'], r['seq_lo'], r['seq_hi'])} | {r['reached95']} | "
                        f"{r['lost'] if r['exact0'] != '0/' + str(r['seeds']) else ''} | "
                        f"{fmt(r['program'], r['program_lo'], r['program_hi'])} | "
                        f"{r['stopped']} |\n")
            f.write(f"\n![{title}](study/grid/{name}.png)\n\n")
            write_plot(grid, name, [a for a in arms if a in cells], summary, plot, title)


def read_reading(src, key):
    """a per-cell reading's CSV (units*.csv, ablation*.csv): the .md path
    beside it, its rows, its arms in the questions' order, its items (the
    distinct key(row) in order of appearance) and each arm's seeds"""
    rows = list(csv.DictReader(open(src)))
    order = [a for _, _, arms in QUESTIONS for a in arms]
    arms = sorted({r["arm"] for r in rows}, key=lambda a: (order.index(a) if a in order
                                                          else len(order), a))
    items = []
    for r in rows:
        if key(r) not in items:
            items.append(key(r))
    seeds = {a: sorted({int(r["seed"]) for r in rows if r["arm"] == a}) for a in arms}
    return src[:-len(".csv")] + ".md", rows, arms, items, seeds


def write_units(src):
    """UNITS.md beside UNITS.csv (program_units.py's): per unit of the
    program, per arm, the mean and interval over seeds of the share of its
    values the trained model computes at every position and at l_t's.
    Returns the path it wrote."""
    md, rows, arms, units, seeds = read_reading(src, lambda r: (r["unit"], r["kind"], r["layer"]))
    units.sort(key=lambda u: int(u[2]))  # by layer, the layout's order within one
    with open(md, "w") as f:
        # (the header names no counts, so --update-doc finds it as seeds land)
        f.write("| program value (unit) | layer | " + " | ".join(
            f"{a}: every position | {a}: where the value is found | {a}: at l_t's position"
            for a in arms) + " |\n")
        f.write("|---|---:|" + "---|---|---|" * len(arms) + "\n")
        f.write("| seeds (final models read) | | " + " | ".join(
            f"{len(seeds[a])} |  | " for a in arms) + " |\n")
        for name, kind, layer in units:
            cols = []
            for a in arms:
                sel = [r for r in rows if r["arm"] == a and r["unit"] == name]
                for k in ("agree_all", "agree_found", "agree_lead"):
                    xs = [float(r[k]) for r in sel if r.get(k)]
                    cols.append(fmt(*mean_ci(xs)) if xs else "")
            f.write(f"| {kind} {name} | {layer} | " + " | ".join(cols) + " |\n")
        cols = []
        for a in arms:
            accs = {int(r["seed"]): float(r["lead_acc"]) for r in rows if r["arm"] == a}
            cols += ["", "", fmt(*mean_ci(list(accs.values())))]
        f.write("| the model's own l_t accuracy | | " + " | ".join(cols) + " |\n")
    return md


def write_ablation(src):
    """ABL.md beside ABL.csv (head_ablation.py's): per site (a layer's head
    or MLP), the program's values it writes, and per arm the mean and
    interval over seeds of l_t's accuracy without it; the intact model's
    row first.  Returns the path it wrote."""
    md, rows, arms, sites, seeds = read_reading(
        src, lambda r: (r["layer"], r["site"], r["program"]))
    with open(md, "w") as f:
        f.write("| removed | the program's values it writes | " + " | ".join(
            f"{a}: l_t without it" for a in arms) + " |\n")
        f.write("|---|---|" + "---|" * len(arms) + "\n")
        f.write("| seeds (final models read) | | " + " | ".join(
            str(len(seeds[a])) for a in arms) + " |\n")
        cols = []
        for a in arms:
            intact = {int(r["seed"]): float(r["intact_acc"]) for r in rows if r["arm"] == a}
            cols.append(fmt(*mean_ci(list(intact.values()))))
        f.write("| nothing (the model as trained) | | " + " | ".join(cols) + " |\n")
        for layer, site, prog in sites:
            cols = []
            for a in arms:
                xs = [float(r["lead_acc"]) for r in rows if r["arm"] == a and
                      r["layer"] == layer and r["site"] == site]
                cols.append(fmt(*mean_ci(xs)) if xs else "")
            f.write(f"| layer {layer} {site} | {prog.replace(' ', ', ')} | " + " | ".join(cols)
                    + " |\n")
    return md


def md_tables(path):
    """the Markdown tables of a file, each a list of its lines"""
    tables, cur = [], None
    for line in open(path).read().split("\n"):
        if line.startswith("|"):
            if cur is None:
                cur = []
                tables.append(cur)
            cur.append(line)
        else:
            cur = None
    return tables


def update_doc(path, sources):
    """replace the tables of FILE (doc/training.md) that have the header of
    a table in SOURCES (questions.md, units.md) with those tables, in
    order: the prose around them is the writer's, the rows are the CSVs'"""
    tables = [t for src in sources for t in md_tables(src)]
    queue = {}
    for t in tables:
        queue.setdefault(t[0], []).append(t)
    lines = open(path).read().split("\n")
    out, i = [], 0
    while i < len(lines):
        if lines[i] in queue:
            if not queue[lines[i]]:
                raise SystemExit(f"study_tables.py: {path} has more tables than "
                                 f"{', '.join(map(os.path.basename, sources))}")
            out.extend(queue[lines[i]].pop(0))
            while i < len(lines) and lines[i].startswith("|"):
                i += 1
            continue
        out.append(lines[i])
        i += 1
    left = sum(len(q) for q in queue.values())
    if left:
        raise SystemExit(f"study_tables.py: {path} has {len(tables) - left} of the "
                         f"{len(tables)} tables of "
                         f"{', '.join(map(os.path.basename, sources))}")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(out))
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
