"""Byte-order collation for KV keys on PostgreSQL.

Scans page through keys by range (``key >= prefix AND key < successor``) and order. That is only
correct under byte order, which SQLite's default collation already is; a PostgreSQL database
created with a locale collation is not, so the key column is switched to "C" there.
"""

from __future__ import annotations

from django.db import migrations


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            'ALTER TABLE kv_store ALTER COLUMN "key" TYPE varchar(512) COLLATE "C"'
        )


def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute('ALTER TABLE kv_store ALTER COLUMN "key" TYPE varchar(512)')


class Migration(migrations.Migration):
    dependencies = [("telegram_bot", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
