"""A static check that product code uses its libraries through their documented public API.

Product code is every first-party package: each top-level directory with an ``__init__.py`` or
an ``apps.py``, and the top-level scripts (``manage.py``), but not ``tests/`` or ``bench/``.
A module's origin is decided by its top-level package: first-party as above, the standard
library by ``sys.stdlib_module_names``, anything else third-party.

The rules, each reported as a ``Finding``:

``private-import``
    ``from x import _y``, ``import x._y``, ``from x._y import z`` where ``x`` is third-party, and
    a string constant that is a dotted path into a third-party package through a ``_`` segment
    (``"x._y.Z"`` in settings or ``import_module``).
``subclass``
    a class whose base (or metaclass) is a third-party class that is not in ``DOCUMENTED_BASES``,
    the list of classes their library documents for subclassing, each with where it says so.
    Exceptions (``BaseException`` subclasses) are allowed: a library's exception is raised and
    caught by its type, and a subclass is caught as its base.
``private-attribute``
    ``expr._name`` read or written (or ``getattr``/``setattr``/``hasattr``/``delattr`` with a
    constant ``"_name"``), single underscore, dunders excluded, where ``expr`` is not
    ``self``/``cls``, a first-party module or class, or a standard-library module (``sys``,
    ``os``: the standard library's own underscore API, ``os._exit``, is out of scope). Names in
    ``DOCUMENTED_PRIVATE_NAMES`` are public API despite the underscore (``Model._meta``).
    Inside a class with a third-party base, ``self._name`` must be defined by first-party code
    (the class or a first-party ancestor), and a first-party class must not define a ``_name``
    its third-party base already has as a class attribute (overriding a private hook; an
    attribute the base only sets on its instances is not seen: a static check's limit).

An exception is a comment on the offending line: ``# library-guard: <the documented reason>``;
``check_product()`` returns those findings too, marked with the reason, so a test can list them.
``ALLOWED_ELSEWHERE`` holds exceptions for files that cannot carry the comment.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOT_PRODUCT = frozenset({"tests", "bench"})
MARK = "library-guard:"


@dataclass(frozen=True)
class DocumentedBase:
    path: str  # the class as its documentation names it
    reason: str  # where the library documents subclassing it
    # "library": the library's own subclasses of it are documented bases too; "any": any
    # subclass, whatever package defines it
    subclasses: str = ""


DOCUMENTED_BASES: tuple[DocumentedBase, ...] = (
    # Django
    DocumentedBase("django.db.models.Model", "Django: topics/db/models"),
    DocumentedBase(
        "django.db.models.Choices", "Django: ref/models/fields, enumeration types", "library"
    ),
    DocumentedBase("django.db.migrations.Migration", "Django: topics/migrations, migration files"),
    DocumentedBase(
        "django.apps.AppConfig",
        "Django: ref/applications, 'For application users' subclasses a third-party AppConfig "
        "to rename it; ref/contrib/admin 'Overriding the default admin site' subclasses "
        "AdminConfig",
        "any",
    ),
    DocumentedBase("django.contrib.admin.ModelAdmin", "Django: ref/contrib/admin"),
    DocumentedBase(
        "django.contrib.admin.AdminSite", "Django: ref/contrib/admin, 'Customizing AdminSite'"
    ),
    DocumentedBase(
        "django.contrib.admin.TabularInline",
        "Django: ref/contrib/admin, 'InlineModelAdmin objects' (subclass TabularInline)",
    ),
    DocumentedBase("django.contrib.admin.SimpleListFilter", "Django: ref/contrib/admin/filters"),
    DocumentedBase(
        "django.contrib.auth.admin.UserAdmin",
        "Django: topics/auth/customizing, the full example subclasses UserAdmin",
    ),
    DocumentedBase(
        "django.contrib.auth.admin.GroupAdmin",
        "Django: ref/contrib/admin, a ModelAdmin; only ModelAdmin's documented options and "
        "hooks (log_addition, log_change, log_deletions) are overridden",
    ),
    DocumentedBase("django.forms.Form", "Django: topics/forms"),
    DocumentedBase("django.forms.ModelForm", "Django: topics/forms/modelforms"),
    DocumentedBase(
        "django.forms.Field",
        "Django: ref/forms/fields, 'Creating custom fields' (a Field subclass with clean(); "
        "the built-in fields share Field's documented API)",
        "library",
    ),
    DocumentedBase(
        "django.forms.Widget",
        "Django: ref/forms/widgets, the base widget classes 'may serve as a foundation for "
        "custom widgets'",
        "library",
    ),
    DocumentedBase(
        "django.core.management.base.BaseCommand", "Django: howto/custom-management-commands"
    ),
    DocumentedBase(
        "django.core.files.uploadhandler.FileUploadHandler",
        "Django: ref/files/uploads, 'Writing custom upload handlers'",
    ),
    DocumentedBase("django.views.generic.View", "Django: topics/class-based-views", "library"),
    # django-q2
    DocumentedBase(
        "django_q.admin.TaskAdmin",
        "django-q2: docs/admin.rst, 'Customize the admin UI' subclasses its admin classes",
    ),
    DocumentedBase("django_q.admin.FailAdmin", "django-q2: docs/admin.rst, as TaskAdmin"),
    DocumentedBase("django_q.admin.ScheduleAdmin", "django-q2: docs/admin.rst, as TaskAdmin"),
    DocumentedBase("django_q.admin.QueueAdmin", "django-q2: docs/admin.rst, as TaskAdmin"),
    # django-unfold
    DocumentedBase(
        "unfold.admin.ModelAdmin",
        "django-unfold: docs/configuration/quickstart, every admin class inherits "
        "unfold.admin.ModelAdmin (a third-party admin too: 'class UserAdmin(BaseUserAdmin, "
        "ModelAdmin)')",
    ),
    DocumentedBase(
        "unfold.admin.TabularInline",
        "django-unfold: docs/inlines, 'use unfold.admin.TabularInline' for inlines",
    ),
    DocumentedBase(
        "unfold.sites.UnfoldAdminSite",
        "django-unfold: docs/configuration/site, 'Custom admin site' subclasses UnfoldAdminSite",
    ),
    # django-ninja
    DocumentedBase(
        "ninja.security.APIKeyCookie",
        "django-ninja: guide/authentication, 'Subclass APIKeyQuery, APIKeyHeader or "
        "APIKeyCookie and implement authenticate'",
    ),
    DocumentedBase("ninja.Schema", "django-ninja: guide/response/schema", "library"),
    # pydantic, pydantic-settings
    DocumentedBase("pydantic.BaseModel", "pydantic: concepts/models", "library"),
    DocumentedBase("pydantic_settings.BaseSettings", "pydantic-settings: the settings class"),
    DocumentedBase(
        "pydantic_settings.PydanticBaseSettingsSource",
        "pydantic-settings: 'Adding sources' subclasses it",
    ),
    # prometheus-client
    DocumentedBase(
        "prometheus_client.registry.Collector",
        "prometheus-client: 'Custom Collectors' subclass prometheus_client.registry.Collector",
    ),
    # gunicorn
    DocumentedBase(
        "gunicorn.glogging.Logger",
        "gunicorn: settings, logger_class takes 'a class that quacks like "
        "gunicorn.glogging.Logger'; access() is that interface",
    ),
)

# Underscore names that are their library's documented public API.
DOCUMENTED_PRIVATE_NAMES: dict[str, str] = {
    "_meta": "Django: ref/models/meta, the Model _meta API",
    "_asdict": "Python: collections.namedtuple's documented methods",
    "_replace": "Python: collections.namedtuple's documented methods",
    "_fields": "Python: collections.namedtuple's documented attributes",
    "_make": "Python: collections.namedtuple's documented methods",
}

# (path, the offending source text) -> reason: exceptions for files that cannot carry the
# comment. Each entry must still match a finding (a stale one fails the guard's test).
ALLOWED_ELSEWHERE: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    rule: str  # private-import | subclass | private-attribute
    code: str  # the offending source text
    detail: str
    allowed: str | None = None  # the reason of an exception, None for a violation

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}: {self.rule}: {self.code} ({self.detail})"
        return where if self.allowed is None else f"{where} -- allowed: {self.allowed}"


# --- entry points -------------------------------------------------------------------------------
def first_party(root: Path = ROOT) -> frozenset[str]:
    """Top-level packages (a directory with ``__init__.py`` or ``apps.py``) and scripts."""
    names = {
        p.parent.name for pattern in ("*/__init__.py", "*/apps.py") for p in root.glob(pattern)
    }
    names |= {p.stem for p in root.glob("*.py")}
    return frozenset(names - NOT_PRODUCT)


def product_sources(root: Path = ROOT) -> dict[str, Path]:
    """Module name -> file of every product module."""
    found: dict[str, Path] = {}
    for top in sorted(first_party(root)):
        base = root / top
        files = [root / f"{top}.py"] if (root / f"{top}.py").is_file() else base.rglob("*.py")
        for path in files:
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def check_product(root: Path = ROOT) -> list[Finding]:
    """Every finding in the product code, exceptions included (``allowed`` set)."""
    sources = product_sources(root)
    modules = {
        name: (str(path.relative_to(root)), path.read_text(), path.name == "__init__.py")
        for name, path in sources.items()
    }
    return check_modules(modules, first_party(root))


def check_source(
    source: str, *, module: str = "planted", first_party_names: Iterable[str] = ()
) -> list[Finding]:
    """The findings of one module's source (for the guard's own tests)."""
    names = frozenset(first_party_names) | {module.split(".")[0]}
    return check_modules({module: (f"{module}.py", source, False)}, names)


def check_modules(
    modules: dict[str, tuple[str, str, bool]], first_party_names: frozenset[str]
) -> list[Finding]:
    """``modules``: name -> (path shown, source, is a package's ``__init__``)."""
    parsed = {
        name: _Module(name, path, source, is_package, first_party_names)
        for name, (path, source, is_package) in modules.items()
    }
    classes: dict[str, _Class] = {}
    for mod in parsed.values():
        classes.update(mod.classes)
    findings: list[Finding] = []
    for mod in parsed.values():
        findings.extend(mod.check(classes))
    return sorted(findings, key=lambda f: (f.path, f.line, f.rule))


# --- the module check ---------------------------------------------------------------------------
DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")
ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@dataclass
class _Class:
    key: str  # module.QualName
    module: _Module
    node: ast.ClassDef
    bases: list[str | None] = field(default_factory=list)  # resolved dotted paths
    own_private: set[str] = field(default_factory=set)


class _Module:
    def __init__(
        self, name: str, path: str, source: str, is_package: bool, first_party: frozenset[str]
    ) -> None:
        self.name = name
        self.path = path
        self.lines = source.splitlines()
        self.tree = ast.parse(source, filename=path)
        self.first_party = first_party
        self.package = name if is_package else (name.rpartition(".")[0] or name)
        self.imports: dict[str, str] = {}
        self.classes: dict[str, _Class] = {}
        self._collect(self.tree, prefix=name)

    # origin of a dotted path: first-party, stdlib or third-party
    def origin(self, dotted: str) -> str:
        top = dotted.split(".")[0]
        if top in self.first_party:
            return "first-party"
        if top in sys.stdlib_module_names:
            return "stdlib"
        return "third-party"

    def resolve(self, node: ast.expr) -> str | None:
        """The dotted path an expression names through this module's imports and classes."""
        if isinstance(node, ast.Name):
            if node.id in self.imports:
                return self.imports[node.id]
            key = f"{self.name}.{node.id}"
            return key if key in self.classes else None
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    def absolute(self, module: str | None, level: int) -> str:
        if level == 0:
            return module or ""
        parts = self.package.split(".") if self.package else []
        parts = parts[: len(parts) - (level - 1)] if level > 1 else parts
        return ".".join([*parts, module] if module else parts)

    def _collect(self, tree: ast.AST, prefix: str) -> None:
        """Imports anywhere in the module (function-level ones too) and the classes."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.imports[top] = top
            elif isinstance(node, ast.ImportFrom):
                base = self.absolute(node.module, node.level)
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{base}.{alias.name}"
        self._collect_classes(tree, prefix)

    def _collect_classes(self, node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                # Classes are keyed by module and name: nested and function-local classes too.
                key = f"{self.name}.{child.name}"
                self.classes[key] = _Class(key, self, child, own_private=_own_private(child))
                self._collect_classes(child, prefix)
            else:
                self._collect_classes(child, prefix)

    def check(self, classes: dict[str, _Class]) -> list[Finding]:
        for cls in self.classes.values():
            cls.bases = [self.resolve(b) for b in cls.node.bases]
        checker = _Checker(self, classes)
        checker.visit(self.tree)
        return checker.findings

    def exception(self, node: ast.AST) -> str | None:
        """The reason of a ``# library-guard:`` comment on the node's lines, if any."""
        first = getattr(node, "lineno", 1)
        last = getattr(node, "end_lineno", first) or first
        if isinstance(node, ast.ClassDef):
            last = node.body[0].lineno - 1 if node.body else first
        for line in self.lines[first - 1 : last]:
            if MARK in line:
                return line.split(MARK, 1)[1].strip() or "(no reason given)"
        return None


def _own_private(node: ast.ClassDef) -> set[str]:
    """Underscore names a class defines: in its body, or as ``self._x``/``cls._x`` stores."""
    names: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.ctx, ast.Store)
            and isinstance(sub.value, ast.Name)
            and sub.value.id in ("self", "cls")
        ):
            names.add(sub.attr)
    return {n for n in names if is_private(n)}


