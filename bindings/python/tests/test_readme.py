"""Every code block of bindings/python/README.md runs, so none can rot.

A ``python`` block runs as written in a fresh interpreter (its own child, in an empty directory)
with a time limit: a block that hangs (a poll waiting forever for a message published after
it) fails here instead of hanging the suite. A ``sh`` block is a command of the build or the
tests; each of its command lines must be one that test.sh runs as written, so a new one cannot
be added without being run."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
README = HERE.parent / "README.md"
TEST_SH = HERE.parent / "test.sh"
TIME_LIMIT = 60  # seconds per block; the slowest (the quick start) takes about 2


def blocks(text: str) -> list[tuple[int, str, str]]:
    """``(line, language, code)`` of every fenced block, in order."""
    found = []
    for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S):
        found.append((text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)))
    return found


BLOCKS = blocks(README.read_text())
PYTHON = [(line, code) for line, lang, code in BLOCKS if lang == "python"]
SHELL = [(line, code) for line, lang, code in BLOCKS if lang == "sh"]


def commands(code: str) -> list[str]:
    """The command lines of a shell block (comments and blank lines left out)."""
    out = []
    for raw in code.splitlines():
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if line:
            out.append(line)
    return out


def test_every_block_has_a_language_this_test_runs() -> None:
    assert PYTHON, "no python block found in the README"
    assert [(line, lang) for line, lang, _ in BLOCKS if lang not in ("python", "sh")] == []


@pytest.mark.parametrize("line,code", PYTHON, ids=[f"line{line}" for line, _ in PYTHON])
def test_python_block_runs(line: int, code: str, tmp_path: pathlib.Path) -> None:
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=TIME_LIMIT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(
            f"README.md line {line}: the block did not finish within {TIME_LIMIT} s "
            f"(stdout so far: {e.stdout!r})"
        ) from None
    assert done.returncode == 0, f"README.md line {line}:\n{done.stdout}{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("line,code", SHELL, ids=[f"line{line}" for line, _ in SHELL])
def test_shell_block_is_run_by_test_sh(line: int, code: str) -> None:
    # test.sh runs these lines verbatim (from the repository's root, in a fresh virtualenv).
    script = TEST_SH.read_text()
    missing = [c for c in commands(code) if c not in script]
    assert missing == [], f"README.md line {line}: test.sh does not run {missing}"


def test_the_extractor_finds_blocks_and_their_commands() -> None:
    text = "a\n```python\nprint(1)\n```\n\n```sh\n# note\npip install x  # why\n```\n"
    assert blocks(text) == [
        (2, "python", "print(1)\n"),
        (6, "sh", "# note\npip install x  # why\n"),
    ]
    assert commands(blocks(text)[1][2]) == ["pip install x"]
