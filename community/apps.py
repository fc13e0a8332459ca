from __future__ import annotations

from django.utils.translation import gettext_lazy

from telegram_bot import features


class CommunityConfig(features.FeatureConfig):
    name = "community"
    verbose_name = gettext_lazy("Community")
    bot_handlers = "community.handlers"
    job_handlers = "community.tasks.JOB_HANDLERS"
    schedules = "community.schedules.SCHEDULES"
    api_module = "community.api"
    overview_cards = "community.overview.community_cards"
    start_line = gettext_lazy("members (join requests, welcome, captcha)")
    privacy = "community.privacy"
    member_sections = "community.member.member_section"
    chat_settings_models = ("community.ChatPolicy", "community.MemberPolicy", "community.BotChat")
    console_sections = {
        "members": (
            "view:community-join-requests",
            "community.botchat",
            "community.membermovement",
        ),
        "settings": ("community.chatpolicy", "community.memberpolicy"),
    }
    audit_phrases = {
        "join_request.approve": gettext_lazy("{actor} approved the join request of {target}"),
        "join_request.decline": gettext_lazy("{actor} declined the join request of {target}"),
    }
    chat_titles = "community.selectors.chat_titles"
    chats = "community.selectors.bot_chats"
    chat_figures = "community.overview.community_chat_figures"
    # The statistics dashboard shows growth next to activity without importing this app.
    insight_growth = "community.insights.GROWTH"
    key_families = {
        "members": "members' stays per chat (joined/left, welcomed, captcha), anti-raid "
        "join counters and strict mode, the last welcome",
        "cap": "captcha challenges by token (who, the right button, the outcome), 2 days",
        "jr": "join requests: records by token (7 days while pending), the newest token of a "
        "requester, the token an update created",
    }
