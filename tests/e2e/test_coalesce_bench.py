"""coalesce-bench (benchmarks/coalesce_bench) end to end against the real server.

The bench binary comes from $COALESCE_BENCH, default
<repo>/build/benchmarks/coalesce_bench/coalesce-bench. When it is missing the
tests are skipped, unless COALESCE_E2E_REQUIRE_SERVER=1 (CI), which fails them.
Every run uses short windows so that each test stays well under 20 s.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO_ROOT

RUN_TIMEOUT_S = 60  # a hard bound; the runs below take a few seconds each
QUICK = ["--warmup-ms", "200", "--window-ms", "300", "--max-windows", "5"]


def bench_binary() -> Path:
    env = os.environ.get("COALESCE_BENCH")
    path = Path(env) if env else (
        REPO_ROOT / "build" / "benchmarks" / "coalesce_bench" / "coalesce-bench")
    if not path.is_absolute():
        path = REPO_ROOT / path
    return path


@pytest.fixture(scope="module")
def bench() -> Path:
    path = bench_binary()
    if not (path.is_file() and os.access(path, os.X_OK)):
        msg = f"coalesce-bench not found at {path} (set COALESCE_BENCH or build it)"
        if os.environ.get("COALESCE_E2E_REQUIRE_SERVER") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return path


def run_bench(bench: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(bench), *args], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)


def describe(proc: subprocess.CompletedProcess) -> str:
    return (f"$ {' '.join(proc.args)}\nexit {proc.returncode}\n--- stdout\n{proc.stdout}"
            f"\n--- stderr\n{proc.stderr}")


def read_outputs(prefix: Path):
    with open(f"{prefix}.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(f"{prefix}.json") as f:
        doc = json.load(f)
    return rows, doc


def check_sane_rows(rows, doc, report):
    """Throughput > 0, ordered percentiles, no errors, server split present."""
    assert rows, report
    for row in rows:
        assert float(row["throughput_infer_per_s"]) > 0, report
        p50, p90, p99 = (float(row[k]) for k in ("p50_ms", "p90_ms", "p99_ms"))
        assert 0 < p50 <= p90 <= p99, report
        assert int(row["errors"]) == 0 and row["error_codes"] == "", report
        assert float(row["server_avg_batch_size"]) >= 1, report
        assert float(row["server_compute_infer_us"]) > 0, report
    assert doc["tool"] == "coalesce-bench"
    assert doc["server_statistics"] is True
    assert len(doc["levels"]) == len(rows)
    for level in doc["levels"]:
        summary = level["summary"]
        assert summary["successes"] > 0, report
        assert summary["errors"] == {}, report
        lat = summary["latency_ms"]
        assert lat["min"] <= lat["p50"] <= lat["p99"] <= lat["p99_9"] <= lat["max"], report
        assert summary["server"]["avg_batch_size"] >= 1, report
        # the server saw at least the requests this client completed
        assert summary["server"]["requests"] >= 1, report
        assert 1 <= len(level["windows"]) <= 5, report


def test_closed_loop_sweep(server, bench, tmp_path):
    prefix = tmp_path / "closed"
    svg = tmp_path / "closed.svg"
    proc = run_bench(bench, "-m", "mlp_classifier", "-u", server.url,
                     "--concurrency-range", "1:4:3", *QUICK,
                     "--output", str(prefix), "--plot", str(svg))
    report = describe(proc)
    assert proc.returncode == 0, report
    assert "concurrency" in proc.stdout and "p99.9 ms" in proc.stdout, report
    assert "\r" not in proc.stderr, "progress line written although stderr is not a terminal"
    rows, doc = read_outputs(prefix)
    assert [r["concurrency"] for r in rows] == ["1", "4"], report
    assert all(r["mode"] == "closed" for r in rows)
    assert doc["mode"] == "closed" and doc["model"] == "mlp_classifier"
    assert doc["rpc"] == "ModelInfer"
    check_sane_rows(rows, doc, report)
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 2


@pytest.mark.parametrize("arrival", ["poisson", "constant", "bursty"])
def test_open_loop_low_rate(server, bench, tmp_path, arrival):
    prefix = tmp_path / f"open_{arrival}"
    extra = ["--burst-on-ms", "50", "--burst-off-ms", "50"] if arrival == "bursty" else []
    proc = run_bench(bench, "-m", "two_io", "-u", server.url,
                     "--request-rate-range", "40:80:40", "--arrival", arrival, *extra,
                     *QUICK, "--output", str(prefix))
    report = describe(proc)
    assert proc.returncode == 0, report
    rows, doc = read_outputs(prefix)
    assert [float(r["request_rate"]) for r in rows] == [40.0, 80.0], report
    assert all(r["arrival"] == arrival for r in rows), report
    assert doc["mode"] == "open" and doc["arrival"] == arrival
    check_sane_rows(rows, doc, report)
    for row, level in zip(rows, doc["levels"]):
        # a low rate is served: throughput near the target (loose: short windows)
        assert 0.4 * float(row["request_rate"]) < float(row["throughput_requests_per_s"]), report
        assert level["summary"]["sends"] > 0, report


@pytest.mark.parametrize("load", [["--concurrency-range", "1:4:3"],
                                  ["--request-rate-range", "40:80:40", "--channels", "2"]],
                         ids=["closed", "open"])
def test_streaming(server, bench, tmp_path, load):
    prefix = tmp_path / "stream"
    proc = run_bench(bench, "-m", "two_io", "-u", server.url, "--streaming", *load,
                     *QUICK, "--output", str(prefix))
    report = describe(proc)
    assert proc.returncode == 0, report
    assert "ModelStreamInfer" in proc.stdout, report
    rows, doc = read_outputs(prefix)
    assert doc["rpc"] == "ModelStreamInfer"
    assert len(rows) == 2, report
    check_sane_rows(rows, doc, report)


@pytest.mark.parametrize("load", [["--concurrency-range", "1:4:3"],
                                  ["--request-rate-range", "40:80:40"]],
                         ids=["closed", "open"])
def test_http_protocol(server, bench, tmp_path, load):
    """-i http: the REST endpoints with binary tensor data, control calls
    (metadata, config, statistics) over HTTP too."""
    prefix = tmp_path / "http"
    before = server.http_client().get_inference_statistics("two_io")["model_stats"][0]
    proc = run_bench(bench, "-i", "http", "-m", "two_io", "-u", server.http_url, *load,
                     *QUICK, "--output", str(prefix))
    report = describe(proc)
    assert proc.returncode == 0, report
    assert ", HTTP" in proc.stdout, report
    rows, doc = read_outputs(prefix)
    assert doc["protocol"] == "http" and doc["rpc"] == "POST .../infer"
    assert len(rows) == 2, report
    check_sane_rows(rows, doc, report)
    after = server.http_client().get_inference_statistics("two_io")["model_stats"][0]
    completed = sum(level["summary"]["successes"] for level in doc["levels"])
    assert after["inference_count"] - before["inference_count"] >= completed, report


def test_http_errors_carry_their_code(server, bench):
    proc = run_bench(bench, "-i", "http", "-m", "no_such_model", "-u", server.http_url, *QUICK)
    assert proc.returncode == 1, describe(proc)
    assert "NOT_FOUND" in proc.stderr and "no_such_model" in proc.stderr, describe(proc)
    proc = run_bench(bench, "-i", "http", "--streaming", "-m", "two_io", "-u", server.http_url)
    assert proc.returncode == 2 and "not with -i http" in proc.stderr, describe(proc)


def test_batch_size_counts_inferences(server, bench, tmp_path):
    prefix = tmp_path / "batch"
    proc = run_bench(bench, "-m", "two_io", "-u", server.url, "--batch-size", "4",
                     "--concurrency-range", "2", *QUICK, "--output", str(prefix))
    report = describe(proc)
    assert proc.returncode == 0, report
    assert "a=FP32[4,16]" in proc.stdout, report
    rows, doc = read_outputs(prefix)
    check_sane_rows(rows, doc, report)
    [row] = rows
    assert float(row["throughput_infer_per_s"]) == pytest.approx(
        4 * float(row["throughput_requests_per_s"]), rel=1e-3)
    # every request carries 4 rows, so every execution runs at least 4
    assert float(row["server_avg_batch_size"]) >= 4, report


def test_input_data_directory(server, bench, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a").write_bytes(bytes(16 * 4))           # FP32 [1,16] of zeros
    (data / "b").write_bytes(b"\x00\x00\x80\x3f" * 16)  # FP32 [1,16] of ones
    proc = run_bench(bench, "-m", "two_io", "-u", server.url, "--input-data", str(data),
                     "--concurrency-range", "1", *QUICK)
    assert proc.returncode == 0, describe(proc)

    (data / "b").write_bytes(bytes(10))
    proc = run_bench(bench, "-m", "two_io", "-u", server.url, "--input-data", str(data),
                     *QUICK)
    assert proc.returncode == 1, describe(proc)
    assert "has 10 bytes" in proc.stderr and "needs 64" in proc.stderr, describe(proc)


BERT_TINY = REPO_ROOT / "tests" / "models" / "real" / "bert_tiny__torchscript" / "model.onnx"


def test_padding_mask_mixed_lengths(start_server, bench, tmp_path):
    """bert_tiny (input_ids, attention_mask, token_type_ids: INT64 [batch, 16])
    with a generated padding mask; the ids come from files (token type 0)."""
    if not BERT_TINY.is_file():
        pytest.skip(f"{BERT_TINY} is missing")
    repo = tmp_path / "repo"
    (repo / "bert_tiny" / "1").mkdir(parents=True)
    (repo / "bert_tiny" / "1" / "model.onnx").symlink_to(BERT_TINY)
    srv = start_server(repo)
    data = tmp_path / "data"
    data.mkdir()
    (data / "input_ids").write_bytes(np.arange(1, 17, dtype="<i8").tobytes())
    (data / "token_type_ids").write_bytes(bytes(16 * 8))  # no attention_mask file
    prefix = tmp_path / "mask"
    proc = run_bench(bench, "-m", "bert_tiny", "-u", srv.url, "--input-data", str(data),
                     "--padding-mask", "attention_mask=uniform:8", "--concurrency-range", "4",
                     *QUICK, "--output", str(prefix))
    report = describe(proc)
    assert proc.returncode == 0, report
    assert "# padding mask attention_mask=uniform:8: L in [8, 16] of S=16" in proc.stdout, report
    assert "over 64 request variants" in proc.stdout, report
    rows, doc = read_outputs(prefix)
    check_sane_rows(rows, doc, report)
    assert doc["request_variants"] == 64
    mask = doc["padding_mask"]
    assert mask["flag"] == "attention_mask=uniform:8" and mask["seq_len"] == 16, report
    assert 8 / 16 <= mask["mean_fill"] <= 1, report

    proc = run_bench(bench, "-m", "bert_tiny", "-u", srv.url, "--input-data", str(data),
                     "--padding-mask", "attention_mask=uniform:17", *QUICK)
    assert proc.returncode == 1, describe(proc)
    assert "--padding-mask uniform MIN 17 exceeds the sequence length S=16" in proc.stderr, \
        describe(proc)


def test_unknown_model_fails_clearly(server, bench):
    proc = run_bench(bench, "-m", "no_such_model", "-u", server.url, *QUICK)
    assert proc.returncode == 1, describe(proc)
    assert "no_such_model" in proc.stderr and "NOT_FOUND" in proc.stderr, describe(proc)


def test_unreachable_server_fails_clearly(bench):
    # port 1 on loopback: nothing listens there; the deadline bounds the wait
    proc = run_bench(bench, "-m", "two_io", "-u", "127.0.0.1:1", "--timeout", "2000")
    assert proc.returncode == 1, describe(proc)
    assert "UNAVAILABLE" in proc.stderr or "DEADLINE_EXCEEDED" in proc.stderr, describe(proc)


def test_bad_flags_exit_2(bench):
    proc = run_bench(bench, "-m", "two_io", "--concurrency-range", "4:1")
    assert proc.returncode == 2, describe(proc)
    assert "--concurrency-range" in proc.stderr, describe(proc)


def test_help_documents_every_flag(bench):
    proc = run_bench(bench, "--help")
    assert proc.returncode == 0, describe(proc)
    for flag in ["--model", "--url", "--model-version", "--timeout", "--concurrency-range",
                 "--request-rate-range", "--arrival", "--burst-on-ms", "--burst-off-ms",
                 "--max-inflight", "--channels", "--streaming", "--seed", "--warmup-ms",
                 "--warmup-requests", "--window-ms", "--stability-percent",
                 "--max-windows", "--batch-size", "--shape", "--input-data",
                 "--padding-mask", "--request-variants", "--output",
                 "--plot", "EXAMPLES"]:
        assert flag in proc.stdout, flag
