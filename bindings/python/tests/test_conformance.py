"""Every tests/conformance/*.mqs scenario, run through the public Python API (one test per
file, found by globbing: a new scenario needs no edit here)."""

from __future__ import annotations

import pathlib

import pytest
from mqs_runner import run_file

HERE = pathlib.Path(__file__).resolve().parent
SCENARIOS = sorted((HERE.parents[2] / "tests" / "conformance").glob("*.mqs"))


def _expected_failures() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (HERE / "conformance_expected_failures.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, reason = line.partition(" # ")
            out[name.strip()] = reason.strip() or "no reason given"
    return out


EXPECTED_FAILURES = _expected_failures()


def test_scenarios_were_found() -> None:
    assert len(SCENARIOS) >= 30, f"only {len(SCENARIOS)} scenarios found"
    unknown = set(EXPECTED_FAILURES) - {p.name for p in SCENARIOS}
    assert not unknown, f"expected failures name missing scenarios: {unknown}"


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_scenario(path: pathlib.Path) -> None:
    if path.name in EXPECTED_FAILURES:
        # strict: a scenario that starts passing must leave the list
        pytest.xfail(EXPECTED_FAILURES[path.name])
    run_file(str(path))
