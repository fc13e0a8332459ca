"""factory-boy factories: Telegram payloads (the updates the fake Bot API would deliver) and the
models tests make directly. ``tests/builders.py`` keeps the short call forms tests use."""

from __future__ import annotations

import itertools
import time
from typing import Any

import factory
from django.utils import timezone

# Counters of their own: factory-boy's sequences are shared by every factory of one model (all
# of these build dicts), and tests count on consecutive update ids.
_update_ids = itertools.count(10_000)
_message_ids = itertools.count(500)
_press_ids = itertools.count(1)

# Payload keys a factory leaves out when their value is None (Telegram omits absent fields).
OPTIONAL = frozenset(
    {"username", "first_name", "title", "text", "entities", "bio", "edit_date", "language_code"}
)


class Payload(factory.DictFactory):
    """A Telegram object as JSON: absent optional fields are left out, not null."""

    class Meta:
        abstract = True

    @classmethod
    def _build(cls, model_class: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {k: v for k, v in kwargs.items() if not (v is None and k in OPTIONAL)}

    _create = _build


class UserFactory(Payload):
    id = factory.Sequence(lambda n: 1_000_001 + n)
    is_bot = False
    first_name = "Test"
    language_code = "en"
    username = None


class ChatFactory(Payload):
    """A private chat for a positive id, a supergroup for a negative one, unless ``type``."""

    class Params:
        group_title = "Test group"

    id = 1001
    type = factory.LazyAttribute(lambda o: "private" if o.id > 0 else "supergroup")
    first_name = factory.LazyAttribute(lambda o: "Test" if o.type == "private" else None)
    title = factory.LazyAttribute(lambda o: None if o.type == "private" else o.group_title)


def _command_entities(text: str | None) -> list[dict[str, Any]] | None:
    if not text or not text.startswith("/"):
        return None
    return [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}]


class MessageFactory(Payload):
    """A message from ``user_id`` in ``chat_id``; a text starting with "/" is a command."""

    class Meta:
        rename = {"from_": "from"}

    class Params:
        chat_id = 1001
        user_id = 1001
        chat_type = None

    message_id = factory.LazyFunction(lambda: next(_message_ids))
    date = factory.LazyFunction(lambda: int(time.time()))
    chat = factory.LazyAttribute(
        lambda o: ChatFactory(id=o.chat_id, **({"type": o.chat_type} if o.chat_type else {}))
    )
    from_ = factory.LazyAttribute(lambda o: UserFactory(id=o.user_id))
    text = "hello"
    entities = factory.LazyAttribute(lambda o: _command_entities(o.text))


class UpdateFactory(Payload):
    update_id = factory.LazyFunction(lambda: next(_update_ids))


class MessageUpdateFactory(UpdateFactory):
    message = factory.SubFactory(MessageFactory)


class EditedMessageUpdateFactory(UpdateFactory):
    edited_message = factory.SubFactory(
        MessageFactory,
        text="edited",
        edit_date=factory.LazyAttribute(lambda o: o.date + 5),
    )


class CallbackQueryFactory(Payload):
    """A button press on the bot's message ``message_id`` in ``chat_id`` (the presser's
    private chat unless given)."""

    class Meta:
        rename = {"from_": "from"}

    class Params:
        user_id = 1001
        chat_id = factory.LazyAttribute(lambda o: o.user_id)
        message_id = 77

    id = factory.LazyFunction(lambda: f"cb{next(_press_ids)}")
    from_ = factory.LazyAttribute(lambda o: UserFactory(id=o.user_id))
    chat_instance = "-123456789"
    data = "noop"
    message = factory.LazyAttribute(
        lambda o: {
            "message_id": o.message_id,
            "date": int(time.time()),
            "chat": ChatFactory(id=o.chat_id),
            "text": "panel",
            "from": {"id": 123456789, "is_bot": True, "first_name": "Bot"},
        }
    )


class CallbackUpdateFactory(UpdateFactory):
    callback_query = factory.SubFactory(CallbackQueryFactory)


class JoinRequestFactory(Payload):
    class Meta:
        rename = {"from_": "from"}

    class Params:
        user_id = 2002
        chat_id = -100555

    chat = factory.LazyAttribute(lambda o: ChatFactory(id=o.chat_id, type="supergroup"))
    from_ = factory.LazyAttribute(lambda o: UserFactory(id=o.user_id))
    user_chat_id = factory.SelfAttribute("user_id")
    date = factory.LazyFunction(lambda: int(time.time()))
    bio = None


class JoinRequestUpdateFactory(UpdateFactory):
    chat_join_request = factory.SubFactory(JoinRequestFactory)


# -- models ---------------------------------------------------------------------------------


class SubscriberFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "broadcasts.Subscriber"
        django_get_or_create = ("user_id",)

    user_id = factory.Sequence(lambda n: 5_000_000 + n)
    first_name = "Test"
    language = "en"
    joined_at = factory.LazyFunction(timezone.now)


class BroadcastFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "broadcasts.Broadcast"

    text = "News!"
    preview_chat_id = 1000


class MemberPolicyFactory(factory.django.DjangoModelFactory):
    """A chat's member policy, validated as the admin form would (``full_clean``)."""

    class Meta:
        model = "community.MemberPolicy"

    chat_id = -1001234567890
    title = "Test group"
    raid_joins = 0

    @classmethod
    def _create(cls, model_class: Any, *args: Any, **kwargs: Any) -> Any:
        policy = model_class(*args, **kwargs)
        policy.full_clean()
        policy.save()
        return policy
