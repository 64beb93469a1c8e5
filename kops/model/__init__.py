"""Value types every layer shares: brokers, partitions, topics, snapshots. Pure: no I/O, no other kops layer."""
