"""DescribeConfigs (API key 32), versions 0-4; AlterConfigs (API key 33), versions 0-2;
IncrementalAlterConfigs (API key 44), versions 0-1; as Kafka's ZooKeeper-mode broker
(ConfigHelper, ConfigAdminManager.preprocess, ZkAdminManager).

Resources (ResourceType): TOPIC = 2, BROKER = 4, BROKER_LOGGER = 8.

DescribeConfigs
* TOPIC: every topic key (or the ConfigurationKeys asked for) with its
  effective value, source and synonyms from broker.topic_config; an illegal
  name -> INVALID_TOPIC_EXCEPTION, a topic the metadata cache lacks ->
  UNKNOWN_TOPIC_OR_PARTITION.
* BROKER "<this broker's id>": every key we know with its effective value, source
  and synonyms in Kafka's order (per-broker dynamic, cluster default dynamic,
  static, default); ReadOnly false for the keys accepted dynamically
  (broker/dynamic_config/describe.py). BROKER "": the keys the cluster default entry
  holds. Another id -> INVALID_REQUEST.
* BROKER_LOGGER "<id>": every logger (root and the Python loggers) with its
  effective level (broker/dynamic_config/loggers.py).
* v0 has IsDefault (source DEFAULT_CONFIG) instead of ConfigSource; synonyms
  only when IncludeSynonyms (v1+); ConfigType always and Documentation when
  IncludeDocumentation (v3+).

Alter (both APIs)
* a resource twice in a request -> INVALID_REQUEST for each copy; a key twice
  in a resource -> INVALID_REQUEST; a null value (except DELETE) -> INVALID_REQUEST.
* TOPIC: AlterConfigs replaces the whole override set; IncrementalAlterConfigs
  edits the stored one: SET(0), DELETE(1), APPEND(2)/SUBTRACT(3) for list keys
  only (else INVALID_CONFIG). The result must validate (INVALID_CONFIG), the
  topic must exist; then, unless ValidateOnly, ClusterStore.set_topic_configs
  writes /config/topics/<t> plus a /config/changes notification, on which every
  broker applies the new LogConfig to its live partition logs.
* BROKER "<this broker's id>" / "" (the cluster default, /config/brokers/<default>):
  every key Kafka 3.9 takes dynamically (broker/dynamic_config/kafka_keys.py), checked
  (INVALID_CONFIG naming key and value; other keys INVALID_REQUEST), stored in
  ZooKeeper with a change notification and applied without a restart on every broker
  where pybroker has the feature, else stored and described only (broker/dynamic_config/
  alter.py, effects.py); a password key is INVALID_CONFIG when stored (no
  password.encoder.secret); AlterConfigs replaces the whole entry; APPEND/SUBTRACT ->
  INVALID_CONFIG.
* BROKER_LOGGER "<id>": IncrementalAlterConfigs SET (a level) / DELETE (inherit
  again), not persisted; a bad level or unknown logger -> INVALID_CONFIG;
  AlterConfigs or APPEND/SUBTRACT -> INVALID_REQUEST.
* DescribeConfigs hides secrets as Kafka does (PASSWORD keys and JAAS configs:
  null value, IsSensitive) and lists the listener-prefixed keys, dynamic ones
  with source DYNAMIC_BROKER_CONFIG.

ACLs (broker/acl): DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic (else
TOPIC_AUTHORIZATION_FAILED) or on the cluster for BROKER and BROKER_LOGGER
(else CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable

from broker import topic_config
from protocol import topic_names
from broker.dynamic_config import alter, describe, live, loggers
from broker.dynamic_config.host import DynamicConfigHost
from broker.dynamic_config.layers import DynamicLayers
from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed, allowed_cluster
from broker.config import BrokerConfig
from broker.context import BrokerServices, RequestContext
from broker.security import reconfigure
from broker.dispatch import handler
from broker.topic_creation import TopicError
from broker.topic_config import ConfigEntry, ConfigSource
from controller import TopicNotFound
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

log = logging.getLogger(__name__)

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

DESCRIBE = api(ApiKey.DESCRIBE_CONFIGS).response
DESCRIBE_RESULT = DESCRIBE.structs["DescribeConfigsResult"]
DESCRIBE_ROW = DESCRIBE.structs["DescribeConfigsResourceResult"]
DESCRIBE_SYNONYM = DESCRIBE.structs["DescribeConfigsSynonym"]
ALTER = api(ApiKey.ALTER_CONFIGS).response
ALTER_RESULT = ALTER.structs["AlterConfigsResourceResponse"]
INCREMENTAL = api(ApiKey.INCREMENTAL_ALTER_CONFIGS).response
INCREMENTAL_RESULT = INCREMENTAL.structs["AlterConfigsResourceResponse"]


# ---- ACLs --------------------------------------------------------------------------------

def _authorize(ctx: RequestContext, op: AclOperation, rtype: int, name: str) -> None:
    """ACL check (broker/acl): a TOPIC needs ``op`` on the topic, BROKER and
    BROKER_LOGGER need it on the cluster (ConfigHelper / ConfigAdminManager).
    Refused: DescribeConfigs carries the error's standard message, the alters
    none (Kafka's ``ApiError(error, null)``)."""
    if rtype == TOPIC:
        error = (None if allowed(ctx, op, ResourceType.TOPIC, name)
                 else ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    elif rtype in (BROKER, BROKER_LOGGER):
        error = None if allowed_cluster(ctx, op) else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    else:
        error = None
    if error is not None:
        raise TopicError(error, error.message if op == AclOperation.DESCRIBE_CONFIGS else None)


# ---- DescribeConfigs ---------------------------------------------------------------------

def broker_rows(config: BrokerConfig, dynamic_set: dict[str, str] | None = None
                ) -> list[ConfigEntry]:
    """BROKER rows for ``config`` with ``dynamic_set`` as its own dynamic entry (the
    layers ``config`` carries otherwise): broker/dynamic_config/describe.py."""
    layers = config.dynamic
    if layers is None or dynamic_set is not None:
        static = layers.static if layers is not None else config
        layers = DynamicLayers(static, dict(dynamic_set or {}),
                               dict(layers.cluster_default) if layers is not None else {})
    return describe.broker_rows(config, layers)


def broker_id_of(config: BrokerConfig, name: str) -> None:
    """ConfigAdminManager.validateResourceNameIsCurrentNodeId."""
    try:
        node = int(name)
    except ValueError:
        raise TopicError(ErrorCode.INVALID_REQUEST,
                         f"Node id must be an integer, but it is: {name}") from None
    if node != config.broker_id:
        raise TopicError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {config.broker_id}, "
                         f"but received {name}")


async def _describe_rows(broker: BrokerServices, rtype: int, name: str) -> list[ConfigEntry]:
    host = broker.dynamic_config_host
    if rtype in (TOPIC, BROKER):
        await live.catch_up(host)     # read-your-writes across brokers (live.catch_up)
    if rtype == TOPIC:
        try:
            topic_names.validate(name)
        except topic_names.InvalidTopicName as e:
            raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, str(e)) from None
        if not broker.metadata.has_topic(name):
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return topic_config.describe(broker.config, await broker.cluster.topic_configs(name))
        # (broker.config carries the dynamic layers: sources DYNAMIC_*_BROKER_CONFIG)
    if rtype == BROKER:
        if name == "":
            return describe.default_rows(live.layers_of(host))
        broker_id_of(broker.config, name)
        return describe.broker_rows(broker.config, live.layers_of(host))
    if rtype == BROKER_LOGGER:
        broker_id_of(broker.config, name)
        return loggers.describe()
    raise TopicError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {rtype}")


