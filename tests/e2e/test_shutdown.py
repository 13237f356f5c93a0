"""Graceful shutdown: queued requests finish after SIGTERM and the server exits 0;
a batch that never finishes does not hold the exit past the timeout."""

import os
import signal
import time

import numpy as np
import pytest

import generate_models as gm
from conftest import tiny_config, wait_for
from e2e_util import fill_queue, make_inputs
from test_metrics import model_series, scrape


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_queued_requests_complete_after_signal(start_server, tmp_path, sig):
    """Three requests sit in the queue (1.5 s batching window) when the signal
    arrives; all three complete OK and the server exits 0."""
    repo = tmp_path / "repo_shutdown"
    # requests wait up to 1.5 s for more; the queue holds 3, a batch is at most 8
    gm.write_model(repo, "slow", gm.make_tiny_model(),
                   tiny_config("slow", 8, "max_queue_delay_microseconds: 1500000 "
                                          "default_queue_policy { max_queue_size: 3 }"))
    srv = start_server(repo, "--exit-timeout-secs", "20")
    client = srv.client()

    xs = [np.full((1, 4), i, np.float32) for i in range(4)]
    t_sent = time.monotonic()
    # returns once one of the 4 was rejected: the other 3 are then queued
    collector, rejected, _ = fill_queue(client, "slow", xs, queue_size=3, client_timeout=60)
    assert collector.q.empty(), "the queued requests must still be waiting in the 1.5 s window"

    srv.send_signal(sig)
    results = collector.get(3, timeout=40)
    assert sorted(tag for tag, *_ in results) == sorted(set(range(4)) - {rejected})
    for tag, result, error, _t in results:
        assert error is None, f"queued request {tag} failed after shutdown signal: {error}"
        np.testing.assert_array_equal(result.as_numpy("y"), xs[tag] * 2 + 1)

    code = srv.wait(timeout=30)
    assert code == 0, f"exit code {code}; log:\n{srv.log()[-4000:]}"
    assert time.monotonic() - t_sent < 25


def test_shutdown_flushes_queued_requests_at_once(start_server, tmp_path):
    """A model whose batcher would hold requests for 20 s (max_batch_size 8): after
    SIGTERM the queued requests are executed at once, not after the delay and not
    cancelled when the 5 s grace (--exit-timeout-secs 5) ends; the server exits 0."""
    repo = tmp_path / "repo_flush"
    gm.write_model(repo, "held", gm.make_tiny_model(),
                   tiny_config("held", 8, "max_queue_delay_microseconds: 20000000 "
                                          "default_queue_policy { max_queue_size: 2 }"))
    srv = start_server(repo, "--exit-timeout-secs", "5")
    client = srv.client()

    xs = [np.full((1, 4), i + 1, np.float32) for i in range(3)]
    # 3 sent, the queue holds 2: once one is rejected the other two are queued
    collector, rejected, _ = fill_queue(client, "held", xs, queue_size=2, client_timeout=60)
    # The server's own count says both are held in the queue (no sleep).
    wait_for(lambda: model_series(scrape(srv.metrics_url)[1],
                                  "nv_inference_pending_request_count", "held") == 2,
             timeout=10, what="both requests held in the queue")
    assert collector.q.empty(), "the two queued requests must be held by the 20 s delay"

    t_signal = time.monotonic()
    srv.send_signal(signal.SIGTERM)
    results = collector.get(2, timeout=30)
    assert sorted(tag for tag, *_ in results) == sorted(set(range(3)) - {rejected})
    for tag, result, error, t_done in results:
        assert error is None, (f"queued request {tag} failed after SIGTERM "
                               f"({t_done - t_signal:.2f}s): {error}; log:\n{srv.log()[-3000:]}")
        np.testing.assert_array_equal(result.as_numpy("y"), xs[tag] * 2 + 1)
        assert t_done - t_signal < 3.0, (
            f"request {tag} completed {t_done - t_signal:.2f}s after SIGTERM: queued requests "
            "must be flushed at once, not after the delay or at the end of the grace period")

    code = srv.wait(timeout=30)
    exited = time.monotonic() - t_signal
    assert code == 0, f"exit code {code}; log:\n{srv.log()[-4000:]}"
    assert exited < 5.0 + 3.0, f"exit took {exited:.2f}s after SIGTERM with a 5 s grace"


def test_idle_server_exits_promptly(start_server, tmp_path):
    repo = tmp_path / "repo_idle"
    gm.write_model(repo, "fast", gm.make_tiny_model(), tiny_config("fast"))
    srv = start_server(repo)
    t0 = time.monotonic()
    srv.send_signal(signal.SIGTERM)
    assert srv.wait(timeout=20) == 0
    assert time.monotonic() - t0 < 10


