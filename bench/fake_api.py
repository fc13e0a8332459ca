"""The fake Bot API of the suite (``tests/fakes``) on a loopback port for ``bench/run.py``,
without the per-call printing of ``python -m tests.fakes.telegram`` and with TCP_NODELAY.

    python bench/fake_api.py PORT [MESSAGES]

MESSAGES bot messages are first put in the owner's chat (OWNER, 1 ... MESSAGES), the messages
whose buttons the bench presses: each press edits a message of its own (Telegram refuses an
edit to the same content, "message is not modified").
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


OWNER = 1000


def main(port: int, messages: int) -> None:
    with telegram.FakeTelegramServer(port=port) as server:
        path = f"/bot{telegram.FAKE_TOKEN}/sendMessage"
        body = b'{"chat_id": %d, "text": "Admin panel"}' % OWNER
        for _ in range(messages):
            server.handle(path, "application/json", body)
        print(f"fake Bot API on {server.base_url}", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
