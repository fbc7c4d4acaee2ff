"""The leader fence (broker.replication.leader_fence) on a real ReplicaManager with
fakes around it: a leader that lost ZooKeeper refuses appends (acks=1 included) once
an ISR follower stops fetching, keeps writing while they all fetch, lifts the fence
when the connection is back, and after a session expiry waits for LeaderAndIsr."""

from __future__ import annotations

import asyncio
from pathlib import Path

from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.unit.broker.replication.fakes import FakeBroker

TP = ("t", 0)


def produce(b: FakeBroker, acks: int = 1) -> int:
    batch = build_batch([(None, b"v", b.clock())])
    results = asyncio.run(b.replicas.appends.append_records(acks, 1000, {TP: batch}))
    return results[TP].error


def follower_fetches(b: FakeBroker, replica: int) -> None:
    p = b.replicas.partitions[TP]
    p.followers[replica].last_fetch_ms = b.clock()


def test_fenced_once_an_isr_follower_goes_quiet(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t", replicas=(1, 2))
    fence = b.replicas.fence
    fence.quiet_ms = 1000
    follower_fetches(b, 2)
    fence.connection_lost()
    assert produce(b) == ErrorCode.NONE             # the follower still fetches: go on
    b.clock.advance(1500)
    assert produce(b) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert produce(b, acks=0) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    follower_fetches(b, 2)
    assert produce(b) == ErrorCode.NONE             # it fetches again
    b.clock.advance(1500)
    fence.connection_back()
    assert produce(b) == ErrorCode.NONE             # connection back, same session


def test_a_partition_without_followers_is_never_fenced_by_connection_loss(tmp_path: Path
                                                                         ) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t")
    b.replicas.fence.connection_lost()
    b.clock.advance(60_000)
    assert produce(b) == ErrorCode.NONE


def test_session_expiry_waits_for_the_controllers_leader_and_isr(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t")
    fence = b.replicas.fence
    fence.session_expired([TP])
    fence.connection_back()                         # registered again on a new session
    assert produce(b) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    b.lead("t")                                     # the controller's LeaderAndIsr
    assert produce(b) == ErrorCode.NONE


def test_fenced_is_the_predicate_the_metadata_answer_uses(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t", replicas=(1, 2))
    fence, p = b.replicas.fence, b.replicas.partitions[TP]
    fence.quiet_ms = 1000
    follower_fetches(b, 2)
    assert not fence.fenced(TP, p, b.clock())
    fence.connection_lost()
    assert not fence.fenced(TP, p, b.clock())      # the follower still fetches
    b.clock.advance(1500)
    assert fence.fenced(TP, p, b.clock())
    fence.connection_back()
    assert not fence.fenced(TP, p, b.clock())
    fence.session_expired([TP])
    assert fence.fenced(TP, p, b.clock())          # until the controller's LeaderAndIsr
    fence.connection_back()
    fence.leader_and_isr(TP)
    assert not fence.fenced(TP, p, b.clock())


def test_a_waiting_acks_all_produce_is_answered_once_its_partition_is_fenced(
        tmp_path: Path) -> None:
    """A leader cut off while acks=all produces wait for its followers: the fence sweep
    answers them REQUEST_TIMED_OUT ("possibly persisted"; the client's retry is refused
    NOT_LEADER_OR_FOLLOWER and it goes to the new leader) instead of
    holding them for their whole request timeout."""
    b = FakeBroker(tmp_path)
    b.lead("t", replicas=(1, 2))
    fence = b.replicas.fence
    fence.quiet_ms = 1000
    follower_fetches(b, 2)

    async def scenario() -> tuple[int, int, int, bool, int]:
        batch = build_batch([(None, b"v", b.clock())])
        waiting = asyncio.ensure_future(b.replicas.appends.append_records(-1, 30_000, {TP: batch}))
        await asyncio.sleep(0.01)
        swept_before = b.replicas.sweep_fenced()      # no fence: nothing to do
        fence.connection_lost()
        swept_quiet = b.replicas.sweep_fenced()       # followers fetched lately: not fenced
        await asyncio.sleep(0.01)
        still_waiting = not waiting.done()
        b.clock.advance(1500)                         # ... and now they are quiet
        swept = b.replicas.sweep_fenced()
        results = await asyncio.wait_for(waiting, 1.0)
        return swept_before, swept_quiet, swept, still_waiting, results[TP].error

    swept_before, swept_quiet, swept, still_waiting, error = asyncio.run(scenario())
    assert (swept_before, swept_quiet, swept) == (0, 0, 1)
    assert still_waiting
    assert error == ErrorCode.REQUEST_TIMED_OUT        # "possibly persisted": it is


def test_a_produce_committed_before_the_fence_is_still_acknowledged(tmp_path: Path) -> None:
    """The fence answers only what is not committed: a batch the followers already
    have (HW past it) is acknowledged even if the fence is up by the time it is checked."""
    b = FakeBroker(tmp_path)
    b.lead("t", replicas=(1, 2))
    fence = b.replicas.fence
    fence.quiet_ms = 1000
    follower_fetches(b, 2)
    p = b.replicas.partitions[TP]
    offset = p.high_watermark
    fence.connection_lost()
    b.clock.advance(1500)
    assert fence.fenced(TP, p, b.clock())
    assert b.replicas.appends._enough_replicas(TP, offset) == (True, ErrorCode.NONE)
    assert b.replicas.appends._enough_replicas(TP, offset + 1) == (
        True, ErrorCode.REQUEST_TIMED_OUT)
