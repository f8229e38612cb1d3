"""Lint and layout hold: `ruff check jaxmb` (the rules in pyproject.toml's [tool.ruff]) and
`ruff format --check` over the repository's Python files pass, so CI fails on an unused import,
an import after code, a line over 100 characters, an unsorted import block or a file that is
not laid out as `ruff format` lays it out."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize(
    "arguments", [["check", "jaxmb"], ["format", "--check", "."]], ids=["check", "format"]
)
def test_ruff_passes(arguments):
    ruff = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
    assert ruff, "ruff is part of the test extra (pip install -e '.[test]')"
    done = subprocess.run([ruff, *arguments], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
