"""rasp_model -- a model compiled by `rasp compile`, in Python.

    import rasp_model
    m = rasp_model.load("rev")     # rev.json + rev.safetensors (rasp compile -o rev)
    print(m.decode(m(m.encode("a b c a")).argmax(-1)))   # [['1', '3', '2', '1']]

`load(stem)` returns a PyTorch `nn.Module` when torch can be imported (so the
compiled weights can be trained further on a GPU, on the sequences of
`rasp gen` with the same seed), else an object with the same interface and
a numpy forward pass; `load(stem, backend="numpy")` asks for the latter.
Only numpy (and optionally torch) is needed: the safetensors file is read
here (an 8-byte little-endian header length, a JSON header, raw float32).

The model is the transformer of rasp/rmodel.h (tok_emb + pos_emb; blocks of
multi-head attention, softmax(Q K^T / sqrt(d_head)), causal mask when
config.causal, then an MLP with ReLU or tanh-GELU, each added to the
residual; a norm before every sublayer and the readout when
config.layer_norm: 1 layer norms, 2 RMS norms; logits = x unembed +
unembed_b).  A model of `rasp compile --ln pre` (layout.layer_norm) runs its
layer norms as `ExactLayerNorm`, an nn.LayerNorm computed in rmodel.c's
arithmetic, which its exactness needs (doc/compiler.md, "Pre-LN models").
RMS norms (`rasp compile --ln rms`, `rasp-train --ln rms`) run as
`RMSNorm`, the stock formula x * torch.rsqrt(x.pow(2).mean(-1) + eps) *
weight, in which a compiled one is exact in any order ("Pre-RMSNorm
models").  Its parameters have the file's tensor names
(`state_dict()` keys are "tok_emb", "layers.0.attn.w_q", ...).

Attributes: `config` (STEM.json's config), `dims` (the name of every
residual dimension, e.g. "tokens=a", "indices=3", "%8=1"), `vocab`
(vocab[id] is the symbol of token id; "" for 0 and BOS), `values` (the
output value of each logit), `n` (the input length it was compiled for),
`bos_token`, `proven` (STEM.json's layout.proof.proven: True when the
rounding proof covers every unit, False for a model compiled with
`rasp compile --unproven` that it does not, which load() warns about with
an UnprovenModelWarning; None for files from before it was recorded) and
`premise` (what the proof assumes of the inputs, "one key per query" or
"equal selected values", which `rasp compile --check` tests; None when
nothing is assumed), and `arithmetic` (layout.arithmetic: the element
types the model is exact in, ("float32", "float64") or, for a model that
holds a quantized width, ("float32",); a forward pass with parameters of
another dtype, `model.double()` say, raises TypeError; None for files from
before it was recorded).  Scores are (q k^T) times 1/sqrt(d_head) (rounded
to float32), the product formed first, as `rasp apply` computes them.

`load(stem, attention="sdpa")` (or setting `m.attention = "sdpa"`) runs
every head as PyTorch 2's `torch.nn.functional.scaled_dot_product_attention`
does, q and k each multiplied by d_head^(-1/4) before the product: through
that function itself when torch has it (the causal mask as attn_mask), else
(an older torch, the numpy backend, or a trace, which needs the weights)
through the same arithmetic written out (its math path).  `formulas`
(layout.attention.formulas) lists the score formulas the model is exact
under: ("product_first", "sdpa") for a model compiled with d_head 1, 16 or
256 (rasp compile's default), ("product_first",) for `rasp compile
--no-sdpa`; attention="sdpa" on a model that does not list "sdpa" raises
ValueError naming the field.

    m.encode("a b c a")     # [BOS id, ids...]: one sequence, BOS first
    m(tokens)               # logits [batch, n+1, n_out] (a sequence or a batch)
    m.decode(ids)           # readout indices [batch, n+1] -> values at positions 1..n
    m.decode(ids, symbols=True)  # integer values that are token ids -> their symbols,
                                 # as `rasp apply --symbols` prints them
    t = m.trace(tokens)     # the forward pass's intermediates (class Trace):
    t.sites                 # "embed", "layers.0.attn", "layers.0.mlp", ..., in order
    t.residual["layers.2.mlp"]   # the residual stream after that sublayer [batch, n+1, d_model]
    t.attention[2]          # layer 2's attention weights [batch, heads, n+1, n+1]
    t.logits                # as m(tokens)
    t.value("reverse", "layers.2.mlp")  # the value of the program's `reverse` at each input
                                        # position, read off its residual dimensions there
    value_text(t.value(...))   # the same as text, a number rounded to an integer
    unit_site(u)            # the site just after the sublayer that writes layout unit u
                            # (an entry of m.units), where t.value reads it
    attend(a, h, mask, scale)   # (torch) one attention sublayer, its parameters a (names as
                                # an _Attn's) on h: the heads' output before b_o, the pattern

The torch backend's trace holds tensors that keep their graph, so a loss on
any intermediate (a compiled model as a teacher, say) can be backpropagated.

`rasp apply STEM --input "..." --logits` prints the same logits from the C
forward pass; tests/apply_parity.sh checks that they agree (argmax equal,
logits within 1e-5) for both backends.

The files are held to what `rasp apply` holds them to, before anything they
claim is allocated: regular files only (never a FIFO or a device), the
config's ranges, every tensor's shape and span inside the data section, no
two tensors overlapping, finite weights, and STEM.json's params_fnv checksum.
The tensors are memory-mapped, not read whole.  Any such problem raises
FormatError (a ValueError) naming the file; tests/loader_hostile.sh runs
both on the same damaged files.
"""

