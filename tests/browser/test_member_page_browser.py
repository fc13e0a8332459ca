"""The member page in a real browser, at a desktop width and a phone width, in English and in
Russian: opened from the dashboard's top members, its chart drawn, every section shown, no
horizontal scrolling at 390 px, no script error; a warning given from it lands in its audit
section with the operator as the actor."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_screenshots import CHAT, seed, watch_errors

SIZES = {"desktop": (1440, 900), "phone": (390, 844)}
HEADINGS = {
    "en": ("Messages", "Warnings and moderation", "Tickets", "Joins and leaves"),
    "ru": ("Сообщения", "Предупреждения и модерация", "Обращения", "Вступления и выходы"),
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "ru"])
@pytest.mark.parametrize("size", list(SIZES))
def test_the_member_page_from_the_dashboard_fits_and_acts(
    admin_page: Any, live_server: Any, size: str, language: str
) -> None:
    paths = seed()
    page = admin_page
    page.set_extra_http_headers({"Accept-Language": language})
    page.set_viewport_size(dict(zip(("width", "height"), SIZES[size], strict=True)))
    errors = watch_errors(page)
    page.goto(f"{live_server.url}{paths['dashboard']}")
    link = page.locator("#top-members a.member-link").first
    link.wait_for()
    name = link.inner_text()
    link.click()
    page.wait_for_selector("#member-page")
    assert f"/admin/stats/member/{CHAT}/" in page.url
    assert name in page.inner_text("#member-name")
    page.wait_for_function("window.memberChart && window.memberChart.data.labels.length > 0")
    text = page.inner_text("#member-page")
    for heading in HEADINGS[language]:
        assert heading in text, heading
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the member page is {width[0]} px wide at {width[1]} px"

    page.fill("#member-action-reason", "off-topic links")
    page.click("#member-actions button[value=warn]")
    page.wait_for_selector(".messagelist")
    audit = page.inner_text("#member-audit")
    assert "operator" in audit and "off-topic links" in audit
    assert "off-topic links" in page.inner_text("#member-warnings")
    assert errors == [], errors
