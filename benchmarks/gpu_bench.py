#!/usr/bin/env python3
"""The GPU benchmark, run by scripts/gpu-check inside an unpacked bundle.

1. Engine only: the MLP example (1024-2048-2048-1000) and a dense model with
   4096-wide layers (4096-4096-4096-4096-1000, Relu, Softmax) at batch
   1..512, ResNet-50 (torchvision's, random weights, exported here; when
   torchvision is installed) and the bert-base encoder (sequence 128) at
   batch 1..256, through `coalesce-onnx-run --device gpu` (one GPU instance
   built as the server builds it; each run host to host: inputs copied in,
   computed, outputs copied out, timed with steady_clock, median of the
   timed runs after warm-up), in FP32, TF32 and FP16. Outputs are checked against
   onnxruntime (CPU) when it is installed. Beside it, when PyTorch with CUDA
   is installed, the same model in PyTorch on the same GPU (the dense models
   rebuilt from their weights, torchvision's ResNet-50), FP32 with TF32 off,
   also host to host: eager, and replaying a CUDA graph captured per batch
   size; for FP16, under torch.autocast(float16), which like Coalesce's FP16
   mode runs the products on float16 operands and keeps float32 elsewhere.
2. Server end to end: coalesce-server with mlp_classifier on KIND_GPU in four
   configurations (dynamic batching on/off x double buffering on/off),
   coalesce-bench closed loop at concurrency 1, 16, 64 and 256 each, with
   the GPU's busy fraction over each level sampled by nvidia-smi (NVML's
   utilization.gpu, every 100 ms).

3. With --cnn, that section alone (issue 26, CNNs in FP16, NHWC, fused):
   torchvision's ResNet-50, EfficientNet-B0 and MobileNetV3-Large (random
   weights, exported here) at batch 1..256, Coalesce FP32, TF32, FP16
   (default layout, NHWC) and FP16 with --gpu-layout nchw, against PyTorch
   FP32 (eager, CUDA graph), FP16 autocast (eager, CUDA graph), the best
   plain PyTorch (channels_last + autocast + CUDA graph) in FP16 and BF16;
   the ratios, images/s and the issue's targets (PASS/MISSED), outputs
   against onnxruntime, and each model's FP16 --device-plan at batch 32
   written beside --out (cnn-plan-<model>-fp16-b32.txt).

Writes the tables as Markdown to --out (default ./gpu-bench.md) and prints
them. Exit 0 when every run succeeded and every checked output matched, 1
otherwise.

4. With --cold-start, issue 28's served table (cold_start.py): each case
   from a cold server per precision and concurrency.

Usage: python3 gpu_bench.py [--bundle DIR] [--out FILE] [--quick]
       python3 gpu_bench.py --cnn --quick [--batches B,...] [--deadline-s S]
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DENSE_BATCHES = [1, 8, 32, 128, 512]
NET_BATCHES = [1, 8, 32, 128, 256]
CONCURRENCY = [1, 16, 64, 256]


def dense_model(widths: list[int], seed: int = 0) -> onnx.ModelProto:
    """Gemm (transB, as PyTorch exports Linear) + Relu per layer, Softmax last."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    x = "input"
    for i, (fan_in, fan_out) in enumerate(zip(widths, widths[1:])):
        w = (rng.standard_normal((fan_out, fan_in)) / np.sqrt(fan_in)).astype(np.float32)
        b = (0.01 * rng.standard_normal(fan_out)).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        y = f"h{i}"
        nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [y], transB=1))
        if i < len(widths) - 2:
            nodes.append(helper.make_node("Relu", [y], [y + "_relu"]))
            y += "_relu"
        x = y
    nodes.append(helper.make_node("Softmax", [x], ["probabilities"], axis=-1))
    graph = helper.make_graph(
        nodes, "dense",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", widths[0]])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", widths[-1]])],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# -- engine only ------------------------------------------------------------

def cell(text: str) -> str:
    """`text` fit for one Markdown table cell."""
    return " ".join(text.split()).replace("|", "/")[-300:]


@dataclasses.dataclass
class ModelCase:
    name: str
    path: Path
    batches: list
    feeds: Callable  # batch -> {input name: array}
    torch_module: Callable | None = None  # () -> (module, feeds -> torch args)
    why_no_torch: str = ""


def onnx_run_command(bundle: Path, model: Path, feeds: dict, work: Path, repeat: int,
                     warmup: int, precision: str, graphs: bool = True,
                     extra: tuple = ()) -> list:
    """coalesce-onnx-run on the GPU with `feeds` written under `work`: outputs
    to work/out, timings to work/timing.json; `extra` flags last."""
    inputs = []
    for i, (name, x) in enumerate(feeds.items()):
        f = work / f"in{i}.pb"
        f.write_bytes(numpy_helper.from_array(x, name).SerializeToString())
        inputs += ["--input", f"{name}={f}"]
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    return [str(bundle / "bin" / "coalesce-onnx-run"), "--device", "gpu", "--gpu-precision",
            precision, "--device-graphs", "on" if graphs else "off",
            "--model", str(model), *inputs, "--output-dir", str(out),
            "--warmup", str(warmup), "--repeat", str(repeat),
            "--timing-json", str(work / "timing.json"), *extra]


def run_coalesce(bundle: Path, model: Path, feeds: dict, work: Path, repeat: int,
                 warmup: int, precision: str, graphs: bool = True, extra: tuple = (),
                 stdout_to: Path | None = None, env: dict | None = None,
                 stderr_lines: list | None = None) -> tuple[float, list]:
    """(median ms, outputs) of coalesce-onnx-run, with `env` added to its
    environment; its stdout also written to `stdout_to` when given (with
    --device-plan in `extra`: the plan), its stderr's lines appended to
    `stderr_lines` when given."""
    cmd = onnx_run_command(bundle, model, feeds, work, repeat, warmup, precision, graphs, extra)
    out, timing = work / "out", work / "timing.json"
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, **(env or {})})
    if stderr_lines is not None:
        stderr_lines += proc.stderr.splitlines()
    if stdout_to is not None:
        stdout_to.write_text(f"$ coalesce-onnx-run {' '.join(cmd[1:])}\n\n"
                             f"{proc.stdout}{proc.stderr}")
    if proc.returncode != 0:
        raise RuntimeError(f"coalesce-onnx-run exited {proc.returncode}: {proc.stderr[-2000:]}")
    names = [o.name for o in onnx.load(str(model), load_external_data=False).graph.output]
    outputs = [numpy_helper.to_array(onnx.load_tensor(str(out / f"{re.sub(r'[^A-Za-z0-9._-]', '_', n)}.pb")))
               for n in names]
    return json.loads(timing.read_text())["median_ms"], outputs


def sdpa_cell(ms: float, stderr_lines: list) -> str:
    """A run's time with COALESCE_CUDNN_SDPA=1 and what cuDNN took: the
    attention shapes it ran and those it refused (engine/cuda/cudnn_sdpa.h's
    lines; the refusals printed to the log)."""
    ran = sum(1 for line in stderr_lines if line.startswith("coalesce: cuDNN SDPA runs"))
    refused = [line for line in stderr_lines
               if line.startswith(("coalesce: cuDNN SDPA not used",
                                   "coalesce: cuDNN SDPA unavailable"))]
    for line in refused:
        print(line, flush=True)
    return f"{ms:.3f} ({ran} ran, {len(refused)} refused)"


def onnxruntime_outputs(model: Path, feeds: dict):
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


class DenseTorch:
    """A dense ONNX model's Gemm/Relu/Softmax chain as a PyTorch module."""

    def __init__(self, model: onnx.ModelProto):
        import torch
        self.torch = torch
        self.params = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()).cuda()
                       for t in model.graph.initializer}
        self.nodes = [(n.op_type, list(n.input)) for n in model.graph.node]

    def __call__(self, x):
        F = self.torch.nn.functional
        for op, inputs in self.nodes:
            if op == "Gemm":
                x = F.linear(x, self.params[inputs[1]], self.params[inputs[2]])
            elif op == "Relu":
                x = F.relu(x)
            elif op == "Softmax":
                x = F.softmax(x, dim=-1)
            else:
                raise ValueError(f"no PyTorch mapping for {op}")
        return x


