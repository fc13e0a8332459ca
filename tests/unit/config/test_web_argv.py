"""``manage.py serve``'s web process is shaped by the settings: processes and threads."""

from __future__ import annotations

from typing import Any

from telegram_bot.management.commands.serve import web_argv


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_processes_threads_and_address_come_from_the_settings(settings: Any) -> None:
    settings.WEB_CONCURRENCY, settings.WEB_THREADS = 3, 2
    settings.HOST, settings.PORT = "0.0.0.0", 8123  # noqa: S104 - an address in a test
    argv = web_argv()
    assert option(argv, "--workers") == "3"
    assert option(argv, "--threads") == "2"
    assert option(argv, "--bind") == "0.0.0.0:8123"
    assert option(argv, "--worker-class") == "gthread"
