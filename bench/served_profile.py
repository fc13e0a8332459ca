"""Where a served web worker's CPU goes: the product as ``bench/run.py`` serves it (granian,
the default, 2 processes; or gunicorn gthread, with ``--server gunicorn``), loaded at
saturation with one kind of update, and py-spy sampling every web worker's threads while they
hold the GIL (so waits on Redis, PostgreSQL or the fake Bot API are not counted). Prints each
function's share of the samples, inclusive and its own (the innermost frame), and writes the
same to ``--out``.

    python bench/served_profile.py [--kind group|start|callback] [--seconds 10]
                                   [--server granian|gunicorn]
                                   [--out bench/profiles/served-group.txt]

py-spy is not a dependency of the product: put it on PATH (``pip install py-spy`` in any
environment) or name it in ``PY_SPY``. Needs ``DATABASE_URL`` (PostgreSQL) and ``REDIS_URL``
like ``bench/run.py``, and ptrace rights over the workers (root, or the same user with
``kernel.yama.ptrace_scope`` 0).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=("group", "start", "callback"), default="group")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--server", choices=("granian", "gunicorn"), default="granian")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    spy = os.environ.get("PY_SPY") or shutil.which("py-spy")
    if not spy:
        raise SystemExit("py-spy not found: put it on PATH or name it in PY_SPY")
    from bench import harness, serving
    from bench.load import saturate

    session = harness.Session(
        os.environ["DATABASE_URL"], os.environ["REDIS_URL"], quick=False, offline=True
    )
    try:
        start = serving.product if args.server == "granian" else serving.product_gunicorn
        server = start(session)
        ids = serving.Ids()
        url = server.url("/telegram/webhook")
        saturate(url, ids.load(args.kind), 3)  # imports, connections, caches
        web = serving.web_pids(server)
        workers = [pid for pid in web if _parent(pid) in web]  # not the main process
        with tempfile.TemporaryDirectory() as tmp:
            outputs = [Path(tmp) / f"{pid}.txt" for pid in workers]
            record = [spy, "record", "-d", str(args.seconds), "-r", "200", "-f", "raw"]
            spies = [
                subprocess.Popen(
                    [*record, "-p", str(pid), "-o", str(out), "--nonblocking", "--gil"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for pid, out in zip(workers, outputs, strict=True)
            ]
            cpu = harness.cpu_seconds(workers)
            outcome = saturate(url, ids.load(args.kind), args.seconds)
            used = harness.cpu_seconds(workers) - cpu
            for spy_process in spies:
                spy_process.wait()
            lines = [
                line for out in outputs if out.exists() for line in out.read_text().splitlines()
            ]
    finally:
        session.close()
    head = (
        f"{args.kind} updates at saturation through the webhook served by {args.server}, revision "
        f"{harness.git_revision() or 'unknown'}: {outcome.rate:.0f} req/s while sampled "
        f"({outcome.requests / max(used, 1e-3):.0f} per web worker CPU-s; py-spy slows them)"
    )
    text = head + "\n" + shares(lines) + "\n" + own_shares(lines)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[1])


def _stacks(lines: list[str]) -> list[tuple[list[str], int]]:
    """py-spy's raw (collapsed) samples: each stack's frames without line numbers, and its
    count."""
    stacks = []
    for line in lines:
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            frames = [re.sub(r":\d+\)", ")", frame) for frame in stack.split(";")]
            stacks.append((frames, int(count)))
    return stacks


def shares(lines: list[str], top: int = 80) -> str:
    """Each function's inclusive share of py-spy's raw (collapsed) samples."""
    inclusive: Counter[str] = Counter()
    stacks = _stacks(lines)
    total = sum(count for _, count in stacks)
    for frames, count in stacks:
        for frame in set(frames):
            inclusive[frame] += count
    rows = [f"{100 * n / total:5.1f}%  {frame}" for frame, n in inclusive.most_common(top)]
    return f"samples: {total} (while holding the GIL)\n" + "\n".join(rows) + "\n"


def own_shares(lines: list[str], top: int = 60) -> str:
    """Each function's own share (the sample's innermost frame): where a flat profile's time
    is spent, which the inclusive shares spread over every caller."""
    own: Counter[str] = Counter()
    stacks = _stacks(lines)
    total = sum(count for _, count in stacks)
    for frames, count in stacks:
        own[frames[-1]] += count
    rows = [f"{100 * n / total:5.1f}%  {frame}" for frame, n in own.most_common(top)]
    return "own time (the innermost frame):\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    main()
