"""Lint holds: `ruff check jaxmb` (the rules in pyproject.toml's [tool.ruff]) passes, so CI
fails on an unused import, an import after code, a line over 100 characters, an unsorted
import block."""

import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ruff_check_passes_on_the_package():
    ruff = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
    assert ruff, "ruff is part of the test extra (pip install -e '.[test]')"
    done = subprocess.run([ruff, "check", "jaxmb"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
