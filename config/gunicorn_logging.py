"""gunicorn's logger without access lines for the probes (``/healthz``, ``/readyz``,
``/metrics``): a health check every 30 s and a scrape every 15 s would otherwise be most of an
idle server's log. Used with ``--logger-class config.gunicorn_logging.QuietProbesLogger``.
"""

from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger

QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


class QuietProbesLogger(Logger):
    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        if (
            environ.get("PATH_INFO") in QUIET_PATHS
            and (getattr(resp, "status_code", None) or 500) < 400
        ):
            return  # a failing probe is still logged
        super().access(resp, req, environ, request_time)
