"""kops: declarative partition-layout operations for Apache Kafka."""

__version__ = "0.1.0"
