"""Every znode path kops reads or writes (docs/design/kafka-zk-layout.md §1), relative to the cluster's chroot."""

from __future__ import annotations

BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
BROKER_SEQID = "/brokers/seqid"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CLUSTER_ID = "/cluster/id"
FEATURE = "/feature"
MIGRATION = "/migration"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
DELETE_TOPICS = "/admin/delete_topics"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
CONFIG = "/config"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
DEFAULT_ENTITY = "<default>"

# The seeds' extensions, present only on clusters that advertise them (the lab).
CANCEL_REASSIGNMENT = "/admin/cancel_reassignment_in_progress"  # KIP-236 cancel
REASSIGN_CANCEL = "/admin/reassign_cancel"  # KIP-236 freeze
REASSIGN_QUEUE = "/admin/reassign_partitions_queue"  # KIP-236 queue

# kops' own znodes.
KOPS_ROOT = "/kops"
KOPS_LOCK = "/kops/lock"
KOPS_EXECUTIONS = "/kops/executions"
KOPS_ABSENT = "/kops/absent"  # a child per absent broker, its ctime the first sighting (docs/design/healing.md)
LAB_INGEST = "/kops/lab/ingest"  # the lab's steady ingest rates: {"version":1,"rates":{topic: bytes/s per partition}}

CONFIG_TYPES = ("topics", "clients", "users", "brokers", "ips")

# Created by every broker at startup (ZkData.PersistentZkPaths).
PERSISTENT_PATHS = (
    "/consumers",
    BROKER_IDS,
    BROKER_TOPICS,
    CONFIG_CHANGES,
    DELETE_TOPICS,
    BROKER_SEQID,
    ISR_CHANGE_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
) + tuple(f"{CONFIG}/{t}" for t in CONFIG_TYPES)


def broker(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic(name: str) -> str:
    return f"{BROKER_TOPICS}/{name}"


def partitions(name: str) -> str:
    return f"{BROKER_TOPICS}/{name}/partitions"


def partition(name: str, number: int) -> str:
    return f"{BROKER_TOPICS}/{name}/partitions/{number}"


def partition_state(name: str, number: int) -> str:
    return f"{BROKER_TOPICS}/{name}/partitions/{number}/state"


def config_root(entity_type: str) -> str:
    return f"{CONFIG}/{entity_type}"


def config(entity_type: str, name: str) -> str:
    return f"{CONFIG}/{entity_type}/{name}"


def delete_topic(name: str) -> str:
    return f"{DELETE_TOPICS}/{name}"


def execution(execution_id: str) -> str:
    return f"{KOPS_EXECUTIONS}/{execution_id}"
