"""The Kubernetes manifests (deploy/k8s, docs/deploy.md), offline and against
the real server.

Offline:
  - every overlay, and each overlay with each component added the way
    docs/deploy.md says (its `components:` list), renders with
    `kubectl kustomize` (kubectl 1.30 from scripts/install-kubectl, never a
    kubectl found elsewhere);
  - every rendered object of Kubernetes' own kinds validates against the
    Kubernetes 1.30 schemas (PyPI kubernetes-validate, strict: unknown fields
    fail; a kind without a schema fails too);
  - every ServiceMonitor, PrometheusRule and ScaledObject validates against
    the openAPIV3Schema of the CRDs vendored in deploy/vendor (jsonschema;
    structural schemas prune unknown fields silently, so the test closes
    every object schema with additionalProperties: false to catch typos);
  - the PrometheusRule's groups equal deploy/prometheus/coalesce-rules.yml's
    and pass `promtool check rules`; the adapter's and KEDA's queries parse;
  - terminationGracePeriodSeconds > preStop sleep + --exit-timeout-secs;
    rolling update, PDB, Services, ServiceMonitor job label, security
    context, GPU resources, autoscaling targets and behavior.

Against a real coalesce-server started with the Deployment's own arguments:
every probe's health service name is answered SERVING on the port it names
(which must be the container's grpc port and --grpc-port), the
ServiceMonitor's path is the server's metrics path, and every metric that a
rule, the adapter or KEDA reads is in a live scrape (or is a recording rule
of the rules file); every flag in the Deployment is one `--help` lists.

A missing tool (kubectl, kubernetes-validate, promtool, the server) fails
the test under CI=true or COALESCE_E2E_REQUIRE_SERVER=1 and skips it
otherwise.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import yaml

import generate_models as gm
import promql_expressions as pe
from conftest import REPO_ROOT, server_binary, tiny_config
from e2e_util import make_inputs, unusable

K8S = REPO_ROOT / "deploy" / "k8s"
VENDOR = REPO_ROOT / "deploy" / "vendor"
RULES = REPO_ROOT / "deploy" / "prometheus" / "coalesce-rules.yml"
ADAPTER_VALUES = K8S / "autoscaling" / "hpa" / "prometheus-adapter-values.yaml"
DOC = REPO_ROOT / "docs" / "deploy.md"
KUBE_VERSION = "1.30.0"
RUN_TIMEOUT_S = 120

KUBECTL_HOW_TO = "run `bash scripts/install-kubectl` (scripts/bootstrap does)"
PIP_HOW_TO = "install it with `python3 -m pip install -r requirements.txt`"

# name -> (overlay, components added to it)
VARIANTS = {
    "cpu": ("overlays/cpu", []),
    "gpu": ("overlays/gpu", []),
    "cpu+hpa": ("overlays/cpu", ["../../autoscaling/hpa"]),
    "cpu+keda": ("overlays/cpu", ["../../autoscaling/keda"]),
    "gpu+hpa": ("overlays/gpu", ["../../autoscaling/hpa"]),
    "gpu+keda": ("overlays/gpu", ["../../autoscaling/keda"]),
    "cpu+models-from-image": ("overlays/cpu", ["../../components/models-from-image"]),
}
# Plain files applied with `kubectl apply -f` (docs/deploy.md).
PLAIN_FILES = [K8S / "models" / "pvc.yaml", K8S / "models" / "loader-pod.yaml"]

# CRD kinds: apiVersion -> vendored CRD file
CRDS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"):
        VENDOR / "prometheus-operator" / "monitoring.coreos.com_servicemonitors.yaml",
    ("monitoring.coreos.com/v1", "PrometheusRule"):
        VENDOR / "prometheus-operator" / "monitoring.coreos.com_prometheusrules.yaml",
    ("keda.sh/v1alpha1", "ScaledObject"): VENDOR / "keda" / "keda.sh_scaledobjects.yaml",
}
CLUSTER_SCOPED = {"Namespace"}
NAMESPACE = "coalesce"
SERVER_DEFAULTS = {"grpc-port": 8001, "metrics-port": 8002, "exit-timeout-secs": 30}




# --------------------------------------------------------------------------
# rendering
# --------------------------------------------------------------------------

def find_kubectl() -> str:
    """build/kubectl/kubectl (or $COALESCE_KUBECTL), version 1.30. A kubectl on
    PATH is not used: the project installs its own (scripts/install-kubectl)."""
    env = os.environ.get("COALESCE_KUBECTL")
    path = Path(env) if env else REPO_ROOT / "build" / "kubectl" / "kubectl"
    if not (path.is_file() and os.access(path, os.X_OK)):
        unusable(f"kubectl not found at {path}: {KUBECTL_HOW_TO}")
    proc = subprocess.run([str(path), "version", "--client"], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)
    if proc.returncode != 0 or "Client Version: v1.30." not in proc.stdout:
        unusable(f"{path} is not a working kubectl 1.30 ({proc.stdout.strip()!r} "
                 f"{proc.stderr.strip()!r}): {KUBECTL_HOW_TO}")
    return str(path)


def kustomize(kubectl: str, directory: Path) -> list[dict]:
    cmd = [kubectl, "kustomize", str(directory)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          stdin=subprocess.DEVNULL, env={**os.environ, "KUBECONFIG": os.devnull})
    assert proc.returncode == 0, f"$ {' '.join(cmd)}\nexit {proc.returncode}\n{proc.stderr}"
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, list[dict]]:
    """Every variant rendered: the overlays as committed, and copies of
    deploy/k8s whose overlay lists the variant's components."""
    kubectl = find_kubectl()
    out = {}
    for name, (overlay, components) in VARIANTS.items():
        if not components:
            out[name] = kustomize(kubectl, K8S / overlay)
            continue
        tree = tmp_path_factory.mktemp(name.replace("+", "_")) / "k8s"
        shutil.copytree(K8S, tree)
        kfile = tree / overlay / "kustomization.yaml"
        doc = yaml.safe_load(kfile.read_text())
        doc["components"] = list(doc.get("components") or []) + components
        kfile.write_text(yaml.safe_dump(doc, sort_keys=False))
        out[name] = kustomize(kubectl, tree / overlay)
    return out


