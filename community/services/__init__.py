"""Writes of the community app, one module per entity: a join request from its arrival
(``join_requests``: the chat's policy, the question) to its decision (``join_decisions``);
members joining and leaving (``members``: welcome, goodbye, rules, captcha) and the anti-raid
mode (``raid``); the chats the bot itself is in (``bot_chats``)."""
