"""The cluster port (`port`) beside its two adapters: `zookeeper` (Kafka's znodes, through `kops.zk_layout`) and
`admin` (Kafka's Admin API). What kops does to a cluster, whatever the transport."""
