"""``pybroker console``: a web console for the cluster, with the *why*.

    pybroker console --bootstrap-server HOST:PORT [--listen 127.0.0.1:8080]
        [--command-config FILE] [--timeout-ms 10000] [--access-log]

A plain HTTP/1.1 server on asyncio serving server-rendered HTML (inline CSS,
no scripts, no build step), reading the cluster over ``client/`` only. It
prints ``pybroker console listening on http://HOST:PORT/`` when ready
(``--listen HOST:0`` picks a free port) and runs until SIGINT / SIGTERM.

Map (what lives where):

    __init__.py       main: arguments, the event loop, signals
    __main__.py       ``python -m tools.console``
    server.py         the HTTP server: one bounded request per connection,
                      response encoding and security headers
    routes.py         path -> page handler; error pages (400/404/502/500)
    data.py           ClusterReader: the cluster reads (Metadata, ListOffsets,
                      groups, OffsetFetch, Fetch, DescribeLogDirs) into model.py's
                      dataclasses
    why_source.py     the adapter over client/why_admin.py (the DescribeWhy API):
                      why facts or "why unavailable: <reason>"
    model.py          what each page shows, as plain dataclasses
    html.py           escaping, links, tables, the page layout
    decode.py         keys / values / headers as text, pretty JSON or hex
    pages_cluster.py  /            brokers, controller, ZooKeeper session state
    pages_topics.py   /topics, /topic   partitions, ISR, LEO/HW, under-replicated
    pages_partition.py /partition  why the ISR is what it is, why the HW is there
    pages_groups.py   /groups, /group   members, assignments, lag, why it rebalanced
    pages_messages.py /messages    the message browser (by offset or by time)

Rules: pages are pure functions of model values (unit-tested with fakes);
every cluster-supplied string is escaped by html.esc; only 127.0.0.1 is the
default listen address (the console has no authentication: expose it
deliberately or not at all).
"""

from __future__ import annotations

import asyncio
import signal
from argparse import Namespace
from typing import IO

from tools import (ToolError, ToolParser, add_command_config, command_security, parse_or_status,
                   run, streams)

DEFAULT_LISTEN = "127.0.0.1:8080"


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ToolError(f"--listen {text!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


def parse_args(argv: list[str], out: IO[str], err: IO[str]) -> Namespace:
    p = ToolParser(prog="pybroker console", out=out, err=err,
                   description="A web console for the cluster: brokers, topics, partitions "
                               "(and why their ISR and HW are what they are), consumer groups "
                               "(and why they rebalanced), and a message browser.")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT",
                   help="the brokers to bootstrap from")
    p.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                   help=f"where the console serves HTTP (default {DEFAULT_LISTEN}; port 0: any)")
    p.add_argument("--timeout-ms", type=int, default=10000,
                   help="Kafka request timeout (default 10000)")
    p.add_argument("--access-log", action="store_true",
                   help="print one line per request (status, method, path) on stderr")
    add_command_config(p)
    args = p.parse_args(argv)
    args.listen_addr = parse_listen(args.listen)
    if args.timeout_ms <= 0:
        raise ToolError(f"--timeout-ms {args.timeout_ms}: must be positive")
    return args


async def _run(args: Namespace, out: IO[str], err: IO[str]) -> int:
    from tools.console.data import ClusterReader
    from tools.console.server import serve

    reader = ClusterReader(args.bootstrap_server, timeout_ms=args.timeout_ms,
                           security=command_security(args))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):   # not the main thread (tests)
            pass
    host, port = args.listen_addr
    try:
        await serve(reader, host, port, ready=out, log=err if args.access_log else None,
                    stop=stop)
    except OSError as e:
        raise ToolError(f"--listen {args.listen}: {e.strerror or e}") from None
    finally:
        await reader.close()
    return 0


def main(argv: list[str] | None = None, *, stdin: IO[str] | None = None,
         stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> int:
    import sys
    _, out, err = streams(stdin, stdout, stderr)
    args = parse_or_status(parse_args, list(sys.argv[1:] if argv is None else argv), out, err)
    if isinstance(args, int):
        return args
    return run(lambda: _run(args, out, err), err, "pybroker console: ")


__all__ = ["main", "parse_listen"]
