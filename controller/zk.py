"""ClusterStore: the async view of ZooKeeper shared by a broker and its controller.

``KazooZk`` (controller/kazoo_zk.py, the only module importing kazoo) adapts
kazoo to the ``ZkClient`` seam (controller/zkclient.py); ``ClusterStore`` runs every blocking
call in a worker thread (``asyncio.to_thread``) and hands watch callbacks to the
event loop with ``loop.call_soon_threadsafe`` -- a callback never touches state
itself. Layout and JSON: controller/zkdata.py. Generic znode access is mixed
in from controller/zk_generic.py, the controller's fenced partition-state,
reassignment and topic-deletion writes from controller/zk_partitions.py, the
/controller and /controller_epoch znodes from controller/zk_controller_znodes.py.

Controller writes are fenced: each one is a ZooKeeper transaction that also
checks the version of /controller_epoch read when this broker became
controller (Kafka's expectedControllerEpochZkVersion). A broker that lost the
controllership cannot overwrite its successor's state: its transaction fails
and ControllerMovedError is raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any, Callable, Iterable, Sequence

from controller import zkdata as zd
from controller.zk_controller_znodes import ControllerZnodeAccess
from controller.zk_generic import GenericZnodeAccess
from controller.zk_partitions import FencedPartitionAccess
from controller.zk_partitions import TopicPartition as TopicPartition  # re-exported
from controller.errors import (BadVersionError, NodeExistsError, NoNodeError,
                               TopicAlreadyExists, TopicNotFound, ZkError)
from controller.kazoo_zk import KazooZk
from controller.zkclient import (CONNECTED, LOST, SUSPENDED, CreateOp, DeleteOp, Stat,
                                 ZkClient)

log = logging.getLogger("pybroker.zk")

# A broker restarted after kill -9 replaces its dead session's /brokers/ids/<id> when
# that names its own endpoints, else waits for it (ClusterStore.register_broker).
# ZooKeeper expires a session on a tick boundary, up
# to one tickTime (2 s by default) after its timeout: the margin covers that.
STALE_REGISTRATION_MARGIN_S = 3.0
STALE_REGISTRATION_RECHECK_S = 1.0   # re-read the znode this often, watch event or not


# --- the async store --------------------------------------------------------------------

class ClusterStore(FencedPartitionAccess, GenericZnodeAccess, ControllerZnodeAccess):
    """Async ZooKeeper access for one broker (and its controller).

    ``connect`` may carry a chroot ("127.0.0.1:2181/pybroker"). ``client`` is the
    seam for tests (a FakeZk); by default kazoo is used.
    """

    def __init__(self, connect: str, session_timeout_ms: int = 18000,
                 connection_timeout_ms: int | None = None, *,
                 client: ZkClient | None = None) -> None:
        self.connect_string = connect
        # zookeeper.connection.timeout.ms: how long start-up waits for a session, and how
        # long a shutdown step waits for a ZooKeeper that may be gone
        self.connection_timeout_s = (connection_timeout_ms or session_timeout_ms) / 1000.0
        self.session_timeout_s = session_timeout_ms / 1000.0
        self.zk: ZkClient = client or KazooZk(connect, session_timeout_ms)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._lost = False
        self._registration: zd.BrokerInfo | None = None
        # the czxid of our /brokers/ids/<id>; changes when a new session re-registers
        self.broker_epoch = -1
        self._session_listeners: list[Callable[[str], None]] = []
        self._connection_listeners: list[Callable[[str], None]] = []
        # /config/changes subscribers (watch_config_entity_changes), one shared watch
        self._config_change_subscribers: list[Callable[[str], None]] = []
        self._config_change_watch: Callable[[], None] | None = None
        self._config_changes_seen: set[str] = set()

    # -- lifecycle -----------------------------------------------------------------------

    async def _run(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kw)

    async def connect(self) -> None:
        """Open the session and create Kafka's persistent top-level paths."""
        self._loop = asyncio.get_running_loop()
        await self._run(self.zk.start, self.connection_timeout_s)
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

    def add_connection_listener(self, fn: Callable[[str], None]) -> None:
        """fn("SUSPENDED") when the connection to ZooKeeper is lost (the session may
        still live), fn("RECONNECTED") when it is back within the same session.
        Runs on the event loop. (A new session is add_session_listener's RENEWED.)"""
        self._connection_listeners.append(fn)

    def _on_state(self, state: str) -> None:  # client thread
        if state == LOST:
            self._lost = True
            self._call_in_loop(self._notify_session, LOST)
        elif state == CONNECTED and self._lost:
            self._lost = False
            self._call_in_loop(lambda: asyncio.ensure_future(self._renew_session()))
        elif state == SUSPENDED:
            self._call_in_loop(self._notify_connection, "SUSPENDED")
        elif state == CONNECTED:
            self._call_in_loop(self._notify_connection, "RECONNECTED")

    def _notify_connection(self, what: str) -> None:
        log.warning("ZooKeeper connection %s", "lost" if what == "SUSPENDED" else "back")
        for fn in self._connection_listeners:
            fn(what)

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

    # ---- /config/changes: one shared watch (issue 17: topic configs and client quotas) ----

    def watch_config_changes(self, fn: Callable[[str], None]) -> Callable[[], None]:
        """fn(topic) for every new /config/changes notification about a topic."""
        def on_entity(entity_path: str) -> None:
            kind, _, name = entity_path.partition("/")
            if kind == "topics" and name:
                fn(name)
        return self.watch_config_entity_changes(on_entity)

    def watch_config_entity_changes(self, fn: Callable[[str], None]) -> Callable[[], None]:
        """fn(entity_path) for every new /config/changes notification: "topics/<t>",
        "users/<u>", "clients/<c>", "users/<u>/clients/<c>", "brokers/<id>" (a version-1
        notification's entity_type/entity_name read as "<type>/<name>"). One children
        watch serves every subscriber; notifications already there when one subscribes
        are delivered to it too (subscribers re-read the entity: harmless).
        Returns a cancel function."""
        subscribers, seen = self._config_change_subscribers, self._config_changes_seen
        subscribers.append(fn)
        if self._config_change_watch is None:
            def changed(children: list[str]) -> None:
                fresh = sorted(c for c in children if c not in seen)
                seen.update(fresh)
                if fresh:
                    asyncio.ensure_future(self._read_changes(fresh, subscribers))
            self._config_change_watch = self.watch_children(zd.CONFIG_CHANGES, changed)
        elif seen:   # a late subscriber hears of the notifications already there, too
            asyncio.ensure_future(self._read_changes(sorted(seen), [fn]))

        def cancel() -> None:
            if fn in subscribers:
                subscribers.remove(fn)
        return cancel

    async def _read_changes(self, names: list[str],
                            subscribers: list[Callable[[str], None]]) -> None:
        for name in names:
            try:
                data, _ = await self._run(self.zk.get, f"{zd.CONFIG_CHANGES}/{name}")
            except NoNodeError:
                continue
            entity_path = _config_change_entity(data)
            if entity_path:
                for fn in list(subscribers):
                    try:
                        fn(entity_path)
                    except Exception:
                        log.exception("config change subscriber failed on %s", entity_path)

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
                              rack: str | None = None, *,
                              stale_wait_s: float | None = None,
                              replace_own: bool = False) -> int:
        """Create the ephemeral /brokers/ids/<id>; -> the broker epoch (its czxid).

        endpoints: Endpoint objects or "NAME://host:port" strings.

        A broker restarted right after a kill -9 finds its dead session's znode
        still there: ZooKeeper keeps a session's ephemerals until it expires it,
        a session timeout after its last heartbeat. Apache Kafka gives up here
        ("already registered"). We:
          1. create the znode; done when created (or when it is ours already);
          2. held by another session that names exactly our endpoints, with
             ``replace_own`` (the caller has bound those listeners, so no live
             process on this host serves them: the holder is this broker's own
             previous run): replace it at once, delete and create in one
             transaction on the version read, and log it. A live controller sees
             one change of /brokers/ids, the same ids with a new broker epoch, and
             handles a restarted ("bounced") broker: never a moment without it.
             When no controller sees it (none was alive, or the dead session was
             the controller's), the next one finds this broker leading partitions
             whose state is older than its registration and handles it as
             restarted then (controller.restarts.restarted_leaders). Waiting instead left the
             broker out of the cluster's metadata between the expiry and our
             registration, and librdkafka forgets a broker that leaves the
             metadata, with a group coordinator cached on it
             (confluentinc/librdkafka#5511: send_offsets_to_transaction and a
             consumer's committed() then hang);
          3. held by another session otherwise: log once why and for how long we
             wait, then wait until it goes (a data watch, re-checked every
             STALE_REGISTRATION_RECHECK_S) and go back to 1;
          4. still held after ``stale_wait_s`` (default: our session timeout plus
             STALE_REGISTRATION_MARGIN_S): a different live broker has this id;
             raise NodeExistsError.
        If the dead session held /controller, that stays until ZooKeeper expires
        the session (the controller, started after this, campaigns as usual). The
        wait runs on the event loop (each ZooKeeper call in a worker thread);
        cancelling the call ends it."""
        eps = tuple(e if isinstance(e, zd.Endpoint) else zd.Endpoint.parse(e) for e in endpoints)
        info = zd.BrokerInfo(broker_id, eps, rack)
        path, data = zd.broker_path(broker_id), zd.encode_broker(info)
        ours = ",".join(e.connection_string() for e in eps)
        budget = (self.session_timeout_s + STALE_REGISTRATION_MARGIN_S
                  if stale_wait_s is None else stale_wait_s)
        loop = asyncio.get_running_loop()
        began = loop.time()
        gone = asyncio.Event()
        cancel_watch: Callable[[], None] | None = None
        try:
            while True:
                gone.clear()
                epoch, holder = await self._run(self._create_registration, path, data)
                if holder is None:
                    break
                if replace_own and holder[1] == ours:
                    epoch = await self._run(self._replace_registration, path, data, holder[0])
                    if epoch >= 0:
                        log.warning(
                            "broker id %d was still registered in ZooKeeper by session 0x%x "
                            "with our own endpoints (%s): this broker's previous run, dead "
                            "(its listeners are ours now); replaced that registration",
                            broker_id, holder[0], ours)
                        break
                    continue                    # it changed meanwhile: look again
                waited = loop.time() - began
                if cancel_watch is None:
                    why = ("most likely this broker's own session from before it died"
                           if holder[1] == ours else
                           f"not our endpoints ({ours}): another broker may have this id")
                    log.warning(
                        "broker id %d is still registered in ZooKeeper by session 0x%x "
                        "(endpoints %s), %s; waiting up to %.1f s "
                        "(zookeeper.session.timeout.ms=%d plus %.1f s) for ZooKeeper to "
                        "expire it", broker_id, holder[0], holder[1], why, budget,
                        round(self.session_timeout_s * 1000), budget - self.session_timeout_s)
                    cancel_watch = self.watch_data(
                        path, lambda d: gone.set() if d is None else None)
                if waited >= budget:
                    raise NodeExistsError(
                        f"broker id {broker_id} is already registered by another session "
                        f"(0x{holder[0]:x}, endpoints {holder[1]}), still after waiting "
                        f"{waited:.1f} s: is another broker running with broker.id="
                        f"{broker_id}?")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        gone.wait(), min(budget - waited, STALE_REGISTRATION_RECHECK_S))
        finally:
            if cancel_watch is not None:
                cancel_watch()
        if cancel_watch is not None:
            log.info("the stale registration of broker id %d went away after %.1f s; "
                     "registering", broker_id, loop.time() - began)
        self._registration = info
        self.broker_epoch = epoch
        log.info("registered broker %d at %s (epoch %d)", broker_id, ours, epoch)
        return epoch

    async def update_broker_registration(self, broker_id: int,
                                         endpoints: Sequence[zd.Endpoint],
                                         rack: str | None = None) -> None:
        """Rewrite our own /brokers/ids/<id> with new endpoints (dynamic listeners,
        issue 18; Kafka's updateBrokerInfo): same JSON shape, same znode, so the
        broker epoch (czxid) stays; the controller's data watch sees it. A new
        session re-registers with these endpoints."""
        info = zd.BrokerInfo(broker_id, tuple(endpoints), rack)
        data = zd.encode_broker(info)
        await self._run(self.zk.set, zd.broker_path(broker_id), data)
        self._registration = info

    def _create_registration(self, path: str, data: bytes
                             ) -> tuple[int, tuple[int, str] | None]:
        """One attempt (worker thread): -> (czxid, None) once the znode is ours, or
        (-1, (owner session, endpoints)) while another session holds it."""
        while True:
            try:
                self.zk.create(path, data, ephemeral=True)
            except NodeExistsError:
                pass
            try:
                held, st = self.zk.get(path)
            except NoNodeError:
                continue                        # it went between the two calls
            if st.ephemeral_owner == self.zk.session_id():
                return st.czxid, None
            try:
                eps = ",".join(e.connection_string()
                               for e in zd.decode_broker(0, held).endpoints)
            except (ValueError, AttributeError):    # not JSON as we write it
                eps = "?"
            return -1, (st.ephemeral_owner, eps)

    def _replace_registration(self, path: str, data: bytes, stale_owner: int) -> int:
        """(worker thread) Delete the znode ``stale_owner``'s session holds and create
        ours, in one transaction on the version read; -> our czxid, or -1 when the
        znode changed meanwhile (gone, or another session's now)."""
        try:
            _held, st = self.zk.get(path)
        except NoNodeError:
            return -1
        if st.ephemeral_owner != stale_owner:
            return -1
        try:
            self.zk.multi([DeleteOp(path, st.version), CreateOp(path, data, ephemeral=True)])
        except ZkError:
            return -1
        _held, st = self.zk.get(path)
        return st.czxid if st.ephemeral_owner == self.zk.session_id() else -1

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
            try:
                self.zk.create(path, data, makepath=True)
            except NodeExistsError:   # another broker auto-creating the same topic won the race
                self.zk.set(path, data)   # (as Kafka: the topic znode decides who created it)

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

    # -- log dir failures (KIP-112; broker/log_dirs/, controller/log_dir_events.py) ------

    async def propagate_log_dir_event(self, broker_id: int) -> str:
        """KafkaZkClient.propagateLogDirEvent: a persistent sequential
        /log_dir_event_notification/log_dir_event_<seq> naming this broker; -> its path."""
        path = await self._run(self.zk.create, f"{zd.LOG_DIR_EVENT}/{zd.LOG_DIR_EVENT_PREFIX}",
                               zd.encode_log_dir_event(broker_id), sequence=True, makepath=True)
        return str(path)

    async def log_dir_events(self) -> dict[str, int | None]:
        """Every pending notification: znode name -> the broker it names (None when
        unreadable; a notification deleted meanwhile is left out)."""
        def read() -> dict[str, int | None]:
            try:
                children = self.zk.children(zd.LOG_DIR_EVENT)
            except NoNodeError:
                return {}
            names = sorted(c for c in children if c.startswith(zd.LOG_DIR_EVENT_PREFIX))
            got = self.zk.get_many([f"{zd.LOG_DIR_EVENT}/{n}" for n in names])
            return {n: zd.decode_log_dir_event(r[0]) for n, r in zip(names, got)
                    if not isinstance(r, Exception)}
        return dict(await self._run(read))

    async def delete_log_dir_events(self, names: Iterable[str], epoch_zk_version: int) -> None:
        """Delete handled notifications, fenced by the controller epoch (one already
        gone is fine). Raises ControllerMovedError when fenced."""
        ops = [DeleteOp(f"{zd.LOG_DIR_EVENT}/{n}") for n in names]
        if ops:
            await self._run(self._fenced_chunked, epoch_zk_version, ops)


def _config_change_entity(data: bytes | None) -> str | None:
    """The entity path a /config/changes notification names (issue 17), or None."""
    import json
    try:
        obj = json.loads(data) if data else None
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(obj, dict):
        return None
    if obj.get("version") == 1:   # {"version":1,"entity_type":"topics","entity_name":"t"}
        kind, name = obj.get("entity_type"), obj.get("entity_name")
        return f"{kind}/{name}" if kind and name else None
    path = obj.get("entity_path")
    return str(path) if path else None
