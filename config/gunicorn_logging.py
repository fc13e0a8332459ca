"""gunicorn's logger without access lines for what is counted elsewhere: the probes
(``/healthz``, ``/readyz``, ``/metrics``) and Telegram's accepted deliveries (``POST
/telegram/webhook`` answered 200). A health check every 30 s and a scrape every 15 s would
otherwise be most of an idle server's log, and a busy group's deliveries most of a busy one's
(a line each, hundreds a second, and about a sixteenth of a web worker's CPU per group message
measured with py-spy). The webhook's outcomes are counted in ``/metrics``
(``tgcp_webhook_request_seconds`` by status, ``tgcp_updates_total`` by outcome). A failing
probe and every webhook answer other than 200 (401 for a wrong secret, 400, 503) are still
logged. Used with ``--logger-class config.gunicorn_logging.QuietProbesLogger``.
"""

from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger

from telegram_bot.transport import WEBHOOK_PATH

QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


class QuietProbesLogger(Logger):
    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        path = environ.get("PATH_INFO")
        status = getattr(resp, "status_code", None) or 500
        if path in QUIET_PATHS and status < 400:
            return  # a failing probe is still logged
        if path == WEBHOOK_PATH and status == 200:
            return
        super().access(resp, req, environ, request_time)
