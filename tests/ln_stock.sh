#!/bin/sh
# ln_stock.sh -- `rasp compile --ln stock`: layer norms for stock
# arithmetic (rcompile_lnstock.c): eps 4^p and weight 2^p (config.norm_eps,
# the layer norms' weights), a balance dimension, and sink dimensions whose
# rows in every reader cancel the reader's other rows exactly.
#   - decoder2_backward_targets at D = 2, M = 5, V = 20 (the study's
#     teacher) compiles, every unit proven with the stock layer norm's
#     rounding charged at every read (--stats: "every read charged
#     fl(x - m)"), BOS's residual bounded layer by layer and charged to
#     its keys and values, so the layer norms are proven; --check 200
#     agrees with the interpreter in every order of --check-orders (whose
#     layer norms are Welford's, in each order);
#   - a width whose select has a constant query is counted: decoder3's
#     `rank` at D = 2 is proven with the norms, and --check 100 agrees;
#   - a chain of wheres over one-hots is proven: decoder4 at D = 2, and
#     --check 100 agrees;
#   - a width read only as a where's condition is compiled as whether a
#     key is selected (a one-hot head), and agrees; read as a number too,
#     it stays a width;
#   - a loop's chain of wheres is proven once its wheres are written
#     steep (no hinge where an input's error passes): decoder6_causal at
#     D = 2, and --check 100 agrees;
#   - at D = 5 decoder6_causal is proven too (one-hot heads' value
#     columns from their smaller side, steep wheres' pairs charged their
#     own rounding), and --check 20 agrees;
#   - the charge can refuse: examples/sort.rasp at n = 8 is proven
#     without layer norm, and with --ln stock refused (file:line:col) at
#     its width;
#   - STEM.json: config.norm_eps is 4^p for layout.layer_norm's
#     weight_log2 p, construction "stock", proven true with a bos_bound
#     below 1 (what p was sized for); every reader
#     column's rows (w_q, w_k, w_v, w_in, unembed) sum to exactly 0;
#   - a file whose config.norm_eps is not positive is refused, naming the
#     file and the value;
#   - the check can fail: decoder6_causal at D = 5, M = 5, V = 100
#     compiled --unproven (the units the charge refuses kept) disagrees
#     under Welford's mean in index order, and no model is written;
#   - PyTorch: the loader does not warn (the norms are proven), runs
#     them as torch.nn.LayerNorm itself (eps 4^p), and its argmax in float32
#     and in float64 equals the numpy backend's on every position of task
#     samples and of arm samples in the three adversarial orders, with
#     1/rstd exactly 2^p everywhere and BOS's residual at every attention
#     within the proof's bound (experiments/ln_stock.py --loaded;
#     skipped without torch; RASP_NO_SKIP=1 fails instead);
#   - unit by unit (ln_stock.py --units): no unit of decoder2 differs
#     between torch.nn.LayerNorm in float32 and the numpy backend; in
#     decoder3 at D = 5 (--unproven) its counted width `rank` agrees and
#     the first that differs is `start_idx`, a move whose query reads
#     start_rank as a number and its square (up to 99^2);
#   - rasp-train --init runs it in its own float32 layer norm (not the
#     exact arithmetic of --ln pre): right at every answer before a step.
NAME=ln_stock.sh
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
stem=$tmp/e2
"$RASP" compile programs/decoder2_backward_targets.rasp --D 2 --M 5 --V 20 --moves one --ln stock \
  -o "$stem" --stats --check 200 --check-orders all >"$tmp/out" 2>&1 &&
  ok "decoder2 compiles with --ln stock" || bad "decoder2 --ln stock" "$tmp/out"
grep -q "^layer norm: stock pre-LN (--ln stock), .*every read charged fl(x - m) with the computed mean m within [0-9.e+-]* .*BOS's residual within [0-9.e+-]* of its one-hot at every attention, charged to its keys and values; every layer norm proven" "$tmp/out" &&
  grep -Eq "^fp32: (every head, MLP unit and the readout proven|proven exact against rounding: ([0-9]+) of \2 )" "$tmp/out" &&
  ok "--stats: every unit proven with every read charged, BOS's residual too; the layer norms proven" ||
  bad "--stats line" "$tmp/out"
