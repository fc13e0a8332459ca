"""The fake Bot API's chat members: who is owner, administrator (with which rights), member,
restricted or banned in each chat, and what the bot may do about it.

A chat a test never described (no ``set_chat_member`` for it) behaves as one where the bot is
an administrator with every right and everyone else is a plain member: tests of other features
that restrict or delete need no setup. Once a chat is described, Telegram's rules apply:

- restrictChatMember: supergroups only; the bot needs ``can_restrict_members``; an owner or an
  administrator cannot be restricted; ``until_date`` under 30 s or over 366 d means forever.
- banChatMember / unbanChatMember: the bot needs ``can_restrict_members`` (any administrator
  in a basic group); an owner or an administrator cannot be banned.
- createChatInviteLink / revokeChatInviteLink: groups and channels only; the bot needs
  ``can_invite_users``; ``member_limit`` cannot go with ``creates_join_request``; only a link
  the bot created can be revoked. The links are kept in ``invite_links`` (URL -> link).
- deleteMessage(s): a message older than 48 h cannot be deleted; another user's message needs
  ``can_delete_messages`` (any administrator in a basic group); a message deleted before is
  "not found" (deleteMessages skips it); deleteMessages takes 1-100 ids.

Mixed into ``Results`` (tests/fakes/telegram_results.py), under ``FakeTelegram``'s lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.fakes.botapi_spec import RequestError

Json = dict[str, Any]

NOT_ENOUGH_RIGHTS = "Bad Request: not enough rights to restrict/unrestrict chat member"
USER_IS_ADMIN = "Bad Request: user is an administrator of the chat"
CANT_REMOVE_OWNER = "Bad Request: can't remove chat owner"
CANT_RESTRICT_SELF = "Bad Request: can't restrict self"
SUPERGROUP_ONLY = "Bad Request: method is available only for supergroups"
PRIVATE_CHAT = "Bad Request: chat member status can't be changed in private chats"
USER_NOT_FOUND = "Bad Request: user not found"
CANT_DELETE = "Bad Request: message can't be deleted"
DELETE_NOT_FOUND = "Bad Request: message to delete not found"
NO_IDS = "Bad Request: message identifiers are not specified"
TOO_MANY_IDS = "Bad Request: too many message identifiers specified"
NO_INVITE_RIGHT = "Bad Request: not enough rights to manage chat invite link"
LIMIT_WITH_REQUEST = (
    "Bad Request: member limit can't be specified for links requiring administrator approval"
)
LINK_NOT_FOUND = "Bad Request: INVITE_HASH_EXPIRED"
DELETE_WINDOW_S = 48 * 3600
MIN_UNTIL_S, MAX_UNTIL_S = 30, 366 * 24 * 3600

ADMIN_RIGHTS = (
    "can_manage_chat",
    "can_delete_messages",
    "can_manage_video_chats",
    "can_restrict_members",
    "can_promote_members",
    "can_change_info",
    "can_invite_users",
    "can_post_stories",
    "can_edit_stories",
    "can_delete_stories",
)
OPTIONAL_ADMIN_RIGHTS = ("can_pin_messages", "can_manage_topics")
MEMBER_PERMISSIONS = (
    "can_send_messages",
    "can_send_audios",
    "can_send_documents",
    "can_send_photos",
    "can_send_videos",
    "can_send_video_notes",
    "can_send_voice_notes",
    "can_send_polls",
    "can_send_other_messages",
    "can_add_web_page_previews",
    "can_react_to_messages",
    "can_edit_tag",
    "can_change_info",
    "can_invite_users",
    "can_pin_messages",
    "can_manage_topics",
)


def user_json(user_id: int, first_name: str = "", *, is_bot: bool = False, **extra: Any) -> Json:
    return {"id": user_id, "is_bot": is_bot, "first_name": first_name or f"User {user_id}", **extra}


def member_json(user: Json, status: str, **rights: Any) -> Json:
    """A ChatMember of ``status`` (``creator``, ``administrator``, ``member``, ``restricted``,
    ``left``, ``kicked``) with every field the spec requires for it."""
    member: Json = {"status": status, "user": user}
    if status == "creator":
        member["is_anonymous"] = rights.pop("is_anonymous", False)
    elif status == "administrator":
        member["can_be_edited"] = rights.pop("can_be_edited", False)
        member["is_anonymous"] = rights.pop("is_anonymous", False)
        for name in ADMIN_RIGHTS:
            member[name] = bool(rights.pop(name, False))
        for name in OPTIONAL_ADMIN_RIGHTS:
            if name in rights:
                member[name] = bool(rights.pop(name))
    elif status == "restricted":
        member["is_member"] = rights.pop("is_member", True)
        for name in MEMBER_PERMISSIONS:
            member[name] = bool(rights.pop(name, False))
        member["until_date"] = int(rights.pop("until_date", 0))
    elif status == "kicked":
        member["until_date"] = int(rights.pop("until_date", 0))
    if rights:
        raise ValueError(f"fields {sorted(rights)} do not belong to a {status} member")
    return member


class ChatMemberResults:
    """The chat-member methods of ``Results``; it provides ``chat``, ``clock``, ``_messages``
    and ``_bot_user``."""

    clock: Callable[[], float]
    _messages: dict[tuple[int, int], Json]
    chat: Callable[[int | str], Json]
    _bot_user: Callable[[int], Json]

    def _init_members(self) -> None:
        self.members: dict[int, dict[int, Json]] = {}
        self.described: set[int] = set()  # chats a test described (Telegram's rules apply)
        self.deleted: set[tuple[int, int]] = set()
        # Messages from updates the tests sent, so that deleteMessage knows their date and
        # author: (chat_id, message_id) -> (date, user id).
        self.message_meta: dict[tuple[int, int], tuple[int, int | None]] = {}
        self.invite_links: dict[str, Json] = {}  # URL -> ChatInviteLink (with its chat id)

    # -- control --------------------------------------------------------------------------

    def describe_member(self, chat_id: int, user: Json, status: str, **rights: Any) -> None:
        self.described.add(chat_id)
        self.set_member(chat_id, user, status, **rights)

    def set_member(self, chat_id: int, user: Json, status: str, **rights: Any) -> None:
        self.members.setdefault(chat_id, {})[user["id"]] = member_json(user, status, **rights)

    def note_message(self, chat_id: int, message_id: int, date: int, user_id: int | None) -> None:
        self.message_meta[(chat_id, message_id)] = (date, user_id)

    def member(self, chat_id: int, user_id: int, bot_id: int | None = None) -> Json:
        known = self.members.get(chat_id, {})
        if user_id in known:
            return dict(known[user_id])
        if user_id == bot_id:
            bot = self._bot_user(bot_id)
            if chat_id not in self.described:
                return member_json(bot, "administrator", **dict.fromkeys(ADMIN_RIGHTS, True))
            return member_json(bot, "member")
        return member_json(user_json(user_id), "member")

    # -- methods --------------------------------------------------------------------------

    def _getChatAdministrators(self, params: Json, bot_id: int) -> list[Json]:
        chat_id = self._group_id(params)
        admins = [
            dict(member)
            for member in self.members.get(chat_id, {}).values()
            if member["status"] in ("creator", "administrator")
            and (
                not member["user"].get("is_bot")
                or member["user"]["id"] == bot_id
                or params.get("return_bots")
            )
        ]
        if chat_id not in self.described:
            admins.append(self.member(chat_id, bot_id, bot_id))
        return sorted(admins, key=lambda member: member["status"] != "creator")

    def _getChatMember(self, params: Json, bot_id: int) -> Json:
        chat_id = self.chat(params["chat_id"])["id"]
        return self.member(chat_id, params["user_id"], bot_id)

    def _restrictChatMember(self, params: Json, bot_id: int) -> bool:
        chat = self.chat(params["chat_id"])
        if chat["type"] == "private":
            raise RequestError(400, PRIVATE_CHAT)
        if chat["type"] != "supergroup":
            raise RequestError(400, SUPERGROUP_ONLY)
        target = self._changeable(chat, params["user_id"], bot_id)
        permissions = params["permissions"]
        if all(permissions.get(name, False) for name in MEMBER_PERMISSIONS[:11]):
            if target["status"] == "restricted":  # lifted: in the chat, or out of it again
                status = "left" if target.get("is_member") is False else "member"
                self.set_member(chat["id"], target["user"], status)
            return True
        until = self._until(params.get("until_date"))
        values = {name: bool(permissions.get(name, False)) for name in MEMBER_PERMISSIONS}
        self.set_member(chat["id"], target["user"], "restricted", until_date=until, **values)
        return True

    def _banChatMember(self, params: Json, bot_id: int) -> bool:
        chat = self.chat(params["chat_id"])
        if chat["type"] == "private":
            raise RequestError(400, PRIVATE_CHAT)
        target = self._changeable(chat, params["user_id"], bot_id)
        until = self._until(params.get("until_date"))
        self.set_member(chat["id"], target["user"], "kicked", until_date=until)
        return True

    def _unbanChatMember(self, params: Json, bot_id: int) -> bool:
        chat = self.chat(params["chat_id"])
        if chat["type"] == "private":
            raise RequestError(400, PRIVATE_CHAT)
        target = self._changeable(chat, params["user_id"], bot_id)
        present = target["status"] in ("member", "restricted")
        if target["status"] == "kicked" or (present and not params.get("only_if_banned")):
            self.set_member(chat["id"], target["user"], "left")
        return True

    def _createChatInviteLink(self, params: Json, bot_id: int) -> Json:
        chat = self._invite_chat(params, bot_id)
        if params.get("member_limit") and params.get("creates_join_request"):
            raise RequestError(400, LIMIT_WITH_REQUEST)
        url = f"https://t.me/+fake{len(self.invite_links) + 1:06d}"
        link: Json = {
            "invite_link": url,
            "creator": self._bot_user(bot_id),
            "creates_join_request": bool(params.get("creates_join_request")),
            "is_primary": False,
            "is_revoked": False,
        }
        for key in ("name", "expire_date", "member_limit"):
            if params.get(key) is not None:
                link[key] = params[key]
        self.invite_links[url] = {**link, "chat_id": chat["id"]}
        return link

    def _revokeChatInviteLink(self, params: Json, bot_id: int) -> Json:
        chat = self._invite_chat(params, bot_id)
        stored = self.invite_links.get(params["invite_link"])
        if stored is None or stored["chat_id"] != chat["id"]:
            raise RequestError(400, LINK_NOT_FOUND)
        stored["is_revoked"] = True
        return {key: value for key, value in stored.items() if key != "chat_id"}

    def _invite_chat(self, params: Json, bot_id: int) -> Json:
        chat = self.chat(params["chat_id"])
        if chat["type"] == "private":
            raise RequestError(400, "Bad Request: chat not found")
        bot = self.member(chat["id"], bot_id, bot_id)
        if not self._admin_may(chat, bot, "can_invite_users"):
            raise RequestError(400, NO_INVITE_RIGHT)
        return chat

    def _deleteMessage(self, params: Json, bot_id: int) -> bool:
        chat = self.chat(params["chat_id"])
        self._delete(chat, params["message_id"], bot_id)
        return True

    def _deleteMessages(self, params: Json, bot_id: int) -> bool:
        ids = params["message_ids"]
        if not ids:
            raise RequestError(400, NO_IDS)
        if len(ids) > 100:
            raise RequestError(400, TOO_MANY_IDS)
        chat = self.chat(params["chat_id"])
        deletable = []
        for message_id in ids:
            try:
                self._check_deletable(chat, message_id, bot_id)
            except RequestError as exc:
                if exc.description == DELETE_NOT_FOUND:
                    continue  # skipped, as Telegram does
                raise
            deletable.append(message_id)
        for message_id in deletable:
            self._forget(chat["id"], message_id)
        return True

    # -- rules ----------------------------------------------------------------------------

    def _group_id(self, params: Json) -> int:
        chat = self.chat(params["chat_id"])
        if chat["type"] == "private":
            raise RequestError(400, "Bad Request: there are no administrators in the private chat")
        return int(chat["id"])

    def _changeable(self, chat: Json, user_id: int, bot_id: int) -> Json:
        """The target member, if the bot may restrict or ban it."""
        if user_id == bot_id:
            raise RequestError(400, CANT_RESTRICT_SELF)
        bot = self.member(chat["id"], bot_id, bot_id)
        if not self._admin_may(chat, bot, "can_restrict_members"):
            raise RequestError(400, NOT_ENOUGH_RIGHTS)
        target = self.member(chat["id"], user_id, bot_id)
        if target["status"] == "creator":
            raise RequestError(400, CANT_REMOVE_OWNER)
        if target["status"] == "administrator":
            raise RequestError(400, USER_IS_ADMIN)
        return target

    def _delete(self, chat: Json, message_id: int, bot_id: int) -> None:
        self._check_deletable(chat, message_id, bot_id)
        self._forget(chat["id"], message_id)

    def _check_deletable(self, chat: Json, message_id: int, bot_id: int) -> None:
        key = (chat["id"], message_id)
        if key in self.deleted:
            raise RequestError(400, DELETE_NOT_FOUND)
        sent = self._messages.get(key)
        if sent is not None:
            date, author = sent["date"], sent.get("from", {}).get("id")
        else:
            date, author = self.message_meta.get(key, (int(self.clock()), None))
        if self.clock() - date > DELETE_WINDOW_S:
            raise RequestError(400, CANT_DELETE)
        if author == bot_id or chat["type"] == "private":
            return
        bot = self.member(chat["id"], bot_id, bot_id)
        if not self._admin_may(chat, bot, "can_delete_messages"):
            raise RequestError(400, CANT_DELETE)

    def _forget(self, chat_id: int, message_id: int) -> None:
        self._messages.pop((chat_id, message_id), None)
        self.deleted.add((chat_id, message_id))

    def _admin_may(self, chat: Json, member: Json, right: str) -> bool:
        if member["status"] == "creator":
            return True
        if member["status"] != "administrator":
            return False
        return chat["type"] == "group" or bool(member.get(right))

    def _until(self, until_date: int | None) -> int:
        """0 (forever) for no date, or a date under 30 s or over 366 d from now."""
        if not until_date:
            return 0
        delta = until_date - self.clock()
        return 0 if delta < MIN_UNTIL_S or delta > MAX_UNTIL_S else int(until_date)
