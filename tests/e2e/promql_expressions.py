"""Every PromQL expression Coalesce ships, for the tests that check them.

Sources: the Grafana dashboard (deploy/grafana/coalesce.json: every panel
target, panels nested in rows included, and the selectors of its query
variables) and the Prometheus rules (deploy/prometheus/coalesce-rules.yml:
every record and alert expression).

Grafana variables are substituted for a test run: $namespace, $pod, $model
(also written ${name}, ${name:format} or [[name]]) become ".*" unless values
are given; $__rate_interval, $__interval and $__range become a given
duration ("15s"), and $__interval_ms, $__range_ms, $__range_s that duration
in milliseconds or seconds. A variable that is neither defined nor built in
raises KeyError.

An alert expression selects nothing while the alert is not firing, so a
test cannot tell "healthy" from "matches nothing". Each alert therefore also
yields its signals, the parts that must select data whenever the metrics are
there (alert_signals()):
  A or B, A and B, A unless B   -> signals of A, then of B
  A > B, A < B, A == B, ...     -> signals of A, and of B unless B is a
                                   number (a comparison with `bool` filters
                                   nothing: it is its own signal)
  absent(X), absent_over_time(X[d])  -> X
  anything else                 -> itself
The split is done on the expression's text at the top nesting level, after
removing comments, so that the parts stay exactly as written.

It also finds the Prometheus binaries (promtool, prometheus): missing ones
fail the test when CI=true or COALESCE_E2E_REQUIRE_SERVER=1, and skip it
otherwise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = REPO_ROOT / "deploy" / "grafana" / "coalesce.json"
RULES = REPO_ROOT / "deploy" / "prometheus" / "coalesce-rules.yml"
RULE_TESTS = REPO_ROOT / "deploy" / "prometheus" / "tests" / "coalesce-rules.test.yml"

DATASOURCE_REF = {"type": "prometheus", "uid": "${datasource}"}
DEFAULT_INTERVAL = "15s"


@dataclass(frozen=True)
class Expression:
    source: str          # "dashboard" or "rules"
    kind: str            # "panel", "variable", "record", "alert" or "alert-signal"
    where: str           # which panel, variable or rule
    expr: str            # substituted, ready for Prometheus
    require_data: bool   # False only for whole alert expressions

    def __str__(self) -> str:
        return f"[{self.source} {self.kind}] {self.where}: {self.expr}"


# --------------------------------------------------------------------------
# Grafana variables
# --------------------------------------------------------------------------

_VAR_RE = re.compile(r"\$\{(\w+)(?::[^}]*)?\}|\$(\w+)|\[\[(\w+)(?::[^\]]*)?\]\]")
_DURATION_RE = re.compile(r"^(\d+)(ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
BUILTIN_DURATIONS = ("__rate_interval", "__interval", "__range")
BUILTIN_NUMBERS = {"__interval_ms": 1, "__range_ms": 1, "__range_s": 1000}


def duration_ms(duration: str) -> int:
    m = _DURATION_RE.match(duration)
    if not m:
        raise ValueError(f"not a simple duration: {duration!r} (e.g. 15s, 1m)")
    return int(m.group(1)) * _UNIT_MS[m.group(2)]


def _variable_value(value) -> str:
    """A multi-value variable as Grafana formats it for Prometheus regex matchers."""
    if isinstance(value, (list, tuple)):
        return "(" + "|".join(re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\\\1", v) for v in value) + ")"
    return str(value)


def referenced_variables(expr: str) -> set[str]:
    """Names of the Grafana variables an expression uses, built-ins included."""
    return {next(g for g in m.groups() if g) for m in _VAR_RE.finditer(expr)}


def substitute(expr: str, variables: dict | None = None, interval: str = DEFAULT_INTERVAL,
               defined: set[str] | None = None) -> str:
    """expr with every Grafana variable replaced (see the module docstring).

    variables: values for the dashboard's variables (str, or a list for a
    multi-value selection); defined: the dashboard's variable names (those
    without a given value become ".*"). Raises KeyError for a variable that
    is neither given, defined nor built in."""
    variables = dict(variables or {})
    defined = set(defined if defined is not None else ("namespace", "pod", "model", "datasource"))
    ms = duration_ms(interval)

    def repl(m: re.Match) -> str:
        name = next(g for g in m.groups() if g)
        if name in BUILTIN_DURATIONS:
            return interval
        if name in BUILTIN_NUMBERS:
            return str(ms // BUILTIN_NUMBERS[name])
        if name in variables:
            return _variable_value(variables[name])
        if name in defined:
            return ".*"
        raise KeyError(f"undefined Grafana variable ${name} in {expr!r}")

    return _VAR_RE.sub(repl, expr)


# --------------------------------------------------------------------------
# the dashboard
# --------------------------------------------------------------------------

def load_dashboard(path: Path = DASHBOARD) -> dict:
    with open(path) as f:
        return json.load(f)


def iter_panels(panels: list):
    """Every panel, depth first: rows and the panels nested in them."""
    for panel in panels or []:
        yield panel
        yield from iter_panels(panel.get("panels", []))


def dashboard_variables(dashboard: dict) -> dict[str, dict]:
    return {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}


def variable_query(var: dict) -> str:
    query = var.get("query", "")
    if isinstance(query, dict):
        query = query.get("query", "")
    return query or ""


_LABEL_VALUES_RE = re.compile(r"^\s*label_values\((.*),\s*([A-Za-z_]\w*)\s*\)\s*$", re.S)
_QUERY_RESULT_RE = re.compile(r"^\s*query_result\((.*)\)\s*$", re.S)


def variable_selector(query: str) -> str | None:
    """The PromQL inside a Prometheus variable query, or None if it has none:
    label_values(SELECTOR, label) -> SELECTOR, query_result(EXPR) -> EXPR."""
    m = _LABEL_VALUES_RE.match(query)
    if m:
        return m.group(1).strip()
    m = _QUERY_RESULT_RE.match(query)
    return m.group(1).strip() if m else None


def dashboard_expressions(path: Path = DASHBOARD, variables: dict | None = None,
                          interval: str = DEFAULT_INTERVAL, raw: bool = False) -> list[Expression]:
    """Panel targets (rows' nested panels included) and variable-query
    selectors, substituted (raw=True: as written)."""
    dash = load_dashboard(path)
    defined = set(dashboard_variables(dash))
    out = []

    def add(kind, where, expr):
        text = expr if raw else substitute(expr, variables, interval, defined)
        out.append(Expression("dashboard", kind, where, text, True))

    for panel in iter_panels(dash.get("panels", [])):
        for target in panel.get("targets", []):
            if target.get("expr", "").strip():
                add("panel", f'panel {panel.get("id")} "{panel.get("title")}" target '
                             f'{target.get("refId")}', target["expr"])
    for name, var in dashboard_variables(dash).items():
        if var.get("type") == "query":
            selector = variable_selector(variable_query(var))
            if selector:
                add("variable", f"variable ${name}", selector)
    return out


# --------------------------------------------------------------------------
# the rules
# --------------------------------------------------------------------------

def load_rules(path: Path = RULES) -> dict:
    with open(path) as f:
        return yaml.safe_load(f)


def iter_rules(path: Path = RULES):
    """(group name, rule dict) for every rule."""
    for group in load_rules(path).get("groups", []):
        for rule in group.get("rules", []):
            yield group["name"], rule


def recording_rule_names(path: Path = RULES) -> list[str]:
    return [r["record"] for _, r in iter_rules(path) if "record" in r]


def alert_names(path: Path = RULES) -> list[str]:
    return [r["alert"] for _, r in iter_rules(path) if "alert" in r]


def rule_expressions(path: Path = RULES, signals: bool = True) -> list[Expression]:
    """Record and alert expressions; with signals, each alert's signals too."""
    out = []
    for group, rule in iter_rules(path):
        expr = str(rule["expr"]).strip()
        if "record" in rule:
            out.append(Expression("rules", "record", f"{group}/record {rule['record']}", expr, True))
            continue
        where = f"{group}/alert {rule['alert']}"
        out.append(Expression("rules", "alert", where, expr, False))
        if signals:
            for i, sig in enumerate(alert_signals(expr)):
                out.append(Expression("rules", "alert-signal", f"{where} signal {i}", sig, True))
    return out


def all_expressions(variables: dict | None = None, interval: str = DEFAULT_INTERVAL,
                    dashboard: Path = DASHBOARD, rules: Path = RULES) -> list[Expression]:
    return dashboard_expressions(dashboard, variables, interval) + rule_expressions(rules)


# --------------------------------------------------------------------------
# splitting an expression at its top level
# --------------------------------------------------------------------------

_COMPARISONS = ("==", "!=", ">=", "<=", ">", "<")
_SET_OPERATORS = ("or", "and", "unless")
_PRECEDENCE = {"or": 0, "and": 1, "unless": 1, **{op: 2 for op in _COMPARISONS}}
_NUMBER_RE = re.compile(r"^[+-]?(?:0x[0-9a-f]+|inf|nan|(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)$", re.I)
_ABSENT_RE = re.compile(r"^(absent|absent_over_time)\s*\((.*)\)$", re.S)
_OPEN, _CLOSE = "([{", ")]}"


def strip_comments(expr: str) -> str:
    """expr with each # comment (outside strings) replaced by spaces, so that
    positions are kept."""
    out, i, quote = list(expr), 0, None
    while i < len(expr):
        c = expr[i]
        if quote:
            if c == "\\" and quote != "`":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'`":
            quote = c
        elif c == "#":
            while i < len(expr) and expr[i] != "\n":
                out[i] = " "
                i += 1
            continue
        i += 1
    return "".join(out)


def _top_level_operators(expr: str):
    """(start, end, operator) of each binary set or comparison operator at
    nesting depth 0 (expr without comments)."""
    depth, i, quote = 0, 0, None
    while i < len(expr):
        c = expr[i]
        if quote:
            if c == "\\" and quote != "`":
                i += 2
                continue
            if c == quote:
                quote = None
            i += 1
            continue
        if c in "\"'`":
            quote = c
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif depth == 0:
            two = expr[i:i + 2]
            if two in ("==", "!=", ">=", "<="):
                yield i, i + 2, two
                i += 2
                continue
            if c in "<>":
                yield i, i + 1, c
            elif c.isalpha() or c == "_":
                j = i
                while j < len(expr) and (expr[j].isalnum() or expr[j] in "_:"):
                    j += 1
                word = expr[i:j]
                if word.lower() in _SET_OPERATORS:
                    yield i, j, word.lower()
                i = j
                continue
        i += 1


def strip_parens(expr: str) -> str:
    """expr without whitespace and parentheses that enclose all of it."""
    expr = expr.strip()
    while expr.startswith("(") and expr.endswith(")"):
        depth, quote = 0, None
        for i, c in enumerate(expr):
            if quote:
                if c == quote:
                    quote = None
                continue
            if c in "\"'`":
                quote = c
            elif c in _OPEN:
                depth += 1
            elif c in _CLOSE:
                depth -= 1
                if depth == 0 and i != len(expr) - 1:
                    return expr  # "(a) + (b)": the first "(" closes early
        expr = expr[1:-1].strip()
    return expr


def _skip_modifiers(expr: str, pos: int) -> tuple[int, bool]:
    """Past `bool`, `on(...)`/`ignoring(...)` and `group_left(...)`/
    `group_right(...)` after an operator: (position of the right operand,
    whether `bool` was there)."""
    has_bool = False
    while True:
        m = re.compile(r"\s*(bool|on|ignoring|group_left|group_right)\b\s*", re.I).match(expr, pos)
        if not m:
            return pos, has_bool
        word = m.group(1).lower()
        pos = m.end()
        if word == "bool":
            has_bool = True
        elif pos < len(expr) and expr[pos] == "(":
            pos = expr.index(")", pos) + 1  # label lists hold no parentheses
        elif word in ("on", "ignoring"):
            raise ValueError(f"{word} without a label list in {expr!r}")


def split_top_level(expr: str):
    """(operator, left, right, has_bool) at the loosest-binding top-level
    operator (the last of its level: they associate to the left), or None
    when expr has no top-level set or comparison operator."""
    expr = strip_parens(strip_comments(expr))
    ops = list(_top_level_operators(expr))
    if not ops:
        return None
    loosest = min(_PRECEDENCE[op] for _, _, op in ops)
    start, end, op = [o for o in ops if _PRECEDENCE[o[2]] == loosest][-1]
    rhs_start, has_bool = _skip_modifiers(expr, end)
    return op, expr[:start].strip(), expr[rhs_start:].strip(), has_bool


def alert_signals(expr: str) -> list[str]:
    """The parts of an alert expression that must select data whenever the
    metrics exist (see the module docstring)."""
    expr = strip_parens(strip_comments(expr))
    split = split_top_level(expr)
    if split is None:
        m = _ABSENT_RE.match(expr)
        if m:
            inner = m.group(2).strip()
            if m.group(1) == "absent_over_time":
                inner = re.sub(r"\[[^\]]*\]\s*$", "", inner).strip()
            return alert_signals(inner)
        return [expr]
    op, lhs, rhs, has_bool = split
    if op in _SET_OPERATORS:
        return alert_signals(lhs) + alert_signals(rhs)
    if has_bool:
        return [expr]
    out = []
    for side in (lhs, rhs):
        if not _NUMBER_RE.match(strip_parens(side)):
            out += alert_signals(side)
    return out


# --------------------------------------------------------------------------
# Prometheus binaries
# --------------------------------------------------------------------------

HOW_TO_INSTALL = "scripts/bootstrap installs Debian's prometheus package (promtool, prometheus)"


def require_binary(name: str) -> str:
    """Path of a Prometheus binary ($PROMTOOL / $PROMETHEUS, else PATH);
    missing: pytest.fail under CI=true or COALESCE_E2E_REQUIRE_SERVER=1,
    pytest.skip otherwise."""
    path = os.environ.get(name.upper()) or shutil.which(name)
    if path and os.access(path, os.X_OK):
        return path
    from e2e_util import unusable
    unusable(f"{name} not found: {HOW_TO_INSTALL}")
