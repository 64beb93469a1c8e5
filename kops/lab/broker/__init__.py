"""The lab broker: one OS process per broker, obeying the controller over a loopback RPC.

Data is simulated (a replica is a log of byte offsets), protocol is real: registration in ZooKeeper,
LeaderAndIsr / StopReplica / UpdateMetadata with epoch fencing, follower fetches limited by bandwidth and by
the replication throttles Kafka's tools write, ISR changes written with a version check and announced with
`isr_change_` notifications. Every broker also runs a controller (only one is active at a time).
"""
