"""Shared paths: the repository (SATPEP_ROOT) and the CLI built beside the tests (SATPEP_CLI);
tests/wheel.rs sets both."""

import os
import pathlib

import pytest


@pytest.fixture(scope="session")
def root() -> pathlib.Path:
    return pathlib.Path(os.environ.get("SATPEP_ROOT", pathlib.Path(__file__).parents[4]))


@pytest.fixture(scope="session")
def cli() -> str:
    path = os.environ.get("SATPEP_CLI")
    assert path and os.path.exists(path), "SATPEP_CLI must name the satpep binary"
    return path
