"""Kafka's Admin API as a transport for kops (kafka-python): clusters without ZooKeeper (KRaft, Kafka 4)."""
