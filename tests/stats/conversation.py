# ruff: noqa: RUF001 - profanity as people type it mixes Latin and Cyrillic letters
"""A seeded random group conversation and its ground truth, counted here on its own.

Nothing in this module calls the product's counting code: the truth is what the generator
decided to put in each message (which tokens are words, which are profane, which rule a
message breaks), computed with plain arithmetic on the message date for days and hours.
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from tests.builders import chat as make_chat
from tests.builders import user as make_user

SAMPLES = Path(
    os.environ.get("BOTAPI_UPDATES_DIR")
    or Path(__file__).resolve().parents[1] / "fakes" / "botapi" / "updates"
)
EPOCH = date(1970, 1, 1)

# Words that count as words and as nothing else, near misses of the lists included.
CLEAN = [
    "hello", "world", "coffee", "weather", "class", "pass", "assassin", "cocktail", "Dickens",
    "Scunthorpe", "shiitake", "ebay", "hell", "assume", "2024", "ok", "привет", "небо", "неба",
    "хлеб", "мудрый", "мандарин", "скрипт", "погода", "трахея", "Привет!", "well-known",
]  # fmt: skip
# Profanity as people type it: each token counts once.
PROFANE = [
    "FUCK", "fuuuuck", "f.u.c.k", "Motherfucker,", "sh1t", "$hit", "b!tch", "a$$hole", "ass",
    "хуй", "ХУЙ", "xуй", "пиздец", "пи3дец", "бляяяя", "6ля", "сука", "cyкa", "ёбаный",
    "заебал", "нахуй", "blyat",
]  # fmt: skip
NOT_WORDS = ["—", "!!!", "...", "?"]
LINK = "https://example.org/promo"
# Banned-word rules the tests configure: rule name -> (patterns, severity, tokens used here).
BANNED_RULES = {
    "Gambling": ("casino*\njackpot", "high", ["casino", "CASINO", "casinos", "jackpot"]),
    "Crypto": ("crypto*", "low", ["crypto", "cryptocurrency"]),
}
LINK_RULE_SEVERITY = "medium"
FIELDS = (
    "messages",
    "words",
    "voice_count",
    "voice_seconds",
    "video_notes",
    "video_note_seconds",
    "profanity",
    "violations_low",
    "violations_medium",
    "violations_high",
)


def configure_rules(*, new_member_days: int = 30) -> None:
    """The violation rules and settings the conversations are counted against."""
    from stats.config import counting_config_clear
    from stats.models import StatsSettings, ViolationKind, ViolationRule

    ViolationRule.objects.all().delete()
    for name, (patterns, severity, _tokens) in BANNED_RULES.items():
        ViolationRule.objects.create(
            name=name, kind=ViolationKind.BANNED_WORDS, words=patterns, severity=severity
        )
    ViolationRule.objects.create(
        name="Links", kind=ViolationKind.NEW_MEMBER_LINK, severity=LINK_RULE_SEVERITY
    )
    StatsSettings.objects.update_or_create(pk=1, defaults={"new_member_days": new_member_days})
    counting_config_clear()


def sample(name: str) -> dict[str, Any]:
    return json.loads((SAMPLES / name).read_text())["message"]


@dataclass
class Truth:
    rows: dict[tuple[int, date, int], Counter[str]] = field(default_factory=dict)
    totals: Counter[tuple[int, date]] = field(default_factory=Counter)
    buffered: Counter[int] = field(default_factory=Counter)  # counted messages per chat

    def row(self, chat_id: int, day: date, user_id: int) -> Counter[str]:
        return self.rows.setdefault((chat_id, day, user_id), Counter())

    def day_of(self, chat_id: int, day: date) -> dict[int, Counter[str]]:
        return {u: c for (ch, d, u), c in self.rows.items() if ch == chat_id and d == day}


class Conversation:
    """Updates to deliver (joins first, then everything else shuffled, 10% sent twice)."""

    def __init__(
        self,
        *,
        seed: int,
        days: list[date],
        now: int,
        chats: tuple[int, ...] = (-100101, -100202, -100303),
        users: tuple[int, ...] = (11, 12, 13, 14, 15, 16),
        messages: int = 240,
        update_base: int = 5_000_000,
    ) -> None:
        self.rng = random.Random(seed)
        self.days, self.now, self.chats, self.users = days, now, chats, users
        self.truth = Truth()
        self._update_id = update_base
        self._message_id = 1000
        self.joined: dict[int, set[int]] = {
            chat_id: set(self.rng.sample(users, 3)) for chat_id in chats
        }
        self.joins = [self._join(chat_id, members) for chat_id, members in self.joined.items()]
        body = [self._counted() for _ in range(messages)] + self._noise()
        body += [self.rng.choice(body) for _ in range(len(body) // 10)]  # re-deliveries
        self.rng.shuffle(body)
        self.body = body

    @property
    def updates(self) -> list[dict[str, Any]]:
        return self.joins + self.body

    def late_message(self, chat_id: int, day: date, user_id: int, words: int) -> dict[str, Any]:
        """One more text message (``words`` clean words) on a closed day, counted in truth."""
        text = " ".join(self.rng.choice(CLEAN[:6]) for _ in range(words))
        ts = self._ts(day)
        self._count(chat_id, user_id, ts, messages=1, words=words)
        return self._update(self._message(chat_id, user_id, ts, text=text))

    # --- generation --------------------------------------------------------------------------
    def _counted(self) -> dict[str, Any]:
        chat_id, user_id = self.rng.choice(self.chats), self.rng.choice(self.users)
        ts = self._ts(self.rng.choice(self.days))
        roll = self.rng.random()
        if roll < 0.18:
            seconds = self.rng.randint(1, 180)
            voice = {**sample("voice.json")["voice"], "duration": seconds}
            self._count(chat_id, user_id, ts, messages=1, voice_count=1, voice_seconds=seconds)
            return self._update(self._message(chat_id, user_id, ts, voice=voice))
        if roll < 0.33:
            seconds = self.rng.randint(1, 60)
            note = {**sample("video_note.json")["video_note"], "duration": seconds}
            self._count(chat_id, user_id, ts, messages=1, video_notes=1, video_note_seconds=seconds)
            return self._update(self._message(chat_id, user_id, ts, video_note=note))
        return self._update(self._text_message(chat_id, user_id, ts))

    def _text_message(self, chat_id: int, user_id: int, ts: int) -> dict[str, Any]:
        tokens: list[str] = []
        counts: Counter[str] = Counter(messages=1)
        for _ in range(self.rng.randint(1, 10)):
            roll = self.rng.random()
            if roll < 0.15:
                tokens.append(self.rng.choice(PROFANE))
                counts.update(words=1, profanity=1)
            elif roll < 0.2:
                tokens.append(self.rng.choice(NOT_WORDS))
            else:
                tokens.append(self.rng.choice(CLEAN))
                counts.update(words=1)
        for _name, (_patterns, severity, used) in BANNED_RULES.items():
            if self.rng.random() < 0.06:
                tokens.insert(self.rng.randrange(len(tokens) + 1), self.rng.choice(used))
                counts.update(words=1, **{f"violations_{severity}": 1})
        if self.rng.random() < 0.08:
            tokens.append(LINK)
            counts.update(words=1)
            if user_id in self.joined[chat_id]:
                counts.update(**{f"violations_{LINK_RULE_SEVERITY}": 1})
        self._count(chat_id, user_id, ts, **counts)
        return self._message(chat_id, user_id, ts, text=" ".join(tokens))

    def _noise(self) -> list[dict[str, Any]]:
        """Updates that must not count: edits, service messages, bots, private chats."""
        noise = []
        for _ in range(12):
            chat_id, user_id = self.rng.choice(self.chats), self.rng.choice(self.users)
            ts = self._ts(self.rng.choice(self.days))
            edited = self._message(chat_id, user_id, ts, text="edited text hello")
            edited["edit_date"] = ts + 5
            noise.append(self._update(edited, kind="edited_message"))
            left = self._message(chat_id, user_id, ts, left_chat_member=make_user(user_id))
            noise.append(self._update(left))
            bot = self._message(chat_id, 777, ts, text="I am a bot")
            bot["from"]["is_bot"] = True
            noise.append(self._update(bot))
            private = self._message(user_id, user_id, ts, text="hello in private")
            private["chat"] = make_chat(user_id, "private")
            noise.append(self._update(private))
        return noise

    def _join(self, chat_id: int, members: set[int]) -> dict[str, Any]:
        ts = self._ts(self.days[0])
        joined = [make_user(user_id, f"Member{user_id}") for user_id in sorted(members)]
        return self._update(self._message(chat_id, sorted(members)[0], ts, new_chat_members=joined))

    def _message(self, chat_id: int, user_id: int, ts: int, **fields: Any) -> dict[str, Any]:
        self._message_id += 1
        return {
            "message_id": self._message_id,
            "date": ts,
            "chat": make_chat(chat_id, "supergroup", title=f"Group {chat_id}"),
            "from": make_user(user_id, f"User{user_id}", username=f"user{user_id}"),
            **fields,
        }

    def _update(self, message: dict[str, Any], kind: str = "message") -> dict[str, Any]:
        self._update_id += 1
        return {"update_id": self._update_id, kind: message}

    def _ts(self, day: date) -> int:
        start = (day - EPOCH).days * 86400
        return self.rng.randint(start, min(start + 86399, self.now))

    def _count(self, chat_id: int, user_id: int, ts: int, **counts: int) -> None:
        day = EPOCH + timedelta(days=ts // 86400)
        row = self.truth.row(chat_id, day, user_id)
        row.update(counts)
        row[f"hour_{(ts % 86400) // 3600:02d}"] += 1
        self.truth.totals[(chat_id, day)] += 1
        self.truth.buffered[chat_id] += 1
