"""The bench's servers import only what the image installs (``requirements.lock``): the dev
tools' packages of the dev venv are unimportable in them (``bench/production_only``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench import harness


def test_the_dev_tools_packages_are_absent_and_the_locked_ones_are_not(tmp_path: Path) -> None:
    lock = tmp_path / "requirements.lock"
    lock.write_text("django==5.2.19 \\\n    --hash=sha256:00\nhttpx==0.28.1 \\\n")
    absent = harness.absent_modules(lock)
    assert {"pytest", "rich", "pygments"} <= set(absent)  # dev-only in the real lock too
    assert not {"django", "httpx"} & set(absent)
    assert "psycopg" in absent  # installed, but this lock does not name it


def test_a_server_env_makes_them_unimportable() -> None:
    env = harness.production_only_env({"PATH": "/usr/bin:/bin"})
    code = (
        "import importlib.util, sys\n"
        "try:\n    import rich\nexcept ModuleNotFoundError:\n    print('absent')\n"
        "import httpx, django\n"  # httpx tries rich and pygments for its CLI, and goes on
        "print('pygments' in sys.modules and sys.modules['pygments'] is not None)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["absent", "False"], done.stderr
