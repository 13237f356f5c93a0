"""Resource limits: a message above --grpc-max-message-bytes gets
RESOURCE_EXHAUSTED; a request that would take the bytes held by queued and
running requests above --max-inflight-bytes gets UNAVAILABLE at once, and
serving goes on once the held requests are answered; a stream reads no
more than --grpc-stream-max-pending requests ahead of its answers."""

from __future__ import annotations

import queue
import time

import numpy as np
import pytest
from tritonclient.utils import InferenceServerException

import generate_models as gm
from conftest import tiny_config, wait_for
from e2e_util import make_inputs
from test_metrics import model_series, scrape


def test_message_above_grpc_max_message_bytes_is_resource_exhausted(start_server, tmp_path):
    width = 1 << 18  # one row is 1 MiB of float32
    repo = tmp_path / "repo_limit"
    gm.write_model(repo, "wide", gm.make_tiny_model(width=width), tiny_config("wide", width=width))
    srv = start_server(repo, "--grpc-max-message-bytes", str(3 << 19))  # 1.5 MiB
    client = srv.client()
    one = np.ones((1, width), dtype=np.float32)
    np.testing.assert_allclose(client.infer("wide", make_inputs(x=one)).as_numpy("y"), one * 2 + 1)
    with pytest.raises(InferenceServerException) as err:
        client.infer("wide", make_inputs(x=np.ones((2, width), dtype=np.float32)))
    assert err.value.status() == "StatusCode.RESOURCE_EXHAUSTED", err.value
    # The server goes on serving.
    np.testing.assert_allclose(client.infer("wide", make_inputs(x=one)).as_numpy("y"), one * 2 + 1)


def test_inflight_bytes_budget_refuses_at_once_then_serves_again(start_server, tmp_path):
    width = 1 << 17  # one row is 512 KiB of float32
    repo = tmp_path / "repo_budget"
    # The first request waits 1.5 s in the queue for company, holding its bytes.
    config = tiny_config("wide", max_batch_size=2, width=width,
                         dynamic_batching="max_queue_delay_microseconds: 1500000")
    gm.write_model(repo, "wide", gm.make_tiny_model(width=width), config)
    srv = start_server(repo, "--max-inflight-bytes", str(800 << 10))
    client = srv.client()
    row = np.ones((1, width), dtype=np.float32)
    answers: queue.Queue = queue.Queue()
    client.async_infer("wide", make_inputs(x=row), callback=lambda result, error: answers.put((result, error)))
    wait_for(lambda: model_series(scrape(srv.metrics_url)[1],
                                  "nv_inference_pending_request_count", "wide") == 1,
             timeout=10, what="the first request queued")
    with pytest.raises(InferenceServerException) as err:
        client.infer("wide", make_inputs(x=row))
    assert err.value.status() == "StatusCode.UNAVAILABLE", err.value
    assert "--max-inflight-bytes" in str(err.value)
    result, error = answers.get(timeout=30)
    assert error is None, error
    np.testing.assert_allclose(result.as_numpy("y"), row * 2 + 1)
    # Its bytes are back: the next request is admitted.
    np.testing.assert_allclose(client.infer("wide", make_inputs(x=row)).as_numpy("y"), row * 2 + 1)


def test_stream_reads_no_more_than_max_pending_requests(start_server, tmp_path):
    # Requests wait 1.5 s in the queue for company, so every request the
    # stream has read shows in the pending gauge until its batch runs.
    repo = tmp_path / "repo_stream_pending"
    config = tiny_config("slow", max_batch_size=8,
                         dynamic_batching="max_queue_delay_microseconds: 1500000")
    gm.write_model(repo, "slow", gm.make_tiny_model(), config)
    srv = start_server(repo, "--grpc-stream-max-pending", "2")
    client = srv.client()
    answers: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    rows = [np.full((1, 4), i, dtype=np.float32) for i in range(6)]
    for i, row in enumerate(rows):
        client.async_stream_infer("slow", make_inputs(x=row), request_id=str(i))
    # Sample the queue until every answer is in: the stream holds back the
    # requests beyond the first two until those are written.
    most_pending, got = 0, []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        most_pending = max(most_pending, model_series(
            scrape(srv.metrics_url)[1], "nv_inference_pending_request_count", "slow"))
        while not answers.empty():
            got.append(answers.get())
        if len(got) == len(rows):
            break
    client.stop_stream()
    assert len(got) == len(rows), f"{len(got)} of {len(rows)} answers"
    assert most_pending == 2, most_pending
    for i, (result, error) in enumerate(got):
        assert error is None, error
        assert result.get_response().id == str(i)
        np.testing.assert_allclose(result.as_numpy("y"), rows[i] * 2 + 1)
