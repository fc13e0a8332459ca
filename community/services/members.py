"""Writes of members joining and leaving a group: welcome, goodbye, rules, captcha, anti-raid.

Where the events come from. ``chat_member`` updates (sent when the bot is an admin and the
webhook asks for them) and the ``new_chat_members`` / ``left_chat_member`` service messages
(sent in every group the bot is in). Both describe one join when both arrive; the member's
stay record (``member_state``) makes them, and any re-delivery, one event: counted once,
challenged once, welcomed once.

Anti-raid: ``raid`` (the strict mode, "captcha for everyone" or "join requests
only"). Spam-listed joiners: ``spam`` (banned or removed before any captcha or welcome).

Captcha. A joining member in a chat whose policy asks for it (or in the anti-raid strict mode)
is restricted (cannot send messages) and gets a message with several buttons; only the
right one, pressed by them, lifts the restriction. A wrong button, or no press before the
deadline, removes them (ban, then unban: they may join again) and deletes the challenge. The
outcome is decided once (compare-and-set from pending) and only the winner calls Telegram.
The deadline is a ``community.captcha`` job (one per challenge, in the database, so it
survives a restart); it also finishes an outcome whose Telegram calls failed or were cut off
(a retryable failure in the webhook reschedules it at once, on the core retry policy).

Everything here is best effort towards the chat: a welcome or a deletion Telegram refuses is
logged, never retried into a second copy. Texts are HTML (``parse_mode``), every value
escaped; ``{mention}`` is a ``tg://user`` link.
"""

from __future__ import annotations

import html
import logging
import re
import secrets
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from community.growth import movement_record
from community.member_state import (
    FAILED,
    LEFT,
    PASSED,
    TIMEOUT,
    Challenge,
    MemberStore,
    Stay,
    new_token,
)
from community.models import MemberMovement, MemberPolicy, parse_buttons
from community.services import raid, spam
from telegram_bot.bot import get_client
from telegram_bot.client import SEND_PERMISSIONS
from telegram_bot.errors import BotError, TelegramApiError
from telegram_bot.exemptions import is_exempt, join_refused
from telegram_bot.jobs.services import job_cancel_key, job_enqueue, job_retry_later
from telegram_bot.languages import supported
from telegram_bot.state import get_store
from telegram_bot.updates import ChatMember, User

log = logging.getLogger(__name__)

CAPTCHA_JOB = "community.captcha"
CAPTCHA_CALLBACK = "mc:"
CHOICES = (
    ("🍎", gettext_lazy("the apple")),
    ("🍌", gettext_lazy("the banana")),
    ("🍇", gettext_lazy("the grapes")),
    ("🍒", gettext_lazy("the cherries")),
    ("🐶", gettext_lazy("the dog")),
    ("🐱", gettext_lazy("the cat")),
    ("🚗", gettext_lazy("the car")),
    ("⭐", gettext_lazy("the star")),
)
BUTTONS_PER_CHALLENGE = 4
# The deadline job leaves an outcome decided less than this long ago to whoever decided it (a
# press being carried out in the webhook right now) and comes back later; past it, the
# decider is taken for dead and the job carries the outcome out. Longer than a Telegram call.
FINISH_GRACE_SECONDS = 30
WEBHOOK, JOB = "webhook", "job"
# A captcha restricts (all False) and frees (all True) these (see SEND_PERMISSIONS).
PERMISSION_NAMES = (*SEND_PERMISSIONS, "can_invite_users")
MUTED = dict.fromkeys(PERMISSION_NAMES, False)
FREED = dict.fromkeys(PERMISSION_NAMES, True)


@dataclass(frozen=True)
class MemberEvent:
    """A join or a leave, from a ``chat_member`` update or a service message."""

    chat_id: int
    chat_title: str
    user: User
    date: int
    via_join_request: bool = False  # approved through a join request (or a link asking one)
    from_service: bool = False  # a service message, which does not say how they joined
    update_id: int = 0  # orders a leave and a join within one second (Telegram's dates)
    # The restriction they arrived with (``Challenge.restore``); None: unrestricted or unknown.
    arrived_restricted: dict[str, Any] | None = None


@dataclass(frozen=True)
class PressResult:
    text: str
    alert: bool


def policy_of(chat_id: int) -> MemberPolicy | None:
    return MemberPolicy.objects.filter(chat_id=chat_id).first()


