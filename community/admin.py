"""Admin site: the join-request policy of each chat (validated by ``ChatPolicy.clean``)."""

from __future__ import annotations

from django.contrib import admin

from community.models import ChatPolicy


@admin.register(ChatPolicy)
class ChatPolicyAdmin(admin.ModelAdmin):
    list_display = ("chat_id", "title", "mode", "on_timeout", "welcome_enabled", "updated_at")
    list_filter = ("mode", "welcome_enabled")
    search_fields = ("chat_id", "title")
    fieldsets = (
        (None, {"fields": ("chat_id", "title", "mode")}),
        (
            "Question",
            {
                "fields": (
                    "question",
                    "answers",
                    "timeout_seconds",
                    "on_timeout",
                    "on_wrong_answer",
                ),
                "description": 'Used when the mode is "Ask the requester a question".',
            },
        ),
        ("Welcome", {"fields": ("welcome_enabled", "welcome_text")}),
    )
