"""ClusterStore: the async view of ZooKeeper shared by a broker and its controller.

``KazooZk`` (controller/kazoo_zk.py, the only module importing kazoo) adapts
kazoo to the ``ZkClient`` seam (controller/zkclient.py); ``ClusterStore`` runs every blocking
call in a worker thread (``asyncio.to_thread``) and hands watch callbacks to the
event loop with ``loop.call_soon_threadsafe`` -- a callback never touches state
itself. Layout and JSON: controller/zkdata.py.

Controller writes are fenced: each one is a ZooKeeper transaction that also
checks the version of /controller_epoch read when this broker became
controller (Kafka's expectedControllerEpochZkVersion). A broker that lost the
controllership cannot overwrite its successor's state: its transaction fails
and ControllerMovedError is raised.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Callable, Iterable, Sequence

from controller import zkdata as zd
from controller.zk_generic import GenericZnodeAccess
from controller.errors import (BadVersionError, ControllerMovedError, NodeExistsError,
                               NoNodeError, TopicAlreadyExists, TopicNotFound, ZkError)
from controller.kazoo_zk import KazooZk
from controller.zkclient import (CONNECTED, LOST, CheckOp, CreateOp, DeleteOp, Op, SetOp, Stat,
                                 ZkClient)

log = logging.getLogger("pybroker.zk")

TopicPartition = tuple[str, int]
# Partition-state writes packed into one ZooKeeper transaction: each op is ~150
# bytes, far below jute.maxbuffer (1 MiB) even at this size.
CHUNK = 200


# --- the async store --------------------------------------------------------------------

class ClusterStore(GenericZnodeAccess):
    """Async ZooKeeper access for one broker (and its controller).

    ``connect`` may carry a chroot ("127.0.0.1:2181/pybroker"). ``client`` is the
    seam for tests (a FakeZk); by default kazoo is used.
    """

    def __init__(self, connect: str, session_timeout_ms: int = 18000,
                 connection_timeout_ms: int | None = None, *,
                 client: ZkClient | None = None) -> None:
        self.connect_string = connect
        self._timeout = (connection_timeout_ms or session_timeout_ms) / 1000.0
        self.zk: ZkClient = client or KazooZk(connect, session_timeout_ms)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._lost = False
        self._registration: zd.BrokerInfo | None = None
        self._session_listeners: list[Callable[[str], None]] = []

    # -- lifecycle -----------------------------------------------------------------------

    async def _run(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kw)

    async def connect(self) -> None:
        """Open the session and create Kafka's persistent top-level paths."""
        self._loop = asyncio.get_running_loop()
        await self._run(self.zk.start, self._timeout)
        self.zk.add_listener(self._on_state)
        await self._run(self._create_top_level_paths)
        log.info("connected to ZooKeeper at %s", self.connect_string)

    def _create_top_level_paths(self) -> None:
        for p in zd.PERSISTENT_PATHS:
            self.zk.ensure_path(p)

    async def close(self) -> None:
        """Close the session: our ephemeral znodes (/brokers/ids/<id>, /controller) go at once."""
        if self._closed:
            return
        self._closed = True
        await self._run(self.zk.stop)

    @property
    def closed(self) -> bool:
        return self._closed

    def add_session_listener(self, fn: Callable[[str], None]) -> None:
        """fn("LOST") when the session expired; fn("RENEWED") once a new session is
        up and this broker is registered again. Runs on the event loop."""
        self._session_listeners.append(fn)

    def _on_state(self, state: str) -> None:  # client thread
        if state == LOST:
            self._lost = True
            self._call_in_loop(self._notify_session, LOST)
        elif state == CONNECTED and self._lost:
            self._lost = False
            self._call_in_loop(lambda: asyncio.ensure_future(self._renew_session()))

    async def _renew_session(self) -> None:
        if self._registration is not None:
            r = self._registration
            await self.register_broker(r.id, r.endpoints, r.rack)
        self._notify_session("RENEWED")

    def _notify_session(self, what: str) -> None:
        log.warning("ZooKeeper session %s", "expired" if what == LOST else "re-established")
        for fn in self._session_listeners:
            fn(what)

    def _call_in_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        loop = self._loop
        if self._closed or loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # loop closing
            pass

    # -- watches (callbacks run on the event loop) ---------------------------------------

    def watch_children(self, path: str, fn: Callable[[list[str]], None]) -> Callable[[], None]:
        """Persistent children watch. Returns a cancel function."""
        stopped = False

        def fire(children: list[str]) -> bool | None:
            if stopped or self._closed:
                return False
            self._call_in_loop(fn, list(children))
            return None
        self.zk.watch_children(path, fire)

        def cancel() -> None:
            nonlocal stopped
            stopped = True
        return cancel

    def watch_data(self, path: str, fn: Callable[[bytes | None], None]) -> Callable[[], None]:
        """Persistent data watch (fires with None while the znode is absent)."""
        stopped = False

        def fire(data: bytes | None, _st: Stat | None) -> bool | None:
            if stopped or self._closed:
                return False
            self._call_in_loop(fn, data)
            return None
        self.zk.watch_data(path, fire)

        def cancel() -> None:
            nonlocal stopped
            stopped = True
        return cancel

    def watch_config_changes(self, fn: Callable[[str], None]) -> Callable[[], None]:
        """fn(topic) for every new /config/changes notification about a topic."""
        seen: set[str] = set()

        def changed(children: list[str]) -> None:
            fresh = sorted(c for c in children if c not in seen)
            seen.update(fresh)
            if fresh:
                asyncio.ensure_future(self._read_changes(fresh, fn))
        return self.watch_children(zd.CONFIG_CHANGES, changed)

    async def _read_changes(self, names: list[str], fn: Callable[[str], None]) -> None:
        for name in names:
            try:
                data, _ = await self._run(self.zk.get, f"{zd.CONFIG_CHANGES}/{name}")
            except NoNodeError:
                continue
            topic = zd.decode_config_change(data)
            if topic:
                fn(topic)

    # -- cluster and broker identity -----------------------------------------------------

    async def cluster_id(self) -> str:
        """/cluster/id, created with a fresh Kafka uuid if absent."""
        def get_or_create() -> str:
            try:
                return zd.decode_cluster_id(self.zk.get(zd.CLUSTER_ID)[0])
            except NoNodeError:
                pass
            new = zd.uuid_to_str(zd.random_kafka_uuid())
            try:
                self.zk.create(zd.CLUSTER_ID, zd.encode_cluster_id(new), makepath=True)
                return new
            except NodeExistsError:
                return zd.decode_cluster_id(self.zk.get(zd.CLUSTER_ID)[0])
        return str(await self._run(get_or_create))

    async def allocate_broker_id(self) -> int:
        """Kafka's generateBrokerId: bump /brokers/seqid's version; id = version + 1000."""
        def bump() -> int:
            try:
                return self.zk.set(zd.BROKER_SEQID, b"", -1).version
            except NoNodeError:
                self.zk.ensure_path(zd.BROKER_SEQID)
                return self.zk.set(zd.BROKER_SEQID, b"", -1).version
        return int(await self._run(bump)) + zd.RESERVED_BROKER_MAX_ID

    async def register_broker(self, broker_id: int,
                              endpoints: Sequence[zd.Endpoint | str],
                              rack: str | None = None) -> int:
        """Create the ephemeral /brokers/ids/<id>; -> the broker epoch (its czxid).

        endpoints: Endpoint objects or "NAME://host:port" strings. Raises
        NodeExistsError if another live session holds the id."""
        eps = tuple(e if isinstance(e, zd.Endpoint) else zd.Endpoint.parse(e) for e in endpoints)
        info = zd.BrokerInfo(broker_id, eps, rack)
        path = zd.broker_path(broker_id)

        def create() -> int:
            try:
                self.zk.create(path, zd.encode_broker(info), ephemeral=True)
            except NodeExistsError:
                _, st = self.zk.get(path)
                if st.ephemeral_owner != self.zk.session_id():
                    raise NodeExistsError(f"broker id {broker_id} is already registered "
                                          f"by another session") from None
            return self.zk.get(path)[1].czxid
        epoch = int(await self._run(create))
        self._registration = info
        log.info("registered broker %d at %s (epoch %d)", broker_id,
                 ",".join(e.connection_string() for e in eps), epoch)
        return epoch

    async def live_brokers(self) -> list[zd.BrokerInfo]:
        def read() -> list[zd.BrokerInfo]:
            kids = self.zk.children(zd.BROKER_IDS)
            got = self.zk.get_many([f"{zd.BROKER_IDS}/{c}" for c in kids])
            out = [zd.decode_broker(int(c), r[0], r[1].czxid)
                   for c, r in zip(kids, got) if not isinstance(r, Exception)]
            return sorted(out, key=lambda b: b.id)
        return list(await self._run(read))

    # -- topics (any broker) -------------------------------------------------------------

    async def create_topic(self, name: str, assignment: dict[int, list[int]],
                           configs: dict[str, str] | None = None) -> uuid.UUID:
        """AdminZkClient.createTopicWithAssignment: configs first, then the assignment
        znode the controller watches. Raises TopicAlreadyExists."""
        topic_id = zd.random_kafka_uuid()
        data = zd.encode_topic(zd.TopicAssignment(topic_id, dict(assignment)))

        def write() -> None:
            if self.zk.exists(zd.topic_path(name)) is not None:
                raise TopicAlreadyExists(f"Topic '{name}' already exists.")
            if self.zk.exists(zd.delete_topic_path(name)) is not None:
                raise TopicAlreadyExists(f"Topic '{name}' is marked for deletion.")
            self._write_config(name, configs or {})
            try:
                self.zk.create(zd.topic_path(name), data, makepath=True)
            except NodeExistsError:
                raise TopicAlreadyExists(f"Topic '{name}' already exists.") from None
        await self._run(write)
        return topic_id

    def _write_config(self, name: str, configs: dict[str, str]) -> None:
        path, data = zd.topic_config_path(name), zd.encode_topic_config(configs)
        try:
            self.zk.set(path, data)
        except NoNodeError:
            self.zk.create(path, data, makepath=True)

    async def add_partitions(self, name: str, new_assignment: dict[int, list[int]]) -> None:
        """Add partitions to a topic: ``new_assignment`` holds the new partitions (or
        all of them; existing partitions keep their replicas). Versioned update."""
        def write() -> None:
            while True:
                try:
                    data, st = self.zk.get(zd.topic_path(name))
                except NoNodeError:
                    raise TopicNotFound(name) from None
                cur = zd.decode_topic(data)
                merged = dict(new_assignment)
                merged.update(cur.partitions)
                cur.partitions = dict(sorted(merged.items()))
                try:
                    self.zk.set(zd.topic_path(name), zd.encode_topic(cur), st.version)
                    return
                except BadVersionError:
                    continue
        await self._run(write)

    async def delete_topic(self, name: str) -> None:
        """Queue the topic for deletion (/admin/delete_topics/<t>); the controller does
        the rest. Raises TopicNotFound."""
        def write() -> None:
            if self.zk.exists(zd.topic_path(name)) is None:
                raise TopicNotFound(name)
            try:
                self.zk.create(zd.delete_topic_path(name), b"", makepath=True)
            except NodeExistsError:
                pass
        await self._run(write)

    async def topic_configs(self, name: str) -> dict[str, str]:
        def read() -> dict[str, str]:
            try:
                return zd.decode_topic_config(self.zk.get(zd.topic_config_path(name))[0])
            except NoNodeError:
                return {}
        return dict(await self._run(read))

    async def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """Replace the topic's overrides and post a change notification (every broker
        watching /config/changes applies them)."""
        def write() -> None:
            if self.zk.exists(zd.topic_path(name)) is None:
                raise TopicNotFound(name)
            self._write_config(name, configs)
            self.zk.create(f"{zd.CONFIG_CHANGES}/{zd.CONFIG_CHANGE_PREFIX}",
                           zd.encode_config_change(name), sequence=True, makepath=True)
        await self._run(write)

    async def read_topics(self, names: Iterable[str] | None = None
                          ) -> dict[str, zd.TopicAssignment]:
        """Topic znodes (all topics when names is None); missing topics are left out."""
        def read() -> dict[str, zd.TopicAssignment]:
            wanted = self.zk.children(zd.TOPICS) if names is None else list(names)
            got = self.zk.get_many([zd.topic_path(t) for t in wanted])
            return {t: zd.decode_topic(r[0]) for t, r in zip(wanted, got)
                    if not isinstance(r, Exception)}
        return dict(await self._run(read))

    async def topic_assignments(self) -> dict[str, dict[int, list[int]]]:
        return {t: a.partitions for t, a in (await self.read_topics()).items()}

    async def topics_to_delete(self) -> list[str]:
        return list(await self._run(self.zk.children, zd.DELETE_TOPICS))

    async def allocate_producer_ids(self, broker_id: int, count: int = 1000) -> tuple[int, int]:
        """Claim the next block of producer ids -> (first, last), inclusive
        (ZkProducerIdManager: conditional update of /latest_producer_id_block)."""
        def claim() -> tuple[int, int]:
            while True:
                try:
                    data, st = self.zk.get(zd.PRODUCER_ID_BLOCK)
                except NoNodeError:
                    self.zk.ensure_path(zd.PRODUCER_ID_BLOCK)
                    continue
                prev = zd.decode_producer_id_block(data)
                first = 0 if prev is None else prev[1] + 1
                last = first + count - 1
                try:
                    self.zk.set(zd.PRODUCER_ID_BLOCK,
                                zd.encode_producer_id_block(broker_id, first, last), st.version)
                    return first, last
                except BadVersionError:
                    continue
        first, last = await self._run(claim)
        return int(first), int(last)

    # -- controller election and fenced writes -------------------------------------------

    async def controller_id(self) -> int | None:
        def read() -> int | None:
            try:
                return zd.decode_controller(self.zk.get(zd.CONTROLLER)[0])
            except NoNodeError:
                return None
        return await self._run(read)  # type: ignore[no-any-return]

    async def controller_epoch(self) -> tuple[int, int] | None:
        """-> (epoch, znode version) of /controller_epoch, or None."""
        def read() -> tuple[int, int] | None:
            try:
                data, st = self.zk.get(zd.CONTROLLER_EPOCH)
            except NoNodeError:
                return None
            return zd.decode_controller_epoch(data), st.version
        return await self._run(read)  # type: ignore[no-any-return]

    async def register_controller(self, broker_id: int) -> tuple[int, int]:
        """KafkaZkClient.registerControllerAndIncrementControllerEpoch: in one transaction
        create the ephemeral /controller and set /controller_epoch to epoch+1 against
        the version just read. -> (new epoch, its znode version). Raises
        ControllerMovedError when another broker won."""
        def elect() -> tuple[int, int]:
            try:
                data, st = self.zk.get(zd.CONTROLLER_EPOCH)
                epoch, version = zd.decode_controller_epoch(data), st.version
            except NoNodeError:
                try:
                    self.zk.create(zd.CONTROLLER_EPOCH,
                                   zd.encode_controller_epoch(zd.INITIAL_CONTROLLER_EPOCH))
                except NodeExistsError:
                    pass
                data, st = self.zk.get(zd.CONTROLLER_EPOCH)
                epoch, version = zd.decode_controller_epoch(data), st.version
            try:
                res = self.zk.multi([
                    CreateOp(zd.CONTROLLER, zd.encode_controller(broker_id), ephemeral=True),
                    SetOp(zd.CONTROLLER_EPOCH, zd.encode_controller_epoch(epoch + 1), version)])
                return epoch + 1, res[1].version
            except (NodeExistsError, BadVersionError):
                return self._check_controller_and_epoch(broker_id, epoch + 1)
        return await self._run(elect)  # type: ignore[no-any-return]

    def _check_controller_and_epoch(self, broker_id: int, new_epoch: int) -> tuple[int, int]:
        # The transaction may have succeeded on a retried connection: trust it only
        # if /controller is ours and the epoch is the one we meant to write.
        try:
            current = zd.decode_controller(self.zk.get(zd.CONTROLLER)[0])
        except NoNodeError:
            raise ControllerMovedError("/controller went away during election") from None
        if current == broker_id:
            data, st = self.zk.get(zd.CONTROLLER_EPOCH)
            if zd.decode_controller_epoch(data) == new_epoch:
                return new_epoch, st.version
        raise ControllerMovedError(f"controller is broker {current}")

    async def resign_controller(self, broker_id: int) -> None:
        """Delete /controller if it is still ours."""
        def drop() -> None:
            try:
                data, st = self.zk.get(zd.CONTROLLER)
                if zd.decode_controller(data) == broker_id:
                    self.zk.delete(zd.CONTROLLER, st.version)
            except (NoNodeError, BadVersionError):
                pass
        await self._run(drop)

    def _fenced(self, epoch_zk_version: int, ops: list[Op]) -> list[Any]:
        try:
            return self.zk.multi([CheckOp(zd.CONTROLLER_EPOCH, epoch_zk_version), *ops])[1:]
        except BadVersionError:
            # Either the epoch moved (we are fenced) or one of ops lost a race.
            st = self.zk.exists(zd.CONTROLLER_EPOCH)
            if st is None or st.version != epoch_zk_version:
                raise ControllerMovedError("controller epoch moved on") from None
            raise

    def _check_fenced(self, epoch_zk_version: int, results: list[Any]) -> None:
        """After a pipelined batch of fenced transactions: if any failed on a bad
        version, find out whether it was the epoch check (we are fenced)."""
        if any(isinstance(r, BadVersionError) for r in results):
            st = self.zk.exists(zd.CONTROLLER_EPOCH)
            if st is None or st.version != epoch_zk_version:
                raise ControllerMovedError("controller epoch moved on")

    def _fenced_many(self, epoch_zk_version: int, txns: list[list[Op]]) -> list[Any]:
        """Many fenced transactions, pipelined (one round trip): -> per transaction
        its results (without the epoch check's) or the error."""
        check = CheckOp(zd.CONTROLLER_EPOCH, epoch_zk_version)
        results = self.zk.multi_many([[check, *ops] for ops in txns]) if txns else []
        self._check_fenced(epoch_zk_version, results)
        return [r if isinstance(r, Exception) else r[1:] for r in results]

    def _fenced_chunked(self, epoch_zk_version: int, ops: list[Op]) -> list[Any]:
        """One op per partition, packed CHUNK to a fenced transaction and the
        transactions pipelined: kazoo's cost is per request, so this is several
        times faster than one transaction per partition. A chunk that fails (one
        of its partitions changed under us) is redone one transaction per
        partition, so only the partitions at fault fail. -> per op its result or
        its error."""
        chunks = [ops[i:i + CHUNK] for i in range(0, len(ops), CHUNK)]
        out: list[Any] = []
        for chunk, r in zip(chunks, self._fenced_many(epoch_zk_version, chunks)):
            if isinstance(r, Exception):
                out += self._fenced_many(epoch_zk_version, [[op] for op in chunk])
            else:
                out += [[x] for x in r]
        return out

    async def partition_states(self, parts: Iterable[TopicPartition]
                               ) -> dict[TopicPartition, zd.LeaderIsr]:
        """State znodes of ``parts`` (missing ones left out), read pipelined."""
        wanted = list(parts)

        def read() -> dict[TopicPartition, zd.LeaderIsr]:
            got = self.zk.get_many([zd.partition_state_path(t, p) for t, p in wanted])
            return {tp: zd.decode_partition_state(r[0], r[1].version)
                    for tp, r in zip(wanted, got) if not isinstance(r, Exception)}
        return dict(await self._run(read))

    async def create_partition_states(self, states: dict[TopicPartition, zd.LeaderIsr],
                                      controller_epoch: int, epoch_zk_version: int
                                      ) -> dict[TopicPartition, zd.LeaderIsr]:
        """Create state znodes (fenced), one transaction per partition so one existing
        znode does not fail the others; three pipelined round trips in all (the
        partitions/ parents, the partitions/<p> parents, the states). -> the states
        created (zk_version 0)."""
        if not states:
            return {}
        items = list(states.items())

        def write() -> dict[TopicPartition, zd.LeaderIsr]:
            topics = sorted({t for (t, _p), _s in items})
            self.zk.multi_many([[CreateOp(zd.partitions_path(t))] for t in topics])
            dirs = [CreateOp(f"{zd.partitions_path(t)}/{p}") for (t, p), _s in items]
            chunks = [dirs[i:i + CHUNK] for i in range(0, len(dirs), CHUNK)]
            for chunk, r in zip(chunks, self.zk.multi_many(chunks)):
                if isinstance(r, Exception):     # some exist already: one by one
                    self.zk.multi_many([[op] for op in chunk])
            results = self._fenced_chunked(epoch_zk_version, [
                CreateOp(zd.partition_state_path(t, p),
                         zd.encode_partition_state(s, controller_epoch))
                for (t, p), s in items])
            return {tp: zd.LeaderIsr(s.leader, s.leader_epoch, s.isr, controller_epoch, 0,
                                     s.leader_recovery_state)
                    for (tp, s), r in zip(items, results) if not isinstance(r, Exception)}
        return dict(await self._run(write))

    async def update_partition_states(self, states: dict[TopicPartition, zd.LeaderIsr],
                                      controller_epoch: int, epoch_zk_version: int
                                      ) -> tuple[dict[TopicPartition, zd.LeaderIsr],
                                                 list[TopicPartition]]:
        """Versioned, fenced updates (each state's zk_version is the version it was
        read at), pipelined. -> (written states with their new versions, partitions
        whose znode changed under us and must be re-read)."""
        if not states:
            return {}, []
        items = list(states.items())

        def write() -> tuple[dict[TopicPartition, zd.LeaderIsr], list[TopicPartition]]:
            results = self._fenced_chunked(epoch_zk_version, [
                SetOp(zd.partition_state_path(t, p),
                      zd.encode_partition_state(s, controller_epoch), s.zk_version)
                for (t, p), s in items])
            done, failed = {}, []
            for (tp, s), r in zip(items, results):
                if isinstance(r, Exception):
                    failed.append(tp)
                    continue
                done[tp] = zd.LeaderIsr(s.leader, s.leader_epoch, s.isr, controller_epoch,
                                        r[0].version, s.leader_recovery_state)
            return done, failed
        return await self._run(write)  # type: ignore[no-any-return]

    # -- reassignment (controller only, fenced) ------------------------------------------

    async def read_reassignment(self) -> dict[TopicPartition, list[int]]:
        """/admin/reassign_partitions (empty when absent)."""
        def read() -> dict[TopicPartition, list[int]]:
            try:
                return zd.decode_reassignment(self.zk.get(zd.REASSIGN_PARTITIONS)[0])
            except NoNodeError:
                return {}
        return dict(await self._run(read))

    async def remove_from_reassignment(self, done: set[TopicPartition],
                                       epoch_zk_version: int) -> None:
        """Drop ``done`` partitions from /admin/reassign_partitions; delete the znode
        when nothing is left (Kafka's maybeRemoveFromZkReassignment)."""
        def write() -> None:
            while True:
                try:
                    data, st = self.zk.get(zd.REASSIGN_PARTITIONS)
                except NoNodeError:
                    return
                left = {tp: r for tp, r in zd.decode_reassignment(data).items()
                        if tp not in done}
                op: Op = (SetOp(zd.REASSIGN_PARTITIONS, zd.encode_reassignment(left), st.version)
                          if left else DeleteOp(zd.REASSIGN_PARTITIONS, st.version))
                try:
                    self._fenced(epoch_zk_version, [op])
                    return
                except (BadVersionError, NoNodeError):
                    continue
        await self._run(write)

    async def update_topic_replicas(self, topic: str,
                                    changes: dict[int, tuple[list[int], list[int], list[int]]],
                                    epoch_zk_version: int) -> None:
        """Set partitions' (replicas, adding, removing) in /brokers/topics/<t>:
        read-modify-write against the znode version (so partitions added meanwhile
        are kept), fenced by the controller epoch."""
        def write() -> None:
            while True:
                try:
                    data, st = self.zk.get(zd.topic_path(topic))
                except NoNodeError:
                    raise TopicNotFound(topic) from None
                a = zd.decode_topic(data)
                for p, (rs, adding, removing) in changes.items():
                    a.partitions[p] = list(rs)
                    for m, v in ((a.adding, adding), (a.removing, removing)):
                        if v:
                            m[p] = list(v)
                        else:
                            m.pop(p, None)
                try:
                    self._fenced(epoch_zk_version, [
                        SetOp(zd.topic_path(topic), zd.encode_topic(a), st.version)])
                    return
                except BadVersionError:
                    continue
        await self._run(write)

    async def delete_topic_znodes(self, topic: str, epoch_zk_version: int) -> None:
        """Last step of a deletion (fenced): the topic's znodes, its config and the
        /admin/delete_topics marker, children before parents."""
        def delete() -> None:
            ops: list[Op] = []

            def walk(path: str) -> None:
                try:
                    kids = self.zk.children(path)
                except NoNodeError:
                    return
                for k in kids:
                    walk(f"{path}/{k}")
                ops.append(DeleteOp(path))
            walk(zd.topic_path(topic))
            for path in (zd.topic_config_path(topic), zd.delete_topic_path(topic)):
                if self.zk.exists(path) is not None:
                    ops.append(DeleteOp(path))
            if ops:
                self._fenced(epoch_zk_version, ops)
        await self._run(delete)

    async def remove_delete_marker(self, topic: str) -> None:
        """Drop /admin/delete_topics/<t> for a topic that does not exist."""
        def drop() -> None:
            try:
                self.zk.delete(zd.delete_topic_path(topic))
            except NoNodeError:
                pass
        await self._run(drop)
