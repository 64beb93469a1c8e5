"""Jinja2 for declarations, the way Ansible users expect it, in a sandbox.

- Sandboxed: templates cannot reach Python internals (`{{ ''.__class__ }}` is refused).
- Strict: an undefined variable is an error naming the variable and the FILE:LINE of the template.
- Native where Ansible is: a value that is exactly one expression, `"{{ partitions }}"`, keeps its type (a
  list for `loop:`, an int for `partitions`); anything else renders to a string.
- Ansible's common filters (default, int, bool, lower, upper, join, to_json, to_yaml, regex_replace, ...), a
  `size` filter ("1GiB" -> 1073741824) and a `rate` filter ("50MiB/s" -> bytes/s), and the lookups
  `lookup('env', NAME)` and `lookup('file', PATH)`.
- Secrets: a value that used `lookup('env', ...)` becomes a `Secret`, which kops never prints, logs or plans.

Compiled templates are cached by their source text: a playbook of 10,000 topics across many clusters
compiles each distinct template once.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import yaml
from jinja2 import StrictUndefined, TemplateError, UndefinedError
from jinja2.exceptions import SecurityError, TemplateSyntaxError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from kops.model.desired import Secret
from kops.units import parse_rate, parse_size

_SINGLE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>.*?)\}\}\s*$", re.DOTALL)
# Text with only plain `{{ name }}` substitutions: rendered without compiling a template (same output).
_PLAIN_NAME = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_MIN_SECRET_SUBSTRING = 4


class TemplateProblem(Exception):
    """A template failed; the message says why (the caller adds the location)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def is_template(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value or "{#" in value)


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("yes", "on", "1", "true", "y", "t"):
        return True
    if text in ("no", "off", "0", "false", "n", "f", "", "none"):
        return False
    raise TemplateProblem(f"cannot convert {value!r} to a boolean")


def _to_int(value: Any, default: int = 0, base: int = 10) -> int:
    try:
        if isinstance(value, str) and base != 10:
            return int(value, base)
        return int(float(value)) if isinstance(value, (str, float)) and str(value).strip() else int(value)
    except (TypeError, ValueError):
        return default


def _regex_replace(value: Any, pattern: str, replacement: str = "", ignorecase: bool = False) -> str:
    flags = re.IGNORECASE if ignorecase else 0
    return re.sub(pattern, replacement, str(value), flags=flags)


def _regex_search(value: Any, pattern: str, ignorecase: bool = False) -> str | None:
    match = re.search(pattern, str(value), flags=re.IGNORECASE if ignorecase else 0)
    return match.group(0) if match else None


def _size(value: Any) -> int:
    try:
        return parse_size(value)
    except ValueError as exc:
        raise TemplateProblem(str(exc)) from None


def _rate(value: Any) -> int:
    try:
        return parse_rate(value)
    except ValueError as exc:
        raise TemplateProblem(str(exc)) from None


def _to_yaml(value: Any) -> str:
    return str(yaml.safe_dump(value, default_flow_style=True)).strip()


