"""Shared plumbing for decoders: turning shape errors into errors that name the znode."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kops.errors import ZnodeFormatError
from kops.jsondoc import ShapeError, as_object, parse_json


@contextmanager
def znode(path: str) -> Iterator[None]:
    """Run a decoder body; any ShapeError becomes a ZnodeFormatError for `path`."""
    try:
        yield
    except ShapeError as exc:
        raise ZnodeFormatError(path, str(exc)) from None


def json_object(data: bytes | None, path: str) -> dict[str, Any]:
    """The znode's data as a JSON object; empty data is an error (callers that allow it check first)."""
    if data is None or len(data) == 0:
        raise ZnodeFormatError(path, "znode has no data, expected a JSON object")
    with znode(path):
        return as_object(parse_json(data), "document")
