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

Writes the tables as Markdown to --out (default ./gpu-bench.md) and prints
them. Exit 0 when every run succeeded and every checked output matched, 1
otherwise.

Usage: python3 gpu_bench.py [--bundle DIR] [--out FILE] [--quick]
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
                     warmup: int, precision: str, graphs: bool = True) -> list:
    """coalesce-onnx-run on the GPU with `feeds` written under `work`: outputs
    to work/out, timings to work/timing.json."""
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
            "--timing-json", str(work / "timing.json")]


def run_coalesce(bundle: Path, model: Path, feeds: dict, work: Path, repeat: int,
                 warmup: int, precision: str, graphs: bool = True) -> tuple[float, list]:
    cmd = onnx_run_command(bundle, model, feeds, work, repeat, warmup, precision, graphs)
    out, timing = work / "out", work / "timing.json"
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"coalesce-onnx-run exited {proc.returncode}: {proc.stderr[-2000:]}")
    names = [o.name for o in onnx.load(str(model), load_external_data=False).graph.output]
    outputs = [numpy_helper.to_array(onnx.load_tensor(str(out / f"{re.sub(r'[^A-Za-z0-9._-]', '_', n)}.pb")))
               for n in names]
    return json.loads(timing.read_text())["median_ms"], outputs


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
                  fp16: bool = False) -> float:
    """Host to host, as coalesce-onnx-run: pinned inputs copied in, forward,
    the output copied back to pinned memory, synchronized. fp16: under
    autocast to float16 (its weight cache off, as graph capture needs)."""
    import contextlib
    import torch
    pinned = [torch.from_numpy(a).pin_memory() for a in args_host]
    autocast = (torch.autocast("cuda", dtype=torch.float16, cache_enabled=False) if fp16
                else contextlib.nullcontext())
    with torch.inference_mode(), autocast:
        static = [p.cuda() for p in pinned]
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