import json
import math
import struct
import warnings

import numpy as np

try:
    import torch
    from torch import nn
except ImportError:  # the numpy forward pass serves
    torch = None

RMS_EPS = 1e-5  # an RMS norm's epsilon (config.layer_norm 2), rmodel.h's RASPN_RMS_EPS
LN_EPS = 1e-5  # a layer norm's default epsilon (config.norm_eps), rmodel.h's RASPN_LN_EPS


def _norm_eps(c):
    """The epsilon of config c's norms: config.norm_eps for layer norms
    (absent: the default), RMS_EPS for RMS norms."""
    return RMS_EPS if c["layer_norm"] == 2 else float(c.get("norm_eps", LN_EPS))
ATTENTIONS = ("product", "sdpa")  # load()'s attention: the formula run

__all__ = ["load", "read_safetensors", "NumpyModel", "Trace", "unit_site", "value_text",
           "FormatError", "UnprovenModelWarning"]

_CFG_FIELDS = ("vocab_size", "max_len", "d_model", "n_layers", "n_heads", "d_head",
               "d_mlp", "n_out", "causal", "layer_norm", "pos_embedding", "gelu",
               "bos_token")


def _stem(stem):
    for sfx in (".safetensors", ".json"):
        if stem.endswith(sfx) and len(stem) > len(sfx):
            return stem[:-len(sfx)]
    return stem


class FormatError(ValueError):
    """A model file that is not what it should be: the message names the file
    and the problem.  Raised before anything the file claims is allocated."""


# the limits rasp/rmodel.c holds a model to
_MAXDIM = 1 << 20          # vocab_size, max_len, d_model, n_heads, d_head, d_mlp, n_out
_MAXLAYERS = 4096
_MAXPARAMS = 1 << 32       # floats, all tensors together
_MAXHEADER = 16 << 20      # the safetensors JSON header
_MAXJSON = 64 << 20        # STEM.json


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    for k in keys:
        if keys.count(k) > 1:
            raise FormatError("the key %r appears twice" % (k,))
    return dict(pairs)


def _regular(path, limit=None):
    """Opens path, a regular file (never a FIFO or a device), of at most limit
    bytes; returns (file, size)."""
    import os
    import stat
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise FormatError("%s: cannot read: %s" % (path, e.strerror))
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise FormatError("%s: not a regular file" % path)
    if limit is not None and st.st_size > limit:
        os.close(fd)
        raise FormatError("%s: %d bytes, more than the %d such a file may have"
                          % (path, st.st_size, limit))
    return os.fdopen(fd, "rb"), st.st_size


def _json(text, path):
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates,
                          parse_constant=lambda c: _bad_constant(c, path))
    except FormatError as e:
        raise FormatError("%s: %s" % (path, e))
    except (ValueError, RecursionError) as e:
        raise FormatError("%s: not JSON: %s" % (path, e))


def _bad_constant(c, path):
    raise FormatError("%s: %s is not a JSON number" % (path, c))


def read_safetensors(path, expected=None):
    """The tensors of a safetensors file (float32 only) as read-only numpy
    arrays mapped from the file, by name.  With expected (name -> shape),
    exactly those tensors in those shapes; every tensor's span must lie in
    the data section and no two may overlap; every weight must be finite."""
    f, size = _regular(path)
    with f:
        head = f.read(8)
        if len(head) < 8:
            raise FormatError("%s: not a safetensors file (only %d bytes)" % (path, len(head)))
        (hlen,) = struct.unpack("<Q", head)
        if not 2 <= hlen <= _MAXHEADER:
            raise FormatError("%s: not a safetensors file (header length %d is not in 2..%d)"
                              % (path, hlen, _MAXHEADER))
        if hlen > size - 8:
            raise FormatError("%s: truncated (header of %d bytes, file of %d)" % (path, hlen, size))
        header = _json(f.read(hlen).decode("utf-8", "replace"), path)
    if not isinstance(header, dict):
        raise FormatError("%s: the header is not a JSON object" % path)
    dlen = size - 8 - hlen
    spans, meta = [], {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if expected is not None and name not in expected:
            raise FormatError("%s: unexpected tensor %s for this config" % (path, name))
        if not isinstance(info, dict) or info.get("dtype") != "F32":
            raise FormatError("%s: tensor %s is not F32" % (path, name))
        shape, offs = info.get("shape"), info.get("data_offsets")
        if (not isinstance(shape, list) or not all(type(x) is int and x >= 0 for x in shape) or
                not isinstance(offs, list) or len(offs) != 2 or
                not all(type(x) is int for x in offs)):
            raise FormatError("%s: tensor %s: bad shape or data_offsets" % (path, name))
        if expected is not None and tuple(shape) != tuple(expected[name]):
            raise FormatError("%s: tensor %s has shape %s, the config says %s"
                              % (path, name, shape, list(expected[name])))
        a, b = offs
        n = 1
        for x in shape:
            n *= x
        if not 0 <= a <= b or b - a != 4 * n:
            raise FormatError("%s: tensor %s: data_offsets [%d, %d] do not fit shape %s"
                              % (path, name, a, b, shape))
        if b > dlen:
            raise FormatError("%s: truncated: tensor %s ends at byte %d of a %d-byte data section"
                              % (path, name, b, dlen))
        spans.append((a, b, name))
        meta[name] = (shape, a)
    if expected is not None:
        for name in expected:
            if name not in meta:
                raise FormatError("%s: tensor %s is missing" % (path, name))
    spans.sort()
    for (a0, b0, n0), (a1, b1, n1) in zip(spans, spans[1:]):
        if a1 < b0:
            raise FormatError("%s: tensors %s and %s overlap in the data section" % (path, n0, n1))
    out = {}
    if not spans:
        return out
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + hlen, shape=(dlen,)) \
        if dlen else np.zeros(0, np.uint8)
    for name, (shape, a) in meta.items():
        arr = data[a:a + 4 * int(np.prod(shape, dtype=np.int64))].view("<f4").reshape(shape)
        if not np.isfinite(arr).all():
            raise FormatError("%s: tensor %s holds a weight that is not finite" % (path, name))
        out[name] = arr
    return out


