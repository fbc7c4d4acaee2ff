"""CreateTopics (API key 19), versions 0-7. The topic-creation core it shares
with Metadata's auto-creation (Kafka's ZkAdminManager.createTopics) is
``broker.topic_creation``.

Per topic, in order (first failure wins, as ZkAdminManager + AdminZkClient):
  1. duplicate entry in the request          -> INVALID_REQUEST
  2. already in the metadata cache           -> TOPIC_ALREADY_EXISTS
  3. a config with a null value              -> INVALID_CONFIG
  4. counts and an explicit assignment both  -> INVALID_REQUEST
  5. bad name / '.'-'_' collision            -> INVALID_TOPIC_EXCEPTION
  6. -1 counts -> num.partitions / default.replication.factor (v4+); replicas
     placed by controller.assign_replicas over the live brokers (racks honoured):
     count < 1 -> INVALID_PARTITIONS, RF < 1 or > live brokers -> INVALID_REPLICATION_FACTOR
  7. explicit assignment: equal sizes, no duplicates, partitions 0..n-1
                                             -> INVALID_REPLICA_ASSIGNMENT
     (unknown broker ids are not refused here, as Kafka)
  8. configs: unknown key or bad value       -> INVALID_CONFIG
  9. validate_only: answer now; else ClusterStore.create_topic writes
     /config/topics/<t> then /brokers/topics/<t> (TopicAlreadyExists -> 36).
Then, unless validate_only, wait up to timeoutMs until the metadata cache shows a
leader for every new partition (Kafka's DelayedCreatePartitions); topics still
without leaders get REQUEST_TIMED_OUT (so does every created topic when
timeoutMs <= 0: Kafka's quirk, the topic exists all the same).
v5+ echoes partitions, replication factor and every config of the new topic;
v7 its TopicId. ACLs (broker/acl): CREATE on the cluster or the topic, else
TOPIC_AUTHORIZATION_FAILED (after the __cluster_metadata and duplicate checks);
without DESCRIBE_CONFIGS on the topic the echo is left out and
TopicConfigErrorCode says TOPIC_AUTHORIZATION_FAILED. Any broker may create (it writes ZooKeeper directly, as
AdminZkClient); Kafka's ZooKeeper brokers answer NOT_CONTROLLER unless they are
the controller, which stock clients avoid by sending admin requests there.
"""

from __future__ import annotations

from collections import Counter

from broker import topic_config
from protocol import topic_names
from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed_cluster
from broker.acl.checks import authorized_names
from broker.context import BrokerServices, RequestContext
from broker.dispatch import handler
from broker.topic_creation import TopicOutcome, TopicRequest, await_leaders, create_topic
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.CREATE_TOPICS).response
RESULT = SPEC.structs["CreatableTopicResult"]
RESULT_CONFIG = SPEC.structs["CreatableTopicConfigs"]

# ---- the handler ---------------------------------------------------------------------------

def _topic_request(t: Struct) -> TopicRequest:
    return TopicRequest(
        name=t.name, num_partitions=t.num_partitions, replication_factor=t.replication_factor,
        assignment={a.partition_index: list(a.broker_ids) for a in t.assignments},
        configs={c.name: c.value for c in t.configs})


def _result(broker: BrokerServices, o: TopicOutcome, describable: bool, early: bool) -> Struct:
    """The topic's answer; its configs, counts and id only for a caller with
    DESCRIBE_CONFIGS on it (else TopicConfigErrorCode TOPIC_AUTHORIZATION_FAILED,
    left at NONE when the creation itself failed, as KafkaApis)."""
    res = RESULT.new(name=o.name, error_code=int(o.error), error_message=o.message)
    if not describable:
        if early or o.error == ErrorCode.NONE:
            res.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    elif o.ok:
        res.topic_id = o.topic_id
        res.num_partitions = len(o.assignment)
        res.replication_factor = len(next(iter(o.assignment.values())))
        res.configs = [RESULT_CONFIG.new(name=e.name, value=e.value, read_only=e.read_only,
                                         config_source=int(e.source),
                                         is_sensitive=e.sensitive)
                       for e in topic_config.describe(broker.config, o.configs)]
    return res


@handler(ApiKey.CREATE_TOPICS)
async def handle_create_topics(ctx: RequestContext, request: Struct) -> Struct:
    broker = ctx.broker
    counts = Counter(t.name for t in request.topics)
    names = [t.name for t in request.topics if t.name != topic_names.CLUSTER_METADATA_TOPIC]
    # ACL: CREATE on the cluster (that denial not logged) or on each topic;
    # DESCRIBE_CONFIGS on a topic to see what it was created with
    creatable = (set(names) if allowed_cluster(ctx, AclOperation.CREATE, log_denied=False)
                 else authorized_names(ctx, AclOperation.CREATE, ResourceType.TOPIC, names))
    describable = authorized_names(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, names,
                                   log_denied=False)
    outcomes: list[TopicOutcome] = []
    early: set[int] = set()
    for i, t in enumerate(request.topics):
        if t.name == topic_names.CLUSTER_METADATA_TOPIC:
            outcome = TopicOutcome(t.name, ErrorCode.INVALID_REQUEST,
                                   f"Creation of internal topic {t.name} is prohibited.")
        elif counts[t.name] > 1:
            outcome = TopicOutcome(t.name, ErrorCode.INVALID_REQUEST,
                                   "Found multiple entries for this topic.")
        elif t.name not in creatable:
            outcome = TopicOutcome(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                   "Authorization failed.")
        else:
            outcomes.append(await create_topic(broker, _topic_request(t), request.validate_only))
            continue
        outcomes.append(outcome)
        early.add(i)
    if not request.validate_only:
        await await_leaders(broker, outcomes, request.timeout_ms)
    return SPEC.new(throttle_time_ms=0, topics=[
        _result(broker, o, o.name in describable or o.name == topic_names.CLUSTER_METADATA_TOPIC,
                i in early) for i, o in enumerate(outcomes)])
