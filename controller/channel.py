"""The controller -> broker channel (Kafka's ControllerChannelManager).

One FIFO queue and one sender task per live broker; a request is retried (with
backoff) until it is answered or the broker leaves the live set. Requests go
over the Kafka protocol through the injected BrokerTransport -- to this broker
itself too. ``RequestBatch`` collects what one event decided and builds, per
broker, at most one LeaderAndIsr, one UpdateMetadata and one StopReplica, sent
in that order (Kafka's ControllerBrokerRequestBatch). A LeaderAndIsr answer's
per-partition errors go to the batch's ``on_leader_and_isr_response`` (the
controller's; KAFKA_STORAGE_ERROR marks a replica offline, see log_dir_events).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from controller.context import ControllerContext, TopicPartition
from controller.zkdata import LEADER_DURING_DELETE, SECURITY_PROTOCOL_IDS, BrokerInfo
from protocol.headers import RequestHeader
from protocol.schema import Struct
from protocol.spec import api

log = logging.getLogger("pybroker.controller")

LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA = 4, 5, 6
# Versions the controller sends (Kafka 3.9's ZK controller sends the newest).
VERSIONS = {LEADER_AND_ISR: 7, STOP_REPLICA: 4, UPDATE_METADATA: 8}
TYPE_INCREMENTAL, TYPE_FULL = 1, 2
ZERO_UUID = uuid.UUID(int=0)


class BrokerTransport(Protocol):
    """Sends one request to a broker and returns its decoded response body."""

    async def send(self, broker_id: int, host: str, port: int, header: RequestHeader,
                   body: Struct) -> Struct: ...


ResponseCallback = Callable[[Struct | None], None]
# a StopReplica partition's outcome: its error code, -1 when the request was not delivered
StopReplicaCallback = Callable[[int], None]
# (broker id, broker epoch the request carried, per-partition errors of its answer)
LeaderAndIsrSink = Callable[[int, int, dict[TopicPartition, int]], None]


@dataclass
class _Pending:
    api_key: int
    body: Struct
    callback: ResponseCallback | None


class ControllerChannel:
    def __init__(self, controller_id: int, transport: BrokerTransport,
                 request_timeout: float = 30.0, listener: str | None = None) -> None:
        """``listener``: the brokers' listener the requests go to
        (control.plane.listener.name, else the inter-broker listener)."""
        self.controller_id = controller_id
        self.listener = listener
        self.transport = transport
        self.request_timeout = request_timeout
        self._queues: dict[int, asyncio.Queue[_Pending]] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._brokers: dict[int, BrokerInfo] = {}
        self._correlation = itertools.count(1)

    def add_broker(self, info: BrokerInfo) -> None:
        self.remove_broker(info.id)
        self._brokers[info.id] = info
        q: asyncio.Queue[_Pending] = asyncio.Queue()
        self._queues[info.id] = q
        self._tasks[info.id] = asyncio.create_task(self._sender(info, q),
                                                   name=f"controller-to-{info.id}")

    def remove_broker(self, broker_id: int) -> None:
        """Stop sending to the broker; its unsent requests fail (callback(None))."""
        self._brokers.pop(broker_id, None)
        task = self._tasks.pop(broker_id, None)
        if task is not None:
            task.cancel()
        q = self._queues.pop(broker_id, None)
        while q is not None and not q.empty():
            p = q.get_nowait()
            if p.callback:
                p.callback(None)

    def shutdown(self) -> None:
        for b in list(self._brokers):
            self.remove_broker(b)

    def enqueue(self, broker_id: int, api_key: int, body: Struct,
                callback: ResponseCallback | None = None) -> None:
        q = self._queues.get(broker_id)
        if q is None:
            if callback:
                callback(None)
            return
        q.put_nowait(_Pending(api_key, body, callback))

    async def _sender(self, info: BrokerInfo, q: asyncio.Queue[_Pending]) -> None:
        ep = endpoint_of(info, self.listener)
        while True:
            p = await q.get()
            backoff = 0.05
            while True:
                header = RequestHeader(p.api_key, VERSIONS[p.api_key], next(self._correlation),
                                       f"controller-{self.controller_id}")
                try:
                    # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow a
                    # cancel that races with the send completing, leaving this task
                    # alive after remove_broker/shutdown cancelled it.
                    async with asyncio.timeout(self.request_timeout):
                        resp = await self.transport.send(info.id, ep.host, ep.port, header,
                                                         p.body)
                    break
                except asyncio.CancelledError:
                    if p.callback:
                        p.callback(None)
                    raise
                except Exception as e:  # noqa: BLE001 - any failure: retry while live
                    log.debug("request %d to broker %d failed: %r; retrying", p.api_key,
                              info.id, e)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 1.0)
            if p.callback:
                try:
                    p.callback(resp)
                except Exception:
                    log.exception("controller response callback failed")


class RequestBatch:
    """What one event wants sent; ``send`` turns it into per-broker requests."""

    def __init__(self, ctx: ControllerContext, controller_id: int,
                 listener: str | None = None) -> None:
        self.ctx = ctx
        self.controller_id = controller_id
        self.listener = listener        # whose endpoints LeaderAndIsr's live leaders name
        self.leader_and_isr: dict[int, dict[TopicPartition, bool]] = {}   # broker -> tp -> is_new
        self.update_metadata_brokers: set[int] = set()
        self.update_metadata_partitions: set[TopicPartition] = set()
        self.deleting: set[TopicPartition] = set()
        self.stop_replica: dict[int, dict[TopicPartition, tuple[bool, StopReplicaCallback | None]]] = {}
        self.full = False
        self.on_leader_and_isr_response: LeaderAndIsrSink | None = None

    def add_leader_and_isr(self, brokers: list[int] | set[int], tp: TopicPartition,
                           is_new: bool = False) -> None:
        for b in brokers:
            if b in self.ctx.live:
                self.leader_and_isr.setdefault(b, {})[tp] = is_new
        self.add_update_metadata(self.ctx.live, [tp])

    def add_update_metadata(self, brokers: Any, partitions: list[TopicPartition] | set[TopicPartition],
                            deleting: bool = False) -> None:
        self.update_metadata_brokers.update(b for b in brokers if b in self.ctx.live)
        self.update_metadata_partitions.update(partitions)
        if deleting:
            self.deleting.update(partitions)

    def add_stop_replica(self, broker: int, tp: TopicPartition, delete: bool,
                         callback: StopReplicaCallback | None = None) -> None:
        self.stop_replica.setdefault(broker, {})[tp] = (delete, callback)

    # -- building ------------------------------------------------------------------------

    def send(self, channel: ControllerChannel) -> None:
        for b, parts in sorted(self.leader_and_isr.items()):
            body = self._leader_and_isr(b, parts)
            channel.enqueue(b, LEADER_AND_ISR, body, _leader_and_isr_answered(
                b, body.broker_epoch, self._topic_names(parts), self.on_leader_and_isr_response))
        um = self._update_metadata_body() if self.update_metadata_brokers else None
        for b in sorted(self.update_metadata_brokers):
            channel.enqueue(b, UPDATE_METADATA, self._with_epoch(um, b))
        for b, stops in sorted(self.stop_replica.items()):
            for delete in (False, True):
                chosen = {tp: cb for tp, (d, cb) in stops.items() if d == delete}
                if chosen:
                    channel.enqueue(b, STOP_REPLICA, self._stop_replica(b, list(chosen), delete),
                                    _stop_callback(chosen))

    def _with_epoch(self, body: Struct | None, broker: int) -> Struct:
        assert body is not None
        copy = type(body)(**{a: getattr(body, a) for a in body.SPEC.attrs})
        copy.broker_epoch = self.ctx.live[broker].epoch
        return copy

    def _leader_and_isr(self, broker: int, parts: dict[TopicPartition, bool]) -> Struct:
        spec = api(LEADER_AND_ISR).request
        ps_spec, ts_spec = spec.structs["LeaderAndIsrPartitionState"], spec.structs["LeaderAndIsrTopicState"]
        by_topic: dict[str, list[Struct]] = {}
        leaders: set[int] = set()
        for (t, p), is_new in sorted(parts.items()):
            s = self.ctx.states[(t, p)]
            leaders.add(s.leader)
            by_topic.setdefault(t, []).append(ps_spec.new(
                topic_name=t, partition_index=p, controller_epoch=s.controller_epoch,
                leader=s.leader, leader_epoch=s.leader_epoch, isr=list(s.isr),
                partition_epoch=s.zk_version, replicas=list(self.ctx.replicas((t, p))),
                is_new=is_new, leader_recovery_state=s.leader_recovery_state))
        live_leaders = [spec.structs["LeaderAndIsrLiveLeader"].new(
            broker_id=b, host_name=endpoint_of(self.ctx.live[b], self.listener).host,
            port=endpoint_of(self.ctx.live[b], self.listener).port)
            for b in sorted(leaders) if b in self.ctx.live]
        return spec.new(
            controller_id=self.controller_id, controller_epoch=self.ctx.epoch,
            broker_epoch=self.ctx.live[broker].epoch,
            type=TYPE_FULL if self.full else TYPE_INCREMENTAL,
            ungrouped_partition_states=[s for ss in by_topic.values() for s in ss],
            topic_states=[ts_spec.new(topic_name=t, topic_id=self.ctx.topic_ids.get(t),
                                      partition_states=ss) for t, ss in by_topic.items()],
            live_leaders=live_leaders)

    def _topic_names(self, parts: dict[TopicPartition, bool]) -> dict[Any, str]:
        """Topic id (as the request carries it) -> name, for reading a v5+ answer;
        an id two topics share (none: the zero uuid) maps to nothing."""
        names: dict[Any, str] = {}
        shared: set[Any] = set()
        for t in {t for t, _ in parts}:
            tid = self.ctx.topic_ids.get(t) or ZERO_UUID
            if tid in names:
                shared.add(tid)
            names[tid] = t
        return {tid: t for tid, t in names.items() if tid not in shared}

    def _update_metadata_body(self) -> Struct:
        spec = api(UPDATE_METADATA).request
        ps_spec, ts_spec = (spec.structs["UpdateMetadataPartitionState"],
                            spec.structs["UpdateMetadataTopicState"])
        by_topic: dict[str, list[Struct]] = {}
        for (t, p) in sorted(self.update_metadata_partitions):
            s = self.ctx.states.get((t, p))
            if s is None:
                continue
            leader = LEADER_DURING_DELETE if (t, p) in self.deleting else s.leader
            by_topic.setdefault(t, []).append(ps_spec.new(
                topic_name=t, partition_index=p, controller_epoch=s.controller_epoch,
                leader=leader, leader_epoch=s.leader_epoch, isr=list(s.isr),
                zk_version=s.zk_version, replicas=list(self.ctx.replicas((t, p))),
                offline_replicas=self.ctx.offline_replicas((t, p))))
        return spec.new(
            controller_id=self.controller_id, controller_epoch=self.ctx.epoch,
            type=TYPE_FULL if self.full else TYPE_INCREMENTAL,
            ungrouped_partition_states=[s for ss in by_topic.values() for s in ss],
            topic_states=[ts_spec.new(topic_name=t, topic_id=self.ctx.topic_ids.get(t),
                                      partition_states=ss) for t, ss in by_topic.items()],
            live_brokers=[_broker_struct(spec, info) for _, info in sorted(self.ctx.live.items())])

    def _stop_replica(self, broker: int, parts: list[TopicPartition], delete: bool) -> Struct:
        spec = api(STOP_REPLICA).request
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(parts):
            by_topic.setdefault(t, []).append(p)
        ps = spec.structs["StopReplicaPartitionState"]
        return spec.new(
            controller_id=self.controller_id, controller_epoch=self.ctx.epoch,
            broker_epoch=self.ctx.live[broker].epoch if broker in self.ctx.live else -1,
            delete_partitions=delete,
            ungrouped_partitions=[spec.structs["StopReplicaPartitionV0"].new(
                topic_name=t, partition_index=p) for t, p in sorted(parts)],
            topics=[spec.structs["StopReplicaTopicV1"].new(name=t, partition_indexes=ps_)
                    for t, ps_ in by_topic.items()],
            topic_states=[spec.structs["StopReplicaTopicState"].new(
                topic_name=t, partition_states=[ps.new(
                    partition_index=p, delete_partition=delete,
                    # -2 (EpochDuringDelete) skips the leader epoch check when deleting
                    leader_epoch=-2 if delete else self._epoch((t, p))) for p in ps_])
                for t, ps_ in by_topic.items()])

    def _epoch(self, tp: TopicPartition) -> int:
        s = self.ctx.states.get(tp)
        return s.leader_epoch if s else -1


def endpoint_of(info: BrokerInfo, listener: str | None) -> Any:
    """The broker's endpoint on ``listener`` (its default one when it has none
    of that name, e.g. while a rolling change of listeners is under way)."""
    try:
        return info.endpoint(listener)
    except KeyError:
        return info.endpoint()


def _broker_struct(spec: Any, info: BrokerInfo) -> Struct:
    ep0 = info.endpoint()
    return spec.structs["UpdateMetadataBroker"].new(
        id=info.id, v0_host=ep0.host, v0_port=ep0.port, rack=info.rack,
        endpoints=[spec.structs["UpdateMetadataEndpoint"].new(
            port=e.port, host=e.host, listener=e.listener,
            security_protocol=SECURITY_PROTOCOL_IDS.get(e.security_protocol, 0))
            for e in info.endpoints])


def _leader_and_isr_answered(broker: int, broker_epoch: int, topic_names: dict[Any, str],
                             sink: LeaderAndIsrSink | None) -> ResponseCallback:
    """Log a LeaderAndIsr answer's errors and hand its per-partition errors to ``sink``
    (v0-4 name the topics, v5+ give topic ids: ``topic_names`` maps them back)."""
    def check(resp: Struct | None) -> None:
        if resp is None:
            return
        if resp.error_code:
            log.warning("LeaderAndIsr to broker %d failed: error %d", broker, resp.error_code)
            return
        errors: dict[TopicPartition, int] = {
            (e.topic_name, e.partition_index): e.error_code for e in resp.partition_errors or []}
        for t in resp.topics or []:
            name = topic_names.get(t.topic_id or ZERO_UUID)
            if name is not None:
                errors.update(((name, e.partition_index), e.error_code) for e in t.partition_errors)
        bad = [code for code in errors.values() if code]
        if bad:
            log.warning("LeaderAndIsr to broker %d: %d partitions failed (first error %d)",
                        broker, len(bad), bad[0])
        if sink is not None:
            sink(broker, broker_epoch, errors)
    return check


def _stop_callback(chosen: dict[TopicPartition, StopReplicaCallback | None]) -> ResponseCallback:
    def done(resp: Struct | None) -> None:
        errors: dict[TopicPartition, int] = {}
        if resp is not None:
            errors = {(e.topic_name, e.partition_index): e.error_code
                      for e in resp.partition_errors}
        for tp, cb in chosen.items():
            if cb is not None:
                code = -1 if resp is None else (resp.error_code or errors.get(tp, 0))
                cb(code)
    return done


