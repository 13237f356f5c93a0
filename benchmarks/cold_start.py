"""Issue 28's served measurement (gpu_bench.py --cold-start): from a cold
start, FP16 against FP32, served against engine only.

For each model (ResNet-50, bert-base at S=128) and precision (fp32, fp16),
and each concurrency: a fresh coalesce-server with that one model on
KIND_GPU (max_batch_size 64, 1 ms queue delay; gpu_bench.served_config),
its load time from its log (warm-up included), then coalesce-bench closed
loop from the moment the model is ready: no warm-up, four windows of
--cold-window-s seconds (stability at 0.1 %, so all four run). A row gives

- items/s over windows 2-4 (steady state);
- the p99 of window 1 (the first seconds after READY) and the median of
  the p99s of windows 2-4, and their ratio (issue 28's target: <= 1.5);
- the batch the server formed (its statistics) and the batches its setup
  threads ran (coalesce_setup_batches_total: 0 when every batch took the
  steady-state path);
- engine only at that batch (coalesce-onnx-run, host to host) in items/s,
  and served / engine (target: >= 0.9).

Then, per model and concurrency, FP16 / FP32 served items/s (target:
>= 1.0). The arithmetic (row_from_levels, verdicts) is tested on the CPU by
cold_start_test.py; the rest needs the GPU machine.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path

COLD_CONCURRENCY = [16, 64, 256]
WINDOWS = 4
GRPC_PORT, METRICS_PORT = 18011, 18012
P99_TARGET = 1.5        # first window's p99 at most this times steady state's
SERVED_TARGET = 0.9     # served items/s at least this times engine only's
FP16_TARGET = 1.0       # served FP16 at least as fast as served FP32


@dataclass
class ColdRow:
    items_per_s: float       # windows 2.. pooled by time
    first_p99_ms: float
    steady_p99_ms: float     # median of the later windows' p99
    avg_batch: float | None

    @property
    def p99_ratio(self) -> float:
        return self.first_p99_ms / self.steady_p99_ms if self.steady_p99_ms else float("inf")


def row_from_levels(bench_json: dict) -> ColdRow:
    """The row of one coalesce-bench --output JSON of a single level whose
    windows are the cold start's (window 1) and the steady state's (the
    rest). ValueError when it has fewer than two windows."""
    level = bench_json["levels"][0]
    windows = level.get("windows") or []
    if len(windows) < 2:
        raise ValueError(f"{len(windows)} window(s): need the first and a later one")
    later = windows[1:]
    seconds = sum(w["duration_s"] for w in later)
    items = sum(w["throughput_infer_per_s"] * w["duration_s"] for w in later)
    server = level.get("summary", {}).get("server") or {}
    return ColdRow(items_per_s=items / seconds if seconds else 0.0,
                   first_p99_ms=windows[0]["latency_ms"]["p99"],
                   steady_p99_ms=statistics.median(w["latency_ms"]["p99"] for w in later),
                   avg_batch=server.get("avg_batch_size"))


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISSED"


def setup_batches(metrics_text: str, model: str) -> float:
    """Sum of coalesce_setup_batches_total over `model`'s instances."""
    total = 0.0
    for line in metrics_text.splitlines():
        if line.startswith("coalesce_setup_batches_total{") and f'model="{model}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def load_seconds(log: str, model: str) -> str:
    """The warm-up seconds and total of `model`'s load line, as printed."""
    for line in log.splitlines():
        if f"model '{model}'" in line and "warm-up" in line:
            m = re.search(r"warm-up ([0-9.]+) s", line)
            return f"{m.group(1)} s" if m else "?"
    return "?"


def engine_items_per_s(bundle: Path, case, batch: int, precision: str, work: Path) -> float:
    import gpu_bench
    work.mkdir(parents=True, exist_ok=True)
    ms, _ = gpu_bench.run_coalesce(bundle, case.path, case.feeds(batch), work, 20, 5, precision)
    return batch / ms * 1000.0


