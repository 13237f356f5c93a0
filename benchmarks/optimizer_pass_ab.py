#!/usr/bin/env python3
"""One optimizer pass of the CPU engine off and on, side by side.

Builds the randomized light networks exactly as engine_vs_onnxruntime.py
does (its cases named in --cases, batch 1 unless the case says otherwise),
then runs coalesce-onnx-run --PASS off and on (PASS: --pass, channels-last
or residual-fusion), alternating, for --rounds rounds, and prints each
network's median of the rounds' medians and on / off. The numbers in
BENCHMARKS.md ("Channels-last", "Residual fusion") come from it.

Usage: python3 benchmarks/optimizer_pass_ab.py [--pass P] [--rounds N]
           [--threads T] [--cases a,b,...] [--onnx-run BIN]
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from onnx import numpy_helper

import engine_vs_onnxruntime as evo


def median_ms(cmd: list) -> float:
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=1800).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


def main() -> int:
    light = [c for c in evo.CASES if c.model.startswith("light_") or c.model == "resnet50"]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pass", dest="pass_flag", default="channels-last",
                    choices=["channels-last", "residual-fusion"])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cases", default=",".join(c.name for c in light if c.batch == 1))
    ap.add_argument("--onnx-run", type=Path,
                    default=evo.ROOT / "build" / "tools" / "coalesce-onnx-run")
    args = ap.parse_args()
    wanted = args.cases.split(",")
    cases = [c for c in light if c.name in wanted]
    if len(cases) != len(wanted):
        print(f"unknown case in {args.cases}; known: {[c.name for c in light]}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="optimizer_pass_ab_") as tmp:
        work = Path(tmp)
        paths = evo.prepare_models(work, {c.model for c in cases},
                                   evo.runners.conformance_data_dir())
        times: dict = {}
        for case in cases:
            inputs = []
            for i, (name, x) in enumerate(evo.case_inputs(case).items()):
                f = work / f"{case.name}_in{i}.pb"
                f.write_bytes(numpy_helper.from_array(x, name).SerializeToString())
                inputs += ["--input", f"{name}={f}"]
            for _ in range(args.rounds):
                for mode in ("off", "on"):
                    times.setdefault((case.name, mode), []).append(median_ms(
                        [str(args.onnx_run), "--model", str(paths[case.model]), *inputs,
                         "--output-dir", str(work / "out"), "--threads", str(args.threads),
                         "--warmup", "2", "--repeat", str(case.repeat),
                         f"--{args.pass_flag}", mode]))
    print("| network | off, ms | on, ms | on / off |\n|---|---:|---:|---:|")
    for case in cases:
        off = statistics.median(times[(case.name, "off")])
        on = statistics.median(times[(case.name, "on")])
        print(f"| {case.name} | {off:.1f} | {on:.1f} | {on / off:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
