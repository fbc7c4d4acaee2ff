"""The authorization steps several handlers share, as Kafka's AuthHelper and
KafkaApis use them (``broker.acl.authorizer.allowed`` is the single check under
all of them; with no authorizer configured every check passes).

* ``authorized_names``: filterByAuthorized — the names of a request allowed an
  operation, each distinct name checked (and, when denied, logged) once, however
  many partitions name it.
* ``cluster_action_denied``: the inter-broker APIs (LeaderAndIsr, StopReplica,
  UpdateMetadata, ControlledShutdown, AlterPartition, WriteTxnMarkers,
  AddPartitionsToTxn v4+) need CLUSTER_ACTION on the cluster; Kafka answers each
  request's error response with CLUSTER_AUTHORIZATION_FAILED.
* ``cluster_operations``: the cluster authorized-operations field of Metadata
  v8-10 and DescribeCluster: 0 without DESCRIBE on the cluster, else the bit field.
* ``idempotent_producer_allowed``: InitProducerId without a transactional id
  (KIP-679): IDEMPOTENT_WRITE on the cluster (a denial not logged) or WRITE on
  some topic, by ``authorize_by_resource_type``.
* ``authorize_by_resource_type``: AclAuthorizer.authorizeByResourceType —
  "may this principal do ``op`` on at least one resource of this type?":

  1. a super user may;
  2. a matching DENY on the literal wildcard ``*`` -> no;
  3. ``allow.everyone.if.no.acl.found`` -> yes;
  4. no matching DENY at all -> yes iff some matching ALLOW exists (literal or
     prefixed pattern);
  5. else yes iff some ALLOW survives the DENYs: an ALLOW on the literal ``*``,
     a literal ALLOW on a name no literal DENY names and no prefixed DENY covers,
     or a prefixed ALLOW whose prefix no prefixed DENY covers.

  "Matching" means principal P or User:*, host H or *, operation ``op`` or ALL
  (no implied operations here, as in Kafka).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol

from broker.acl.acl_model import (CLUSTER_NAME, WILDCARD, WILDCARD_PRINCIPAL, AclOperation,
                                  PatternType, PermissionType, ResourceType)
from broker.acl.authorizer import (AclAuthorizer, AclContext, allowed, allowed_cluster,
                                   authorized_operations, client_host, principal_of)
from protocol.api_keys import ApiKey

log = logging.getLogger("kafka.authorizer.logger")


class _Header(Protocol):
    @property
    def api_key(self) -> int: ...


class AclCheckContext(AclContext, Protocol):
    """AclContext and the request's header (the refused request's name)."""

    @property
    def header(self) -> _Header: ...


def authorized_names(ctx: AclCheckContext, op: AclOperation, rtype: ResourceType, names: Iterable[str],
                     log_denied: bool = True) -> set[str]:
    """The distinct ``names`` allowed ``op`` (AuthHelper.filterByAuthorized)."""
    distinct = list(dict.fromkeys(names))
    if ctx.broker.authorizer is None:
        return set(distinct)
    return {n for n in distinct if allowed(ctx, op, rtype, n, log_denied)}


def cluster_action_denied(ctx: AclCheckContext) -> bool:
    """True when the caller lacks CLUSTER_ACTION on the cluster (denial logged)."""
    return not allowed_cluster(ctx, AclOperation.CLUSTER_ACTION)


def cluster_denied_message(ctx: AclCheckContext) -> str:
    """The message of Kafka's ClusterAuthorizationException for a refused request."""
    key = int(ctx.header.api_key)
    name = ApiKey(key).name if key in ApiKey._value2member_map_ else str(key)
    return f"Request {name} from {principal_of(ctx)} at {client_host(ctx)} is not authorized."


def cluster_operations(ctx: AclCheckContext, default: int) -> int:
    """The cluster authorized-operations bit field when asked for: 0 without
    DESCRIBE on the cluster (denial logged), else every permitted cluster operation
    (``default`` with no authorizer)."""
    if not allowed_cluster(ctx, AclOperation.DESCRIBE):
        return 0
    return authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME, default)


def idempotent_producer_allowed(ctx: AclCheckContext) -> bool:
    """InitProducerId without a transactional id (KafkaApis.handleInitProducerIdRequest)."""
    auth: AclAuthorizer | None = ctx.broker.authorizer
    if auth is None or allowed_cluster(ctx, AclOperation.IDEMPOTENT_WRITE, log_denied=False):
        return True
    principal, host = principal_of(ctx), client_host(ctx)
    ok = authorize_by_resource_type(auth, principal, host, AclOperation.WRITE, ResourceType.TOPIC)
    if not ok:
        log.info("Principal = %s is Denied Operation = %s from host = %s on resource = "
                 "%s:UNKNOWN:NONE", principal, AclOperation.WRITE.name, host,
                 ResourceType.TOPIC.name)
    return ok


def authorize_by_resource_type(auth: AclAuthorizer, principal: str, host: str,
                               op: AclOperation, rtype: ResourceType) -> bool:
    """See the module docstring (steps 1-5)."""
    if principal in auth.super_users:
        return True
    names = _matching_names(auth, principal, host, op, rtype)
    deny_literal = names[(PermissionType.DENY, PatternType.LITERAL)]
    if WILDCARD in deny_literal:
        return False
    if auth.allow_everyone_if_no_acl_found:
        return True
    deny_prefixed = names[(PermissionType.DENY, PatternType.PREFIXED)]
    allow_literal = names[(PermissionType.ALLOW, PatternType.LITERAL)]
    allow_prefixed = names[(PermissionType.ALLOW, PatternType.PREFIXED)]
    if not deny_literal and not deny_prefixed:
        return bool(allow_literal or allow_prefixed)

    def covered(name: str) -> bool:   # hasDominantPrefixedDeny
        return any(name[:i] in deny_prefixed for i in range(1, len(name) + 1))

    return (any(not covered(p) for p in allow_prefixed)
            or any(n == WILDCARD or (n not in deny_literal and not covered(n))
                   for n in allow_literal))


def _matching_names(auth: AclAuthorizer, principal: str, host: str, op: AclOperation,
                    rtype: ResourceType) -> dict[tuple[PermissionType, PatternType], set[str]]:
    """(permission, pattern type) -> the names of ``rtype`` patterns holding an
    entry that matches principal, host and operation (ALL included)."""
    out: dict[tuple[PermissionType, PatternType], set[str]] = {
        (perm, pt): set() for perm in (PermissionType.ALLOW, PermissionType.DENY)
        for pt in (PatternType.LITERAL, PatternType.PREFIXED)}
    for pattern, entries in auth.store.cache:
        if pattern.resource_type != rtype:
            continue
        for e in entries:
            if (e.principal in (principal, WILDCARD_PRINCIPAL) and e.host in (host, WILDCARD)
                    and e.operation in (op, AclOperation.ALL)
                    and (e.permission, pattern.pattern_type) in out):
                out[(e.permission, pattern.pattern_type)].add(pattern.name)
    return out
