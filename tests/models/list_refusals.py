#!/usr/bin/env python3
"""Prints known_refusals.txt lines for the corpus of real exports as the
engine stands: each model the CPU or the simulated device refuses, with the
first refusal as the reason and every missing operator in a comment.

    python3 tests/models/list_refusals.py > tests/models/real/known_refusals.txt

Review the diff before committing it: the list must only shrink, unless a
model was added to the corpus.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import real_corpus
import runners

HEADER = """\
# Corpus models the engine refuses, by target (cpu: the CPU executor;
# device: a GPU instance, checked on the simulated device), with the reason
# the error must contain (tests/ort_compare/test_real_exports.py,
# docs/conformance.md). Goal: an empty file. Made by
# tests/models/list_refusals.py. Format:
#   <model folder> <cpu|device> <reason>   # every missing piece
"""


def refusal(model: str, device: str, workdir: Path) -> str | None:
    folder = real_corpus.CORPUS / model
    _, feeds, _ = real_corpus.data_sets(folder)[0]
    try:
        runners.run_coalesce(folder / "model.onnx", feeds, workdir / model / device,
                             device=device)
    except runners.CoalesceRunError as err:
        clauses = re.findall(r"\(op '([A-Za-z0-9]+)'\): ([^;]+)", err.stderr)
        if not clauses:
            return err.stderr.splitlines()[-1]
        missing = []
        for op, why in clauses:
            key = op if "no GPU kernel" in why else f"{op} ({why.strip()})"
            if key not in missing:
                missing.append(key)
        op, why = clauses[0]
        return f"(op '{op}'): {why.strip()}  # also: {', '.join(missing[1:]) or '-'}"
    return None


def main() -> int:
    lines = [HEADER]
    with tempfile.TemporaryDirectory() as tmp:
        for model in sorted(real_corpus.manifest()):
            for target, device in (("cpu", "cpu"), ("device", "simulated")):
                reason = refusal(model, device, Path(tmp))
                if reason:
                    lines.append(f"{model} {target} {reason}\n")
    sys.stdout.write("".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
