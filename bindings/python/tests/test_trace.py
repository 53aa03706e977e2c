"""examples/python/trace.py prints exactly the C demo's trace section (run from its binary, built
from the repository's sources by native_tools.py)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from native_tools import c_demo

ROOT = pathlib.Path(__file__).resolve().parents[3]


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