def torch_time_ms(module, args_host: list, repeat: int, warmup: int, graph: bool,
                  fp16: bool = False, dtype=None, channels_last: bool = False) -> float:
    """Host to host, as coalesce-onnx-run: pinned inputs copied in, forward,
    the output copied back to pinned memory, synchronized. fp16: under
    autocast to float16 (its weight cache off, as graph capture needs);
    dtype: autocast to that dtype instead (torch.bfloat16, say).
    channels_last: the 4-D inputs' device buffers in channels_last (the
    host arrays stay NCHW: the copy in converts them on the GPU), for a
    module already moved to channels_last."""
    import contextlib
    import torch
    if fp16:
        dtype = torch.float16
    pinned = [torch.from_numpy(a).pin_memory() for a in args_host]
    autocast = (torch.autocast("cuda", dtype=dtype, cache_enabled=False) if dtype is not None
                else contextlib.nullcontext())
    with torch.inference_mode(), autocast:
        static = [p.cuda() for p in pinned]
        if channels_last:
            static = [s.contiguous(memory_format=torch.channels_last) if s.dim() == 4 else s
                      for s in static]
        out0 = module(*static)
        pinned_out = torch.empty(out0.shape, dtype=out0.dtype).pin_memory()
        g = None
        if graph:
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(3):
                    module(*static)
            torch.cuda.current_stream().wait_stream(stream)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                static_out = module(*static)

        def once():
            for s, p in zip(static, pinned):
                s.copy_(p, non_blocking=True)
            if g is not None:
                g.replay()
                out = static_out
            else:
                out = module(*static)
            pinned_out.copy_(out, non_blocking=True)
            torch.cuda.synchronize()

        for _ in range(warmup):
            once()
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            once()
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def torch_status() -> str:
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "PyTorch has no CUDA device"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return ""


def dense_case(name: str, path: Path, batches: list) -> ModelCase:
    proto = onnx.load(str(path))
    width = proto.graph.input[0].type.tensor_type.shape.dim[1].dim_value
    rng = np.random.default_rng(1)
    return ModelCase(name, path, batches,
                     lambda b: {"input": rng.standard_normal((b, width)).astype(np.float32)},
                     lambda: DenseTorch(proto))


def calibrate_batch_norm(model, batch: int = 32, seed: int = 1):
    """Sets every BatchNorm's running statistics to those of one batch of
    random images through the model (the rest of it in eval mode), so that
    a randomly initialized network keeps its activations near unit scale
    (default statistics, mean 0 and variance 1, let them vanish or grow
    layer by layer: EfficientNet's depthwise convolutions shrink them)."""
    import torch
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    model.eval()
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: after one batch, its statistics
        m.train()
    with torch.no_grad():
        model(torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(seed)))
    model.eval()


def torchvision_case(name: str, work: Path, batches: list,
                     calibrate: bool = False) -> ModelCase | None:
    """torchvision.models.<name>, random weights (seed 0; calibrate: its
    BatchNorm statistics from one random batch; zero-initialized dense
    layers made random, randomize_zero_linears), exported on the CPU with
    the TorchScript exporter at opset 17 with a dynamic batch; random normal
    images; None without torchvision."""
    try:
        import torch
        import torchvision
    except ImportError:
        return None
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    randomize_zero_linears(model)
    if calibrate:
        calibrate_batch_norm(model)
    path = work / f"{name}.onnx"
    torch.onnx.export(model, torch.randn(1, 3, 224, 224), str(path), opset_version=17,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)
    rng = np.random.default_rng(2)
    return ModelCase(name, path, batches,
                     lambda b: {"input": rng.standard_normal((b, 3, 224, 224)).astype(np.float32)},
                     lambda: model.cuda())


def randomize_zero_linears(model) -> None:
    """torchvision zero-initializes ViT's classifier (heads.head): its logits
    are then 0 whatever the encoder computes, and the check against
    onnxruntime cannot fail (it read 0 in every run before this). Each dense
    layer whose weights are all zero gets normal ones (std 0.02, the
    encoder's own init scale), and its bias too."""
    import torch
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Linear) and not bool(m.weight.any()):
                torch.nn.init.normal_(m.weight, std=0.02)
                if m.bias is not None:
                    torch.nn.init.normal_(m.bias, std=0.02)


def resnet50_case(work: Path, batches: list) -> ModelCase | None:
    """torchvision's ResNet-50, random weights, exported at opset 17 with a
    dynamic batch; None without torchvision."""
    return torchvision_case("resnet50", work, batches)


class BertTorch:
    """transformers' BertModel with bert-base's shape (12 layers, hidden 768,
    12 heads, intermediate 3072, erf GELU), random weights: the same network
    as make_encoder's bert-base, as a PyTorch user would run it (the
    library's default attention). Returns the last hidden state."""

    def __init__(self, cfg):
        import torch
        import transformers
        torch.manual_seed(0)
        config = transformers.BertConfig(
            vocab_size=cfg.vocab, hidden_size=cfg.hidden, num_hidden_layers=cfg.layers,
            num_attention_heads=cfg.heads, intermediate_size=cfg.intermediate,
            max_position_embeddings=cfg.max_position, type_vocab_size=cfg.type_vocab,
            hidden_act="gelu")
        self.model = transformers.BertModel(config).eval().cuda()

    def __call__(self, *args):
        return self.model(input_ids=args[0], attention_mask=args[1]).last_hidden_state


def bert_case(bundle: Path, work: Path, batches: list) -> ModelCase:
    """The bert-base encoder of tests/models/make_encoder.py (12 layers,
    hidden 768), sequence 128; its PyTorch twin is transformers' BertModel
    when transformers is installed."""
    sys.path.insert(0, str(bundle / "share"))
    import make_encoder
    cfg = make_encoder.preset("bert-base", seed=0)
    path = work / "bert-base.onnx"
    onnx.save(make_encoder.make_encoder(cfg), str(path))
    try:
        import transformers  # noqa: F401
        twin, why = (lambda: BertTorch(cfg)), ""
    except ImportError:
        twin, why = None, "transformers is not installed"
    return ModelCase("bert-base-s128", path, batches,
                     lambda b: make_encoder.encoder_inputs(cfg, batch=b, seq=128, seed=b, padded=True),
                     twin, why)


class HfBertTorch:
    """A transformers model (BertModel, GPT2Model) as its ONNX export's
    PyTorch twin: the last hidden state from input_ids and attention_mask."""

    def __init__(self, model):
        self.model = model

    def __call__(self, *args):
        return self.model(input_ids=args[0], attention_mask=args[1]).last_hidden_state


def hf_bert_case(work: Path, batches: list, seq: int) -> ModelCase | None:
    """transformers' BertModel(BertConfig()) (bert-base, random weights,
    seed 0, the library's default SDPA attention): hf_text_case."""
    return hf_text_case(work, batches, seq, "bert", 30000)


def hf_gpt2_case(work: Path, batches: list, seq: int) -> ModelCase | None:
    """transformers' GPT2Model(GPT2Config()) (gpt2, 124M, random weights,
    seed 0; its dense layers are Gemms on [batch * seq, E] reshapes):
    hf_text_case."""
    return hf_text_case(work, batches, seq, "gpt2", 50000)


