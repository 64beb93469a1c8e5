"""KIP-179 (seed 001): topic alteration and replica progress through a broker instead of ZooKeeper.

`protocol` is the wire format shared by the lab's brokers (`kops.lab.broker.kip179_endpoint`) and kops; `client`
is what the ZooKeeper adapter uses (for the executor and `kops status`) where a cluster advertises `kip179.admin`.
"""
