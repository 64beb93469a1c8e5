"""One codec module per znode family of docs/design/kafka-zk-layout.md §1, plus Kafka's tool formats.

Decoders accept what Kafka accepts (any key order; unknown fields where Kafka ignores them; strict types
where Kafka is strict) and raise `ZnodeFormatError(path, problem)` otherwise. Encoders write compact JSON
that Kafka reads back identically.
"""
