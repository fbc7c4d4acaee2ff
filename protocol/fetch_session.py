"""Fetch session ids and epochs (KIP-227), shared by the broker's session cache
(broker/handlers/fetch.py) and the follower's session (broker/replication/
leader_endpoint.py).

A request's (SessionId, SessionEpoch): epoch -1 is a full fetch without a
session; epoch 0 a full fetch that opens one (SessionId 0 in the answer when the
broker made none); epoch n > 0 an incremental fetch in session SessionId, whose
next epoch is n + 1, wrapping from INT32_MAX to 1.
"""

from __future__ import annotations

from protocol.errors import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT32_MAX = 0x7FFFFFFF

# top-level errors of an incremental fetch: the client starts over with a full one
SESSION_ERRORS = frozenset({ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                            ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                            ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR})


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= INT32_MAX else epoch + 1