def objects(rendered, kind: str):
    """(variant, object) for every rendered object of a kind."""
    return [(v, o) for v, objs in rendered.items() for o in objs if o["kind"] == kind]


def the(objs: list[dict], kind: str) -> dict:
    found = [o for o in objs if o["kind"] == kind]
    assert len(found) == 1, f"{len(found)} objects of kind {kind}"
    return found[0]


def container(deployment: dict) -> dict:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    found = [c for c in containers if c["name"] == "coalesce-server"]
    assert len(found) == 1, [c["name"] for c in containers]
    return found[0]


def parse_flags(args: list[str]) -> dict[str, str]:
    """--name=value / --name value -> {name: value}."""
    flags, i = {}, 0
    while i < len(args):
        arg = args[i]
        assert arg.startswith("--"), f"not a flag: {arg!r} in {args}"
        if "=" in arg:
            name, value = arg[2:].split("=", 1)
        else:
            name, value = arg[2:], args[i + 1]
            i += 1
        flags[name] = value
        i += 1
    return flags


def flag(deployment: dict, name: str) -> int:
    value = parse_flags(container(deployment).get("args", [])).get(name)
    return int(value) if value is not None else SERVER_DEFAULTS[name]


def container_port(deployment: dict, port) -> int:
    """A port as a probe or Service targetPort names it: a number, or the
    name of one of the container's ports."""
    if isinstance(port, int):
        return port
    ports = {p["name"]: p["containerPort"] for p in container(deployment).get("ports", [])}
    assert port in ports, f"no container port named {port!r}: {ports}"
    return ports[port]


def selects(selector: dict, labels: dict) -> bool:
    assert set(selector) <= {"matchLabels"}, f"only matchLabels is handled here: {selector}"
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def quantity(value) -> float:
    """A Kubernetes quantity as a float ("50m" -> 0.05)."""
    m = re.fullmatch(r"([0-9.]+)(m|k|M|G)?", str(value))
    assert m, f"not a quantity this test reads: {value!r}"
    return float(m.group(1)) * {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]


def rule_groups() -> list[dict]:
    with open(RULES) as f:
        return yaml.safe_load(f)["groups"]


def recording_rules() -> set[str]:
    return {r["record"] for g in rule_groups() for r in g["rules"] if "record" in r}


# --------------------------------------------------------------------------
# structure
# --------------------------------------------------------------------------

def test_overlays_list_the_autoscaling_components_to_uncomment():
    """docs/deploy.md says: uncomment one of the overlay's components."""
    for overlay in ("cpu", "gpu"):
        text = (K8S / "overlays" / overlay / "kustomization.yaml").read_text()
        assert re.search(r"^# components:$", text, re.M), overlay
        for component in ("../../autoscaling/hpa", "../../autoscaling/keda"):
            assert re.search(rf"^#\s+- {re.escape(component)}\b", text, re.M), (overlay, component)


