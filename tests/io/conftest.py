"""Shared fixtures of the serialization interoperability tests: the yaten side is the
tests/io/roundtrip.c program (`make test-io` builds it and passes its path in YT_IO_ROUNDTRIP)."""

import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def roundtrip_bin():
    path = os.environ.get("YT_IO_ROUNDTRIP", "build/tests/io_roundtrip")
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is missing: run `make test-io` (or make {path})")
    return path


@pytest.fixture
def yaten(roundtrip_bin):
    """Runs `roundtrip ARGS...`; returns stdout, or raises with yaten's message."""

    def run(*args, expect_error=False):
        p = subprocess.run([roundtrip_bin, *map(str, args)], capture_output=True, text=True)
        if expect_error:
            assert p.returncode == 1, f"expected a failure, got {p.returncode}: {p.stdout}"
            return p.stderr.strip()
        assert p.returncode == 0, f"roundtrip {' '.join(map(str, args))} failed: {p.stderr}"
        return p.stdout

    return run
