"""Bulk work on millions of small objects, with CPython's cyclic garbage collector paused.

A snapshot or plan of a million partitions is millions of small acyclic objects (tuples, dataclasses, dicts,
pydantic models). While they are being built, every few hundred allocations make the collector walk the young
objects, and each promotion to the oldest generation makes it walk all of them again: loading a million-partition
snapshot spent half its time there (14.7 s, 7.5 s paused) and planning the million rebalance a tenth (59.5 s,
52.1 s paused; bench/RESULTS.md). Reference counting still frees everything as usual; cycles made meanwhile are
collected once the collector is back on.
"""

from __future__ import annotations

import gc
import itertools
import operator
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block (also usable as a decorator); nested pauses are harmless: only the
    outermost turns it back on, and only if it was on."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            # what the block made joins the oldest generation unscanned: enabled as it was, the collector's next
            # young collection walked every object made meanwhile (1.6 s after planning a million partitions);
            # the oldest generation is walked as usual, when it has grown by a quarter
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def ascending(keys: Iterable[Any]) -> bool:
    """Is each key less than the next? Compared in C (no Python frame per pair): a million partitions' order is
    checked in a fraction of what sorting them by name costs."""
    return all(itertools.starmap(operator.lt, itertools.pairwise(keys)))


def in_key_order(picked: list[Any], keys: Iterable[Any]) -> list[Any]:
    """`picked`, taken from `keys` in their order, sorted: as it is where `keys` ascend (a snapshot lists partitions
    so), else by a sort."""
    return picked if ascending(keys) else sorted(picked)
