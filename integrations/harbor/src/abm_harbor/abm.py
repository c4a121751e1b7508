"""Finding and running the abm binary."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def find_abm(explicit: str | None = None) -> str:
    """The abm binary: ``explicit``, else ``$ABM``, else ``abm`` on ``PATH``."""
    name = explicit or os.environ.get("ABM") or "abm"
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(
            f"abm binary {name!r} not found: install abm (docs/install.md), put it on PATH, "
            "or name it with --ek abm=/path/to/abm (environment) / ABM=/path/to/abm"
        )
    return str(Path(path).resolve())


def run(argv: list[str], what: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode not in ok:
        raise RuntimeError(
            f"{what} failed (exit {proc.returncode}): {' '.join(argv)}\n{proc.stdout}{proc.stderr}"
        )
    return proc
