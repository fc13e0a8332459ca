"""Transport: how updates arrive. The webhook (a django-ninja operation) and long polling
(``getUpdates``) both parse an Update once and hand it to ``telegram_bot.pipeline``."""

# Where Telegram delivers (config/urls.py mounts the webhook's API at telegram/): the web
# worker's own chain, the access log and the production smoke test key on it.
WEBHOOK_PATH = "/telegram/webhook"