def _fnv1a(arrays):
    """FNV-1a (64-bit) of the arrays' bytes in order: rasp/rmodel.c's params_fnv."""
    h, prime, mask = 1469598103934665603, 1099511628211, (1 << 64) - 1
    for arr in arrays:
        for b in np.ascontiguousarray(arr, dtype="<f4").tobytes():
            h = ((h ^ b) * prime) & mask
    return h


def _expected(c):
    """Tensor names and shapes of rasp/rmodel.h for config c."""
    D, H, E, F = c["d_model"], c["n_heads"], c["d_head"], c["d_mlp"]
    t = {"tok_emb": (c["vocab_size"], D)}
    if c["pos_embedding"]:
        t["pos_emb"] = (c["max_len"], D)
    for L in range(c["n_layers"]):
        p = "layers.%d." % L
        if c["layer_norm"]:  # (1: layer norms, weight and bias; 2: RMS norms, weight)
            t[p + "ln1.weight"] = (D,)
            if c["layer_norm"] == 1:
                t[p + "ln1.bias"] = (D,)
        for w in ("w_q", "w_k", "w_v"):
            t[p + "attn." + w] = (H, D, E)
        for b in ("b_q", "b_k", "b_v"):
            t[p + "attn." + b] = (H, E)
        t[p + "attn.w_o"] = (H, E, D)
        t[p + "attn.b_o"] = (D,)
        if c["layer_norm"]:
            t[p + "ln2.weight"] = (D,)
            if c["layer_norm"] == 1:
                t[p + "ln2.bias"] = (D,)
        t[p + "mlp.w_in"] = (D, F)
        t[p + "mlp.b_in"] = (F,)
        t[p + "mlp.w_out"] = (F, D)
        t[p + "mlp.b_out"] = (D,)
    if c["layer_norm"]:
        t["ln_f.weight"] = (D,)
        if c["layer_norm"] == 1:
            t["ln_f.bias"] = (D,)
    t["unembed"] = (D, c["n_out"])
    t["unembed_b"] = (c["n_out"],)
    return t


def _read(stem):
    stem = _stem(stem)
    f, _ = _regular(stem + ".json", _MAXJSON)
    with f:
        meta = _json(f.read().decode("utf-8", "replace"), stem + ".json")
    cfg = meta.get("config") if isinstance(meta, dict) else None
    if not isinstance(cfg, dict):
        raise FormatError("%s.json: not a model config: no \"config\" object" % stem)
    # a field this loader does not know changes what the weights compute
    # (as norm_eps did), so a file from a newer rasp is refused, not misread
    for k in cfg:
        if k not in _CFG_FIELDS and k != "norm_eps":
            raise FormatError("%s.json: config field \"%.60s\" is not one this loader knows "
                              "(a newer rasp wrote the file?)" % (stem, k))
    for k in _CFG_FIELDS:
        if type(cfg.get(k)) is not int:
            raise FormatError("%s.json: config field \"%s\" is missing or not an integer"
                              % (stem, k))
    # the ranges rasp/rmodel.c holds a config to, before any size is used
    for k, lo in (("vocab_size", 1), ("max_len", 1), ("d_model", 1), ("n_layers", 0),
                  ("n_heads", 1), ("d_head", 1), ("d_mlp", 1), ("n_out", 1)):
        if not lo <= cfg[k] <= _MAXDIM:
            raise FormatError("%s.json: model config: %s = %d is out of range [%d, %d]"
                              % (stem, k, cfg[k], lo, _MAXDIM))
    if cfg["n_layers"] > _MAXLAYERS:
        raise FormatError("%s.json: model config: n_layers = %d is too large (at most %d)"
                          % (stem, cfg["n_layers"], _MAXLAYERS))
    eps = cfg.get("norm_eps", LN_EPS)
    if type(eps) not in (int, float) or not 0 < eps < 1e38:
        raise FormatError("%s.json: config field \"norm_eps\" = %r is not a positive number "
                          "below 1e38" % (stem, eps))
    if cfg["layer_norm"] not in (0, 1, 2):
        raise FormatError("%s.json: model config: layer_norm = %d must be 0 (none), 1 (pre-LN) "
                          "or 2 (pre-RMSNorm)" % (stem, cfg["layer_norm"]))
    for k in ("causal", "pos_embedding", "gelu"):
        if cfg[k] not in (0, 1):
            raise FormatError("%s.json: model config: %s = %d must be 0 or 1" % (stem, k, cfg[k]))
    if not -1 <= cfg["bos_token"] < cfg["vocab_size"]:
        raise FormatError("%s.json: model config: bos_token = %d is not -1 or a token id below "
                          "vocab_size %d" % (stem, cfg["bos_token"], cfg["vocab_size"]))
    expected = _expected(cfg)
    total = sum(int(np.prod(s, dtype=np.int64)) for s in expected.values())
    if total > _MAXPARAMS:
        raise FormatError("%s.json: a model of %d parameters is more than %d"
                          % (stem, total, _MAXPARAMS))
    fnv = meta.get("params_fnv")
    if fnv is not None and (not isinstance(fnv, str) or len(fnv) != 16 or
                            any(c not in "0123456789abcdefABCDEF" for c in fnv)):
        raise FormatError("%s.json: \"params_fnv\" is not 16 hex digits" % stem)
    tensors = read_safetensors(stem + ".safetensors", expected)
    if fnv is not None and _fnv1a(tensors[n] for n in expected) != int(fnv, 16):
        raise FormatError("%s.json and %s.safetensors are not one model: the parameters' "
                          "checksum differs from the one the config records" % (stem, stem))
    return cfg, meta.get("layout") or {}, tensors


