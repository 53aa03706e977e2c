"""The repository's programs the tests compare against (the C demo, the conformance runner),
built from its sources when needed, so that ``pytest bindings/python/tests`` works after a plain
``pip install "./bindings/python[test]"``: no test skips for want of them.

They are built with CMake from tests/native/CMakeLists.txt (the core without its GoogleTest
suite) into bindings/python/build/test-tools/, or, when the checkout cannot be written, into a
temporary directory for this session. Every session runs the build, which is a no-op when
nothing changed, so a program is never older than the sources. MQ_CONFORMANCE_RUNNER names a
runner built elsewhere instead; MQ_PYTHON_TEST_TOOLS_DIR, a directory to build them in (test.sh's
way to keep a checkout that root could write untouched)."""

from __future__ import annotations

import atexit
import functools
import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SOURCE = HERE / "native"


def _writable(directory: pathlib.Path) -> bool:
    # A real write: permission bits do not bind root, and a read-only mount binds everyone.
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            return True
    except OSError:
        return False


@functools.cache
def _build_dir() -> pathlib.Path:
    chosen = os.environ.get("MQ_PYTHON_TEST_TOOLS_DIR")
    if chosen:
        return pathlib.Path(chosen)
    preferred = HERE.parent / "build" / "test-tools"
    if _writable(preferred):
        return preferred
    scratch = tempfile.mkdtemp(prefix="mq-python-test-tools-")
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    return pathlib.Path(scratch)


def _run(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(
            f"building the tests' native programs failed: {' '.join(cmd)}\n"
            f"{done.stdout}{done.stderr}\n(they need cmake and a C++20 compiler, as the "
            "package's own build does; MQ_CONFORMANCE_RUNNER can name a runner built elsewhere)",
            pytrace=False,
        )


@functools.cache
def _configured() -> pathlib.Path:
    if shutil.which("cmake") is None:
        pytest.fail(
            "cmake is not on PATH: the tests build the C demo and the conformance runner with "
            "it (pip install cmake, or your system's package)",
            pytrace=False,
        )
    build = _build_dir()
    cmd = ["cmake", "-S", str(SOURCE), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"]
    if not (build / "CMakeCache.txt").exists() and shutil.which("ninja"):
        cmd += ["-G", "Ninja"]
    _run(cmd)
    return build


@functools.cache
def built(target: str) -> pathlib.Path:
    """The program of ``target`` (``mq_demo`` or ``mq_conformance``), built now if needed."""
    build = _configured()
    _run(["cmake", "--build", str(build), "--target", target, "-j2"])
    where = {
        "mq_demo": build / "mq-core" / "examples" / "mq_demo",
        "mq_conformance": build / "mq_conformance",
    }[target]
    assert os.access(where, os.X_OK), f"the build of {target} left no {where}"
    return where


def conformance_runner() -> pathlib.Path:
    env = os.environ.get("MQ_CONFORMANCE_RUNNER")
    if env:
        if not os.access(env, os.X_OK):
            pytest.fail(f"MQ_CONFORMANCE_RUNNER={env} is not an executable file", pytrace=False)
        return pathlib.Path(env)
    return built("mq_conformance")


def c_demo() -> pathlib.Path:
    return built("mq_demo")