def resnet50_case(work: Path, batches: list) -> ModelCase | None:
    """torchvision's ResNet-50, random weights, exported at opset 17 with a
    dynamic batch; None without torchvision."""
    try:
        import torch
        import torchvision
    except ImportError:
        return None
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).eval()
    path = work / "resnet50.onnx"
    torch.onnx.export(model, torch.randn(1, 3, 224, 224), str(path), opset_version=17,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)
    rng = np.random.default_rng(2)
    return ModelCase("resnet50", path, batches,
                     lambda b: {"input": rng.standard_normal((b, 3, 224, 224)).astype(np.float32)},
                     lambda: model.cuda())


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
    tolerance * max(1, |reference|); (a note, True) without onnxruntime."""
    if ref is None:
        return "onnxruntime not installed", True
    d = max(float(np.max(np.abs(a - r))) if a.size else 0.0 for a, r in zip(outputs, ref))
    bound = tolerance * max(1.0, max(float(np.max(np.abs(r))) for r in ref))
    return f"{d:.2e}" + ("" if d <= bound else f" (FAILED: above {bound:.1e})"), d <= bound


def torch_pair(module, feeds: dict, repeat: int, warmup: int, fp16: bool) -> list:
    """PyTorch eager and CUDA-graph ms (cells), or the failure in the cell."""
    try:
        args = list(feeds.values())
        return [torch_time_ms(module, args, repeat, warmup, graph=g, fp16=fp16)
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
        "FP16 ms. Target: at least 1.0x PyTorch with CUDA graphs at batch >= 32.", "",
        "| model | batch | Coalesce FP16 ms | PyTorch FP16 eager ms | ratio | "
        "PyTorch FP16 CUDA graph ms | ratio | max abs diff vs onnxruntime |",
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
                    for p in ("fp32", "tf32", "fp16")}
            plain, _ = run_coalesce(bundle, case.path, feeds, work, repeat, warmup, "fp32",
                                    graphs=False)
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
        row16 = [case.name, str(batch), f"{fp16:.3f}"]
        if module is not None:
            row32 += ratio_cells(torch_pair(module, feeds, repeat, warmup, False), fp32)
            row16 += ratio_cells(torch_pair(module, feeds, repeat, warmup, True), fp16)
        else:
            row32 += [why, "", "", ""]
            row16 += [why, "", "", ""]
        text32, ok32 = diff_cell(ref, fp32_out, 1e-3)
        text16, ok16 = diff_cell(ref, fp16_out, 2e-2)
        ok = ok and ok32 and ok16
        report.add(fp32_table, "| " + " | ".join(row32 + [text32]) + " |")
        report.add(fp16_table, "| " + " | ".join(row16 + [text16]) + " |")
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


def start_server(bundle: Path, repo: Path, log_path: Path, report: Report,
                 table: list) -> subprocess.Popen | None:
    """coalesce-server on `repo` at 127.0.0.1:18001, its output in
    `log_path`, once ready; None when it did not start, the log's end then
    added to `table`."""
    with open(log_path, "w") as log:
        server = subprocess.Popen([str(bundle / "bin" / "coalesce-server"), "--model-repository",
                                   str(repo), "--grpc-address", "127.0.0.1", "--grpc-port",
                                   "18001", "--metrics-address", "127.0.0.1",
                                   "--metrics-port", "0"],
                                  stdout=log, stderr=subprocess.STDOUT)
    for _ in range(900):
        if " ready" in log_path.read_text() or server.poll() is not None:
            break
        time.sleep(0.2)
    text = log_path.read_text()
    if server.poll() is not None or " ready" not in text:
        stop_server(server)
        report.add(table, f"The server did not start:\n\n```\n{text[-3000:]}\n```")
        return None
    return server


def stop_server(server: subprocess.Popen):
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()


def served_config(name: str, model: onnx.ModelProto, precision: str, max_batch: int) -> str:
    """A KIND_GPU config for `model` (batch dim first on every input and
    output, the other -1 dims given by the caller's --shape), dynamic
    batching up to `max_batch` with a 1 ms queue delay."""
    def tensors(values):
        out = []
        for vi in values:
            dims = [d.dim_value if d.dim_value > 0 else -1 for d in vi.type.tensor_type.shape.dim][1:]
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
            f'parameters: {{ key: "gpu_precision" value: {{ string_value: "{precision}" }} }}\n')


def served_section(bundle: Path, cases: list, work: Path, report: Report,
                   deadline: Deadline) -> bool:
    """Each case served on KIND_GPU in FP32 and FP16 (max batch 64), one
    request of batch 1 each, coalesce-bench closed loop over
    SERVE_CONCURRENCY: items/s, latency, the batch the server formed and
    the GPU's busy fraction."""
    repo = work / "served"
    shapes = {}
    for case in cases:
        proto = onnx.load(str(case.path), load_external_data=False)
        for precision in ("fp32", "fp16"):
            name = f"{case.name}_{precision}".replace("-", "_")
            (repo / name / "1").mkdir(parents=True)
            os.link(case.path, repo / name / "1" / "model.onnx")
            (repo / name / "config.pbtxt").write_text(served_config(name, proto, precision, 64))
        shapes[case.name] = [f"{k}:{','.join(str(d) for d in v.shape[1:])}"
                             for k, v in case.feeds(1).items()]
    table = report.part([
        "", "### Served on the GPU: coalesce-bench closed loop, one item per request", "",
        "Each model on KIND_GPU (max_batch_size 64, 1 ms queue delay), random inputs. "
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
            for precision in ("fp32", "fp16"):
                name = f"{case.name}_{precision}".replace("-", "_")
                for conc in SERVE_CONCURRENCY:
                    if deadline.passed():
                        report.add(table, f"| {case.name} | {precision} | {conc} | not run: "
                                   "--deadline-s reached | | | | |")
                        continue
                    shape_args = [a for s in shapes[case.name] for a in ("--shape", s)]
                    cells, level_ok = bench_level(bundle, name, conc, "1000", "4", sampler,
                                                  work / f"{name}_c{conc}", shape_args)
                    ok = ok and level_ok
                    report.add(table, f"| {case.name} | {precision} | {conc} | {cells} |")
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
    parser.add_argument("--skip-engine", action="store_true",
                        help="no engine-only tables (with --breakdown-batch: the breakdown only)")
    parser.add_argument("--deadline-s", type=float, default=None,
                        help="start nothing new after this many seconds; rows not run say so")
    args = parser.parse_args()
    deadline = Deadline(args.deadline_s)
    report = Report(args.out)
    report.part([f"Measured {time.strftime('%Y-%m-%d')}.", ""])
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
        }
        cases = []
        for name in args.models.split(","):
            case = makers[name]()
            if case is None:
                report.part([f"{name} not measured: torchvision is not installed.", ""])
                continue
            if args.batches:
                case.batches = args.batches
            cases.append(case)
        ok = True
        if args.breakdown_batch:
            kernel_breakdown(args.bundle, cases, work, args.breakdown_batch, report, deadline)
        if not args.skip_engine:
            ok = engine_section(args.bundle, cases, work, args.quick, report, deadline)
        if args.serve:
            ok = served_section(args.bundle, cases, work, report, deadline) and ok
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