def members() -> MemberStore:
    return MemberStore(get_store())


# --- joins and leaves -------------------------------------------------------------------------


def member_joined(event: MemberEvent) -> None:
    """A member joined (or this is the same join again): finish what is left to do for it."""
    if event.user.is_bot:
        return  # bots are not welcomed nor challenged; the bot's own chats: bot_chats
    store = members()
    if event.arrived_restricted is not None and _own_restriction_left(store, event):
        event = replace(event, arrived_restricted=None)
    transition = store.joined(event.chat_id, event.user.id, event.date, event.update_id)
    stay = transition.stay
    if stay is None or not stay.inside:
        return  # a join older than the leave we know of
    movement_record(
        chat_id=event.chat_id,
        user_id=event.user.id,
        stay=stay.stay,
        kind=MemberMovement.Kind.JOIN,
        date_unix=stay.date,
    )
    policy = policy_of(event.chat_id)
    if policy is None:
        return
    if transition.changed:
        raid.join_counted(policy, event, store)
    if spam.spam_joiner(policy, event, stay, store):
        return
    if join_refused(event.chat_id, event.user.id):  # a shared ban list removes them
        store.update_stay(
            event.chat_id,
            event.user.id,
            lambda s: replace(s, removed=True) if s.inside and not s.removed else None,
        )
        return
    if not stay.cap and raid.join_in_requests_mode(event, store):
        return
    if stay.cap or _needs_captcha(policy, event, store):
        _challenge(policy, event, stay, store)
    else:
        welcome(policy, event, stay.stay)


def member_left(event: MemberEvent) -> None:
    if event.user.is_bot:
        return
    store = members()
    transition = store.left(event.chat_id, event.user.id, event.date, event.update_id)
    stay = transition.stay
    if stay is None or stay.inside:
        return  # a leave older than the join we know of
    movement_record(
        chat_id=event.chat_id,
        user_id=event.user.id,
        stay=stay.stay,
        kind=MemberMovement.Kind.LEAVE,
        date_unix=stay.date,
    )
    if not transition.changed:
        return
    challenge = store.get_challenge(stay.cap) if stay.cap else None
    if challenge is not None:
        decided = store.decide(challenge.token, LEFT, finisher=WEBHOOK)
        if decided is not None:
            _finish(decided, in_job=False)
    policy = policy_of(event.chat_id)
    if policy is None or not policy.goodbye_enabled or not policy.goodbye_text:
        return
    if (challenge is not None and challenge.status != PASSED) or stay.removed:
        return  # they never got in (captcha, or removed by the anti-raid): no goodbye
    text = render(policy.goodbye_text, event.user, chat_title=event.chat_title, rules="")
    _send(event.chat_id, text)


def clean_service_message(chat_id: int, message_id: int) -> None:
    """Delete a "joined" / "left" service message when the chat's policy asks for it."""
    policy = policy_of(chat_id)
    if policy is not None and policy.clean_service_messages:
        _delete(chat_id, message_id)


def rules_for(chat_id: int) -> str:
    policy = policy_of(chat_id)
    if policy is None or not policy.rules_text.strip():
        return _("No rules are set for this group.")
    return policy.rules_text


# --- welcome ----------------------------------------------------------------------------------


def welcome(policy: MemberPolicy, event: MemberEvent, stay_id: str) -> None:
    """Send the welcome once per stay (claimed before sending: a crash in between loses it
    rather than sending it twice)."""
    if not policy.welcome_enabled or not policy.welcome_text:
        return
    store = members()

    def claim(stay: Stay) -> Stay | None:
        return replace(stay, welcomed=True) if stay.stay == stay_id and not stay.welcomed else None

    if store.update_stay(event.chat_id, event.user.id, claim) is None:
        return
    text = render(
        policy.welcome_text, event.user, chat_title=event.chat_title, rules=policy.rules_text
    )
    rows = [[{"text": label, "url": url}] for label, url in parse_buttons(policy.welcome_buttons)]
    sent = _send(event.chat_id, text, reply_markup={"inline_keyboard": rows} if rows else None)
    if sent is None or not policy.delete_previous_welcome:
        return
    previous = store.swap_last_welcome(event.chat_id, int(sent["message_id"]))
    if previous is not None:
        _delete(event.chat_id, previous)