# proven_d2 PROGRAM WHAT: PROGRAM at D = 2, M = 5, V = 20 compiles with
# --ln stock, every unit and the norms proven, and --check 100 agrees
proven_d2() {
  "$RASP" compile "programs/$1.rasp" --D 2 --M 5 --V 20 --moves one --ln stock \
    --dry-run --stats --check 100 >"$tmp/out0" 2>&1 &&
    grep -q "^fp32: every head, MLP unit and the readout proven against rounding" "$tmp/out0" &&
    grep -q "every layer norm proven" "$tmp/out0" &&
    grep -q "^check: 100/100 inputs agree with the interpreter" "$tmp/out0" &&
    ok "${1%%_*} at D = 2: $2, every unit and the norms proven, 100/100 agree" ||
    bad "${1%%_*} at D = 2 --ln stock" "$tmp/out0"
}
# a width with a constant query is counted (plan_count_width): decoder3's
# `rank` at D = 2, refused as a classic width, is proven and agrees
proven_d2 decoder3_forward_start "its width rank counted"
# a chain of wheres over one-hots whose conditions test "not the default"
# (decoder4's lead, once per arm, then the answer): each where reads its
# condition through the smaller side of its one-hot (win_onehot), a read's
# error counts once through a product (its rounding is in the sum's
# bound), and a head's values' errors once -- so decoder4 at D = 2, which
# the earlier charges refused at its readout, is proven and agrees
proven_d2 decoder4_log_meet "its chain of wheres"
# a width read only as a where's condition is compiled as whether any key
# is selected (plan_truth_width: a one-hot head moving True); read as a
# number too, it stays a width
cat >"$tmp/any.rasp" <<'EOF2'
def main(seq):
    w = sel_width(select(seq, seq, lt, causal=True))
    return where(w, full(seq, 'y'), full(seq, 'n'))
EOF2
sed 's/where(w,/where(w > 1,/' "$tmp/any.rasp" >"$tmp/any2.rasp"
for v in any any2; do
  "$RASP" compile "$tmp/$v.rasp" --input-vocab "a b c" --length 6 --ln stock -o "$tmp/$v" \
    --check 200 >"$tmp/out0" 2>&1 && grep -q "^check: 200/200 inputs agree" "$tmp/out0" ||
    bad "$v.rasp --ln stock" "$tmp/out0"
done
$PY - "$tmp/any" "$tmp/any2" >"$tmp/js" 2>&1 <<'PYEOF'
import json, sys
enc = []
for stem in sys.argv[1:]:
    us = json.load(open(stem + ".json"))["layout"]["units"]
    enc.append([u["encoding"] for u in us if u["name"].endswith(":w")])
print(enc)
PYEOF
grep -qx "\[\['categorical'\], \['numerical'\]\]" "$tmp/js" &&
  ok "a width read only as a condition: a one-hot head (True/False), 200/200 agree; read as a number: a width" ||
  bad "truth width" "$tmp/js"
# a loop's chain of wheres (decoder6's cur_k_nodes, cur_j_nodes and
# cur_state, once per step, each step reading the last through a move):
# each where passes its inputs' errors on where its hidden unit sits on a
# hinge, so the bound grew about five times a step; written steep
# (prove_steepen: two units per value, flat past 1.75) each where stops
# them, and decoder6 at D = 2 is proven and agrees
proven_d2 decoder6_causal "its loop's wheres written steep"
# past the loop, at D = 5 (node ids to 100): a one-hot head's value
# column read through its smaller side (`cur_state == t`'s False: `one`
# less one dimension, not 99), and a steep where's two units, each on or
# off with its partner, charging their outputs only their own rounding
# where there are too many combinations of inputs to enumerate
# (twin_step): decoder6 at D = 5 is proven and agrees
"$RASP" compile programs/decoder6_causal.rasp --D 5 --M 5 --V 100 --moves one --ln stock \
  --dry-run --stats --check 20 >"$tmp/out0" 2>&1 &&
  grep -q "^fp32: every head, MLP unit and the readout proven against rounding" "$tmp/out0" &&
  grep -q "every layer norm proven" "$tmp/out0" &&
  grep -q "^check: 20/20 inputs agree with the interpreter" "$tmp/out0" &&
  ok "decoder6 at D = 5: every unit and the norms proven, 20/20 agree" ||
  bad "decoder6 at D = 5 --ln stock" "$tmp/out0"
# the charge refuses what it cannot prove: sort at n = 8, proven without
# layer norm, refused with --ln stock at its width (its selected keys'
# weights, read with rounding, can differ by more than the decode allows)
"$RASP" compile examples/sort.rasp --input-vocab "1 2 3 4" --length 8 --dry-run \
  >"$tmp/out0" 2>&1 || bad "sort without layer norm" "$tmp/out0"
