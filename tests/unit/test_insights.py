from telegram_bot import insights


def test_a_provider_is_found_by_name_and_withdrawn():
    def active(chat_id, user_ids, since, until):
        return {user_ids[0]}

    insights.offer("test.active", active)
    try:
        assert insights.provider("test.active")(1, [7, 8], None, None) == {7}
    finally:
        insights.withdraw("test.active")
    assert insights.provider("test.active") is None


def test_an_unknown_name_is_none():
    assert insights.provider("nobody.offers.this") is None
