"""The image's steps without a Docker engine: the build context that .dockerignore leaves, the
Dockerfile's RUN step in it, its CMD serving and its HEALTHCHECK passing, and ``docker stop``'s
SIGTERM ending the web process. The Dockerfile is parsed, so a change to it is what runs here
(the Python packages are the test environment's own: the same lock file).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.ports import free_port
from tests.processes import kill_group

ROOT = Path(__file__).resolve().parents[2]
NEVER_IN_IMAGE = [".env", "var/db.sqlite3", ".venv/bin/python", ".git", "tests/conftest.py",
                  "bench/kv_backends.py", ".venv-py3/x", "var/secret_key"]  # fmt: skip


def dockerignore_patterns() -> list[tuple[bool, str]]:
    patterns = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            negated = line.startswith("!")
            patterns.append((negated, line.lstrip("!").rstrip("/")))
    return patterns


def ignored(path: str, patterns: list[tuple[bool, str]]) -> bool:
    """Docker's rule: the last matching pattern wins; a pattern matching a directory excludes
    everything under it; ``**`` matches any number of directories."""
    result = False
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for negated, pattern in patterns:
        regex = fnmatch.translate(pattern).replace(".*.*/", "(.*/)?")
        if any(re.fullmatch(regex, prefix) for prefix in prefixes):
            result = not negated
    return result


def build_context(target: Path) -> None:
    """Copy what ``COPY . .`` would copy (tracked and untracked files, minus .dockerignore)."""
    patterns = dockerignore_patterns()
    for directory, subdirectories, files in os.walk(ROOT):
        base = Path(directory).relative_to(ROOT)
        subdirectories[:] = [
            name for name in subdirectories if not ignored((base / name).as_posix(), patterns)
        ]
        for name in files:
            relative = (base / name).as_posix()
            if not ignored(relative, patterns):
                destination = target / relative
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / relative, destination)


def dockerfile() -> dict[str, list[str]]:
    """Instruction -> its arguments, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text()
    text = re.sub(r"\\\n\s*", " ", text)
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            found.setdefault(word.upper(), []).append(rest.strip())
    return found


def image_env(instructions: dict[str, list[str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for line in instructions["ENV"]:
        for name, value in re.findall(r"(\w+)=(\S*)", line):
            env[name] = "" if value.startswith("${") else value
    return env


def test_the_workflow_tests_the_images_python_and_django() -> None:
    """The image's Python (the Dockerfile's FROM) is one of the Pythons the workflow's test job
    runs the suite on, so the Python/Django pair the image installs from the lock is tested
    (3.11 installs Django 5.2, 3.12 and later Django 6.1)."""
    (base,) = dockerfile()["FROM"]
    found = re.fullmatch(r"python:(\d+\.\d+)-slim", base)
    assert found, base
    workflow = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    test_job = workflow.partition("\n  test:\n")[2].partition("\n  build:\n")[0]
    assert "    container: python:${{ matrix.python }}-trixie\n" in test_job
    matrix = re.search(r"^        python: \[(.*)\]$", test_job, re.MULTILINE)
    assert matrix, test_job
    pythons = json.loads(f"[{matrix.group(1)}]")
    assert found.group(1) in pythons
    assert "3.11" in pythons  # and the Django 5.2 pair


def test_dockerignore_keeps_local_state_and_secrets_out() -> None:
    patterns = dockerignore_patterns()
    for path in NEVER_IN_IMAGE:
        assert ignored(path, patterns), path
    for path in ["manage.py", "config/settings.py", "requirements.lock", "pyproject.toml"]:
        assert not ignored(path, patterns), path


@pytest.mark.timeout(180)
@pytest.mark.parametrize("server", ["gunicorn", "granian"])
def test_the_image_steps_build_serve_pass_the_healthcheck_and_stop(
    tmp_path: Path, server: str
) -> None:
    app = tmp_path / "app"
    build_context(app)
    assert not (app / ".env").exists() and not (app / "tests").exists()
    instructions = dockerfile()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "TELEGRAM_", "PROMETHEUS_"))
        and k not in ("DATABASE_URL", "REDIS_URL", "PORT", "HOST", "ENV_FILE")
    }
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    env.update(image_env(instructions))
    (app / "var" / "metrics").mkdir(parents=True, exist_ok=True)
    env["PROMETHEUS_MULTIPROC_DIR"] = str(app / "var" / "metrics")  # /app/var/metrics there
    # RUN: the collectstatic step, exactly as written (the user is created only in the image).
    run_step = next(step for step in instructions["RUN"] if "collectstatic" in step)
    collect = run_step.split("&&")[0].strip()
    subprocess.run(["sh", "-c", collect], cwd=app, env=env, check=True, timeout=120)
    assert (app / "var" / "static" / "staticfiles.json").exists()
    # What compose's migrate service does, then the CMD with a run-time configuration.
    port = free_port()
    env.update(
        {
            "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
            "DJANGO_SECRET_KEY": "r" * 50,
            "PORT": str(port),
            "HOST": "127.0.0.1",
            "WEB_CONCURRENCY": "1",
            "WEB_SERVER": server,
            # As in production: the public name only (a probe with Host 127.0.0.1 is a 400).
            "DJANGO_ALLOWED_HOSTS": "bot.example.org",
        }
    )
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=app,
        env=env,
        check=True,
        timeout=120,
    )
    command = json.loads(instructions["CMD"][-1])
    assert "migrate" not in " ".join(command)  # migrations are a deploy step, not a web start
    log = (tmp_path / "web.log").open("w")
    web = subprocess.Popen(
        command, cwd=app, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        healthcheck = json.loads(instructions["HEALTHCHECK"][-1].partition("CMD ")[2])
        deadline = time.monotonic() + 60
        while True:
            result = subprocess.run(healthcheck, cwd=app, env=env, capture_output=True, timeout=30)
            if result.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert result.returncode == 0, result.stderr
        page = urllib.request.Request(
            f"http://127.0.0.1:{port}/admin/login/", headers={"Host": "bot.example.org"}
        )
        with urllib.request.urlopen(page, timeout=10):  # noqa: S310 - a fixed http URL
            pass
        # docker stop: SIGTERM to PID 1 (the web server, exec'd by config.web).
        web.send_signal(signal.SIGTERM)
        assert web.wait(timeout=10) == 0
    finally:
        kill_group(web)
    stopped = subprocess.run(healthcheck, cwd=app, env=env, capture_output=True, timeout=30)
    assert stopped.returncode != 0
    output = (tmp_path / "web.log").read_text()
    assert "DisallowedHost" not in output
    assert "/healthz" not in output
    if server == "gunicorn":  # the access log has the page, not the health probes
        assert '"GET /admin/login/ HTTP/1.1" 200' in output
    else:  # granian writes no access lines
        assert "/admin/login/" not in output
