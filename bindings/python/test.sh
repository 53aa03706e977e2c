#!/usr/bin/env bash
# The Python binding's one command: on a fresh clone (CI=true, no stdin) it installs what it
# needs, builds the wheel (the core from the repository's sources, the cffi extension, one abi3
# wheel carrying both license files), and runs ruff, mypy --strict and every test: among them
# the reference-trace comparison with the C demo and the conformance suite (every
# tests/conformance/*.mqs: the repository's runner against tests/conformance_testee.py), whose
# programs the tests build themselves (tests/native_tools.py).
# Then the README's commands, as written, from a read-only copy of the repository, each set in a
# fresh virtualenv: pip install ./bindings/python, the test route (pip install
# "./bindings/python[test]", pytest), the benchmark, the build against an installed libmq, and
# the Kafka variant (README "A Kafka cluster": the core built with MQ_KAFKA=ON; the tests marked
# kafka and the scenarios of tests/conformance/kafka_scenarios.txt) against the cluster at
# MQ_KAFKA_BOOTSTRAP, or, when that is unset, a single-node one that scripts/kafka-server.sh
# starts in build/kafka-server (in the background, while the default steps run) and stops on
# exit. tests/test_readme.py checks that every sh block of the README is run here.
#
#   bindings/python/test.sh            everything
#   PYTHON=python3.12 bindings/python/test.sh   with another interpreter (default python3)
#   MQ_PYTHON_NO_UNSHARE=1 bindings/python/test.sh   as root: the README's commands without the
#                                      read-only mount (what runs where unshare is not allowed)
#
# Virtual environments live in bindings/python/.venv (and .venv-other for the exit tests on a
# second CPython when one is installed), those of the README's commands in a temporary
# directory: the system Python stays untouched. Idempotent.
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
    "scikit-build-core>=0.11" "cffi>=1.17" "pytest>=8" "pytest-asyncio>=0.23" "uvloop>=0.19" "mypy>=1.10" \
    "ruff>=0.5"

section "python: build the wheel (core from ../../src, cffi extension, abi3)"
rm -rf build/wheelhouse
# Build isolation as a user gets it; -C build-dir keeps CMake's tree between runs (a user's pip
# install builds in a temporary directory: pyproject.toml).
"$venv/pip" wheel -q --disable-pip-version-check --no-deps -C "build-dir=build/{wheel_tag}" \
    -w build/wheelhouse .
wheel=$(ls build/wheelhouse/mq-*.whl)
echo "$wheel"
case $wheel in *-abi3-*) ;; *) echo "not an abi3 wheel: $wheel" >&2; exit 1 ;; esac
# The wheel carries both licenses, byte for byte the repository's, and names them (PEP 639).
"$venv/python" - "$wheel" "$root" <<'PY'
import pathlib, sys, zipfile

wheel, root = zipfile.ZipFile(sys.argv[1]), pathlib.Path(sys.argv[2])
names = wheel.namelist()
meta = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
lines = meta.splitlines()
assert "License-Expression: MIT OR Apache-2.0" in lines, meta
for lic in ("LICENSE-MIT", "LICENSE-APACHE"):
    inside = [n for n in names if n.endswith(f".dist-info/licenses/{lic}")]
    assert len(inside) == 1, (lic, names)
    assert wheel.read(inside[0]) == (root / lic).read_bytes(), lic
    assert f"License-File: {lic}" in lines, meta
print("the wheel carries LICENSE-MIT and LICENSE-APACHE (License-Expression: MIT OR Apache-2.0)")
PY
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

section "python: ruff"
"$venv/ruff" check .
"$venv/ruff" format --check .
section "python: mypy --strict"
"$venv/mypy"

section "python: pytest"
# The tests build the C demo and the conformance runner into build/test-tools (native_tools.py).
"$venv/python" -m pytest -p no:cacheprovider -ra

section "python: examples/python/trace.py"
NO_COLOR=1 "$venv/python" "$root/examples/python/trace.py" >/dev/null
default_took=$((SECONDS - start))

# ---- the README's commands, as written, from a read-only copy ------------------------------
readme_start=$SECONDS
section "python: the README's commands from a read-only copy of the repository"
scratch=$(mktemp -d)
cleanup_scratch() { chmod -R u+w "$scratch" 2>/dev/null || true; rm -rf "$scratch"; }
if [ -n "$kafka_starter" ]; then
    trap 'cleanup_scratch; stop_kafka' EXIT
else
    trap cleanup_scratch EXIT
fi
copy=$scratch/mq
mkdir -p "$copy"
# What a clone has (tracked files and new ones not ignored): no build trees, no virtualenvs.
git -C "$root" ls-files -z --cached --others --exclude-standard |
    (cd "$root" && tar --null -T - -cf -) | tar -xf - -C "$copy"
