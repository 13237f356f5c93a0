"""The Prometheus endpoint (server/metrics_endpoint.h, docs/metrics.md):
Triton's nv_* families per model and version, in the text exposition
format, agreeing exactly with ModelStatistics; --allow-metrics false turns
it off."""

from __future__ import annotations

import re
import shutil
import subprocess
import urllib.request

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

import generate_models as gm
from conftest import tiny_config
from e2e_util import make_inputs

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

TRITON_FAMILIES = {
    "nv_inference_request_success": "counter",
    "nv_inference_request_failure": "counter",
    "nv_inference_count": "counter",
    "nv_inference_exec_count": "counter",
    "nv_inference_pending_request_count": "gauge",
    "nv_inference_request_duration_us": "counter",
    "nv_inference_queue_duration_us": "counter",
    "nv_inference_compute_input_duration_us": "counter",
    "nv_inference_compute_infer_duration_us": "counter",
    "nv_inference_compute_output_duration_us": "counter",
}


def scrape(url: str) -> tuple[dict, dict]:
    """(types by family, {(name, frozenset(labels)): value}); fails on any
    line that is not valid text exposition format."""
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    types, samples = {}, {}
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
            continue
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not exposition format: {line!r}"
        labels = frozenset(LABEL.findall(m.group(2) or ""))
        value = float(m.group(3))  # also rejects what Prometheus cannot parse
        samples[(m.group(1), labels)] = value
    return types, samples


def stat_ns(duration: dict) -> int:
    """A StatisticDuration's total from tritonclient's JSON. Protobuf's JSON
    leaves out fields at zero: a request batched on the thread that queued it
    waits 0 ns (docs/batching.md), so the queue total can be absent."""
    return int(duration.get("ns", 0))


def model_series(samples: dict, family: str, model: str, **extra) -> float:
    want = {("model", model), ("version", "1"), *extra.items()}
    found = [v for (name, labels), v in samples.items() if name == family and labels == want]
    assert len(found) == 1, (family, model, [k for k in samples if k[0] == family])
    return found[0]


@pytest.fixture
def metrics_repo(tmp_path):
    repo = tmp_path / "repo_metrics"
    gm.write_model(repo, "m", gm.make_tiny_model(), tiny_config("m"))
    return repo


def test_triton_families_agree_with_model_statistics(start_server, metrics_repo):
    srv = start_server(metrics_repo)
    assert srv.metrics_url, "no 'metrics on' line in the log"
    client = srv.client()
    for i in range(7):
        x = np.full((1 + i % 3, 4), i, dtype=np.float32)
        client.infer("m", make_inputs(x=x), client_timeout=30)
    bad = [grpcclient.InferInput("x", [1, 5], "FP32")]  # wrong width
    bad[0].set_data_from_numpy(np.zeros((1, 5), dtype=np.float32))
    with pytest.raises(InferenceServerException):
        client.infer("m", bad, client_timeout=30)

    types, samples = scrape(srv.metrics_url)
    for family, kind in TRITON_FAMILIES.items():
        assert types.get(family) == kind, (family, types.get(family))
    stats = client.get_inference_statistics("m", as_json=True)["model_stats"][0]
    inference = stats["inference_stats"]
    assert model_series(samples, "nv_inference_request_success", "m") == int(inference["success"]["count"]) == 7
    reasons = {r: model_series(samples, "nv_inference_request_failure", "m", reason=r)
               for r in ("REJECTED", "CANCELED", "BACKEND", "OTHER")}
    assert sum(reasons.values()) == int(inference["fail"]["count"])
    assert reasons == {"REJECTED": 0, "CANCELED": 0, "BACKEND": 0, "OTHER": 1}  # the bad width
    assert model_series(samples, "nv_inference_count", "m") == int(stats["inference_count"]) == 1 + 2 + 3 + 1 + 2 + 3 + 1
    assert model_series(samples, "nv_inference_exec_count", "m") == int(stats["execution_count"])
    assert model_series(samples, "nv_inference_pending_request_count", "m") == 0
    for family, key in (("nv_inference_request_duration_us", "success"),
                        ("nv_inference_queue_duration_us", "queue"),
                        ("nv_inference_compute_input_duration_us", "compute_input"),
                        ("nv_inference_compute_infer_duration_us", "compute_infer"),
                        ("nv_inference_compute_output_duration_us", "compute_output")):
        assert model_series(samples, family, "m") == stat_ns(inference[key]) // 1000, family


