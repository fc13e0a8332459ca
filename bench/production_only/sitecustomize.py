"""Loaded by every Python process of a bench server (``bench/production_only`` is put first on
its ``PYTHONPATH``): the top-level modules named in ``BENCH_ABSENT_MODULES`` become
unimportable, as they are in the image, which installs ``requirements.lock`` only. The dev
venv the bench runs in also holds the dev tools' packages, and libraries import some of them
when present: httpx's ``__init__`` tries its command-line client (rich, pygments), about 4 MB
of a web worker's memory that production never loads.

A ``None`` in ``sys.modules`` is the import system's documented way to make ``import name``
raise ``ModuleNotFoundError`` (the Python reference, "The module cache").
"""

from __future__ import annotations

import os
import sys

for _name in os.environ.get("BENCH_ABSENT_MODULES", "").split(","):
    if _name:
        sys.modules.setdefault(_name, None)  # type: ignore[arg-type]
