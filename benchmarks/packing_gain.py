#!/usr/bin/env python3
"""What packing variable-length BERT requests would save (issue 27): a count,
not a timing.

The dynamic batcher only batches requests of one shape, so clients pad BERT
inputs to the model's sequence length S and mark padding with
attention_mask = 0. A batch of B requests with real lengths L_1..L_B is then
run in one of three ways; this script counts the work of one encoder forward
for each:

  padded, dense        every sequence is S tokens; attention is S x S;
  padded, skip         what the engine does today: every GEMM, LayerNorm, ...
                       runs on all B*S tokens, but the fused attention stops
                       at each sequence's last unmasked key: S x L_i;
  packed               MLPerf BERT style: the padding is removed, the GEMMs
                       run on sum(L_i) tokens and attention is L_i x L_i per
                       sequence (a variable-length attention kernel).

Model: matmul FLOPs per encoder layer (2 FLOPs per multiply-add), hidden H,
FFN width F, T tokens going through the GEMMs:

  QKV projection      2 * T * H * 3H   = 6 T H^2
  output projection   2 * T * H * H    = 2 T H^2
  FFN, two GEMMs      2 * T * H * F * 2 = 4 T H F
  attention           per sequence, summed over the heads (head width H/A,
                      so the head count A drops out): Q K^T is
                      2 * Lq * Lk * H and P V is another 2 * Lq * Lk * H,
                      4 H Lq Lk in all,

times the layer count. (Lq, Lk) is (S, S) dense, (S, L_i) skip, (L_i, L_i)
packed. Not counted: the embeddings and the task head (once per model, not
per layer: under 1% of bert-base's FLOPs), bias adds (fused into the GEMMs),
softmax (A * Lq * Lk exponentials, no matmul).

The rest of the per-token work (LayerNorm, GELU, residual adds) does few
FLOPs and is bound by memory traffic; it is modelled as bytes per token per
layer, with E bytes per element (--bytes-per-element, 2 for fp16):

  2 LayerNorms        read H, write H each   4H elements
  2 residual adds     read 2H, write H each  6H elements
  GELU                read F, write F        2F elements
                                             (10H + 2F) * E bytes

Both padded variants touch all B*S tokens, so their bytes ratio to packed
is B*S / sum(L_i): the token ratio. The weights (read once per layer
whatever the token count) are left out of it; at small batches, where the
GEMMs read more weight than activation bytes, that makes the bytes ratio an
upper bound.

Each reported gain is padded / packed (above 1: packing does less work), per
(S, B, distribution) over --batches batches of B lengths drawn independently
(the batcher fills a batch from whatever requests arrive): mean, p5, p95.
"skip / packed" is what packing would add to the engine as it is.

Distributions (--distribution):
  uniform   L uniform on the integers [--min-length, S];
  squad     an ASSUMPTION meant to look like MLPerf BERT's SQuAD v1.1 dev
            set at S=384 (max_query_length 64, doc_stride 128). Known: the
            set has 10,570 questions, and MLPerf's loadgen config counts
            10,833 samples (mlperf.conf, bert performance_sample_count in
            mlcommons/inference), so 263 questions have a context longer
            than one window and their first window is a full 384 tokens.
            Not found in any reference: the shape of the other lengths. This
            takes them as a lognormal with median SQUAD_MEDIAN = 165 tokens
            and sigma SQUAD_SIGMA = 0.35 (mean about 175: a question of
            about 13 word pieces, a context of about 160, 3 special tokens),
            rounded and clipped to [SQUAD_MIN = 32, 384], plus a point mass
            of SQUAD_FULL_FRACTION = 263/10833 at 384. That is a fill of
            about 47% at S=384, in line with the "up to 50% padding" Krell
            et al. (arXiv 2107.02027) report for common NLP datasets. At
            S < 384 each length is clipped to S (a context re-windowed at S
            gives a full first window; the shorter continuation windows are
            ignored). For the real numbers, write the lengths of MLPerf's
            features (sum of each input_mask) to a file and use `file`;
  file      --lengths-file: one length per line (blank lines and lines
            starting with # skipped); lengths above S are clipped to S and
            the clipped fraction is reported in the JSON.

Output: a Markdown table on stdout; with --json FILE, every number as JSON.

Usage: python3 benchmarks/packing_gain.py [--distribution uniform|squad|file]
           [--seq-lengths 128,384] [--batch-sizes 8,32,128,256]
           [--batches 1000] [--seed 0] [--min-length 8] [--lengths-file F]
           [--hidden 768] [--layers 12] [--heads 12] [--ffn 3072]
           [--bytes-per-element 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

SQUAD_MAX = 384
SQUAD_MIN = 32
SQUAD_MEDIAN = 165.0
SQUAD_SIGMA = 0.35
SQUAD_FULL_FRACTION = (10833 - 10570) / 10833


@dataclass(frozen=True)
class Model:
    hidden: int = 768
    layers: int = 12
    heads: int = 12
    ffn: int = 3072
    bytes_per_element: int = 2


def gemm_flops_per_token(m: Model) -> int:
    """Matmul FLOPs of one token through one layer's GEMMs: QKV, output
    projection, the two FFN GEMMs."""
    h, f = m.hidden, m.ffn
    return 2 * h * 3 * h + 2 * h * h + 2 * h * f + 2 * f * h


def attention_flops(m: Model, query_keys) -> np.ndarray:
    """Matmul FLOPs of one layer's attention (Q K^T and P V, all heads) given
    sum over sequences of Lq * Lk (a scalar or an array of them)."""
    return 4 * m.hidden * np.asarray(query_keys, dtype=np.int64)


def elementwise_bytes_per_token(m: Model) -> int:
    """Bytes one token moves per layer through LayerNorm x2, residual add x2
    and GELU (the module docstring's table)."""
    return (10 * m.hidden + 2 * m.ffn) * m.bytes_per_element


def batch_costs(m: Model, seq_len: int, lengths) -> dict[str, np.ndarray]:
    """FLOPs and bytes of one encoder forward for each batch.

    lengths: an int array (..., B) of real lengths, each in [1, seq_len].
    Returns arrays over the leading axes: flops_dense, flops_skip,
    flops_packed, bytes_padded, bytes_packed."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size and (lengths.min() < 1 or lengths.max() > seq_len):
        raise ValueError(f"lengths must lie in [1, {seq_len}]")
    batch = lengths.shape[-1]
    padded_tokens = np.int64(batch * seq_len)
    packed_tokens = lengths.sum(axis=-1)
    per_token = gemm_flops_per_token(m)
    dense = padded_tokens * per_token + attention_flops(m, batch * seq_len * seq_len)
    skip = padded_tokens * per_token + attention_flops(m, seq_len * packed_tokens)
    packed = packed_tokens * per_token + attention_flops(m, (lengths * lengths).sum(axis=-1))
    bytes_token = elementwise_bytes_per_token(m)
    return {
        "flops_dense": m.layers * np.broadcast_to(dense, packed_tokens.shape),
        "flops_skip": m.layers * skip,
        "flops_packed": m.layers * packed,
        "bytes_padded": m.layers * bytes_token * np.broadcast_to(padded_tokens, packed_tokens.shape),
        "bytes_packed": m.layers * bytes_token * packed_tokens,
    }


def sample_lengths(rng: np.random.Generator, distribution: str, seq_len: int,
                   shape: tuple[int, ...], min_length: int = 8,
                   pool: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Draws lengths of the given shape; returns them and the fraction that
    was clipped to seq_len (0 for uniform)."""
    if distribution == "uniform":
        if not 1 <= min_length <= seq_len:
            raise ValueError(f"--min-length {min_length} is not in [1, {seq_len}]")
        return rng.integers(min_length, seq_len, size=shape, endpoint=True), 0.0
    if distribution == "squad":
        body = np.rint(rng.lognormal(np.log(SQUAD_MEDIAN), SQUAD_SIGMA, size=shape))
        body = np.clip(body, SQUAD_MIN, SQUAD_MAX).astype(np.int64)
        full = rng.random(size=shape) < SQUAD_FULL_FRACTION
        raw = np.where(full, SQUAD_MAX, body)
    elif distribution == "file":
        if pool is None or pool.size == 0:
            raise ValueError("the file distribution needs a non-empty --lengths-file")
        raw = rng.choice(pool, size=shape, replace=True)
    else:
        raise ValueError(f"unknown distribution {distribution!r}")
    return np.minimum(raw, seq_len), float(np.mean(raw > seq_len))


def read_lengths_file(path: Path) -> np.ndarray:
    values = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        value = int(line)
        if value < 1:
            raise ValueError(f"{path}:{number}: length {value} is below 1")
        values.append(value)
    return np.asarray(values, dtype=np.int64)


def summary(values: np.ndarray) -> dict[str, float]:
    return {"mean": float(np.mean(values)), "p5": float(np.percentile(values, 5)),
            "p95": float(np.percentile(values, 95))}


def measure(m: Model, distribution: str, seq_len: int, batch: int, batches: int,
            seed: int, min_length: int = 8, pool: np.ndarray | None = None) -> dict:
    """One table row: the gains over `batches` sampled batches. The RNG is
    seeded from (seed, S, B), so a row does not depend on the other rows."""
    rng = np.random.default_rng([seed, seq_len, batch])
    lengths, clipped = sample_lengths(rng, distribution, seq_len, (batches, batch),
                                      min_length, pool)
    c = batch_costs(m, seq_len, lengths)
    return {
        "seq_len": seq_len, "batch": batch, "distribution": distribution,
        "batches": batches, "clipped_fraction": clipped,
        "mean_length": float(lengths.mean()),
        "fill": summary(lengths.sum(axis=-1) / (batch * seq_len)),
        "bytes_padded_over_packed": summary(c["bytes_padded"] / c["bytes_packed"]),
        "flops_dense_over_packed": summary(c["flops_dense"] / c["flops_packed"]),
        "flops_skip_over_packed": summary(c["flops_skip"] / c["flops_packed"]),
        "flops_dense_over_skip": summary(c["flops_dense"] / c["flops_skip"]),
        "attention_share_of_skip": summary(
            m.layers * attention_flops(m, seq_len * lengths.sum(axis=-1)) / c["flops_skip"]),
        "mean_gflops": {k: float(np.mean(c[f"flops_{k}"])) / 1e9
                        for k in ("dense", "skip", "packed")},
    }


def markdown(rows: list[dict], m: Model) -> str:
    def cell(s: dict) -> str:
        return f"{s['mean']:.2f} [{s['p5']:.2f}, {s['p95']:.2f}]"

    out = [f"Model: hidden {m.hidden}, {m.layers} layers, {m.heads} heads, FFN {m.ffn}; "
           f"GEMM FLOPs/token/layer {gemm_flops_per_token(m):,}; elementwise bytes/token/layer "
           f"{elementwise_bytes_per_token(m):,}. Gains are padded / packed, "
           "mean [p5, p95] over the sampled batches.", "",
           "| S | B | distribution | mean L | fill | bytes (tokens) | FLOPs dense/packed "
           "| FLOPs skip/packed | attn share (skip) | GFLOPs skip → packed |",
           "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        g = r["mean_gflops"]
        out.append(f"| {r['seq_len']} | {r['batch']} | {r['distribution']} "
                   f"| {r['mean_length']:.1f} | {r['fill']['mean']:.1%} "
                   f"| {cell(r['bytes_padded_over_packed'])} "
                   f"| {cell(r['flops_dense_over_packed'])} "
                   f"| {cell(r['flops_skip_over_packed'])} "
                   f"| {r['attention_share_of_skip']['mean']:.1%} "
                   f"| {g['skip']:.0f} → {g['packed']:.0f} |")
    return "\n".join(out)


def int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--distribution", choices=("uniform", "squad", "file"), default="uniform")
    p.add_argument("--seq-lengths", type=int_list, default=[128, 384])
    p.add_argument("--batch-sizes", type=int_list, default=[8, 32, 128, 256])
    p.add_argument("--batches", type=int, default=1000, help="sampled batches per row")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--min-length", type=int, default=8, help="uniform's lowest length")
    p.add_argument("--lengths-file", type=Path, help="file's lengths, one a line")
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ffn", type=int, default=3072)
    p.add_argument("--bytes-per-element", type=int, default=2)
    p.add_argument("--json", type=Path, help="also write every number here")
    a = p.parse_args(argv)
    if a.hidden % a.heads:
        p.error("--hidden must be a multiple of --heads")
    if a.batches < 1 or min(a.batch_sizes) < 1 or min(a.seq_lengths) < 1:
        p.error("--batches, --batch-sizes and --seq-lengths must be positive")
    pool = None
    if a.distribution == "file":
        if a.lengths_file is None:
            p.error("--distribution file needs --lengths-file")
        pool = read_lengths_file(a.lengths_file)
    m = Model(a.hidden, a.layers, a.heads, a.ffn, a.bytes_per_element)
    try:
        rows = [measure(m, a.distribution, s, b, a.batches, a.seed, a.min_length, pool)
                for s in a.seq_lengths for b in a.batch_sizes]
    except ValueError as e:
        p.error(str(e))
    print(markdown(rows, m))
    if a.json:
        config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()}
        a.json.write_text(json.dumps({"model": asdict(m), "args": config, "rows": rows},
                                     indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