def _row(version: int, e: ConfigEntry, synonyms: bool, docs: bool) -> Struct:
    return DESCRIBE_ROW.new(
        name=e.name, value=e.value, read_only=e.read_only,
        is_default=e.source == ConfigSource.DEFAULT_CONFIG,
        config_source=int(e.source), is_sensitive=e.sensitive,
        synonyms=[DESCRIBE_SYNONYM.new(name=s.name, value=s.value, source=int(s.source))
                  for s in e.synonyms] if synonyms and version >= 1 else [],
        config_type=int(e.type), documentation=(e.doc if docs else None))


@handler(ApiKey.DESCRIBE_CONFIGS)
async def handle_describe_configs(ctx: RequestContext, request: Struct) -> Struct:
    results = []
    for r in request.resources:
        res = DESCRIBE_RESULT.new(error_code=0, error_message=None,
                                  resource_type=r.resource_type, resource_name=r.resource_name)
        try:
            _authorize(ctx, AclOperation.DESCRIBE_CONFIGS, r.resource_type, r.resource_name)
            rows = await _describe_rows(ctx.broker, r.resource_type, r.resource_name)
            wanted = set(r.configuration_keys or ())
            res.configs = [_row(ctx.version, e, request.include_synonyms,
                                request.include_documentation)
                           for e in rows if not wanted or e.name in wanted]
        except TopicError as e:
            res.error_code, res.error_message = int(e.error), e.message
        results.append(res)
    return DESCRIBE.new(throttle_time_ms=0, results=results)


