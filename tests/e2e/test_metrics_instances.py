"""The metrics endpoint beyond the request counters: each model instance's
time split into states, the idle diagnosis built on it, the Triton GPU
families read through NVML (the fake NVML of tests/fake_nvml, loaded the way
the driver's library is), and a scrape with the CUDA plugin loaded."""

from __future__ import annotations

import os
import re
import time
import urllib.request

import numpy as np
import pytest

import generate_models as gm
from conftest import tiny_config, wait_for
from e2e_util import make_inputs
from test_coalesce_bench import bench_binary, describe, run_bench
from test_metrics import scrape

STATES = ("computing", "copying_in", "copying_out", "blocked_pipeline",
          "idle_assembling", "idle_empty_queue")
REASONS = {"saturated", "low_load", "small_batches", "assembling", "copy_bound",
           "pipeline_blocked", "no_traffic", "ok"}


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo_instances"
    gm.write_model(repo, "m", gm.make_tiny_model(), tiny_config("m"))
    return repo


def state_seconds(samples: dict, model: str = "m", instance: str = "0") -> dict:
    found = {}
    for (name, labels), value in samples.items():
        l = dict(labels)
        if (name == "coalesce_instance_state_seconds_total" and l.get("model") == model
                and l.get("model_instance") == instance):
            assert l["version"] == "1", l
            found[l["state"]] = value
    return found


def test_instance_states_split_wall_time(start_server, repo):
    srv = start_server(repo)
    client = srv.client()
    for i in range(20):
        client.infer("m", make_inputs(x=np.full((2, 4), i, dtype=np.float32)), client_timeout=30)
    t0 = time.monotonic()
    types, first = scrape(srv.metrics_url)
    t1 = time.monotonic()
    assert types["coalesce_instance_state_seconds_total"] == "counter"
    before = state_seconds(first)
    assert set(before) == set(STATES), before
    assert before["computing"] > 0, before  # 20 batches ran
    assert before["idle_empty_queue"] > 0, before
    wait_for(lambda: time.monotonic() - t1 > 0.5, 5, what="half a second of idle time")
    t2 = time.monotonic()
    _, second = scrape(srv.metrics_url)
    t3 = time.monotonic()
    after = state_seconds(second)
    for state in STATES:
        assert after[state] >= before[state], (state, before, after)
    # Idle, nothing in flight: the states grow by the time between the scrapes.
    grown = sum(after.values()) - sum(before.values())
    assert t2 - t1 <= grown <= t3 - t0, (grown, t2 - t1, t3 - t0)
    # Nearly all of it idle with an empty queue: the last batch may still have
    # held its slot for the moment between answering and releasing it when
    # the first scrape ran, and is accounted when it releases (milliseconds).
    idle = after["idle_empty_queue"] - before["idle_empty_queue"]
    assert grown - 0.05 <= idle <= grown + 1e-9, (idle, grown, before, after)


def test_idle_diagnosis_is_published_and_logged(start_server, repo):
    srv = start_server(repo, "--metrics-interval-ms", "100")
    client = srv.client()
    client.infer("m", make_inputs(x=np.ones((1, 4), dtype=np.float32)), client_timeout=30)

    def diagnosis():
        _, samples = scrape(srv.metrics_url)
        return [dict(labels) for (name, labels), v in samples.items()
                if name == "coalesce_instance_diagnosis_info" and v == 1]

    wait_for(lambda: diagnosis(), 10, 0.1, "a coalesce_instance_diagnosis_info series")
    infos = diagnosis()
    assert len(infos) == 1, infos  # one per instance, never one per request
    info = infos[0]
    assert (info["model"], info["version"], info["model_instance"]) == ("m", "1", "0")
    assert info["reason"] in REASONS, info
    # An idle server: the queue was empty nearly all of the window.
    assert info["reason"] in ("low_load", "small_batches", "no_traffic"), info
    assert info["detail"], info
    line = re.search(r"model 'm' version 1 instance 0: (\w+): (.+)", srv.log())
    assert line, srv.log()
    assert line.group(1) in REASONS


def fake_nvml() -> str:
    path = os.environ.get("COALESCE_FAKE_NVML")
    if not path or not os.path.isfile(path):
        message = f"COALESCE_FAKE_NVML={path!r} is not the built fake NVML (run through ctest)"
        if os.environ.get("COALESCE_E2E_REQUIRE_SERVER") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return path


GPU0 = "GPU-00000000-1111-2222-3333-444444444444"
GPU1 = "GPU-55555555-6666-7777-8888-999999999999"


