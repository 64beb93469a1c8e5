"""Whatever bytes a znode holds, decoders answer with a value or a ZnodeFormatError naming the path."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kops.errors import ZnodeFormatError
from kops.zk_layout.codecs import (
    admin_requests,
    brokers,
    cluster,
    configs,
    controller,
    notifications,
    partition_state,
    topics,
)
from tests.examples import examples

DECODERS = [
    lambda d, p: brokers.decode_broker(1, d, p),
    topics.decode_topic,
    partition_state.decode_partition_state,
    controller.decode_controller,
    controller.decode_controller_epoch,
    cluster.decode_cluster_id,
    cluster.decode_feature,
    cluster.decode_migration,
    admin_requests.decode_reassignment,
    admin_requests.decode_partition_list,
    notifications.decode_config_change,
    notifications.decode_log_dir_event,
    configs.decode_config,
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["version", "partitions", "topic", "partition", "replicas", "leader", "isr", "config",
                         "endpoints", "host", "port", "id", "brokerid", "features", "status", "0", "x"]),
        children, max_size=5),
    max_leaves=20,
)


def _check(data: bytes) -> None:
    for decode in DECODERS:
        try:
            decode(data, "/some/znode")
        except ZnodeFormatError as exc:
            assert exc.path == "/some/znode" and exc.problem


@settings(max_examples=examples(300))
@given(st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    _check(data)


@settings(max_examples=examples(300))
@given(json_values)
def test_random_json_shapes(value) -> None:
    _check(json.dumps(value).encode())
