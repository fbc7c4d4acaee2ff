"""Kafka's ZooKeeper-mode AclAuthorizer: rules over the ACL cache, and the ACL
admin operations behind DescribeAcls / CreateAcls / DeleteAcls.

Configured by ``authorizer.class.name`` (``kafka.security.authorizer.AclAuthorizer``
or the older ``kafka.security.auth.SimpleAclAuthorizer``; empty, the default,
means no authorizer: ACL APIs answer SECURITY_DISABLED and nothing is checked),
``super.users`` ("User:alice;User:bob") and ``allow.everyone.if.no.acl.found``.

Authorizing principal P from host H for operation O on resource T:N (AclAuthorizer.authorizeAction):

1. P is a super user -> allowed;
2. the ACLs that apply are those of the literal pattern T:N, the literal
   wildcard T:* and every prefixed pattern T:<prefix of N>; none at all ->
   ``allow.everyone.if.no.acl.found``;
3. an entry matches when its principal is P or User:*, its host H or *, its
   operation O or ALL; any matching DENY -> denied (DENY beats ALLOW);
4. else allowed iff a matching ALLOW exists, where ALLOW on READ, WRITE,
   DELETE or ALTER implies DESCRIBE and ALLOW on ALTER_CONFIGS implies
   DESCRIBE_CONFIGS.

Every connection here is PLAINTEXT, so the principal is User:ANONYMOUS and the
host is the client's IP address.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from functools import partial
from typing import Protocol

from broker.acl.acl_model import (ANONYMOUS, CLUSTER_NAME, WILDCARD, WILDCARD_PRINCIPAL, AccessControlEntry,
                                  AclBinding, AclBindingFilter, AclOperation,
                                  PermissionType, ResourcePattern, ResourceType, parse_principal)
from broker.acl.acl_store import AclStore
from protocol.acl_types import SUPPORTED_OPERATIONS
from broker.acl.zk_access import AclZk
from broker.config import BrokerConfig, ConfigError
from protocol.errors import ErrorCode

log = logging.getLogger("kafka.authorizer.logger")

AUTHORIZER_CLASSES = frozenset({
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
})

# Operations whose ALLOW also grants another (AclAuthorizer.allowAclExists).
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset({AclOperation.DESCRIBE, AclOperation.READ,
                                      AclOperation.WRITE, AclOperation.DELETE,
                                      AclOperation.ALTER}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS,
                                              AclOperation.ALTER_CONFIGS}),
}

# Error code for a denied operation, per resource type (AclEntry.authorizationError).
AUTHORIZATION_ERRORS: dict[ResourceType, ErrorCode] = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ResourceType.DELEGATION_TOKEN: ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
}


def _add_entries(new: frozenset[AccessControlEntry],
                 current: frozenset[AccessControlEntry]) -> frozenset[AccessControlEntry]:
    """An ACL store edit: the resource's entries plus ``new``."""
    return current | new


class AuthorizerConfigError(ConfigError):
    """An authorizer setting Kafka would refuse at start-up (stops start-up)."""


def parse_super_users(text: str | None) -> frozenset[str]:
    """'User:alice;User:bob' -> {"User:alice", "User:bob"} (empty parts ignored)."""
    if not text:
        return frozenset()
    try:
        return frozenset(parse_principal(s.strip()) for s in text.split(";") if s.strip())
    except ValueError as e:
        raise AuthorizerConfigError(f"Invalid value {text!r} for configuration super.users: {e}"
                                    ) from None


