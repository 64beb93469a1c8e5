"""Capabilities beyond Kafka's, from the seed documents, named as the lab advertises them in the `features`
map of its broker znodes (v5). A real Kafka advertises none, so kops never uses them there (docs/design/architecture.md
§2)."""

from __future__ import annotations

KIP236_CANCEL = "kip236.cancel"  # /admin/cancel_reassignment_in_progress rolls pending moves back (seed 000)
KIP236_FREEZE = "kip236.freeze"  # /admin/reassign_cancel: no reassignment starts while it exists
KIP236_QUEUE = "kip236.queue"  # /admin/reassign_partitions_queue: add moves while others are in flight
KIP253_PARTITION_DELETION = "kip253.partition.deletion"  # undeleted_partition_count, drain, delete (seed 003)
KIP179_ADMIN = "kip179.admin"  # AlterTopics and ReplicaStatus on the brokers' admin endpoint (seed 001)
