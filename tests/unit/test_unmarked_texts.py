"""No text the bot sends or the admin site shows is a bare English literal.

An AST check of every module of the core and the feature apps: the text arguments of the
sending calls (``ctx.reply``, ``send_message``, ``answer_callback``, ``notify_admins``...),
the ``text`` of inline buttons, ``user_message`` of errors, admin messages and action
descriptions must go through gettext. It cannot see a text built far from the call (a
constant named elsewhere): the behaviour tests in ``tests/unit/test_languages.py`` and the
translated catalogue cover those.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
PACKAGES = ("telegram_bot", "support", "community", "content", "moderation", "stats", "broadcasts")
# The call -> which positional argument is the text (None: keywords only).
SENDERS = {
    "reply": 0,
    "answer_callback": 0,
    "edit_callback_message": 0,
    "notify_admins": 0,
    "send_message": None,
    "edit_message_text": None,
    "edit_message_caption": None,
    "answer_callback_query": None,
    "send_photo": None,
    "send_document": None,
    "Answer": 0,
    "success": 1,
    "error": 1,
    "info": 1,
    "warning": 1,
    "message_user": 1,
    "HttpResponseBadRequest": 0,
}
TEXT_KEYWORDS = {"text", "caption", "user_message", "description", "short_description"}
WORD = re.compile(r"[A-Za-z]{2,}")
# Literals that look like texts but reach nobody: the smoke test's synthetic update.
NOT_TEXTS = {("telegram_bot/ops/production_ops.py", "'smoke test'")}


def _bare(node: ast.AST) -> bool:
    """True when ``node`` builds English text without gettext."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and bool(WORD.search(node.value))
    if isinstance(node, ast.JoinedStr):
        return any(_bare(part) for part in node.values if isinstance(part, ast.Constant))
    if isinstance(node, ast.BinOp):
        return _bare(node.left) or _bare(node.right)
    if isinstance(node, ast.IfExp):
        return _bare(node.body) or _bare(node.orelse)
    return False


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def unmarked_texts(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        texts: list[ast.AST] = []
        if isinstance(node, ast.Call):
            name = _call_name(node)
            if name in SENDERS:
                index = SENDERS[name]
                # messages.error(request, text) but not log.error("...", ...)
                if (
                    index is not None
                    and len(node.args) > index
                    and (index == 0 or _call_target(node) in ("messages", "self"))
                ):
                    texts.append(node.args[index])
                texts += [kw.value for kw in node.keywords if kw.arg in TEXT_KEYWORDS]
            elif name == "action":
                texts += [kw.value for kw in node.keywords if kw.arg == "description"]
        elif isinstance(node, ast.Dict):
            texts += [
                value
                for key, value in zip(node.keys, node.values, strict=True)
                if isinstance(key, ast.Constant) and key.value == "text"
            ]
        where = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        found += [
            f"{where}:{text.lineno}: {ast.unparse(text)[:70]}"
            for text in texts
            if _bare(text) and (where, ast.unparse(text)) not in NOT_TEXTS
        ]
    return found


def _call_target(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.value.id
    return ""


def test_sent_texts_go_through_gettext() -> None:
    modules = [
        path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
    ]
    found = [line for path in modules for line in unmarked_texts(path)]
    assert found == [], "texts not marked for translation:\n" + "\n".join(found)


def test_the_check_sees_a_bare_text(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        'def f(ctx):\n    ctx.reply(f"Hello {ctx.x}")\n    ctx.reply(_("Fine"))\n'
        '    messages.error(request, "Bad")\n    log.error("not for users")\n'
        '    kb = {"text": "Back"}\n',
        encoding="utf-8",
    )
    found = unmarked_texts(source)
    assert [line.split(": ", 1)[1] for line in found] == ["f'Hello {ctx.x}'", "'Bad'", "'Back'"]