def hf_text_case(work: Path, batches: list, seq: int, family: str,
                 vocab: int) -> ModelCase | None:
    """A transformers model of `family` (bert or gpt2) with its default
    config, exported here as a user exports it: torch.onnx.export's
    TorchScript exporter at opset 17, batch and sequence dynamic. Feeds:
    random token ids below `vocab`, every row padded after a random length
    in [seq/2, seq] (its attention_mask zero there). None without
    transformers."""
    try:
        import torch
        import transformers
    except ImportError:
        return None
    torch.manual_seed(0)
    if family == "gpt2":
        model = transformers.GPT2Model(transformers.GPT2Config()).eval()
    else:
        model = transformers.BertModel(transformers.BertConfig()).eval()
    name = f"{family}-hf-s{seq}"
    path = work / f"{name}.onnx"
    dummy = (torch.ones(1, seq, dtype=torch.int64), torch.ones(1, seq, dtype=torch.int64))

    class ByName(torch.nn.Module):
        """The two inputs by name: newer transformers' forward takes more
        arguments after attention_mask than a positional trace can fill."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return self.inner(input_ids=input_ids,
                              attention_mask=attention_mask).last_hidden_state

    torch.onnx.export(ByName(model), dummy, str(path), opset_version=17,
                      input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state"],
                      dynamic_axes={n: {0: "batch", 1: "sequence"}
                                    for n in ("input_ids", "attention_mask",
                                              "last_hidden_state")},
                      dynamo=False)

    def feeds(b: int) -> dict:
        rng = np.random.default_rng(b)
        ids = rng.integers(1, vocab, size=(b, seq), dtype=np.int64)
        lengths = rng.integers(seq // 2, seq + 1, size=b)
        mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int64)
        return {"input_ids": ids * mask, "attention_mask": mask}

    return ModelCase(name, path, batches, feeds, lambda: HfBertTorch(model.cuda()))


class Report:
    """The Markdown report, written to `path` again after every row, so that a
    run cut short (the device's time limit) keeps every row it measured."""

    def __init__(self, path: Path):
        self.path = path
        self.parts: list[list[str]] = []

    def part(self, lines: list) -> list:
        self.parts.append(list(lines))
        self.flush()
        return self.parts[-1]

    def add(self, part: list, line: str):
        part.append(line)
        print(line, flush=True)
        self.flush()

    def text(self) -> str:
        return "\n".join("\n".join(p) for p in self.parts) + "\n"

    def flush(self):
        self.path.write_text(self.text())


class Deadline:
    """Seconds left before --deadline-s; nothing new starts after it."""

    def __init__(self, seconds: float | None):
        self.end = None if seconds is None else time.monotonic() + seconds

    def passed(self) -> bool:
        return self.end is not None and time.monotonic() > self.end


def diff_cell(ref: list | None, outputs: list, tolerance: float) -> tuple[str, bool]:
    """The max |Coalesce - onnxruntime| cell, and whether it is within
    tolerance * max(1, |reference|); (a note, True) without onnxruntime; a
    failure when every reference output is all zeros (nothing is checked)."""
    if ref is None:
        return "onnxruntime not installed", True
    if all(not np.any(r) for r in ref):
        return "FAILED: the reference is all zeros, nothing checked", False
    d = max(float(np.max(np.abs(a - r))) if a.size else 0.0 for a, r in zip(outputs, ref))
    bound = tolerance * max(1.0, max(float(np.max(np.abs(r))) for r in ref))
    return f"{d:.2e}" + ("" if d <= bound else f" (FAILED: above {bound:.1e})"), d <= bound


def torch_pair(module, feeds: dict, repeat: int, warmup: int, fp16: bool,
               bf16: bool = False) -> list:
    """PyTorch eager and CUDA-graph ms (cells), or the failure in the cell;
    fp16 / bf16: under autocast to that type."""
    try:
        import torch
        args = list(feeds.values())
        dtype = torch.bfloat16 if bf16 else None
        return [torch_time_ms(module, args, repeat, warmup, graph=g, fp16=fp16, dtype=dtype)
                for g in (False, True)]
    except Exception as e:  # noqa: BLE001 - reported in the table
        return [f"FAILED: {cell(str(e))}", ""]


def ratio_cells(torch_ms: list, ours: float) -> list:
    """[eager ms, eager/ours, graph ms, graph/ours] as table cells."""
    out = []
    for t in torch_ms:
        if isinstance(t, float):
            out += [f"{t:.3f}", f"{t / ours:.2f}x"]
        else:
            out += [t, ""]
    return out


def mixed_length_feeds(case: ModelCase, batch: int, min_length: int):
    """`case`'s feeds for `batch` with the attention_mask's rows padded
    after lengths uniform on [min_length, S] (ids zero past them), and the
    lengths; None when the case has no attention_mask."""
    feeds = case.feeds(batch)
    if "attention_mask" not in feeds:
        return None
    seq = feeds["attention_mask"].shape[1]
    lengths = np.random.default_rng(batch).integers(min_length, seq + 1, size=batch)
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(feeds["attention_mask"].dtype)
    feeds = {k: (v * mask if k == "input_ids" else v) for k, v in feeds.items()}
    feeds["attention_mask"] = mask
    return feeds, lengths


def real_position_diff(padded: list, packed: list, lengths) -> float:
    """Max |packed - padded| over every real position of per-position
    outputs ([batch, seq, ...]) and over the whole of the others."""
    worst = 0.0
    for a, b in zip(padded, packed):
        if a.ndim >= 2 and a.shape[0] == len(lengths):
            for row, length in enumerate(lengths):
                worst = max(worst, float(np.abs(a[row, :length] - b[row, :length]).max()))
        else:
            worst = max(worst, float(np.abs(a - b).max()))
    return worst


def packing_section(bundle: Path, cases: list, work: Path, quick: bool, report: Report,
                    deadline: Deadline) -> bool:
    """Token packing (issue 27) on the GPU: each case with an attention_mask
    at each batch, lengths uniform on [8, S], FP16 and FP32, coalesce-onnx-run
    padded and with --token-packing on, side by side."""
    repeat, warmup = (10, 3) if quick else (30, 5)
    table = report.part([
        "", "### Token packing on the GPU (issue 27)", "",
        f"coalesce-onnx-run, median of {repeat} host-to-host runs after {warmup} warm-up "
        "runs, padded and with `--token-packing on` (the model parameter "
        "`token_packing: \"true\"`), one after the other; every row padded after a length "
        "uniform on [8, S]. Gain: padded ms / packed ms. Diff: max |packed - padded| at "
        "real positions.", "",
        "| model | precision | batch | fill | padded ms | packed ms | gain | diff |",
        "|---|---|---:|---:|---:|---:|---:|---:|"])
    ok = True
    for case in cases:
        for batch in case.batches:
            mixed = mixed_length_feeds(case, batch, 8)
            if mixed is None:
                continue
            feeds, lengths = mixed
            fill = lengths.sum() / (batch * feeds["attention_mask"].shape[1])
            for precision in ("fp16", "fp32"):
                label = f"| {case.name} | {precision} | {batch} | {fill:.0%} |"
                if deadline.passed():
                    report.add(table, f"{label} not run: --deadline-s reached | | | |")
                    continue
                try:
                    runs = {}
                    for packing in ("off", "on"):
                        where = work / f"packing_{case.name}_{precision}_{batch}_{packing}"
                        where.mkdir(parents=True, exist_ok=True)
                        runs[packing] = run_coalesce(bundle, case.path, feeds, where, repeat,
                                                     warmup, precision,
                                                     extra=("--token-packing", packing))
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    report.add(table, f"{label} FAILED: {cell(str(e))} | | | |")
                    ok = False
                    continue
                (off, padded), (on, packed) = runs["off"], runs["on"]
                diff = real_position_diff(padded, packed, lengths)
                report.add(table, f"{label} {off:.3f} | {on:.3f} | {off / on:.2f} | {diff:.1e} |")
    return ok


def engine_section(bundle: Path, cases: list, work: Path, quick: bool, report: Report,
                   deadline: Deadline) -> bool:
    """Every (case, batch): Coalesce FP32, FP32 without graphs, TF32 and FP16,
    PyTorch eager and CUDA graph in FP32 and FP16, outputs against one
    onnxruntime reference; a row to each of the two tables as it is done."""
    repeat, warmup = (10, 3) if quick else (50, 10)
    why_no_torch = torch_status()
    intro = [f"Median of {repeat} host-to-host runs after {warmup} warm-up runs (copies in and "
             "out included on both sides). FP32 with TF32 off on both sides; the TF32 column is "
             "Coalesce with `gpu_precision: tf32`; \"no graphs\" is Coalesce FP32 with "
             "`cuda_graphs: false` (the launch overhead graphs remove). Ratio: PyTorch ms / "
             "Coalesce FP32 ms (above 1: Coalesce is faster). Outputs checked against "
             "onnxruntime on the CPU (max |diff|, FP32 run).", ""]
    if why_no_torch:
        intro += [f"PyTorch columns empty: {why_no_torch}.", ""]
    fp32_table = report.part(["### Engine only: Coalesce against PyTorch on the same GPU", ""] +
                             intro + [
        "| model | batch | Coalesce FP32 ms | no graphs ms | Coalesce TF32 ms | "
        "PyTorch eager ms | ratio | PyTorch CUDA graph ms | ratio | "
        "max abs diff vs onnxruntime |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"])
    fp16_table = report.part([
        "", "FP16: Coalesce with `gpu_precision: fp16` (products on float16 operands, "
        "float32 accumulation, float32 elsewhere) against PyTorch under "
        "`torch.autocast(float16)`, same runs as above. Ratio: PyTorch ms / Coalesce "
        "FP16 ms. Target: at least 1.0x PyTorch with CUDA graphs at batch >= 32. "
        "\"unfused\": Coalesce FP16 with `--fused-attention off` (attention node by node, "
        "the A/B of the fused attention; the same as FP16 where a model has none), and its "
        "max |diff| against onnxruntime after the fused run's. \"cuDNN SDPA\": Coalesce FP16 "
        "with `COALESCE_CUDNN_SDPA=1` (the attentions cuDNN's fused attention takes run "
        "there; how many attention shapes it ran and refused, the reasons in the log). "
        "\"registers\": Coalesce FP16 with `COALESCE_ATTENTION_REGISTERS=1` (our attention "
        "kernel's register path, FlashAttention 2's loop on mma.sync). Their max |diff| "
        "last.", "",
        "| model | batch | Coalesce FP16 ms | unfused ms | cuDNN SDPA ms | registers ms | "
        "PyTorch FP16 eager ms | ratio | PyTorch FP16 CUDA graph ms | ratio | "
        "max abs diff vs onnxruntime |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"])
    bf16_table = report.part([
        "", "BF16: Coalesce with `gpu_precision: bf16` (bfloat16 operands and activations, "
        "float32 accumulation and statistics) against PyTorch under "
        "`torch.autocast(bfloat16)`, same runs. Ratio: PyTorch ms / Coalesce BF16 ms.", "",
        "| model | batch | Coalesce BF16 ms | PyTorch BF16 eager ms | ratio | "
        "PyTorch BF16 CUDA graph ms | ratio | max abs diff vs onnxruntime |",
        "|---|---:|---:|---:|---:|---:|---:|---:|"])
    ok = True
    modules = {}  # case name -> (PyTorch twin or None, why none)
    # Batch by batch, every case at each: a run cut short by --deadline-s has
    # every model at the batches it reached.
    order = list(dict.fromkeys(b for case in cases for b in case.batches))
    for batch, case in ((b, c) for b in order for c in cases if b in c.batches):
        module, why = modules.get(case.name, (None, case.why_no_torch or why_no_torch))
        if deadline.passed():
            report.add(fp32_table, f"| {case.name} | {batch} | not run: --deadline-s "
                       "reached | | | | | | | |")
            continue
        if module is None and not why and case.torch_module is not None:
            try:
                module = case.torch_module()
            except Exception as e:  # noqa: BLE001 - reported in the table
                why = f"PyTorch twin failed: {cell(str(e))}"
            modules[case.name] = (module, why)
        feeds = case.feeds(batch)
        try:
            runs = {p: run_coalesce(bundle, case.path, feeds, work, repeat, warmup, p)
                    for p in ("fp32", "tf32", "fp16", "bf16")}
            plain, _ = run_coalesce(bundle, case.path, feeds, work, repeat, warmup, "fp32",
                                    graphs=False)
            unfused, unfused_out = run_coalesce(bundle, case.path, feeds, work, repeat, warmup,
                                                "fp16", extra=("--fused-attention", "off"))
            sdpa_log = []
            sdpa, sdpa_out = run_coalesce(bundle, case.path, feeds, work, repeat, warmup,
                                          "fp16", env={"COALESCE_CUDNN_SDPA": "1"},
                                          stderr_lines=sdpa_log)
            regs, regs_out = run_coalesce(bundle, case.path, feeds, work, repeat, warmup,
                                          "fp16", env={"COALESCE_ATTENTION_REGISTERS": "1"})
        except Exception as e:  # noqa: BLE001 - reported in the table
            report.add(fp32_table, f"| {case.name} | {batch} | FAILED: {cell(str(e))} "
                       "| | | | | | | |")
            ok = False
            continue
        ref = onnxruntime_outputs(case.path, feeds)
        fp32, fp32_out = runs["fp32"]
        fp16, fp16_out = runs["fp16"]
        row32 = [case.name, str(batch), f"{fp32:.3f}", f"{plain:.3f}",
                 f"{runs['tf32'][0]:.3f}"]
        bf16, bf16_out = runs["bf16"]
        row16 = [case.name, str(batch), f"{fp16:.3f}", f"{unfused:.3f}",
                 sdpa_cell(sdpa, sdpa_log), f"{regs:.3f}"]
        rowbf = [case.name, str(batch), f"{bf16:.3f}"]
        if module is not None:
            row32 += ratio_cells(torch_pair(module, feeds, repeat, warmup, False), fp32)
            row16 += ratio_cells(torch_pair(module, feeds, repeat, warmup, True), fp16)
            rowbf += ratio_cells(torch_pair(module, feeds, repeat, warmup, False, bf16=True),
                                 bf16)
        else:
            row32 += [why, "", "", ""]
            row16 += [why, "", "", ""]
            rowbf += [why, "", "", ""]
        text32, ok32 = diff_cell(ref, fp32_out, 1e-3)
        text16, ok16 = diff_cell(ref, fp16_out, 2e-2)
        text_unfused, ok_unfused = diff_cell(ref, unfused_out, 2e-2)
        text_sdpa, ok_sdpa = diff_cell(ref, sdpa_out, 2e-2)
        text_regs, ok_regs = diff_cell(ref, regs_out, 2e-2)
        text16 = (f"{text16}; unfused {text_unfused}; cuDNN SDPA {text_sdpa}; "
                  f"registers {text_regs}")
        textbf, okbf = diff_cell(ref, bf16_out, 1e-1)
        ok = ok and ok32 and ok16 and ok_unfused and ok_sdpa and ok_regs and okbf
        report.add(fp32_table, "| " + " | ".join(row32 + [text32]) + " |")
        report.add(fp16_table, "| " + " | ".join(row16 + [text16]) + " |")
        report.add(bf16_table, "| " + " | ".join(rowbf + [textbf]) + " |")
    return ok


# -- CNNs in FP16, NHWC, fused (issue 26) ----------------------------------------

CNN_MODELS = "resnet50,efficientnet_b0,mobilenet_v3_large"
CNN_BATCHES = [1, 8, 32, 64, 128, 256]
CNN_FIRST_BATCHES = (32, 128, 256)  # measured first, model by model
CNN_PLAN_BATCH = 32
CNN_CHECK_ROWS = 8  # the first and last images of a batch checked against onnxruntime
# Models whose BatchNorm statistics come from one random batch: with the
# default ones (mean 0, variance 1) their random-weight activations vanish
# layer by layer (logits of about 1e-14 and 1e-10: float16 would flush them
# to zero and any output would pass the check). ResNet-50 keeps the default
# statistics, as in the engine table (logits up to about 100).
CNN_CALIBRATED = ("efficientnet_b0", "mobilenet_v3_large")
RESNET50_IMAGES_PER_S = 20000

# Coalesce: (key, column, --gpu-precision, extra flags, tolerance), in the
# order run (FP16 first: the rows' most important cells).
CNN_COALESCE = [
    ("fp16", "Coalesce FP16 ms", "fp16", (), 2e-2),
    ("fp16_nchw", "Coalesce FP16 NCHW ms", "fp16", ("--gpu-layout", "nchw"), 2e-2),
    ("fp32", "Coalesce FP32 ms", "fp32", (), 1e-3),
    ("tf32", "Coalesce TF32 ms", "tf32", (), 2e-2),
]
# PyTorch: (key, column, autocast dtype or None, CUDA graph, channels_last).
CNN_TORCH = [
    ("fp16_eager", "PyTorch FP16 eager ms", "float16", False, False),
    ("fp16_graph", "PyTorch FP16 CUDA graph ms", "float16", True, False),
    ("fp16_best", "PyTorch FP16 best ms", "float16", True, True),
    ("fp32_eager", "PyTorch FP32 eager ms", None, False, False),
    ("fp32_graph", "PyTorch FP32 CUDA graph ms", None, True, False),
    ("bf16_best", "PyTorch BF16 best ms", "bfloat16", True, True),
]
# The table's columns, left to right (the keys above).
CNN_COLUMNS = ["fp32", "tf32", "fp16", "fp16_nchw", "fp32_eager", "fp32_graph", "fp16_eager",
               "fp16_graph", "fp16_best", "bf16_best"]
# Targets: (key, text); cnn_target says where each applies and its value.
CNN_TARGETS = [
    ("best", "FP16 at batch >= 32: >= 1.0x best plain PyTorch FP16 (channels_last + "
     "autocast float16 + CUDA graph), every model"),
    ("eager", "FP16 at batch >= 32: >= 2x PyTorch FP16 eager (autocast float16), every model"),
    ("images", f"ResNet-50 FP16 at batch 256: >= {RESNET50_IMAGES_PER_S:,} images/s "
     "(the target is for an H100)"),
    ("fp32", "FP32: >= 1.0x PyTorch FP32 with a CUDA graph (TF32 off on both sides), every "
     "model and batch"),
]


def cnn_order(names: list, batches: list) -> list:
    """(model, batch) in the order measured: each model at 32, 128 and 256
    (ResNet-50 first), then the other batches (those >= 32 first), every
    model at each."""
    first = [b for b in CNN_FIRST_BATCHES if b in batches]
    rest = sorted((b for b in batches if b not in first), key=lambda b: b < 32)
    return [(n, b) for n in names for b in first] + [(n, b) for b in rest for n in names]


def cnn_target(key: str, model: str, batch: int, ms: dict) -> tuple[bool, float | None] | None:
    """None where target `key` does not apply to the row; else (applies,
    its value: a ratio or images/s, None where a run it needs failed)."""
    def ratio(torch_key, ours):
        t, c = ms.get(torch_key), ms.get(ours)
        return t / c if isinstance(t, float) and isinstance(c, float) else None
    if key == "best":
        return (True, ratio("fp16_best", "fp16")) if batch >= 32 else None
    if key == "eager":
        return (True, ratio("fp16_eager", "fp16")) if batch >= 32 else None
    if key == "images":
        if model != "resnet50" or batch != 256:
            return None
        c = ms.get("fp16")
        return True, (batch * 1e3 / c if isinstance(c, float) else None)
    if key == "fp32":
        return True, ratio("fp32_graph", "fp32")
    raise ValueError(key)


def cnn_passes(key: str, value: float) -> bool:
    return value >= {"best": 1.0, "eager": 2.0, "images": RESNET50_IMAGES_PER_S, "fp32": 1.0}[key]


def gpu_name() -> str:
    if shutil.which("nvidia-smi"):
        proc = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                               "--format=csv,noheader", "-i", "0"], capture_output=True,
                              text=True)
        if proc.returncode == 0 and proc.stdout.strip():
            return proc.stdout.strip()
    return "unknown (no nvidia-smi)"


