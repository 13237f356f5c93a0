#!/usr/bin/env python3
"""Resident memory of coalesce-server after a burst of large requests, with
the allocator settings side by side: a server per setting, each sent the
same burst (`--clients` clients at once, `--requests` requests each of
`--mib` MiB in and out through the x*2+1 model), then left idle. Reports
VmRSS before the burst, at its end, and after the idle wait.

Settings compared (environment of the server process):
  default             the allocator as the binary sets it up
  glibc-default       MALLOC_MMAP_THRESHOLD_ unset and COALESCE_MALLOC_TUNING=0
                      (glibc's dynamic mmap threshold, what the server had
                      before it tuned the allocator)

Usage: python3 benchmarks/rss_after_burst.py [--build-dir build] [--mib 64]
           [--clients 4] [--requests 3] [--idle-s 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT / "examples"))

import generate_models as gm  # noqa: E402
from conftest import ServerProcess, tiny_config  # noqa: E402
from e2e_util import make_inputs  # noqa: E402

SETTINGS = {
    "default": {},
    "glibc-default": {"COALESCE_MALLOC_TUNING": "0"},
}


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def burst(srv: ServerProcess, width: int, clients: int, requests: int) -> None:
    x = np.ones((1, width), dtype=np.float32)

    def one_client():
        client = srv.client()
        for _ in range(requests):
            client.infer("wide", make_inputs(x=x), client_timeout=120)

    threads = [threading.Thread(target=one_client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default=str(ROOT / "build"))
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--requests", type=int, default=3)
    parser.add_argument("--idle-s", type=float, default=3.0)
    args = parser.parse_args()
    import os
    os.environ["COALESCE_SERVER"] = str(Path(args.build_dir) / "server" / "coalesce-server")
    width = args.mib * (1 << 20) // 4
    print(f"{args.clients} clients x {args.requests} requests of {args.mib} MiB")
    print(f"{'setting':<16}{'before MiB':>12}{'burst end MiB':>15}{'idle MiB':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        gm.write_model(repo, "wide", gm.make_tiny_model(width=width),
                       tiny_config("wide", width=width, instances=2))
        for name, env in SETTINGS.items():
            srv = ServerProcess(repo, Path(tmp) / f"{name}.log",
                                ("--grpc-max-message-bytes", str((2 << 30) - 1)), env)
            srv.start()
            try:
                before = rss_mib(srv.proc.pid)
                burst(srv, width, args.clients, args.requests)
                end = rss_mib(srv.proc.pid)
                time.sleep(args.idle_s)  # a measurement after idling, not a sync
                idle = rss_mib(srv.proc.pid)
            finally:
                srv.stop()
            print(f"{name:<16}{before:>12.0f}{end:>15.0f}{idle:>10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
