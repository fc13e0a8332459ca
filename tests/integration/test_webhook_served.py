"""The webhook served by the real web process (``python -m config.web``, under each server it
offers) to a real HTTP client: what a refused body's sender sees.

A body over 1 MiB is refused from its declared length, before it is read. Left unread, the
server closed the connection on it, and a client still sending (or sending its next request on
the kept-alive connection) saw a reset instead of the 413: 6 to 18 of 40 tries here."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.ports import free_port
from tests.processes import kill_group, start_web, wait_until_healthy, web_env

SECRET = "served-webhook-secret-" + "x" * 20
OVERSIZED = b"{" + b" " * (1536 * 1024 - 2) + b"}"  # 1.5 MiB of valid JSON


@pytest.mark.timeout(180)
@pytest.mark.parametrize("server", ["gunicorn", "granian"])
def test_every_oversized_body_gets_its_413_on_a_kept_alive_connection(
    tmp_path: Path, server: str
) -> None:
    port = free_port()
    env = web_env(
        tmp_path,
        port,
        WEB_SERVER=server,
        WEB_CONCURRENCY="2",
        WEB_THREADS="2",
        TELEGRAM_WEBHOOK_SECRET=SECRET,
    )
    web = start_web(env)
    try:
        wait_until_healthy(port)
        headers = {"Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET}
        answers: list[int | str] = []
        # One client, one kept-alive connection at a time, as Telegram delivers.
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            for _ in range(40):
                try:
                    response = client.post("/telegram/webhook", content=OVERSIZED, headers=headers)
                except httpx.TransportError as exc:  # the reset the client saw
                    answers.append(type(exc).__name__)
                else:
                    answers.append(response.status_code)
            # A refusal of a smaller body (a wrong secret) is read too: the connection that
            # carried it serves the next request.
            wrong = {**headers, "X-Telegram-Bot-Api-Secret-Token": "wrong"}
            for _ in range(5):
                answers.append(
                    client.post(
                        "/telegram/webhook", content=OVERSIZED[:900_000], headers=wrong
                    ).status_code
                )
                answers.append(client.get("/healthz").status_code)
        assert answers == [413] * 40 + [401, 200] * 5
    finally:
        kill_group(web)
