"""A fake spam-check service in the shape of CAS's public API (``GET /check?user_id=N`` ->
``{"ok": true, "result": {...}}`` for a listed account, ``{"ok": false, ...}`` otherwise),
on a local port, for the spam-list tests. It counts the questions it is asked; an answer can
be scripted (a status, a raw body, a delay)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Script:
    status: int = 200
    body: bytes | None = None  # None: the CAS answer for the user
    delay: float = 0.0


@dataclass
class FakeSpamService:
    listed: set[int] = field(default_factory=set)
    script: Script = field(default_factory=Script)
    asked: list[int] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None
    released: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/check"

    def start(self) -> FakeSpamService:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = parse_qs(urlsplit(self.path).query)
                user_id = int(query.get("user_id", ["0"])[0] or 0)
                service.asked.append(user_id)
                script = service.script
                if script.delay:
                    service.released.wait(script.delay)
                body = script.body
                if body is None:
                    body = json.dumps(service.answer(user_id)).encode()
                try:
                    self.send_response(script.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up (its time budget)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def answer(self, user_id: int) -> dict[str, Any]:
        if user_id in self.listed:
            return {
                "ok": True,
                "result": {"offenses": 3, "messages": [], "time_added": "2026-01-01T00:00:00Z"},
            }
        return {"ok": False, "description": "Record not found."}

    def stop(self) -> None:
        self.released.set()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
