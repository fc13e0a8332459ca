"""Product code uses its libraries through their documented public API only (#37 item 6).

The rules are in tests/library_guard.py. The first tests plant each kind of violation in a
small source and prove the checker reports it (so a broken checker fails here, not silently);
the last ones run it on the product.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from tests import library_guard
from tests.library_guard import Finding, check_product, check_source


def findings(source: str) -> list[Finding]:
    return check_source(textwrap.dedent(source), first_party_names={"telegram_bot"})


def violations(source: str) -> list[str]:
    return [f"{f.rule}: {f.code}" for f in findings(source) if f.allowed is None]


# --- the checker on planted sources -------------------------------------------------------------
@pytest.mark.parametrize(
    "source",
    [
        "from httpx._transports.default import HTTPTransport\n",
        "from django.db.models import _something\n",
        "import redis._parsers\n",
        "import redis._parsers as parsers\n",
        'MIDDLEWARE = ["django.contrib.sessions._private.Middleware"]\n',
    ],
)
def test_it_reports_a_private_import(source: str) -> None:
    assert [v.split(":")[0] for v in violations(source)] == ["private-import"]


def test_it_leaves_public_and_first_party_imports_alone() -> None:
    assert (
        violations(
            """
        from django.db import models
        from httpx import Client
        from telegram_bot.state import _internal_helper
        from ._local import _name
        from sys import _getframe
        MIDDLEWARE = ["django.contrib.sessions.middleware.SessionMiddleware"]
        """
        )
        == []
    )


def test_it_reports_a_private_attribute_of_a_library_object() -> None:
    assert violations(
        """
        import redis

        def send(connection: redis.Connection) -> None:
            connection._sock.sendall(b"PING")
        """
    ) == ["private-attribute: connection._sock"]


def test_it_reports_a_private_attribute_written_and_named_in_getattr() -> None:
    assert violations(
        """
        def view(response, photo):
            response._has_been_logged = True
            return getattr(photo, "_committed", False)
        """
    ) == [
        "private-attribute: response._has_been_logged",
        "private-attribute: getattr(photo, '_committed', False)",
    ]


def test_it_leaves_self_first_party_stdlib_and_documented_names_alone() -> None:
    assert (
        violations(
            """
        import os
        from telegram_bot import state

        class Store:
            def __init__(self):
                self._pool = None

            def pool(self):
                return self._pool

        def label(model, point):
            os._exit(0)
            state._reset()
            return model._meta.label, point._replace(x=1)
        """
        )
        == []
    )


def test_it_reports_a_private_attribute_a_library_base_class_defines() -> None:
    assert violations(
        """
        from django.contrib.sessions.backends.db import SessionStore

        class Store(SessionStore):
            def size(self):
                return len(self._session_cache)
        """
    ) == [
        "subclass: class Store",
        "private-attribute: self._session_cache",
    ]


def test_it_reports_a_subclass_of_an_undocumented_library_class() -> None:
    assert violations(
        """
        from django_q.cluster import Cluster
        from django.contrib.sessions import middleware

        class BoundedCluster(Cluster):
            pass

        class Sessions(middleware.SessionMiddleware):
            pass
        """
    ) == ["subclass: class BoundedCluster", "subclass: class Sessions"]


def test_it_reports_a_private_hook_a_subclass_overrides() -> None:
    assert violations(
        """
        from django import forms

        class Field(forms.CharField):
            def _clean_bound_field(self, bf):
                return None
        """
    ) == ["private-attribute: class Field"]


def test_it_accepts_documented_bases_and_exceptions() -> None:
    assert (
        violations(
            """
        from django import forms
        from django.apps import AppConfig
        from django.contrib import admin
        from django.core.exceptions import ValidationError
        from django.db import models
        from axes.apps import AppConfig as AxesAppConfig
        from pydantic import BaseModel

        class Row(models.Model):
            pass

        class RowAdmin(admin.ModelAdmin):
            list_display = ["id"]

        class Name(forms.CharField):
            pass

        class Axes(AxesAppConfig):
            verbose_name = "Login attempts"

        class Config(AppConfig):
            name = "x"

        class Update(BaseModel):
            update_id: int

        class NotFoundError(ValidationError):
            pass
        """
        )
        == []
    )


def test_a_comment_names_an_exception_and_the_finding_carries_it() -> None:
    (finding,) = findings(
        """
        def close(connection):
            connection._sock.close()  # library-guard: documented in the 9.9 changelog
        """
    )
    assert finding.allowed == "documented in the 9.9 changelog"


def test_a_class_from_a_first_party_base_is_checked_through_it() -> None:
    # A first-party base with a library base: self._x of the library is still found.
    assert violations(
        """
        from django.contrib.admin import ModelAdmin

        class Audited(ModelAdmin):
            def _audit(self):
                pass

        class Rows(Audited):
            def get_urls(self):
                self._audit()
                return self._registry
        """
    ) == ["private-attribute: self._registry"]


# --- the product --------------------------------------------------------------------------------
def test_product_code_uses_libraries_through_their_public_api() -> None:
    found = check_product()
    allowed = [f for f in found if f.allowed is not None]
    print(f"\nlibrary guard: {len(allowed)} exception(s) (the goal is none)")
    for finding in allowed:
        print(f"  {finding}")
    violations = [str(f) for f in found if f.allowed is None]
    assert violations == [], "\n".join(violations)


def test_every_exception_kept_elsewhere_still_matches_a_finding() -> None:
    used = {(f.path, f.code) for f in check_product() if f.allowed is not None}
    stale = sorted(set(library_guard.ALLOWED_ELSEWHERE) - used)
    assert stale == [], f"remove these from ALLOWED_ELSEWHERE: {stale}"


def test_the_product_scan_covers_every_app_and_no_tests() -> None:
    sources = library_guard.product_sources()
    tops = {name.split(".")[0] for name in sources}
    assert {"config", "telegram_bot", "stats", "community", "moderation", "support", "content"} <= (
        tops
    )
    assert "manage" in tops
    assert not tops & {"tests", "bench"}


def test_a_planted_violation_in_an_app_fails_the_product_scan(tmp_path: Any) -> None:
    """The whole path: discovery of the apps (an ``apps.py`` makes one), tests/ and bench/
    left out, the finding reported with its file and line."""
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "apps.py").write_text("from django.apps import AppConfig\n")
    (tmp_path / "shop" / "views.py").write_text(
        "import httpx\n\n\ndef fetch(client: httpx.Client):\n    return client._transport\n"
    )
    for skipped in ("tests", "bench"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "__init__.py").write_text("from httpx._models import Request\n")
    (finding,) = check_product(tmp_path)
    assert (finding.path, finding.line, finding.rule, finding.code) == (
        "shop/views.py",
        5,
        "private-attribute",
        "client._transport",
    )
    assert finding.allowed is None
