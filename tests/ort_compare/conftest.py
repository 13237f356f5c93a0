"""Fixtures of the onnxruntime comparison suite (docs/conformance.md).

Nothing here skips: a missing coalesce-onnx-run binary or conformance data
directory fails every test that needs it, so the suite never passes without
having compared anything.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))

import runners  # noqa: E402


@pytest.fixture(scope="session")
def onnx_run() -> Path:
    path = runners.onnx_run_binary()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"coalesce-onnx-run not found at {path}: build it "
                    "(ninja -C build coalesce-onnx-run) or set COALESCE_ONNX_RUN")
    return path


@pytest.fixture(scope="session")
def light_dir() -> Path:
    path = runners.conformance_data_dir() / "light"
    if not path.is_dir():
        pytest.fail(f"light networks not found in {path}: set COALESCE_CONFORMANCE_DATA "
                    "to the onnx-conformance directory")
    return path
