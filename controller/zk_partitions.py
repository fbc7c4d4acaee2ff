"""Fenced controller writes on ClusterStore: partition-state znodes, reassignment
and the last step of topic deletion.

A mixin like controller/zk_generic.py: ClusterStore supplies ``zk`` (the
synchronous ZkClient seam) and ``_run`` (runs a call in a worker thread).
Every write is a ZooKeeper transaction that also checks the version of
/controller_epoch read when this broker became controller (Kafka's
expectedControllerEpochZkVersion); a fenced-out writer gets ControllerMovedError.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Callable, Iterable

from controller import zkdata as zd
from controller.errors import BadVersionError, ControllerMovedError, NoNodeError, TopicNotFound
from controller.zkclient import ZkClient, CheckOp, CreateOp, DeleteOp, Op, SetOp

TopicPartition = tuple[str, int]
# Partition-state writes packed into one ZooKeeper transaction: each op is ~150
# bytes, far below jute.maxbuffer (1 MiB) even at this size.
CHUNK = 200


class FencedPartitionAccess:
    zk: ZkClient
    _run: Callable[..., Awaitable[Any]]

    # -- fenced transactions -------------------------------------------------------------

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

    async def partition_states(self, parts: Iterable[TopicPartition],
                               changed_at: dict[TopicPartition, int] | None = None
                               ) -> dict[TopicPartition, zd.LeaderIsr]:
        """State znodes of ``parts`` (missing ones left out), read pipelined; with
        ``changed_at``, each one's last-change zxid is put there too."""
        wanted = list(parts)

        def read() -> dict[TopicPartition, zd.LeaderIsr]:
            got = self.zk.get_many([zd.partition_state_path(t, p) for t, p in wanted])
            out = {}
            for tp, r in zip(wanted, got):
                if isinstance(r, Exception):
                    continue
                out[tp] = zd.decode_partition_state(r[0], r[1].version)
                if changed_at is not None:
                    changed_at[tp] = r[1].mzxid
            return out
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
            dirs: list[Op] = [CreateOp(f"{zd.partitions_path(t)}/{p}") for (t, p), _s in items]
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
        return await self._run(write)

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
