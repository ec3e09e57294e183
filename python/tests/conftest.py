"""Shared fixtures: the CLI binary to compare with and the backends usable here."""
import os
import pathlib

import pytest

import meanshift

ROOT = pathlib.Path(__file__).resolve().parents[2]


def usable_backends():
    return [b["name"] for b in meanshift.backends() if b["usable"]]


@pytest.fixture(scope="session")
def cli():
    """Path of the `meanshift` tool: $MEANSHIFT_CLI, else build/bin/meanshift of this checkout.

    CI sets MEANSHIFT_REQUIRE_CLI=1 so that a missing tool fails instead of skipping.
    """
    path = pathlib.Path(os.environ.get("MEANSHIFT_CLI", ROOT / "build" / "bin" / "meanshift"))
    if not path.is_file():
        if os.environ.get("MEANSHIFT_REQUIRE_CLI") == "1":
            pytest.fail(f"the meanshift tool is not at {path} (MEANSHIFT_REQUIRE_CLI=1)")
        pytest.skip(f"no meanshift tool at {path} (set MEANSHIFT_CLI)")
    return str(path)
