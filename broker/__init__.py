"""The daemon: ``pybroker start`` — connections, request dispatch, handlers, replication,
groups, ACLs, and the broker's side of the control plane.

It may import ``protocol``, ``storage``, ``client`` (its outgoing connections: follower
fetches, AlterPartition, ControlledShutdown, the controller's channel) and what
``controller/__init__.py`` exports; never ``tools``, ``spark_jobs`` or ``bench``
(tests/unit/test_layering.py).

Map — the request path, socket to handler:

    server.py           the asyncio listeners: accepting under the connection limits;
                        one task per connection
    network/            the connection (frames in, header decode, responses out in order,
                        muting, request timeout), connection quotas (max.connections,
                        per-IP, creation rate), the request queue and memory pool
    dispatch.py         the handler registry (@handler(api_key, versions)); ApiVersions
                        bodies are built from it
    context.py          RequestContext: what a handler sees of the broker and connection
                        (typed by the BrokerServices / ConnectionInfo Protocols)
    handlers/           one module per API family (produce.py, fetch.py, metadata.py, ...);
                        no handler imports another
    handler_support.py  what several handlers share (leader hints, cluster ids, ACL bits)
    topic_creation.py   creating topics (CreateTopics, Metadata auto-creation, internal topics)

The services the handlers use:

    broker.py           Broker: holds the services, start-up and shutdown
    log_maintenance.py  the periodic work on the logs: checkpoints, retention, flushes,
                        the log cleaner's loop (LogMaintenance, Broker.maintenance)
    replication/        partitions this broker hosts: Partition (leader/follower, ISR,
                        high watermark), ReplicaManager, purgatory, follower fetchers,
                        leader endpoint, AlterPartition manager, producer state
    log_dirs/           failed log dirs (KIP-112): the failure channel, taking a dir's
                        partitions offline, telling the controller, halting when none is left
    coordination/       the coordinators (top-level coordinator/) built over this broker:
                        their log seam, markers, KIP-890 verification, group settings
    quotas/             client quotas (KIP-13/KIP-124/KIP-219): rates, precedence,
                        throttling around dispatch, ZooKeeper storage
    dynamic_broker_configs.py   /config/brokers/<id> and <default>: the entry points
    dynamic_config/     dynamic broker configs (issue 18): dynamic keys, layers, applying
                        them live, DescribeConfigs sources, BROKER_LOGGER log levels
    loop_lag.py         the event-loop stall monitor (logged every minute and at shutdown)
    metrics/            Prometheus metrics: registry, text format, the /metrics endpoint
                        (prometheus.listener), Kafka's families from the broker's state
    acl/                the ZooKeeper-mode ACL authorizer and the handlers' shared checks
    security/           listeners' protocols, TLS, SASL, principals, SCRAM credentials
    metadata_cache.py   what the controller told us of the cluster
    broker_id.py        which broker id this process runs as (config vs meta.properties)
    config.py, topic_config.py, listeners.py   configuration (topic names: protocol/)
    producer_ids.py     InitProducerId's id blocks
    tasks.py            stopping asyncio tasks for certain (cancel, then wait, bounded)
    why/                the facts kept to explain ISR and HW, and DescribeWhy's broker
                        status (the groups' facts: coordinator/group/why/)
    main.py, __main__.py, cli.py, local_run.py, zookeeper_runner.py   processes and the
                        ``pybroker`` front door (tools live in ``tools/``)

Where things go: a new API is a handler module under ``handlers/`` (opening with its
versions and behaviour notes) plus its service in a room of its own (a subpackage
like ``security/`` or ``metrics/``, or a top-level package like ``coordinator/``
when it needs nothing of the broker); a new outgoing request is a
verb in ``client/``, never a request built here.
"""
