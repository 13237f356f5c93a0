#!/usr/bin/env python3
"""A BERT-style encoder as an ONNX model, built with onnx.helper (no torch).

The graph has the shape torch.onnx.export / Hugging Face optimum emit for
``BertModel`` at opset 17, so it exercises what an exported transformer asks
of a runtime:

- inputs ``input_ids`` and ``attention_mask`` [batch, sequence] int64 (and
  ``token_type_ids`` with ``token_type_ids=True``; otherwise a zero buffer is
  sliced and expanded, as BERT does);
- embeddings: Gather from the word, position (a ``position_ids`` buffer
  sliced to the sequence length) and token-type tables, summed, LayerNorm;
- the extended mask ``(1 - mask[:, None, None, :]) * -10000`` (Unsqueeze,
  Cast, Sub, Mul);
- per layer: Q/K/V MatMul+Add, heads split by Reshape to a shape computed with
  Shape -> Gather -> Unsqueeze -> Concat, Transpose, MatMul, Div by
  sqrt(head_dim), Add mask, Softmax, MatMul, Transpose, Reshape back, output
  MatMul+Add, residual Add, LayerNorm; then MatMul+Add, GELU, MatMul+Add,
  residual Add, LayerNorm;
- GELU as exported from ``erf`` (Div by sqrt 2, Erf, Add 1, Mul, Mul 0.5) or
  the tanh approximation (Pow 3, Mul, Add, Mul, Tanh, Add 1, Mul, Mul 0.5);
- LayerNorm as the LayerNormalization op or decomposed (ReduceMean, Sub, Pow,
  ReduceMean, Add eps, Sqrt, Div, Mul, Add);
- output ``last_hidden_state`` [batch, sequence, hidden], and with
  ``pooler=True`` ``pooler_output`` [batch, hidden] (Gather token 0, Gemm,
  Tanh).

Weights are seeded: MatMul weights U with std 1/sqrt(fan_in), so attention
scores are O(1) and the softmax is neither uniform nor one-hot; biases
std 0.02; embeddings std 1; LayerNorm gamma U(0.8, 1.2), beta std 0.05.

Presets: ``tiny`` (2 layers, hidden 64, 4 heads, intermediate 256, vocab
1000) for tests, ``bert-base`` (12 layers, hidden 768, 12 heads, intermediate
3072, vocab 30522, 512 positions) for benchmarks.

CLI::

    python3 tests/models/make_encoder.py OUT.onnx [--preset tiny|bert-base]
        [--layer-norm decomposed|op] [--gelu erf|tanh] [--token-type-ids]
        [--pooler] [--seed S] [--check]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
MASK_FILL = -10000.0


@dataclasses.dataclass(frozen=True)
class EncoderConfig:
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    intermediate: int = 256
    vocab: int = 1000
    max_position: int = 128
    type_vocab: int = 2
    layer_norm: str = "decomposed"  # or "op": LayerNormalization
    gelu: str = "erf"  # or "tanh": the tanh approximation
    token_type_ids: bool = False  # a third input
    pooler: bool = False  # a second output, pooler_output
    eps: float = 1e-12
    seed: int = 0
    # What padded keys get: -10000 as BERT's original code (and old
    # transformers); current transformers use float32's lowest,
    # np.finfo(np.float32).min, which the fused attention skips exactly.
    mask_fill: float = MASK_FILL

    def __post_init__(self):
        if self.hidden % self.heads:
            raise ValueError(f"hidden {self.hidden} is not a multiple of heads {self.heads}")
        if self.layer_norm not in ("decomposed", "op"):
            raise ValueError(f"layer_norm must be 'decomposed' or 'op', not {self.layer_norm!r}")
        if self.gelu not in ("erf", "tanh"):
            raise ValueError(f"gelu must be 'erf' or 'tanh', not {self.gelu!r}")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


PRESETS = {
    "tiny": EncoderConfig(),
    "bert-base": EncoderConfig(layers=12, hidden=768, heads=12, intermediate=3072,
                               vocab=30522, max_position=512),
}


def preset(name: str, **overrides) -> EncoderConfig:
    """PRESETS[name] with some fields replaced (layer_norm='op', ...)."""
    return dataclasses.replace(PRESETS[name], **overrides)


# --------------------------------------------------------------------------
# graph building
# --------------------------------------------------------------------------

class _Builder:
    """Collects nodes and initializers; every node gets a unique output name."""

    def __init__(self, seed: int):
        self.nodes, self.initializers = [], []
        self._count = 0
        self._rng = np.random.default_rng(seed)

    def op(self, op_type: str, inputs, name: str = "", outputs=None, **attrs) -> str:
        """Adds a node; returns its (first) output name."""
        self._count += 1
        tag = name or f"/{op_type}_{self._count}"
        outputs = outputs or [f"{tag}_output_0"]
        self.nodes.append(helper.make_node(op_type, list(inputs), outputs, name=tag, **attrs))
        return outputs[0]

    def const(self, name: str, value, dtype=np.float32) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def int64(self, value) -> str:
        """An int64 constant with a generated name (shape-computation operands)."""
        self._count += 1
        return self.const(f"/Constant_{self._count}", value, np.int64)

    def random(self, name: str, shape, std: float) -> str:
        """A float initializer, mean 0 and std `std` (uniform, as torch inits)."""
        values = self._rng.random(shape, dtype=np.float32)
        values -= np.float32(0.5)
        values *= np.float32(2.0 * np.sqrt(3.0) * std)
        return self.const(name, values)

    def uniform(self, name: str, shape, low: float, high: float) -> str:
        return self.const(name, self._rng.uniform(low, high, size=shape))


def _dim(b: _Builder, x: str, index: int) -> str:
    """[x.shape[index]] as a 1-D int64 tensor: Shape -> Gather -> Unsqueeze."""
    scalar = b.op("Gather", [b.op("Shape", [x]), b.int64(index)], axis=0)
    return b.op("Unsqueeze", [scalar, b.int64([0])])


def _linear(b: _Builder, x: str, prefix: str, fan_in: int, fan_out: int) -> str:
    """MatMul with a [in, out] weight then Add bias, as exporters emit nn.Linear."""
    w = b.random(f"{prefix}.weight", (fan_in, fan_out), 1.0 / np.sqrt(fan_in))
    bias = b.random(f"{prefix}.bias", (fan_out,), 0.02)
    return b.op("Add", [b.op("MatMul", [x, w]), bias])


def _layer_norm(b: _Builder, cfg: EncoderConfig, x: str, prefix: str) -> str:
    gamma = b.uniform(f"{prefix}.weight", (cfg.hidden,), 0.8, 1.2)
    beta = b.random(f"{prefix}.bias", (cfg.hidden,), 0.05)
    if cfg.layer_norm == "op":
        return b.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=cfg.eps)
    mean = b.op("ReduceMean", [x], axes=[-1], keepdims=1)
    centered = b.op("Sub", [x, mean])
    square = b.op("Pow", [centered, b.const(f"{prefix}.two", 2.0)])
    variance = b.op("ReduceMean", [square], axes=[-1], keepdims=1)
    std = b.op("Sqrt", [b.op("Add", [variance, b.const(f"{prefix}.eps", cfg.eps)])])
    normed = b.op("Div", [centered, std])
    return b.op("Add", [b.op("Mul", [normed, gamma]), beta])


def _gelu(b: _Builder, cfg: EncoderConfig, x: str, prefix: str) -> str:
    one = b.const(f"{prefix}.one", 1.0)
    half = b.const(f"{prefix}.half", 0.5)
    if cfg.gelu == "erf":  # 0.5 x (1 + erf(x / sqrt 2))
        erf = b.op("Erf", [b.op("Div", [x, b.const(f"{prefix}.sqrt2", np.sqrt(2.0))])])
        return b.op("Mul", [b.op("Mul", [x, b.op("Add", [erf, one])]), half])
    # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
    cube = b.op("Pow", [x, b.const(f"{prefix}.three", 3.0)])
    inner = b.op("Add", [x, b.op("Mul", [cube, b.const(f"{prefix}.c", 0.044715)])])
    tanh = b.op("Tanh", [b.op("Mul", [inner, b.const(f"{prefix}.k", np.sqrt(2.0 / np.pi))])])
    return b.op("Mul", [b.op("Mul", [x, b.op("Add", [tanh, one])]), half])


def _split_heads(b: _Builder, cfg: EncoderConfig, x: str, prefix: str, perm) -> str:
    """[N, S, H] -> Reshape [N, S, heads, head_dim] -> Transpose(perm)."""
    shape = b.op("Concat", [_dim(b, x, 0), _dim(b, x, 1),
                            b.const(f"{prefix}.heads", [cfg.heads], np.int64),
                            b.const(f"{prefix}.head_dim", [cfg.head_dim], np.int64)], axis=0)
    return b.op("Transpose", [b.op("Reshape", [x, shape])], perm=list(perm))


def _merge_heads(b: _Builder, cfg: EncoderConfig, context: str, prefix: str) -> str:
    """[N, heads, S, head_dim] -> Transpose -> Reshape [N, S, hidden]."""
    t = b.op("Transpose", [context], perm=[0, 2, 1, 3])
    shape = b.op("Concat", [_dim(b, t, 0), _dim(b, t, 1),
                            b.const(f"{prefix}.all_head_size", [cfg.hidden], np.int64)], axis=0)
    return b.op("Reshape", [t, shape])


def _self_attention(b: _Builder, cfg: EncoderConfig, x: str, mask: str, prefix: str) -> str:
    h = cfg.hidden
    q = _split_heads(b, cfg, _linear(b, x, f"{prefix}.query", h, h), f"{prefix}.q", (0, 2, 1, 3))
    k = _split_heads(b, cfg, _linear(b, x, f"{prefix}.key", h, h), f"{prefix}.k", (0, 2, 1, 3))
    v = _split_heads(b, cfg, _linear(b, x, f"{prefix}.value", h, h), f"{prefix}.v", (0, 2, 1, 3))
    k_t = b.op("Transpose", [k], perm=[0, 1, 3, 2])  # key.transpose(-1, -2)
    scores = b.op("Div", [b.op("MatMul", [q, k_t]),
                          b.const(f"{prefix}.scale", np.sqrt(cfg.head_dim))])
    probs = b.op("Softmax", [b.op("Add", [scores, mask])], axis=-1)
    return _merge_heads(b, cfg, b.op("MatMul", [probs, v]), prefix)


def _layer(b: _Builder, cfg: EncoderConfig, x: str, mask: str, i: int) -> str:
    p = f"encoder.layer.{i}"
    context = _self_attention(b, cfg, x, mask, f"{p}.attention.self")
    attn = _linear(b, context, f"{p}.attention.output.dense", cfg.hidden, cfg.hidden)
    x = _layer_norm(b, cfg, b.op("Add", [attn, x]), f"{p}.attention.output.LayerNorm")
    inner = _gelu(b, cfg, _linear(b, x, f"{p}.intermediate.dense", cfg.hidden, cfg.intermediate),
                  f"{p}.intermediate.gelu")
    out = _linear(b, inner, f"{p}.output.dense", cfg.intermediate, cfg.hidden)
    return _layer_norm(b, cfg, b.op("Add", [out, x]), f"{p}.output.LayerNorm")


def _sliced_buffer(b: _Builder, name: str, values, seq_len: str) -> str:
    """buffer[:, :S] of a [1, max_position] int64 buffer, as BERT slices its
    position_ids / token_type_ids buffers."""
    buffer = b.const(name, values, np.int64)
    return b.op("Slice", [buffer, b.const(f"{name}.start", [0], np.int64), seq_len,
                          b.const(f"{name}.axis", [1], np.int64)])


def _embeddings(b: _Builder, cfg: EncoderConfig) -> str:
    p = "embeddings"
    words = b.op("Gather", [b.random(f"{p}.word_embeddings.weight", (cfg.vocab, cfg.hidden), 1.0),
                            "input_ids"], axis=0)
    seq_len = _dim(b, "input_ids", 1)
    positions = _sliced_buffer(b, f"{p}.position_ids", [np.arange(cfg.max_position)], seq_len)
    if cfg.token_type_ids:
        types = "token_type_ids"
    else:  # zeros buffer, sliced and expanded to [N, S]
        zeros = _sliced_buffer(b, f"{p}.token_type_ids", np.zeros((1, cfg.max_position)), seq_len)
        types = b.op("Expand", [zeros, b.op("Concat", [_dim(b, "input_ids", 0), seq_len], axis=0)])
    type_table = b.random(f"{p}.token_type_embeddings.weight", (cfg.type_vocab, cfg.hidden), 1.0)
    pos_table = b.random(f"{p}.position_embeddings.weight", (cfg.max_position, cfg.hidden), 1.0)
    summed = b.op("Add", [words, b.op("Gather", [type_table, types], axis=0)])
    summed = b.op("Add", [summed, b.op("Gather", [pos_table, positions], axis=0)])
    return _layer_norm(b, cfg, summed, f"{p}.LayerNorm")


def _extended_mask(b: _Builder, cfg: EncoderConfig) -> str:
    """(1 - mask[:, None, None, :]) * mask_fill as float: [N, 1, 1, S]."""
    unsqueezed = b.op("Unsqueeze", ["attention_mask", b.const("/mask_axes", [1, 2], np.int64)])
    as_float = b.op("Cast", [unsqueezed], to=TensorProto.FLOAT)
    inverted = b.op("Sub", [b.const("/mask_one", 1.0), as_float])
    return b.op("Mul", [inverted, b.const("/mask_fill", cfg.mask_fill)])


def _pooler(b: _Builder, cfg: EncoderConfig, hidden_states: str) -> str:
    first = b.op("Gather", [hidden_states, b.const("/cls_index", 0, np.int64)], axis=1)
    w = b.random("pooler.dense.weight", (cfg.hidden, cfg.hidden), 1.0 / np.sqrt(cfg.hidden))
    bias = b.random("pooler.dense.bias", (cfg.hidden,), 0.02)
    dense = b.op("Gemm", [first, w, bias], transB=1)
    return b.op("Tanh", [dense], outputs=["pooler_output"])


def _signature(cfg: EncoderConfig):
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if cfg.token_type_ids else [])
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
              for n in names]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                             ["batch", "sequence", cfg.hidden])]
    if cfg.pooler:
        outputs.append(helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT,
                                                     ["batch", cfg.hidden]))
    return inputs, outputs


def make_encoder(cfg: EncoderConfig = PRESETS["tiny"]) -> onnx.ModelProto:
    """The encoder model for `cfg`, checked with onnx.checker."""
    b = _Builder(cfg.seed)
    x = _embeddings(b, cfg)
    mask = _extended_mask(b, cfg)
    for i in range(cfg.layers):
        x = _layer(b, cfg, x, mask, i)
    b.op("Identity", [x], outputs=["last_hidden_state"])
    if cfg.pooler:
        _pooler(b, cfg, "last_hidden_state")
    inputs, outputs = _signature(cfg)
    graph = helper.make_graph(b.nodes, "bert_encoder", inputs, outputs, b.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", OPSET)],
                              producer_name="coalesce-tests")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


# --------------------------------------------------------------------------
# inputs and a check run
# --------------------------------------------------------------------------

def encoder_inputs(cfg: EncoderConfig, batch: int, seq: int, seed: int = 0,
                   padded: bool = True) -> dict:
    """Random token ids and an attention mask. With `padded`, sample i of a
    batch of more than one keeps only its first seq - i * seq // (2 batch)
    tokens (at least one), so different rows have different padding, as a
    padded batch of sentences does."""
    rng = np.random.default_rng(seed)
    feeds = {"input_ids": rng.integers(0, cfg.vocab, size=(batch, seq), dtype=np.int64),
             "attention_mask": np.ones((batch, seq), dtype=np.int64)}
    if padded:
        for i in range(batch):
            keep = max(1, seq - (i + 1) * seq // (2 * batch))
            feeds["attention_mask"][i, keep:] = 0
            feeds["input_ids"][i, keep:] = 0  # BERT's [PAD]
    if cfg.token_type_ids:
        feeds["token_type_ids"] = (np.arange(seq)[None, :] >= seq // 2).astype(np.int64).repeat(batch, 0)
    return feeds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output", help="where to write the model")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--layer-norm", choices=["decomposed", "op"], default="decomposed")
    ap.add_argument("--gelu", choices=["erf", "tanh"], default="erf")
    ap.add_argument("--token-type-ids", action="store_true")
    ap.add_argument("--pooler", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mask-fill", choices=["-10000", "lowest"], default="-10000",
                    help="what padded keys get: -10000 (BERT's original) or float32's lowest "
                         "(current transformers)")
    ap.add_argument("--check", action="store_true", help="run it once in onnxruntime (batch 2, seq 16)")
    args = ap.parse_args(argv)
    cfg = preset(args.preset, layer_norm=args.layer_norm, gelu=args.gelu,
                 token_type_ids=args.token_type_ids, pooler=args.pooler, seed=args.seed,
                 mask_fill=(float(np.finfo(np.float32).min) if args.mask_fill == "lowest"
                            else MASK_FILL))
    model = make_encoder(cfg)
    onnx.save(model, args.output)
    print(f"wrote {args.output} ({model.ByteSize() / 1e6:.1f} MB, {len(model.graph.node)} nodes)")
    if args.check:
        import runners  # tests/models, beside this file
        for name, v in runners.run_onnxruntime(model, encoder_inputs(cfg, 2, 16)).items():
            print(f"  {name} {list(v.shape)}: min {v.min():.4g} max {v.max():.4g} std {v.std():.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
