"""The lab: a local cluster (a real ZooKeeper, and broker processes with the seeds' controller) for the demo,
the tests and rehearsals. Talks to ZooKeeper only through `kops.zk_layout`."""
