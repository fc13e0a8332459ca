from __future__ import annotations

from django.urls import path

from webapp import views

app_name = "webapp"
urlpatterns = [
    path("", views.home, name="home"),
    path("login/", views.login_init_data, name="login"),
    path("login/widget/", views.login_widget, name="login-widget"),
    path("logout/", views.logout, name="logout"),
    path("c/<str:chat_id>/", views.overview, name="overview"),
    path("c/<str:chat_id>/welcome/", views.welcome, name="welcome"),
    path("c/<str:chat_id>/captcha/", views.captcha, name="captcha"),
    path("c/<str:chat_id>/moderation/", views.moderation_settings, name="moderation"),
    path("c/<str:chat_id>/rules/", views.chat_rules, name="rules"),
    path("c/<str:chat_id>/audit/", views.audit_log, name="audit"),
    path("c/<str:chat_id>/members/<str:user_id>/", views.member, name="member"),
]
