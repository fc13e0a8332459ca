"""Anti-raid: more than N joins in T seconds turns a strict mode on for a while and alerts the
admins. The operator chooses per chat what it does (``MemberPolicy.raid_mode``):

- captcha for everyone: every new member gets the captcha (``members``);
- join requests only: new members must ask to join and an admin (or the chat's join-request
  policy) decides. Telegram's Bot API cannot switch a group to "approve new members"
  (``join_by_request`` is read-only in ``ChatFullInfo``), so the bot creates an invite link
  with ``creates_join_request`` that expires with the mode, removes (ban, then unban: they
  may come back) whoever joins another way, and posts the link in the chat (at most once a
  minute, the previous notice deleted). A ``community.raid_end`` job at the mode's end
  revokes the link and deletes the last notice.

Who joined by request is read from ``chat_member`` (``via_join_request``, or an invite link
that creates join requests). A service message does not say how someone joined: in this mode
it leaves the join to its ``chat_member`` twin, which Telegram sends since the bot is an
administrator (it could create the link). Without the link (the bot lacks the right to invite
users) the mode falls back to the captcha for everyone, and the alert says so.

The link is created once per mode: created, then stored by compare-and-set into the mode's
record; a join that lost that race revokes its own link. A crash between the two leaves a
link that Telegram expires with the mode.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from django.utils.translation import gettext as _

from community.member_state import MemberStore, Strict
from community.models import MemberPolicy
from telegram_bot.admins import banned_for_longer_than
from telegram_bot.bot import get_client
from telegram_bot.errors import TelegramApiError
from telegram_bot.jobs.services import call_or_retry_later, job_enqueue
from telegram_bot.notifications import notify_admins

if TYPE_CHECKING:
    from community.services.members import MemberEvent

log = logging.getLogger(__name__)

RAID_END_JOB = "community.raid_end"
RAID_REMOVE_JOB = "community.raid_remove"
REQUESTS = MemberPolicy.RaidMode.REQUESTS
NOTICE_EVERY_SECONDS = 60
LINK_NAME = "Anti-raid"
REMOVE_BAN_SECONDS = 60  # a removal's ban (Telegram rounds it up to 30 s), lifted at once


def join_counted(policy: MemberPolicy, event: MemberEvent, store: MemberStore) -> None:
    """Count a new join; the join that crosses the threshold turns the strict mode on (once)
    and alerts the admins."""
    if not policy.raid_joins:
        return
    # Counted at the join's own time (Telegram's date), so a backlog of updates delivered
    # late is counted when the joins happened, not when they arrived.
    joins = store.count_join(event.chat_id, event.date, policy.raid_window_seconds)
    if joins <= policy.raid_joins:
        return
    minutes = policy.raid_strict_minutes
    if not store.start_strict(event.chat_id, event.date, minutes, policy.raid_mode):
        return
    link = request_link(event.chat_id, store) if policy.raid_mode == REQUESTS else ""
    chat = event.chat_title or event.chat_id

    def alert() -> str:  # in each admin's language
        raid = _(
            "Anti-raid in %(chat)s (%(id)s): more than %(joins)s joins within %(window)s s."
        ) % {
            "chat": chat,
            "id": event.chat_id,
            "joins": policy.raid_joins,
            "window": policy.raid_window_seconds,
        }
        if policy.raid_mode != REQUESTS:
            then = _("Every new member must pass the captcha for the next %(minutes)s minutes.") % {
                "minutes": minutes
            }
        elif link:
            then = _(
                "Only join requests are accepted for the next %(minutes)s minutes: members who "
                "join another way are removed and pointed to %(link)s"
            ) % {"minutes": minutes, "link": link}
        else:
            then = _(
                "The bot could not create a join-request link (it needs the right to invite "
                "users), so every new member must pass the captcha for the next %(minutes)s "
                "minutes instead."
            ) % {"minutes": minutes}
        return f"{raid} {then}"

    notify_admins(alert, purpose="community.raid")


def requests_only(strict: Strict | None) -> bool:
    """The chat is in the "join requests only" mode and has its link."""
    return strict is not None and strict.mode == REQUESTS and bool(strict.link)


def join_in_requests_mode(event: MemberEvent, store: MemberStore) -> bool:
    """In the "join requests only" mode, remove a member who joined without a request;
    True when the join was dealt with here (removed, or left to its ``chat_member`` twin)."""
    strict = store.get_strict(event.chat_id)
    if strict is None or strict.mode != REQUESTS or event.via_join_request:
        return False
    link = request_link(event.chat_id, store)
    if not link:
        return False  # no link: the captcha for everyone instead
    if event.from_service:
        return True  # the chat_member update of this join says how they joined
    store.update_stay(  # before the ban: its leave update then finds it (no goodbye)
        event.chat_id,
        event.user.id,
        lambda stay: replace(stay, removed=True) if stay.inside and not stay.removed else None,
    )
    member_remove(event.chat_id, event.user.id)
    _notice(event.chat_id, link, strict.until, store)
    return True


def request_link(chat_id: int, store: MemberStore) -> str:
    """The mode's invite link that creates join requests, created on first need; "" when
    there is none (another mode, the mode ended, or Telegram refused it)."""
    strict = store.get_strict(chat_id)
    if strict is None or strict.mode != REQUESTS or strict.link_failed:
        return ""
    if strict.link:
        return strict.link
    try:
        created = get_client().create_chat_invite_link(
            chat_id=chat_id, name=LINK_NAME, creates_join_request=True, expire_date=strict.until
        )
    except TelegramApiError as exc:
        log.warning("anti-raid: no join-request link in %s: %s", chat_id, exc)
        if not exc.retryable:  # no right to invite users: captcha for everyone instead
            store.update_strict(chat_id, lambda s: None if s.link else replace(s, link_failed=True))
        return ""
    url = str(created.get("invite_link") or "")
    # The end job first: a link stored without it would outlive nothing (Telegram expires it
    # with the mode) but its notice would stay.
    job_enqueue(
        RAID_END_JOB,
        {"chat_id": chat_id, "link": url},
        run_at=datetime.fromtimestamp(strict.until, tz=UTC),
        dedupe_key=f"{RAID_END_JOB}:{chat_id}:{url}",
    )
    stored = store.update_strict(chat_id, lambda s: None if s.link else replace(s, link=url))
    if stored is not None:
        return url
    _revoke(chat_id, url)  # another join stored its link first, or the mode ended
    current = store.get_strict(chat_id)
    return current.link if current is not None else ""


def member_remove(chat_id: int, user_id: int, *, in_job: bool = False) -> None:
    """Ban for a minute, then unban: out of the chat, free to ask to join (should the unban
    fail, the ban ends on its own). Both calls are idempotent, so a re-delivered join repeats
    them harmlessly. A retryable failure goes to the ``community.raid_remove`` job (raised in
    it: the runner retries), which first asks Telegram where the member is: one banned
    meanwhile for longer than this (a moderator's /ban) stays banned, as the unban would lift
    that ban too."""
    client = get_client()

    def remove() -> None:
        if in_job and banned_for_longer_than(
            client.get_chat_member(chat_id=chat_id, user_id=user_id), 2 * REMOVE_BAN_SECONDS
        ):
            log.info("anti-raid: %s was banned from %s meanwhile: left banned", user_id, chat_id)
            return
        client.ban_chat_member(
            chat_id=chat_id, user_id=user_id, until_date=int(time.time()) + REMOVE_BAN_SECONDS
        )
        client.unban_chat_member(chat_id=chat_id, user_id=user_id, only_if_banned=True)

    call_or_retry_later(
        remove, RAID_REMOVE_JOB, {"chat_id": chat_id, "user_id": user_id}, in_job=in_job
    )


def raid_end(chat_id: int, link: str, store: MemberStore) -> None:
    """The mode's end: revoke its link and delete its last notice."""
    _revoke(chat_id, link, retry=True)
    notice = store.last_notice(chat_id, link)
    if notice is not None:
        _delete(chat_id, notice)


def _notice(chat_id: int, link: str, until: int, store: MemberStore) -> None:
    now = int(time.time())
    ttl_ms = (max(until - now, 0) + 3600) * 1000  # outlives the end job
    claimed, previous = store.claim_notice(chat_id, link, now, NOTICE_EVERY_SECONDS, ttl_ms)
    if not claimed:
        return
    end = datetime.fromtimestamp(until, tz=UTC).strftime("%H:%M")
    text = _(
        "Anti-raid: until %(end)s UTC new members join by request only. Ask to join here: %(link)s"
    ) % {"end": end, "link": link}
    try:
        sent = get_client().send_message(chat_id=chat_id, text=text)
    except TelegramApiError as exc:
        log.warning("anti-raid notice to %s not sent: %s", chat_id, exc)
        return
    store.notice_posted(chat_id, link, now, int(sent["message_id"]), ttl_ms)
    if previous is not None:
        _delete(chat_id, previous)


def _revoke(chat_id: int, link: str, *, retry: bool = False) -> None:
    try:
        get_client().revoke_chat_invite_link(chat_id=chat_id, invite_link=link)
    except TelegramApiError as exc:
        if retry and exc.retryable:
            raise  # in the end job: the runner retries
        log.info("anti-raid link of %s not revoked: %s", chat_id, exc)


def _delete(chat_id: int, message_id: int) -> None:
    try:
        get_client().delete_message(chat_id=chat_id, message_id=message_id)
    except TelegramApiError as exc:  # already deleted, too old
        log.info("anti-raid notice %s in %s not deleted: %s", message_id, chat_id, exc)
