#!/usr/bin/python3
"""gpu_precision.py -- compiled models on a GPU, in fp32, TF32, bf16 and fp16.

    bench/gpu_precision.py prepare DIR [RASP] [COMPILE_FLAGS...]   (here, on the CPU)
    bench/gpu_precision.py reference DIR                           (anywhere: numpy on the CPU)
    bench/gpu_precision.py run DIR [--json FILE]                   (on a machine with CUDA)

A user who trains a compiled model further does it in PyTorch on a GPU
(python/rasp_model.py), usually in bf16 or with TF32 matrix products.  This
bench asks whether the compiled weights still compute the program there.

`prepare` compiles the models below with `rasp compile` into DIR (extra
COMPILE_FLAGS go to every compile, e.g. --precision bf16), writes each
model's inputs (token ids, BOS first: uniform inputs and, for the plain
programs, adversarial ones: one repeated token, two alternating, sorted
runs; for the path-star programs `rasp gen` samples of the model's own
task, as layout.task in STEM.json names it) and the reference: the argmax
at every position of the float32 forward pass of python/rasp_model.py's
numpy backend, which tests/apply_parity.sh holds equal to `rasp apply`,
and which `rasp compile --check` holds equal to the interpreter.

`run` loads every model with torch on the GPU and, per precision, counts
the inputs whose argmax equals the reference at every position after
BOS (position 0 is no output of the program; its logits tie):
  fp32   float32, TF32 off (torch.backends.cuda.matmul.allow_tf32 = False);
  tf32   float32 weights, matrix products in TF32 (10-bit significand),
         as PyTorch allows with set_float32_matmul_precision("high");
  bf16   the module and its inputs cast to torch.bfloat16;
  fp16   the same in torch.float16.
GPU_PRECISION_N (default 500) sets the number of uniform inputs and
GPU_PRECISION_ONLY=a,b the models prepared (by name), GPU_PRECISION_V the
path-star programs' |V| (default 100; D = M = 5).
Prints a table (-1: the precision could not run there) and, with --json,
writes the counts.  Not a test.

GPU_PRECISION_REF=later makes `prepare` skip the reference, and
`reference` computes it for every prepared model that has none: the
one-hot models of --precision bf16/fp16 (d_model up to ~1100, up to 43M
parameters) take minutes each on one core, while their weights, mostly
zeros, shrink a thousandfold under xz; so they are compiled here, carried
compressed, and `run` computes the reference of a model that has none
as the float64 forward pass on the GPU (TF32 off; the JSON's "reference"
says which): 64-bit arithmetic is the compiled model's real-number
semantics to within rounding far below every proven margin.  `reference
DIR` instead computes the float32 numpy reference on the CPU.
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402
import rasp_model  # noqa: E402

PLAIN = [  # program, input vocabulary, length
    ("examples/reverse.rasp", "a b c", 64),
    ("examples/histogram.rasp", "a b c", 64),
    ("examples/sort.rasp", "1 2 3", 64),
    ("examples/balanced_parens.rasp", "( ) x", 64),
]
PATHSTAR = ["readout1_back_target", "readout2_backward_targets", "readout3_forward_start",
            "readout4_log", "readout5_arms_constant", "readout6_causal",
            "decoder1_back_target", "decoder2_backward_targets", "decoder3_forward_start",
            "decoder4_log_meet", "decoder5_arms_constant", "decoder6_causal"]
PS_SIZE = ("5", "5", os.environ.get("GPU_PRECISION_V", "100"))  # D, M, V
N_UNIFORM = int(os.environ.get("GPU_PRECISION_N", "500"))  # inputs per model (uniform part)
ONLY = set(filter(None, os.environ.get("GPU_PRECISION_ONLY", "").split(",")))  # names, or all


def plain_inputs(vocab, n, rng):
    syms = vocab.split()
    lines = [" ".join(rng.choice(syms, n)) for _ in range(N_UNIFORM)]
    for s in syms:  # one repeated token
        lines.append(" ".join([s] * n))
    for a in syms:  # two tokens alternating, and sorted runs
        for b in syms:
            if a != b:
                lines.append(" ".join(a if i % 2 else b for i in range(n)))
                lines.append(" ".join([a] * (n // 2) + [b] * (n - n // 2)))
    return lines


def pathstar_inputs(rasp, task):
    args = [rasp, "gen", "--D", str(task["D"]), "--M", str(task["M"]), "--V", str(task["V"]),
            "-n", str(N_UNIFORM), "--seed", "17", "--format", "text", "--order", task["order"],
            "--q", task["q"], "--answer", task["answer"], "--markers", str(task["markers"])]
    args.append("--bos" if task["bos"] else "--no-bos")
    args.append("--eos" if task["eos"] else "--no-eos")
    if task["st_names"]:
        args.append("--st-names")
    out = subprocess.run(args, check=True, stdout=subprocess.PIPE).stdout.decode()
    return [l for l in out.splitlines() if l.strip()]


def prepare(d, rasp, flags):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(5)
    jobs = [(p, ["--input-vocab", v, "--length", str(n)], ("plain", v, n)) for p, v, n in PLAIN]
    jobs += [("programs/%s.rasp" % p, ["--D", PS_SIZE[0], "--M", PS_SIZE[1], "--V", PS_SIZE[2]],
              ("pathstar",)) for p in PATHSTAR]
    names = []
    for prog, size, kind in jobs:
        name = os.path.basename(prog)[:-5]
        if ONLY and name not in ONLY:
            continue
        stem = os.path.join(d, name)
        r = subprocess.run([rasp, "compile", prog, "-o", stem] + size + flags,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            print("%s: not compiled: %s" % (name, r.stdout.decode().strip().splitlines()[-1]))
            continue
        m = rasp_model.load(stem, backend="numpy")
        if kind[0] == "plain":
            lines = plain_inputs(kind[1], kind[2], rng)
        else:
            lines = pathstar_inputs(rasp, json.load(open(stem + ".json"))["layout"]["task"])
        toks = np.array([m.encode(l) for l in lines], dtype=np.int64)
        np.save(stem + ".tokens.npy", toks.astype(np.int16))
        if os.environ.get("GPU_PRECISION_REF") != "later":
            reference_one(stem, m)
        names.append(name)
        with open(os.path.join(d, "models.txt"), "w") as f:  # after each: a cut run keeps them
            f.write("\n".join(names) + "\n")
        print("%s: %d inputs of %d tokens, d_model %d" % (name, len(toks), toks.shape[1],
                                                        m.config["d_model"]))


def reference_one(stem, m=None):
    """The float32 numpy forward pass's argmax at every position: STEM.ref.npy."""
    m = m or rasp_model.load(stem, backend="numpy")
    toks = np.load(stem + ".tokens.npy").astype(np.int64)
    ref = np.concatenate([np.asarray(m(toks[i:i + 64])).argmax(-1) for i in range(0, len(toks), 64)])
    np.save(stem + ".ref.npy", ref.astype(np.int16))