_PLACEHOLDER = re.compile(r"\{(?:first_name|mention|chat_title|rules)\}")


def render(template: str, user: User, *, chat_title: str, rules: str) -> str:
    """The template as HTML, every value escaped. Plain replacement, not str.format: the
    template is operator input and format() would let it reach attributes. One pass: a value
    put in (a member named "{rules}") is never searched for placeholders again."""
    values = {
        "{first_name}": html.escape(user.first_name, quote=False),
        "{mention}": f'<a href="tg://user?id={user.id}">{html.escape(user.full_name)}</a>',
        "{chat_title}": html.escape(chat_title, quote=False),
        "{rules}": html.escape(rules, quote=False),
    }
    text = html.escape(template, quote=False)
    return _PLACEHOLDER.sub(lambda match: values[match.group(0)], text)


# --- anti-raid --------------------------------------------------------------------------------


def _needs_captcha(policy: MemberPolicy, event: MemberEvent, store: MemberStore) -> bool:
    if is_exempt(event.chat_id, event.user.id):
        return False  # approved in this chat (chat rules): trusted, as an admin would be
    strict = store.get_strict(event.chat_id)
    if strict is not None and not raid.requests_only(strict):
        return True  # captcha for everyone (also when "join requests only" has no link)
    # A member approved through a join request was vetted already.
    return policy.captcha_enabled and not event.via_join_request


# --- captcha ----------------------------------------------------------------------------------


def _challenge(policy: MemberPolicy, event: MemberEvent, stay: Stay, store: MemberStore) -> None:
    """Create the stay's challenge once, then do whatever of it is not done yet: the deadline
    job, the restriction, the message. Re-deliveries come here and finish the rest."""
    token = stay.cap
    if not token:
        candidate = new_token()

        def attach(current: Stay) -> Stay | None:
            if current.stay != stay.stay or current.cap:
                return None
            return replace(current, cap=candidate)

        written = store.update_stay(event.chat_id, event.user.id, attach)
        current = written or store.get_stay(event.chat_id, event.user.id)
        if current is None or current.stay != stay.stay or not current.cap:
            return  # the member left meanwhile
        token = current.cap
    challenge = store.get_challenge(token)
    if challenge is None:
        names = secrets.SystemRandom().sample(CHOICES, BUTTONS_PER_CHALLENGE)
        store.create_challenge(
            Challenge(
                token=token,
                chat_id=event.chat_id,
                user_id=event.user.id,
                stay=stay.stay,
                user=event.user.model_dump(mode="json", by_alias=True, exclude_none=True),
                chat_title=event.chat_title,
                choices=[emoji for emoji, _ in names],
                answer=secrets.randbelow(BUTTONS_PER_CHALLENGE),
                deadline=int(time.time()) + policy.captcha_seconds,
                restore=event.arrived_restricted,
            )
        )
        challenge = store.get_challenge(token)
        if challenge is None:
            return
    if not challenge.pending:
        return  # answered, timed out or left: a late re-delivery changes nothing
    # The deadline first: whatever happens next, the challenge ends.
    job_enqueue(
        CAPTCHA_JOB,
        {"token": token},
        run_at=datetime.fromtimestamp(challenge.deadline, tz=UTC),
        dedupe_key=_job_key(token),
    )
    if not challenge.restricted:
        try:
            get_client().restrict_chat_member(
                chat_id=event.chat_id, user_id=event.user.id, permissions=MUTED
            )
        except TelegramApiError as exc:
            log.warning(
                "captcha: could not restrict %s in %s: %s", event.user.id, event.chat_id, exc
            )
        challenge = (
            store.update_challenge(token, lambda c: replace(c, restricted=True)) or challenge
        )
    if challenge.message_id is None and challenge.pending:
        text, markup = challenge_message(challenge, event.user, policy.captcha_seconds)
        sent = _send(event.chat_id, text, reply_markup=markup)
        if sent is not None:
            message_id = int(sent["message_id"])
            kept = store.update_challenge(
                token,
                lambda c: (
                    replace(c, message_id=message_id)
                    if c.message_id is None and c.pending
                    else None
                ),
            )
            if kept is None:
                # Another run's message is the challenge's (the two updates of one join, the
                # member update and the service message, handled at once), or it was answered
                # meanwhile: this one would stay with live buttons, never deleted.
                _delete(event.chat_id, message_id)


