"""``{% load zones %}``: ``{{ moment|zoned }}`` and ``{{ moment|zoned:"seconds" }}`` show a
time in the console's zone with the zone's name (``telegram_bot.ops.zones``)."""

from __future__ import annotations

from datetime import datetime

from django import template

from telegram_bot.ops.zones import zone_name, zoned

register = template.Library()


@register.filter(name="zoned")
def zoned_filter(moment: datetime | None, arg: str = "") -> str:
    return zoned(moment, seconds=arg == "seconds")


@register.simple_tag(name="zone_name")
def zone_name_tag() -> str:
    return zone_name()