def test_every_variant_renders_the_expected_objects(rendered):
    base = {"Namespace", "Service", "Deployment", "PodDisruptionBudget", "ServiceMonitor",
            "PrometheusRule"}
    for variant, objs in rendered.items():
        kinds = sorted(o["kind"] for o in objs)
        expected = set(base)
        if "hpa" in variant:
            expected.add("HorizontalPodAutoscaler")
        if "keda" in variant:
            expected.add("ScaledObject")
        assert set(kinds) == expected, (variant, kinds)
        assert kinds.count("Service") == 2, (variant, kinds)
        for o in objs:
            ns = o["metadata"].get("namespace")
            if o["kind"] in CLUSTER_SCOPED:
                assert ns is None and o["metadata"]["name"] == NAMESPACE, (variant, o["metadata"])
            else:
                assert ns == NAMESPACE, (variant, o["kind"], o["metadata"])
        deployment = the(objs, "Deployment")
        autoscaled = "hpa" in variant or "keda" in variant
        # the autoscaler owns the replica count: kubectl apply must not reset it
        assert ("replicas" in deployment["spec"]) == (not autoscaled), variant


def test_kubernetes_objects_validate_against_the_1_30_schemas(rendered):
    try:
        import kubernetes_validate
        from kubernetes_validate import SchemaNotFoundError
    except ImportError:
        unusable(f"kubernetes-validate is not installed: {PIP_HOW_TO}")
    checked, errors = set(), []
    plain = [(f"deploy/k8s/{p.relative_to(K8S)}", o)
             for p in PLAIN_FILES for o in yaml.safe_load_all(p.read_text()) if o]
    everything = [(v, o) for v, objs in rendered.items() for o in objs] + plain
    for where, obj in everything:
        if (obj["apiVersion"], obj["kind"]) in CRDS:
            continue
        key = json.dumps(obj, sort_keys=True)
        if key in checked:
            continue
        checked.add(key)
        what = f"{where}: {obj['kind']}/{obj['metadata']['name']}"
        try:
            kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)
        except SchemaNotFoundError as exc:
            errors.append(f"{what}: {exc.message}")
        except kubernetes_validate.ValidationError as exc:
            path = ".".join(str(p) for p in exc.path)
            errors.append(f"{what}: {path}: {exc.message}")
    assert checked, "nothing validated"
    assert not errors, "\n".join(errors)


# --------------------------------------------------------------------------
# custom resources against the vendored CRDs
# --------------------------------------------------------------------------

