#!/usr/bin/env python3
"""The engine against ONNX Runtime, side by side on one machine, in one run.

Cases: light_resnet50 with random weights (tests/models/randomize_light.py,
seed 0, batch dimension made symbolic) at batch 1, 8 and 32 on N(0, 1)
224x224 images, and the bert-base encoder (tests/models/make_encoder.py:
12 layers, hidden 768, 12 heads, intermediate 3072, LayerNormalization op and
erf GELU as torch exports at opset 17) at batch 1 and 8, sequence 128,
no padding; and the other eight light networks of the ONNX conformance data
(AlexNet, DenseNet-121, Inception v1 and v2, ShuffleNet, SqueezeNet,
VGG-19, ZFNet-512), randomized the same way, at batch 1 on N(0, 1) inputs
of their declared shape.

For each case and each of --rounds rounds, alternately:
- ONNX Runtime (CPUExecutionProvider, default graph optimizations ON,
  intra_op_num_threads=T, inter_op_num_threads=1, sequential): the case's
  repeat count of runs timed one by one (time.perf_counter around sess.run),
  after one warm-up run in the first round;
- coalesce-onnx-run --threads T --repeat R (steady_clock around one batch:
  inputs into the slot, CopyIn, Run, CopyOut), after its untimed first run,
  engine graph optimizations on as in the server.
Each side's latency is the median over all its timed runs; the headline is
onnxruntime_ms / coalesce_ms (above 1: the engine is faster). The engine's
first-run outputs are also compared with ONNX Runtime's (tolerance of the
onnxruntime comparison suite) so a fast wrong answer does not count.

Writes benchmarks/results/engine_vs_onnxruntime.md (the table, with the
command and the machine) and .csv (one row per case). Exits 1 when a case
failed (its row says why), 0 otherwise.

Usage:
  python3 benchmarks/engine_vs_onnxruntime.py [--threads 2] [--rounds 3]
      [--onnx-run build/tools/coalesce-onnx-run] [--cases resnet50-b1,...]
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "models"))

import make_encoder  # noqa: E402
import randomize_light  # noqa: E402
import runners  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
BERT_SEQ = 128


@dataclasses.dataclass(frozen=True)
class Case:
    name: str  # "resnet50-b8"
    model: str  # "resnet50", "bert-base" or "light_<network>"
    batch: int
    repeat: int  # timed runs per round and side


# Repeats keep each case near 30-60 s of compute on 2 cores, the whole run
# under 10 minutes.
CASES = (
    Case("resnet50-b1", "resnet50", 1, repeat=10),
    Case("resnet50-b8", "resnet50", 8, repeat=3),
    Case("resnet50-b32", "resnet50", 32, repeat=1),
    Case("bert-base-b1", "bert-base", 1, repeat=6),
    Case("bert-base-b8", "bert-base", 8, repeat=2),
    Case("alexnet-b1", "light_bvlc_alexnet", 1, repeat=10),
    Case("densenet121-b1", "light_densenet121", 1, repeat=6),
    Case("inception_v1-b1", "light_inception_v1", 1, repeat=10),
    Case("inception_v2-b1", "light_inception_v2", 1, repeat=10),
    Case("shufflenet-b1", "light_shufflenet", 1, repeat=10),
    Case("squeezenet-b1", "light_squeezenet", 1, repeat=10),
    Case("vgg19-b1", "light_vgg19", 1, repeat=2),
    Case("zfnet512-b1", "light_zfnet512", 1, repeat=6),
)


@dataclasses.dataclass
class Result:
    case: Case
    ort_runs_ms: list = dataclasses.field(default_factory=list)
    ours_runs_ms: list = dataclasses.field(default_factory=list)
    outputs_match: str = "-"  # "yes", or what differs
    error: str = ""

    def ort_ms(self) -> float | None:
        return statistics.median(self.ort_runs_ms) if self.ort_runs_ms else None

    def ours_ms(self) -> float | None:
        return statistics.median(self.ours_runs_ms) if self.ours_runs_ms else None

    def ratio(self) -> float | None:
        ort, ours = self.ort_ms(), self.ours_ms()
        return ort / ours if ort and ours else None


# --------------------------------------------------------------------------
# models and inputs
# --------------------------------------------------------------------------

def prepare_models(workdir: Path, needed: set, conformance_dir: Path) -> dict:
    """Writes the models the cases need; returns name -> path."""
    paths = {}
    if "resnet50" in needed:
        light = conformance_dir / "light" / "light_resnet50.onnx"
        model = randomize_light.randomize_light(onnx.load(str(light)), 0, make_batchable=True)
        paths["resnet50"] = workdir / "resnet50.onnx"
        onnx.save(model, str(paths["resnet50"]))
    for name in sorted(n for n in needed if n.startswith("light_")):
        light = onnx.load(str(conformance_dir / "light" / f"{name}.onnx"))
        paths[name] = workdir / f"{name}.onnx"
        onnx.save(randomize_light.randomize_light(light, 0), str(paths[name]))
    if "bert-base" in needed:
        cfg = make_encoder.preset("bert-base", layer_norm="op", gelu="erf")
        paths["bert-base"] = workdir / "bert_base.onnx"
        onnx.save(make_encoder.make_encoder(cfg), str(paths["bert-base"]))
    return paths


def light_input(model: str) -> tuple:
    """(name, dims) of a light network's one image input, as declared."""
    path = runners.conformance_data_dir() / "light" / f"{model}.onnx"
    graph = onnx.load(str(path), load_external_data=False).graph
    weights = {t.name for t in graph.initializer}
    x = next(i for i in graph.input if i.name not in weights)
    return x.name, [d.dim_value for d in x.type.tensor_type.shape.dim]


