"""Transport: how updates arrive. The webhook (a django-ninja operation) and long polling
(``getUpdates``) both parse an Update once and hand it to ``telegram_bot.pipeline``."""
