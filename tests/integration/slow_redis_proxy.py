"""A TCP proxy to the test Redis that can hold back one answer (a slow Redis, seen from one
client): the command runs on the server at once, its answer arrives ``delay`` seconds later."""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class SlowProxy:
    def __init__(self, upstream: tuple[str, int], port: int = 0) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", port), reuse_port=False)
        self.port = self.listener.getsockname()[1]  # port 0: an ephemeral one
        self.trigger: bytes | None = None  # hold back the answer to a request holding this
        self.delay = 0.0
        self.held = 0
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def hold_answer_to(self, trigger: bytes, delay: float) -> None:
        self.trigger, self.delay = trigger, delay

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self._sockets += [client, server]
            pending = threading.Event()
            threading.Thread(target=self._up, args=(client, server, pending), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client, pending), daemon=True).start()

    def _up(self, client: socket.socket, server: socket.socket, pending: threading.Event) -> None:
        try:
            while data := client.recv(65536):
                if self.trigger is not None and self.trigger in data:
                    self.trigger = None
                    pending.set()
                server.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (client, server):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def _down(self, server: socket.socket, client: socket.socket, pending: threading.Event) -> None:
        try:
            while data := server.recv(65536):
                if pending.is_set():
                    pending.clear()
                    self.held += 1
                    time.sleep(self.delay)
                client.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):  # wakes the accept() of its thread
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()
