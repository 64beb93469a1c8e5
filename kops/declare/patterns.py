"""Ansible host patterns: which clusters a play (or `-l/--limit`) targets.

`all` or `*`; host or group names; wildcards (`prod-*`); regular expressions (`~kafka-(eu|us)`); lists joined
by `:` or `,`. Terms combine as Ansible does: first the union of the plain terms, then `&term` intersections,
then `!term` exclusions, whatever order they are written in.
"""

from __future__ import annotations

import fnmatch
import re

from kops.declare.inventory import Inventory


class PatternError(ValueError):
    pass


def _split(pattern: str) -> list[str]:
    # ':' separates terms except inside a regex term; ',' always does.
    terms: list[str] = []
    for chunk in pattern.split(","):
        chunk = chunk.strip()
        if chunk.startswith("~"):
            terms.append(chunk)
            continue
        terms.extend(t.strip() for t in chunk.split(":"))
    return [t for t in terms if t]


def _match(term: str, inventory: Inventory) -> set[str]:
    if term in ("all", "*"):
        return set(inventory.hosts)
    if term.startswith("~"):
        try:
            regex = re.compile(term[1:])
        except re.error as exc:
            raise PatternError(f"invalid regular expression in host pattern {term!r}: {exc}") from None
        names = {h for h in inventory.hosts if regex.search(h)}
        for group in inventory.groups:
            if regex.search(group):
                names |= inventory.group_members(group)
        return names
    if any(ch in term for ch in "*?["):
        names = {h for h in inventory.hosts if fnmatch.fnmatchcase(h, term)}
        for group in inventory.groups:
            if fnmatch.fnmatchcase(group, term):
                names |= inventory.group_members(group)
        return names
    if term in inventory.groups:
        return inventory.group_members(term)
    if term in inventory.hosts:
        return {term}
    return set()


def select_hosts(pattern: str, inventory: Inventory) -> tuple[list[str], list[str]]:
    """Hosts matching `pattern` (sorted), and the terms that matched nothing (for a warning)."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise PatternError("empty host pattern")
    union: set[str] = set()
    intersections: list[set[str]] = []
    exclusions: set[str] = set()
    unmatched: list[str] = []
    has_union = False
    for term in _split(pattern):
        if term.startswith("&"):
            matched = _match(term[1:], inventory)
            intersections.append(matched)
        elif term.startswith("!"):
            matched = _match(term[1:], inventory)
            exclusions |= matched
        else:
            has_union = True
            matched = _match(term, inventory)
            union |= matched
        if not matched:
            unmatched.append(term.lstrip("&!"))
    selected = union if has_union else set(inventory.hosts)
    for group in intersections:
        selected &= group
    selected -= exclusions
    return sorted(selected), unmatched
