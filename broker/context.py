"""What a handler sees of the broker: the request, its connection, the services."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from protocol.headers import RequestHeader

if TYPE_CHECKING:
    from broker.connection import Connection


@dataclass
class RequestContext:
    header: RequestHeader
    connection: Connection
    broker: Any  # broker.broker.Broker: the services (config, logs, replicas, metadata)
    # Produce: called once the records are appended, before the wait for acks; the
    # connection then reads its next request (see broker.connection)
    appended: Callable[[], None] | None = None

    @property
    def version(self) -> int:
        return self.header.api_version
