from __future__ import annotations

from django.utils.translation import gettext_lazy

from telegram_bot import features


class RulesConfig(features.FeatureConfig):
    """Chat rules (locks, blocklists, approved members), an app of its own inside the
    moderation package: it acts through moderation's services (mute, ban, warn, rights),
    which the import contract lets no other feature app import."""

    name = "moderation.rules"
    label = "rules"
    verbose_name = gettext_lazy("Chat rules")
    bot_handlers = "moderation.rules.handlers"
    job_handlers = "moderation.rules.tasks.JOB_HANDLERS"
    privacy = "moderation.rules.privacy"
    start_line = gettext_lazy(
        "chat rules (/lock, /addblocklist, /approve, /save, /filter, /report, /fban in groups)"
    )
    chat_settings_models = (
        "rules.Lock",
        "rules.AllowedDomain",
        "rules.BlocklistEntry",
        "rules.Approval",
        "rules.Note",
        "rules.Filter",
        "rules.ReportSetting",
    )
    key_families = {
        "rules": "chat rules: filter answers per chat and minute (rules:fr:<chat>:<minute>, TTL)",
    }
    audit_phrases = {
        "rules.report": gettext_lazy("{actor} reported a message of {target} to the admins"),
        "rules.report_dismiss": gettext_lazy("{actor} dismissed a report on {target}"),
        "rules.reports_on": gettext_lazy("{actor} let members report messages"),
        "rules.reports_off": gettext_lazy("{actor} turned reports off"),
        "rules.fban": gettext_lazy("{actor} banned {target} in a shared ban list {detail}"),
        "rules.unfban": gettext_lazy("{actor} lifted the shared ban of {target} {detail}"),
    }
    console_sections = {
        "safety": (
            "rules.lock",
            "rules.blocklistentry",
            "rules.approval",
            "rules.report",
            "rules.sharedban",
            "rules.banlist",
        ),
        "settings": ("rules.alloweddomain", "rules.note", "rules.filter", "rules.reportsetting"),
    }

    def ready(self) -> None:
        super().ready()
        from moderation.rules import fedban, matcher
        from telegram_bot.exemptions import register_exemption, register_join_refusal

        matcher.connect_signals()
        register_exemption("rules.approved", matcher.is_approved)
        register_join_refusal("rules.shared_bans", fedban.refuses)
