"""The collector pause around bulk loads gives the collector back as it found it, errors included."""

from __future__ import annotations

import gc

import pytest

from kops.bulk import collector_paused
from kops.errors import DocumentError
from kops.model import snapshot_format


def test_paused_inside_back_on_after_nested_and_after_an_error() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # only the outermost pause turns it back on
    assert gc.isenabled()
    with pytest.raises(DocumentError):
        snapshot_format.loads(b"{}", "bad.json")  # a decorated load that fails
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
