"""The Prometheus rules (deploy/prometheus/coalesce-rules.yml) and the Grafana
dashboard (deploy/grafana/coalesce.json), offline: promtool checks and unit
tests the rules; the dashboard's structure is checked here and every PromQL
expression of both is parsed by promtool (as recording rules of a temporary
rules file: promtool 2.42 has no command that parses a bare expression).

test_prometheus_e2e.py runs the same expressions against a real Prometheus
scraping a real server. promtool comes from Debian's prometheus package
(scripts/bootstrap); without it the tests fail under CI=true or
COALESCE_E2E_REQUIRE_SERVER=1 and are skipped otherwise.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

import promql_expressions as pe

RUN_TIMEOUT_S = 120

# families without a `model` label: filtered on namespace and pod only
NO_MODEL_LABEL = re.compile(r"^(nv_gpu_|process_|coalesce_cgroup_|coalesce_build_info$)")
FAMILY_RE = re.compile(r"\b((?:nv|coalesce|process)_[a-z0-9_]+)\b(\s*\{[^}]*\})?")


def promtool(*args: str) -> tuple[subprocess.CompletedProcess, str]:
    cmd = [pe.require_binary("promtool"), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          stdin=subprocess.DEVNULL, cwd=pe.REPO_ROOT)
    return proc, f"$ {' '.join(cmd)}\nexit {proc.returncode}\n{proc.stdout}{proc.stderr}"


# --------------------------------------------------------------------------
# rules
# --------------------------------------------------------------------------

def test_rules_pass_promtool_check():
    proc, report = promtool("check", "rules", str(pe.RULES))
    assert proc.returncode == 0, report
    assert "SUCCESS" in proc.stdout, report
    assert "warn" not in report.lower(), report


def test_rules_unit_tests_pass():
    proc, report = promtool("test", "rules", str(pe.RULE_TESTS))
    assert proc.returncode == 0, report
    assert "SUCCESS" in proc.stdout, report


def test_every_rule_has_a_unit_test():
    """Each recording rule is evaluated by a promql_expr_test, and each alert
    is tested both firing and not firing."""
    with open(pe.RULE_TESTS) as f:
        doc = yaml.safe_load(f)
    exprs = [t["expr"] for case in doc["tests"] for t in case.get("promql_expr_test", [])]
    untested = [name for name in pe.recording_rule_names()
                if not any(re.search(rf"(?<![\w:]){re.escape(name)}(?![\w:])", e) for e in exprs)]
    assert not untested, f"recording rules without a promql_expr_test: {untested}"
    for alert in pe.alert_names():
        cases = [t for case in doc["tests"] for t in case.get("alert_rule_test", [])
                 if t["alertname"] == alert]
        assert any(c.get("exp_alerts") for c in cases), f"{alert}: never tested firing"
        assert any(not c.get("exp_alerts") for c in cases), f"{alert}: never tested not firing"


def test_alerts_are_complete():
    for group, rule in pe.iter_rules():
        if "alert" not in rule:
            continue
        name = rule["alert"]
        assert rule.get("for"), f"{name}: no for:"
        assert rule.get("labels", {}).get("severity") in ("warning", "critical"), name
        annotations = rule.get("annotations", {})
        assert annotations.get("summary") and annotations.get("description"), name
        assert pe.alert_signals(rule["expr"]), name


def test_quantile_rules_aggregate_buckets_before_the_quantile():
    """histogram_quantile over bucket rates summed by (le, namespace, model):
    request-weighted across pods, never an average of per-pod quantiles."""
    quantiles = [(g, r) for g, r in pe.iter_rules() if "histogram_quantile" in str(r["expr"])]
    assert len(quantiles) >= 4
    for _, rule in quantiles:
        expr = " ".join(str(rule["expr"]).split())
        assert re.search(r"histogram_quantile\(0\.\d+, sum by \(le, namespace, model\) \(rate\(\w+_bucket\[5m\]\)\)\)",
                         expr), expr


# --------------------------------------------------------------------------
# the helper that extracts expressions
# --------------------------------------------------------------------------

@pytest.mark.parametrize("expr,signals", [
    ("a > 0.1  # the SLO", ["a"]),
    ("a{x=~\"p>q and r\"} > 1", ["a{x=~\"p>q and r\"}"]),
    ("avg by (p) (u) < 0.5\nand on (p)\nsum by (p) (q) > 0", ["avg by (p) (u)", "sum by (p) (q)"]),
    ("(a > 1) or on (x) group_left (y) absent_over_time(z{k=\"v\"}[5m])", ["a", "z{k=\"v\"}"]),
    ("absent(up{job=\"coalesce\"})", ["up{job=\"coalesce\"}"]),
    ("a > b", ["a", "b"]),
    ("a > bool 1", ["a > bool 1"]),
    ("rate(x[5m]) / rate(y[5m]) >= 0.25", ["rate(x[5m]) / rate(y[5m])"]),
])
def test_alert_signals(expr, signals):
    assert pe.alert_signals(expr) == signals


def test_substitute():
    expr = 'rate(x{m=~"$model", p=~"${pod:regex}", n=~"[[namespace]]"}[$__rate_interval]) * $__range_s'
    assert pe.substitute(expr, {"model": "m1"}, "1m") == \
        'rate(x{m=~"m1", p=~".*", n=~".*"}[1m]) * 60'
    assert pe.substitute('x{m=~"$model"}', {"model": ["a.b", "c"]}) == 'x{m=~"(a\\\\.b|c)"}'
    with pytest.raises(KeyError):
        pe.substitute('x{m=~"$nope"}')


# --------------------------------------------------------------------------
# the dashboard
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dashboard() -> dict:
    with open(pe.DASHBOARD) as f:
        return json.load(f)  # fails the tests on invalid JSON


def test_dashboard_identity_and_variables(dashboard):
    assert dashboard["uid"] == "coalesce"
    assert dashboard["title"]
    assert 36 <= dashboard["schemaVersion"] <= 41, dashboard["schemaVersion"]
    variables = pe.dashboard_variables(dashboard)
    ds = variables.get("datasource")
    assert ds and ds["type"] == "datasource" and ds["query"] == "prometheus", ds
    queries = {"namespace": "coalesce_build_info", "pod": "coalesce_build_info",
               "model": "coalesce_requests_total"}
    for name, family in queries.items():
        var = variables.get(name)
        assert var, f"variable ${name} missing"
        assert var["type"] == "query" and var["multi"] and var["includeAll"], var
        assert var["datasource"] == pe.DATASOURCE_REF, var
        query = pe.variable_query(var)
        assert query.startswith("label_values(") and family in query, query
        assert pe.variable_selector(query), query


def test_dashboard_panels(dashboard):
    panels = list(pe.iter_panels(dashboard["panels"]))
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), f"duplicate panel ids: {ids}"
    types = {p["type"] for p in panels}
    assert {"timeseries", "heatmap", "stat", "table", "row"} <= types, types
    nested = [p for p in panels if p["type"] == "row" and p.get("panels")]
    assert nested, "the extractor's nested-row path is not exercised"
    defined = set(pe.dashboard_variables(dashboard))
    problems = []
    for p in panels:
        if p["type"] == "row":
            continue
        where = f'panel {p["id"]} "{p["title"]}"'
        if p.get("datasource") != pe.DATASOURCE_REF:
            problems.append(f"{where}: panel datasource {p.get('datasource')}")
        if not p.get("targets"):
            problems.append(f"{where}: no targets")
        for t in p.get("targets", []):
            if t.get("datasource") != pe.DATASOURCE_REF:
                problems.append(f"{where} {t.get('refId')}: datasource {t.get('datasource')}")
            if not t.get("expr", "").strip():
                problems.append(f"{where} {t.get('refId')}: no expr")
            undefined = {v for v in pe.referenced_variables(t.get("expr", ""))
                         if not v.startswith("__")} - defined
            if undefined:
                problems.append(f"{where} {t.get('refId')}: undefined variables {undefined}")
        if p["type"] == "heatmap":
            if not all(t.get("format") == "heatmap" and "_bucket" in t["expr"] for t in p["targets"]):
                problems.append(f"{where}: heatmap targets must be bucket rates with format heatmap")
    for name, var in pe.dashboard_variables(dashboard).items():
        undefined = {v for v in pe.referenced_variables(pe.variable_query(var))
                     if not v.startswith("__")} - defined
        if undefined:
            problems.append(f"variable ${name}: undefined variables {undefined}")
    assert not problems, "\n".join(problems)


def test_dashboard_expressions_filter_on_the_variables():
    """Every selector of a Coalesce, nv_ or process family filters on
    namespace, pod and (where the family has it) model."""
    problems = []
    for e in pe.dashboard_expressions(raw=True):
        if e.kind != "panel":
            continue
        for m in FAMILY_RE.finditer(pe.strip_comments(e.expr)):
            family, selector = m.group(1), m.group(2) or ""
            want = ['namespace=~"$namespace"', 'pod=~"$pod"']
            if not NO_MODEL_LABEL.match(family):
                want.append('model=~"$model"')
            missing = [w for w in want if w not in selector]
            if missing:
                problems.append(f"{e.where}: {family}{selector} lacks {missing}")
    assert not problems, "\n".join(problems)


def test_latency_panels_are_request_weighted():
    for e in pe.dashboard_expressions(raw=True):
        if "histogram_quantile" in e.expr:
            assert re.search(r"histogram_quantile\(0\.\d+, sum by \(le(, model)?\) \(rate\(\w+_bucket\{[^}]*\}"
                             r"\[\$__rate_interval\]\)\)\)", e.expr), e


def test_every_expression_parses(tmp_path):
    """Dashboard targets and variable selectors (substituted), record and
    alert expressions and the alerts' signals, through promtool's parser."""
    exprs = pe.all_expressions()
    rules = [{"record": f"coalesce_parse_check:expr_{i}", "expr": e.expr} for i, e in enumerate(exprs)]
    path = tmp_path / "parse-check.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "parse-check", "rules": rules}]}))
    proc, report = promtool("check", "rules", str(path))
    index = "\n".join(f"expr_{i}: {e}" for i, e in enumerate(exprs))
    assert proc.returncode == 0, f"{report}\n{index}"
    assert f"SUCCESS: {len(exprs)} rules found" in proc.stdout, f"{report}\n{index}"
