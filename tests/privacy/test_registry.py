"""Every table and KV key family of the installed apps is declared to the privacy registry."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from telegram_bot import privacy


def test_every_model_and_key_family_is_declared() -> None:
    assert privacy.coverage_problems() == []


def test_every_installed_feature_app_has_privacy_hooks() -> None:
    from telegram_bot.features import feature_configs

    assert [config.label for config in feature_configs() if not config.privacy] == []
    for _label, module in privacy.privacy_modules():
        assert callable(module.export) and callable(module.erase)


def test_a_model_declared_nowhere_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    modules = privacy.privacy_modules()
    support = next(module for label, module in modules if label == "support")
    without = SimpleNamespace(**{**vars(support), "MODELS": {}})
    patched = [(label, without if label == "support" else m) for label, m in modules]
    monkeypatch.setattr(privacy, "privacy_modules", lambda: patched)
    problems = privacy.coverage_problems()
    assert "model support.Ticket is declared in no privacy module" in problems


def test_a_key_family_declared_nowhere_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    from telegram_bot.state import keys

    monkeypatch.setitem(keys.FAMILIES, "newfamily", "something a new app keeps")
    assert "key family newfamily: is declared in no privacy module" in privacy.coverage_problems()


def test_a_person_cannot_be_declared_not_personal(monkeypatch: pytest.MonkeyPatch) -> None:
    modules = privacy.privacy_modules()
    moderation = next(module for label, module in modules if label == "moderation")
    hidden = SimpleNamespace(
        **{
            **vars(moderation),
            "MODELS": {"moderation.Warning": "..."},
            "NOT_PERSONAL": {**moderation.NOT_PERSONAL, "moderation.WarnState": "say it is not"},
        }
    )
    patched = [(label, hidden if label == "moderation" else m) for label, m in modules]
    monkeypatch.setattr(privacy, "privacy_modules", lambda: patched)
    assert any("moderation.WarnState is 'not personal'" in p for p in privacy.coverage_problems())


@pytest.mark.parametrize(
    "text", ["42", "0", "-5", "1e3", "abc", "", "4503599627370496", "\uff14\uff12"]
)
def test_a_user_id_is_checked(text: str) -> None:
    if text == "42":
        assert privacy.check_user_id(text) == 42
        return
    with pytest.raises(ValueError, match="positive whole number"):
        privacy.check_user_id(text)


def test_mentions_finds_whole_numbers_only() -> None:
    assert privacy.mentions({"a": [1, {"u": 777}]}, 777)
    assert privacy.mentions("tg:777", 777)
    assert not privacy.mentions("17770", 777)
    assert not privacy.mentions(True, 1)