def histogram(samples: dict, family: str, model: str) -> tuple[list, float, float]:
    """([(le, cumulative count)] by le, count, sum) of one model's series."""
    want = {("model", model), ("version", "1")}
    buckets = sorted((float(dict(labels)["le"]), v) for (name, labels), v in samples.items()
                     if name == family + "_bucket" and labels - {l for l in labels if l[0] == "le"} == want)
    return (buckets, model_series(samples, family + "_count", model),
            model_series(samples, family + "_sum", model))


def test_coalesce_families_agree_with_model_statistics(start_server, metrics_repo):
    srv = start_server(metrics_repo)
    client = srv.client()
    for i in range(5):
        client.infer("m", make_inputs(x=np.full((1 + i % 2, 4), i, dtype=np.float32)),
                     client_timeout=30)
    bad = [grpcclient.InferInput("x", [1, 5], "FP32")]
    bad[0].set_data_from_numpy(np.zeros((1, 5), dtype=np.float32))
    with pytest.raises(InferenceServerException):
        client.infer("m", bad, client_timeout=30)
    types, samples = scrape(srv.metrics_url)
    stats = client.get_inference_statistics("m", as_json=True)["model_stats"][0]
    inference = stats["inference_stats"]
    for family, key in (("coalesce_request_duration_seconds", "success"),
                        ("coalesce_queue_duration_seconds", "queue"),
                        ("coalesce_compute_input_duration_seconds", "compute_input"),
                        ("coalesce_compute_infer_duration_seconds", "compute_infer"),
                        ("coalesce_compute_output_duration_seconds", "compute_output")):
        assert types[family] == "histogram"
        buckets, count, total = histogram(samples, family, "m")
        assert count == int(inference[key]["count"]) == 5, family
        assert total == pytest.approx(stat_ns(inference[key]) / 1e9, rel=1e-9), family
        assert buckets[-1] == (float("inf"), count), family
        assert [c for _, c in buckets] == sorted(c for _, c in buckets), family  # cumulative
    buckets, count, total = histogram(samples, "coalesce_batch_size", "m")
    assert count == int(stats["execution_count"])
    assert total == int(stats["inference_count"]) == 7
    outcomes = {o: model_series(samples, "coalesce_requests_total", "m", outcome=o)
                for o in ("success", "rejected", "timed_out", "cancelled", "invalid", "internal")}
    assert outcomes == {"success": 5, "rejected": 0, "timed_out": 0, "cancelled": 0,
                        "invalid": 1, "internal": 0}
    assert model_series(samples, "coalesce_queue_depth", "m", priority_level="0") == 0
    assert samples[("process_cpu_seconds_total", frozenset())] > 0
    assert samples[("process_resident_memory_bytes", frozenset())] > 1 << 20
    info = [(labels, v) for (name, labels), v in samples.items() if name == "coalesce_build_info"]
    assert len(info) == 1 and info[0][1] == 1 and dict(info[0][0])["version"], info


def test_promtool_finds_nothing_but_the_triton_names(start_server, metrics_repo):
    """`promtool check metrics` (Prometheus' own linter) on a live scrape after
    traffic: every finding must be about a Triton family, whose names are kept
    as Triton spells them for compatibility (counters without _total, _us)."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: scripts/bootstrap installs Debian's prometheus"
    srv = start_server(metrics_repo)
    srv.client().infer("m", make_inputs(x=np.ones((2, 4), dtype=np.float32)), client_timeout=30)
    text = urllib.request.urlopen(srv.metrics_url, timeout=10).read()
    proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                          timeout=60)
    findings = [l for l in (proc.stdout + proc.stderr).decode().splitlines() if l.strip()]
    assert findings, "promtool found nothing: the nv_* names should at least be reported"
    others = [l for l in findings if l.split()[0] not in TRITON_FAMILIES]
    assert not others, "\n".join(others)


def test_allow_metrics_false_serves_no_endpoint(start_server, metrics_repo):
    srv = start_server(metrics_repo, "--allow-metrics", "false")
    assert srv.client().is_server_ready()
    assert srv.metrics_url is None
    assert "metrics on" not in srv.log()
