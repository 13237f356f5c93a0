"""Dynamic batching, statistics, queue policies and client deadlines."""

import time

import numpy as np
import pytest
from tritonclient.utils import InferenceServerException

from conftest import wait_for
from e2e_util import AsyncCollector, assert_close, get_stats, make_inputs, status_name


def barrier(client):
    """A synchronous round trip on the same channel: requests sent before it have
    reached the server by the time it returns (HTTP/2 keeps a connection's order)."""
    client.infer("tiny_plain", make_inputs(x=np.zeros((1, 4), np.float32)), client_timeout=30)


def stats_delta(before, after):
    return (after.inference_count - before.inference_count,
            after.execution_count - before.execution_count)


def batch_delta(before, after) -> dict:
    """batch size -> executions of that size between two snapshots."""
    old = {b.batch_size: b.compute_infer.count for b in before.batch_stats}
    out = {}
    for b in after.batch_stats:
        n = b.compute_infer.count - old.get(b.batch_size, 0)
        if n:
            out[b.batch_size] = n
    return out


def test_statistics_grow_after_inferences(client, rng):
    before = get_stats(client, "two_io")
    for batch in (1, 3, 8):
        a = rng.standard_normal((batch, 16), dtype=np.float32)
        client.infer("two_io", make_inputs(a=a, b=a))
    after = wait_for(lambda: (s := get_stats(client, "two_io")).inference_count
                     - before.inference_count >= 12 and s, 10, what="statistics")
    assert after.version == "1"
    assert after.inference_count - before.inference_count == 12
    assert 1 <= after.execution_count - before.execution_count <= 3
    st, bst = after.inference_stats, before.inference_stats
    assert st.success.count - bst.success.count == 3          # requests, not batch elements
    assert st.queue.count - bst.queue.count == 3
    assert st.compute_infer.count - bst.compute_infer.count == 3
    assert st.success.ns > bst.success.ns
    assert st.queue.ns >= bst.queue.ns
    assert after.last_inference >= before.last_inference
    assert after.last_inference > 1_500_000_000_000  # ms since epoch
    assert sum(b.compute_infer.count for b in after.batch_stats) == after.execution_count


def test_statistics_all_models_and_unknown(client):
    resp = client.get_inference_statistics(as_json=False)
    names = {s.name for s in resp.model_stats}
    assert {"mlp_classifier", "two_io", "tiny_plain"} <= names
    for s in resp.model_stats:
        assert s.version.isdigit(), s  # perf_analyzer parses it as a number
    with pytest.raises(InferenceServerException) as ei:
        client.get_inference_statistics("no_such_model")
    assert status_name(ei.value) == "NOT_FOUND", ei.value


def test_mlp_concurrent_load_is_batched(client, reference, rng):
    """32 concurrent single-item requests on mlp_classifier (1 instance, 1 ms delay):
    while one batch computes the rest queue up, so executions < requests."""
    n = 32
    before = get_stats(client, "mlp_classifier")
    xs = [rng.standard_normal((1, 1024), dtype=np.float32) for _ in range(n)]
    collector = AsyncCollector()
    for i, x in enumerate(xs):
        client.async_infer("mlp_classifier", make_inputs(input=x), collector.tagged(i),
                           client_timeout=120)
    results = collector.get(n, timeout=120)
    expected = reference.run("mlp_classifier", {"input": np.concatenate(xs)})["probabilities"]
    for tag, result, error in results:
        assert error is None, error
        assert_close(result.as_numpy("probabilities"), expected[tag:tag + 1], 1e-5, 1e-6, f"req {tag}")
    after = wait_for(lambda: (s := get_stats(client, "mlp_classifier")).inference_count
                     - before.inference_count >= n and s, 10, what="statistics")
    inferences, executions = stats_delta(before, after)
    assert inferences == n
    assert executions < n, f"{executions} executions for {n} concurrent requests: no batching"
    assert max(batch_delta(before, after)) > 1


def test_concurrent_requests_are_merged(client):
    """tiny_batching waits 200 ms for more requests (max_batch_size 8): 16 requests sent
    at once run in few executions, each getting its own rows back."""
    n = 16
    before = get_stats(client, "tiny_batching")
    collector = AsyncCollector()
    xs = [np.full((1, 4), i, np.float32) for i in range(n)]
    t0 = time.monotonic()
    for i, x in enumerate(xs):
        client.async_infer("tiny_batching", make_inputs(x=x), collector.tagged(i), client_timeout=30)
    for tag, result, error in collector.get(n, timeout=30):
        assert error is None, error
        np.testing.assert_array_equal(result.as_numpy("y"), xs[tag] * 2 + 1)
    elapsed = time.monotonic() - t0
    after = wait_for(lambda: (s := get_stats(client, "tiny_batching")).inference_count
                     - before.inference_count >= n and s, 10, what="statistics")
    inferences, executions = stats_delta(before, after)
    assert inferences == n
    assert executions < n, "requests were not merged"
    assert executions <= 4, f"{executions} executions for {n} requests in a 200 ms window"
    sizes = batch_delta(before, after)
    assert sum(size * k for size, k in sizes.items()) == n
    assert max(sizes) >= 4, sizes
    assert max(sizes) <= 8, sizes
    assert elapsed < 20


