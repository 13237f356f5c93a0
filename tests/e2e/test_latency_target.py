"""Latency-target batching (docs/batching.md, "Latency target") through a
real server: a model whose config asks for a 500 ms batching window, which
four closed-loop clients can never fill (max_batch_size 8), but which also
sets latency_target_p99_ms: 50. The target replaces the window, so the
requests meet it; the metrics show the policy's decision; a bad target
fails its model's load with the reason while the other models serve."""

import threading
import time

import numpy as np

import generate_models as gm
from conftest import tiny_config
from e2e_util import make_inputs
from test_metrics import scrape

TARGET_MS = 50
WINDOW_US = 500_000  # what a static config would wait for company


def target_config(name: str, value: str) -> str:
    return (tiny_config(name, max_batch_size=8,
                        dynamic_batching=f"max_queue_delay_microseconds: {WINDOW_US}")
            + f'parameters {{ key: "latency_target_p99_ms" '
              f'value {{ string_value: "{value}" }} }}\n')


def closed_loop(srv, model: str, clients: int, requests_each: int) -> list[float]:
    """Each client sends `requests_each` requests one after the other;
    returns every request's latency in seconds."""
    latencies, errors = [], []
    lock = threading.Lock()

    def run():
        client = srv.client()
        x = np.ones((1, 4), np.float32)
        for _ in range(requests_each):
            start = time.monotonic()
            try:
                result = client.infer(model, make_inputs(x=x), client_timeout=30)
                np.testing.assert_allclose(result.as_numpy("y"), x * 2 + 1)
            except Exception as e:  # noqa: BLE001 - reported below
                with lock:
                    errors.append(str(e))
                return
            with lock:
                latencies.append(time.monotonic() - start)

    threads = [threading.Thread(target=run) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]
    assert len(latencies) == clients * requests_each
    return latencies


def family(samples: dict, name: str, model: str) -> float | None:
    for (sample, labels), value in samples.items():
        if sample == name and ("model", model) in labels:
            return value
    return None


def test_the_target_replaces_a_window_the_load_cannot_fill(start_server, tmp_path):
    repo = tmp_path / "repo_target"
    gm.write_model(repo, "targeted", gm.make_tiny_model(), target_config("targeted", "50"))
    gm.write_model(repo, "bad_target", gm.make_tiny_model(), target_config("bad_target", "fast"))
    gm.write_model(repo, "plain", gm.make_tiny_model(), tiny_config("plain"))
    srv = start_server(repo)
    client = srv.client()
    index = {m.name: m for m in client.get_model_repository_index().models}
    assert index["plain"].state == "READY", index["plain"]
    assert index["targeted"].state == "READY", index["targeted"]
    assert index["bad_target"].state == "UNAVAILABLE", index["bad_target"]
    assert ("parameter 'latency_target_p99_ms' (\"fast\"): must be a positive "
            "number of milliseconds") in index["bad_target"].reason, index["bad_target"].reason
    assert "max_queue_delay_microseconds and preferred_batch_size are not used" in srv.log()

    latencies = closed_loop(srv, "targeted", clients=4, requests_each=150)
    # Client-side, with gRPC and Python around the server's time: the
    # static window alone would put every request at 500 ms.
    p99 = float(np.percentile(latencies, 99))
    assert p99 < TARGET_MS / 1000, f"client p99 {p99 * 1000:.1f} ms"

    _, samples = scrape(srv.metrics_url)
    assert family(samples, "coalesce_latency_target_seconds", "targeted") == TARGET_MS / 1000
    observed = family(samples, "coalesce_latency_target_observed_p99_seconds", "targeted")
    assert observed is not None and observed < TARGET_MS / 1000, observed
    wait = family(samples, "coalesce_latency_target_wait_seconds", "targeted")
    assert wait is not None and wait < TARGET_MS / 1000, wait
    batch = family(samples, "coalesce_latency_target_batch_size", "targeted")
    assert batch is not None and 1 <= batch <= 8, batch
    assert family(samples, "coalesce_latency_target_predicted_p99_seconds", "targeted") is not None
    assert family(samples, "coalesce_latency_target_shed_total", "targeted") == 0
    # Models without a target export none of it.
    assert family(samples, "coalesce_latency_target_seconds", "plain") is None
