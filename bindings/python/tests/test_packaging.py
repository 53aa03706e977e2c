"""The package's metadata: its license, and the license files the wheel carries."""

from __future__ import annotations

import importlib.metadata
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
PROJECT = pathlib.Path(__file__).resolve().parents[1]
LICENSE_FILES = ("LICENSE-MIT", "LICENSE-APACHE")


@pytest.mark.parametrize("name", LICENSE_FILES)
def test_the_license_files_are_the_repositorys(name: str) -> None:
    # The package carries copies (a wheel's license files must be inside its project).
    assert (PROJECT / name).read_bytes() == (ROOT / name).read_bytes()


def test_the_installed_metadata_names_the_license_and_carries_its_files() -> None:
    dist = importlib.metadata.distribution("mq")
    assert dist.metadata["License-Expression"] == "MIT OR Apache-2.0"
    assert sorted(dist.metadata.get_all("License-File") or []) == sorted(LICENSE_FILES)
    for name in LICENSE_FILES:
        shipped = dist.locate_file(f"mq-{dist.version}.dist-info/licenses/{name}")
        assert pathlib.Path(str(shipped)).read_bytes() == (ROOT / name).read_bytes()