class AclAuthorizer:
    def __init__(self, zk: AclZk, super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self.store = AclStore(zk)
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found

    async def start(self) -> None:
        """Create the ACL paths, load every ACL, watch the change notifications."""
        await self.store.start()

    def close(self) -> None:
        self.store.close()

    # -- rules ---------------------------------------------------------------------------

    def authorize(self, principal: str, host: str, op: AclOperation, rtype: ResourceType,
                  name: str) -> bool:
        if principal in self.super_users:
            return True
        acls = self.store.cache.matching(rtype, name)
        if not any(acls):
            return self.allow_everyone_if_no_acl_found
        if self._exists(acls, principal, host, {op}, PermissionType.DENY):
            return False
        allow_ops = IMPLIED_BY.get(op, frozenset({op}))
        return self._exists(acls, principal, host, allow_ops, PermissionType.ALLOW)

    @staticmethod
    def _exists(acls: list[frozenset[AccessControlEntry]], principal: str, host: str,
                ops: Iterable[AclOperation], permission: PermissionType) -> bool:
        wanted = set(ops) | {AclOperation.ALL}
        return any(e.permission == permission
                   and e.principal in (principal, WILDCARD_PRINCIPAL)
                   and e.host in (host, WILDCARD)
                   and e.operation in wanted
                   for entries in acls for e in entries)

    # -- ACL administration --------------------------------------------------------------

    def acls(self, f: AclBindingFilter) -> list[AclBinding]:
        """Every stored binding the filter matches, grouped by resource pattern."""
        out = []
        for pattern, entries in self.store.cache:
            for e in sorted(entries):
                b = AclBinding(pattern, e)
                if f.matches(b):
                    out.append(b)
        return out

    async def create_acls(self, bindings: list[AclBinding]
                          ) -> list[tuple[ErrorCode, str | None]]:
        """Per binding (NONE, None) or (error, message); bindings on one resource
        are written together."""
        results: list[tuple[ErrorCode, str | None]] = [(ErrorCode.NONE, None)] * len(bindings)
        by_pattern: dict[ResourcePattern, list[int]] = {}
        for i, b in enumerate(bindings):
            reason = b.invalid_reason()
            if reason is not None:
                results[i] = (ErrorCode.INVALID_REQUEST, f"Failed to create ACL: {reason}")
            else:
                by_pattern.setdefault(b.pattern, []).append(i)
        async with self.store.lock:
            for pattern, idx in by_pattern.items():
                new = frozenset(bindings[i].entry for i in idx)
                try:
                    await self.store.update(pattern, partial(_add_entries, new))
                except Exception as e:  # AclUpdateFailed or any ZooKeeper failure
                    log.warning("creating ACLs on %s failed: %s", pattern, e)
                    for i in idx:
                        results[i] = (ErrorCode.UNKNOWN_SERVER_ERROR, str(e))
        return results

    async def delete_acls(self, filters: list[AclBindingFilter]
                          ) -> list[list[tuple[AclBinding, ErrorCode, str | None]]]:
        """Per filter, the bindings it deleted, each with its error (NONE when
        deleted). A binding several filters match counts for the first one."""
        results: list[list[tuple[AclBinding, ErrorCode, str | None]]] = [[] for _ in filters]
        async with self.store.lock:
            candidates = {p for p, _ in self.store.cache}
            for f in filters:
                if f.pattern.matches_at_most_one():
                    candidates.add(ResourcePattern(f.pattern.resource_type,
                                                   f.pattern.name or "", f.pattern.pattern_type))
            for pattern in sorted(candidates):
                matching = [(i, f) for i, f in enumerate(filters) if f.pattern.matches(pattern)]
                if matching:
                    await self._delete_on(pattern, matching, results)
        return results

    async def _delete_on(self, pattern: ResourcePattern,
                         matching: list[tuple[int, AclBindingFilter]],
                         results: list[list[tuple[AclBinding, ErrorCode, str | None]]]) -> None:
        owner: dict[AccessControlEntry, int] = {}

        def edit(current: frozenset[AccessControlEntry]) -> frozenset[AccessControlEntry]:
            owner.clear()
            for e in sorted(current):
                for i, f in matching:
                    if f.entry.matches(e):
                        owner.setdefault(e, i)
                        break
            return current - owner.keys()
        error, message = ErrorCode.NONE, None
        try:
            await self.store.update(pattern, edit)
        except Exception as e:  # any ZooKeeper failure: report it on each binding
            log.warning("deleting ACLs on %s failed: %s", pattern, e)
            error, message = ErrorCode.UNKNOWN_SERVER_ERROR, str(e)
        for entry, i in owner.items():
            results[i].append((AclBinding(pattern, entry), error, message))


# ---- wiring and the handlers' check ------------------------------------------------------

class AclConnection(Protocol):
    @property
    def peer(self) -> str: ...                  # "host:port" of the socket's peer

    @property
    def principal(self) -> str | None: ...      # None: not authenticated


class AclServices(Protocol):
    @property
    def authorizer(self) -> AclAuthorizer | None: ...


class AclContext(Protocol):
    """What the checks read of a request's context (broker.context.RequestContext
    satisfies it; a Protocol, so this package does not import the request path)."""

    @property
    def connection(self) -> AclConnection: ...

    @property
    def broker(self) -> AclServices: ...


def build_authorizer(config: BrokerConfig, cluster: AclZk, zk: AclZk | None = None
                     ) -> AclAuthorizer | None:
    """The authorizer ``config`` asks for (None when authorizer.class.name is empty).
    Reads ``authorizer_class_name``, ``super_users`` and
    ``allow_everyone_if_no_acl_found`` from the BrokerConfig."""
    name = (config.authorizer_class_name or "").strip()
    if not name:
        return None
    if name not in AUTHORIZER_CLASSES:
        raise AuthorizerConfigError(
            f"Invalid value {name!r} for configuration authorizer.class.name: "
            f"supported are {', '.join(sorted(AUTHORIZER_CLASSES))}")
    return AclAuthorizer(zk or cluster,
                         parse_super_users(config.super_users),
                         bool(config.allow_everyone_if_no_acl_found))


def client_host(ctx: AclContext) -> str:
    """The client's IP address, as Kafka's clientAddress.getHostAddress."""
    text = ctx.connection.peer        # "host:port" of the socket's peer (IPv6 unbracketed)
    return text.rsplit(":", 1)[0] if ":" in text else text


def principal_of(ctx: AclContext) -> str:
    """The connection's authenticated principal ("User:alice"); User:ANONYMOUS
    when it has none (PLAINTEXT, as Kafka's default principal builder)."""
    return ctx.connection.principal or ANONYMOUS


def allowed(ctx: AclContext, op: AclOperation, rtype: ResourceType, name: str,
            log_denied: bool = True) -> bool:
    """The handlers' check: True when no authorizer is configured."""
    auth: AclAuthorizer | None = ctx.broker.authorizer
    if auth is None:
        return True
    ok = auth.authorize(principal_of(ctx), client_host(ctx), op, rtype, name)
    if not ok and log_denied:
        log.info("Principal = %s is Denied Operation = %s from host = %s on resource = "
                 "%s:LITERAL:%s", principal_of(ctx), op.name, client_host(ctx),
                 rtype.name, name)
    return ok


def allowed_cluster(ctx: AclContext, op: AclOperation, log_denied: bool = True) -> bool:
    return allowed(ctx, op, ResourceType.CLUSTER, CLUSTER_NAME, log_denied)


def authorized_operations(ctx: AclContext, rtype: ResourceType, name: str, default: int) -> int:
    """Kafka's authorized-operations bit field (bit n = AclOperation code n) for
    Metadata / DescribeCluster / DescribeGroups; ``default`` with no authorizer."""
    if ctx.broker.authorizer is None:
        return default
    bits = 0
    for op in SUPPORTED_OPERATIONS.get(rtype, ()):
        if allowed(ctx, op, rtype, name, log_denied=False):
            bits |= 1 << int(op)
    return bits
