"""KafkaAdmin's controller verbs (AlterPartitionReassignments, ListPartitionReassignments,
ElectLeaders) against in-test brokers (FakeKafka) on 127.0.0.1: what goes on the wire,
what comes back, and the NOT_CONTROLLER retry that follows a moving controller.

FakeKafka has no controller of its own, so each test answers these APIs through its
``hook`` and keeps the requests it saw; the controller side is tested in
tests/unit/controller and end to end in tests/integration/test_controller_failover.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from client import KafkaAdmin, NoCommonVersion
from client.admin import _ADMIN_RETRIES, PREFERRED_ELECTION, UNCLEAN_ELECTION, Reassignment
from client.connection import our_versions
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api
from tests.unit.client.test_client import FakeKafka, run

ALTER, LIST, ELECT = (ApiKey.ALTER_PARTITION_REASSIGNMENTS,
                      ApiKey.LIST_PARTITION_REASSIGNMENTS, ApiKey.ELECT_LEADERS)


def answering(fake: FakeKafka, key: int, answer: Callable[[Struct], Struct]) -> list[Struct]:
    """Make ``fake`` answer ``key`` with ``answer(request)``; -> the requests it gets."""
    got: list[Struct] = []
    previous = fake.hook

    def hook(header: RequestHeader, req: Struct) -> Struct | None:
        if header.api_key == key:
            got.append(req)
            return answer(req)
        return previous(header, req) if previous else None
    fake.hook = hook
    return got


# -- answers, as a controller would give them ------------------------------------------------

ONGOING = {("a", 0): ([1, 2, 3], [3], [1]), ("a", 2): ([2, 3], [3], []),
           ("b", 1): ([4, 5], [5], [])}


def alter_answer(req: Struct) -> Struct:
    """A cancel (null replicas) of nothing running: NO_REASSIGNMENT_IN_PROGRESS;
    topic "ghost": unknown; a replica list with a repeat: invalid; the rest accepted."""
    spec = api(ALTER).response
    s = spec.structs
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            code, msg = ErrorCode.NONE, None
            if t.name == "ghost":
                code, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "no ghost"
            elif p.replicas is None:
                code, msg = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
            elif len(set(p.replicas)) != len(p.replicas):
                code, msg = ErrorCode.INVALID_REPLICA_ASSIGNMENT, "duplicate replica"
            parts.append(s["ReassignablePartitionResponse"].new(
                partition_index=p.partition_index, error_code=code, error_message=msg))
        topics.append(s["ReassignableTopicResponse"].new(name=t.name, partitions=parts))
    return spec.new(responses=topics, error_message=None)


def list_answer(req: Struct) -> Struct:
    """The ONGOING reassignments asked for (all of them for a null topic list)."""
    spec = api(LIST).response
    s = spec.structs
    wanted = None if req.topics is None else {
        (t.name, p) for t in req.topics for p in t.partition_indexes}
    by_topic: dict[str, list[Struct]] = {}
    for (t, p), (replicas, adding, removing) in sorted(ONGOING.items()):
        if wanted is None or (t, p) in wanted:
            by_topic.setdefault(t, []).append(s["OngoingPartitionReassignment"].new(
                partition_index=p, replicas=replicas, adding_replicas=adding,
                removing_replicas=removing))
    return spec.new(topics=[s["OngoingTopicReassignment"].new(name=t, partitions=ps)
                            for t, ps in by_topic.items()], error_message=None)


def elect_answer(req: Struct) -> Struct:
    """Partition 0 of each topic is elected, the others already have their leader;
    a null list stands for t-0 and t-1."""
    spec = api(ELECT).response
    s = spec.structs
    asked = ([("t", [0, 1])] if req.topic_partitions is None
             else [(t.topic, t.partitions) for t in req.topic_partitions])
    results = [s["ReplicaElectionResult"].new(topic=topic, partition_result=[
        s["PartitionResult"].new(partition_id=p, error_message=None,
                                 error_code=ErrorCode.NONE if p == 0
                                 else ErrorCode.ELECTION_NOT_NEEDED)
        for p in parts]) for topic, parts in asked]
    return spec.new(replica_election_results=results)


def not_controller(key: int) -> Callable[[Struct], Struct]:
    """What a broker that is not (or no longer) the controller answers."""
    def answer(req: Struct) -> Struct:
        spec = api(key).response
        if key == ELECT:
            return spec.new(error_code=ErrorCode.NOT_CONTROLLER)
        return spec.new(error_code=ErrorCode.NOT_CONTROLLER, error_message="not the controller")
    return answer


# -- one controller ------------------------------------------------------------------------

def test_alter_partition_reassignments_groups_by_topic_and_reports_per_partition() -> None:
    async def body(fake: FakeKafka) -> None:
        sent = answering(fake, ALTER, alter_answer)
        async with KafkaAdmin(fake.address, timeout=2) as admin:
            top, results = await admin.alter_partition_reassignments(
                {("b", 0): [1, 2], ("a", 3): None, ("a", 1): [2, 2], ("ghost", 0): [1]},
                timeout_ms=1234)
        assert top == (0, None)
        assert results == {
            ("a", 1): (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "duplicate replica"),
            ("a", 3): (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None),
            ("b", 0): (0, None),
            ("ghost", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "no ghost")}
        [req] = sent
        assert req.timeout_ms == 1234
        # one entry per topic, partitions in order; a cancel is a null replica list
        assert [(t.name, [(p.partition_index, p.replicas) for p in t.partitions])
                for t in req.topics] == [("a", [(1, [2, 2]), (3, None)]), ("b", [(0, [1, 2])]),
                                         ("ghost", [(0, [1])])]
    run(body)


def test_alter_partition_reassignments_top_level_error() -> None:
    async def body(fake: FakeKafka) -> None:
        def refuse(req: Struct) -> Struct:
            return api(ALTER).response.new(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                            error_message="denied")
        answering(fake, ALTER, refuse)
        async with KafkaAdmin(fake.address, timeout=2) as admin:
            top, results = await admin.alter_partition_reassignments({("a", 0): [1]})
        assert top == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "denied") and results == {}
    run(body)


def test_list_partition_reassignments_all_or_some() -> None:
    async def body(fake: FakeKafka) -> None:
        sent = answering(fake, LIST, list_answer)
        async with KafkaAdmin(fake.address, timeout=2) as admin:
            top, everything = await admin.list_partition_reassignments()
            assert top == (0, None)
            assert everything == {
                ("a", 0): Reassignment((1, 2, 3), (3,), (1,)),
                ("a", 2): Reassignment((2, 3), (3,), ()),
                ("b", 1): Reassignment((4, 5), (5,), ())}
            _, some = await admin.list_partition_reassignments([("b", 1), ("a", 2), ("a", 7)])
            assert some == {("a", 2): Reassignment((2, 3), (3,), ()),
                            ("b", 1): Reassignment((4, 5), (5,), ())}
        everything_req, some_req = sent
        assert everything_req.topics is None                      # null: all of them
        assert [(t.name, t.partition_indexes) for t in some_req.topics] == [
            ("a", [2, 7]), ("b", [1])]
    run(body)


def test_elect_leaders_preferred_and_unclean() -> None:
    async def body(fake: FakeKafka) -> None:
        sent = answering(fake, ELECT, elect_answer)
        async with KafkaAdmin(fake.address, timeout=2) as admin:
            code, results = await admin.elect_leaders([("t", 0), ("t", 1), ("u", 0)])
            assert code == 0
            assert results == {("t", 0): (0, None), ("t", 1): (ErrorCode.ELECTION_NOT_NEEDED, None),
                               ("u", 0): (0, None)}
            code, every = await admin.elect_leaders(None, election_type=UNCLEAN_ELECTION,
                                                    timeout_ms=500)
            assert code == 0 and sorted(every) == [("t", 0), ("t", 1)]
        chosen, every_req = sent
        assert chosen.election_type == PREFERRED_ELECTION
        assert [(t.topic, t.partitions) for t in chosen.topic_partitions] == [
            ("t", [0, 1]), ("u", [0])]
        assert every_req.election_type == UNCLEAN_ELECTION
        assert every_req.topic_partitions is None and every_req.timeout_ms == 500
    run(body)


def test_unclean_election_is_refused_by_a_v0_only_controller() -> None:
    """ElectLeaders v0 has no ElectionType: an unclean election sent at v0 would be
    a preferred one, so it is not sent; a preferred one goes out at v0."""
    versions = dict(our_versions())
    versions[ELECT] = (0, 0)

    async def body(fake: FakeKafka) -> None:
        sent = answering(fake, ELECT, elect_answer)
        async with KafkaAdmin(fake.address, timeout=2) as admin:
            with pytest.raises(NoCommonVersion):
                await admin.elect_leaders([("t", 1)], election_type=UNCLEAN_ELECTION)
            assert sent == []
            code, results = await admin.elect_leaders([("t", 1)])
            assert (code, results) == (0, {("t", 1): (ErrorCode.ELECTION_NOT_NEEDED, None)})
        assert [h.api_version for h in fake.seen if h.api_key == ELECT] == [0]
    run(body, versions=versions)


# -- a controller that moves ---------------------------------------------------------------

def two_brokers(fn: Callable[[FakeKafka, FakeKafka, list[int]], Awaitable[Any]]) -> Any:
    """Brokers 1 and 2; Metadata from either names both and ``controller[0]``."""
    async def main() -> Any:
        one = await FakeKafka(node_id=1).start()
        two = await FakeKafka(node_id=2).start()
        controller = [1]
        for fake in (one, two):
            fake.hook = metadata_naming(fake, (one, two), controller)
        try:
            return await asyncio.wait_for(fn(one, two, controller), 20)
        finally:
            await one.stop()
            await two.stop()
    return asyncio.run(main())


def metadata_naming(fake: FakeKafka, cluster: tuple[FakeKafka, ...],
                    controller: list[int]) -> Callable[[RequestHeader, Struct], Struct | None]:
    def hook(header: RequestHeader, req: Struct) -> Struct | None:
        if header.api_key != ApiKey.METADATA:
            return None
        resp = fake._h3(header.api_version, req)
        broker = api(ApiKey.METADATA).response.structs["MetadataResponseBroker"]
        resp.brokers = [broker.new(node_id=f.node_id, host="127.0.0.1", port=f.port)
                        for f in cluster]
        resp.controller_id = controller[0]
        return resp
    return hook


@pytest.mark.parametrize("key", [ALTER, LIST, ELECT])
def test_not_controller_refreshes_metadata_and_retries_at_the_new_controller(key: int) -> None:
    good = {ALTER: alter_answer, LIST: list_answer, ELECT: elect_answer}[key]

    async def body(one: FakeKafka, two: FakeKafka, controller: list[int]) -> None:
        refuse = not_controller(key)

        def moved(req: Struct) -> Struct:
            controller[0] = 2           # the controller moved to broker 2 meanwhile
            return refuse(req)
        at_one = answering(one, key, moved)
        at_two = answering(two, key, good)
        async with KafkaAdmin(one.address, timeout=2) as admin:
            if key == ALTER:
                top, results = await admin.alter_partition_reassignments({("a", 0): [1, 2]})
                assert (top, results) == ((0, None), {("a", 0): (0, None)})
            elif key == LIST:
                top, running = await admin.list_partition_reassignments([("b", 1)])
                assert (top, running) == ((0, None), {("b", 1): Reassignment((4, 5), (5,), ())})
            else:
                code, elected = await admin.elect_leaders([("t", 0)])
                assert (code, elected) == (0, {("t", 0): (0, None)})
        assert (len(at_one), len(at_two)) == (1, 1)
        # the retry asked for fresh metadata before going to broker 2
        assert [h.api_key for h in one.seen if h.api_key in (ApiKey.METADATA, key)] == [
            ApiKey.METADATA, key, ApiKey.METADATA]
    two_brokers(body)


def test_not_controller_every_time_gives_the_answer_after_the_last_try() -> None:
    """A controller that never settles: the last NOT_CONTROLLER is returned, not raised,
    after a bounded number of tries (the caller prints it like any other error)."""
    async def body(one: FakeKafka, two: FakeKafka, controller: list[int]) -> None:
        at_one = answering(one, ELECT, not_controller(ELECT))
        async with KafkaAdmin(one.address, timeout=2) as admin:
            code, results = await admin.elect_leaders([("t", 0)])
        assert (code, results) == (ErrorCode.NOT_CONTROLLER, {})
        assert len(at_one) == _ADMIN_RETRIES
    two_brokers(body)
