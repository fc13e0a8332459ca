from __future__ import annotations

from django.utils.translation import gettext_lazy

from telegram_bot import features


class ModerationConfig(features.FeatureConfig):
    name = "moderation"
    verbose_name = gettext_lazy("Moderation")
    bot_handlers = "moderation.handlers"
    job_handlers = "moderation.tasks.JOB_HANDLERS"
    key_families = {
        "mod": "moderation: chat administrators cache (mod:adm:<chat>, TTL) and anti-flood "
        "windows (mod:fl:<chat>:<user>:<window>, TTL)",
    }
    start_line = gettext_lazy("moderation (/warn, /mute, /ban... in groups)")
    privacy = "moderation.privacy"
    chat_settings_models = ("moderation.ChatSettings",)
    member_sections = "moderation.web.member_section"
    people_names = "moderation.selectors.people_names"
    chat_titles = "moderation.selectors.chat_titles"
    console_sections = {
        "safety": ("moderation.warning",),
        "settings": ("moderation.chatsettings", "view:moderation-settings-by-chat"),
    }
    audit_phrases = {
        "warn": gettext_lazy("{actor} warned {target}"),
        "unwarn": gettext_lazy("{actor} took back a warning of {target}"),
        "mute": gettext_lazy("{actor} muted {target} {detail}"),
        "unmute": gettext_lazy("{actor} unmuted {target}"),
        "ban": gettext_lazy("{actor} banned {target} {detail}"),
        "unban": gettext_lazy("{actor} unbanned {target}"),
        "kick": gettext_lazy("{actor} removed {target} from the chat"),
        "delete": gettext_lazy("{actor} deleted a message of {target}"),
        "settings": gettext_lazy("{actor} changed the chat's moderation settings"),
    }

    def ready(self) -> None:
        super().ready()
        from moderation import conf, rights
        from telegram_bot.audit import register_log_chat
        from telegram_bot.pipeline.security import register_chat_admin_check

        conf.connect_signals()
        register_log_chat(conf.log_chat)
        register_chat_admin_check(rights.is_chat_admin)