def reference(d):
    for name in open(os.path.join(d, "models.txt")).read().split():
        stem = os.path.join(d, name)
        if not os.path.exists(stem + ".ref.npy"):
            reference_one(stem)
            print("%s: reference written" % name, flush=True)


def run(d, json_out):
    import torch
    # GPU_PRECISION_DEVICE=cpu: a smoke test of this script without a GPU
    dev = torch.device(os.environ.get("GPU_PRECISION_DEVICE", "cuda"))
    assert dev.type != "cuda" or torch.cuda.is_available(), "no CUDA device"
    names = open(os.path.join(d, "models.txt")).read().split()
    modes = ["fp32", "tf32", "bf16", "fp16"]
    result = {"device": torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu", "torch": torch.__version__, "models": {}}
    print("%-24s %6s  %s" % ("model", "inputs", "  ".join("%9s" % m for m in modes)))
    for name in names:
        stem = os.path.join(d, name)
        toks = torch.from_numpy(np.load(stem + ".tokens.npy").astype(np.int64)).to(dev)
        if os.path.exists(stem + ".ref.npy"):
            ref = torch.from_numpy(np.load(stem + ".ref.npy").astype(np.int64)).to(dev)
            refkind = "fp32 numpy (CPU)"
        else:
            torch.backends.cuda.matmul.allow_tf32 = False
            m64 = rasp_model.load(stem).to(dev).double()
            with torch.no_grad():
                ref = torch.cat([m64(toks[i:i + 64]).argmax(-1) for i in range(0, len(toks), 64)])
            del m64
            refkind = "fp64 torch (%s)" % dev.type
        row = {"reference": refkind}
        for mode in modes:
            torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
            torch.backends.cudnn.allow_tf32 = mode == "tf32"
            m = rasp_model.load(stem).to(dev)
            if mode in ("bf16", "fp16"):
                m = m.to(torch.bfloat16 if mode == "bf16" else torch.float16)
            try:
                with torch.no_grad():
                    out = torch.cat([m(toks[i:i + 64]).float().argmax(-1)
                                     for i in range(0, len(toks), 64)])
            except RuntimeError as e:  # e.g. no fp16 matrix product on an old CPU torch
                print("%s, %s: %s" % (name, mode, str(e).splitlines()[0]), file=sys.stderr)
                row[mode] = -1
                continue
            # position 0 is BOS, no output of the program: its logits are
            # tied (all zero in float32, subnormal noise in float64)
            row[mode] = int((out[:, 1:] == ref[:, 1:]).all(-1).sum())
        result["models"][name] = {"inputs": len(toks), **row}
        print("%-24s %6d  %s  (reference: %s)" % (name, len(toks), "  ".join("%9d" % row[m] for m in modes),
                                                   refkind), flush=True)
    if json_out:
        with open(json_out, "w") as f:
            json.dump(result, f, indent=1)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "prepare":
        rasp = sys.argv[3] if len(sys.argv) > 3 else "./rasp/rasp"
        prepare(sys.argv[2], rasp, sys.argv[4:])
    elif len(sys.argv) == 3 and sys.argv[1] == "reference":
        reference(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "run":
        out = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--json" else None
        run(sys.argv[2], out)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
