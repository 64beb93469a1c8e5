"""Functions a reader can name: no function body in kops/ or spark/ runs over 60 lines (the docstring and a
typer command's table of options do not count: they are declarations, not steps)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return 0 if not body else (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1


def test_no_function_body_is_longer_than_60_lines() -> None:
    long = []
    for path in sorted([*ROOT.glob("kops/**/*.py"), *ROOT.glob("spark/*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and body_lines(node) > LIMIT:
                long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({body_lines(node)} lines)")
    assert long == []