def test_multi_item_requests_merge_whole(client):
    """Requests of batch 3 merge whole: never above max_batch_size 8."""
    n = 6
    before = get_stats(client, "tiny_batching")
    collector = AsyncCollector()
    xs = [np.arange(12, dtype=np.float32).reshape(3, 4) + 100 * i for i in range(n)]
    for i, x in enumerate(xs):
        client.async_infer("tiny_batching", make_inputs(x=x), collector.tagged(i), client_timeout=30)
    for tag, result, error in collector.get(n, timeout=30):
        assert error is None, error
        np.testing.assert_array_equal(result.as_numpy("y"), xs[tag] * 2 + 1)
    after = wait_for(lambda: (s := get_stats(client, "tiny_batching")).inference_count
                     - before.inference_count >= 3 * n and s, 10, what="statistics")
    inferences, executions = stats_delta(before, after)
    assert inferences == 3 * n
    assert executions < n
    sizes = batch_delta(before, after)
    assert set(sizes) <= {3, 6}, sizes
    assert sum(size * k for size, k in sizes.items()) == 3 * n


def test_queue_full_is_unavailable(client):
    """tiny_qfull holds one queued request for 3 s; a second one is rejected."""
    collector = AsyncCollector()
    first = np.ones((1, 4), np.float32)
    client.async_infer("tiny_qfull", make_inputs(x=first), collector.callback, client_timeout=30)
    barrier(client)
    t0 = time.monotonic()
    with pytest.raises(InferenceServerException) as ei:
        client.infer("tiny_qfull", make_inputs(x=first * 2), client_timeout=30)
    assert status_name(ei.value) == "UNAVAILABLE", ei.value
    assert time.monotonic() - t0 < 2.0, "rejection must be immediate, not after the delay"
    [(result, error)] = collector.get(1, timeout=30)
    assert error is None, error
    np.testing.assert_array_equal(result.as_numpy("y"), first * 2 + 1)


def test_queue_timeout_reject_is_unavailable(client):
    """tiny_qreject: 100 ms queue timeout with REJECT, while the batcher waits 2 s."""
    before = get_stats(client, "tiny_qreject")
    t0 = time.monotonic()
    with pytest.raises(InferenceServerException) as ei:
        client.infer("tiny_qreject", make_inputs(x=np.ones((1, 4), np.float32)), client_timeout=30)
    elapsed = time.monotonic() - t0
    assert status_name(ei.value) == "UNAVAILABLE", ei.value
    assert elapsed < 1.9, f"rejected after {elapsed:.2f}s: the timeout was not applied"
    after = get_stats(client, "tiny_qreject")
    assert after.execution_count == before.execution_count
    assert after.inference_stats.fail.count >= before.inference_stats.fail.count


def test_queue_timeout_delay_still_executes(client):
    """tiny_qdelay: the request times out in the queue but DELAY keeps it."""
    x = np.full((2, 4), 3, np.float32)
    result = client.infer("tiny_qdelay", make_inputs(x=x), client_timeout=30)
    np.testing.assert_array_equal(result.as_numpy("y"), x * 2 + 1)


def test_client_deadline_while_queued_is_never_executed(client):
    """A request whose gRPC deadline passes while it waits in tiny_slowq's 2 s window
    fails with DEADLINE_EXCEEDED and is dropped, not executed."""
    before = get_stats(client, "tiny_slowq")
    with pytest.raises(InferenceServerException) as ei:
        client.infer("tiny_slowq", make_inputs(x=np.ones((1, 4), np.float32)), client_timeout=0.3)
    assert status_name(ei.value) == "DEADLINE_EXCEEDED", ei.value
    # A full batch (8 = max_batch_size) goes at once. Were the expired request still
    # queued it would run too (before or with it) and show in the counts.
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    result = client.infer("tiny_slowq", make_inputs(x=x), client_timeout=30)
    np.testing.assert_array_equal(result.as_numpy("y"), x * 2 + 1)
    after = wait_for(lambda: (s := get_stats(client, "tiny_slowq")).inference_count
                     - before.inference_count >= 8 and s, 10, what="statistics")
    assert stats_delta(before, after) == (8, 1), (
        f"(inferences, executions) = {stats_delta(before, after)}: the expired request ran")
    # The expired request's 2 s window has passed by now: still not executed.
    deadline = time.monotonic() + 2.5
    while time.monotonic() < deadline:
        assert stats_delta(before, get_stats(client, "tiny_slowq")) == (8, 1)
        time.sleep(0.25)