def closed(schema):
    """The schema with additionalProperties: false on every object schema that
    lists its properties (and does not preserve unknown fields), so that an
    unknown field fails as `kubectl apply --validate=strict` would; Go regular
    expressions made Python's where they differ."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) if k in ("properties", "items", "additionalProperties", "anyOf",
                                  "allOf", "oneOf", "not") else v
           for k, v in schema.items()}
    if isinstance(schema.get("pattern"), str) and "(?i)" in schema["pattern"][1:]:
        # Go's regexp takes inline flags anywhere (`^(?i)(abort|warn)?$`);
        # Python's only at the start
        out["pattern"] = "(?i)" + schema["pattern"].replace("(?i)", "")
    if "properties" in schema:
        out["properties"] = {k: closed(v) for k, v in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    return out


def crd_validator(api_version: str, kind: str):
    try:
        import jsonschema
    except ImportError:
        unusable(f"jsonschema is not installed: {PIP_HOW_TO}")
    with open(CRDS[(api_version, kind)]) as f:
        crd = next(d for d in yaml.safe_load_all(f) if d)
    group, version = api_version.split("/")
    assert crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == kind, crd["metadata"]
    served = [v for v in crd["spec"]["versions"] if v["name"] == version and v["served"]]
    assert served, f"{CRDS[(api_version, kind)].name} does not serve {api_version}"
    schema = closed(served[0]["schema"]["openAPIV3Schema"])
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def crd_errors(obj: dict) -> list[str]:
    validator = crd_validator(obj["apiVersion"], obj["kind"])
    return [f"{'.'.join(str(p) for p in e.path)}: {e.message}" for e in validator.iter_errors(obj)]


def test_custom_resources_validate_against_the_vendored_crds(rendered):
    seen = set()
    errors = []
    for variant, objs in rendered.items():
        for obj in objs:
            if (obj["apiVersion"], obj["kind"]) not in CRDS:
                continue
            seen.add(obj["kind"])
            errors += [f"{variant}: {obj['kind']}/{obj['metadata']['name']}: {e}"
                       for e in crd_errors(obj)]
    assert seen == {"ServiceMonitor", "PrometheusRule", "ScaledObject"}, seen
    assert not errors, "\n".join(errors)


def test_crd_validation_rejects_unknown_fields_and_wrong_types(rendered):
    """The closed schemas catch a misspelt field and a number where the CRD
    wants a string, which the API server would prune or reject."""
    monitor = copy.deepcopy(the(rendered["cpu"], "ServiceMonitor"))
    monitor["spec"]["endpoints"][0]["intervall"] = "15s"
    assert any("intervall" in e for e in crd_errors(monitor)), crd_errors(monitor)
    scaled = copy.deepcopy(the(rendered["cpu+keda"], "ScaledObject"))
    scaled["spec"]["triggers"][0]["metadata"]["threshold"] = 0.05
    assert any("threshold" in e for e in crd_errors(scaled)), crd_errors(scaled)
    rule = copy.deepcopy(the(rendered["cpu"], "PrometheusRule"))
    rule["spec"]["groups"][0]["rules"][0]["recrod"] = "x"
    assert any("recrod" in e for e in crd_errors(rule)), crd_errors(rule)


# --------------------------------------------------------------------------
# rules and queries
# --------------------------------------------------------------------------

def test_prometheusrule_groups_equal_the_rules_file(rendered):
    groups = rule_groups()
    for variant, rule in objects(rendered, "PrometheusRule"):
        assert rule["spec"]["groups"] == groups, (
            f"{variant}: the PrometheusRule's groups differ from {RULES.relative_to(REPO_ROOT)}: "
            "run `python3 scripts/gen-k8s-prometheusrule`")
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "gen-k8s-prometheusrule"), "--check"],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def shipped_queries(rendered) -> dict[str, str]:
    """Every PromQL expression of the autoscaling files, as Prometheus runs it
    (the adapter's templates filled in as the adapter does)."""
    queries = {}
    with open(ADAPTER_VALUES) as f:
        adapter = yaml.safe_load(f)
    for i, rule in enumerate(adapter["rules"]["custom"]):
        queries[f"adapter rule {i} seriesQuery"] = rule["seriesQuery"]
        queries[f"adapter rule {i} metricsQuery"] = (
            rule["metricsQuery"]
            .replace("<<.GroupBy>>", "namespace, pod")
            .replace("<<.LabelMatchers>>", 'namespace="coalesce",pod=~"coalesce-.*"')
            .replace("<<.Series>>", re.sub(r"\{.*", "", rule["seriesQuery"])))
    for variant, scaled in objects(rendered, "ScaledObject"):
        for j, trigger in enumerate(scaled["spec"]["triggers"]):
            if trigger["type"] == "prometheus":
                queries[f"{variant} ScaledObject trigger {j}"] = trigger["metadata"]["query"]
    return queries


def test_rules_and_queries_pass_promtool(rendered, tmp_path):
    promtool = pe.require_binary("promtool")
    rule = the(rendered["cpu"], "PrometheusRule")
    path = tmp_path / "prometheusrule-groups.yml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False))
    proc = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)
    report = f"$ promtool check rules {path}\nexit {proc.returncode}\n{proc.stdout}{proc.stderr}"
    assert proc.returncode == 0 and "SUCCESS" in proc.stdout, report
    # the autoscaling queries, parsed as recording rules (promtool 2.42 has no
    # command that parses a bare expression)
    queries = shipped_queries(rendered)
    qpath = tmp_path / "autoscaling-queries.yml"
    qpath.write_text(yaml.safe_dump({"groups": [{"name": "autoscaling", "rules": [
        {"record": f"coalesce_test:query_{i}", "expr": q} for i, q in enumerate(queries.values())]}]}))
    proc = subprocess.run([promtool, "check", "rules", str(qpath)], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"{json.dumps(queries, indent=1)}\n{proc.stdout}{proc.stderr}"


# --------------------------------------------------------------------------
# the Deployment
# --------------------------------------------------------------------------

def prestop_seconds(c: dict) -> int:
    pre = c.get("lifecycle", {}).get("preStop")
    assert pre, f"{c['name']}: no preStop hook"
    if "sleep" in pre:
        return int(pre["sleep"]["seconds"])
    command = pre["exec"]["command"]
    assert len(command) == 2 and command[0] in ("sleep", "/bin/sleep", "/usr/bin/sleep"), command
    return int(command[1])


def test_termination_grace_period_exceeds_prestop_plus_exit_timeout(rendered):
    for variant, d in objects(rendered, "Deployment"):
        grace = d["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        pre = prestop_seconds(container(d))
        drain = flag(d, "exit-timeout-secs")
        assert pre > 0, variant
        assert grace > pre + drain, (
            f"{variant}: terminationGracePeriodSeconds {grace} <= preStop {pre} s + "
            f"--exit-timeout-secs {drain} s: the kubelet would SIGKILL a draining server")


def test_rolling_update_and_disruption_budget_keep_capacity(rendered):
    for variant, objs in rendered.items():
        d = the(objs, "Deployment")
        strategy = d["spec"]["strategy"]
        assert strategy["type"] == "RollingUpdate", variant
        assert strategy["rollingUpdate"]["maxUnavailable"] == 0, variant
        assert strategy["rollingUpdate"]["maxSurge"] >= 1, variant
        pod_labels = d["spec"]["template"]["metadata"]["labels"]
        assert selects(d["spec"]["selector"], pod_labels), variant
        pdb = the(objs, "PodDisruptionBudget")
        assert selects(pdb["spec"]["selector"], pod_labels), variant
        assert pdb["spec"].get("maxUnavailable") == 1, variant
        c = container(d)
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert "grpc" in c.get(probe, {}), f"{variant}: {probe} is not a native gRPC probe"
        # loading takes time: the startup probe allows minutes
        startup = c["startupProbe"]
        assert startup["periodSeconds"] * startup["failureThreshold"] >= 300, variant


def test_pod_runs_non_root_read_only_without_capabilities(rendered):
    dockerfile = REPO_ROOT / "Dockerfile"
    for variant, d in objects(rendered, "Deployment"):
        spec = d["spec"]["template"]["spec"]
        pod_sc = spec["securityContext"]
        assert pod_sc["runAsNonRoot"] is True and pod_sc["runAsUser"] == 10001, variant
        assert pod_sc["seccompProfile"]["type"] == "RuntimeDefault", variant
        for c in spec["containers"] + spec.get("initContainers", []):
            sc = c["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True, (variant, c["name"])
            assert sc["allowPrivilegeEscalation"] is False, (variant, c["name"])
            assert sc["capabilities"]["drop"] == ["ALL"], (variant, c["name"])
        c = container(d)
        assert parse_flags(c["args"])["model-repository"] == "/models", variant
        mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
        assert mounts["/models"].get("readOnly") is True, variant
        volumes = {v["name"]: v for v in spec["volumes"]}
        models = volumes[mounts["/models"]["name"]]
        if "models-from-image" in variant:
            assert "emptyDir" in models and "persistentVolumeClaim" not in models, models
            init = spec["initContainers"][0]
            assert any(m["name"] == models["name"] for m in init["volumeMounts"]), init
        else:
            assert models["persistentVolumeClaim"]["claimName"] == "coalesce-models", models
    if dockerfile.exists():  # the image runs as the same UID and reads /models
        text = dockerfile.read_text()
        assert re.search(r"^USER 10001(:10001)?$", text, re.M), "Dockerfile: USER 10001 expected"
        assert re.search(r"^VOLUME \[\"/models\"\]$", text, re.M), "Dockerfile: VOLUME /models expected"


def test_images_and_gpu_resources_per_overlay(rendered):
    dockerfile = REPO_ROOT / "Dockerfile"
    targets = set(re.findall(r"^FROM \S+ AS (\S+)$", dockerfile.read_text(), re.M)) \
        if dockerfile.exists() else {"cpu", "cuda"}
    for variant, d in objects(rendered, "Deployment"):
        c = container(d)
        spec = d["spec"]["template"]["spec"]
        tag = c["image"].rsplit(":", 1)[1]
        assert tag in targets, f"{variant}: image tag {tag!r} is not a Dockerfile target {targets}"
        gpus = c["resources"].get("limits", {}).get("nvidia.com/gpu")
        if variant.startswith("gpu"):
            assert tag == "cuda", variant
            assert int(gpus) == 1, variant
            assert any(t.get("key") == "nvidia.com/gpu" for t in spec.get("tolerations", [])), variant
        else:
            assert tag == "cpu", variant
            assert gpus is None, variant
            assert c["resources"]["requests"]["cpu"] == c["resources"]["limits"]["cpu"], variant


# --------------------------------------------------------------------------
# Services and the ServiceMonitor
# --------------------------------------------------------------------------

def test_services_and_service_monitor(rendered):
    rule_jobs = set(re.findall(r'job="([^"]*)"', RULES.read_text()))
    assert rule_jobs == {"coalesce"}, rule_jobs
    for variant, objs in rendered.items():
        d = the(objs, "Deployment")
        pod_labels = d["spec"]["template"]["metadata"]["labels"]
        services = {s["metadata"]["name"]: s for s in objs if s["kind"] == "Service"}
        for s in services.values():
            assert selects({"matchLabels": s["spec"]["selector"]}, pod_labels), (variant, s["metadata"])
        headless = [s for s in services.values() if s["spec"].get("clusterIP") == "None"]
        clusterip = [s for s in services.values() if s["spec"].get("clusterIP") != "None"]
        assert len(headless) == 1 and len(clusterip) == 1, (variant, list(services))
        for s in services.values():
            ports = {p["name"]: p for p in s["spec"]["ports"]}
            grpc = ports["grpc"]
            assert container_port(d, grpc["targetPort"]) == flag(d, "grpc-port") == grpc["port"], variant
        assert headless[0]["spec"].get("publishNotReadyAddresses", False) is False, variant

        monitor = the(objs, "ServiceMonitor")
        selected = [s for s in services.values()
                    if selects(monitor["spec"]["selector"], s["metadata"].get("labels", {}))]
        # only the ClusterIP Service: through both, every pod would be scraped twice
        assert [s["metadata"]["name"] for s in selected] == [clusterip[0]["metadata"]["name"]], variant
        service = selected[0]
        job_label = monitor["spec"].get("jobLabel")
        job = service["metadata"]["labels"].get(job_label) if job_label else service["metadata"]["name"]
        assert job == "coalesce", f"{variant}: the scrape job would be {job!r}, the rules select job=\"coalesce\""
        [endpoint] = monitor["spec"]["endpoints"]
        ports = {p["name"]: p for p in service["spec"]["ports"]}
        assert endpoint["port"] in ports, (variant, endpoint, list(ports))
        target = container_port(d, ports[endpoint["port"]]["targetPort"])
        assert target == flag(d, "metrics-port") == SERVER_DEFAULTS["metrics-port"], variant
        assert endpoint["path"] == "/metrics", variant


# --------------------------------------------------------------------------
# autoscaling
# --------------------------------------------------------------------------

def max_queue_delay_s() -> float:
    delays = [int(m) for p in (REPO_ROOT / "examples" / "models").glob("*/config.pbtxt")
              for m in re.findall(r"max_queue_delay_microseconds:\s*(\d+)", p.read_text())]
    return max(delays, default=0) / 1e6


def queue_time_slo_s() -> float:
    for group in rule_groups():
        for rule in group["rules"]:
            if rule.get("alert") == "CoalesceQueueTimeP99High":
                return float(re.search(r">\s*([0-9.]+)", rule["expr"]).group(1))
    raise AssertionError("CoalesceQueueTimeP99High not found")


def test_hpa_and_keda_scale_on_the_same_queue_time_target(rendered):
    with open(ADAPTER_VALUES) as f:
        adapter = yaml.safe_load(f)
    [adapter_rule] = adapter["rules"]["custom"]
    assert set(adapter_rule["resources"]["overrides"]) == {"namespace", "pod"}, adapter_rule
    assert "<<.LabelMatchers>>" in adapter_rule["metricsQuery"], adapter_rule
    assert "<<.GroupBy>>" in adapter_rule["metricsQuery"], adapter_rule
    series = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", adapter_rule["seriesQuery"]).group(0)
    assert re.fullmatch(adapter_rule["name"]["matches"], series), adapter_rule
    assert series == "pod:coalesce_queue_duration_seconds:mean_rate1m", series

    hpas = objects(rendered, "HorizontalPodAutoscaler")
    keda = objects(rendered, "ScaledObject")
    assert hpas and keda
    for variant, hpa in hpas:
        d = the(rendered[variant], "Deployment")
        ref = hpa["spec"]["scaleTargetRef"]
        assert (ref["kind"], ref["name"]) == ("Deployment", d["metadata"]["name"]), variant
        [metric] = hpa["spec"]["metrics"]
        assert metric["type"] == "Pods", variant
        assert metric["pods"]["metric"]["name"] == adapter_rule["name"]["as"], variant
        assert metric["pods"]["target"]["type"] == "AverageValue", variant
        target = quantity(metric["pods"]["target"]["averageValue"])
        # above the batching delay (or the target can never be met), below the SLO
        assert max_queue_delay_s() < target < queue_time_slo_s(), (variant, target)
        behavior = hpa["spec"]["behavior"]
        assert behavior["scaleDown"]["stabilizationWindowSeconds"] >= 300, variant
        assert behavior["scaleUp"]["stabilizationWindowSeconds"] \
            < behavior["scaleDown"]["stabilizationWindowSeconds"], variant
        assert 2 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"], variant
    reference = hpas[0][1]["spec"]
    for variant, scaled in keda:
        d = the(rendered[variant], "Deployment")
        spec = scaled["spec"]
        assert spec["scaleTargetRef"]["name"] == d["metadata"]["name"], variant
        assert spec["minReplicaCount"] == reference["minReplicas"], variant
        assert spec["maxReplicaCount"] == reference["maxReplicas"], variant
        assert spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"] == reference["behavior"], variant
        [trigger] = spec["triggers"]
        assert trigger["type"] == "prometheus" and trigger["metricType"] == "AverageValue", variant
        meta = trigger["metadata"]
        assert float(meta["threshold"]) == quantity(reference["metrics"][0]["pods"]["target"]["averageValue"])
        query = meta["query"]
        assert "pod:coalesce_queue_duration_seconds:mean_rate1m" in query, query
        # the namespace and pod matchers select this Deployment's pods
        ns = re.search(r'namespace="([^"]*)"', query).group(1)
        assert ns == scaled["metadata"]["namespace"] == d["metadata"]["namespace"], (variant, query)
        pod_re = re.search(r'pod=~"([^"]*)"', query).group(1)
        name = d["metadata"]["name"]
        assert re.fullmatch(pod_re, f"{name}-5d9f7c6b8d-x7k2p"), (variant, pod_re)
        assert not re.fullmatch(pod_re, f"{name}-canary-5d9f7c6b8d-x7k2p"), (variant, pod_re)


# --------------------------------------------------------------------------
# against the real server
# --------------------------------------------------------------------------

def fake_nvml_library() -> Path:
    """$COALESCE_FAKE_NVML, else the fake NVML built beside the server binary."""
    env = os.environ.get("COALESCE_FAKE_NVML")
    if env:
        return Path(env)
    return server_binary().resolve().parents[1] / "tests" / "fake_nvml" / "libcoalesce_fake_nvml.so"


# ServerProcess sets these itself (loopback, ports picked by the OS, the test's repository)
OWN_FLAGS = {"model-repository", "grpc-address", "grpc-port", "metrics-address", "metrics-port"}


def server_args(deployment: dict) -> list[str]:
    return [f"--{k}={v}" for k, v in parse_flags(container(deployment)["args"]).items()
            if k not in OWN_FLAGS]


@pytest.fixture
def manifest_server(rendered, start_server, tmp_path):
    """A server on a tiny repository, started with the rendered Deployments'
    own flags (all variants must agree on them), after a few requests."""
    args = {tuple(server_args(d)) for _, d in objects(rendered, "Deployment")}
    assert len(args) == 1, f"the variants' Deployments run different flags: {args}"
    repo = tmp_path / "repo"
    gm.write_model(repo, "m", gm.make_tiny_model(), tiny_config("m", 8, "max_queue_delay_microseconds: 1000"))
    nvml = fake_nvml_library()
    env = {"COALESCE_NVML_LIBRARY": str(nvml)} if nvml.is_file() else None
    srv = start_server(repo, *next(iter(args)), env=env)
    client = srv.client()
    for i in range(4):
        client.infer("m", make_inputs(x=np.full((1 + i % 2, 4), i, dtype=np.float32)), client_timeout=30)
    srv.has_fake_nvml = env is not None
    return srv


def health_status(url: str, service: str) -> str:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    with grpc.insecure_channel(url) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=10)
        except grpc.RpcError as exc:
            return f"error {exc.code().name}: {exc.details()}"
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def test_deployment_flags_are_server_flags():
    from conftest import _require_binary
    _require_binary()
    proc = subprocess.run([str(server_binary()), "--help"], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # each flag's block of --help: from its line to the next flag's
    blocks = dict(re.findall(r"^  --([a-z0-9-]+)(.*?)(?=^  --|\Z)", proc.stdout, re.M | re.S))
    help_flags = set(blocks)
    for name, default in SERVER_DEFAULTS.items():
        assert re.search(rf"\(default {default}\b", blocks.get(name, "")), \
            f"--help no longer says --{name} defaults to {default}: {blocks.get(name)!r}"
    files = [p for p in K8S.rglob("*.yaml")]
    for path in files:
        for obj in yaml.safe_load_all(path.read_text()):
            if not obj or obj.get("kind") != "Deployment":
                continue
            for c in obj["spec"]["template"]["spec"].get("containers", []):
                unknown = set(parse_flags(c.get("args", []))) - help_flags
                assert not unknown, f"{path.relative_to(REPO_ROOT)}: flags coalesce-server --help does not list: {unknown}"


# What each probe asks (docs/deploy.md, section 7): startup waits for every
# model, readiness turns NOT_SERVING when shutdown begins, liveness holds from
# listening to exit unless a model loses every instance to a device fault
# (test_instance_health.py).
PROBE_SERVICES = {"startupProbe": "", "readinessProbe": "inference.GRPCInferenceService",
                  "livenessProbe": "liveness"}


def test_probes_are_answered_serving_on_the_ports_they_name(rendered, manifest_server):
    asked = {}
    for variant, d in objects(rendered, "Deployment"):
        c = container(d)
        grpc_port = container_port(d, "grpc")
        for kind, expected in PROBE_SERVICES.items():
            probe = c[kind]["grpc"]
            port = container_port(d, probe["port"])
            # the probe asks the port the server listens on: the container's
            # grpc port, which is --grpc-port (the server's default, 8001)
            assert port == grpc_port == flag(d, "grpc-port") == SERVER_DEFAULTS["grpc-port"], (variant, kind)
            service = probe.get("service", "")
            assert service == expected, f"{variant}: {kind} asks {service!r}, expected {expected!r}"
            asked.setdefault(service, []).append(f"{variant} {kind}")
    answers = {service: health_status(manifest_server.url, service) for service in asked}
    wrong = {s: a for s, a in answers.items() if a != "SERVING"}
    assert not wrong, (f"health services not SERVING on the server started with the Deployment's flags: "
                       f"{wrong} (asked by {[asked[s] for s in wrong]})")


METRIC_NAME = re.compile(r"(?<![\w:])((?:[a-z_]+:)?(?:coalesce|nv|process)_[a-zA-Z0-9_]*(?::[a-zA-Z0-9_]+)?)(?![\w:])")


def scraped_names(url: str) -> set[str]:
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return {re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
            for line in text.splitlines() if line and not line.startswith("#")}


def test_metrics_the_manifests_read_exist_in_a_live_scrape(rendered, manifest_server):
    url = manifest_server.metrics_url
    assert url, f"no 'metrics on' line in the log:\n{manifest_server.log()}"
    # the ServiceMonitor scrapes the path the server serves
    path = urllib.parse.urlparse(url).path
    for variant, monitor in objects(rendered, "ServiceMonitor"):
        assert [e["path"] for e in monitor["spec"]["endpoints"]] == [path], variant

    expressions = {f"PrometheusRule {r.get('record') or r.get('alert')}": str(r["expr"])
                   for _, rule in objects(rendered, "PrometheusRule")[:1]
                   for g in rule["spec"]["groups"] for r in g["rules"]}
    expressions.update(shipped_queries(rendered))
    live = scraped_names(url)
    records = recording_rules()
    missing = {}
    for where, expr in expressions.items():
        for name in METRIC_NAME.findall(expr):
            if ":" in name:
                ok = name in records
            elif name.startswith("nv_gpu_") and not manifest_server.has_fake_nvml:
                continue  # no NVML here and no fake one built: the families are absent
            else:
                ok = name in live
            if not ok:
                missing.setdefault(name, []).append(where)
    assert not missing, (f"metrics read by the manifests but neither in a live scrape nor a "
                         f"recording rule: {missing}\nscraped: {sorted(live)}")
    assert expressions and any("adapter" in w for w in expressions) \
        and any("ScaledObject" in w for w in expressions), list(expressions)


# --------------------------------------------------------------------------
# docs/deploy.md
# --------------------------------------------------------------------------

def test_deploy_guide_names_only_files_that_exist():
    text = DOC.read_text()
    paths = set()
    for m in re.finditer(r"(?<![\w/.-])((?:deploy|scripts|docs|tests|examples|benchmarks)/[\w./-]*[\w/])",
                         text):
        paths.add(m.group(1).rstrip("/"))
    assert len(paths) > 10, paths
    missing = sorted(p for p in paths if not (REPO_ROOT / p).exists())
    assert not missing, f"docs/deploy.md names paths that do not exist: {missing}"
