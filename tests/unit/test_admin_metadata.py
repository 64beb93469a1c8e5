"""How brokers' Metadata views merge (kops/cluster/admin/metadata.py): pure rules, so pure tests; the real-Kafka side is
tests/integration/test_admin_snapshot.py."""

from __future__ import annotations

from kops.cluster.admin.metadata import PartitionView, TopicView, ahead, merge, newer


def part(epoch: int, replicas: tuple[int, ...] = (1, 2, 3), isr: tuple[int, ...] | None = None) -> PartitionView:
    return PartitionView(replicas, replicas[0], epoch, replicas if isr is None else isr)


def topic(count: int = 2, epoch: int = 0, topic_id: str = "a") -> TopicView:
    return TopicView(topic_id, {p: part(epoch) for p in range(count)})


def test_a_higher_leader_epoch_or_added_replicas_is_newer_an_isr_alone_is_not() -> None:
    assert newer(part(3), part(2)) == 1 and newer(part(2), part(3)) == -1
    assert newer(part(2, (1, 2, 3, 4)), part(2)) == 1  # a reassignment starts without a new epoch
    assert newer(part(2, isr=(1, 2)), part(2)) is None  # an ISR grows (or, from MV 3.6, shrinks) at one epoch


def test_a_topic_only_some_brokers_list_is_left_out_and_named_when_nothing_orders_them() -> None:
    merged = merge({1: {"old": topic(), "new": topic()}, 2: {"old": topic()}})
    assert set(merged.topics) == {"old"} and [d.topic for d in merged.disagreements] == ["new"]


def test_a_creation_is_kept_when_a_broker_that_lists_it_is_provably_ahead() -> None:
    merged = merge({1: {"old": topic(epoch=5), "new": topic()}, 2: {"old": topic(epoch=4)}})
    assert set(merged.topics) == {"old", "new"} and not merged.disagreements
    assert merged.topics["old"].partitions[0].leader_epoch == 5


def test_a_deleted_topic_does_not_come_back_from_a_lagging_broker() -> None:
    merged = merge({1: {"old": topic(epoch=5)}, 2: {"old": topic(epoch=4), "gone": topic()}})
    assert set(merged.topics) == {"old"} and not merged.disagreements


def test_image_offsets_order_views_without_any_partition_evidence() -> None:
    views = {1: {"new": topic()}, 2: {}}
    assert ahead(views, {1: (40, 41), 2: (30, 30)}) == {(1, 2)}
    assert set(merge(views, {1: (40, 41), 2: (30, 30)}).topics) == {"new"}
    assert set(merge(views, {1: (10, 10), 2: (30, 30)}).topics) == set()  # deleted at 2, which is ahead


def test_a_recreated_topic_takes_the_newest_id_and_partitions_only_grow() -> None:
    merged = merge({1: {"t": topic(3, topic_id="b"), "o": topic(epoch=2)},
                    2: {"t": topic(2, topic_id="a"), "o": topic(epoch=1)}})
    assert merged.topics["t"].topic_id == "b" and len(merged.topics["t"].partitions) == 3
    grown = merge({1: {"t": topic(3)}, 2: {"t": topic(2)}})
    assert len(grown.topics["t"].partitions) == 3 and not grown.disagreements


def test_an_isr_that_differs_at_one_epoch_is_the_smaller_and_a_disagreement() -> None:
    merged = merge({1: {"t": TopicView("a", {0: part(1, isr=(1, 2, 3))})},
                    2: {"t": TopicView("a", {0: part(1, isr=(1, 2))})}})
    assert merged.topics["t"].partitions[0].isr == (1, 2) and len(merged.disagreements) == 1


def test_a_move_the_controller_lists_no_more_must_not_still_show_all_its_replicas() -> None:
    """The reader's memory between reads (kops.cluster.admin.reader.Listings): a move listed last time and not now
    ended; brokers still showing target plus removing have not applied that, which is named; its target, or its
    original replicas after a cancel, is at rest."""
    from kafka import TopicPartition as KafkaTP

    from kops.cluster.admin.reader import Listings

    tp = KafkaTP("moves", 0)
    flight = {"replicas": [3, 4, 1, 2], "adding_replicas": [3, 4], "removing_replicas": [2]}
    listings = Listings()
    listings.remember({tp: flight}, {})

    def shown(replicas: tuple[int, ...]) -> dict[str, TopicView]:
        return {"moves": TopicView("a", {0: PartitionView(replicas, 1, 1, replicas)})}

    lagging = listings.unapplied({}, shown((3, 4, 1, 2)))
    assert list(lagging) == [tp] and "still show all of [3, 4, 1, 2]" in lagging[tp]
    assert listings.unapplied({tp: flight}, shown((3, 4, 1, 2))) == {}  # still listed: in flight, as Kafka says
    assert listings.unapplied({}, shown((3, 4, 1))) == {}  # finished
    assert listings.unapplied({}, shown((1, 2))) == {}  # cancelled
    listings.remember({}, lagging)
    assert list(listings.unapplied({}, shown((3, 4, 1, 2)))) == [tp]  # kept until the brokers show the end
    listings.remember({}, {})
    assert listings.unapplied({}, shown((3, 4, 1, 2))) == {}
    # a pure addition (replication factor 2 to 3) ends on all the replicas it showed in flight: its target, at rest
    # (taken for a lagging view, every full read of an execution waited out the reader's settle time for it)
    grown = {"replicas": [1, 2, 4], "adding_replicas": [4], "removing_replicas": []}
    listings.remember({tp: grown}, {})
    assert listings.unapplied({}, shown((1, 2, 4))) == {}
