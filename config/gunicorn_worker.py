"""gunicorn's threaded worker, with each request handled by the thread the kernel wakes.

gunicorn's ``gthread`` worker waits for every kept-alive connection in its main thread, hands
each request to a thread pool, and takes the connection back through a pipe when the answer is
written: three thread wake-ups and a dozen Python calls around every request. Telegram delivers
on a few long-lived connections, so that round is paid on every update.

Here the worker's threads wait on one epoll set themselves. Each connection is in it one-shot
(``EPOLLONESHOT``): when a request arrives the kernel wakes one waiting thread, which reads it,
answers it and re-arms the connection. The listening sockets are in the same set, one-shot too:
the thread that accepts re-arms them while the worker has room (``--worker-connections``).

Why no request is served twice or lost, and no connection closed under a thread:
- a connection is in ``keepalived_conns`` exactly while it is armed; the thread an event wakes
  takes it out under the lock, so one thread owns it until it re-arms it;
- only that owner closes a connection. The main thread ends an idle one by shutting it down
  (while it is still armed, under the lock): the end of stream wakes a thread, which closes it.
  So a file number is never closed while an event for it may still be on its way to a thread,
  and a new connection given the same number never receives an old connection's event;
- a connection is idle when its keep-alive has passed (for a new one: gthread's five seconds
  at least) and no bytes wait on it: a request that came in time and waits for a thread, all
  of them busy, is answered;
- an error a thread did not expect gives the connection up (closed, counted out) before it is
  logged, and a ``SystemExit`` from the application stops the worker, as under gthread.

What stays gunicorn's: the request parsing, ``handle_request`` (the WSGI call, the access log,
``--max-requests``, the keep-alive decision), the arbiter's heartbeat and signals. The main
thread sends the heartbeat, ends connections idle for longer than ``--keep-alive``, and on a
stop closes the listeners and lets the kept-alive connections answer what they are sent for two
seconds more, with ``Connection: close``, as ``gthread`` does.

Used with ``--worker-class config.gunicorn_worker.EpollThreadWorker`` (``config/web.py``).
Linux only (epoll); HTTP/1.1, as the product configures gunicorn (no TLS: a proxy ends it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import socket
import threading
import time
from typing import Any

from gunicorn.workers import base
from gunicorn.workers.gthread import DEFAULT_WORKER_DATA_TIMEOUT as FIRST_REQUEST
from gunicorn.workers.gthread import STOP_KEEPALIVE_LINGER, TConn, ThreadWorker

_ARMED = select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLONESHOT
_LISTENING = select.EPOLLIN | select.EPOLLONESHOT


class EpollThreadWorker(ThreadWorker):
    """A ``gthread`` worker whose threads take requests off one epoll set."""

    @classmethod
    def check_config(cls, cfg: Any, log: Any) -> None:
        super().check_config(cfg, log)
        if cfg.is_ssl or cfg.http_protocols != ["h1"] or cfg.http2_cleartext != "off":
            raise RuntimeError(f"{cls.__name__} serves plain HTTP/1.1 only")

    def init_process(self) -> None:
        self._epoll = select.epoll()
        self._lock = threading.Lock()
        self._listeners: dict[int, socket.socket] = {}
        self._listening = False
        # The armed connections, by file number: waiting for their next request.
        self.keepalived_conns: dict[int, TConn] = {}
        base.Worker.init_process(self)  # which runs self.run()

    # -- signals (the main thread) -------------------------------------------------------
    def handle_exit(self, sig: int, frame: Any) -> None:
        self.alive = False  # the signal's byte on the wake-up pipe ends the main thread's wait

    def handle_quit(self, sig: int, frame: Any) -> None:
        base.Worker.handle_quit(self, sig, frame)

    # -- the main thread -----------------------------------------------------------------
    def run(self) -> None:
        for listener in self.sockets:
            listener.setblocking(False)
            self._listeners[listener.fileno()] = listener
        with self._lock:
            self._listen(True)
        for n in range(self.cfg.threads):
            threading.Thread(target=self._serve, name=f"gunicorn-{n}", daemon=True).start()
        while self.alive:
            self.notify()
            if not self.is_parent_alive():
                self.alive = False
                break
            self._end_idle(time.monotonic())
            self._wait(1.0)
        self._stop()

    def _wait(self, seconds: float) -> None:
        """Sleep until a signal (``set_wakeup_fd`` writes to gunicorn's pipe), a serving
        thread's call to stop (``_wake``), or ``seconds``. Not a ``threading.Event``: a signal
        handler that set one could block on the lock the interrupted ``wait()`` holds."""
        with contextlib.suppress(InterruptedError):
            if select.select([self.PIPE[0]], [], [], seconds)[0]:
                with contextlib.suppress(OSError):
                    os.read(self.PIPE[0], 4096)

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self.PIPE[1], b".")

    def _stop(self) -> None:
        """No new connections; the kept-alive ones answer for two seconds more (with
        ``Connection: close``), then those still open are ended."""
        with self._lock:
            self._listen(False)
            linger = time.monotonic() + STOP_KEEPALIVE_LINGER
            for conn in self.keepalived_conns.values():
                conn.timeout = min(conn.timeout, linger)
        deadline = time.monotonic() + self.cfg.graceful_timeout
        while self.nr_conns > 0 and time.monotonic() < deadline:
            self.notify()
            self._end_idle(time.monotonic())
            time.sleep(0.05)
        for listener in self.sockets:
            listener.close()

    def _end_idle(self, now: float) -> None:
        """Shut down the kept-alive connections whose time is up and that hold no request
        (one that came in time waits for a thread, all of them busy): the thread the end of
        stream wakes closes them."""
        with self._lock:
            for conn in self.keepalived_conns.values():
                if conn.timeout <= now and not _has_input(conn.sock):
                    with contextlib.suppress(OSError):
                        conn.sock.shutdown(socket.SHUT_RDWR)

    # -- the serving threads -------------------------------------------------------------
    def _serve(self) -> None:
        while True:
            try:
                events = self._epoll.poll(1.0, 1)  # one event: the others wake other threads
            except InterruptedError:
                continue
            for fileno, _ in events:
                try:
                    self._event(fileno)
                except Exception:  # a thread lost is capacity lost: log it and go on
                    self.log.exception("Error serving a connection")

    def _event(self, fileno: int) -> None:
        listener = self._listeners.get(fileno)
        if listener is not None:
            self._accept(listener)
            return
        with self._lock:
            conn = self.keepalived_conns.pop(fileno)
        conn.data_ready = True  # the set said so: handle() need not wait for it
        self._serve_connection(conn)

    def _accept(self, listener: socket.socket) -> None:
        sock: socket.socket | None = None
        refused: OSError | None = None
        try:
            sock, client = listener.accept()
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                refused = exc  # out of file descriptors, say
        if refused is not None:  # wait a little before the listener is armed again
            self.log.error("Cannot accept a connection: %s", refused)
            time.sleep(0.1)
        dropped = None
        with self._lock:
            try:
                if sock is not None:
                    self.nr_conns += 1
                    conn = TConn(self.cfg, sock, client, listener.getsockname())
                    # Its first request is on its way; as long as gthread gives it, at least.
                    conn.timeout = time.monotonic() + max(self.cfg.keepalive, FIRST_REQUEST)
                    if not self._arm(conn, new=True):
                        dropped = conn
            finally:
                if self._listening:
                    self._epoll.modify(listener, _LISTENING)
                    self._listen(self.nr_conns < self.worker_connections)
        if dropped is not None:
            self._drop(dropped)

    def _serve_connection(self, conn: TConn) -> None:
        try:
            keep = self.handle(conn)
            while keep and conn.parser.unreader.buf.getvalue():
                keep = self.handle(conn)  # the client sent its next request with the last one
        except Exception:  # logged by _serve; the connection is given up, not lost
            self._drop(conn)
            raise
        except BaseException:  # SystemExit from the application: gthread's worker stops too
            self.alive = False
            self._drop(conn)
            self._wake()
            raise
        with self._lock:
            if keep:
                conn.set_timeout()
                if not self.alive:
                    conn.timeout = min(conn.timeout, time.monotonic() + STOP_KEEPALIVE_LINGER)
                if self._arm(conn):
                    return
        self._drop(conn)

    def _drop(self, conn: TConn) -> None:
        with self._lock:
            self.nr_conns -= 1
            if self.alive:
                self._listen(self.nr_conns < self.worker_connections)
        conn.close()  # which takes it out of the set

    # -- the epoll set (under the lock) --------------------------------------------------
    def _arm(self, conn: TConn, new: bool = False) -> bool:
        """Wait for the connection's next request; False if the set refuses it (out of
        memory, or of ``fs.epoll.max_user_watches``): the caller closes it."""
        fileno = conn.sock.fileno()
        try:
            if new:
                self._epoll.register(fileno, _ARMED)
            else:
                self._epoll.modify(fileno, _ARMED)
        except OSError as exc:
            self.log.error("Cannot wait for a connection's next request: %s", exc)
            return False
        self.keepalived_conns[fileno] = conn
        return True

    def _listen(self, enabled: bool) -> None:
        if enabled == self._listening:
            return
        for fileno in self._listeners:
            if enabled:
                self._epoll.register(fileno, _LISTENING)
            else:
                with contextlib.suppress(OSError, ValueError):
                    self._epoll.unregister(fileno)
        self._listening = enabled


def _has_input(sock: socket.socket) -> bool:
    """Whether bytes wait on ``sock`` (not the end of the stream)."""
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except OSError:  # nothing yet (EAGAIN), or closed
        return False
