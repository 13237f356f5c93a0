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


def run_coalesce(bundle: Path, model: Path, feeds: dict, work: Path, repeat: int,
                 warmup: int, precision: str, graphs: bool = True) -> tuple[float, list]:
    inputs = []
    for i, (name, x) in enumerate(feeds.items()):
        f = work / f"in{i}.pb"
        f.write_bytes(numpy_helper.from_array(x, name).SerializeToString())
        inputs += ["--input", f"{name}={f}"]
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    timing = work / "timing.json"
    cmd = [str(bundle / "bin" / "coalesce-onnx-run"), "--device", "gpu", "--gpu-precision",
           precision, "--device-graphs", "on" if graphs else "off",
           "--model", str(model), *inputs, "--output-dir", str(out),
           "--warmup", str(warmup), "--repeat", str(repeat), "--timing-json", str(timing)]
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


def bert_case(bundle: Path, work: Path, batches: list) -> ModelCase:
    """The bert-base encoder of tests/models/make_encoder.py (12 layers,
    hidden 768), sequence 128; no PyTorch twin of it exists here."""
    sys.path.insert(0, str(bundle / "share"))
    import make_encoder
    cfg = make_encoder.preset("bert-base", seed=0)
    path = work / "bert-base.onnx"
    onnx.save(make_encoder.make_encoder(cfg), str(path))
    return ModelCase("bert-base-s128", path, batches,
                     lambda b: make_encoder.encoder_inputs(cfg, batch=b, seq=128, seed=b, padded=True),
                     None, "no PyTorch version of this encoder here")


def case_runs(cases: list, why_no_torch: str):
    """(case, its PyTorch module or None, batch, feeds) for every batch of
    every case; each case's module is built once."""
    for case in cases:
        module = None
        if not why_no_torch and case.torch_module is not None:
            module = case.torch_module()
        for batch in case.batches:
            yield case, module, batch, case.feeds(batch)


def diff_cell(model: Path, feeds: dict, outputs: list, tolerance: float) -> tuple[str, bool]:
    """The max |Coalesce - onnxruntime| cell, and whether it is within
    tolerance * max(1, |reference|); (a note, True) without onnxruntime."""
    ref = onnxruntime_outputs(model, feeds)
    if ref is None:
        return "onnxruntime not installed", True
    d = max(float(np.max(np.abs(a - r))) if a.size else 0.0 for a, r in zip(outputs, ref))
    bound = tolerance * max(1.0, max(float(np.max(np.abs(r))) for r in ref))
    return f"{d:.2e}" + ("" if d <= bound else f" (FAILED: above {bound:.1e})"), d <= bound


