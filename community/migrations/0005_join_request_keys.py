"""Move the join-request records of versions up to 0.2 from the core's ``lock:`` KV family to
the community app's ``jr:`` family, in the KV store the product uses (the database's
``kv_store`` or Redis). Idempotent: running it again, or twice at once, moves nothing twice."""

from django.db import migrations


def forwards(apps, schema_editor):
    from community.records import legacy_keys_move
    from telegram_bot.state import get_store

    if schema_editor.connection.alias == "default":  # the product's database (db:// store)
        legacy_keys_move(get_store())


class Migration(migrations.Migration):
    dependencies = [
        ("community", "0004_growth"),
        ("telegram_bot", "0002_kv_store_c_collation"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
