#!/usr/bin/env bash
# The Python package as a user gets it (docs/python.md): `pip install ".[test]"` into a
# fresh virtual environment (meson-python builds the library; pip fetches the build
# tools), then its tests with pytest, from outside the source tree so that the
# installed package is the one imported. CI builds the CPU backend only (-Dcuda=disabled:
# CI has no GPU, and the CUDA kernels would double the build's minutes); pass other
# meson options as arguments (e.g. -Dcuda=enabled).
#   python/ci-test.sh [VENV_DIR] [MESON_OPTION...]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$(realpath -m "${1:-build-python}")
shift || true
options=("$@")
((${#options[@]} > 0)) || options=(-Dcuda=disabled)
settings=()
for o in "${options[@]}"; do settings+=("--config-settings=setup-args=$o"); done

rm -rf "$venv"
python3 -m venv "$venv"
py=$venv/bin/python
echo "python/ci-test.sh: pip install .[test] into $venv (${options[*]})"
start=$SECONDS
"$py" -m pip install --quiet --disable-pip-version-check "${settings[@]}" "$root[test]"
echo "python/ci-test.sh: installed in $((SECONDS - start)) s"
cd "$venv"
"$py" -m pytest -q -rs "$root/python/tests"
