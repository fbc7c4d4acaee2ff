"""Errors of the control plane. ZooKeeper's own failures are translated into the
first three by the ZooKeeper client adaptor (controller/zk.py), so nothing else
needs to know kazoo."""

from __future__ import annotations

from client.assignment import InvalidPartitions, InvalidReplicationFactor  # re-exported


class ZkError(Exception):
    """Any ZooKeeper failure we do not handle more precisely."""


class NoNodeError(ZkError):
    """The znode does not exist."""


class NodeExistsError(ZkError):
    """The znode already exists."""


class BadVersionError(ZkError):
    """A conditional (versioned) update lost: the znode changed since it was read."""


class NotEmptyError(ZkError):
    """The znode still has children."""


class ControllerMovedError(Exception):
    """This broker is no longer the active controller: /controller names another
    broker, or /controller_epoch moved past our epoch (a fenced write)."""


class NotControllerError(Exception):
    """A controller-only operation was asked of a broker that is not the controller."""


class TopicAlreadyExists(Exception):
    """/brokers/topics/<topic> already exists (or the topic is being deleted)."""


class TopicNotFound(Exception):
    """/brokers/topics/<topic> does not exist."""


class StaleBrokerEpochError(Exception):
    """A broker's request carries an older broker epoch than its registration."""
