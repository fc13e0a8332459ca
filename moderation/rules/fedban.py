"""Shared ban lists (Rose's federations): the owner of some of the bot's groups puts them in
one list; a ban with a reason given in any of them (``/fban``) bans the member in all, an
``/unfban`` lifts it in all, and a member banned in the list who joins one of its chats is
removed at once.

Each change of a shared ban (``SharedBan.generation``) is carried out chat by chat by one
``rules.fban`` job per chat (deduplicated per change and chat), on the core retry policy: a chat
where Telegram refuses for a while is retried without holding up the others. A chat's part is
recorded once (``SharedBanApplied``, unique per change and chat, with its audit entry in the
same transaction), so a job run again after a crash changes nothing twice; a job of a change
that a later change superseded does nothing. Telegram's ban and unban are idempotent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F

from moderation.rules.models import BanList, BanListChat, SharedBan, SharedBanApplied
from telegram_bot.audit import BOT, Actor, Outcome, audit_record
from telegram_bot.client import TelegramClient
from telegram_bot.errors import TelegramApiError
from telegram_bot.jobs.services import call_or_retry_later, job_enqueue

log = logging.getLogger(__name__)

JOB = "rules.fban"
JOIN_JOB = "rules.fban_join"
CAUSE = "fban"
MAX_LISTS_PER_OWNER = 20


class BanListError(Exception):
    """A refused change, with its one-line answer."""


@dataclass(frozen=True)
class Change:
    """What a /fban or /unfban changed: the list, the ban, how many chats it goes to."""

    ban_list: BanList
    ban: SharedBan
    chats: int
    changed: bool  # False: it was so already (nothing queued)


def list_create(owner_id: int, name: str) -> BanList:
    if BanList.objects.filter(owner_id=owner_id).count() >= MAX_LISTS_PER_OWNER:
        raise BanListError(f"at most {MAX_LISTS_PER_OWNER} lists per owner")
    return BanList.objects.create(owner_id=owner_id, name=name[:64])


def list_of_chat(chat_id: int) -> BanList | None:
    row = BanListChat.objects.select_related("ban_list").filter(chat_id=chat_id).first()
    return row.ban_list if row is not None else None


def chat_join(ban_list: BanList, chat_id: int, title: str, by: int | None) -> bool:
    """Put the chat in the list; False when it is in a list already."""
    try:
        with transaction.atomic():
            BanListChat.objects.create(
                ban_list=ban_list, chat_id=chat_id, chat_title=title[:200], added_by=by
            )
    except IntegrityError:
        return False
    # The list's bans reach the new chat too.
    for ban in SharedBan.objects.filter(ban_list=ban_list, active=True):
        _queue(ban, chat_id)
    return True


def chat_leave(chat_id: int) -> BanList | None:
    row = BanListChat.objects.select_related("ban_list").filter(chat_id=chat_id).first()
    if row is None:
        return None
    row.delete()
    return row.ban_list


def change(
    ban_list: BanList,
    *,
    user_id: int,
    name: str,
    reason: str,
    active: bool,
    actor: Actor,
    update_id: int | None,
) -> Change:
    """Ban (``active``) or unban ``user_id`` in every chat of the list: one job per chat."""
    with transaction.atomic():
        ban, created = SharedBan.objects.select_for_update().get_or_create(
            ban_list=ban_list,
            user_id=user_id,
            defaults={"name": name[:200], "reason": reason[:200], "active": active},
        )
        if not created and ban.active == active and (not active or ban.reason == reason[:200]):
            return Change(ban_list, ban, 0, changed=False)
        if not created:
            SharedBan.objects.filter(pk=ban.pk).update(
                active=active,
                reason=reason[:200] if active else ban.reason,
                name=name[:200] or ban.name,
                generation=F("generation") + 1,
                changed_by=actor.telegram_id,
            )
            ban.refresh_from_db()
        chats = list(ban_list.chats.values_list("chat_id", flat=True))
        audit_record(
            action="rules.fban" if active else "rules.unfban",
            actor=actor,
            source="command",
            target_id=user_id,
            target_name=name,
            reason=reason,
            detail=f"list {ban_list.name} (#{ban_list.pk}), {len(chats)} chats",
            update_id=update_id,
        )
        for chat_id in chats:
            _queue(ban, chat_id)
    return Change(ban_list, ban, len(chats), changed=True)


def _queue(ban: SharedBan, chat_id: int) -> None:
    job_enqueue(
        JOB,
        {"ban": ban.pk, "chat_id": chat_id, "generation": ban.generation},
        dedupe_key=f"{JOB}:{ban.pk}:{ban.generation}:{chat_id}",
        kick=True,
    )


def apply_job(payload: dict[str, Any], client: TelegramClient) -> None:
    """``rules.fban``: one chat's part of one change (a retryable refusal raises: the runner
    retries it on the core policy)."""
    ban = SharedBan.objects.select_related("ban_list").filter(pk=int(payload["ban"])).first()
    chat_id, generation = int(payload["chat_id"]), int(payload["generation"])
    if ban is None or ban.generation != generation:
        return  # the ban was dropped, or changed again since: that change's jobs do it
    if SharedBanApplied.objects.filter(ban=ban, chat_id=chat_id, generation=generation).exists():
        return
    if not BanListChat.objects.filter(ban_list=ban.ban_list, chat_id=chat_id).exists():
        return  # the chat left the list meanwhile
    outcome, note = Outcome.DONE, ""
    try:
        if ban.active:
            client.ban_chat_member(chat_id=chat_id, user_id=ban.user_id)
        else:
            client.unban_chat_member(chat_id=chat_id, user_id=ban.user_id, only_if_banned=True)
    except TelegramApiError as exc:
        if exc.retryable:
            raise
        outcome, note = Outcome.FAILED, exc.description
        log.warning("shared ban %s in %s: %s", ban.pk, chat_id, exc)
    _applied(ban, chat_id, outcome, note)


def _applied(ban: SharedBan, chat_id: int, outcome: str, note: str) -> None:
    try:
        with transaction.atomic():
            SharedBanApplied.objects.create(
                ban=ban, chat_id=chat_id, generation=ban.generation, outcome=outcome
            )
            audit_record(
                action="ban" if ban.active else "unban",
                actor=BOT,
                source="auto",
                chat_id=chat_id,
                target_id=ban.user_id,
                target_name=ban.name,
                reason=ban.reason,
                outcome=outcome,
                detail=f"shared ban list {ban.ban_list.name}" + (f"; {note}" if note else ""),
                cause=CAUSE,
            )
    except IntegrityError:
        pass  # recorded by an earlier run of this job


def banned_joiner(chat_id: int, user_id: int) -> SharedBan | None:
    """The active shared ban of a member joining ``chat_id``, if its list bans them."""
    return (
        SharedBan.objects.select_related("ban_list")
        .filter(ban_list__chats__chat_id=chat_id, user_id=user_id, active=True)
        .first()
    )


def refuses(chat_id: int, user_id: int) -> bool:
    """The join refusal the community app asks (``telegram_bot.exemptions``)."""
    return banned_joiner(chat_id, user_id) is not None


def remove_joiner(
    client: TelegramClient, ban: SharedBan, chat_id: int, update_id: int | None
) -> None:
    """Ban a listed member who just joined; once per join update (audited), retried by a job
    when Telegram asks to wait."""
    if not call_or_retry_later(
        lambda: client.ban_chat_member(chat_id=chat_id, user_id=ban.user_id),
        JOIN_JOB,
        {"chat_id": chat_id, "user_id": ban.user_id},
    ):
        return
    audit_record(
        action="ban",
        actor=BOT,
        source="auto",
        chat_id=chat_id,
        target_id=ban.user_id,
        target_name=ban.name,
        reason=ban.reason,
        detail=f"joined while on the shared ban list {ban.ban_list.name}",
        update_id=update_id,
        cause=CAUSE,
    )


def join_job(payload: dict[str, Any], client: TelegramClient) -> None:
    """``rules.fban_join``: a joiner's ban Telegram asked to retry."""
    chat_id, user_id = int(payload["chat_id"]), int(payload["user_id"])
    call_or_retry_later(
        lambda: client.ban_chat_member(chat_id=chat_id, user_id=user_id),
        JOIN_JOB,
        {"chat_id": chat_id, "user_id": user_id},
        in_job=True,
    )
