"""Cruise Control's broker capacity file (`capacity.json`, `capacityJBOD.json`), read as Cruise Control writes it,
so a user moving from Cruise Control keeps their file: `kops plan --capacity FILE`, `kops rebalance --capacity FILE`.

Broker `-1` is the default for every broker not listed. `DISK` is in MB, or a map of log dir to MB (JBOD, summed);
`NW_IN` and `NW_OUT` are in KB/s; `CPU` is read and ignored. Cruise Control's units are binary (its sampler
divides bytes by `BYTES_IN_MB = 1024 * 1024` and `BYTES_IN_KB = 1024`), so kops multiplies by 2^20 and 2^10.
Figures are strings in Cruise Control's own files; JSON numbers are taken too. A capacity of 0 is refused.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from kops.formats.base import Doc, Text, fail


def _figure(value: Any) -> float:
    """A capacity figure: a non-negative finite number, written as a JSON string (Cruise Control's files) or
    number."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise fail("must be a number or a string holding one, got {value}", value=repr(value))
    try:
        number = float(value)
    except ValueError:
        raise fail("must be a number or a string holding one, got {value}", value=repr(value)) from None
    if not math.isfinite(number) or number < 0:
        raise fail("must be a finite number ≥ 0, got {value}", value=repr(value))
    return number


Figure = Annotated[float, BeforeValidator(_figure)]
def _broker_id(value: str) -> str:
    if value != "-1" and not (value.isdigit() and value.isascii() and (value == "0" or value[0] != "0")
                              and int(value) < 2**31):
        raise fail("must be a broker id or -1, got {value}", value=repr(value))
    return value


BrokerKey = Annotated[Text, AfterValidator(_broker_id)]


class CapacityDoc(Doc):
    """One broker's capacities, each a number or a string holding one (Cruise Control writes strings); a resource
    left out is not limited by this file."""

    DISK: Figure | dict[Text, Figure] | None = Field(
        default=None, description="MiB (Cruise Control's MB), or a map of log dir to MiB (JBOD: summed)")
    CPU: Figure | dict[Text, Figure] | None = Field(default=None, description="ignored by kops")
    NW_IN: Figure | None = Field(default=None, description="KiB/s (Cruise Control's KB/s) the broker may receive")
    NW_OUT: Figure | None = Field(default=None, description="KiB/s (Cruise Control's KB/s) the broker may send")

    @model_validator(mode="after")
    def _not_zero(self) -> CapacityDoc:
        """A capacity of 0 would be planned as one: nothing placed there, a follower throttle of 1 B/s."""
        for key in ("DISK", "NW_IN", "NW_OUT"):
            value = getattr(self, key)
            if value is not None and (sum(value.values()) if isinstance(value, dict) else value) == 0:
                raise fail(f"is 0{' over all its log dirs' if isinstance(value, dict) else ''}: a broker with no "
                           "capacity can hold nothing; leave the broker out of the file, or give its capacity", key)
        return self


class BrokerCapacityDoc(Doc):
    """A broker's entry; `brokerId` `-1` is the default for brokers not listed."""

    brokerId: BrokerKey = Field(description="the broker id as a string, `-1` for the default")
    capacity: CapacityDoc
    doc: Text | None = Field(default=None, description="a comment, as in Cruise Control's sample files")


class CapacityFileDoc(Doc):
    """Cruise Control's capacity file (no `format` key: the file is Cruise Control's)."""

    brokerCapacities: list[BrokerCapacityDoc] = Field(min_length=1)

    @model_validator(mode="after")
    def _brokers_once(self) -> CapacityFileDoc:
        ids = [b.brokerId for b in self.brokerCapacities]
        if len(set(ids)) != len(ids):
            raise fail("lists a broker id twice", "brokerCapacities")
        return self
