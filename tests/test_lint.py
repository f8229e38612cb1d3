"""Lint, layout and types hold: `ruff check jaxmb` (the rules in pyproject.toml's [tool.ruff]),
`ruff format --check` over the repository's Python files and `pyright` on jaxmb (basic mode,
pyproject.toml's [tool.pyright]) pass, so CI fails on an unused import, an import after code, a
line over 100 characters, an unsorted import block, a file that is not laid out as `ruff
format` lays it out, or a type error (an argument of the wrong type, an attribute read from a
value that may be None, ...)."""

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


def test_pyright_passes():
    """pyright reads the packages of this interpreter (`--pythonpath`), wherever it was run from."""
    pyright = shutil.which("pyright", path=os.path.dirname(sys.executable)) or shutil.which(
        "pyright"
    )
    assert pyright, "pyright is part of the test extra (pip install -e '.[test]')"
    done = subprocess.run(
        [pyright, "--pythonpath", sys.executable, "jaxmb"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "0 errors" in done.stdout, done.stdout[-2000:]
