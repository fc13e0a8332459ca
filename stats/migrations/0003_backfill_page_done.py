"""The keys of the backfill's current page already done, on stores whose scan is not ordered."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("stats", "0002_default_rules")]

    operations = [
        migrations.AddField(
            model_name="backfillstate",
            name="page_done",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
