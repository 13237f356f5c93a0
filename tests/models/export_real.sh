#!/usr/bin/env bash
# Exports the real-model corpus (tests/models/real/) with torch.onnx, in a
# virtualenv of its own: $EXPORT_VENV, default <repo>/build/export-venv.
# Creates the venv and installs export_real_requirements.txt when the venv is
# missing or the requirements changed since it was installed; then runs
# export_real.py with every argument given here, e.g.
#   tests/models/export_real.sh                        # the committed corpus
#   tests/models/export_real.sh --only resnet18_tiny   # one model
#   tests/models/export_real.sh --full --out /tmp/full_exports
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${EXPORT_VENV:-$repo/build/export-venv}"
req="$here/export_real_requirements.txt"
python="${PYTHON:-python3}"
stamp="$venv/.export_real_requirements.txt"
if [[ ! -x "$venv/bin/python" ]] || ! cmp -s "$req" "$stamp"; then
    echo "export_real.sh: installing $req into $venv" >&2
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -r "$req"
    cp "$req" "$stamp"
fi
exec "$venv/bin/python" "$here/export_real.py" "$@"
