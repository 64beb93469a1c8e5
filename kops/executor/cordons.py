"""Cordoning the dirs a drain empties during an execution (KIP-1066; docs/design/jbod.md §7).

Apply, before the plan's first batch (`cordon`):
1. read the cluster's finalized metadata.version (the port's `offers()`, DescribeFeatures): below 4.3-IV0 the
   controller refuses `cordoned.log.dirs`, so nothing is written and the execution says so;
2. read each drained broker's `cordoned.log.dirs` (one DescribeConfigs for all), record the value found and the
   value to write (an operator's cordons kept, the plan's dirs added) in the execution record, save it;
3. write them all (one IncrementalAlterConfigs), each broker a step of the record, so a resume after kill -9
   neither cordons twice nor forgets the value found.
The cordons stay when the execution ends: the dirs are drained, and are to stay empty.
Rollback, before its first batch (`uncordon`): each broker's value back to the one found, unless someone changed
it since kops wrote it (then it is left, and said). Before the batches, so the replicas going back may land.
Worked example: decommission broker 3 on a cluster at 4.3-IV0 with `cordoned.log.dirs` unset: the record holds
{broker 3, before null, after `*`} and broker 3 gets `cordoned.log.dirs=*`; the rollback deletes the key.
"""

from __future__ import annotations

from kops.cluster.port import Entity
from kops.executor.events import Message, Step
from kops.executor.record import ExecutionRecord
from kops.executor.running import Executor
from kops.model.cordons import CORDON_VERSION, CORDONED_LOG_DIRS, can_cordon, merged, metadata_level
from kops.model.execution import CordonRecord
from kops.model.plan import Plan

STEP = "cordon"  # the record's step for the whole cordoning (`cordon`), done once


def cordon(executor: Executor, record: ExecutionRecord, plan: Plan) -> None:
    """Steps 1-3 above; nothing when the plan drains nothing or the cordons are already written."""
    if not plan.cordons or STEP in record.steps_done:
        return
    if not record.cordons:
        level = metadata_level(executor.cluster.offers())
        if not can_cordon(level):
            executor.emit(Message(f"not cordoned ({CORDONED_LOG_DIRS} needs metadata.version {CORDON_VERSION}, "
                                  f"this cluster's is {'not known' if level is None else f'level {level}'}): new "
                                  f"topics may still land on what the plan drains"))
            record.steps_done.append(STEP)
            executor.save(record)
            return
        found = executor.cluster.read_configs([_entity(c.broker) for c in plan.cordons])
        for c in plan.cordons:
            before = found[_entity(c.broker)].get(CORDONED_LOG_DIRS)
            record.cordons.append(CordonRecord(c.broker, before, merged(before, c.dirs)))
        executor.save(record)  # the values found, before anything is written
    executor.cluster.alter_configs({_entity(c.broker): {CORDONED_LOG_DIRS: c.after} for c in record.cordons})
    record.steps_done.append(STEP)
    executor.save(record)
    executor.emit(Step("cordoned " + "; ".join(f"broker {c.broker}: {CORDONED_LOG_DIRS}={c.after}"
                                               for c in record.cordons)))


def uncordon(executor: Executor, record: ExecutionRecord) -> None:
    """A rollback's cordons back to what the execution it undoes found (see the module)."""
    if not record.cordons or STEP in record.steps_done:
        return
    now = executor.cluster.read_configs([_entity(c.broker) for c in record.cordons])
    back: dict[Entity, dict[str, str | None]] = {}
    for c in record.cordons:
        current = now[_entity(c.broker)].get(CORDONED_LOG_DIRS)
        if current == c.after:
            back[_entity(c.broker)] = {CORDONED_LOG_DIRS: c.before}
        elif current != c.before:
            executor.emit(Message(f"{CORDONED_LOG_DIRS} of broker {c.broker} is {current or 'not set'} now, not "
                                  f"what kops wrote ({c.after}): left as it is"))
    if back:
        executor.cluster.alter_configs(back)
    record.steps_done.append(STEP)
    executor.save(record)
    if back:
        executor.emit(Step("uncordoned " + "; ".join(f"broker {name}: {_said(v[CORDONED_LOG_DIRS])}"
                                                     for (_, name), v in back.items())))


def _said(restored: str | None) -> str:
    return f"{CORDONED_LOG_DIRS} removed" if restored is None else f"{CORDONED_LOG_DIRS} back to {restored}"


def _entity(broker: int) -> Entity:
    return ("brokers", str(broker))
