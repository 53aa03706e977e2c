#!/usr/bin/env bash
# The Python binding's one command: on a fresh clone (CI=true, no stdin) it installs what it
# needs, builds the package the way a user does (pip install ./bindings/python: the core from
# the repository's sources, the cffi extension, one abi3 wheel), and runs every test, ruff,
# mypy --strict, the reference-trace comparison with the C demo, and the conformance suite
# (every tests/conformance/*.mqs: the repository's runner against tests/conformance_testee.py).
#
#   bindings/python/test.sh            everything
#   PYTHON=python3.12 bindings/python/test.sh   with another interpreter (default python3)
#
# Virtual environments live in bindings/python/.venv (and .venv-other for the exit tests on a
# second CPython when one is installed): the system Python stays untouched. Idempotent.
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$here"
source "$root/scripts/lib/setup.sh"

start=$SECONDS
ensure_tools cmake ninja g++ gtest  # gtest: the core's CMake needs it with tests on
python=${PYTHON:-python3}
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    # Debian's own python3 ships venv separately.
    section "installing python3-venv"
    env DEBIAN_FRONTEND=noninteractive apt-get update
    env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-venv
fi

section "python: virtualenv and tools"
[ -x .venv/bin/python ] || "$python" -m venv .venv
venv=$here/.venv/bin
"$venv/python" --version
"$venv/pip" install -q --disable-pip-version-check \
    "scikit-build-core>=0.10" "cffi>=1.17" "pytest>=8" "pytest-asyncio>=0.23" "mypy>=1.10" \
    "ruff>=0.5"

section "python: build the wheel (core from ../../src, cffi extension, abi3)"
rm -rf build/wheelhouse
# Build isolation as a user gets it; build/ keeps CMake's tree between runs.
"$venv/pip" wheel -q --disable-pip-version-check --no-deps -w build/wheelhouse .
wheel=$(ls build/wheelhouse/mq-*.whl)
echo "$wheel"
case $wheel in *-abi3-*) ;; *) echo "not an abi3 wheel: $wheel" >&2; exit 1 ;; esac
"$venv/pip" install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"

# The exit tests also run on another CPython when one is installed (the same abi3 wheel).
other=""
mine=$("$venv/python" -c 'import sys; print(sys.version_info[:2])')
for cand in python3.13 python3.12 "$HOME/.pyenv/versions/3.13.0/bin/python3.13" \
    "$HOME/.pyenv/versions/3.12.1/bin/python3.12"; do
    # pyenv shims exist for versions that are not selected: run it to know.
    if theirs=$("$cand" -c 'import sys; print(sys.version_info[:2])' 2>/dev/null) &&
        [ "$theirs" != "$mine" ]; then
        other=$cand
        break
    fi
done
if [ -n "$other" ]; then
    section "python: the same wheel on $("$other" --version)"
    [ -x .venv-other/bin/python ] || "$other" -m venv .venv-other
    .venv-other/bin/pip install -q --disable-pip-version-check "cffi>=1.17"
    .venv-other/bin/pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"
    .venv-other/bin/python -c 'import mq; print("mq", mq.LIBRARY_VERSION, "imports")'
    export MQ_OTHER_PYTHON=$here/.venv-other/bin/python
else
    echo "(no second CPython found: the exit tests run on $("$venv/python" --version) only)"
fi

section "python: the C demo and the conformance runner (build-core/, from ../../)"
# One tree for both: the demo for the trace comparison, mq_conformance for the scenarios.
# Tests on is what defines the runner's target; only the two targets are built.
generator=()
[ -f build-core/CMakeCache.txt ] || generator=(-G Ninja)
cmake -S "$root" -B build-core "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DMQ_BUILD_TESTS=ON -DMQ_BUILD_EXAMPLES=ON -DMQ_BUILD_BENCH=OFF >/dev/null
cmake --build build-core --target mq_demo mq_conformance -j2
export MQ_CONFORMANCE_RUNNER=$here/build-core/tests/conformance/mq_conformance

section "python: ruff"
"$venv/ruff" check .
"$venv/ruff" format --check .
section "python: mypy --strict"
"$venv/mypy"

section "python: pytest"
"$venv/python" -m pytest -p no:cacheprovider -ra

section "python: examples/python/trace.py"
NO_COLOR=1 "$venv/python" "$root/examples/python/trace.py" >/dev/null
echo "(python: test.sh took $((SECONDS - start)) s)"
