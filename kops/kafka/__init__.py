"""Kafka's ZooKeeper layout: paths, strict codecs, the client layer, and the snapshot reader.

The only package that imports kazoo. Codecs are pure; `client`, `reader` and `admin` do I/O.
"""