class _Checker(ast.NodeVisitor):
    def __init__(self, module: _Module, classes: dict[str, _Class]) -> None:
        self.module = module
        self.classes = classes
        self.findings: list[Finding] = []
        self.class_stack: list[_Class] = []

    def report(self, node: ast.AST, rule: str, detail: str) -> None:
        code = ast.unparse(node) if not isinstance(node, ast.ClassDef) else f"class {node.name}"
        code = code if len(code) <= 120 else code[:117] + "..."
        allowed = self.module.exception(node)
        if allowed is None:
            allowed = ALLOWED_ELSEWHERE.get((self.module.path, code))
        line = getattr(node, "lineno", 0)
        self.findings.append(Finding(self.module.path, line, rule, code, detail, allowed))

    # (a) private imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if self.module.origin(alias.name) == "third-party" and any(
                is_private(part) for part in alias.name.split(".")
            ):
                self.report(node, "private-import", f"imports {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self.module.absolute(node.module, node.level)
        if node.level or self.module.origin(base) != "third-party":  # relative: first-party
            return
        if any(is_private(part) for part in base.split(".")):
            self.report(node, "private-import", f"imports from the private module {base}")
        for alias in node.names:
            if is_private(alias.name):
                self.report(node, "private-import", f"imports {base}.{alias.name}")

    def visit_Constant(self, node: ast.Constant) -> None:
        if (
            isinstance(node.value, str)
            and DOTTED.fullmatch(node.value)
            and self.module.origin(node.value) == "third-party"
            and any(is_private(part) for part in node.value.split("."))
            and _installed(node.value.split(".")[0])
        ):
            self.report(node, "private-import", f"names the private path {node.value}")

    # (b) subclasses
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        cls = self.module.classes[f"{self.module.name}.{node.name}"]
        bases = list(zip(node.bases, cls.bases, strict=True))
        bases += [
            (k.value, self.module.resolve(k.value)) for k in node.keywords if k.arg == "metaclass"
        ]
        for _expr, dotted in bases:
            if dotted is None or self.module.origin(dotted) != "third-party":
                continue
            problem = _undocumented_base(dotted)
            if problem:
                self.report(node, "subclass", f"{dotted}: {problem}")
        for name in sorted(cls.own_private):
            owner = self._third_party_owner(cls, name)
            if owner:
                self.report(node, "private-attribute", f"overrides {owner}.{name}")
        self.class_stack.append(cls)
        self.generic_visit(node)
        self.class_stack.pop()

    # (c) private attributes
    def visit_Attribute(self, node: ast.Attribute) -> None:
        if is_private(node.attr):
            self._private_access(node, node.value, node.attr)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if (
            isinstance(node.func, ast.Name)
            and node.func.id in ATTRIBUTE_FUNCTIONS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and is_private(node.args[1].value)
        ):
            self._private_access(node, node.args[0], node.args[1].value)
        self.generic_visit(node)

    def _private_access(self, node: ast.AST, owner: ast.expr, name: str) -> None:
        if name in DOCUMENTED_PRIVATE_NAMES:
            return
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            cls = self.class_stack[-1] if self.class_stack else None
            if (
                cls is not None
                and self._has_third_party_base(cls)
                and name not in self._first_party_private(cls)
            ):
                self.report(node, "private-attribute", f"{name} of a third-party base")
            return
        dotted = self.module.resolve(owner)
        if dotted is not None and self.module.origin(dotted) in ("first-party", "stdlib"):
            return
        self.report(node, "private-attribute", f"{name} of an object the product does not own")

    # class ancestry
    def _ancestry(self, cls: _Class, seen: set[str] | None = None) -> Iterable[tuple[str, Any]]:
        """(dotted, first-party _Class or None) for every ancestor reachable statically."""
        seen = set() if seen is None else seen
        for dotted in cls.bases:
            if dotted is None or dotted in seen:
                continue
            seen.add(dotted)
            parent = self.classes.get(dotted)
            if parent is None and self.module.origin(dotted) == "first-party":
                parent = self.classes.get(_reexported(dotted, self.classes))
            yield dotted, parent
            if parent is not None:
                if not parent.bases:
                    parent.bases = [parent.module.resolve(b) for b in parent.node.bases]
                yield from self._ancestry(parent, seen)

    def _has_third_party_base(self, cls: _Class) -> bool:
        return any(
            parent is None and self.module.origin(d) == "third-party"
            for d, parent in self._ancestry(cls)
        )

    def _first_party_private(self, cls: _Class) -> set[str]:
        names = set(cls.own_private)
        for _dotted, parent in self._ancestry(cls):
            if parent is not None:
                names |= parent.own_private
        return names

    def _third_party_owner(self, cls: _Class, name: str) -> str | None:
        for dotted, parent in self._ancestry(cls):
            if parent is None and self.module.origin(dotted) == "third-party":
                base = _load(dotted)
                if base is not None and hasattr(base, name):
                    return dotted
        return None


def _reexported(dotted: str, classes: dict[str, _Class]) -> str:
    """A first-party class imported through a package that re-exports it: match by name."""
    name = dotted.rpartition(".")[2]
    prefix = dotted.split(".")[0] + "."
    matches = [k for k in classes if k.startswith(prefix) and k.rpartition(".")[2] == name]
    return matches[0] if len(matches) == 1 else dotted


@functools.cache
def _installed(top: str) -> bool:
    return importlib.util.find_spec(top) is not None


@functools.cache
def _load(dotted: str) -> Any:
    """The object a dotted path names (a module's attribute, or a module), None if none."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


@functools.cache
def _documented() -> tuple[tuple[type, DocumentedBase], ...]:
    loaded = []
    for entry in DOCUMENTED_BASES:
        base = _load(entry.path)
        if not isinstance(base, type):
            raise LookupError(f"DOCUMENTED_BASES names {entry.path}, which is not a class")
        loaded.append((base, entry))
    return tuple(loaded)


def _undocumented_base(dotted: str) -> str | None:
    """None when ``dotted`` is a documented base; otherwise why not."""
    base = _load(dotted)
    if not isinstance(base, type):
        return "cannot import it to check it"
    if issubclass(base, BaseException):
        return None
    for documented, entry in _documented():
        if base is documented or (
            entry.subclasses
            and issubclass(base, documented)
            and (entry.subclasses == "any" or _top(base.__module__) == _top(documented.__module__))
        ):
            return None
    return "not documented for subclassing (add it to DOCUMENTED_BASES with where it says so)"


def _top(module: str) -> str:
    return module.split(".")[0]
