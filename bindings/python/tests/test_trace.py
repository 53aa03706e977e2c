"""examples/python/trace.py prints exactly the C demo's trace section (run from its binary)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
BUILD = ROOT / "bindings" / "python" / "build-core"


def c_demo() -> pathlib.Path:
    """The C demo, built from the repository's sources into build-core/ if needed."""
    demo = BUILD / "examples" / "mq_demo"
    if not demo.exists():
        # The flags test.sh configures build-core/ with (it also builds the conformance runner).
        subprocess.run(
            [
                "cmake",
                "-S",
                str(ROOT),
                "-B",
                str(BUILD),
                "-DCMAKE_BUILD_TYPE=Release",
                "-DMQ_BUILD_TESTS=ON",
                "-DMQ_BUILD_EXAMPLES=ON",
                "-DMQ_BUILD_BENCH=OFF",
            ],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            ["cmake", "--build", str(BUILD), "--target", "mq_demo", "-j2"],
            check=True,
            capture_output=True,
        )
    return demo


def test_python_trace_matches_the_c_demo_byte_for_byte() -> None:
    env = dict(os.environ, NO_COLOR="1")
    c = subprocess.run([str(c_demo())], capture_output=True, env=env, timeout=120)
    assert c.returncode == 0, c.stderr
    # The trace section: everything before the reference stress (timings vary run to run).
    section, sep, _ = c.stdout.partition(b"\nReference stress")
    assert sep, "the C demo no longer prints a reference stress section"
    py = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "python" / "trace.py")],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert py.returncode == 0, py.stderr
    assert py.stdout == section
