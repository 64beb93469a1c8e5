"""KIP-860: AlterPartitionReassignments v1 carries `AllowReplicationFactorChange`; false makes Kafka refuse a
target whose replica count differs from the partition's current one (a concurrent RF change, a stale plan)
instead of silently changing the replication factor. kafka-python's `alter_partition_reassignments` does not
expose the field, so the request is built from kafka-python's own protocol class (no codec written here) and
sent the way its admin client sends it, to the controller. Brokers without v1 get the plain request.
"""

from __future__ import annotations

from typing import Any

from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaTP
from kafka import errors as kafka_errors
from kafka.protocol.admin import AlterPartitionReassignmentsRequest

API_KEY = AlterPartitionReassignmentsRequest.API_KEY


def offered(client: KafkaAdminClient) -> bool:
    """Every broker's ApiVersions advertise AlterPartitionReassignments v1."""
    try:
        brokers = [b["broker_id"] for b in client.describe_cluster()["brokers"]]
        return all(client.get_broker_version_data(b).api_versions.get(API_KEY, (0, 0))[1] >= 1 for b in brokers)
    except (kafka_errors.KafkaError, AttributeError, KeyError):
        return False


def guarded_reassignments(client: KafkaAdminClient,
                          wanted: dict[KafkaTP, list[int] | None]) -> tuple[dict[KafkaTP, Any], bool]:
    """Per-partition errors (None where accepted), and whether the guard was sent."""
    if not offered(client):
        return client.alter_partition_reassignments(wanted), False
    request = AlterPartitionReassignmentsRequest(
        timeout_ms=client._validate_timeout(None),  # noqa: SLF001 - kafka-python's own defaults
        topics=client._process_alter_partition_reassignments_input(wanted),  # noqa: SLF001 - as alter_partition_reassignments builds it
        allow_replication_factor_change=False)

    def top_level_error(response: Any) -> Any:
        yield kafka_errors.for_code(response.error_code)

    # kafka-python's admin client sends its own requests this way; it has no public equivalent
    response = client._manager.run(client._send_request_to_controller, request, top_level_error)  # noqa: SLF001 - see above
    results: dict[KafkaTP, Any] = {}
    for topic in response.responses:
        for partition in topic.partitions:
            err = kafka_errors.for_code(partition.error_code)
            results[KafkaTP(topic.name, partition.partition_index)] = None if err is kafka_errors.NoError else err
    return results, True