def engine_section(bundle: Path, cases: list, work: Path, quick: bool) -> tuple[str, bool]:
    repeat, warmup = (10, 3) if quick else (50, 10)
    why_no_torch = torch_status()
    lines = [f"Median of {repeat} host-to-host runs after {warmup} warm-up runs (copies in and "
             "out included on both sides). FP32 with TF32 off on both sides; the TF32 column is "
             "Coalesce with `gpu_precision: tf32`; \"no graphs\" is Coalesce FP32 with "
             "`cuda_graphs: false` (the launch overhead graphs remove). Ratio: PyTorch ms / "
             "Coalesce FP32 ms (above 1: "
             "Coalesce is faster). Outputs checked against onnxruntime on the CPU (max |diff|, "
             "FP32 run).", ""]
    if why_no_torch:
        lines += [f"PyTorch columns empty: {why_no_torch}.", ""]
    lines += ["| model | batch | Coalesce FP32 ms | no graphs ms | Coalesce TF32 ms | "
              "PyTorch eager ms | ratio | PyTorch CUDA graph ms | ratio | "
              "max abs diff vs onnxruntime |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    ok = True
    for case, module, batch, feeds in case_runs(cases, why_no_torch):
        row = [case.name, str(batch)]
        try:
            fp32, outputs = run_coalesce(bundle, case.path, feeds, work, repeat, warmup, "fp32")
            plain, _ = run_coalesce(bundle, case.path, feeds, work, repeat, warmup, "fp32",
                                    graphs=False)
            tf32, _ = run_coalesce(bundle, case.path, feeds, work, repeat, warmup, "tf32")
        except Exception as e:  # noqa: BLE001 - reported in the table
            lines.append(f"| {case.name} | {batch} | FAILED: {cell(str(e))} | | | | | | | |")
            ok = False
            continue
        row += [f"{fp32:.3f}", f"{plain:.3f}", f"{tf32:.3f}"]
        if module is not None:
            args = list(feeds.values())
            e = torch_time_ms(module, args, repeat, warmup, graph=False)
            g = torch_time_ms(module, args, repeat, warmup, graph=True)
            row += [f"{e:.3f}", f"{e / fp32:.2f}x", f"{g:.3f}", f"{g / fp32:.2f}x"]
        else:
            row += ["", "", "", ""] if not case.why_no_torch else [case.why_no_torch, "", "", ""]
        text, matched = diff_cell(case.path, feeds, outputs, 1e-3)
        row.append(text)
        ok = ok and matched
        lines.append("| " + " | ".join(row) + " |")
    fp16_lines, fp16_ok = fp16_table(bundle, cases, work, repeat, warmup, why_no_torch)
    return "\n".join(lines + [""] + fp16_lines), ok and fp16_ok


def fp16_table(bundle: Path, cases: list, work: Path, repeat: int, warmup: int,
               why_no_torch: str) -> tuple[list, bool]:
    """Coalesce with `gpu_precision: fp16` against PyTorch under autocast
    float16, eager and with CUDA graphs; outputs within 2e-2 of max(1, |ref|)
    of onnxruntime's (float16 operands keep 10 mantissa bits)."""
    lines = ["FP16: Coalesce with `gpu_precision: fp16` (products on float16 operands, "
             "float32 accumulation, float32 elsewhere) against PyTorch under "
             "`torch.autocast(float16)`, same runs as above. Ratio: PyTorch ms / Coalesce "
             "FP16 ms. Target: at least 1.0x PyTorch with CUDA graphs at batch >= 32.", "",
             "| model | batch | Coalesce FP16 ms | PyTorch FP16 eager ms | ratio | "
             "PyTorch FP16 CUDA graph ms | ratio | max abs diff vs onnxruntime |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    ok = True
    for case, module, batch, feeds in case_runs(cases, why_no_torch):
        try:
            fp16, outputs = run_coalesce(bundle, case.path, feeds, work, repeat, warmup,
                                         "fp16")
        except Exception as e:  # noqa: BLE001 - reported in the table
            lines.append(f"| {case.name} | {batch} | FAILED: {cell(str(e))} | | | | | |")
            ok = False
            continue
        row = [case.name, str(batch), f"{fp16:.3f}"]
        if module is not None:
            args = list(feeds.values())
            e = torch_time_ms(module, args, repeat, warmup, graph=False, fp16=True)
            g = torch_time_ms(module, args, repeat, warmup, graph=True, fp16=True)
            row += [f"{e:.3f}", f"{e / fp16:.2f}x", f"{g:.3f}", f"{g / fp16:.2f}x"]
        else:
            row += [case.why_no_torch or why_no_torch, "", "", ""]
        text, matched = diff_cell(case.path, feeds, outputs, 2e-2)
        row.append(text)
        ok = ok and matched
        lines.append("| " + " | ".join(row) + " |")
    return lines, ok


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


def server_section(bundle: Path, mlp_dir: Path, work: Path, quick: bool) -> tuple[str, bool]:
    repo = work / "repo"
    variants = {}
    for batching in (True, False):
        for db in (True, False):
            name = f"mlp_b{int(batching)}_d{int(db)}"
            write_variant(repo, mlp_dir, name, batching, db)
            variants[name] = (batching, db)
    log = open(work / "server.log", "w")
    server = subprocess.Popen([str(bundle / "bin" / "coalesce-server"), "--model-repository", str(repo),
                               "--grpc-address", "127.0.0.1", "--grpc-port", "18001",
                               "--metrics-address", "127.0.0.1", "--metrics-port", "0"],
                              stdout=log, stderr=subprocess.STDOUT)
    ok = True
    lines = ["coalesce-bench closed loop, batch 1 per request, mlp_classifier on KIND_GPU "
             "(max_batch_size 64). GPU busy: mean of nvidia-smi utilization.gpu over the level.", "",
             "| batching | double buffering | concurrency | infer/s | p50 ms | p99 ms | avg batch | GPU busy |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    try:
        for _ in range(600):
            if " ready" in (work / "server.log").read_text() or server.poll() is not None:
                break
            time.sleep(0.2)
        text = (work / "server.log").read_text()
        if server.poll() is not None or " ready" not in text:
            return f"The server did not start:\n\n```\n{text[-3000:]}\n```", False
        sampler = GpuSampler()
        window = "1000" if quick else "2000"
        for name, (batching, db) in variants.items():
            for conc in CONCURRENCY:
                prefix = work / f"{name}_c{conc}"
                sampler.start()
                proc = subprocess.run(
                    [str(bundle / "bin" / "coalesce-bench"), "-m", name, "-u", "127.0.0.1:18001",
                     "--concurrency-range", str(conc), "--window-ms", window, "--max-windows", "5",
                     "--output", str(prefix)], capture_output=True, text=True, timeout=300)
                busy = sampler.stop()
                if proc.returncode != 0:
                    lines.append(f"| {batching} | {db} | {conc} | FAILED: {cell(proc.stderr)} | | | | |")
                    ok = False
                    continue
                s = json.loads(prefix.with_suffix(".json").read_text())["levels"][0]["summary"]
                lat = s.get("latency_ms") or {}
                batch = (s.get("server") or {}).get("avg_batch_size")
                if s.get("error_count"):
                    ok = False
                lines.append(f"| {batching} | {db} | {conc} | {s['throughput_infer_per_s']:.0f} | "
                             f"{lat.get('p50', 0):.2f} | {lat.get('p99', 0):.2f} | "
                             f"{batch if batch is None else f'{batch:.1f}'} | {busy} |")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    return "\n".join(lines), ok


def main() -> int:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser()
    parser.add_argument("--bundle", type=Path, default=here.parent)
    parser.add_argument("--out", type=Path, default=Path("gpu-bench.md"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-server", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run([sys.executable, str(args.bundle / "share" / "generate_models.py"),
                        "--out", str(work / "models"), "--only", "mlp_classifier"],
                       check=True, capture_output=True)
        mlp_dir = work / "models" / "mlp_classifier"
        dense = work / "dense4096.onnx"
        onnx.save(dense_model([4096, 4096, 4096, 4096, 1000]), str(dense))
        cases = [dense_case("mlp_classifier", mlp_dir / "1" / "model.onnx", DENSE_BATCHES),
                 dense_case("dense4096", dense, DENSE_BATCHES)]
        resnet = resnet50_case(work, NET_BATCHES)
        cases += [resnet] if resnet is not None else []
        cases.append(bert_case(args.bundle, work, NET_BATCHES))
        engine, ok = engine_section(args.bundle, cases, work, args.quick)
        if resnet is None:
            engine += "\n\nResNet-50 not measured: torchvision is not installed."
        report = ["### Engine only: Coalesce against PyTorch on the same GPU", "", engine, ""]
        if not args.skip_server:
            server, server_ok = server_section(args.bundle, mlp_dir, work, args.quick)
            ok = ok and server_ok
            report += ["### Server end to end: batching and double buffering", "", server, ""]
    text = "\n".join(report)
    print(text)
    args.out.write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
