"""The fake Bot API of the suite (``tests/fakes``) on a loopback port for ``bench/run.py``,
without the per-call printing of ``python -m tests.fakes.telegram`` and with TCP_NODELAY.

    python bench/fake_api.py PORT
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes import telegram

# Headers and body are written separately: without TCP_NODELAY a keep-alive client waits
# for its delayed ACK (about 40 ms a call) before the body arrives.
telegram._Handler.disable_nagle_algorithm = True


def main(port: int) -> None:
    with telegram.FakeTelegramServer(port=port) as server:
        print(f"fake Bot API on {server.base_url}", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main(int(sys.argv[1]))