class UnprovenModelWarning(UserWarning):
    """Warned by load() for a model its compile did not prove exact."""


class _Layout:
    """What STEM.json says about the model: vocabulary, dimensions, readout."""

    def _set_layout(self, cfg, layout, stem):
        self.config = dict(cfg)
        self.bos_token = cfg["bos_token"]
        self.n = layout.get("n", cfg["max_len"] - 1)
        dims = list(layout.get("dims", []))
        if len(dims) == cfg["d_model"] - 1 and dims[:1] == ["is_bos"] and "one" not in dims:
            dims.insert(1, "one")  # files written before dimension 1 was listed
        self.dims = dims
        self.units = layout.get("units", [])
        self.vocab = layout.get("vocab")
        self.values = list(layout.get("readout", {}).get("values", []))
        self._stem = stem
        # the symbols the model has input dimensions for ("tokens=SYM"); none
        # listed: the program does not read its tokens
        self._inputs = set(d[7:] for d in dims if d.startswith("tokens="))
        if "x" in self._inputs and "input_symbols" in layout:
            # numerical token ids (dims "tokens=x", "tokens=x^2"): the
            # compiled inputs are listed by symbol
            self._inputs = set(layout["input_symbols"])
        # a compiled pre-LN model (rasp compile --ln pre) is exact only in
        # rmodel.c's layer norm arithmetic (doc/compiler.md, "Pre-LN models")
        self._exact_ln = (cfg["layer_norm"] == 1 and (layout.get("layer_norm") or {})
                          .get("construction") == "exact identity")
        self._ids = {}
        for i, s in enumerate(self.vocab or []):
            if s and i != self.bos_token and s not in self._ids:
                self._ids[s] = i
        # layout.proof: whether the rounding proof covers the whole model
        # (None: a file from before it was recorded) and the premise it
        # rests on; a model compiled by size (`rasp compile --unproven`)
        # with a unit not proven is loaded with a warning
        proof = layout.get("proof")
        proof = proof if isinstance(proof, dict) else {}
        proven = proof.get("proven")
        self.proven = proven if isinstance(proven, bool) else None
        premise = proof.get("premise")
        self.premise = premise if isinstance(premise, str) else None
        # layout.arithmetic: the element types the model is exact in (a
        # quantized width needs float32's own rounding: ["float32"]); a
        # forward pass in another is refused (_check_dtype)
        arith = layout.get("arithmetic")
        self.arithmetic = (tuple(a for a in arith if isinstance(a, str))
                           if isinstance(arith, list) else None)
        # layout.attention.formulas: the score formulas the model is exact
        # under ("product_first"; "sdpa" where d_head^(-1/4) is a power of
        # two); None for files from before it was recorded
        att = layout.get("attention")
        forms = att.get("formulas") if isinstance(att, dict) else None
        self.formulas = (tuple(f for f in forms if isinstance(f, str))
                         if isinstance(forms, list) else None)
        self._attention = "product"
        if self.proven is False:
            first = proof.get("first_not_proven")
            warnings.warn("%s: the model is not proven exact (compiled with --unproven; the first "
                          "unit not proven: %s): its outputs may be wrong"
                          % (stem, first if isinstance(first, str) else "?"),
                          UnprovenModelWarning, stacklevel=4)
        # a model compiled for stock layer norms (`rasp compile --ln stock`)
        # runs them as torch.nn.LayerNorm (its eps in config.norm_eps); its
        # units are proven, its layer norms are not (layout.layer_norm)
        lnl = layout.get("layer_norm")
        if isinstance(lnl, dict) and lnl.get("proven") is False:
            warnings.warn("%s: the model's layer norms are not proven exact (construction %s): "
                          "its outputs may be wrong" % (stem, lnl.get("construction")),
                          UnprovenModelWarning, stacklevel=4)

    def encode(self, symbols):
        """Token ids of one input (a string of space-separated symbols or a
        list of symbols), BOS first: a list of n+1 ints."""
        if self.vocab is None:
            raise ValueError("%s.json has no vocabulary (a model compiled by an older rasp: "
                             "compile it again)" % self._stem)
        syms = symbols.split() if isinstance(symbols, str) else [str(s) for s in symbols]
        if len(syms) != self.n:
            raise ValueError("the model was compiled for inputs of %d symbols; the input has %d"
                             % (self.n, len(syms)))
        ids = [self.bos_token]
        for i, s in enumerate(syms):
            if s not in self._ids:
                raise ValueError("input symbol %r (position %d) is not in the model's vocabulary"
                                 % (s, i))
            if self._inputs and s not in self._inputs:
                raise ValueError("input symbol %r (position %d) is in the vocabulary but the "
                                 "model was not compiled with it as an input" % (s, i))
            ids.append(self._ids[s])
        return ids

    @property
    def attention(self):
        """The score formula the forward pass runs: "product" (q k^T, then
        1/sqrt(d_head), as rasp apply) or "sdpa" (PyTorch's
        scaled_dot_product_attention)."""
        return self._attention

    @attention.setter
    def attention(self, a):
        if a not in ATTENTIONS:
            raise ValueError("attention must be one of %s, not %r" % (", ".join(ATTENTIONS), a))
        if a == "sdpa" and "sdpa" not in (self.formulas or ()):
            raise ValueError("%s: the model is not exact under scaled_dot_product_attention: "
                             "STEM.json's layout.attention.formulas is %s, without \"sdpa\" "
                             "(d_head %d; compile it without --no-sdpa for d_head 1, 16 or 256)"
                             % (self._stem, list(self.formulas) if self.formulas is not None
                                else "missing", self.config["d_head"]))
        self._attention = a

    def _sdpa_scale(self):
        """PyTorch's q and k factor: sqrt(1/sqrt(d_head)) in double (as
        its calculate_scale(...).sqrt()), rounded to the tensors' type by
        the multiplication."""
        return math.sqrt(1 / math.sqrt(self.config["d_head"]))

    def _check_dtype(self, dtype):
        """Refuses a forward pass in an element type ("float64", ...) that
        STEM.json's layout.arithmetic does not list."""
        if self.arithmetic is not None and dtype not in self.arithmetic:
            raise TypeError("%s: the model is exact only in %s arithmetic (STEM.json "
                            "layout.arithmetic), not %s: run it in float32%s"
                            % (self._stem, " or ".join(self.arithmetic), dtype,
                               "" if len(self.arithmetic) > 1 else
                               " (its quantized widths need float32's own rounding)"))

    def trace(self, tokens):
        """The intermediates of forward(tokens) (a Trace; tensors that keep
        their graph for the torch backend)."""
        tr = Trace(self.dims, self.units, self._symbol)
        tr.logits = self._run(tokens, tr)
        return tr

    def _symbol(self, v):
        try:
            i = int(v)
        except ValueError:
            return v
        if str(i) == v and 0 < i < len(self.vocab or []) and self.vocab[i]:
            return self.vocab[i]
        return v

    def decode(self, ids, symbols=False):
        """Output values from readout indices (the argmax of the logits) of
        one sequence [n+1] or a batch [batch, n+1]; position 0 (BOS) is
        dropped.  symbols=True: values that are token ids become symbols."""
        if torch is not None and isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        ids = np.asarray(ids).tolist()
        if ids and not isinstance(ids[0], list):
            return self.decode([ids], symbols)[0]
        out = []
        for row in ids:
            if len(row) != self.n + 1:
                raise ValueError("decode: %d positions, the model has %d (BOS and %d inputs)"
                                 % (len(row), self.n + 1, self.n))
            vals = [self.values[int(j)] for j in row[1:]]
            out.append([self._symbol(v) for v in vals] if symbols else vals)
        return out