class Renderer:
    """Renders values for one file (lookups of relative files resolve against `base_dir`)."""

    def __init__(self, base_dir: Path, environ: dict[str, str] | None = None) -> None:
        self.base_dir = base_dir
        self.environ = dict(os.environ) if environ is None else environ
        self._used_secret = False
        env = ImmutableSandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=False, autoescape=False)
        env.filters.update(
            {
                "bool": _to_bool,
                "int": _to_int,
                "to_json": lambda v, **kw: json.dumps(v, sort_keys=True, **kw),
                "to_nice_json": lambda v: json.dumps(v, sort_keys=True, indent=4),
                "from_json": json.loads,
                "to_yaml": _to_yaml,
                "regex_replace": _regex_replace,
                "regex_search": _regex_search,
                "size": _size,
                "rate": _rate,
                "mandatory": lambda v: v,
                "quote": lambda v: "'" + str(v).replace("'", "'\"'\"'") + "'",
                "basename": lambda v: os.path.basename(str(v)),
                "dirname": lambda v: os.path.dirname(str(v)),
            }
        )
        self.secrets: set[str] = set()
        env.globals["lookup"] = self._lookup
        env.globals["query"] = lambda *a, **kw: [self._lookup(*a, **kw)]
        self.env = env
        self._templates: dict[str, Any] = {}
        self._expressions: dict[str, Any] = {}

    def _lookup(self, kind: str, *terms: str, default: Any = None) -> Any:
        if kind == "env":
            if len(terms) != 1:
                raise TemplateProblem("lookup('env', NAME) takes one variable name")
            self._used_secret = True
            value = self.environ.get(terms[0])
            if value is not None:
                self.secrets.add(value)
            if value is None:
                if default is not None:
                    return default
                raise TemplateProblem(
                    f"environment variable {terms[0]} is not set",
                    hint=f"export {terms[0]}=..., or give a default: lookup('env', '{terms[0]}', default='')",
                )
            return value
        if kind == "file":
            if len(terms) != 1:
                raise TemplateProblem("lookup('file', PATH) takes one path")
            path = Path(terms[0])
            if not path.is_absolute():
                path = self.base_dir / path
            try:
                return path.read_text().rstrip("\n")
            except OSError as exc:
                if default is not None:
                    return default
                raise TemplateProblem(f"lookup('file', {terms[0]!r}): {exc.strerror or exc}") from None
        raise TemplateProblem(f"unknown lookup {kind!r}",
                              hint="kops supports lookup('env', ...) and lookup('file', ...)")

    def render(self, value: Any, variables: dict[str, Any], memo: dict[str, Any] | None = None) -> Any:
        """Render a string template (native type for a lone expression); other values pass through.

        `memo` caches results for one unchanging `variables` mapping (a cluster's), so a template shared by
        thousands of topics renders once per cluster.
        """
        if not is_template(value):
            return value
        if memo is not None and value in memo:
            return memo[value]
        result = self._render(value, variables)
        if isinstance(result, str) and not isinstance(result, Secret) and self._contains_secret(result):
            result = Secret(result)
        if memo is not None:
            memo[value] = result
        return result

    def _contains_secret(self, text: str) -> bool:
        """Taint by value: a result that embeds a secret's text is a secret too, however it got there."""
        for secret in self.secrets:
            if secret and (text == secret or (len(secret) >= _MIN_SECRET_SUBSTRING and secret in text)):
                return True
        return False

    def _render(self, value: str, variables: dict[str, Any]) -> Any:
        """A plain `{{ name }}` substitution without Jinja2 where possible (the common case, and fast), else a
        single expression (keeps its type: a list stays a list), else a whole template (a string)."""
        self._used_secret = False
        try:
            plain = self._plain(value, variables)
            result = plain[0] if plain else self._evaluate(value, variables)
        except TemplateProblem:
            raise
        except UndefinedError as exc:
            raise TemplateProblem(f"undefined variable: {exc.message}",
                                  hint="define it in vars, the inventory or -e") from None
        except SecurityError as exc:
            raise TemplateProblem(f"template refused by the sandbox: {exc}") from None
        except TemplateSyntaxError as exc:
            raise TemplateProblem(f"template syntax error: {exc.message}") from None
        except TemplateError as exc:
            raise TemplateProblem(f"template error: {exc}") from None
        except (TypeError, ValueError, ArithmeticError, LookupError, AttributeError) as exc:
            raise TemplateProblem(f"template error: {type(exc).__name__}: {exc}") from None
        if self._used_secret and isinstance(result, str):
            result = Secret(result)
        return result

    @staticmethod
    def _plain(value: str, variables: dict[str, Any]) -> tuple[Any] | None:
        """(the result,) when `value` only substitutes plain names; None when Jinja2 must render it."""
        if "{%" in value or "{#" in value:
            return None
        names = _PLAIN_NAME.findall(value)
        remainder = _PLAIN_NAME.sub("", value)
        if not names or "{{" in remainder or "}}" in remainder:
            return None
        missing = [n for n in names if n not in variables]
        if missing:
            raise UndefinedError(f"'{missing[0]}' is undefined")
        if len(names) == 1 and _SINGLE_EXPRESSION.match(value):
            return (variables[names[0]],)
        return (_PLAIN_NAME.sub(lambda m: str(variables[m.group(1)]), value),)

    def _evaluate(self, value: str, variables: dict[str, Any]) -> Any:
        match = _SINGLE_EXPRESSION.match(value)
        if match and "{{" not in match.group("expr") and "}}" not in match.group("expr"):
            compiled = self._expressions.get(value)
            if compiled is None:
                compiled = self.env.compile_expression(match.group("expr"), undefined_to_none=False)
                self._expressions[value] = compiled
            result = compiled(**variables)
            if isinstance(result, StrictUndefined):
                str(result)  # raises UndefinedError with the variable's name
            return result
        template = self._templates.get(value)
        if template is None:
            template = self.env.from_string(value)
            self._templates[value] = template
        return template.render(**variables)

    def render_deep(self, value: Any, variables: dict[str, Any], memo: dict[str, Any] | None = None) -> Any:
        """Render every string inside lists and mappings (keys of mappings too)."""
        if isinstance(value, dict):
            return {self.render(k, variables, memo): self.render_deep(v, variables, memo) for k, v in value.items()}
        if isinstance(value, list):
            return [self.render_deep(v, variables, memo) for v in value]
        return self.render(value, variables, memo)


def referenced_names(renderer: Renderer, value: Any) -> set[str]:
    """Variable names the templates inside `value` refer to."""
    from jinja2 import meta

    names: set[str] = set()
    if isinstance(value, dict):
        for v in value.values():
            names |= referenced_names(renderer, v)
    elif isinstance(value, list):
        for v in value:
            names |= referenced_names(renderer, v)
    elif is_template(value):
        try:
            names |= meta.find_undeclared_variables(renderer.env.parse(value))
        except TemplateSyntaxError as exc:
            raise TemplateProblem(f"template syntax error: {exc.message}") from None
    return names


def resolve_variables(renderer: Renderer, raw: dict[str, Any], fail: Any) -> dict[str, Any]:
    """Render variables that refer to other variables, in dependency order, as Ansible resolves them lazily.

    `fail(name, problem)` is called for a variable that cannot be rendered; it is then left out, so one bad
    variable is one problem, reported where it is used only if it is used.
    """
    resolved: dict[str, Any] = {}
    state: dict[str, str] = {}

    def visit(name: str) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "active":
            raise TemplateProblem(f"variable {name!r} refers to itself (through other variables)")
        state[name] = "active"
        value = raw[name]
        try:
            for dep in sorted(referenced_names(renderer, value)):
                if dep in raw and dep != name:
                    visit(dep)
            resolved[name] = renderer.render_deep(value, resolved)
        except TemplateProblem as exc:
            fail(name, exc)
        state[name] = "done"

    for name in raw:
        try:
            visit(name)
        except TemplateProblem as exc:
            fail(name, exc)
            state[name] = "done"
    return resolved
