"""A tiny single-node broker on 127.0.0.1 that records every request frame.

Built on our codec only (protocol.headers / protocol.codec / protocol.framing),
for capturing golden frames from stock clients (tests/tools/capture_golden.py).
It answers just enough for a client to produce, consume in a group, list
offsets and create/delete topics:

  ApiVersions, Metadata (one broker = itself; topics auto-created with one
  partition), Produce (appends; acks=0 gets no answer), Fetch (the stored
  batches from the fetch offset, or empty after a short long-poll wait),
  ListOffsets, OffsetForLeaderEpoch, FindCoordinator, JoinGroup (asks for a
  member id first, as Kafka does from v4, then makes the caller the single
  member and leader), SyncGroup, Heartbeat, OffsetCommit, OffsetFetch,
  LeaveGroup, CreateTopics, DeleteTopics, InitProducerId.

Every frame that arrives is recorded *before* it is decoded, so a frame our
codec cannot read is still captured (and the connection is then closed).
The asyncio loop runs in a background thread; ``start``/``stop`` from the
driver. Not a broker: no persistence, no replication, no validation.
"""

from __future__ import annotations

import asyncio
import struct
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from protocol.framing import FrameBuffer
from protocol.headers import RequestHeader, decode_request, decode_request_header, encode_response
from protocol.schema import Struct
from protocol.spec import all_apis

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
NODE_ID = 0
CLUSTER_ID = "golden-capture-cluster"


@dataclass
class Captured:
    client_id: str | None
    api_key: int
    api_version: int
    correlation_id: int
    frame: bytes        # the request frame without its 4-byte size prefix


@dataclass
class PartitionLog:
    batches: list[tuple[int, int, bytes]] = field(default_factory=list)  # (base, next, bytes)
    next_offset: int = 0

    def append(self, records: bytes) -> int:
        """Append a records blob; assign offsets batch by batch; return the base."""
        base = self.next_offset
        data = bytearray(records)
        pos = 0
        while pos + 12 <= len(data):
            (length,) = _I32.unpack_from(data, pos + 8)
            end = pos + 12 + length
            magic = data[pos + 16] if pos + 16 < len(data) else 2
            # magic 2: lastOffsetDelta at +23; magic 0/1 entries are one message each
            count = _I32.unpack_from(data, pos + 23)[0] + 1 if magic == 2 else 1
            _I64.pack_into(data, pos, self.next_offset)  # outside the CRC'd range
            self.batches.append((self.next_offset, self.next_offset + count, bytes(data[pos:end])))
            self.next_offset += count
            pos = end
        return base

    def read(self, offset: int, max_bytes: int) -> bytes:
        out = bytearray()
        for base, nxt, data in self.batches:
            if nxt <= offset:
                continue
            if out and len(out) + len(data) > max_bytes:
                break
            out += data
        return bytes(out)


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionLog]


@dataclass
class Group:
    generation: int = 0
    member_id: str = ""
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""
    offsets: dict[tuple[str, int], tuple[int, str | None]] = field(default_factory=dict)


Handler = Callable[[RequestHeader, Any], Awaitable[Struct | None]]


