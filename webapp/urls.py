from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.clickjacking import xframe_options_exempt

from webapp import views

# Telegram's web clients show a Mini App in a frame of their own page; nobody else may frame it
# (the site's X-Frame-Options DENY would forbid even them, so CSP frame-ancestors says who may).
FRAME_ANCESTORS = "frame-ancestors https://web.telegram.org https://*.web.telegram.org"


def in_telegram_frame(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = view(request, *args, **kwargs)
        response["Content-Security-Policy"] = FRAME_ANCESTORS
        return response

    return xframe_options_exempt(wrapper)


app_name = "webapp"
urlpatterns = [
    path("", in_telegram_frame(views.home), name="home"),
    path("login/", in_telegram_frame(views.login_init_data), name="login"),
    path("login/widget/", in_telegram_frame(views.login_widget), name="login-widget"),
    path("logout/", in_telegram_frame(views.logout), name="logout"),
    path("c/<str:chat_id>/", in_telegram_frame(views.overview), name="overview"),
    path("c/<str:chat_id>/welcome/", in_telegram_frame(views.welcome), name="welcome"),
    path("c/<str:chat_id>/captcha/", in_telegram_frame(views.captcha), name="captcha"),
    path("c/<str:chat_id>/cleaning/", in_telegram_frame(views.cleaning), name="cleaning"),
    path(
        "c/<str:chat_id>/moderation/",
        in_telegram_frame(views.moderation_settings),
        name="moderation",
    ),
    path("c/<str:chat_id>/rules/", in_telegram_frame(views.chat_rules), name="rules"),
    path("c/<str:chat_id>/notes/", in_telegram_frame(views.notes), name="notes"),
    path("c/<str:chat_id>/audit/", in_telegram_frame(views.audit_log), name="audit"),
    path(
        "c/<str:chat_id>/members/<str:user_id>/",
        in_telegram_frame(views.member),
        name="member",
    ),
]
