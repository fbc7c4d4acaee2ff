"""The asyncio listener: accept connections, run each as a task, stop cleanly."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from broker.connection import Connection
from broker.listeners import Endpoint

log = logging.getLogger(__name__)


class KafkaServer:
    """Accepts on one endpoint; every connection runs ``Connection.run``."""

    def __init__(self, broker: Any, endpoint: Endpoint) -> None:
        self.broker = broker
        self.endpoint = endpoint
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        host = self.endpoint.host or None
        self._server = await asyncio.start_server(self._accept, host, self.endpoint.port,
                                                  reuse_address=True)
        log.info("listening on %s://%s:%d", self.endpoint.name, self.endpoint.host or "0.0.0.0",
                 self.port)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # type: ignore[arg-type]
        try:
            await Connection(self.broker, reader, writer).run()
        except asyncio.CancelledError:
            # stop() cancels connections. End the task normally: asyncio's stream
            # callback would otherwise log the cancellation as an error (3.11).
            pass
        finally:
            self._tasks.discard(task)  # type: ignore[arg-type]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