class CaptureBroker:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, partitions: int = 1) -> None:
        self.host = host
        self.port = port
        self.partitions = partitions
        self.frames: list[Captured] = []
        self.errors: list[str] = []
        self.topics: dict[str, Topic] = {}
        self.groups: dict[str, Group] = {}
        self._next_pid = 1000
        self._member_seq = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._handlers: dict[int, Handler] = {
            18: self.api_versions, 3: self.metadata, 0: self.produce, 1: self.fetch,
            2: self.list_offsets, 23: self.offset_for_leader_epoch, 10: self.find_coordinator,
            11: self.join_group, 14: self.sync_group, 12: self.heartbeat,
            8: self.offset_commit, 9: self.offset_fetch, 13: self.leave_group,
            19: self.create_topics, 20: self.delete_topics, 22: self.init_producer_id,
        }

    # ------------------------------------------------------------ lifecycle

    def start(self) -> int:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._serve, self.host, self.port))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="capture-broker", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("capture broker did not start")
        return self.port

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return

        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        assert self._thread is not None
        self._thread.join(10)

    # ------------------------------------------------------------ connection

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        frames = FrameBuffer(max_frame_size=64 << 20)
        try:
            while data := await reader.read(1 << 16):
                for frame in frames.feed(data):
                    if not await self._one(frame, writer):
                        return
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _one(self, frame: bytes, writer: asyncio.StreamWriter) -> bool:
        head, _ = decode_request_header(frame)
        self.frames.append(Captured(head.client_id, head.api_key, head.api_version,
                                    head.correlation_id, frame))
        if head.api_key == 18 and head.api_version not in all_apis()[18].request.valid:
            body: Struct | None = self._api_versions_unsupported()
            self._send(writer, 18, 0, head.correlation_id, body)
            return True
        handler = self._handlers.get(head.api_key)
        if handler is None:
            self.errors.append(f"{head.client_id}: no handler for api key {head.api_key}"
                               f" v{head.api_version}")
            return False
        try:
            header, req = decode_request(frame)
        except ValueError as e:
            self.errors.append(f"{head.client_id}: api {head.api_key} v{head.api_version}: {e}")
            return False
        body = await handler(header, req)
        if body is not None:
            self._send(writer, head.api_key, head.api_version, head.correlation_id, body)
        return True

    @staticmethod
    def _send(writer: asyncio.StreamWriter, key: int, version: int, corr: int, body: Struct) -> None:
        chunks = encode_response(key, version, corr, body)
        size = sum(len(memoryview(c)) for c in chunks)
        writer.write(_I32.pack(size) + b"".join(bytes(c) for c in chunks))

    # ------------------------------------------------------------ topics

    def topic(self, name: str, partitions: int | None = None) -> Topic:
        t = self.topics.get(name)
        if t is None:
            n = partitions if partitions and partitions > 0 else self.partitions
            t = Topic(name, uuid.uuid5(uuid.NAMESPACE_URL, "golden/" + name),
                      [PartitionLog() for _ in range(n)])
            self.topics[name] = t
        return t

    def _by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    def _log(self, name: str, partition: int) -> PartitionLog | None:
        t = self.topics.get(name)
        if t is None or not 0 <= partition < len(t.partitions):
            return None
        return t.partitions[partition]

    # ------------------------------------------------------------ handlers

    def _spec(self, key: int) -> Any:
        return all_apis()[key].response

    def _api_versions_unsupported(self) -> Struct:
        av = self._spec(18)
        return av.new(error_code=35, api_keys=[av.struct.fields[1].struct.new(
            api_key=18, min_version=0, max_version=all_apis()[18].request.valid.hi)])

    async def api_versions(self, h: RequestHeader, req: Any) -> Struct:
        av = self._spec(18)
        entry = av.struct.fields[1].struct
        keys = [entry.new(api_key=k, min_version=all_apis()[k].request.valid.lo,
                          max_version=all_apis()[k].request.valid.hi)
                for k in sorted(self._handlers)]
        return av.new(error_code=0, api_keys=keys, throttle_time_ms=0)

    async def metadata(self, h: RequestHeader, req: Any) -> Struct:
        spec = self._spec(3)
        f = {x.attr: x for x in spec.struct.fields}
        broker = f["brokers"].struct.new(node_id=NODE_ID, host=self.host, port=self.port, rack=None)
        if req.topics is None or (h.api_version == 0 and req.topics == []):
            wanted = list(self.topics.values())
        else:
            wanted = []
            for t in req.topics:
                found = self._by_id(t.topic_id) if t.name is None else self.topic(t.name)
                if found is not None:
                    wanted.append(found)
        tstruct = f["topics"].struct
        pstruct = next(x for x in tstruct.fields if x.attr == "partitions").struct
        topics = [tstruct.new(error_code=0, name=t.name, topic_id=t.topic_id, is_internal=False,
                              topic_authorized_operations=-2147483648,
                              partitions=[pstruct.new(error_code=0, partition_index=i,
                                                      leader_id=NODE_ID, leader_epoch=0,
                                                      replica_nodes=[NODE_ID], isr_nodes=[NODE_ID],
                                                      offline_replicas=[])
                                          for i in range(len(t.partitions))])
                  for t in wanted]
        return spec.new(throttle_time_ms=0, brokers=[broker], cluster_id=CLUSTER_ID,
                        controller_id=NODE_ID, topics=topics,
                        cluster_authorized_operations=-2147483648)

    async def produce(self, h: RequestHeader, req: Any) -> Struct | None:
        spec = self._spec(0)
        tstruct = spec.struct.fields[0].struct
        pstruct = tstruct.fields[1].struct
        out = []
        for td in req.topic_data:
            topic = self.topic(td.name)
            parts = []
            for pd in td.partition_data:
                log = self._log(topic.name, pd.index)
                if log is None:
                    parts.append(pstruct.new(index=pd.index, error_code=3, base_offset=-1))
                    continue
                base = log.append(bytes(pd.records or b""))
                parts.append(pstruct.new(index=pd.index, error_code=0, base_offset=base,
                                         log_append_time_ms=-1, log_start_offset=0))
            out.append(tstruct.new(name=td.name, partition_responses=parts))
        if req.acks == 0:
            return None
        return spec.new(responses=out, throttle_time_ms=0)

    async def fetch(self, h: RequestHeader, req: Any) -> Struct:
        deadline = time.monotonic() + min(req.max_wait_ms, 500) / 1000
        while True:
            resp, nbytes = self._fetch_once(h, req)
            if nbytes > 0 or time.monotonic() >= deadline:
                return resp
            await asyncio.sleep(0.02)

    def _fetch_once(self, h: RequestHeader, req: Any) -> tuple[Struct, int]:
        spec = self._spec(1)
        tstruct = next(x for x in spec.struct.fields if x.attr == "responses").struct
        pstruct = next(x for x in tstruct.fields if x.attr == "partitions").struct
        total = 0
        out = []
        for ft in req.topics:
            topic = self._by_id(ft.topic_id) if h.api_version >= 13 else self.topics.get(ft.topic)
            parts = []
            for fp in ft.partitions:
                log = self._log(topic.name, fp.partition) if topic is not None else None
                if log is None:
                    parts.append(pstruct.new(partition_index=fp.partition, error_code=3,
                                             high_watermark=-1, last_stable_offset=-1,
                                             log_start_offset=-1, records=None))
                    continue
                data = log.read(fp.fetch_offset, fp.partition_max_bytes)
                total += len(data)
                parts.append(pstruct.new(partition_index=fp.partition, error_code=0,
                                         high_watermark=log.next_offset,
                                         last_stable_offset=log.next_offset, log_start_offset=0,
                                         aborted_transactions=[], preferred_read_replica=-1,
                                         records=data))
            out.append(tstruct.new(topic=ft.topic, topic_id=ft.topic_id, partitions=parts))
        return spec.new(throttle_time_ms=0, error_code=0, session_id=0, responses=out), total

    async def list_offsets(self, h: RequestHeader, req: Any) -> Struct:
        spec = self._spec(2)
        tstruct = spec.struct.fields[1].struct
        pstruct = tstruct.fields[1].struct
        out = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                log = self._log(t.name, p.partition_index) or self.topic(t.name).partitions[0]
                # -1 latest, -2 earliest (timestamp -1 in the answer); a real time
                # finds offset 0 stamped with that time (clients reject -1 there).
                off = log.next_offset if p.timestamp == -1 else 0
                ts = p.timestamp if p.timestamp >= 0 else -1
                parts.append(pstruct.new(partition_index=p.partition_index, error_code=0,
                                         old_style_offsets=[off], timestamp=ts, offset=off,
                                         leader_epoch=0))
            out.append(tstruct.new(name=t.name, partitions=parts))
        return spec.new(throttle_time_ms=0, topics=out)

    async def offset_for_leader_epoch(self, h: RequestHeader, req: Any) -> Struct:
        spec = self._spec(23)
        tstruct = spec.struct.fields[1].struct
        pstruct = tstruct.fields[1].struct
        out = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                log = self._log(t.topic, p.partition)
                parts.append(pstruct.new(error_code=0 if log else 3, partition=p.partition,
                                         leader_epoch=0, end_offset=log.next_offset if log else -1))
            out.append(tstruct.new(topic=t.topic, partitions=parts))
        return spec.new(throttle_time_ms=0, topics=out)

    async def find_coordinator(self, h: RequestHeader, req: Any) -> Struct:
        spec = self._spec(10)
        cstruct = next(x for x in spec.struct.fields if x.attr == "coordinators").struct
        coords = [cstruct.new(key=k, node_id=NODE_ID, host=self.host, port=self.port,
                              error_code=0, error_message=None) for k in req.coordinator_keys]
        return spec.new(throttle_time_ms=0, error_code=0, error_message=None, node_id=NODE_ID,
                        host=self.host, port=self.port, coordinators=coords)

    async def join_group(self, h: RequestHeader, req: Any) -> Struct:
        spec = self._spec(11)
        mstruct = next(x for x in spec.struct.fields if x.attr == "members").struct
        g = self.groups.setdefault(req.group_id, Group())
        if not req.member_id and h.api_version >= 4:
            self._member_seq += 1
            return spec.new(error_code=79, generation_id=-1, protocol_name="", leader="",
                            member_id=f"{h.client_id}-{self._member_seq}", members=[])
        member = req.member_id or f"{h.client_id}-{self._member_seq + 1}"
        proto = req.protocols[0]
        g.generation += 1
        g.member_id = member
        g.protocol_type = req.protocol_type
        g.protocol_name = proto.name
        return spec.new(throttle_time_ms=0, error_code=0, generation_id=g.generation,
                        protocol_type=req.protocol_type, protocol_name=proto.name, leader=member,
                        skip_assignment=False, member_id=member,
                        members=[mstruct.new(member_id=member,
                                             group_instance_id=req.group_instance_id,
                                             metadata=proto.metadata)])

    async def sync_group(self, h: RequestHeader, req: Any) -> Struct:
        g = self.groups.setdefault(req.group_id, Group())
        for a in req.assignments:
            if a.member_id == req.member_id:
                g.assignment = bytes(a.assignment)
        return self._spec(14).new(throttle_time_ms=0, error_code=0,
                                  protocol_type=g.protocol_type, protocol_name=g.protocol_name,
                                  assignment=g.assignment)

    async def heartbeat(self, h: RequestHeader, req: Any) -> Struct:
        return self._spec(12).new(throttle_time_ms=0, error_code=0)

    async def offset_commit(self, h: RequestHeader, req: Any) -> Struct:
        spec = self._spec(8)
        tstruct = spec.struct.fields[1].struct
        pstruct = tstruct.fields[1].struct
        g = self.groups.setdefault(req.group_id, Group())
        out = []
        for t in req.topics:
            for p in t.partitions:
                g.offsets[(t.name, p.partition_index)] = (p.committed_offset, p.committed_metadata)
            out.append(tstruct.new(name=t.name, partitions=[
                pstruct.new(partition_index=p.partition_index, error_code=0)
                for p in t.partitions]))
        return spec.new(throttle_time_ms=0, topics=out)

    async def offset_fetch(self, h: RequestHeader, req: Any) -> Struct:
        spec = self._spec(9)
        fields = {x.attr: x for x in spec.struct.fields}
        if h.api_version >= 8:
            gstruct = fields["groups"].struct
            gt = next(x for x in gstruct.fields if x.attr == "topics").struct
            gp = next(x for x in gt.fields if x.attr == "partitions").struct
            groups = [gstruct.new(group_id=rg.group_id, error_code=0,
                                  topics=self._committed(rg.group_id, rg.topics, gt, gp))
                      for rg in req.groups]
            return spec.new(throttle_time_ms=0, groups=groups)
        ts = fields["topics"].struct
        ps = next(x for x in ts.fields if x.attr == "partitions").struct
        return spec.new(throttle_time_ms=0, error_code=0,
                        topics=self._committed(req.group_id, req.topics, ts, ps))

    def _committed(self, group_id: str, topics: Any, ts: Any, ps: Any) -> list[Struct]:
        g = self.groups.setdefault(group_id, Group())
        if topics is None:  # all committed
            names = sorted({n for n, _ in g.offsets})
            wanted = [(n, sorted(p for m, p in g.offsets if m == n)) for n in names]
        else:
            wanted = [(t.name, list(t.partition_indexes)) for t in topics]
        out = []
        for name, parts in wanted:
            rows = []
            for p in parts:
                off, meta = g.offsets.get((name, p), (-1, ""))
                rows.append(ps.new(partition_index=p, committed_offset=off,
                                   committed_leader_epoch=-1, metadata=meta, error_code=0))
            out.append(ts.new(name=name, partitions=rows))
        return out

    async def leave_group(self, h: RequestHeader, req: Any) -> Struct:
        spec = self._spec(13)
        mstruct = next(x for x in spec.struct.fields if x.attr == "members").struct
        members = [mstruct.new(member_id=m.member_id, group_instance_id=m.group_instance_id,
                               error_code=0) for m in req.members]
        return spec.new(throttle_time_ms=0, error_code=0, members=members)

    async def create_topics(self, h: RequestHeader, req: Any) -> Struct:
        spec = self._spec(19)
        tstruct = spec.struct.fields[1].struct
        out = []
        for t in req.topics:
            exists = t.name in self.topics
            topic = self.topic(t.name, t.num_partitions)
            out.append(tstruct.new(name=t.name, topic_id=topic.topic_id,
                                   error_code=36 if exists else 0, error_message=None,
                                   num_partitions=len(topic.partitions),
                                   replication_factor=1, configs=[]))
        return spec.new(throttle_time_ms=0, topics=out)

    async def delete_topics(self, h: RequestHeader, req: Any) -> Struct:
        spec = self._spec(20)
        rstruct = spec.struct.fields[1].struct
        if h.api_version >= 6:
            names = [t.name if t.name is not None else
                     getattr(self._by_id(t.topic_id), "name", None) for t in req.topics]
        else:
            names = list(req.topic_names)
        out = []
        for name in names:
            topic = self.topics.pop(name, None) if name is not None else None
            out.append(rstruct.new(name=name, topic_id=topic.topic_id if topic else uuid.UUID(int=0),
                                   error_code=0 if topic else 3, error_message=None))
        return spec.new(throttle_time_ms=0, responses=out)

    async def init_producer_id(self, h: RequestHeader, req: Any) -> Struct:
        self._next_pid += 1
        return self._spec(22).new(throttle_time_ms=0, error_code=0, producer_id=self._next_pid,
                                  producer_epoch=0)