def cnn_section(bundle: Path, names: list, batches: list, work: Path, quick: bool,
                report: Report, deadline: Deadline, plan_dir: Path) -> bool:
    """torchvision's ResNet-50, EfficientNet-B0 and MobileNetV3-Large at
    each batch: Coalesce FP32, TF32, FP16 (NHWC) and FP16 NCHW, PyTorch in
    six forms, the ratios, the targets and each Coalesce run's outputs
    against onnxruntime; one row as each (model, batch) is done, the
    targets summed up after the last. Each model's --device-plan in FP16 at
    batch 32 goes to plan_dir."""
    repeat, warmup = (10, 3) if quick else (50, 10)
    why_no_torch = torch_status()
    targets_text = [f"- `{key}`: {text}" for key, text in CNN_TARGETS]
    intro = [
        "", "### CNNs in FP16, NHWC, fused (issue 26): Coalesce against PyTorch on the same GPU",
        "",
        f"GPU: {gpu_name()}. torchvision's {', '.join(names)}: random weights "
        "(`weights=None`, seed 0), exported here with the TorchScript exporter (opset 17, "
        "dynamic batch), random normal 3x224x224 images; "
        f"{', '.join(n for n in names if n in CNN_CALIBRATED) or 'none'}: each BatchNorm's "
        "statistics from one batch of 32 random images (with the default ones their "
        "logits vanish, to 1e-10 and below). "
        f"Median of {repeat} host-to-host runs after {warmup} warm-up runs on both sides "
        "(copies in and out included; PyTorch with pinned buffers, `non_blocking` copies "
        "and a synchronize).", "",
        "Coalesce: `coalesce-onnx-run --device gpu` (CUDA graphs on) in FP32 (NCHW), "
        "TF32, FP16 (default layout, NHWC: activations float16 between operators, "
        "convolutions fused with bias, residual and activation through cuDNN's graph API, "
        "engines chosen by measurement at the first run of each shape, before the timed "
        "runs) and FP16 with `--gpu-layout nchw` (the layout A/B). **Coalesce offers no "
        "BF16 mode**: the PyTorch BF16 column is for reference.", "",
        "PyTorch: FP32 with TF32 off, eager and a CUDA graph captured per batch; FP16 under "
        "`torch.autocast(float16)`, eager and CUDA graph; *best* = best plain PyTorch: "
        "model and input `channels_last` + autocast float16 + CUDA graph (the input copied "
        "in NCHW and converted on the GPU, as Coalesce does); BF16 best = the same under "
        "autocast bfloat16. `torch.backends.cudnn.benchmark` at its default (off), no "
        "`torch.compile`.", "",
        "Ratios: PyTorch ms / Coalesce ms (above 1: Coalesce is faster): *FP16 vs best* and "
        "*FP16 vs eager* (Coalesce FP16, NHWC), *FP32 vs graph* (Coalesce FP32 against "
        "PyTorch FP32 CUDA graph). FP16 images/s: batch / Coalesce FP16 time. Max abs diff: "
        "each Coalesce run against onnxruntime on the CPU (FP32) on the first and last "
        f"{CNN_CHECK_ROWS} images of the batch (the images of a batch are independent), "
        "within 1e-3 (FP32) and 2e-2 (TF32, FP16) x max(1, |ref|); the cell starts with the "
        "reference's max abs value.", "",
        "Targets (PASS/MISSED per row in *targets*, summed up after the table):", "",
        *targets_text, "",
        f"Rows in the order measured: each model at batch {', '.join(map(str, CNN_FIRST_BATCHES))}"
        " first, then the other batches; a run cut short by `--deadline-s` says which rows "
        f"it did not run. The `--device-plan` of each model in FP16 at batch {CNN_PLAN_BATCH} "
        "(default layout) is beside this report as `cnn-plan-<model>-fp16-b"
        f"{CNN_PLAN_BATCH}.txt`.", ""]
    if why_no_torch:
        intro += [f"PyTorch columns empty: {why_no_torch}.", ""]
    labels = {k: col for k, col, *_ in CNN_COALESCE + CNN_TORCH}
    header = (["model", "batch"] + [labels[k] for k in CNN_COLUMNS] +
              ["FP16 vs best", "FP16 vs eager", "FP32 vs graph", "FP16 images/s", "targets",
               "max abs diff vs onnxruntime: (max abs ref) FP32, TF32, FP16, FP16 NCHW"])
    table = report.part(intro + ["| " + " | ".join(header) + " |",
                                 "|---|" + "---:|" * (len(header) - 3) + "---|---|"])
    blank = len(header) - 2  # "|"s after "| model | batch | <note>"

    ok = True
    order = cnn_order(names, batches)
    cases: dict = {}  # model -> ModelCase, or the reason there is none
    twins: dict = {}  # model -> (module, channels_last module), or why none
    sessions: dict = {}  # model -> onnxruntime session, or None
    verdicts: dict = {key: [] for key, _ in CNN_TARGETS}  # key -> [(row, value or None, pass)]
    planned: set = set()
    for name, batch in order:
        if deadline.passed():
            report.add(table, f"| {name} | {batch} | not run: --deadline-s reached" +
                       " |" * blank)
            for key, _ in CNN_TARGETS:
                if cnn_target(key, name, batch, {}) is not None:
                    verdicts[key].append((f"{name} b{batch}", None, None))
            continue
        if name not in cases:
            try:
                case = torchvision_case(name, work, batches,
                                        calibrate=name in CNN_CALIBRATED)
                cases[name] = case if case is not None else "torchvision is not installed"
            except Exception as e:  # noqa: BLE001 - reported in the table
                cases[name] = f"export failed: {cell(str(e))}"
        case = cases[name]
        if isinstance(case, str):
            report.add(table, f"| {name} | {batch} | FAILED: {case}" + " |" * blank)
            ok = False
            continue
        feeds = case.feeds(batch)
        ms: dict = {}
        outputs: dict = {}
        failures: dict = {}
        for key, _, precision, extra, _ in CNN_COALESCE:
            plan = None
            if key == "fp16" and batch == CNN_PLAN_BATCH:
                plan = plan_dir / f"cnn-plan-{name}-fp16-b{CNN_PLAN_BATCH}.txt"
                extra = (*extra, "--device-plan")
            try:
                ms[key], outputs[key] = run_coalesce(bundle, case.path, feeds, work, repeat,
                                                     warmup, precision, extra=extra,
                                                     stdout_to=plan)
            except Exception as e:  # noqa: BLE001 - reported in the table
                failures[key] = f"FAILED: {cell(str(e))[-150:]}"
                ok = False
            if plan is not None:
                planned.add(name)
        twin = twins.get(name)
        if twin is None:
            twin = why_no_torch or case.why_no_torch
            if not twin:
                try:
                    import copy
                    import torch
                    module = case.torch_module()
                    twin = (module, copy.deepcopy(module).to(memory_format=torch.channels_last))
                except Exception as e:  # noqa: BLE001 - reported in the table
                    twin = f"PyTorch twin failed: {cell(str(e))}"
            twins[name] = twin
        if isinstance(twin, tuple):
            import torch
            for key, _, dtype, graph, channels_last in CNN_TORCH:
                try:
                    ms[key] = torch_time_ms(twin[1] if channels_last else twin[0],
                                            list(feeds.values()), repeat, warmup, graph=graph,
                                            dtype=getattr(torch, dtype) if dtype else None,
                                            channels_last=channels_last)
                except Exception as e:  # noqa: BLE001 - reported in the table
                    failures[key] = f"FAILED: {cell(str(e))[-150:]}"
                finally:
                    torch.cuda.empty_cache()
        else:  # the reason once, in the first PyTorch column
            failures["fp32_eager"] = twin
        rows = (np.arange(batch) if batch <= 2 * CNN_CHECK_ROWS else
                np.r_[0:CNN_CHECK_ROWS, batch - CNN_CHECK_ROWS:batch])
        diffs = []
        try:
            if name not in sessions:
                import onnxruntime as ort
                sessions[name] = ort.InferenceSession(str(case.path),
                                                      providers=["CPUExecutionProvider"])
            ref = sessions[name].run(None, {k: v[rows] for k, v in feeds.items()})
        except ImportError:
            ref = None
            diffs.append("onnxruntime not installed")
        except Exception as e:  # noqa: BLE001 - reported in the table
            ref = None
            diffs.append(f"FAILED: onnxruntime: {cell(str(e))[-150:]}")
            ok = False
        ref_note = ("" if ref is None else
                    f"(max abs ref {max(float(np.max(np.abs(r))) for r in ref):.3g}) ")
        for key in ("fp32", "tf32", "fp16", "fp16_nchw") if ref is not None else ():
            if key not in outputs:
                diffs.append("not run")
                continue
            tolerance = next(t for k, *_, t in CNN_COALESCE if k == key)
            text, within = diff_cell(ref, [o[rows] for o in outputs[key]], tolerance)
            ok = ok and within
            diffs.append(text)
        cells = [name, str(batch)]
        for key in CNN_COLUMNS:
            cells.append(f"{ms[key]:.3f}" if key in ms else failures.get(key, ""))
        for torch_key, ours in (("fp16_best", "fp16"), ("fp16_eager", "fp16"),
                                ("fp32_graph", "fp32")):
            cells.append(f"{ms[torch_key] / ms[ours]:.2f}x"
                         if torch_key in ms and ours in ms else "")
        cells.append(f"{batch * 1e3 / ms['fp16']:,.0f}" if "fp16" in ms else "")
        row_targets = []
        for key, _ in CNN_TARGETS:
            applies = cnn_target(key, name, batch, ms)
            if applies is None:
                continue
            value = applies[1]
            passed = None if value is None else cnn_passes(key, value)
            verdicts[key].append((f"{name} b{batch}", value, passed))
            row_targets.append(f"{key}: " + ("n/a" if passed is None else
                                             "PASS" if passed else "MISSED"))
        cells.append(", ".join(row_targets))
        cells.append(ref_note + ", ".join(diffs))
        report.add(table, "| " + " | ".join(cells) + " |")

    # Each model's plan at batch 32, when that batch was not in the table.
    for name in dict.fromkeys(n for n, _ in order):
        case = cases.get(name)
        if name in planned or not isinstance(case, ModelCase) or deadline.passed():
            continue
        plan = plan_dir / f"cnn-plan-{name}-fp16-b{CNN_PLAN_BATCH}.txt"
        try:
            planned.add(name)
            run_coalesce(bundle, case.path, case.feeds(CNN_PLAN_BATCH), work, 1, 0, "fp16",
                         extra=("--device-plan",), stdout_to=plan)
        except Exception as e:  # noqa: BLE001 - reported below
            report.part([f"\n{name}: the FP16 device plan failed: {cell(str(e))}"])
            ok = False
    plans = [f"cnn-plan-{n}-fp16-b{CNN_PLAN_BATCH}.txt" for n in planned
             if (plan_dir / f"cnn-plan-{n}-fp16-b{CNN_PLAN_BATCH}.txt").is_file()]
    summary = ["", "Targets:", "", "| target | verdict | rows |", "|---|---|---|"]
    for key, text in CNN_TARGETS:
        entries = verdicts[key]
        measured = [e for e in entries if e[2] is not None]
        missed = [e for e in measured if not e[2]]
        unit = "/s" if key == "images" else "x"
        if missed:
            verdict = "MISSED"
        elif not measured:
            verdict = "not measured"
        elif len(measured) < len(entries):
            verdict = f"PASS on the {len(measured)} of {len(entries)} rows measured"
        else:
            verdict = "PASS"
        detail = (f"{len(measured)} of {len(entries)} rows measured" if entries else
                  "no such row in this run")
        if missed:
            detail += "; missed: " + ", ".join(
                f"{row} {value:,.0f}{unit}" if key == "images" else f"{row} {value:.2f}{unit}"
                for row, value, _ in missed)
        elif key == "images" and measured:
            detail += f"; {measured[0][1]:,.0f} images/s"
        summary.append(f"| {text} | {verdict} | {detail} |")
    summary += ["", "Device plans written: " + (", ".join(f"`{p}`" for p in plans) or "none")]
    report.part(summary)
    print("\n".join(summary), flush=True)
    return ok