def challenge_message(challenge: Challenge, user: User, seconds: int) -> tuple[str, dict[str, Any]]:
    emoji = challenge.choices[challenge.answer]
    mention = f'<a href="tg://user?id={user.id}">{html.escape(user.full_name)}</a>'
    # In the new member's language (the update may be an admin's approval).
    with translation.override(supported(user.language_code) or translation.get_language()):
        label = dict(CHOICES)[emoji]
        text = ngettext(
            "%(mention)s, welcome! To write here, press %(label)s %(emoji)s within "
            "%(count)d second. Otherwise you will be removed (you can join again).",
            "%(mention)s, welcome! To write here, press %(label)s %(emoji)s within "
            "%(count)d seconds. Otherwise you will be removed (you can join again).",
            seconds,
        ) % {"mention": mention, "label": label, "emoji": emoji, "count": seconds}
    row = [
        {"text": choice, "callback_data": f"{CAPTCHA_CALLBACK}{challenge.token}:{index}"}
        for index, choice in enumerate(challenge.choices)
    ]
    return text, {"inline_keyboard": [row]}


def parse_press(data: str) -> tuple[str, int] | None:
    if not data.startswith(CAPTCHA_CALLBACK):
        return None
    token, sep, choice = data[len(CAPTCHA_CALLBACK) :].partition(":")
    # One ASCII digit: str.isdigit() also accepts "²", which int() refuses.
    if not sep or len(token) != 12 or len(choice) != 1 or choice not in "0123456789":
        return None
    if int(choice) >= BUTTONS_PER_CHALLENGE:
        return None
    return token, int(choice)


def captcha_press(data: str, presser_id: int | None) -> PressResult:
    """A press on a challenge's button: only the challenged member's first press counts."""
    parsed = parse_press(data)
    store = members()
    challenge = store.get_challenge(parsed[0]) if parsed is not None else None
    if parsed is None or challenge is None:
        return PressResult(_("This button is not valid."), alert=True)
    if presser_id != challenge.user_id:
        return PressResult(_("This is not for you."), alert=True)
    token, choice = parsed
    outcome = PASSED if choice == challenge.answer else FAILED
    decided = store.decide(token, outcome, finisher=WEBHOOK)
    if decided is None:
        return PressResult(_("Already answered."), alert=False)
    _finish(decided, in_job=False)
    if outcome == PASSED:
        return PressResult(_("Thank you, you can write now."), alert=False)
    return PressResult(_("Wrong answer."), alert=True)


class FinishingElsewhere(BotError):
    """The outcome was decided moments ago by a press whose webhook is carrying it out: the
    job comes back later (the runner's retry policy) rather than call Telegram twice."""

    retryable = True


def captcha_deadline(token: str) -> None:
    """The deadline job: remove a member who did not answer, or finish an outcome whose
    Telegram calls did not all go through."""
    store = members()
    decided = store.decide(token, TIMEOUT, finisher=JOB)
    challenge = decided or store.get_challenge(token)
    if challenge is None or challenge.finished:
        return
    recent = time.time() - challenge.decided_at < FINISH_GRACE_SECONDS
    if challenge.finisher == WEBHOOK and recent:
        raise FinishingElsewhere(f"captcha {token} is being finished by its press")
    _finish(challenge, in_job=True)


