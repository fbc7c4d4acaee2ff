"""Which produce entries need KIP-890 verification before the leader appends them,
and the guard around the wait (``coordinator.transaction.verification`` asks the
coordinator; ``LeaderAppends.append_records`` calls ``unverified``).

A partition's entry needs verification when its (first) batch is transactional data
from a producer with no transaction open on the partition yet: the first batch of a
transaction there. Later batches of the same transaction find it open and pass
without a round trip; so do non-transactional batches, at no cost.

The guard: the number of markers the producer has seen on the partition, taken before
the coordinator is asked. If it changed when the answer comes (a COMMIT/ABORT marker
was appended meanwhile), the transaction the partition was verified for has ended
and the entry fails with INVALID_TXN_STATE, so a late batch can never open a new,
unknown transaction after the marker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from broker.replication.partition import Partition
from protocol import records
from protocol.errors import ErrorCode

TP = tuple[str, int]


class Verifier(Protocol):
    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: list[TP]) -> dict[TP, int]: ...


def _needs(p: Partition | None, data: Any) -> tuple[int, int] | None:
    """(producer id, epoch) when ``data``'s first batch opens a transaction on ``p``."""
    if p is None or data is None or len(data) < records.HEADER_SIZE:
        return None
    try:
        header = records.read_header(data)
    except (ValueError, records.RecordError):
        return None                    # the append rejects it with the right error
    if not header.is_transactional or header.is_control or not header.has_producer_id:
        return None
    if header.producer_id in p.producers.ongoing:
        return None
    return header.producer_id, header.producer_epoch


def _guard(p: Partition, producer_id: int) -> int:
    entry = p.producers.entry(producer_id)
    return entry.markers if entry is not None else 0


async def unverified(partitions: Mapping[TP, Partition], verifier: Verifier,
                     transactional_id: str, entries: Mapping[TP, Any]) -> dict[TP, int]:
    """-> the produce error of each entry that may not be appended (see the module
    docstring); entries not listed may be appended."""
    todo: dict[tuple[int, int], list[TP]] = {}
    for tp, data in entries.items():
        who = _needs(partitions.get(tp), data)
        if who is not None:
            todo.setdefault(who, []).append(tp)
    failed: dict[TP, int] = {}
    for (pid, epoch), tps in todo.items():
        guards = {tp: _guard(partitions[tp], pid) for tp in tps}
        failed.update(await verifier.verify(transactional_id, pid, epoch, tps))
        for tp in tps:
            p = partitions.get(tp)
            if tp not in failed and (p is None or _guard(p, pid) != guards[tp]):
                failed[tp] = ErrorCode.INVALID_TXN_STATE
    return failed


__all__ = ["Verifier", "unverified"]