# -- where the GPU time goes ---------------------------------------------------

def ncu_binary() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for candidate in sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"), reverse=True):
        return str(candidate)
    return None


def kernel_breakdown(bundle: Path, cases: list, work: Path, batch: int, report: Report,
                     deadline: Deadline) -> None:
    """Each case at `batch`, FP32 and FP16, without graphs under Nsight
    Compute (gpu__time_duration per kernel): the kernels that take the
    GPU's time, summed by name, the top ones listed."""
    ncu = ncu_binary()
    part = report.part(["", f"### Where the GPU time goes (batch {batch}, Nsight Compute)", ""])
    if ncu is None:
        report.add(part, "Not measured: Nsight Compute (ncu) is not installed.")
        return
    report.add(part, "`coalesce-onnx-run --warmup 0 --repeat 1 --device-graphs off` under "
               "`ncu --metrics gpu__time_duration.sum`, each kernel timed alone: the tool's "
               "output run and its one timed run, so two runs (the first with cuDNN's and "
               "cuBLASLt's first-call work); kernels summed by name, the top ten by time, "
               "and their share of the kernel time.")
    for case in cases:
        for precision in ("fp32", "fp16"):
            if deadline.passed():
                report.add(part, f"\n{case.name} {precision}: not run: --deadline-s reached")
                continue
            cmd = onnx_run_command(bundle, case.path, case.feeds(batch), work, 1, 0,
                                   precision, graphs=False)
            log = work / "ncu.csv"
            try:
                proc = subprocess.run([ncu, "--metrics", "gpu__time_duration.sum", "--csv",
                                       "--print-units", "base", "--log-file", str(log), *cmd],
                                      capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired:
                report.add(part, f"\n{case.name} {precision}: ncu took over 120 s")
                continue
            if proc.returncode != 0 or not log.exists():
                report.add(part, f"\n{case.name} {precision}: ncu failed: "
                           f"{cell(proc.stderr or proc.stdout)}")
                continue
            totals: dict[str, float] = {}
            for row in csv.DictReader(line for line in log.read_text().splitlines()
                                      if line.startswith('"')):
                if row.get("Metric Name") == "gpu__time_duration.sum":
                    name = re.sub(r"\(.*", "", row["Kernel Name"])[:80]
                    value = float(row["Metric Value"].replace(",", ""))
                    totals[name] = totals.get(name, 0.0) + value / 1e6
            whole = sum(totals.values())
            report.add(part, f"\n{case.name} {precision}, batch {batch}: {len(totals)} distinct "
                       f"kernels, {whole:.3f} ms of kernel time in the two runs\n")
            report.add(part, "| kernel | ms | share |\n|---|---:|---:|")
            for name, ms in sorted(totals.items(), key=lambda kv: -kv[1])[:10]:
                report.add(part, f"| `{cell(name)}` | {ms:.3f} | {ms / whole:.0%} |")


# -- server end to end ---------------------------------------------------------

class GpuSampler:
    """utilization.gpu from nvidia-smi every 100 ms while running."""

    def __init__(self):
        self.samples: list[float] = []
        self.proc = None
        self.thread = None

    def start(self):
        self.samples = []
        if shutil.which("nvidia-smi") is None:
            return
        self.proc = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
             "-lms", "100", "-i", "0"], stdout=subprocess.PIPE, text=True)

        def read():
            for line in self.proc.stdout:
                try:
                    self.samples.append(float(line.strip()))
                except ValueError:
                    pass
        self.thread = threading.Thread(target=read, daemon=True)
        self.thread.start()

    def stop(self) -> str:
        if self.proc is None:
            return "n/a"
        self.proc.terminate()
        self.proc.wait()
        self.thread.join(timeout=5)
        return f"{statistics.mean(self.samples):.0f}%" if self.samples else "n/a"


