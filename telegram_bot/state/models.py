"""The table behind the database KV backend (the embedded default)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class KVEntry(models.Model):
    """One KV key. Only ``telegram_bot.state.database`` reads or writes this table."""

    key = models.CharField(_("key"), max_length=512, primary_key=True)
    value = models.TextField(_("value"))
    # Milliseconds since the epoch; NULL never expires. Reads filter on it (lazy expiry).
    expires_at = models.BigIntegerField(
        _("expires (ms since the epoch)"), null=True, blank=True, db_index=True
    )

    class Meta:
        db_table = "kv_store"
        verbose_name = _("KV entry")
        verbose_name_plural = _("KV entries")

    def __str__(self) -> str:
        return self.key
