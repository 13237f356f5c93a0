#!/usr/bin/env python3
"""Large tensors through system shared memory against raw bytes in the gRPC
messages, side by side in one run: the x*2+1 model at several widths, one
tritonclient client sending requests back to back (input and output of the
same size), the two transports alternating per round. Reports the median
requests/s of each and their ratio.

Usage: python3 benchmarks/shared_memory_speedup.py [--build-dir build]
           [--sizes-kib 64,1024,16384] [--rounds 3] [--seconds 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT / "examples"))

import generate_models as gm  # noqa: E402
import tritonclient.grpc as grpcclient  # noqa: E402
import tritonclient.utils.shared_memory as shm  # noqa: E402
from conftest import ServerProcess, tiny_config  # noqa: E402


def rate(fn, seconds: float) -> float:
    fn()  # warm-up
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    return n / (time.perf_counter() - start)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--sizes-kib", default="64,1024,16384")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    import os
    os.environ.setdefault("COALESCE_SERVER", str(Path(args.build_dir) / "server" / "coalesce-server"))
    sizes = [int(s) for s in args.sizes_kib.split(",")]
    print(f"| tensor (in and out) | raw requests/s | shared memory requests/s | shm/raw |")
    print(f"|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        for kib in sizes:
            width = kib * 1024 // 4
            gm.write_model(repo, f"w{kib}", gm.make_tiny_model(width=width), tiny_config(f"w{kib}", width=width))
        srv = ServerProcess(repo, Path(tmp) / "server.log", ["--allow-metrics", "false"]).start()
        client = grpcclient.InferenceServerClient(srv.url)
        try:
            for kib in sizes:
                width = kib * 1024 // 4
                x = np.random.default_rng(0).standard_normal((1, width)).astype(np.float32)
                model = f"w{kib}"
                in_h = shm.create_shared_memory_region("in", f"/coalesce_bench_in_{kib}", x.nbytes)
                out_h = shm.create_shared_memory_region("out", f"/coalesce_bench_out_{kib}", x.nbytes)
                client.register_system_shared_memory("in", f"/coalesce_bench_in_{kib}", x.nbytes)
                client.register_system_shared_memory("out", f"/coalesce_bench_out_{kib}", x.nbytes)

                def raw():
                    inp = grpcclient.InferInput("x", list(x.shape), "FP32")
                    inp.set_data_from_numpy(x)
                    y = client.infer(model, [inp]).as_numpy("y")
                    assert y.shape == x.shape

                def shared():
                    shm.set_shared_memory_region(in_h, [x])
                    inp = grpcclient.InferInput("x", list(x.shape), "FP32")
                    inp.set_shared_memory("in", x.nbytes)
                    out = grpcclient.InferRequestedOutput("y")
                    out.set_shared_memory("out", x.nbytes)
                    client.infer(model, [inp], outputs=[out])
                    y = shm.get_contents_as_numpy(out_h, np.float32, list(x.shape))
                    assert y.shape == x.shape

                raw()
                shared()
                np.testing.assert_allclose(shm.get_contents_as_numpy(out_h, np.float32, list(x.shape)), x * 2 + 1, rtol=1e-6)
                results = {"raw": [], "shm": []}
                for r in range(args.rounds):
                    order = (("raw", raw), ("shm", shared)) if r % 2 == 0 else (("shm", shared), ("raw", raw))
                    for name, fn in order:
                        results[name].append(rate(fn, args.seconds))
                client.unregister_system_shared_memory()
                shm.destroy_shared_memory_region(in_h)
                shm.destroy_shared_memory_region(out_h)
                a, b = statistics.median(results["raw"]), statistics.median(results["shm"])
                print(f"| {kib} KiB FP32 | {a:.0f} | {b:.0f} | {b / a:.2f} |", flush=True)
        finally:
            client.close()
            srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