chmod -R a-w "$copy"
# Permission bits do not bind root: as root the commands run where the copy is a read-only bind
# mount (a private mount namespace), so a write into it fails as it would for a user. Where root
# may not make one (a container without CAP_SYS_ADMIN), they run in the chmod'ed copy, with
# Python's bytecode, pytest's cache and the tests' tool builds kept out of it, and a write is
# caught afterwards: no file of the copy may be newer than the stamp. MQ_PYTHON_NO_UNSHARE=1
# takes that way on purpose.
stamp=$scratch/stamp
touch "$stamp"
copy_guard=perms
if [ "$(id -u)" = 0 ]; then
    copy_guard=mount
    if [ -n "${MQ_PYTHON_NO_UNSHARE:-}" ] ||
        ! unshare --mount -- sh -c 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0"' \
            "$copy" 2>/dev/null; then
        copy_guard=stamp
        echo "NOTE: root without a private mount namespace (unshare --mount failed or" \
            "MQ_PYTHON_NO_UNSHARE is set): the README's commands run in the chmod'ed copy," \
            "which root can write; test.sh checks instead that they wrote nothing into it"
        export PYTHONDONTWRITEBYTECODE=1 PYTEST_ADDOPTS="-p no:cacheprovider"
        export MQ_PYTHON_TEST_TOOLS_DIR=$scratch/test-tools
    fi
fi
in_copy() {
    if [ "$copy_guard" = mount ]; then
        unshare --mount -- bash -c \
            'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec bash "$1"' \
            "$copy" "$1"
    else
        bash "$1"
    fi
    local written
    written=$(find "$copy" -newer "$stamp" | head)
    if [ -n "$written" ]; then
        echo "$(basename "$1") wrote into the copy of the repository:" >&2
        echo "$written" >&2
        exit 1
    fi
}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_QUIET=1 PIP_NO_INPUT=1
fresh_venv() { "$python" -m venv "$scratch/$1" && echo "$scratch/$1/bin"; }

# pip install ./bindings/python (the quick start), then the test route of the READMEs.
route_bin=$(fresh_venv venv-route)
cat >"$scratch/route.sh" <<EOF
set -euo pipefail
cd "$copy"
export PATH="$route_bin:\$PATH"
if [ "$copy_guard" != stamp ] && touch bindings/python/written 2>/dev/null; then
    echo "the copy is writable" >&2
    exit 1
fi
pip install ./bindings/python
python -c 'import mq; print("pip install ./bindings/python: mq", mq.LIBRARY_VERSION)'
pip install "./bindings/python[test]"
# Nothing of the copy was written by the builds (pyproject.toml: no build-dir in the tree).
written=\$(find . -newer "$stamp" | head)
[ -z "\$written" ] || { echo "pip install wrote into the source tree: \$written" >&2; exit 1; }
pytest bindings/python/tests
python bench/python/bench.py --messages 200000
EOF
in_copy "$scratch/route.sh"

section "python: pip install against an installed libmq (MQ_PYTHON_SYSTEM_LIBMQ=ON)"
cmake -S "$copy" -B "$scratch/libmq-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMQ_BUILD_TESTS=OFF -DMQ_BUILD_EXAMPLES=OFF -DMQ_BUILD_BENCH=OFF >/dev/null
cmake --build "$scratch/libmq-build" -j2 >/dev/null
cmake --install "$scratch/libmq-build" --prefix "$scratch/libmq" >/dev/null
pc_dir=$(dirname "$(find "$scratch/libmq" -name mq.pc | head -n 1)")
libmq_dir=$(dirname "$(find "$scratch/libmq" -name 'libmq.so*' | head -n 1)")
system_bin=$(fresh_venv venv-system)
cat >"$scratch/system.sh" <<EOF
set -euo pipefail
cd "$copy"
export PATH="$system_bin:\$PATH" PKG_CONFIG_PATH="$pc_dir"
pip install ./bindings/python -C cmake.define.MQ_PYTHON_SYSTEM_LIBMQ=ON
# The extension loads that library (the default build links the core into it instead).
LD_LIBRARY_PATH="$libmq_dir" python -c '
import pathlib, mq
assert "$libmq_dir/libmq.so" in pathlib.Path("/proc/self/maps").read_text(), "not the installed libmq"
print("MQ_PYTHON_SYSTEM_LIBMQ=ON: mq", mq.LIBRARY_VERSION, "from $libmq_dir")'
EOF
in_copy "$scratch/system.sh"
readme_took=$((SECONDS - readme_start))

section "python: the Kafka variant (-C cmake.define.MQ_KAFKA=ON) against a cluster"
kafka_start=$SECONDS
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
kafka_bin=$(fresh_venv venv-kafka)
# The runner the default run used (the Kafka variant's tests need no demo): the caller's
# (scripts/test.sh exports the core build's, and then the tests build none), else the one the
# tests built.
export MQ_CONFORMANCE_RUNNER=${MQ_CONFORMANCE_RUNNER:-$here/build/test-tools/mq_conformance}
cat >"$scratch/kafka.sh" <<EOF
set -euo pipefail
cd "$copy"
export PATH="$kafka_bin:\$PATH"
pip install ./bindings/python -C cmake.define.MQ_KAFKA=ON
pip install pytest pytest-asyncio "uvloop>=0.19"
# One pytest process, tests one after another: the scenarios share topic names.
MQ_PYTHON_VARIANT=kafka pytest bindings/python/tests
EOF
in_copy "$scratch/kafka.sh"
echo "(python: default $default_took s, README commands $readme_took s," \
    "Kafka variant $((SECONDS - kafka_start)) s)"
echo "(python: test.sh took $((SECONDS - start)) s)"