def case_inputs(case: Case) -> dict:
    if case.model == "bert-base":
        cfg = make_encoder.PRESETS["bert-base"]
        return make_encoder.encoder_inputs(cfg, case.batch, BERT_SEQ, seed=0, padded=False)
    rng = np.random.default_rng(0)
    if case.model.startswith("light_"):
        name, dims = light_input(case.model)
        return {name: rng.standard_normal(dims).astype(np.float32)}
    return {"gpu_0/data_0": rng.standard_normal((case.batch, 3, 224, 224)).astype(np.float32)}


# --------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------

def time_onnxruntime(sess, feeds: dict, warmup: int, repeat: int) -> list:
    for _ in range(warmup):
        sess.run(None, feeds)
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        sess.run(None, feeds)
        runs.append((time.perf_counter() - start) * 1e3)
    return runs


def check_outputs(ours: dict, sess, feeds: dict) -> str:
    names = [o.name for o in sess.get_outputs()]
    problems = runners.compare_outputs(ours, dict(zip(names, sess.run(names, feeds))))
    return "yes" if not problems else "NO: " + "; ".join(problems)


def run_case(case: Case, model_path: Path, args, workdir: Path) -> Result:
    result = Result(case)
    feeds = case_inputs(case)
    sess = runners.onnxruntime_session(model_path, threads=args.threads, optimize=True)
    for round_index in range(args.rounds):
        # One warm-up each: ONNX Runtime's in the first round (the session
        # lives on); the engine's is coalesce-onnx-run's untimed first run
        # (a new process each round).
        warmup = 1 if round_index == 0 else 0
        result.ort_runs_ms += time_onnxruntime(sess, feeds, warmup, case.repeat)
        try:
            run = runners.run_coalesce(model_path, feeds, workdir / case.name, threads=args.threads,
                                       repeat=case.repeat, binary=args.onnx_run)
        except runners.CoalesceRunError as err:
            result.error = _shorten(err.stderr.replace("|", "/"), 240)
            return result
        result.ours_runs_ms += run.timing["runs_ms"]
        if round_index == 0:
            result.outputs_match = check_outputs(run.outputs, sess, feeds)
        print(f"  {case.name} round {round_index + 1}/{args.rounds}: onnxruntime "
              f"{statistics.median(result.ort_runs_ms):.1f} ms, coalesce "
              f"{statistics.median(result.ours_runs_ms):.1f} ms (medians so far)", flush=True)
    return result


