"""The per-chat policy: its validation, answer matching, the welcome text, the admin page."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from community.models import ChatPolicy, normalise_answer, render_welcome
from community.selectors import policy_for_chat

pytestmark = pytest.mark.django_db


def errors_of(**fields: Any) -> dict[str, list[str]]:
    policy = ChatPolicy(**{"chat_id": -100555, **fields})
    try:
        policy.full_clean()
    except ValidationError as exc:
        return exc.message_dict
    return {}


def test_it_validates_the_policy() -> None:
    assert errors_of() == {}
    assert "chat_id" in errors_of(chat_id=5)
    question = errors_of(mode=ChatPolicy.Mode.QUESTION, question=" ", answers="\n \n")
    assert set(question) == {"question", "answers"}
    assert "timeout_seconds" in errors_of(timeout_seconds=10)
    assert "timeout_seconds" in errors_of(timeout_seconds=301)
    assert errors_of(timeout_seconds=300) == {}
    assert "welcome_text" in errors_of(welcome_enabled=True, welcome_text="  ")
    assert "welcome_text" in errors_of(welcome_text="Hi {nmae}")
    assert "welcome_text" in errors_of(welcome_text="{name.__class__}")
    assert "welcome_text" in errors_of(welcome_text="x" * 4000 + "{name}")
    assert errors_of(welcome_enabled=True, welcome_text="Hi {name}, read {{rules}} {") == {
        "welcome_text": ["Unknown placeholder {rules}: only {name} is supported."]
    }
    assert errors_of(welcome_enabled=True, welcome_text="Hi {name} :-}") == {}


def test_it_matches_answers_ignoring_case_spacing_and_final_punctuation() -> None:
    policy = ChatPolicy(answers="Four\n  the  Answer \n\n")
    for given in ("four", " FOUR. ", "the answer!", '"The   answer"'):
        assert policy.accepts(given), given
    for given in ("", "   ", "fourty", "answer"):
        assert not policy.accepts(given), given
    assert normalise_answer("  Ça  VA ?") == "ça va"


def test_it_renders_the_welcome_without_interpreting_the_name() -> None:
    assert render_welcome("Hi {name}!", name="{name} <b>") == "Hi {name} <b>!"
    policy = ChatPolicy(welcome_enabled=False, welcome_text="Hi {name}")
    assert policy.welcome_for("Ann") is None


def test_a_chat_without_a_policy_is_manual_without_welcome() -> None:
    policy = policy_for_chat(-1)
    assert policy.pk is None and policy.mode == ChatPolicy.Mode.MANUAL
    assert policy.welcome_for("Ann") is None


def test_operators_configure_the_policy_in_the_admin_site(admin_client: Client) -> None:
    url = "/admin/community/chatpolicy/add/"
    form = {
        "chat_id": "-100555",
        "title": "Main group",
        "mode": "question",
        "question": "",
        "answers": "",
        "timeout_seconds": "2m",
        "on_timeout": "decline",
        "on_wrong_answer": "admins",
        "welcome_text": "Hi {who}",
    }
    page = admin_client.post(url, form).content.decode()
    assert "A question is required" in page
    assert "At least one accepted answer is required." in page
    assert "Unknown placeholder {who}" in page
    assert not ChatPolicy.objects.exists()

    form.update(question="Two plus two?", answers="four", welcome_text="Hi {name}")
    form["welcome_enabled"] = "on"
    response = admin_client.post(url, form)
    assert response.status_code == 302
    policy = ChatPolicy.objects.get(chat_id=-100555)
    assert policy.accepts("Four") and policy.welcome_for("Ann") == "Hi Ann"
    listing = admin_client.get("/admin/community/chatpolicy/").content.decode()
    assert "Main group" in listing
