"""Every variable the code in config/ reads is in README's configuration table and in
.env.example, so an operator never has to read the code to find a setting."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from config.env import Environment

ROOT = Path(__file__).resolve().parents[3]
# Django's own, set by the entry points; and the image build's commit (not an operator's).
NOT_SETTINGS = {"DJANGO_SETTINGS_MODULE"}
NOT_IN_ENV_EXAMPLE = {"GIT_COMMIT"}


def read_in_config() -> set[str]:
    """The model's fields, and every os.environ.get("NAME") / os.environ["NAME"] in config/."""
    names = set(Environment.model_fields) | {"ENV_FILE"}
    for path in (ROOT / "config").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in (
                "os.environ.get",
                "os.getenv",
                "os.environ.setdefault",
            ):
                argument = node.args[0] if node.args else None
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
                argument = node.slice
            else:
                continue
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                names.add(argument.value)
    return names - NOT_SETTINGS


def readme_table_names() -> set[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]+)`", first_cell))
    return names


def test_the_reader_finds_what_config_reads() -> None:
    found = read_in_config()
    assert {"TELEGRAM_BOT_TOKEN", "FEATURES_DISABLED", "PROMETHEUS_MULTIPROC_DIR"} <= found
    assert {"GIT_COMMIT", "ENV_FILE", "PORT"} <= found


def test_every_setting_is_in_the_readme_table() -> None:
    missing = read_in_config() - readme_table_names()
    assert not missing, f"not in README's configuration table: {sorted(missing)}"


def test_every_setting_is_in_env_example() -> None:
    example = (ROOT / ".env.example").read_text()
    missing = {
        name
        for name in read_in_config() - NOT_IN_ENV_EXAMPLE
        if not re.search(rf"(^|[\s#]){name}=", example, re.MULTILINE)
    }
    assert not missing, f"not in .env.example: {sorted(missing)}"
