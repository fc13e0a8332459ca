import zoneinfo

import pytest
from django.core.exceptions import ValidationError

from telegram_bot.models import ChatPreference, chat_zone


@pytest.mark.django_db
def test_a_chat_without_a_preference_uses_the_time_zone_setting(settings):
    settings.TIME_ZONE = "Europe/Moscow"
    assert chat_zone(-100) == zoneinfo.ZoneInfo("Europe/Moscow")
    ChatPreference.objects.create(chat_id=-100, time_zone="America/New_York")
    assert chat_zone(-100) == zoneinfo.ZoneInfo("America/New_York")
    ChatPreference.objects.filter(chat_id=-100).update(time_zone="")
    assert chat_zone(-100) == zoneinfo.ZoneInfo("Europe/Moscow")


@pytest.mark.parametrize(
    ("field", "value"), [("time_zone", "Mars/Olympus"), ("time_zone", "utc+3"), ("language", "xx")]
)
def test_a_bad_zone_or_language_is_refused_with_a_clear_error(field, value):
    with pytest.raises(ValidationError) as error:
        ChatPreference(chat_id=1, **{field: value}).full_clean(validate_unique=False)
    assert value in str(error.value)