if "$RASP" compile examples/sort.rasp --input-vocab "1 2 3 4" --length 8 --ln stock \
     --dry-run >"$tmp/out0" 2>&1; then
  bad "sort --ln stock was not refused" "$tmp/out0"
else
  grep -q "^examples/sort.rasp:[0-9]*:[0-9]*: compile: %[0-9]* [a-z_]* (sel_width) cannot be compiled exactly in fp32: rounding can weigh its selected keys unequally" "$tmp/out0" &&
    ok "sort: proven without layer norm, refused with --ln stock at $(head -1 "$tmp/out0" | cut -d' ' -f3,4)" ||
    bad "sort --ln stock refusal" "$tmp/out0"
fi
n=$(grep -c "^check order [a-z0-9]*: 200/200 inputs agree" "$tmp/out")
[ "$n" = 8 ] && ok "every order agrees on 200/200" || bad "orders agreeing: $n of 8" "$tmp/out"
$PY - "$stem" >"$tmp/js" 2>&1 <<'PYEOF'
import json, math, struct, sys
stem = sys.argv[1]
meta = json.load(open(stem + ".json"))
c, ln = meta["config"], meta["layout"]["layer_norm"]
assert ln["construction"] == "stock" and ln["proven"] is True, ln
assert 0 < ln["bos_bound"] < 1, ln
assert c["layer_norm"] == 1 and c["norm_eps"] == 4.0 ** ln["weight_log2"], (c, ln)
assert ln["sink_dims"] == list(range(ln["balance_dim"] + 1, c["d_model"])), ln
raw = open(stem + ".safetensors", "rb").read()
hl = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + hl])
def tensor(name):
    t = hdr[name]
    a, b = t["data_offsets"]
    v = struct.unpack("<%df" % ((b - a) // 4), raw[8 + hl + a:8 + hl + b])
    return v, t["shape"]
D, cols = c["d_model"], 0
names = [k for k in hdr if k.endswith(("attn.w_q", "attn.w_k", "attn.w_v", "mlp.w_in")) or k == "unembed"]
for name in names:
    v, sh = tensor(name)
    if len(sh) == 3:  # [head][D][d_head]
        H, _, E = sh
        cs = [[v[(h * D + i) * E + j] for i in range(D)] for h in range(H) for j in range(E)]
    else:  # [D][n]
        N = sh[1]
        cs = [[v[i * N + j] for i in range(D)] for j in range(N)]
    for col in cs:
        assert math.fsum(col[:ln["value_dims"]] + col[ln["balance_dim"] + 1:]) == 0, name
        cols += 1
print("columns", cols)
PYEOF
grep -q "^columns [1-9]" "$tmp/js" && ok "config.norm_eps 4^p, layout says stock and proven, with BOS's bound; $(cat "$tmp/js"): each sums to exactly 0 with its sinks" ||
  bad "STEM.json" "$tmp/js"
# a file whose norm_eps is not positive: refused, naming the file and the value
cp "$stem.safetensors" "$tmp/bad.safetensors"
sed 's/"norm_eps": [0-9.e+]*/"norm_eps": -3/' "$stem.json" >"$tmp/bad.json"
if "$RASP" apply "$tmp/bad" --input a >"$tmp/outb" 2>&1; then
  bad "a negative norm_eps was accepted" "$tmp/outb"
else
  grep -q "bad.json': config field \"norm_eps\" = -3 is not positive" "$tmp/outb" &&
    ok "a negative norm_eps: refused with the file and the value" || bad "norm_eps message" "$tmp/outb"
fi
"$RASP" compile programs/decoder6_causal.rasp --D 5 --M 5 --V 100 --moves one --ln stock \
  --unproven -o "$tmp/e6" --check 20 --check-orders c >"$tmp/out3" 2>&1
st=$?
if [ $st -ne 0 ] && grep -q "^check order c: [0-9]*/20 " "$tmp/out3" &&
   ! grep -q "^check order c: 20/20 " "$tmp/out3" && [ ! -e "$tmp/e6.json" ]; then
  ok "decoder6 at D = 5: $(grep '^check order c' "$tmp/out3" | cut -c1-60), refused"
else
  bad "decoder6 at D = 5 should fail order c (status $st)" "$tmp/out3"
fi
if $PY -c 'import torch' 2>/dev/null; then
  "$RASP" gen --D 2 --M 5 --V 20 -n 40 --seed 41 --format text --order edge --no-bos --no-eos \
    --st-names >"$tmp/task" 2>"$tmp/log" &&
  "$RASP" gen --D 2 --M 5 --V 20 -n 20 --seed 42 --format text --order arm --no-bos --no-eos \
    --st-names 2>"$tmp/log" | $PY experiments/ln_stock.py --orders >"$tmp/adv" ||
    bad "gen" "$tmp/log"
  $PY - "$stem" >"$tmp/py" 2>&1 <<'PYEOF'
import sys, warnings
sys.path.insert(0, "python")
import torch
import rasp_model
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    mt = rasp_model.load(sys.argv[1], backend="torch")
assert not w, [str(x.message) for x in w]
lns = [mt.ln_f] + [b.ln1 for b in mt.layers] + [b.ln2 for b in mt.layers]
assert all(type(x) is torch.nn.LayerNorm and x.eps == mt.config["norm_eps"] for x in lns)
print("stock torch.nn.LayerNorm")
PYEOF
  grep -q "^stock torch.nn.LayerNorm" "$tmp/py" &&
    ok "the loader does not warn (proven), and its layer norms are torch.nn.LayerNorm with config.norm_eps" ||
    bad "torch loader" "$tmp/py"
  $PY experiments/ln_stock.py --loaded "$stem" "$tmp/task" "$tmp/adv" >"$tmp/py" 2>&1
  for want in "task float32: 40/40" "task float64: 40/40" "adv float32: 60/60" "adv float64: 60/60"; do
    grep -q "^e2 $want inputs, .* rstd 2^-[0-9]* everywhere: yes; BOS's residual off its one-hot by [0-9.e+-]* (bound [0-9.e+-]*): within$" "$tmp/py" &&
      ok "torch.nn.LayerNorm, $want inputs agree with numpy; BOS within its bound" || bad "torch: want '$want'" "$tmp/py"
  done
  # unit by unit (ln_stock.py --units): decoder2 at D = 2 has no unit that
  # differs; in decoder3 at D = 5 compiled --unproven (its numerical
  # encodings kept) the counted width agrees and start_idx differs first
  $PY experiments/ln_stock.py --units "$stem" "$tmp/task" >"$tmp/py" 2>&1
  grep -q "^first unit to disagree: none" "$tmp/py" &&
    ok "--units: every unit of decoder2 agrees under torch.nn.LayerNorm" || bad "--units e2" "$tmp/py"
  "$RASP" compile programs/decoder3_forward_start.rasp --D 5 --M 5 --V 100 --moves one --ln stock \
    --unproven -o "$tmp/e3" >"$tmp/log" 2>&1 &&
    "$RASP" gen --D 5 --M 5 --V 100 -n 10 --seed 41 --format text --order edge --no-bos --no-eos \
      --st-names >"$tmp/task5" 2>"$tmp/log" || bad "decoder3 at D = 5, or gen" "$tmp/log"
  $PY experiments/ln_stock.py --units "$tmp/e3" "$tmp/task5" >"$tmp/py" 2>&1
  grep -q "^first unit to disagree: %[0-9]*:start_idx$" "$tmp/py" &&
    grep -q "^  %[0-9]*:rank  *layers\.[0-9]*\.attn  *690/690 " "$tmp/py" &&
    ok "--units: decoder3 at D = 5: its counted width agrees, the first to differ reads start_rank: $(grep 'the first to' "$tmp/py" | tr -s ' ' | cut -c1-60)" ||
    bad "--units e3: want rank agreeing and start_idx first" "$tmp/py"
elif [ "${RASP_NO_SKIP:-0}" = 1 ]; then
  bad "no torch under RASP_NO_SKIP=1"
else
  echo "  (torch checks skipped: no torch)"
fi
use_trainer
"$train" --init "$stem" --D 2 --M 5 --V 20 --st-names --no-bos --no-eos --train 8 --test 32 --batch 8 \
  --max-steps 1 --epochs 1 --dropout 0 --threads 1 >"$tmp/run" 2>&1
line=$(sed -n 's/^trial 0 before training: \(val \)/\1/p' "$tmp/run")
if grep -q "pre-LN (compiled, stock layer norm)" "$tmp/run" &&
   printf '%s\n' "$line" | awk '{ if ($4 != "1.000") exit 1; for (i = 8; i <= NF; i++) if ($i != "1.000") exit 1 }'; then
  ok "rasp-train --init, its own layer norm: step 0 $line"
else
  bad "rasp-train --init step 0: '$line'" "$tmp/run"
fi
finish
