"""The diff engine: `plan(desired, snapshot, sizes, policy) -> Plan`. Pure and deterministic: no I/O, no
clocks, no randomness; the same inputs give the same plan, byte for byte."""
