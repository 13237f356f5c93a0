"""Graceful shutdown: queued requests finish after SIGTERM and the server exits 0."""

import signal
import time

import numpy as np
import pytest

import generate_models as gm
from conftest import tiny_config
from e2e_util import AsyncCollector, make_inputs


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_queued_requests_complete_after_signal(start_server, tmp_path, sig):
    repo = tmp_path / "repo_shutdown"
    # requests wait up to 1.5 s for more; a batch is at most 8
    gm.write_model(repo, "slow", gm.make_tiny_model(),
                   tiny_config("slow", 8, "max_queue_delay_microseconds: 1500000"))
    gm.write_model(repo, "fast", gm.make_tiny_model(), tiny_config("fast"))
    srv = start_server(repo, "--exit-timeout-secs", "20")
    client = srv.client()

    collector = AsyncCollector()
    xs = [np.full((1, 4), i, np.float32) for i in range(3)]
    t_sent = time.monotonic()
    for i, x in enumerate(xs):
        client.async_infer("slow", make_inputs(x=x), collector.tagged(i), client_timeout=60)
    # barrier: the queued requests reached the server before this round trip ended
    client.infer("fast", make_inputs(x=np.zeros((1, 4), np.float32)), client_timeout=30)
    assert collector.q.empty(), "the slow requests must still be queued"

    srv.send_signal(sig)
    results = collector.get(len(xs), timeout=40)
    for tag, result, error in results:
        assert error is None, f"queued request {tag} failed after shutdown signal: {error}"
        np.testing.assert_array_equal(result.as_numpy("y"), xs[tag] * 2 + 1)

    code = srv.wait(timeout=30)
    assert code == 0, f"exit code {code}; log:\n{srv.log()[-4000:]}"
    assert time.monotonic() - t_sent < 25


def test_idle_server_exits_promptly(start_server, tmp_path):
    repo = tmp_path / "repo_idle"
    gm.write_model(repo, "fast", gm.make_tiny_model(), tiny_config("fast"))
    srv = start_server(repo)
    t0 = time.monotonic()
    srv.send_signal(signal.SIGTERM)
    assert srv.wait(timeout=20) == 0
    assert time.monotonic() - t0 < 10
