#!/usr/bin/env bash
# Installs Triton's perf_analyzer from PyPI into DEST (default: build/perf_analyzer)
# and writes DEST/perf_analyzer, a wrapper the e2e tests find.
#
# Why not `pip install perf-analyzer`: the real wheels (2.58+) are tagged
# manylinux_2_38_x86_64, so on a glibc 2.36 system (Debian 12) pip skips them and
# installs the 0.1.0 placeholder, which has no binary. We fetch the wheel with
# `pip download --platform manylinux_2_38_x86_64` and, when the system glibc is
# older than 2.38, make it run with the shim in compat.cc (see there).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
DEST="${1:-$ROOT/build/perf_analyzer}"
VERSION="${PERF_ANALYZER_VERSION:-2.60.0}"
PY="${PYTHON:-python3}"

mkdir -p "$DEST"
DEST="$(cd "$DEST" && pwd)"
if [ ! -x "$DEST/bin/perf_analyzer.orig" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  "$PY" -m pip download --quiet --no-deps --only-binary=:all: \
      --platform manylinux_2_38_x86_64 "perf-analyzer==$VERSION" -d "$tmp"
  "$PY" -m zipfile -e "$tmp"/perf_analyzer-"$VERSION"-*.whl "$tmp/x"
  mkdir -p "$DEST/bin"
  install -m 0755 "$tmp/x/perf_analyzer/bin/perf_analyzer" "$DEST/bin/perf_analyzer.orig"
fi

glibc="$(getconf GNU_LIBC_VERSION | awk '{print $2}')"
if "$DEST/bin/perf_analyzer.orig" --version >/dev/null 2>&1; then
  # runs natively (glibc >= 2.38 and a GCC 13 libstdc++)
  ln -sf bin/perf_analyzer.orig "$DEST/perf_analyzer"
  echo "perf_analyzer $VERSION runs natively (glibc $glibc): $DEST/perf_analyzer"
  exit 0
fi

cp "$DEST/bin/perf_analyzer.orig" "$DEST/bin/perf_analyzer.patched"
"$PY" "$HERE/weaken_versions.py" "$DEST/bin/perf_analyzer.patched" \
    GLIBC_2.38 GLIBCXX_3.4.31 GLIBCXX_3.4.32 >/dev/null
"${CXX:-g++}" -O2 -shared -fPIC -o "$DEST/bin/libpa_compat.so" "$HERE/compat.cc"
rm -f "$DEST/perf_analyzer"
cat > "$DEST/perf_analyzer" <<WRAP
#!/bin/sh
# perf_analyzer $VERSION on glibc $glibc through tests/e2e/perf_analyzer/compat.cc
LD_PRELOAD="$DEST/bin/libpa_compat.so\${LD_PRELOAD:+:\$LD_PRELOAD}" exec "$DEST/bin/perf_analyzer.patched" "\$@"
WRAP
chmod 0755 "$DEST/perf_analyzer"
"$DEST/perf_analyzer" --version 2>&1 | grep -q "Perf Analyzer Version" || {
  echo "perf_analyzer does not start even with the shim" >&2; exit 1; }
echo "perf_analyzer $VERSION runs with the compat shim (glibc $glibc): $DEST/perf_analyzer"