def cold_start_section(bundle: Path, cases: list, work: Path, report, deadline,
                       window_s: int, concurrency: list,
                       precisions: tuple = ("fp32", "fp16")) -> bool:
    import onnx
    import gpu_bench
    table = report.part([
        "", "### Served from a cold start (issue 28)", "",
        f"A fresh server per row (KIND_GPU, max_batch_size 64, 1 ms delay, every input's dims "
        "fixed at the served shape so that warm-up prepares every batch size), coalesce-bench "
        f"closed loop from READY: {WINDOWS} windows of {window_s} s, no warm-up. p99 first: "
        f"window 1; steady: median p99 of windows 2-{WINDOWS}. Engine: coalesce-onnx-run at "
        "the batch the server formed. Setup batches: coalesce_setup_batches_total.", "",
        "| model | precision | concurrency | load (warm-up) | items/s | p99 first ms | "
        "p99 steady ms | first/steady | avg batch | setup batches | engine items/s | "
        "served/engine |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"])
    ok = True
    served: dict = {}
    for case in cases:
        proto = onnx.load(str(case.path), load_external_data=False)
        feeds = case.feeds(1)
        shape_args = [a for k, v in feeds.items()
                      for a in ("--shape", f"{k}:{','.join(str(d) for d in v.shape[1:])}")]
        if "attention_mask" in feeds:
            seq = feeds["attention_mask"].shape[-1]
            shape_args += ["--padding-mask", f"attention_mask=uniform:{seq // 2}"]
        for precision in precisions:
            for conc in concurrency:
                label = f"| {case.name} | {precision} | {conc} |"
                if deadline.passed():
                    report.add(table, f"{label} not run: --deadline-s reached |" + " |" * 8)
                    continue
                name = f"{case.name}_{precision}".replace("-", "_")
                repo = work / f"cold_{name}_c{conc}"
                (repo / name / "1").mkdir(parents=True)
                (repo / name / "1" / "model.onnx").symlink_to(case.path)
                (repo / name / "config.pbtxt").write_text(
                    gpu_bench.served_config(name, proto, precision, 64,
                                            {k: v.shape[1:] for k, v in feeds.items()}))
                log_path = work / f"cold_{name}_c{conc}.log"
                server = gpu_bench.start_server(bundle, repo, log_path, None, None,
                                                GRPC_PORT, METRICS_PORT)
                if server is None:
                    report.add(table, f"{label} the server did not start: "
                               f"{gpu_bench.cell(log_path.read_text()[-800:])} |" + " |" * 8)
                    ok = False
                    continue
                try:
                    prefix = work / f"cold_{name}_c{conc}"
                    proc = subprocess.run(
                        [str(bundle / "bin" / "coalesce-bench"), "-m", name, "-u",
                         f"127.0.0.1:{GRPC_PORT}", "--concurrency-range", str(conc),
                         "--warmup-ms", "0", "--window-ms", str(window_s * 1000),
                         "--max-windows", str(WINDOWS), "--stability-percent", "0.1",
                         *shape_args, "--output", str(prefix)],
                        capture_output=True, text=True, timeout=window_s * WINDOWS + 120)
                    metrics = urllib.request.urlopen(
                        f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=10).read().decode()
                finally:
                    gpu_bench.stop_server(server)
                if proc.returncode != 0:
                    report.add(table, f"{label} bench FAILED: {gpu_bench.cell(proc.stderr)} |"
                               + " |" * 8)
                    ok = False
                    continue
                row = row_from_levels(json.loads(prefix.with_suffix(".json").read_text()))
                served[(case.name, precision, conc)] = row.items_per_s
                batch = max(1, round(row.avg_batch or 1))
                try:
                    engine = engine_items_per_s(bundle, case, batch, precision,
                                                work / f"engine_{name}_{batch}")
                    engine_cells = (f"{engine:.0f} (batch {batch}) | "
                                    f"{row.items_per_s / engine:.2f} "
                                    f"{verdict(row.items_per_s >= SERVED_TARGET * engine)}")
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    engine_cells = f"FAILED: {gpu_bench.cell(str(e))} |"
                    ok = False
                report.add(table, f"{label} {load_seconds(log_path.read_text(), name)} | "
                           f"{row.items_per_s:.0f} | {row.first_p99_ms:.2f} | "
                           f"{row.steady_p99_ms:.2f} | {row.p99_ratio:.2f} "
                           f"{verdict(row.p99_ratio <= P99_TARGET)} | "
                           f"{row.avg_batch or 0:.1f} | "
                           f"{setup_batches(metrics, name):.0f} | {engine_cells} |")
    ratios = report.part(["", "FP16 / FP32 served items/s (target >= 1.0):", "",
                          "| model | concurrency | fp16 / fp32 |", "|---|---:|---:|"])
    for case in cases:
        for conc in concurrency:
            fp32 = served.get((case.name, "fp32", conc))
            fp16 = served.get((case.name, "fp16", conc))
            if fp32 and fp16:
                report.add(ratios, f"| {case.name} | {conc} | {fp16 / fp32:.2f} "
                           f"{verdict(fp16 >= FP16_TARGET * fp32)} |")
    return ok
