"""The default violation rule: links posted by new members (medium)."""

from __future__ import annotations

from django.db import migrations


def add_default_rules(apps, schema_editor):
    rule = apps.get_model("stats", "ViolationRule")
    if not rule.objects.filter(kind="new_member_link").exists():
        rule.objects.create(
            name="Links from new members", kind="new_member_link", severity="medium"
        )


class Migration(migrations.Migration):
    dependencies = [("stats", "0001_initial")]

    operations = [migrations.RunPython(add_default_rules, migrations.RunPython.noop)]