def _finish(challenge: Challenge, *, in_job: bool) -> None:
    """Carry the outcome out in Telegram, then mark the challenge finished. A retryable failure
    is raised in a job (the runner retries) or handed to the job (in the webhook)."""
    client = get_client()
    lifted = False
    try:
        if challenge.status == PASSED or (
            challenge.status == LEFT and challenge.restricted and _only_restricted(challenge)
        ):
            # Left during the captcha: Telegram keeps a restriction after a leave, and a member
            # let back in without a captcha (a join request) could never write again.
            permissions, until = _after_captcha(challenge)
            client.restrict_chat_member(
                chat_id=challenge.chat_id,
                user_id=challenge.user_id,
                permissions=permissions,
                until_date=until,
            )
            lifted = True
        elif challenge.status in (FAILED, TIMEOUT):
            client.ban_chat_member(chat_id=challenge.chat_id, user_id=challenge.user_id)
            client.unban_chat_member(
                chat_id=challenge.chat_id, user_id=challenge.user_id, only_if_banned=True
            )
            lifted = True
    except TelegramApiError as exc:
        if exc.retryable:
            if in_job:
                raise
            members().update_challenge(challenge.token, lambda c: replace(c, finisher=JOB))
            job_retry_later(
                CAPTCHA_JOB,
                {"token": challenge.token},
                dedupe_key=_job_key(challenge.token),
                error=exc,
            )
            return
        log.warning(
            "captcha %s (%s) in %s: Telegram refused: %s",
            challenge.status,
            challenge.user_id,
            challenge.chat_id,
            exc,
        )
    finished = members().update_challenge(
        challenge.token,
        lambda c: None if c.finished else replace(c, finished=True, lifted=lifted),
    )
    if finished is None:
        return  # another run finished it
    if challenge.message_id is not None:
        _delete(challenge.chat_id, challenge.message_id)
    if not in_job:
        job_cancel_key(_job_key(challenge.token))
    if challenge.status == PASSED:
        policy = policy_of(challenge.chat_id)
        if policy is not None:
            user = User.model_validate(challenge.user)
            event = MemberEvent(challenge.chat_id, challenge.chat_title, user, int(time.time()))
            welcome(policy, event, challenge.stay)


def _after_captcha(challenge: Challenge) -> tuple[dict[str, bool], int | None]:
    """The permissions (and their end) to give back when the captcha ends: the restriction
    the member arrived with while it lasts (passing the captcha must not lift a moderator's
    mute), else every permission the captcha took."""
    restore = challenge.restore
    if isinstance(restore, dict) and isinstance(restore.get("permissions"), dict):
        until = int(restore.get("until") or 0)
        # Telegram takes an end less than 30 s away as "for good": an ending mute is over.
        if until == 0 or until > time.time() + 60:
            kept = restore["permissions"]
            return {name: bool(kept.get(name)) for name in PERMISSION_NAMES}, until or None
    return FREED, None


def _own_restriction_left(store: MemberStore, event: MemberEvent) -> bool:
    """Whether the restriction a member arrives with may be the captcha's own from their
    previous stay, never taken off (its lift met a rate limit, or came before this version):
    given back at the pass, it would mute them for good."""
    previous = store.get_stay(event.chat_id, event.user.id)
    if previous is None or previous.inside or not previous.cap:
        return False
    challenge = store.get_challenge(previous.cap)
    return challenge is not None and challenge.restricted and not challenge.lifted


def _only_restricted(challenge: Challenge) -> bool:
    """Whether the member who left during the captcha is out with the captcha's restriction
    only, so that lifting it is right: not banned (restricting a banned user replaces the ban:
    an admin's ban of a spam account in the captcha would be undone), and not back in another
    stay (whose own captcha restriction this late end must not lift)."""
    stay = members().get_stay(challenge.chat_id, challenge.user_id)
    if stay is not None and stay.inside and stay.stay != challenge.stay:
        return False
    member = get_client().get_chat_member(chat_id=challenge.chat_id, user_id=challenge.user_id)
    return member.get("status") == "restricted"


def arrival_restriction(member: ChatMember) -> dict[str, Any] | None:
    """What ``MemberEvent.arrived_restricted`` holds for a member who joins as ``member``."""
    if member.status != "restricted":
        return None
    fields = member.model_dump()  # the declared rights and the ones Telegram added since
    permissions = {name: bool(fields.get(name)) for name in PERMISSION_NAMES}
    return {"permissions": permissions, "until": int(member.until_date or 0)}


def _job_key(token: str) -> str:
    return f"{CAPTCHA_JOB}:{token}"


# --- Telegram, best effort --------------------------------------------------------------------


def _send(chat_id: int, text: str, **params: Any) -> dict[str, Any] | None:
    params = {key: value for key, value in params.items() if value is not None}
    try:
        return get_client().send_message(chat_id=chat_id, text=text, parse_mode="HTML", **params)
    except TelegramApiError as exc:
        log.warning("message to %s not sent: %s", chat_id, exc)
        return None


def _delete(chat_id: int, message_id: int) -> None:
    try:
        get_client().delete_message(chat_id=chat_id, message_id=message_id)
    except TelegramApiError as exc:  # already deleted, too old, no right to delete
        log.info("message %s in %s not deleted: %s", message_id, chat_id, exc)
