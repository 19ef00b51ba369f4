#!/usr/bin/env python3
"""walk_head.py -- can one attention sublayer of the compiled architecture
learn the program's heads there, given the compiled model's exact input?

usage: python3 experiments/walk_head.py --ref STEM --test QUESTIONS.jsonl
           [--D 2 --M 5 --V 20] [--layer L] [--steps N] [--train N] [--seed S] [--loss trainer|plain]
           [--attn W] [--start random|compiled] [--input-model STEM]
       python3 experiments/walk_head.py --summary [--unit NAME] CSV... [--eval-every K] [--out CSV]

The taught arm of the study (doc/training.md, section 3) computes every
value of the compiled program but its backward walk, whose first step is a
head of layer 2 (%29:connecting_idxs: the position of the edge that ends at
t, written as a number with its square).  That model had to build its own
inputs in the layers below.  Here the layers below are the compiled
model's, exact: the student is layer L's attention sublayer alone, from a
random start (weights N(0, 0.02^2), the output projection scaled by
1/sqrt(2 layers), biases 0: rasp-train's init), its input the compiled
residual stream before layer L, its target the compiled residual after
layer L's attention, on the same rows.  Everything else is the study's
recipe: AdamW (betas 0.9, 0.999, eps 1e-8), lr 5e-4, warm-up over 500
steps, cosine decay to 0.1 lr at the budget, the gradient's norm clipped to
1, weight decay 0.01, batch 64.

Loss (--loss): `trainer` is rasp-train's --teacher loss for this one
state (tteach.h): 100 times the mean over rows and dimensions of w_d (s -
h)^2, w_d = 1 / (1 + the teacher's mean square of dimension d on the first
batch); `plain` drops w (every dimension in its own units, so a number's
error counts as much as a one-hot's).  --attn W adds rasp-train's
--teacher-attn term: W times the mean over query rows and heads of KL(the
teacher's attention row || the student's).

--input-model STEM feeds the student the residual stream before layer L
of another model of the same architecture (a taught cell's trained
model, say) instead of the compiled one's; the target stays the compiled
model's.  It asks whether the input a student built for itself holds what
the layer needs.

--summary prints a Markdown table of finished runs' CSVs (named for the
run): for each head unit the first evaluation at which it agrees at every
position, and its agreement at steps 1,000, 2,500, 5,000 and 10,000, at
best, and its median error at the end (--unit: only the units whose
name holds NAME).

--start compiled starts the student at the compiled sublayer's own
weights instead: every value then agrees at step 0 (a check of the
reading, not an experiment).

Training questions are `rasp gen` samples (seed 1000 + S), those whose
graph and query equal a test question's dropped; the test questions are
the first 500 of QUESTIONS.jsonl (a study cell's test_questions.jsonl).  At
every evaluation the student's state is read as python/rasp_model.py's
Trace.value reads a model's (a one-hot value by its largest dimension, a
number rounded to an integer) for every head unit of layer L, and compared
with the compiled model's at every position (agree) and where the program's
value is not the walk's default, -99 (agree found), and each head's
attention row's largest key with the teacher's (argmax); for a number,
also the median distance from the program's value, unrounded.  Prints a line per
evaluation and writes them to --out (CSV).  CPU only, one thread."""
import argparse
import csv
import json
import math
import os
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402
import torch  # noqa: E402
import rasp_model  # noqa: E402


def questions(path, n):
    qs = []
    with open(path) as f:
        for line in f:
            qs.append(json.loads(line))
            if len(qs) == n:
                break
    return qs


def question_key(q):
    """What the model reads of a question: its graph and query (the
    tokens before the answer)."""
    return " ".join(q["tokens"][:len(q["tokens"]) - len(q["answer"])])


def generate(rasp, cfg, n, seed, held):
    """n training questions from rasp gen, none of whose graph and query
    is in `held`; returns them and the count dropped."""
    out = subprocess.run([rasp, "gen", "--D", str(cfg["D"]), "--M", str(cfg["M"]),
                          "--V", str(cfg["V"]), "--st-names", "--no-bos", "--no-eos",
                          "-n", str(n), "--seed", str(seed)],
                         check=True, capture_output=True, text=True).stdout
    qs = [json.loads(line) for line in out.splitlines()]
    kept = [q for q in qs if question_key(q) not in held]
    return kept, len(qs) - len(kept)


