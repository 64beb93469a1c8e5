"""KIP-179 (seed 001): topic alteration and replica progress through a broker instead of ZooKeeper.

`protocol` is the wire format shared by the lab's brokers and kops; `alteration` decides, purely, what an
AlterTopics request asks for; `client` is what the executor and `kops status` use against a cluster that
advertises `kip179.admin`.
"""