class Trace:
    """A forward pass's intermediates (m.trace(tokens)): `sites` (the names
    of the residual stream's states in order: "embed", then "layers.L.attn"
    and "layers.L.mlp" for every layer L), `residual` (site -> [batch, n+1,
    d_model]), `attention` (per layer, [batch, heads, n+1, n+1]: row q is
    query position q's weights over the keys), `logits`, and `dims` (the
    model's dimension names).  Arrays are numpy's for the numpy backend and
    tensors (with their graph) for torch's."""

    def __init__(self, dims, units=(), symbol=None):
        self.dims = dims
        self._units = {u.get("name"): u for u in units if isinstance(u, dict)}
        self._symbol = symbol  # a token id's text -> its symbol (_Layout._symbol)
        self._where = {}       # name -> its dimensions, from the labels (value())
        self.sites = []
        self.residual = {}
        self.attention = []
        self.logits = None

    def _keep(self, site, x):
        self.sites.append(site)
        self.residual[site] = x

    def value(self, name, site=None, batch=0):
        """The value of the program's sequence `name` at each input position
        (BOS dropped) of sequence `batch`, read off the residual stream after
        `site` (default: the last), as layout.units says the unit is
        encoded: a categorical value (dimensions "name=v") is the v of
        its largest dimension; a numerical one the number its first
        dimension holds: x for a number written with its square (dimensions
        "name=x", "name=x^2"), the mean for a mean, the encoded width for a
        width (1/(w+1), or 2^23 + q v/(w+1) when quantized).  Numerical
        tokens (ids written as x, x^2) read as their symbols, as
        categorical ones do.  A name the layout has no unit for is read by
        its dimensions' labels alone.  A dimension reused by several units
        (named "a | b") is read for whichever is asked; it holds that unit's
        value where the unit is live (between its writer and its last
        reader), which the site must be."""
        site = self.sites[-1] if site is None else site
        if site not in self.residual:
            raise KeyError("no site %r; the sites are %s" % (site, ", ".join(self.sites)))
        x = self.residual[site]
        if torch is not None and isinstance(x, torch.Tensor):
            x = x.detach().cpu().numpy()
        x = np.asarray(x)[batch, 1:]
        u = self._units.get(name)
        if u is not None and u.get("encoding", "categorical") != "categorical":
            col = [float(v) for v in x[:, int(u["dim"])]]
            if name == "tokens" and self._symbol:
                # a token's id, read to the nearest integer, names its symbol
                return [self._symbol(str(int(round(v)))) for v in col]
            return col
        if name not in self._where:
            cats, num = [], None
            for i, label in enumerate(self.dims):
                for part in label.split(" | "):
                    if part == name:
                        num = i
                    elif part.startswith(name + "="):
                        cats.append((i, part[len(name) + 1:]))
            self._where[name] = cats, num
        cats, num = self._where[name]
        if cats:
            idx = [i for i, _ in cats]
            best = x[:, idx].argmax(-1)
            return [cats[int(j)][1] for j in best]
        if num is not None:
            return [float(v) for v in x[:, num]]
        near = sorted(set(p.split("=")[0] for d in self.dims for p in d.split(" | ")))
        raise KeyError("no dimension holds %r; the model's values are %s" % (name, ", ".join(near)))


