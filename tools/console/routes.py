"""The console's routes: a path -> an async page handler, and the error pages.

    /             cluster overview            pages_cluster
    /topics       topics list                 pages_topics
    /topic        ?name=T                     pages_topics
    /partition    ?topic=T&p=N                pages_partition
    /groups       consumer groups             pages_groups
    /group        ?id=G                       pages_groups
    /messages     ?topic=T&p=N&offset=O|ts=T&n=N   pages_messages
    /health       "ok" (text/plain): the process is serving

Subjects are in the query string, not the path, so any topic or group name
round-trips through ``urlencode``. Every page takes ``refresh=S`` (2..600) for
a meta refresh. A handler returns ``(status, content type, body)``; errors
become pages: a bad parameter 400, an unknown subject 404, a cluster that
does not answer (connection refused, timeout, a Kafka error) 502 with the
message. Nothing a handler raises reaches the socket as a traceback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from client.errors import KafkaConnectionError
from protocol.errors import KafkaError
from tools.console.data import ClusterReader, NotFound
from tools.console.html import Markup, esc, page, refresh_param
from tools.console.pages_cluster import render_overview
from tools.console.pages_groups import render_group, render_groups
from tools.console.pages_messages import parse_browse_query, render_form_only, render_messages
from tools.console.pages_partition import render_partition
from tools.console.pages_topics import render_topic, render_topics
from protocol.http_head import Request

HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
Response = tuple[int, str, str]
Handler = Callable[[ClusterReader, Request], Awaitable[Response]]


class BadParameter(ValueError):
    """A query parameter the page cannot use (400)."""


def _required(req: Request, name: str) -> str:
    value = req.param(name).strip()
    if not value:
        raise BadParameter(f"the {name!r} parameter is required")
    return value


def _partition(req: Request, name: str = "p") -> int:
    raw = _required(req, name)
    if not raw.isdigit() or int(raw) > 2**31 - 1:
        raise BadParameter(f"{name}={raw!r} is not a partition number")
    return int(raw)


async def overview(reader: ClusterReader, req: Request) -> Response:
    return 200, HTML, render_overview(await reader.overview(),
                                      refresh_s=refresh_param(req.param("refresh")))


async def topics(reader: ClusterReader, req: Request) -> Response:
    return 200, HTML, render_topics(await reader.topics(),
                                    refresh_s=refresh_param(req.param("refresh")))


async def topic(reader: ClusterReader, req: Request) -> Response:
    return 200, HTML, render_topic(await reader.topic(_required(req, "name")),
                                   refresh_s=refresh_param(req.param("refresh")))


async def partition(reader: ClusterReader, req: Request) -> Response:
    topic_name, number = _required(req, "topic"), _partition(req)
    view = await reader.partition(topic_name, number)
    return 200, HTML, render_partition(view, refresh_s=refresh_param(req.param("refresh")))


async def groups(reader: ClusterReader, req: Request) -> Response:
    return 200, HTML, render_groups(await reader.groups(),
                                    refresh_s=refresh_param(req.param("refresh")))


async def group(reader: ClusterReader, req: Request) -> Response:
    return 200, HTML, render_group(await reader.group(_required(req, "id")),
                                   refresh_s=refresh_param(req.param("refresh")))


async def messages(reader: ClusterReader, req: Request) -> Response:
    try:
        q = parse_browse_query(req.query)
    except ValueError as e:
        raise BadParameter(str(e)) from None
    if not q.topic:
        return 200, HTML, render_form_only(q, "Choose a topic and partition.")
    return 200, HTML, render_messages(await reader.browse(q))


async def health(reader: ClusterReader, req: Request) -> Response:
    return 200, TEXT, "ok\n"


ROUTES: dict[str, Handler] = {
    "/": overview, "/topics": topics, "/topic": topic, "/partition": partition,
    "/groups": groups, "/group": group, "/messages": messages, "/health": health,
}


def error_page(status: int, title: str, message: str) -> Response:
    body = Markup(f'<p class="error" id="error">{esc(message)}</p>')
    return status, HTML, page(title, body)


async def dispatch(reader: ClusterReader, req: Request) -> Response:
    """The response to one parsed request; never raises (but CancelledError)."""
    handler = ROUTES.get(req.path.rstrip("/") or "/")
    if handler is None:
        return error_page(404, "Not found", f"no page at {req.path}")
    try:
        return await handler(reader, req)
    except BadParameter as e:
        return error_page(400, "Bad request", str(e))
    except NotFound as e:
        return error_page(404, "Not found", str(e))
    except asyncio.TimeoutError:
        return error_page(502, "Cluster unavailable", "the cluster did not answer in time")
    except (KafkaConnectionError, KafkaError, OSError) as e:
        return error_page(502, "Cluster unavailable", f"{type(e).__name__}: {e}")
    except asyncio.CancelledError:
        raise
    except Exception as e:  # noqa: BLE001 - a bug shows as a 500 page, the server goes on
        return error_page(500, "Internal error", f"{type(e).__name__}: {e}")


__all__ = ["ROUTES", "dispatch", "error_page"]