def write_variant(repo: Path, source: Path, name: str, batching: bool, double_buffering: bool):
    d = repo / name / "1"
    d.mkdir(parents=True)
    shutil.copy(source / "1" / "model.onnx", d / "model.onnx")
    config = (source / "config.pbtxt").read_text()
    config = re.sub(r'^name: .*$', f'name: "{name}"', config, flags=re.M)
    config = config.replace("KIND_CPU", "KIND_GPU")
    if not batching:
        config = re.sub(r"dynamic_batching \{.*?\n\}", "", config, flags=re.S)
    config += ('\nparameters: { key: "double_buffering" value: { string_value: "%s" } }\n'
               % ("true" if double_buffering else "false"))
    (repo / name / "config.pbtxt").write_text(config)


def bench_level(bundle: Path, name: str, conc: int, window_ms: str, max_windows: str,
                sampler: "GpuSampler", prefix: Path, extra: list = ()) -> tuple[str, bool]:
    """One coalesce-bench closed-loop level against the server of
    start_server: the row's cells "items/s | p50 | p99 | avg batch | GPU
    busy" (or FAILED and four empty cells), and whether it ran without
    errors."""
    sampler.start()
    proc = subprocess.run(
        [str(bundle / "bin" / "coalesce-bench"), "-m", name, "-u", "127.0.0.1:18001",
         "--concurrency-range", str(conc), "--window-ms", window_ms, "--max-windows",
         max_windows, *extra, "--output", str(prefix)],
        capture_output=True, text=True, timeout=300)
    busy = sampler.stop()
    if proc.returncode != 0:
        return f"FAILED: {cell(proc.stderr)} | | | |", False
    s = json.loads(prefix.with_suffix(".json").read_text())["levels"][0]["summary"]
    lat = s.get("latency_ms") or {}
    batch = (s.get("server") or {}).get("avg_batch_size")
    return (f"{s['throughput_infer_per_s']:.0f} | {lat.get('p50', 0):.2f} | "
            f"{lat.get('p99', 0):.2f} | {batch if batch is None else f'{batch:.1f}'} | {busy}",
            not s.get("error_count"))


