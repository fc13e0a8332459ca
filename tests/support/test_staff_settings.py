"""The staff group's settings are validated at start, with a short clear error."""

from __future__ import annotations

import pytest

from config.env import ConfigError
from tests.unit.config.test_settings import read


def test_the_staff_group_is_a_supergroup_id_and_allowed() -> None:
    assert read({}).SUPPORT_STAFF_CHAT_ID is None
    assert read({"SUPPORT_STAFF_CHAT_ID": "-1001234567890"}).SUPPORT_STAFF_CHAT_ID == (
        -1001234567890
    )
    for bad in ("12345", "-4567", "staff", "-1001234567890.5"):
        with pytest.raises(ConfigError, match="SUPPORT_STAFF_CHAT_ID"):
            read({"SUPPORT_STAFF_CHAT_ID": bad})
    with pytest.raises(ConfigError, match="must be one of ALLOWED_CHAT_IDS"):
        read({"SUPPORT_STAFF_CHAT_ID": "-1001234567890", "ALLOWED_CHAT_IDS": "-1009999999999"})


def test_the_note_prefix_and_reminder_delay_are_checked() -> None:
    assert read({}).SUPPORT_STAFF_NOTE_PREFIX == "!"
    assert read({"SUPPORT_STAFF_NOTE_PREFIX": "#note"}).SUPPORT_STAFF_NOTE_PREFIX == "#note"
    for bad in ("/n", "a b", "toolongprefix"):
        with pytest.raises(ConfigError, match="SUPPORT_STAFF_NOTE_PREFIX"):
            read({"SUPPORT_STAFF_NOTE_PREFIX": bad})
    for bad in ("0", "-5", "soon", "20000"):
        with pytest.raises(ConfigError, match="SUPPORT_REMIND_AFTER_MINUTES"):
            read({"SUPPORT_REMIND_AFTER_MINUTES": bad})
