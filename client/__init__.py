"""Our asyncio Kafka client, over ``protocol/`` only.

It imports nothing else of ours (a test checks it): the broker's outgoing paths,
the controller's channel, ``tools/``, ``spark_jobs/`` and ``bench/`` all use it, and
no Kafka request is built by hand outside this package and the server side.

Map (what lives where):

    errors.py       KafkaConnectionError, AuthenticationFailed, RequestTimedOut,
                    NoCommonVersion, ConsumerError, TransactionError, ProducerFenced
    connection.py   KafkaConnection: one socket (TLS when asked), ApiVersions handshake,
                    SASL, version choice, pipelined requests matched by correlation id
    security.py     ClientSecurity: TLS and SASL settings from Kafka's / librdkafka's
                    client keys (security.protocol, ssl.*, sasl.*)
    sasl_client.py  the client side of SaslHandshake / SaslAuthenticate (PLAIN, SCRAM)
    properties.py   load_client_properties: a client config file (java.util.Properties)
    pool.py         BrokerPool (one connection per broker), bootstrap, parse_servers
    metadata.py     ClusterMetadata (brokers, topics, partitions, leaders) from Metadata
    verbs.py        the data-path verbs, written once: produce, fetch, list_offsets,
                    offset_for_leader_epoch, delete_records, alter_partition
                    (plain arguments in, per-partition result dataclasses out)
    groups.py       the consumer-group verbs: find_coordinator, join/sync/heartbeat/leave,
                    offset_commit/fetch/delete, list/describe/delete_groups
    group_admin.py  GroupAdmin: those verbs routed to coordinators, with retries
    inter_broker.py the broker-to-controller verbs: controlled_shutdown
    consumer.py     Consumer: a topic's partitions read from their leaders (assign, no
                    group): seek by ListOffsets, poll by Fetch, leader moves followed,
                    aborted transactions skipped under read_committed
    producer.py     send_batches: batches to their leaders, retried (tools, Spark, replay)
    txn_verbs.py    the transactional verbs: InitProducerId, AddPartitionsToTxn (client
                    form), AddOffsetsToTxn, EndTxn, TxnOffsetCommit
    transactional.py TransactionalProducer: init, begin, send, send offsets, commit,
                    abort; fencing fatal, other failures abortable (the Spark sink's)
    transactions_admin.py ListTransactions, DescribeTransactions, DescribeProducers and
                    aborting a hanging transaction (pybroker transactions)
    admin.py        KafkaAdmin: topics, partitions, configs (to the controller), and the
                    connection to a broker or to a partition's leader
    partitioner.py  Kafka's default partitioner (murmur2, sticky)
    assignment.py   replica assignment (Kafka's AdminUtils), shared with the controller
    acl_admin.py    DescribeAcls / CreateAcls / DeleteAcls (pybroker acls)
    scram_admin.py  Describe/AlterUserScramCredentials; the client salts (pybroker configs)
    quota_admin.py  Describe/AlterClientQuotas (KIP-546) over a KafkaAdmin
    consumer_group_admin.py  both kinds of group as an operator sees them (classic, KIP-848)
    operator_admin.py DescribeLogDirs at each broker, DeleteRecords at each leader
                    (pybroker log-dirs, delete-records)
    consumer_protocol.py the "consumer" protocol's subscription/assignment bytes, the
                    range and roundrobin assignors
    group_consumer.py GroupConsumer: a classic group member (join/sync, heartbeat,
                    commit, eager rebalance) reading its partitions with Consumer
    why_admin.py    DescribeWhy (pybroker's own API): why a partition's ISR/HW, why a
                    group rebalanced, a broker's ZooKeeper session (the console's "why")

Where things go: a new request verb goes in ``verbs.py`` (or a module of its own for
an API family with state, as the transactional producer is); TLS and SASL happen
in ``connection.py``'s opening (``sasl_client.py``); nothing here may import broker, controller, storage,
tools or spark_jobs.
"""

from client.admin import (CONFIG_SOURCE_DEFAULT, OP_APPEND, OP_DELETE, OP_SET, OP_SUBTRACT,
                          RESOURCE_BROKER, RESOURCE_TOPIC, KafkaAdmin, NewTopic)
from client.connection import DEFAULT_CLIENT_ID, DEFAULT_TIMEOUT, KafkaConnection
from client.errors import KafkaConnectionError, NoCommonVersion, RequestTimedOut
from client.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from client.pool import BrokerPool, bootstrap, parse_servers

__all__ = [
    "CONFIG_SOURCE_DEFAULT", "DEFAULT_CLIENT_ID", "DEFAULT_TIMEOUT", "OP_APPEND", "OP_DELETE",
    "OP_SET", "OP_SUBTRACT", "RESOURCE_BROKER", "RESOURCE_TOPIC", "BrokerInfo", "BrokerPool",
    "ClusterMetadata", "KafkaAdmin", "KafkaConnection", "KafkaConnectionError", "NewTopic",
    "NoCommonVersion", "PartitionInfo", "RequestTimedOut", "TopicInfo", "bootstrap",
    "parse_servers",
]