def server_section(bundle: Path, mlp_dir: Path, work: Path, quick: bool, report: Report,
                   deadline: Deadline) -> bool:
    repo = work / "repo"
    variants = {}
    for batching in (True, False):
        for db in (True, False):
            name = f"mlp_b{int(batching)}_d{int(db)}"
            write_variant(repo, mlp_dir, name, batching, db)
            variants[name] = (batching, db)
    table = report.part([
        "", "### Server end to end: batching and double buffering", "",
        "coalesce-bench closed loop, batch 1 per request, mlp_classifier on KIND_GPU "
        "(max_batch_size 64). GPU busy: mean of nvidia-smi utilization.gpu over the level.", "",
        "| batching | double buffering | concurrency | infer/s | p50 ms | p99 ms | avg batch | GPU busy |",
        "|---|---|---:|---:|---:|---:|---:|---:|"])
    server = start_server(bundle, repo, work / "server.log", report, table)
    if server is None:
        return False
    ok = True
    sampler = GpuSampler()
    window = "1000" if quick else "2000"
    try:
        for name, (batching, db) in variants.items():
            for conc in CONCURRENCY:
                if deadline.passed():
                    report.add(table, f"| {batching} | {db} | {conc} | not run: --deadline-s "
                               "reached | | | | |")
                    continue
                cells, level_ok = bench_level(bundle, name, conc, window, "5", sampler,
                                              work / f"{name}_c{conc}")
                ok = ok and level_ok
                report.add(table, f"| {batching} | {db} | {conc} | {cells} |")
    finally:
        stop_server(server)
    return ok


SERVE_CONCURRENCY = [16, 64, 128]


def start_server(bundle: Path, repo: Path, log_path: Path, report: Report | None,
                 table: list | None, grpc_port: int = 18001,
                 metrics_port: int = 0) -> subprocess.Popen | None:
    """coalesce-server on `repo` at 127.0.0.1:`grpc_port` (metrics on
    `metrics_port`, 0: off), its output in `log_path`, once ready; None when
    it did not start, the log's end then added to `table` (when given)."""
    with open(log_path, "w") as log:
        server = subprocess.Popen([str(bundle / "bin" / "coalesce-server"), "--model-repository",
                                   str(repo), "--grpc-address", "127.0.0.1", "--grpc-port",
                                   str(grpc_port), "--http-address", "127.0.0.1", "--http-port", "0",
                                   "--metrics-address", "127.0.0.1",
                                   "--metrics-port", str(metrics_port)],
                                  stdout=log, stderr=subprocess.STDOUT)
    for _ in range(900):
        if " ready" in log_path.read_text() or server.poll() is not None:
            break
        time.sleep(0.2)
    text = log_path.read_text()
    if server.poll() is not None or " ready" not in text:
        stop_server(server)
        if report is not None:
            report.add(table, f"The server did not start:\n\n```\n{text[-3000:]}\n```")
        return None
    return server


def stop_server(server: subprocess.Popen):
    """SIGTERM, then SIGKILL after 60 s; returns once the process is gone, so
    that the next server finds its ports free."""
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def served_config(name: str, model: onnx.ModelProto, precision: str, max_batch: int,
                  input_dims: dict | None = None, packing: bool = False) -> str:
    """A KIND_GPU config for `model` (batch dim first on every input and
    output), dynamic batching up to `max_batch` with a 1 ms queue delay.
    An input's non-batch dims are `input_dims[name]` where given (a model
    served at one sequence length, as users write it: the server's warm-up
    then prepares every batch size), else the model's, -1 where variable
    (the caller's --shape gives them). `packing`: the model parameter
    token_packing "true" (docs/engine.md, "Token packing")."""
    def tensors(values):
        out = []
        for vi in values:
            dims = [d.dim_value if d.dim_value > 0 else -1 for d in vi.type.tensor_type.shape.dim][1:]
            if input_dims and vi.name in input_dims:
                dims = [int(d) for d in input_dims[vi.name]]
            dtype = {TensorProto.FLOAT: "TYPE_FP32", TensorProto.INT64: "TYPE_INT64"}[
                vi.type.tensor_type.elem_type]
            out.append(f'{{ name: "{vi.name}" data_type: {dtype} dims: {dims} }}')
        return ", ".join(out)
    initializers = {t.name for t in model.graph.initializer}
    inputs = [vi for vi in model.graph.input if vi.name not in initializers]
    return (f'name: "{name}"\nbackend: "onnxruntime"\nmax_batch_size: {max_batch}\n'
            f"input [ {tensors(inputs)} ]\noutput [ {tensors(model.graph.output)} ]\n"
            "instance_group [ { kind: KIND_GPU count: 1 } ]\n"
            "dynamic_batching { max_queue_delay_microseconds: 1000 }\n"
            f'parameters: {{ key: "gpu_precision" value: {{ string_value: "{precision}" }} }}\n'
            + ('parameters: { key: "token_packing" value: { string_value: "true" } }\n'
               if packing else ""))


def served_variants(case_feeds: dict) -> list:
    """(precision, packed) pairs a case is served in: FP32 and FP16, and
    FP16 token-packed when it takes an attention_mask."""
    variants = [("fp32", False), ("fp16", False)]
    if "attention_mask" in case_feeds:
        variants.append(("fp16", True))
    return variants


