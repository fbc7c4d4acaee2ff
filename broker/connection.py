"""Kept for importers of the old path: the connection lives in ``broker.network``
(``broker.network.connection``: one client connection; its neighbours there
hold the limits every connection of a broker shares)."""

from broker.network.connection import MAX_PIPELINED_PRODUCES, READ_SIZE, Connection

__all__ = ["Connection", "MAX_PIPELINED_PRODUCES", "READ_SIZE"]
