"""The fake Bot API's forum topics: createForumTopic, editForumTopic, closeForumTopic,
reopenForumTopic, deleteForumTopic, and ``message_thread_id`` on every send.

A forum is a supergroup described with ``is_forum=True`` (``FakeTelegram.set_chat(id,
"supergroup", is_forum=True)``). Telegram's rules, as the fake applies them:

- createForumTopic: only in a forum ("the chat is not a forum"); the bot needs
  ``can_manage_topics`` once the chat's members are described (an undescribed chat has the bot
  as an administrator with every right); a name of 1-128 characters. The topic's id is the id
  of its creation message in the chat, as in Telegram.
- editForumTopic / closeForumTopic / reopenForumTopic / deleteForumTopic: an unknown (or
  deleted) topic is "message thread not found"; a change that changes nothing is
  "TOPIC_NOT_MODIFIED".
- A send with ``message_thread_id`` (sendMessage, copyMessage, sendPhoto...) into a chat that
  is no forum (any more) or a topic that does not exist is "message thread not found"; into a
  closed topic, "TOPIC_CLOSED" unless the bot may manage topics.

Tests drive the faults with ``delete_topic`` (a topic deleted by hand), ``set_forum`` (forum
mode switched off) and ``set_chat_member`` (the bot's rights). Mixed into ``Results``
(tests/fakes/telegram_results.py), under ``FakeTelegram``'s lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.fakes.botapi_spec import BotApiSpec, RequestError

Json = dict[str, Any]

NOT_A_FORUM = "Bad Request: the chat is not a forum"
NO_TOPIC_RIGHTS = "Bad Request: not enough rights to create a topic"
THREAD_NOT_FOUND = "Bad Request: message thread not found"
NOT_MODIFIED = "Bad Request: TOPIC_NOT_MODIFIED"
TOPIC_CLOSED = "Bad Request: TOPIC_CLOSED"
NAME_INVALID = "Bad Request: TOPIC_NAME_INVALID"
NAME_LIMIT = 128
DEFAULT_COLOR = 0x6FB9F0


class ForumResults:
    """The forum methods of ``Results``; it provides ``spec``, ``chat``, ``member`` and the
    message counters."""

    spec: BotApiSpec
    chat: Callable[[int | str], Json]
    chats: dict[int, Json]
    described: set[int]
    member: Callable[..., Json]
    _admin_may: Callable[[Json, Json, str], bool]
    _last_message_id: dict[int, int]

    def _init_forum(self) -> None:
        # chat id -> topic id -> {"name", "icon_color", "closed"}
        self.topics: dict[int, dict[int, Json]] = {}

    # -- control ----------------------------------------------------------------------------

    def add_topic(self, chat_id: int, topic_id: int, name: str = "Topic") -> None:
        """A topic that exists already (made by hand in the Telegram app)."""
        self.topics.setdefault(chat_id, {})[topic_id] = {
            "name": name,
            "icon_color": DEFAULT_COLOR,
            "closed": False,
        }

    def delete_topic(self, chat_id: int, topic_id: int) -> None:
        """A topic deleted by hand in the Telegram app."""
        self.topics.get(chat_id, {}).pop(topic_id, None)

    def set_forum(self, chat_id: int, on: bool) -> None:
        """Switch a supergroup's forum mode (off: its topics are gone)."""
        chat = self.chats.setdefault(chat_id, self.chat(chat_id))
        chat["is_forum"] = on
        if not on:
            self.topics.pop(chat_id, None)

    # -- checks of every send -----------------------------------------------------------------

    def check_thread(self, params: Json, bot_id: int) -> None:
        """A send with ``message_thread_id``: the topic must exist (and be open, or the bot
        may manage topics)."""
        thread = params.get("message_thread_id")
        if thread is None or "chat_id" not in params:
            return
        chat = self.chat(params["chat_id"])
        topic = self.topics.get(chat["id"], {}).get(int(thread))
        if not chat.get("is_forum") or topic is None:
            raise RequestError(400, THREAD_NOT_FOUND)
        if topic["closed"] and not self._may_manage_topics(chat, bot_id):
            raise RequestError(400, TOPIC_CLOSED)

    # -- methods ----------------------------------------------------------------------------

    def _createForumTopic(self, params: Json, bot_id: int) -> Json:
        chat = self.chat(params["chat_id"])
        if chat["type"] != "supergroup" or not chat.get("is_forum"):
            raise RequestError(400, NOT_A_FORUM)
        if not self._may_manage_topics(chat, bot_id):
            raise RequestError(400, NO_TOPIC_RIGHTS)
        name = str(params["name"])
        if not 1 <= len(name) <= NAME_LIMIT:
            raise RequestError(400, NAME_INVALID)
        topic_id = self._last_message_id.get(chat["id"], 0) + 1
        self._last_message_id[chat["id"]] = topic_id
        color = int(params.get("icon_color", DEFAULT_COLOR))
        self.topics.setdefault(chat["id"], {})[topic_id] = {
            "name": name,
            "icon_color": color,
            "closed": False,
        }
        result: Json = {"message_thread_id": topic_id, "name": name, "icon_color": color}
        if "icon_custom_emoji_id" in params:
            result["icon_custom_emoji_id"] = params["icon_custom_emoji_id"]
        problem = self.spec.check(result, ["ForumTopic"])
        assert problem is None, f"the fake's ForumTopic does not match the spec: {problem}"
        return result

    def _editForumTopic(self, params: Json, bot_id: int) -> bool:
        _chat, topic = self._topic(params, bot_id)
        name = params.get("name")
        if name is not None and not 1 <= len(str(name)) <= NAME_LIMIT:
            raise RequestError(400, NAME_INVALID)
        changed = {"name": name} if name is not None and name != topic["name"] else {}
        if "icon_custom_emoji_id" in params:
            changed["icon_custom_emoji_id"] = params["icon_custom_emoji_id"]
        if not changed:
            raise RequestError(400, NOT_MODIFIED)
        topic.update(changed)
        return True

    def _closeForumTopic(self, params: Json, bot_id: int) -> bool:
        return self._set_closed(params, bot_id, closed=True)

    def _reopenForumTopic(self, params: Json, bot_id: int) -> bool:
        return self._set_closed(params, bot_id, closed=False)

    def _deleteForumTopic(self, params: Json, bot_id: int) -> bool:
        chat, _topic = self._topic(params, bot_id)
        self.delete_topic(chat["id"], int(params["message_thread_id"]))
        return True

    # -- helpers ----------------------------------------------------------------------------

    def _set_closed(self, params: Json, bot_id: int, *, closed: bool) -> bool:
        _chat, topic = self._topic(params, bot_id)
        if topic["closed"] == closed:
            raise RequestError(400, NOT_MODIFIED)
        topic["closed"] = closed
        return True

    def _topic(self, params: Json, bot_id: int) -> tuple[Json, Json]:
        chat = self.chat(params["chat_id"])
        if not chat.get("is_forum"):
            raise RequestError(400, NOT_A_FORUM)
        if not self._may_manage_topics(chat, bot_id):
            raise RequestError(400, NO_TOPIC_RIGHTS)
        topic = self.topics.get(chat["id"], {}).get(int(params["message_thread_id"]))
        if topic is None:
            raise RequestError(400, THREAD_NOT_FOUND)
        return chat, topic

    def _may_manage_topics(self, chat: Json, bot_id: int) -> bool:
        if chat["id"] not in self.described:
            return True  # an undescribed chat: the bot is an administrator with every right
        return self._admin_may(chat, self.member(chat["id"], bot_id, bot_id), "can_manage_topics")
