#!/usr/bin/env bash
# The Python binding's one command: on a fresh clone (CI=true, no stdin) it installs what it
# needs, builds the package the way a user does (pip install ./bindings/python: the core from
# the repository's sources, the cffi extension, one abi3 wheel), and runs every test, ruff,
# mypy --strict, the reference-trace comparison with the C demo, and the conformance suite
# (every tests/conformance/*.mqs: the repository's runner against tests/conformance_testee.py).
# Then the Kafka variant (README "A Kafka cluster"): the wheel built with the core's MQ_KAFKA=ON,
# its tests (marked kafka) and the scenarios of tests/conformance/kafka_scenarios.txt against
# the cluster at MQ_KAFKA_BOOTSTRAP, or, when that is unset, a single-node one that
# scripts/kafka-server.sh starts in build/kafka-server (in the background, while the default
# steps run) and stops on exit.
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
# gtest: the core's CMake needs it with tests on; pkg-config and rdkafka: the Kafka variant's
# core. java and mvn (scripts/kafka-server.sh) are installed here, not by the script in the
# background, where its apt-get could meet another.
ensure_tools cmake ninja g++ gtest pkg-config rdkafka
kafka_dir=$here/build/kafka-server
kafka_starter=""
if [ -z "${MQ_KAFKA_BOOTSTRAP:-}" ]; then
    ensure_tools java mvn
    mkdir -p "$kafka_dir"
    "$root/scripts/kafka-server.sh" start "$kafka_dir" \
        >"$kafka_dir/start.out" 2>"$kafka_dir/start.err" &
    kafka_starter=$!
    stop_kafka() {
        # A start still under way is waited for (it bounds itself), so that stop finds its pid.
        wait "$kafka_starter" 2>/dev/null || true
        "$root/scripts/kafka-server.sh" stop "$kafka_dir" || true
    }
    trap stop_kafka EXIT
fi
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
default_took=$((SECONDS - start))

section "python: the Kafka variant (-C cmake.define.MQ_KAFKA=ON) against a cluster"
kafka_start=$SECONDS
# Its own CMake tree (build/kafka-*: switching MQ_KAFKA in one tree would rebuild the core each
# time) and no build isolation (the venv has the build requirements; an isolated environment
# costs seconds and reconfigures the tree on every run).
rm -rf build/kafka-wheelhouse build/kafka-site
"$venv/pip" wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
    -C cmake.define.MQ_KAFKA=ON -C "build-dir=build/kafka-{wheel_tag}" -w build/kafka-wheelhouse .
# Installed beside the default wheel, not over it: PYTHONPATH puts it first for this run only.
"$venv/pip" install -q --disable-pip-version-check --no-deps --target build/kafka-site \
    build/kafka-wheelhouse/mq-*.whl
if [ -n "$kafka_starter" ]; then
    if ! wait "$kafka_starter"; then
        cat "$kafka_dir/start.err" >&2
        echo "scripts/kafka-server.sh start $kafka_dir failed" >&2
        exit 1
    fi
    MQ_KAFKA_BOOTSTRAP=$(tail -n 1 "$kafka_dir/start.out")
    export MQ_KAFKA_BOOTSTRAP
fi
echo "Kafka at $MQ_KAFKA_BOOTSTRAP"
# One pytest process, tests one after another: the scenarios share topic names.
PYTHONPATH=$here/build/kafka-site MQ_PYTHON_VARIANT=kafka \
    "$venv/python" -m pytest -p no:cacheprovider -ra
echo "(python: the Kafka variant took $((SECONDS - kafka_start)) s after the default's $default_took s)"
echo "(python: test.sh took $((SECONDS - start)) s)"