def test_gpu_families_through_nvml(start_server, repo, monkeypatch):
    monkeypatch.setenv("COALESCE_NVML_LIBRARY", fake_nvml())
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    srv = start_server(repo)
    assert "GPU metrics for 2 GPU(s) through NVML" in srv.log()
    text = urllib.request.urlopen(srv.metrics_url, timeout=10).read().decode()
    types, samples = scrape(srv.metrics_url)
    expected = {
        ("nv_gpu_utilization", GPU0): 0.37, ("nv_gpu_utilization", GPU1): 0.0,
        ("nv_gpu_memory_total_bytes", GPU0): 85899345920,
        ("nv_gpu_memory_total_bytes", GPU1): 17179869184,
        ("nv_gpu_memory_used_bytes", GPU0): 1234567890,
        ("nv_gpu_memory_used_bytes", GPU1): 0,
        ("nv_gpu_power_usage", GPU0): 123.456,  # GPU1 cannot report power
    }
    found = {(name, dict(labels)["gpu_uuid"]): v for (name, labels), v in samples.items()
             if name.startswith("nv_gpu_")}
    assert found == expected
    for (name, labels), _ in samples.items():
        if name.startswith("nv_gpu_"):
            assert [k for k, _ in labels] == ["gpu_uuid"], labels
            assert types[name] == "gauge"
    # perf_analyzer's parser reads plain decimals only.
    gpu_lines = [l for l in text.splitlines() if l.startswith("nv_gpu_")]
    assert len(gpu_lines) == 7
    for line in gpu_lines:
        assert re.fullmatch(r'nv_gpu_\w+\{gpu_uuid="GPU-[0-9a-f-]+"\} \d+(\.\d+)?', line), line


def test_no_gpu_families_without_nvml(start_server, repo, monkeypatch):
    monkeypatch.setenv("COALESCE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
    srv = start_server(repo)
    assert "no GPU metrics: cannot load NVML" in srv.log()
    _, samples = scrape(srv.metrics_url)
    assert not [k for k in samples if k[0].startswith("nv_gpu_")]


def test_scrapes_cleanly_with_the_cuda_plugin_loaded(start_server, tmp_path):
    """DESIGN.md records a static-TLS failure when cuBLAS was linked at
    start-up; the plugin now loads when a KIND_GPU model does, so scrape
    after that."""
    repo = tmp_path / "repo_plugin"
    gm.write_model(repo, "on_gpu", gm.make_tiny_model(),
                   tiny_config("on_gpu").replace("kind: KIND_CPU", "kind: KIND_GPU"))
    gm.write_model(repo, "m", gm.make_tiny_model(), tiny_config("m"))
    srv = start_server(repo)
    client = srv.client()
    index = {m.name: m for m in client.get_model_repository_index().models}
    assert "(KIND_GPU)" in index["on_gpu"].reason or index["on_gpu"].state == "READY", index
    client.infer("m", make_inputs(x=np.ones((1, 4), dtype=np.float32)), client_timeout=30)
    types, samples = scrape(srv.metrics_url)
    assert types["nv_inference_request_success"] == "counter"
    ok = [v for (name, labels), v in samples.items()
          if name == "nv_inference_request_success" and dict(labels)["model"] == "m"]
    assert ok == [1]


def required_bench():
    bench = bench_binary()
    if not bench.is_file():
        message = f"coalesce-bench not found at {bench}"
        if os.environ.get("COALESCE_E2E_REQUIRE_SERVER") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return bench


def test_coalesce_bench_reports_the_split_and_the_diagnosis(start_server, repo):
    bench = required_bench()
    srv = start_server(repo, "--metrics-interval-ms", "100")
    proc = run_bench(bench, "-m", "m", "-u", srv.url, "--concurrency-range", "2",
                     "--window-ms", "500", "--warmup-ms", "200", "--max-windows", "3",
                     "--metrics-url", srv.metrics_url)
    assert proc.returncode == 0, describe(proc)
    split = re.search(r"^#   instance 0: computing (\d+)% \| copying_in \d+% \| copying_out \d+% "
                      r"\| blocked_pipeline \d+% \| idle_assembling \d+% \| idle_empty_queue \d+%$",
                      proc.stdout, re.M)
    assert split and int(split.group(1)) > 0, describe(proc)
    diagnosis = re.search(r"^# server diagnosis, instance 0: (\w+): .+$", proc.stdout, re.M)
    assert diagnosis and diagnosis.group(1) in REASONS, describe(proc)


def test_coalesce_bench_warns_when_the_metrics_url_does_not_answer(start_server, repo):
    bench = required_bench()
    srv = start_server(repo)
    proc = run_bench(bench, "-m", "m", "-u", srv.url, "--window-ms", "300",
                     "--warmup-ms", "100", "--max-windows", "2",
                     "--metrics-url", "127.0.0.1:1/metrics")
    assert proc.returncode == 0, describe(proc)
    assert re.search(r"note: --metrics-url: GET http://127.0.0.1:1/metrics: .*connect",
                     proc.stderr), describe(proc)