def teacher_states(m, ids, layer):
    """The compiled model's residual before layer `layer` and after its
    attention, and its attention there, for token ids [n, T]."""
    xs, ys, ws = [], [], []
    before = "embed" if layer == 0 else "layers.%d.mlp" % (layer - 1)
    with torch.no_grad():
        for b in range(0, len(ids), 250):
            t = m.trace(ids[b:b + 250])
            xs.append(t.residual[before].float())
            ys.append(t.residual["layers.%d.attn" % layer].float())
            ws.append(t.attention[layer].float())
    return torch.cat(xs), torch.cat(ys), torch.cat(ws)


class Head(torch.nn.Module):
    """One attention sublayer as rasp_model.TorchModel computes it
    (causal, no layer norm): x + sum over heads of softmax(q k' / sqrt(E)) v w_o."""

    def __init__(self, H, D, E, n_layers, gen):
        super().__init__()

        def normal(*shape, std=0.02):
            return torch.nn.Parameter(torch.randn(*shape, generator=gen) * std)
        self.w_q, self.w_k, self.w_v = normal(H, D, E), normal(H, D, E), normal(H, D, E)
        self.b_q, self.b_k, self.b_v = (torch.nn.Parameter(torch.zeros(H, E)) for _ in range(3))
        self.w_o = normal(H, E, D, std=0.02 / math.sqrt(2 * n_layers))
        self.b_o = torch.nn.Parameter(torch.zeros(D))
        self.scale = 1 / math.sqrt(E)

    def forward(self, x):
        n = x.shape[1]
        out, w = rasp_model.attend(self, x, torch.ones(n, n, dtype=torch.bool).tril(), self.scale)
        return x + out + self.b_o, w


def lr_factor(step, warmup, total, floor=0.1):
    """rasp-train's schedule: linear warm-up, cosine to floor x lr."""
    if step < warmup:
        return step / warmup
    p = min(max((step - warmup) / max(total - warmup, 1), 0.0), 1.0)
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * p))


def read_units(ref, y, units):
    """Each unit's values off states y [n, T, D], as Trace.value reads them
    (a number rounded to an integer's text), and the numbers unrounded."""
    tr = rasp_model.Trace(ref.dims, ref.units, ref._symbol)
    tr._keep("s", y.detach().numpy())
    out, raw = {}, {}
    for u in units:
        rows = []
        for k in range(y.shape[0]):
            v = tr.value(u["name"], "s", batch=k)
            if v and isinstance(v[0], float):
                raw.setdefault(u["name"], []).append(v)
            rows.append(rasp_model.value_text(v))
        out[u["name"]] = np.array(rows, dtype=object)
    return out, {k: np.array(v) for k, v in raw.items()}


