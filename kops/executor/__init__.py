"""Carrying a plan out through the controller: lock, drift check, record, throttles, batches, checkpoints.

`record` is the execution's journal (in ZooKeeper and beside the plan), `lock` the cluster lock, `steps`
turns a plan or a finished execution into the batches to run, `throttles` sets and restores replication
throttles, `progress` and `health` watch a batch, `executor` runs it all, `control` is how other processes
ask a running execution to stop.
"""
