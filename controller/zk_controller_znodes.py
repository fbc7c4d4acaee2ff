"""The controller's znodes on ClusterStore: /controller and /controller_epoch, read,
won (Kafka's registerControllerAndIncrementControllerEpoch, one transaction) and
given up.

A mixin: ClusterStore supplies ``zk`` (the synchronous ZkClient seam) and ``_run``
(runs a call in a worker thread). The epoch's znode version read here is what
every fenced controller write checks (controller/zk_partitions.py).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Callable

from controller import zkdata as zd
from controller.errors import BadVersionError, ControllerMovedError, NodeExistsError, NoNodeError
from controller.zkclient import ZkClient, CreateOp, SetOp


class ControllerZnodeAccess:
    zk: ZkClient
    _run: Callable[..., Awaitable[Any]]

    async def controller_id(self) -> int | None:
        def read() -> int | None:
            try:
                return zd.decode_controller(self.zk.get(zd.CONTROLLER)[0])
            except NoNodeError:
                return None
        return await self._run(read)

    async def controller_epoch(self) -> tuple[int, int] | None:
        """-> (epoch, znode version) of /controller_epoch, or None."""
        def read() -> tuple[int, int] | None:
            try:
                data, st = self.zk.get(zd.CONTROLLER_EPOCH)
            except NoNodeError:
                return None
            return zd.decode_controller_epoch(data), st.version
        return await self._run(read)

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
        return await self._run(elect)

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

