"""JSON endpoints of the stats app under /api/v1/stats/ (added with the dashboard)."""

from __future__ import annotations

from ninja import Router

router = Router(tags=["stats"])
