"""Triton-layout repositories with models Coalesce does not serve: each is
refused at load by name, listed in RepositoryIndex with the reason, and the
other models serve."""

from __future__ import annotations

import shutil

import numpy as np

import generate_models as gm
from conftest import REPO_ROOT, tiny_config
from e2e_util import make_inputs

CORPUS = REPO_ROOT / "tests" / "configs" / "triton"


def test_other_backends_are_refused_by_name_and_the_rest_serve(start_server, tmp_path):
    repo = tmp_path / "repo_backends"
    gm.write_model(repo, "m", gm.make_tiny_model(), tiny_config("m"))
    refused = {
        "simple_identity": "backend 'python' is not supported by this server",
        "tensorrt_plan_options": "platform 'tensorrt_plan' is not supported by this server",
        "ensemble_preprocess_classify": "platform 'ensemble' is not supported by this server",
    }
    for name in refused:
        (repo / name / "1").mkdir(parents=True)
        shutil.copy(CORPUS / f"{name}.pbtxt", repo / name / "config.pbtxt")
    srv = start_server(repo)
    client = srv.client()
    index = {m.name: m for m in client.get_model_repository_index().models}
    for name, reason in refused.items():
        assert index[name].state == "UNAVAILABLE", index[name]
        assert reason in index[name].reason, index[name].reason
    x = np.ones((1, 4), dtype=np.float32)
    np.testing.assert_allclose(client.infer("m", make_inputs(x=x)).as_numpy("y"), x * 2 + 1)
