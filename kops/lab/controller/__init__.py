"""The controller of the seed documents (002, 004; 000 and 003 next): pure decisions over an in-memory context.

Handlers in `decisions` never touch ZooKeeper or brokers: they read a `ControllerContext` and return
`Effects` (ZooKeeper writes, then memory updates, then one batched request per broker). The event loop that
applies them, ZooKeeper-first and fenced by the controller epoch, lives with the lab's broker processes.
"""
