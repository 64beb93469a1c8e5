"""The goal `disk_within_broker`: each broker's log dirs evened, by disk moves (KIP-113), not by other brokers.

Cruise Control's IntraBrokerDiskUsageDistributionGoal, read in its source: per broker, the mean utilization of its
disks (bytes in use over capacity, all disks together) and a band around it, mean × (1 ± (threshold − 1) × 0.9)
(its `disk.balance.threshold`, 1.10 by default, narrowed by its BALANCE_MARGIN 0.9 so a balanced broker is not
churned); replicas go from a disk above the band to one below it, and a move is taken only when it brings the two
disks' utilizations closer (`isGettingMoreBalanced`). kops does the same on `Dirs` (kops/planner/dirs.py):
- the units are volumes, not dirs: two dirs on one filesystem share its bytes, a move between them changes nothing;
- the band's half-width is `band(tolerance)`: the playbook's tolerance where it is wider than Cruise Control's 10%;
- each step takes the fullest volume and the emptiest, and moves the replica of the fullest whose size is nearest
  to what would bring one of them to the mean, among those that bring the two closer and keep the emptiest under
  its disk limit; a step lowers Σ replicas²/total over the broker's volumes, so the walk ends;
- only replicas that stay on their broker and in the dir the snapshot read (no arrival, no move in flight) move;
- a volume's utilization is the bytes of the replicas DescribeLogDirs lists in its dirs ÷ its size
  (`Dirs.replicas`), as Cruise Control's is its replicas' sizes ÷ the disk's capacity; the filesystem's other
  bytes (total − usable − the replicas) count only against its disk limit (`Dirs.used`). Those bytes include
  the old copy a disk move leaves behind, `<topic>-<partition>.<uuid>-delete`, which Kafka deletes 60 s after
  the swap (`log.segment.delete.delay.ms`). Had the goal evened the filesystem's use, a plan made right after
  an apply would see the source dir as full as before and the target fuller: found on Kafka 4.3.1, where it
  moved 3 replicas more, then 3 back once the copies were gone. On replicas' bytes the same goals right after
  an apply move nothing, and so they do once the copies are gone. A snapshot cannot tell such a copy from a
  lasting file. So a dir whose filesystem also holds lasting files (a volume shared with the OS) is evened on
  its replicas, as Cruise Control evens it, and is never filled past its limit.
Worked example: broker 1's /d1 holds 9 GiB of replicas on 10, /d2 1 GiB on 10: the mean is 50%, the band
[45.5%, 54.5%]; replicas of /d1 nearest 4 GiB go to /d2 until both lie in the band.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping

from kops.model.partitions import TopicPartition
from kops.model.plan import DiskMove
from kops.model.snapshot import Snapshot
from kops.planner.dirs import Dirs

DISK_BALANCE_THRESHOLD = 0.10  # Cruise Control's disk.balance.threshold (1.10) as a fraction of the mean
BALANCE_MARGIN = 0.9  # Cruise Control's: the band it acts on is narrower than the threshold it reports
REASON = "rebalance disk_within_broker"


def band(tolerance: float) -> float:
    """The band's half-width as a fraction of the broker's mean utilization."""
    return max(tolerance, DISK_BALANCE_THRESHOLD) * BALANCE_MARGIN


def even_dirs(brokers: Mapping[int, Dirs], snapshot: Snapshot, after: Mapping[TopicPartition, tuple[int, ...]],
              sizes: Mapping[TopicPartition, int], within: float) -> list[DiskMove]:
    """The disk moves that bring each broker's volumes within `within` of its mean utilization (see the module);
    `after`: the plan's replicas of the partitions it moves (a disk move's `replicas`). Fills each `Dirs`."""
    moves: list[DiskMove] = []
    for broker, dirs in sorted(brokers.items()):
        start = {tp: path for tp, path in dirs.where.items()
                 if snapshot.dir_of(tp, broker) == path and snapshot.future_dir_of(tp, broker) is None}
        for tp in _walk(dirs, start, sizes, within):
            replicas = after.get(tp)
            if replicas is None:
                part = snapshot.partition(tp)
                replicas = part.replicas if part is not None else ()
            if dirs.where[tp] != start[tp]:
                moves.append(DiskMove(tp.topic, tp.partition, broker, start[tp], dirs.where[tp], tuple(replicas),
                                      sizes.get(tp, 0), REASON))
    return moves


def spread(dirs: Dirs) -> float | None:
    """Percentage points between the broker's fullest and emptiest volume, as the goal reads them (`_share`); None
    where a size is not reported."""
    units = _units(dirs)
    if units is None or len(units) < 2:
        return None
    shares = [_share(dirs, v) for v in units]
    return round(100.0 * (max(shares) - min(shares)), 2)


def _units(dirs: Dirs) -> list[int] | None:
    """The volumes a replica may go to; None where any of them has no reported size (the goal skips the broker)."""
    units = sorted({dirs.volume_of[p] for p in dirs.targets})
    if any(dirs.total[v] is None or not dirs.total[v] for v in units):
        return None
    return units


def _share(dirs: Dirs, volume: int) -> float:
    """The volume's utilization as the goal reads it: its replicas' bytes ÷ its size (see the module)."""
    total = dirs.total[volume]
    assert total
    return dirs.replicas(volume) / total


def _walk(dirs: Dirs, movable: Mapping[TopicPartition, str], sizes: Mapping[TopicPartition, int],
          within: float) -> list[TopicPartition]:
    """Move replicas of `movable` between the broker's volumes until each is in the band (or no move brings the
    fullest and the emptiest closer); the partitions moved, each once, in order."""
    units = _units(dirs)
    if units is None or len(units) < 2:
        return []
    mean = sum(dirs.replicas(v) for v in units) / sum(dirs.total[v] or 0.0 for v in units)
    hi, lo = mean * (1 + within), mean * (1 - within)
    pools: dict[int, list[tuple[int, TopicPartition]]] = {v: [] for v in units}
    for tp, path in movable.items():
        if dirs.volume_of[path] in pools and sizes.get(tp, 0) > 0:
            pools[dirs.volume_of[path]].append((sizes.get(tp, 0), tp))
    for pool in pools.values():
        pool.sort()
    moved: list[TopicPartition] = []
    for _step in range(sum(len(p) for p in pools.values())):
        src, dst = max(units, key=lambda v: (_share(dirs, v), -v)), min(units, key=lambda v: (_share(dirs, v), v))
        if _share(dirs, src) <= hi and _share(dirs, dst) >= lo:
            break
        picked = _pick(dirs, pools[src], src, dst, mean)
        if picked is None:
            break
        size, tp = picked
        pools[src].remove(picked)
        bisect.insort(pools[dst], picked)
        target = min((p for p in dirs.targets if dirs.volume_of[p] == dst), key=lambda p: (dirs.held.get(p, 0.0), p))
        dirs.put(tp, target, float(size))
        if tp not in moved:
            moved.append(tp)
    return moved


def _pick(dirs: Dirs, pool: list[tuple[int, TopicPartition]], src: int, dst: int,
          mean: float) -> tuple[int, TopicPartition] | None:
    """The replica of `src` nearest in size to the bytes that bring `src` or `dst` to the mean, among those that
    bring the two volumes' utilizations closer and fit under `dst`'s limit; None when no replica does."""
    ts, td = dirs.total[src] or 0.0, dirs.total[dst] or 0.0
    gap = min(dirs.replicas(src) - mean * ts, mean * td - dirs.replicas(dst))
    closer = 2 * (_share(dirs, src) - _share(dirs, dst)) / (1 / ts + 1 / td)  # sizes below this bring them closer
    room = dirs.limit[dst] - dirs.used(dst)  # the filesystem as it is: an old copy there still takes room
    ceiling = min(closer, room)
    at = bisect.bisect_left(pool, (gap, TopicPartition("", -1)))
    best: tuple[int, TopicPartition] | None = None
    for index in (at - 1, at):  # the sizes either side of the gap
        if 0 <= index < len(pool) and pool[index][0] < ceiling:
            candidate = pool[index]
            if best is None or abs(candidate[0] - gap) < abs(best[0] - gap):
                best = candidate
    if best is None:  # both neighbours too big: the largest under the ceiling
        under = bisect.bisect_left(pool, (ceiling, TopicPartition("", -1)))
        if under > 0 and pool[under - 1][0] < ceiling:
            best = pool[under - 1]
    return best
