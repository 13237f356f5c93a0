"""Dynamic batching, statistics, queue policies and client deadlines."""

import time

import numpy as np
import pytest
from tritonclient.utils import InferenceServerException

from conftest import wait_for
from e2e_util import AsyncCollector, assert_close, get_stats, make_inputs, status_name


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
    """mlp_classifier (1 instance, max_queue_delay_microseconds: 0, no preferred sizes):
    nothing waits for company, but a batch forms from whatever queued while the
    instance was busy. 64 single-item requests sent at once: while one batch
    computes (milliseconds for this 8M-parameter MLP) the others queue up, so
    executions < requests and some batch holds more than one request."""
    n = 64
    before = get_stats(client, "mlp_classifier")
    cfg = client.get_model_config("mlp_classifier").config
    assert cfg.dynamic_batching.max_queue_delay_microseconds == 0  # what this test is about
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
    sizes = batch_delta(before, after)
    assert max(sizes) > 1, sizes
    assert max(sizes) <= 64, sizes
    assert sum(size * k for size, k in sizes.items()) == n, sizes


def test_zero_delay_single_request_does_not_wait(client):
    """With max_queue_delay_microseconds: 0 a lone request runs at once (the old 1 ms
    delay is gone): a few sequential requests each run alone, in one execution each."""
    x = np.zeros((1, 1024), np.float32)
    client.infer("mlp_classifier", make_inputs(input=x), client_timeout=60)  # warm up
    before = get_stats(client, "mlp_classifier")
    for _ in range(5):
        client.infer("mlp_classifier", make_inputs(input=x), client_timeout=60)
    after = wait_for(lambda: (s := get_stats(client, "mlp_classifier")).inference_count
                     - before.inference_count >= 5 and s, 10, what="statistics")
    assert stats_delta(before, after) == (5, 5)
    assert batch_delta(before, after) == {1: 5}


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
    """tiny_qfull holds one queued request for 3 s (max_queue_size 1). Four requests
    sent at once: whichever reaches the queue first is kept and runs after the delay;
    the other three are rejected with UNAVAILABLE at once. The server handles calls
    concurrently, so which one is kept is not known in advance."""
    n = 4
    before = get_stats(client, "tiny_qfull")
    collector = AsyncCollector()
    xs = [np.full((1, 4), i + 1, np.float32) for i in range(n)]
    t0 = time.monotonic()
    for i, x in enumerate(xs):
        client.async_infer("tiny_qfull", make_inputs(x=x), collector.timed(i), client_timeout=30)
    results = collector.get(n, timeout=30)
    rejected = [(tag, err, t) for tag, res, err, t in results if err is not None]
    served = [(tag, res, t) for tag, res, err, t in results if err is None]
    assert len(served) == 1 and len(rejected) == n - 1, results
    for tag, err, t in rejected:
        assert status_name(err) == "UNAVAILABLE", err
        assert t - t0 < 2.0, f"request {tag} rejected after {t - t0:.2f}s: must be immediate"
    [(tag, result, t)] = served
    np.testing.assert_array_equal(result.as_numpy("y"), xs[tag] * 2 + 1)
    after = wait_for(lambda: (s := get_stats(client, "tiny_qfull")).inference_count
                     - before.inference_count >= 1 and s, 10, what="statistics")
    assert stats_delta(before, after) == (1, 1)


def test_queue_timeout_reject_is_unavailable(client):
    """tiny_qreject: 100 ms queue timeout with REJECT, while the batcher waits 2 s."""
    before = get_stats(client, "tiny_qreject")
    t0 = time.monotonic()
    with pytest.raises(InferenceServerException) as ei:
        client.infer("tiny_qreject", make_inputs(x=np.ones((1, 4), np.float32)), client_timeout=30)
    elapsed = time.monotonic() - t0
    assert status_name(ei.value) == "UNAVAILABLE", ei.value
    assert elapsed < 1.9, f"rejected after {elapsed:.2f}s: the timeout was not applied"
    after = wait_for(lambda: (s := get_stats(client, "tiny_qreject")).inference_stats.fail.count
                     > before.inference_stats.fail.count and s, 10, what="fail statistics")
    assert after.execution_count == before.execution_count
    assert after.inference_count == before.inference_count
    assert after.inference_stats.fail.count == before.inference_stats.fail.count + 1
    assert after.inference_stats.success.count == before.inference_stats.success.count


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