def value_text(values):
    """Trace.value's list as text, comparable across models: a number
    rounded to an integer ("-99", "3"), a categorical value as it is."""
    return [str(int(round(v))) if isinstance(v, float) else v for v in values]


def unit_site(unit):
    """The trace site just after the sublayer that writes a layout unit
    (an entry of layout.units): "embed" for an input, else
    "layers.L.attn" for a head and "layers.L.mlp" for an MLP."""
    if unit.get("layer", -1) < 0:
        return "embed"
    return "layers.%d.%s" % (unit["layer"], "attn" if unit["kind"] == "head" else "mlp")


def _batch(tokens):
    a = np.asarray(tokens, dtype=np.int64)
    return a[None] if a.ndim == 1 else a


def _exact_ln_np(x, w, b, eps):
    """rmodel.c's layer norm (raspN_layer_norm): mean and variance summed in
    float64 in index order (np.cumsum adds in order; np.sum pairs), eps,
    the reciprocal square root rounded to float32 once."""
    xd = x.astype(np.float64)
    mu = np.cumsum(xd, -1)[..., -1:] / x.shape[-1]
    dv = xd - mu
    var = np.cumsum(dv * dv, -1)[..., -1:] / x.shape[-1]
    rs = (1.0 / np.sqrt(var + eps)).astype(np.float32).astype(np.float64)
    return (dv * rs).astype(np.float32) * w + b


class NumpyModel(_Layout):
    """The forward pass of rasp/rmodel.h in numpy, float32."""

    def __init__(self, cfg, layout, tensors, stem):
        self._set_layout(cfg, layout, stem)
        self.params = {k: np.array(v, dtype=np.float32) for k, v in tensors.items()}

    def _ln(self, x, name):
        if self.config["layer_norm"] == 2:  # RMS norm, in x's own type
            ms = (x * x).mean(-1, keepdims=True)
            return x * (1 / np.sqrt(ms + x.dtype.type(RMS_EPS))) * self.params[name + ".weight"]
        if self._exact_ln:
            return _exact_ln_np(x, self.params[name + ".weight"], self.params[name + ".bias"],
                                _norm_eps(self.config))
        mu = x.mean(-1, keepdims=True, dtype=np.float64)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        y = ((x - mu) / np.sqrt(var + _norm_eps(self.config))).astype(np.float32)
        return y * self.params[name + ".weight"] + self.params[name + ".bias"]

    def forward(self, tokens):
        """Logits [batch, n, n_out] (float32) of token ids [batch, n] or [n]."""
        return self._run(tokens, None)

    def _run(self, tokens, tr):
        c, P = self.config, self.params
        t = _batch(tokens)
        if t.min() < 0 or t.max() >= c["vocab_size"] or not 1 <= t.shape[1] <= c["max_len"]:
            raise ValueError("forward: token ids must be in 0..%d and at most %d positions"
                             % (c["vocab_size"] - 1, c["max_len"]))
        self._check_dtype(str(P["tok_emb"].dtype))
        n = t.shape[1]
        x = P["tok_emb"][t]
        if c["pos_embedding"]:
            x = x + P["pos_emb"][:n]
        if tr:
            tr._keep("embed", x)
        keep = np.tril(np.ones((n, n), bool)) if c["causal"] else np.ones((n, n), bool)
        scale = np.float32(1 / math.sqrt(c["d_head"]))
        for L in range(c["n_layers"]):
            p = "layers.%d." % L
            h = self._ln(x, p + "ln1") if c["layer_norm"] else x
            q = np.einsum("bnd,hde->bhne", h, P[p + "attn.w_q"]) + P[p + "attn.b_q"][:, None]
            k = np.einsum("bnd,hde->bhne", h, P[p + "attn.w_k"]) + P[p + "attn.b_k"][:, None]
            v = np.einsum("bnd,hde->bhne", h, P[p + "attn.w_v"]) + P[p + "attn.b_v"][:, None]
            if self._attention == "sdpa":  # PyTorch's math path: q, k scaled first
                f = q.dtype.type(self._sdpa_scale())
                s = np.where(keep, (q * f) @ (k.transpose(0, 1, 3, 2) * f), -np.inf)
            else:
                s = np.where(keep, (q @ k.transpose(0, 1, 3, 2)) * scale, -np.inf)
            w = np.exp(s - s.max(-1, keepdims=True))
            w = w / w.sum(-1, keepdims=True)
            x = x + np.einsum("bhne,hed->bnd", w @ v, P[p + "attn.w_o"]) + P[p + "attn.b_o"]
            if tr:
                tr.attention.append(w)
                tr._keep(p + "attn", x)
            h = self._ln(x, p + "ln2") if c["layer_norm"] else x
            z = h @ P[p + "mlp.w_in"] + P[p + "mlp.b_in"]
            if c["gelu"]:
                z = 0.5 * z * (1 + np.tanh(np.float32(0.7978845608028654) * (z + 0.044715 * z ** 3)))
            else:
                z = np.maximum(z, 0)
            x = x + z @ P[p + "mlp.w_out"] + P[p + "mlp.b_out"]
            if tr:
                tr._keep(p + "mlp", x)
        h = self._ln(x, "ln_f") if c["layer_norm"] else x
        return (h @ P["unembed"] + P["unembed_b"]).astype(np.float32)

    __call__ = forward