# ---- AlterConfigs and IncrementalAlterConfigs --------------------------------------------

Edit = Callable[[dict[str, str]], dict[str, str]]


def _incremental(ops: list[Struct]) -> Edit:
    """ConfigAdminManager.prepareIncrementalConfigs over a topic's stored overrides."""
    def edit(current: dict[str, str]) -> dict[str, str]:
        out = dict(current)
        for op in ops:
            name, value = op.name, op.value
            if op.config_operation == SET:
                out[name] = value
            elif op.config_operation == DELETE:
                out.pop(name, None)
            elif op.config_operation in (APPEND, SUBTRACT):
                verb = "append" if op.config_operation == APPEND else "subtract"
                if name not in topic_config.TOPIC_KEYS:
                    raise TopicError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {name}")
                if not topic_config.is_list(name):
                    raise TopicError(ErrorCode.INVALID_CONFIG,
                                     f"Config value {verb} is not allowed for config key: {name}")
                base = out.get(name, topic_config.TOPIC_KEYS[name].default)
                old = [v for v in base.split(",") if v]
                given = value.split(",")
                new = (old + [v for v in given if v not in old] if op.config_operation == APPEND
                       else [v for v in old if v not in given])
                out[name] = ",".join(new)
            else:
                raise TopicError(ErrorCode.INVALID_REQUEST,
                                 f"Unknown operations type {op.config_operation}")
        return out
    return edit


def _replace(entries: list[Struct]) -> Edit:
    return lambda _current: {c.name: c.value for c in entries}


def _preprocess(configs: list[Struct], incremental: bool) -> None:
    """ConfigAdminManager.preprocess: duplicate keys and null values."""
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise TopicError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [c.name for c in configs if c.value is None
             and not (incremental and c.config_operation == DELETE)]
    if nulls:
        raise TopicError(ErrorCode.INVALID_REQUEST,
                         f"Null value not supported for : {', '.join(nulls)}")


async def _alter_topic(broker: BrokerServices, name: str, edit: Edit,
                       validate_only: bool) -> None:
    if name == "":
        raise TopicError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    new = edit(await broker.cluster.topic_configs(name))
    if not broker.metadata.has_topic(name):
        raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         f"The topic '{name}' does not exist.")
    try:
        topic_config.validate(new)
    except topic_config.InvalidConfig as e:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(e)) from None
    if validate_only:
        return
    try:
        await broker.cluster.set_topic_configs(name, new)
    except TopicNotFound:
        raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         f"The topic '{name}' does not exist.") from None
    log.info("updated topic %s configuration: %s", name, new)


