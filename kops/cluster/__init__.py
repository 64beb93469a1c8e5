"""The cluster port: what kops does to a cluster, whatever the transport (ZooKeeper or Kafka's Admin API)."""
