"""Carrying a plan out through the cluster port: lock, drift check, record, throttles, batches, checkpoints.

`record` is the execution's record, `journal` where records live (on the cluster and beside the plan, with other
processes' cancel requests), `steps` turns a plan or a finished execution into the batches to run, `throttles`
sets and restores replication throttles, `progress`, `health` and `stall` watch a batch, `rolling` submits moves
as others finish, `order` keeps replica order through a cancellation, `stopping` says why a run stops short,
`events` are what a run reports (typed values; their JSON is `kops apply --format json`), and `executor` runs
it all. The cluster lock is the port's (`kops.cluster.port`), its holder `kops.holder`.
"""
