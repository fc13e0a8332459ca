"""A page or an API router cannot be added without naming its permission: the start fails."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from ninja import Router

from config.api import build_api
from telegram_bot.ops.admin_site import register_view, registered_views


def page(request: Any) -> HttpResponse:
    return HttpResponse("page")


@pytest.mark.parametrize("permissions", [(), ("view_everything",), ("", "stats.x")])
def test_an_operations_page_needs_a_permission(permissions: tuple[str, ...]) -> None:
    with pytest.raises(ImproperlyConfigured, match="permissions"):
        register_view("x/", page, name="x-page", title="X", permissions=permissions)
    assert "x-page" not in {view.name for view in registered_views()}


@pytest.mark.parametrize("permission", [None, "", "nodot", 7])
def test_an_api_router_needs_a_permission(
    monkeypatch: pytest.MonkeyPatch, settings: Any, permission: Any
) -> None:
    package = types.ModuleType("tgcp_probe")
    module = types.ModuleType("tgcp_probe.api")
    module.router = Router()  # type: ignore[attr-defined]
    if permission is not None:
        module.PERMISSION = permission  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tgcp_probe", package)
    monkeypatch.setitem(sys.modules, "tgcp_probe.api", module)
    monkeypatch.setattr("config.api.api_modules", lambda: [("tgcp_probe", module)])
    with pytest.raises(ImproperlyConfigured, match=r"tgcp_probe\.api must name its PERMISSION"):
        build_api()