if torch is not None:
    # PyTorch 2's attention function (None in torch 1.x)
    _SDPA = getattr(nn.functional, "scaled_dot_product_attention", None)

    class _Attn(nn.Module):
        def __init__(self, c):
            super().__init__()
            H, D, E = c["n_heads"], c["d_model"], c["d_head"]
            for w in ("w_q", "w_k", "w_v"):
                setattr(self, w, nn.Parameter(torch.zeros(H, D, E)))
            for b in ("b_q", "b_k", "b_v"):
                setattr(self, b, nn.Parameter(torch.zeros(H, E)))
            self.w_o = nn.Parameter(torch.zeros(H, E, D))
            self.b_o = nn.Parameter(torch.zeros(D))

    def attend(a, h, mask=None, scale=1.0, split=None):
        """One attention sublayer with the parameters of a (w_q, w_k, w_v
        [H, D, E], b_q, b_k, b_v [H, E], w_o [H, E, D]; an _Attn or any
        module with those names) on h [batch, n, D]: the heads' summed
        output before the bias b_o [batch, n, D] (the caller adds x + out +
        a.b_o, the order rasp apply sums in), and the pattern [batch, H, n,
        n].  Scores are (q k') scale, or with split the SDPA math path's
        (q split)(k' split); mask [n, n], True where attended, or None."""
        q = torch.einsum("bnd,hde->bhne", h, a.w_q) + a.b_q[:, None]
        k = torch.einsum("bnd,hde->bhne", h, a.w_k) + a.b_k[:, None]
        v = torch.einsum("bnd,hde->bhne", h, a.w_v) + a.b_v[:, None]
        if split is not None:
            s = (q * split) @ (k.transpose(-1, -2) * split)
        else:
            s = (q @ k.transpose(-1, -2)) * scale
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        w = torch.softmax(s, -1)
        return torch.einsum("bhne,hed->bnd", w @ v, a.w_o), w

    class _MLP(nn.Module):
        def __init__(self, c):
            super().__init__()
            D, F = c["d_model"], c["d_mlp"]
            self.w_in = nn.Parameter(torch.zeros(D, F))
            self.b_in = nn.Parameter(torch.zeros(F))
            self.w_out = nn.Parameter(torch.zeros(F, D))
            self.b_out = nn.Parameter(torch.zeros(D))

    class ExactLayerNorm(nn.LayerNorm):
        """torch.nn.LayerNorm (its weight, bias and eps) computed in
        rmodel.c's arithmetic: mean and variance summed in float64 in index
        order, the reciprocal square root rounded to float32 once.  A compiled
        pre-LN model's layer norms are exact in that arithmetic; the stock
        forward (float32 moments, in another order) is not: the model's
        constant dimensions are near 2^80, their squares past float32's
        range (doc/compiler.md, "Pre-LN models")."""

        def forward(self, x):
            D = x.shape[-1]
            xd = x.double()
            s = torch.zeros(x.shape[:-1], dtype=torch.float64, device=x.device)
            for i in range(D):
                s = s + xd[..., i]
            dv = xd - (s / D)[..., None]
            v = torch.zeros_like(s)
            for i in range(D):
                v = v + dv[..., i] * dv[..., i]
            rs = (1.0 / torch.sqrt(v / D + self.eps)).float().double()
            return (dv * rs[..., None]).float() * self.weight + self.bias

    class RMSNorm(nn.Module):
        """An RMS norm as LLaMA's and torch 2.4's nn.RMSNorm: x rsqrt(mean(x^2)
        + eps) weight, no mean subtracted, no bias, eps 1e-5, in x's own
        type and torch's own order.  A compiled pre-RMSNorm model (`rasp
        compile --ln rms`) is exact in this stock arithmetic, in any
        summation order (doc/compiler.md, "Pre-RMSNorm models")."""

        def __init__(self, d, eps=RMS_EPS):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))
            self.eps = eps

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    class _Block(nn.Module):
        def __init__(self, c, LN):
            super().__init__()
            if c["layer_norm"]:
                self.ln1 = LN(c["d_model"], eps=_norm_eps(c))
                self.ln2 = LN(c["d_model"], eps=_norm_eps(c))
            self.attn = _Attn(c)
            self.mlp = _MLP(c)

    class TorchModel(nn.Module, _Layout):
        """The transformer of rasp/rmodel.h as a PyTorch module."""

        def __init__(self, cfg, layout, tensors, stem):
            nn.Module.__init__(self)
            self._set_layout(cfg, layout, stem)
            c = cfg
            self.tok_emb = nn.Parameter(torch.zeros(c["vocab_size"], c["d_model"]))
            if c["pos_embedding"]:
                self.pos_emb = nn.Parameter(torch.zeros(c["max_len"], c["d_model"]))
            LN = (RMSNorm if c["layer_norm"] == 2 else ExactLayerNorm if self._exact_ln
                  else nn.LayerNorm)
            self.layers = nn.ModuleList(_Block(c, LN) for _ in range(c["n_layers"]))
            if c["layer_norm"]:
                self.ln_f = LN(c["d_model"], eps=_norm_eps(c))
            self.unembed = nn.Parameter(torch.zeros(c["d_model"], c["n_out"]))
            self.unembed_b = nn.Parameter(torch.zeros(c["n_out"]))
            self.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in tensors.items()})

        def forward(self, tokens):
            """Logits [batch, n, n_out] of token ids [batch, n] or [n]."""
            return self._run(tokens, None)

        def _run(self, tokens, tr):
            c = self.config
            t = torch.as_tensor(tokens, dtype=torch.long, device=self.tok_emb.device)
            if t.dim() == 1:
                t = t[None]
            dtype = str(self.tok_emb.dtype).replace("torch.", "")
            if self.tok_emb.is_cuda and torch.is_autocast_enabled():
                dtype = "autocast to " + str(torch.get_autocast_gpu_dtype()).replace("torch.", "")
            self._check_dtype(dtype)
            n = t.shape[1]
            x = self.tok_emb[t]
            if c["pos_embedding"]:
                x = x + self.pos_emb[:n]
            if tr:
                tr._keep("embed", x)
            mask = None
            if c["causal"]:
                mask = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
            scale = 1 / math.sqrt(c["d_head"])
            act = (lambda z: nn.functional.gelu(z, approximate="tanh")) if c["gelu"] else torch.relu
            for L, blk in enumerate(self.layers):
                a = blk.attn
                h = blk.ln1(x) if c["layer_norm"] else x
                if self._attention == "sdpa" and not tr and _SDPA is not None:
                    q = torch.einsum("bnd,hde->bhne", h, a.w_q) + a.b_q[:, None]
                    k = torch.einsum("bnd,hde->bhne", h, a.w_k) + a.b_k[:, None]
                    v = torch.einsum("bnd,hde->bhne", h, a.w_v) + a.b_v[:, None]
                    w, out = None, torch.einsum("bhne,hed->bnd", _SDPA(q, k, v, attn_mask=mask), a.w_o)
                else:  # the SDPA's math path written out, or the product
                    split = self._sdpa_scale() if self._attention == "sdpa" else None
                    out, w = attend(a, h, mask, scale, split)
                x = x + out + a.b_o
                if tr:
                    tr.attention.append(w)
                    tr._keep("layers.%d.attn" % L, x)
                h = blk.ln2(x) if c["layer_norm"] else x
                x = x + act(h @ blk.mlp.w_in + blk.mlp.b_in) @ blk.mlp.w_out + blk.mlp.b_out
                if tr:
                    tr._keep("layers.%d.mlp" % L, x)
            h = self.ln_f(x) if c["layer_norm"] else x
            return h @ self.unembed + self.unembed_b


def load(stem, backend="auto", attention="product"):
    """The model STEM.json + STEM.safetensors: a torch nn.Module when torch
    imports (backend "auto" or "torch"), else (or with backend "numpy") a
    NumpyModel with the same attributes and a numpy forward pass.
    attention "sdpa" runs the heads as scaled_dot_product_attention (refused
    for a model whose layout.attention.formulas does not list "sdpa")."""
    if backend not in ("auto", "torch", "numpy"):
        raise ValueError("backend must be auto, torch or numpy, not %r" % (backend,))
    if attention not in ATTENTIONS:
        raise ValueError("attention must be one of %s, not %r" % (", ".join(ATTENTIONS), attention))
    if backend == "torch" and torch is None:
        raise ImportError("backend torch: torch cannot be imported")
    cfg, layout, tensors = _read(stem)
    if torch is not None and backend != "numpy":
        m = TorchModel(cfg, layout, tensors, _stem(stem))
    else:
        m = NumpyModel(cfg, layout, tensors, _stem(stem))
    m.attention = attention
    return m