def served_name(case_name: str, precision: str, packed: bool) -> str:
    return f"{case_name}_{precision}{'_packed' if packed else ''}".replace("-", "_")


def served_section(bundle: Path, cases: list, work: Path, report: Report,
                   deadline: Deadline) -> bool:
    """Each case served on KIND_GPU in FP32 and FP16 (max batch 64; a
    transformer also FP16 token-packed), one request of batch 1 each,
    coalesce-bench closed loop over SERVE_CONCURRENCY: items/s, latency,
    the batch the server formed and the GPU's busy fraction."""
    repo = work / "served"
    shapes, extra, variants = {}, {}, {}
    for case in cases:
        proto = onnx.load(str(case.path), load_external_data=False)
        feeds = case.feeds(1)
        variants[case.name] = served_variants(feeds)
        for precision, packed in variants[case.name]:
            name = served_name(case.name, precision, packed)
            (repo / name / "1").mkdir(parents=True)
            os.link(case.path, repo / name / "1" / "model.onnx")
            (repo / name / "config.pbtxt").write_text(served_config(
                name, proto, precision, 64, {k: v.shape[1:] for k, v in feeds.items()},
                packing=packed))
        shapes[case.name] = [f"{k}:{','.join(str(d) for d in v.shape[1:])}"
                             for k, v in feeds.items()]
        if "attention_mask" in feeds:
            # Mixed lengths as the engine-only rows pad them: each request
            # padded to S with its real length uniform in [S/2, S].
            seq = feeds["attention_mask"].shape[-1]
            extra[case.name] = ["--padding-mask", f"attention_mask=uniform:{seq // 2}"]
    table = report.part([
        "", "### Served on the GPU: coalesce-bench closed loop, one item per request", "",
        "Each model on KIND_GPU (max_batch_size 64, 1 ms queue delay), random inputs; "
        "transformers padded to S with real lengths uniform in [S/2, S] (--padding-mask), "
        "also served token-packed in FP16 (`fp16 packed`: `token_packing: \"true\"`). "
        "GPU busy: mean of nvidia-smi utilization.gpu over the level.", "",
        "| model | precision | concurrency | items/s | p50 ms | p99 ms | avg batch | GPU busy |",
        "|---|---|---:|---:|---:|---:|---:|---:|"])
    server = start_server(bundle, repo, work / "served.log", report, table)
    if server is None:
        return False
    ok = True
    sampler = GpuSampler()
    try:
        for case in cases:
            for precision, packed in variants[case.name]:
                name = served_name(case.name, precision, packed)
                label = f"{precision} packed" if packed else precision
                for conc in SERVE_CONCURRENCY:
                    if deadline.passed():
                        report.add(table, f"| {case.name} | {label} | {conc} | not run: "
                                   "--deadline-s reached | | | | |")
                        continue
                    shape_args = [a for s in shapes[case.name] for a in ("--shape", s)]
                    shape_args += extra.get(case.name, [])
                    cells, level_ok = bench_level(bundle, name, conc, "1000", "4", sampler,
                                                  work / f"{name}_c{conc}", shape_args)
                    ok = ok and level_ok
                    report.add(table, f"| {case.name} | {label} | {conc} | {cells} |")
    finally:
        stop_server(server)
    return ok


def int_list(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v]


def main() -> int:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser()
    parser.add_argument("--bundle", type=Path, default=here.parent)
    parser.add_argument("--out", type=Path, default=Path("gpu-bench.md"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-server", action="store_true")
    parser.add_argument("--models", default="resnet50,bert-base-s128,mlp_classifier,dense4096",
                        help="engine-only cases to run, in this order")
    parser.add_argument("--batches", type=int_list, default=None,
                        help="batch sizes for every case (default: each case's own)")
    parser.add_argument("--breakdown-batch", type=int, default=0,
                        help="after the tables, each case at this batch under Nsight Compute")
    parser.add_argument("--serve", action="store_true",
                        help="also serve each case on KIND_GPU (FP32, FP16) under coalesce-bench")
    parser.add_argument("--cold-start", action="store_true",
                        help="issue 28's served table (cold_start.py): a fresh server per "
                        "model, precision and concurrency, first window's p99 against "
                        "steady state's, served against engine only, FP16 against FP32")
    parser.add_argument("--cold-window-s", type=int, default=10,
                        help="--cold-start's window length (four windows)")
    parser.add_argument("--cold-concurrency", type=int_list, default=None,
                        help="--cold-start's concurrencies (default 16,64,256)")
    parser.add_argument("--cold-precisions", default="fp32,fp16",
                        help="--cold-start's precisions (fp32, fp16), in order")
    parser.add_argument("--packing", action="store_true",
                        help="the token packing table (issue 27): each case with an "
                        "attention_mask padded and packed, FP16 and FP32")
    parser.add_argument("--skip-engine", action="store_true",
                        help="no engine-only tables (with --breakdown-batch: the breakdown only)")
    parser.add_argument("--deadline-s", type=float, default=None,
                        help="start nothing new after this many seconds; rows not run say so")
    parser.add_argument("--cnn", action="store_true",
                        help="the CNN section alone (issue 26): --cnn-models at batches "
                        f"{','.join(map(str, CNN_BATCHES))} (or --batches), Coalesce FP32, "
                        "TF32, FP16 NHWC and FP16 NCHW against six PyTorch forms; each "
                        "model's FP16 --device-plan beside --out; no other section runs")
    parser.add_argument("--cnn-models", default=CNN_MODELS,
                        help="torchvision models for --cnn, ResNet-50 first")
    args = parser.parse_args()
    deadline = Deadline(args.deadline_s)
    report = Report(args.out)
    report.part([f"Measured {time.strftime('%Y-%m-%d')}.", ""])
    if args.cnn:
        with tempfile.TemporaryDirectory() as tmp:
            ok = cnn_section(args.bundle, args.cnn_models.split(","),
                             args.batches or CNN_BATCHES, Path(tmp), args.quick, report,
                             deadline, args.out.resolve().parent)
        return 0 if ok else 1
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run([sys.executable, str(args.bundle / "share" / "generate_models.py"),
                        "--out", str(work / "models"), "--only", "mlp_classifier"],
                       check=True, capture_output=True)
        mlp_dir = work / "models" / "mlp_classifier"
        makers = {
            "mlp_classifier": lambda: dense_case("mlp_classifier", mlp_dir / "1" / "model.onnx",
                                                 DENSE_BATCHES),
            "dense4096": lambda: dense_case("dense4096", save_dense(work), DENSE_BATCHES),
            "resnet50": lambda: resnet50_case(work, NET_BATCHES),
            "bert-base-s128": lambda: bert_case(args.bundle, work, NET_BATCHES),
            "bert-hf-s128": lambda: hf_bert_case(work, NET_BATCHES, 128),
            "bert-hf-s384": lambda: hf_bert_case(work, NET_BATCHES, 384),
            "gpt2-hf-s128": lambda: hf_gpt2_case(work, NET_BATCHES, 128),
            "vit_b_16": lambda: torchvision_case("vit_b_16", work, NET_BATCHES),
        }
        cases = []
        for name in args.models.split(","):
            case = makers[name]()
            if case is None:
                report.part([f"{name} not measured: torchvision or transformers is not "
                             "installed.", ""])
                continue
            if args.batches:
                case.batches = args.batches
            cases.append(case)
        ok = True
        if args.breakdown_batch:
            kernel_breakdown(args.bundle, cases, work, args.breakdown_batch, report, deadline)
        if not args.skip_engine:
            ok = engine_section(args.bundle, cases, work, args.quick, report, deadline)
        if args.packing:
            ok = packing_section(args.bundle, cases, work, args.quick, report, deadline) and ok
        if args.serve:
            ok = served_section(args.bundle, cases, work, report, deadline) and ok
        if args.cold_start:
            sys.path.insert(0, str(here))
            import cold_start
            ok = cold_start.cold_start_section(
                args.bundle, cases, work, report, deadline, args.cold_window_s,
                args.cold_concurrency or cold_start.COLD_CONCURRENCY,
                args.cold_precisions.split(",")) and ok
        if not args.skip_server:
            ok = server_section(args.bundle, mlp_dir, work, args.quick, report, deadline) and ok
    print(report.text())
    return 0 if ok else 1


def save_dense(work: Path) -> Path:
    path = work / "dense4096.onnx"
    onnx.save(dense_model([4096, 4096, 4096, 4096, 1000]), str(path))
    return path


if __name__ == "__main__":
    sys.exit(main())
