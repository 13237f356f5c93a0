"""scripts/bundle: the relocatable bundle serves the CPU path from a clean
folder, with an empty environment, loading no shared library from the host.
"""

import os
import re
import signal
import subprocess
import tarfile
from pathlib import Path

import numpy as np
import onnxruntime as ort

import generate_models as gm
from conftest import REPO_ROOT, ServerProcess, server_binary
from e2e_util import make_inputs

MAX_ARCHIVE_BYTES = 40 << 20


def build_bundle(out: Path) -> Path:
    build_dir = server_binary().resolve().parents[1]
    done = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "bundle"), "--build", str(build_dir), "--out", str(out)],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return Path(done.stdout.strip().splitlines()[-1])


def mapped_libraries(pid: int) -> set:
    libs = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        path = line.split()[-1]
        if path.startswith("/") and re.search(r"\.so(\.|$)", path):
            libs.add(path)
    return libs


def test_bundle_serves_the_cpu_path_from_a_clean_folder(tmp_path):
    archive = build_bundle(tmp_path / "out")
    assert archive.stat().st_size < MAX_ARCHIVE_BYTES, archive.stat().st_size
    unpacked = tmp_path / "elsewhere"
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked)
    bundle = unpacked / "coalesce"
    for tool in ("coalesce-server", "coalesce-bench", "coalesce-onnx-run", "coalesce-device-check"):
        assert os.access(bundle / "bin" / tool, os.X_OK), tool

    repo = tmp_path / "models"
    subprocess.run(["python3", str(bundle / "share" / "generate_models.py"), "--out", str(repo),
                    "--only", "mlp_classifier"], check=True, capture_output=True, timeout=300)

    srv = ServerProcess(repo, tmp_path / "bundle_server.log")
    srv.args = ["env", "-i", str(bundle / "bin" / "coalesce-server"), *srv.args[1:]]
    srv.start()
    try:
        outside = {lib for lib in mapped_libraries(srv.proc.pid)
                   if not lib.startswith(str(bundle) + "/")}
        assert not outside, f"libraries loaded from the host: {sorted(outside)}"

        x = np.random.default_rng(3).random((3, 1024), dtype=np.float32)
        got = srv.client().infer("mlp_classifier", make_inputs(input=x),
                                 client_timeout=60).as_numpy("probabilities")
        model_file = str(repo / "mlp_classifier" / "1" / "model.onnx")
        want = ort.InferenceSession(model_file, providers=["CPUExecutionProvider"]).run(
            None, {"input": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    finally:
        srv.send_signal(signal.SIGTERM)
        rc = srv.wait(timeout=45)
    assert rc == 0, srv.log()
