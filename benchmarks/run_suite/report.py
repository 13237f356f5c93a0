"""coalesce-bench results → rows and Markdown tables."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path


def levels(json_path: Path) -> list[dict]:
    """One dict per load level: level, throughput (infer/s), p50/p99 ms,
    avg executed batch (None without server statistics), errors, stable."""
    data = json.loads(Path(json_path).read_text())
    rows = []
    for level in data["levels"]:
        s = level["summary"]
        server = s.get("server") or {}
        rows.append(dict(
            level=level["concurrency"] if level["concurrency"] is not None else level["request_rate"],
            mode=data["mode"], throughput=s["throughput_infer_per_s"],
            p50_ms=(s["latency_ms"] or {}).get("p50"), p99_ms=(s["latency_ms"] or {}).get("p99"),
            batch=server.get("avg_batch_size"), errors=s["error_count"],
            stable=level["stable"], client_cpu=s["client_cpu_percent"]))
    return rows


def fmt(v, digits=2):
    if v is None:
        return "-"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return f"{v:.{digits}f}"
    return str(v)


def rate(v):
    """Throughput with the digits that matter: 7042, 916, 5.3."""
    return "-" if v is None else (f"{v:.0f}" if v >= 100 else f"{v:.1f}")


def ratio(a, b):
    if a is None or b is None or not b:
        return "-"
    return f"{a / b:.2f}x"


def best_under(rows, p99_bound_ms):
    """Highest throughput among stable-or-not levels whose p99 is within the
    bound and that had no errors; None when no level qualifies."""
    ok = [r for r in rows if r["p99_ms"] is not None and r["p99_ms"] <= p99_bound_ms and r["errors"] == 0]
    return max(ok, key=lambda r: r["throughput"]) if ok else None


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f", {int(line.split()[1]) / 2**20:.0f} GiB RAM"
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}{mem}, {platform.system()} {platform.release()}"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"