# --------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------

def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _fmt(value: float | None, digits: int = 1, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import onnxruntime
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} cores, {cpu}; onnxruntime {onnxruntime.__version__}; "
            f"load average at the end {load} (1, 5, 15 min: other work on the machine skews both sides)")


def markdown(results: list, args, command: str, elapsed_s: float) -> str:
    lines = [
        "# Engine vs ONNX Runtime (CPU)", "",
        f"Command: `{command}`  ",
        f"Machine: {machine()}  ",
        f"Threads: {args.threads} intra-op for both; {args.rounds} alternating rounds; "
        f"whole run {elapsed_s:.0f} s", "",
        "**ratio = onnxruntime ms / coalesce ms**: above 1 the engine is faster. Latency is the "
        "median of every timed run of one batch. Both sides use their default load-time graph "
        "optimizations (ONNX Runtime ORT_ENABLE_ALL; the engine's, as the server runs it).", "",
        "| model | batch | ratio (ort / ours) | onnxruntime ms | coalesce ms | timed runs each "
        "| outputs match | note |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in results:
        lines.append(f"| {r.case.model} | {r.case.batch} | **{_fmt(r.ratio(), 2, 'x')}** | "
                     f"{_fmt(r.ort_ms())} | {_fmt(r.ours_ms())} | {len(r.ours_runs_ms)} | "
                     f"{r.outputs_match} | {r.error or ''} |")
    return "\n".join(lines) + "\n"


def write_csv(results: list, args, path: Path) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "model", "batch", "threads", "onnxruntime_median_ms", "coalesce_median_ms",
                    "ratio_ort_over_coalesce", "onnxruntime_runs", "coalesce_runs", "outputs_match", "error"])
        for r in results:
            w.writerow([r.case.name, r.case.model, r.case.batch, args.threads, _fmt(r.ort_ms(), 3),
                        _fmt(r.ours_ms(), 3), _fmt(r.ratio(), 3), len(r.ort_runs_ms),
                        len(r.ours_runs_ms), r.outputs_match, r.error])


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2, help="intra-op threads for both (default 2)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per case (default 3)")
    ap.add_argument("--onnx-run", type=Path, default=None,
                    help="coalesce-onnx-run binary (default $COALESCE_ONNX_RUN or build/tools/...)")
    ap.add_argument("--cases", default=",".join(c.name for c in CASES),
                    help="comma-separated subset of: " + ", ".join(c.name for c in CASES))
    ap.add_argument("--out-dir", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    args.onnx_run = args.onnx_run or runners.onnx_run_binary()
    wanted = args.cases.split(",")
    unknown = set(wanted) - {c.name for c in CASES}
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}")
    args.selected = [c for c in CASES if c.name in wanted]
    if not args.onnx_run.is_file():
        ap.error(f"coalesce-onnx-run not found at {args.onnx_run}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    command = "python3 " + " ".join(shlex.quote(a) for a in [os.path.relpath(__file__, ROOT),
                                                              *(argv or sys.argv[1:])])
    print(f"command: {command}", flush=True)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="engine_vs_ort_") as tmp:
        workdir = Path(tmp)
        paths = prepare_models(workdir, {c.model for c in args.selected}, runners.conformance_data_dir())
        results = [run_case(c, paths[c.model], args, workdir) for c in args.selected]
    elapsed = time.monotonic() - start
    args.out_dir.mkdir(parents=True, exist_ok=True)
    text = markdown(results, args, command, elapsed)
    (args.out_dir / "engine_vs_onnxruntime.md").write_text(text)
    write_csv(results, args, args.out_dir / "engine_vs_onnxruntime.csv")
    print(text)
    failed = [r for r in results if r.error or r.outputs_match not in ("yes", "-")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