def summary(paths, unit="", at=(1000, 2500, 5000, 10000)):
    """A Markdown table of finished runs' CSVs: for every head unit, the
    first evaluation at which it agrees everywhere, and a number's
    agreement (every position / where found) at the steps `at`, its best,
    and its median error at the last evaluation."""
    print("| run | unit | first agrees everywhere at step | " +
          " | ".join("step %d" % s for s in at) + " | best | median error at the end |")
    print("|---|---|---:|" + "---|" * len(at) + "---:|---:|")
    for path in paths:
        rows = list(csv.DictReader(open(path)))
        run = os.path.basename(path)[:-len(".csv")]
        for col in [c for c in rows[0] if c.startswith("agree %") and unit in c]:
            name = col[len("agree "):]
            first = next((r["step"] for r in rows if r[col] == "1.0000"), "never")
            cells = []
            for s in at:
                r = next((r for r in rows if int(r["step"]) == s), None)
                cells.append("" if r is None else "%s / %s" % (r[col], r["agree found " + name])
                             if r.get("agree found " + name) else r[col])
            med = rows[-1].get("median error " + name, "")
            print("| %s | %s | %s | %s | %.4f | %s |" % (run, name, first, " | ".join(cells),
                                                        max(float(r[col]) for r in rows), med))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--summary":
        sp = argparse.ArgumentParser(prog="walk_head.py --summary")
        sp.add_argument("--unit", default="", help="only the units whose name holds this")
        sp.add_argument("csv", nargs="+")
        b = sp.parse_args(sys.argv[2:])
        return summary(b.csv, b.unit)
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--D", type=int, default=2)
    ap.add_argument("--M", type=int, default=5)
    ap.add_argument("--V", type=int, default=20)
    ap.add_argument("--layer", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--train", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--loss", choices=("trainer", "plain"), default="trainer")
    ap.add_argument("--attn", type=float, default=0.0)
    ap.add_argument("--start", choices=("random", "compiled"), default="random")
    ap.add_argument("--input-model", default=None)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--rasp", default=os.path.join(HERE, "..", "rasp", "rasp"))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.out:  # its directory made now, not found missing after the training
        d = os.path.dirname(a.out) or "."
        try:
            os.makedirs(d, exist_ok=True)
        except OSError as e:
            sys.exit("walk_head.py: --out %s: cannot make its directory %s: %s" % (a.out, d, e.strerror))
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    ref = rasp_model.load(a.ref, backend="torch")
    c = ref.config
    L = a.layer
    units = [u for u in ref.units if u.get("layer") == L and u["kind"] == "head"]
    if not units:
        sys.exit("%s: layer %d has no head units" % (a.ref, L))
    every_test = questions(a.test, 10 ** 9)  # all of them held out of training
    test = every_test[:500]
    held = {question_key(q) for q in every_test}
    task = {"D": a.D, "M": a.M, "V": a.V}
    train, dropped = generate(a.rasp, task, a.train, 1000 + a.seed, held)
    if not train:
        sys.exit("every one of the %d training questions is a test question (rasp gen --seed %d:"
                 " the test file's own draw?)" % (dropped, 1000 + a.seed))
    enc = lambda qs: np.array([ref.encode(q["tokens"]) for q in qs])  # noqa: E731
    ids_tr, ids_te = enc(train), enc(test)
    x_tr, y_tr, w_tr = teacher_states(ref, ids_tr, L)
    x_te, y_te, w_te = teacher_states(ref, ids_te, L)
    if a.input_model:
        # the input another model of the same architecture builds for itself
        # (a trained student's lower layers); the targets stay the compiled
        # model's
        other = rasp_model.load(a.input_model, backend="torch")
        if other.config != c:
            sys.exit("%s: not %s's architecture" % (a.input_model, a.ref))
        x_tr = teacher_states(other, ids_tr, L)[0]
        x_te = teacher_states(other, ids_te, L)[0]
    want, want_raw = read_units(ref, y_te, units)
    w_dim = 1 / (1 + (y_tr[:64] ** 2).mean(dim=(0, 1))) if a.loss == "trainer" \
        else torch.ones(c["d_model"])
    gen = torch.Generator().manual_seed(a.seed)
    head = Head(c["n_heads"], c["d_model"], c["d_head"], c["n_layers"], gen)
    if a.start == "compiled":  # the program's own weights (a check of the reading)
        with torch.no_grad():
            for name, p in head.named_parameters():
                p.copy_(getattr(ref.layers[L].attn, name))
    # (rasp-train decays every parameter, biases too)
    opt = torch.optim.AdamW(head.parameters(), lr=5e-4, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.01)
    rows = []
    print("# layer %d, heads %s; %d training questions (%d dropped as test questions), %d test;"
          " loss %s, attention weight %g" % (L, ", ".join(u["name"] for u in units), len(train),
                                              dropped, len(test), a.loss, a.attn))

    def evaluate(step, loss):
        with torch.no_grad():
            y, w = head(x_te)
        got, raw = read_units(ref, y, units)
        row = {"step": step, "loss": "%.6g" % loss}
        for u in units:
            eq, found = got[u["name"]] == want[u["name"]], want[u["name"]] != "-99"
            row["agree " + u["name"]] = "%.4f" % eq.mean()
            row["agree found " + u["name"]] = "%.4f" % eq[found].mean() if found.any() else ""
            if u["name"] in raw:  # a number: how far from the program's, unrounded
                row["median error " + u["name"]] = "%.3g" % np.median(
                    np.abs(raw[u["name"]] - want_raw[u["name"]]))
        for h in range(c["n_heads"]):
            am = (w[:, h].argmax(-1) == w_te[:, h].argmax(-1)).float().mean().item()
            row["argmax head %d" % h] = "%.4f" % am
        rows.append(row)
        print(" ".join("%s=%s" % kv for kv in row.items()), flush=True)

    rng = np.random.default_rng(a.seed)
    loss_v = float("nan")
    evaluate(0, loss_v)
    for step in range(1, a.steps + 1):
        for g in opt.param_groups:
            g["lr"] = 5e-4 * lr_factor(step, 500, a.steps)
        idx = torch.from_numpy(rng.integers(0, len(train), 64))
        y, w = head(x_tr[idx])
        loss = 100 * (w_dim * (y - y_tr[idx]) ** 2).mean()
        if a.attn > 0:
            t = w_tr[idx]
            kl = (t * (torch.log(t.clamp_min(1e-30)) - torch.log(w.clamp_min(1e-30)))).sum(-1)
            loss = loss + a.attn * kl.mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
        opt.step()
        loss_v = loss.item()
        if step % a.eval_every == 0 or step == a.steps:
            evaluate(step, loss_v)
    if a.out:
        tmp = a.out + ".tmp"
        with open(tmp, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
            wr.writeheader()
            wr.writerows(rows)
        os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
