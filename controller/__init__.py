"""The control plane: ZooKeeper (Kafka's layout) and the controller.

Only the names below may be imported from outside this package (broker/ uses
the facade, never a submodule).
"""

from client.assignment import assign_replicas
from controller.channel import BrokerTransport
from controller.controller import Controller
from controller.errors import (BadVersionError, ControllerMovedError, InvalidPartitions,
                               InvalidReplicationFactor, NodeExistsError, NoNodeError,
                               NotControllerError, StaleBrokerEpochError, TopicAlreadyExists,
                               TopicNotFound, ZkError)
from controller.zk import ClusterStore
from controller.zkdata import BrokerInfo, Endpoint, LeaderIsr, TopicAssignment

__all__ = [
    "BadVersionError", "BrokerInfo", "BrokerTransport", "ClusterStore", "Controller",
    "ControllerMovedError", "Endpoint", "InvalidPartitions", "InvalidReplicationFactor",
    "LeaderIsr", "NoNodeError", "NodeExistsError", "NotControllerError", "StaleBrokerEpochError",
    "TopicAlreadyExists",
    "TopicAssignment", "TopicNotFound", "ZkError", "assign_replicas",
]
