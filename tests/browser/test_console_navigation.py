"""The console's sidebar (django-unfold's, fed by telegram_bot.ops.navigation) at a desktop and a
phone width, in English and in Russian: the operator's groups are there in order, a link of
each group opens its page (marked as the current one there), and at 390 px the sidebar opens
from the header's menu button without making the page scroll sideways."""

from __future__ import annotations

from typing import Any

import pytest

GROUPS = {
    "en": [
        "Today",
        "Community and members",
        "Moderation",
        "Support",
        "Posts",
        "Statistics",
        "Settings",
        "System",
    ],
    "ru": [
        "Сегодня",
        "Сообщество и участники",
        "Модерация",
        "Поддержка",
        "Посты",
        "Статистика",
        "Настройки",
        "Система",
    ],
}
SIZES = {"desktop": (1440, 900), "phone": (390, 844)}
MENU = "#header-inner span[x-on\\:click^='sidebarMobileOpen']"


def open_sidebar(page: Any, width: str) -> Any:
    sidebar = page.locator("#nav-sidebar-apps")
    if width == "phone":
        assert not sidebar.is_visible()  # folded away until asked for
        page.click(MENU)
    sidebar.wait_for(state="visible")
    return sidebar


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "ru"])
@pytest.mark.parametrize("width", list(SIZES))
def test_the_sidebar_groups_the_console_as_an_operator_works(
    admin_page: Any, live_server: Any, width: str, language: str
) -> None:
    page = admin_page
    page.set_extra_http_headers({"Accept-Language": language})
    page.set_viewport_size(dict(zip(("width", "height"), SIZES[width], strict=True)))
    page.goto(f"{live_server.url}/admin/")
    sidebar = open_sidebar(page, width)
    # A group's title is its heading's text before the folding group's chevron icon.
    titles = sidebar.locator("h2").evaluate_all(
        "headings => headings.map(h => h.childNodes[0].textContent.trim())"
    )
    # The operator's groups in order, System last; a feature's models no section names keep
    # their app's group before System (telegram_bot.ops.navigation).
    assert [title for title in titles if title in GROUPS[language]] == GROUPS[language]
    assert titles[-1] == GROUPS[language][-1]
    links = []
    for index in range(len(titles)):
        group = sidebar.locator("h2").nth(index).locator("xpath=..")
        if not group.locator("ol").is_visible():  # System folds: its title opens it
            group.locator("h2").click()
        first = group.locator("ol a").first
        first.wait_for(state="visible")
        links.append((" ".join(first.inner_text().split()), first.get_attribute("href")))
    assert len(links) == len(titles)
    assert links[0][1] == "/admin/"
    for title, href in links:
        response = page.goto(f"{live_server.url}{href}")
        assert response is not None and response.status == 200, (title, href)
        sidebar = open_sidebar(page, width)
        current = sidebar.locator("a.active")
        assert href in [current.nth(i).get_attribute("href") for i in range(current.count())]
        if width == "phone":
            wide = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert wide[0] <= wide[1], f"{href} is {wide[0]} px wide at {wide[1]} px"
