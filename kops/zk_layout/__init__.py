"""Kafka's ZooKeeper layout: znode paths, strict codecs, the client layer, the snapshot reader, and the writes
Kafka's own tools make (`tool_writes`).

The only package that imports kazoo. Codecs are pure; `client`, `reader` and `tool_writes` do I/O. Writing a
whole cluster as its brokers would is the lab's (`kops.lab.snapshot_writer`).
"""
