"""The type checker over the product packages (issue 29): ``mypy``, configured in
pyproject.toml's ``[tool.mypy]`` (the packages it reads, the two untyped third-party
libraries it may not look into, unused ``type: ignore`` comments reported).

Types are declared all through the code; this is what keeps them true. A failure lists
mypy's findings, file:line each.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_mypy_finds_nothing() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-color-output"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout, done.stdout
