"""The control plane: ZooKeeper (Kafka's layout) and the controller.

Only the names below may be imported from outside this package (broker/ uses
the facade, never a submodule). It imports ``protocol`` and ``client`` (replica
assignment; its channel sends through a ``BrokerTransport``, which the broker
backs with ``client.BrokerPool``), and only ``kazoo_zk.py`` imports kazoo.

Map:

    controller.py               Controller: active while it holds /controller
    controller_ops.py           ControllerOps: what the duty modules below use of it
    restarts.py                 brokers restarted while no controller watched (failover)
    election.py                 the ephemeral /controller znode and /controller_epoch
    event_manager.py, events.py one queue, one consumer: the only writer of ControllerContext
    context.py                  ControllerContext: the active controller's picture
    partition_state_machine.py  partition states, leader election rules
    replica_state_machine.py    replica states
    leader_election.py          preferred / admin-asked elections
    reassignment.py             partition reassignment (KIP-455)
    deletion.py                 topic deletion
    log_dir_events.py           brokers' failed log dirs (KIP-112): offline replicas
    controlled_shutdown.py      ControlledShutdown: a stopping broker's leaderships moved away
    broker_modifications.py     what brokers' dynamic configs change here: a live broker's new
                                endpoints (UpdateMetadata), unclean election turned on
    alter_partition.py          AlterPartition: the one way an ISR changes
    channel.py                  LeaderAndIsr / UpdateMetadata / StopReplica to brokers
    zk.py, zk_generic.py, zk_partitions.py, zk_controller_znodes.py
                                ClusterStore: the async view of ZooKeeper
    zkclient.py, kazoo_zk.py    the ZooKeeper client seam and its kazoo adaptor
    zkdata.py                   znode paths and JSON as Kafka 3.9 writes them
    errors.py                   control-plane errors
    stats.py                    ControllerStats: election counts the broker's metrics read

Where things go: a new controller duty is a module of its own driven by an event in
``events.py``, taking the controller as ``ControllerOps``; a new znode is declared in
``zkdata.py``.
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