def test_open_idle_stream_does_not_hold_shutdown(start_server, tmp_path):
    """A client that keeps its stream open without sending: after SIGTERM the
    stream ends with UNAVAILABLE once its requests are answered, and the
    server exits long before the 30 s grace."""
    import queue
    from e2e_util import make_inputs
    repo = tmp_path / "repo_stream"
    gm.write_model(repo, "fast", gm.make_tiny_model(), tiny_config("fast"))
    srv = start_server(repo, "--exit-timeout-secs", "30")
    client = srv.client()
    answers: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        x = np.ones((1, 4), np.float32)
        client.async_stream_infer("fast", make_inputs(x=x))
        result, error = answers.get(timeout=30)
        assert error is None, error
        t0 = time.monotonic()
        srv.send_signal(signal.SIGTERM)
        _, error = answers.get(timeout=20)
        assert error is not None and "shutting down" in str(error), error
        assert srv.wait(timeout=20) == 0
        assert time.monotonic() - t0 < 10, "the open stream held shutdown"
    finally:
        client.stop_stream()


def test_a_hung_batch_does_not_hold_exit_past_the_timeout(start_server, tmp_path):
    """A KIND_GPU model on the simulated device plugin whose first output copy
    never finishes (a hung GPU): after SIGTERM with --exit-timeout-secs 1 the
    server gives up after the grace period plus its 2 s slack, names what it
    abandoned, and exits 1 instead of waiting forever for the batch."""
    plugin = os.environ.get("COALESCE_SIMULATED_PLUGIN")
    assert plugin and os.path.isfile(plugin), "COALESCE_SIMULATED_PLUGIN: run through ctest"
    repo = tmp_path / "repo_hung"
    # Graphs off: the instance then prepares no batch sizes at load
    # (docs/server.md, "Warm-up at load"), so the held copy is the request's.
    gm.write_model(repo, "hung", gm.make_tiny_model(),
                   tiny_config("hung").replace("kind: KIND_CPU", "kind: KIND_GPU")
                   + 'parameters { key: "cuda_graphs" value: { string_value: "false" } }\n')
    marker = tmp_path / "device_hung"
    srv = start_server(repo, "--exit-timeout-secs", "1",
                       env={"COALESCE_DEVICE_PLUGIN": plugin,
                            "COALESCE_SIMULATED_HOLD": "copy_to_host:0",
                            "COALESCE_SIMULATED_HOLD_MARKER": str(marker)})
    client = srv.client()
    assert client.is_model_ready("hung"), srv.log()[-3000:]

    answers = []
    client.async_infer("hung", make_inputs(x=np.ones((1, 4), np.float32)),
                       callback=lambda result, error: answers.append((result, error)),
                       client_timeout=60)
    wait_for(marker.exists, timeout=30, what="the device to hang on the batch's output copy")

    t_signal = time.monotonic()
    srv.send_signal(signal.SIGTERM)
    code = srv.wait(timeout=30)
    exited = time.monotonic() - t_signal
    log = srv.log()
    assert code == 1, f"exit code {code}; log:\n{log[-4000:]}"
    assert exited < 1 + 2 + 3, f"exit took {exited:.2f}s after SIGTERM with a 1 s grace"
    assert "abandoned: 'hung' version 1: 1 batch in flight, 0 requests queued" in log, log[-4000:]
    assert not any(error is None for _, error in answers), "the hung request cannot have succeeded"


def test_signal_while_loading_ends_the_process_at_once(start_server, tmp_path):
    """A model whose warm-up would run for hours (a hundred million runs):
    SIGTERM during the load ends the server at once with 128 + 15, saying
    so, instead of going unanswered until every model is loaded (a GPU
    model's first warm-up can take minutes)."""
    repo = tmp_path / "repo_loading"
    gm.write_model(repo, "endless", gm.make_tiny_model(),
                   tiny_config("endless")
                   + 'model_warmup [ { name: "w" batch_size: 1 count: 100000000 inputs { key: "x" '
                     'value: { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } } } ]\n')
    srv = start_server(repo, wait_ready=False)
    wait_for(lambda: "listening on" in srv.log(), timeout=30,
             what="the server to listen before its models load")
    t_signal = time.monotonic()
    srv.send_signal(signal.SIGTERM)
    code = srv.wait(timeout=30)
    log = srv.log()
    assert code == 128 + signal.SIGTERM, f"exit code {code}; log:\n{log[-3000:]}"
    assert time.monotonic() - t_signal < 5, "the signal waited for the load"
    assert "received signal 15 while loading models: exiting" in log, log[-3000:]
    assert " ready" not in log, log[-3000:]