async def _alter_broker(host: DynamicConfigHost, r: Struct, incremental: bool,
                        validate_only: bool) -> None:
    """This broker's dynamic entry or the cluster default "" (broker/dynamic_config/)."""
    default = r.resource_name == ""
    updates: dict[str, str | None] = {}
    if not incremental:                      # AlterConfigs replaces the whole dynamic set
        current = (live.default_entry(host) if default else host.dynamic_configs)
        updates = {k: None for k in current}
    for c in r.configs:
        op = c.config_operation if incremental else SET
        if op in (APPEND, SUBTRACT):
            raise TopicError(ErrorCode.INVALID_CONFIG,
                             f"Config value append/subtract is not allowed for config key: "
                             f"{c.name}")
        if op not in (SET, DELETE):
            raise TopicError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")
        updates[c.name] = c.value if op == SET else None
    if not updates:
        return
    try:
        await alter.alter(host, default, updates, validate_only)
    except reconfigure.ReconfigureError as e:
        raise TopicError(ErrorCode.INVALID_CONFIG if e.invalid_config
                         else ErrorCode.INVALID_REQUEST, str(e)) from None


def _alter_loggers(broker: BrokerServices, r: Struct, incremental: bool,
                   validate_only: bool) -> None:
    """BROKER_LOGGER: IncrementalAlterConfigs SET/DELETE only (loggers.py)."""
    broker_id_of(broker.config, r.resource_name)
    if not incremental:
        raise TopicError(ErrorCode.INVALID_REQUEST, "AlterConfigs is deprecated and does not "
                         "support the resource type BROKER_LOGGER")
    changes: dict[str, str | None] = {}
    for c in r.configs:
        if c.config_operation not in (SET, DELETE):
            verb = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}.get(c.config_operation,
                                                              str(c.config_operation))
            raise TopicError(ErrorCode.INVALID_REQUEST,
                             f"{verb} operation is not allowed for the BROKER_LOGGER resource")
        changes[c.name] = c.value if c.config_operation == SET else None
    try:
        levels = loggers.check(changes)
    except loggers.LoggerConfigError as e:
        raise TopicError(ErrorCode.INVALID_REQUEST if e.invalid_request
                         else ErrorCode.INVALID_CONFIG, str(e)) from None
    if not validate_only:
        loggers.apply(levels)


async def _alter(ctx: RequestContext, request: Struct, incremental: bool) -> list[Struct]:
    result = INCREMENTAL_RESULT if incremental else ALTER_RESULT
    seen = Counter((r.resource_type, r.resource_name) for r in request.resources)
    out = []
    for r in request.resources:
        res = result.new(error_code=0, error_message=None, resource_type=r.resource_type,
                         resource_name=r.resource_name)
        try:
            if seen[(r.resource_type, r.resource_name)] > 1:
                raise TopicError(ErrorCode.INVALID_REQUEST,
                                 "Each resource must appear at most once.")
            _authorize(ctx, AclOperation.ALTER_CONFIGS, r.resource_type, r.resource_name)
            _preprocess(r.configs, incremental)
            if r.resource_type == TOPIC:
                edit = _incremental(r.configs) if incremental else _replace(r.configs)
                await _alter_topic(ctx.broker, r.resource_name, edit, request.validate_only)
            elif r.resource_type == BROKER:
                if r.resource_name != "":
                    broker_id_of(ctx.broker.config, r.resource_name)
                await _alter_broker(ctx.broker.dynamic_config_host, r, incremental,
                                    request.validate_only)
            elif r.resource_type == BROKER_LOGGER:
                _alter_loggers(ctx.broker, r, incremental, request.validate_only)
            else:
                raise TopicError(ErrorCode.INVALID_REQUEST,
                                 f"Unknown resource type {r.resource_type}")
        except TopicError as e:
            res.error_code, res.error_message = int(e.error), e.message
        out.append(res)
    return out


@handler(ApiKey.ALTER_CONFIGS)
async def handle_alter_configs(ctx: RequestContext, request: Struct) -> Struct:
    return ALTER.new(throttle_time_ms=0, responses=await _alter(ctx, request, False))


@handler(ApiKey.INCREMENTAL_ALTER_CONFIGS)
async def handle_incremental_alter_configs(ctx: RequestContext, request: Struct) -> Struct:
    return INCREMENTAL.new(throttle_time_ms=0, responses=await _alter(ctx, request, True))
