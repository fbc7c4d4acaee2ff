"""Client quotas, as Kafka's (KIP-13, KIP-55 user and client-id quotas, KIP-124 request
quotas, KIP-219 throttling by muting the channel).

Produce and fetch byte rates and the request percentage, per user, client id and
(user, client id), with <default> entities, kept in ZooKeeper as Kafka's ZooKeeper-mode
brokers keep them and changed with AlterClientQuotas / DescribeClientQuotas or
``pybroker configs --entity-type users|clients``.

Map:

    rate_sensor.py           Kafka's windowed Rate over quota.window.num samples of
                             quota.window.size.seconds, with the throttle time formula
    client_quota_manager.py  one quota type: entities, <default>s, Kafka's precedence,
                             who shares a rate, record -> throttle time
    quota_store.py           /config/users, /config/clients in ZooKeeper (SCRAM keys kept)
    admin_rules.py           AlterClientQuotas / DescribeClientQuotas entities, operations,
                             filters, refused as Kafka refuses them
    throttle.py              around a handler: what is recorded, the empty throttled
                             Fetch, ThrottleTimeMs and ctx.throttle_ms (channel muting)
    client_quotas.py         ClientQuotas: the three managers, loaded and kept current
                             from /config/changes; the hook broker.dispatch calls

The handlers are broker/handlers/describe_client_quotas.py and alter_client_quotas.py;
the client side is client/quota_admin.py and tools/client_quotas.py.
"""
