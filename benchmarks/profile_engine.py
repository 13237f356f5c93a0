#!/usr/bin/env python3
"""Where the engine spends its time on the engine-vs-onnxruntime models.

Builds the case's model and inputs exactly as benchmarks/engine_vs_onnxruntime.py
does (light_resnet50 with seeded random weights, or the bert-base encoder at
sequence 128), runs coalesce-onnx-run --profile on it and prints the time per
operator type; the per-node JSON goes to OUT_DIR/<case>.profile.json.

Usage: python3 benchmarks/profile_engine.py [--case bert-base-b1]
           [--threads 2] [--warmup 2] [--repeat 6]
           [--out-dir benchmarks/results/tmp/profile]
REQUIRES: coalesce-onnx-run built (build/tools/, or $COALESCE_ONNX_RUN) and
the conformance data beside the repository (for light_resnet50).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import engine_vs_onnxruntime as evo

RUNNERS = evo.runners


def main() -> int:
    cases = {c.name: c for c in evo.CASES}
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", default="bert-base-b1", choices=sorted(cases))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--out-dir", type=Path,
                    default=evo.ROOT / "benchmarks" / "results" / "tmp" / "profile")
    args = ap.parse_args()
    case = cases[args.case]
    with tempfile.TemporaryDirectory(prefix="profile_engine_") as tmp:
        workdir = Path(tmp)
        paths = evo.prepare_models(workdir, {case.model}, RUNNERS.conformance_data_dir())
        run = RUNNERS.run_coalesce(paths[case.model], evo.case_inputs(case), workdir,
                                   threads=args.threads, warmup=args.warmup,
                                   repeat=args.repeat, profile=True)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / f"{case.name}.profile.json"
    out.write_text(json.dumps(run.profile, indent=1))
    print("\n".join(line for line in run.stdout.splitlines()
                    if not line.startswith("output ")))
    print(f"per-node profile: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
