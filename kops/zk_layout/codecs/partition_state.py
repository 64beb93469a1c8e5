"""`/brokers/topics/<t>/partitions/<p>/state`: leader and ISR (spec §1.7), with KIP-253 epoch maps (seed 003)."""

from __future__ import annotations

from typing import Any

from kops.errors import ZnodeFormatError
from kops.jsondoc import as_int, as_int_key, as_int_list, as_object, dumps_compact, field
from kops.model.partitions import PartitionState
from kops.zk_layout.codecs.decoding import json_object, znode

AFTER_CREATION = "leaderEpochAfterCreation"
BEFORE_DELETION = "leaderEpochBeforeDeletion"


def _epoch_map(raw: Any, at: str) -> dict[int, int]:
    if raw is None:
        return {}
    return {as_int_key(k, at): as_int(v, f"{at}.{k}") for k, v in as_object(raw, at).items()}


def decode_partition_state(data: bytes | None, path: str) -> PartitionState:
    doc = json_object(data, path)
    with znode(path):
        recovery = as_int(doc.get("leader_recovery_state", 0), "leader_recovery_state")
        if recovery not in (0, 1):
            raise ZnodeFormatError(path, f"leader_recovery_state must be 0 or 1, got {recovery}")
        return PartitionState(
            leader=as_int(field(doc, "leader", ""), "leader"),
            leader_epoch=as_int(field(doc, "leader_epoch", ""), "leader_epoch"),
            isr=as_int_list(field(doc, "isr", ""), "isr"),
            controller_epoch=as_int(field(doc, "controller_epoch", ""), "controller_epoch"),
            leader_recovery_state=recovery,
            version=doc["version"] if type(doc.get("version")) is int else 1,
            leader_epoch_after_creation=_epoch_map(doc.get(AFTER_CREATION), AFTER_CREATION),
            leader_epoch_before_deletion=_epoch_map(doc.get(BEFORE_DELETION), BEFORE_DELETION),
        )


def encode_partition_state(state: PartitionState) -> bytes:
    """Kafka's field set; `leader_recovery_state` only when RECOVERING; epoch maps only when non-empty."""
    if not (state.leader_recovery_state or state.leader_epoch_after_creation or state.leader_epoch_before_deletion):
        # the common shape, formatted directly (a failover encodes 10,000 of these): same bytes as below
        isr = ",".join(str(int(r)) for r in state.isr)
        return (f'{{"controller_epoch":{int(state.controller_epoch)},"leader":{int(state.leader)},'
                f'"version":{int(state.version)},"leader_epoch":{int(state.leader_epoch)},"isr":[{isr}]}}').encode()
    doc: dict[str, Any] = {
        "controller_epoch": state.controller_epoch,
        "leader": state.leader,
        "version": state.version,
    }
    if state.leader_recovery_state:
        doc["leader_recovery_state"] = state.leader_recovery_state
    doc["leader_epoch"] = state.leader_epoch
    doc["isr"] = list(state.isr)
    if state.leader_epoch_after_creation:
        doc[AFTER_CREATION] = {str(p): e for p, e in sorted(state.leader_epoch_after_creation.items())}
    if state.leader_epoch_before_deletion:
        doc[BEFORE_DELETION] = {str(p): e for p, e in sorted(state.leader_epoch_before_deletion.items())}
    return dumps_compact(doc)
