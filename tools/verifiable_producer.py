"""``pybroker verifiable-producer``: Kafka's VerifiableProducer (the system tests'
producer), printing one JSON event per line.

    pybroker verifiable-producer --bootstrap-server HOST:PORT --topic T
        [--max-messages N] [--throughput R] [--acks -1|0|1]
        [--producer.config FILE | --command-config FILE]
        [--message-create-time MS] [--value-prefix P] [--repeating-keys K]

It sends the values "0", "1", ... (or "P.0", "P.1", ... with --value-prefix),
keys null or, with --repeating-keys K, "0" .. "K-1" over and over, N records
(-1: until SIGTERM/SIGINT) at about R records/s (-1: unlimited), with
retries off (as Kafka's: an acknowledged record was written once). Events,
keys in Kafka's order, each with the event's ``timestamp`` (ms) and ``name``:

    {"timestamp":..,"name":"startup_complete"}
    {"timestamp":..,"name":"producer_send_success","key":null,"value":"0","topic":"t",
     "partition":0,"offset":0}
    {"timestamp":..,"name":"producer_send_error","key":..,"value":..,"topic":"t",
     "exception":"class org.apache.kafka.common.errors.NotLeaderOrFollowerException",
     "message":".."}
    {"timestamp":..,"name":"shutdown_complete"}
    {"timestamp":..,"name":"tool_data","sent":N,"acked":A,"target_throughput":R,
     "avg_throughput":X}

(``exception`` names the Java exception class Kafka's client would raise for
the error code, derived from the code's name.) --message-create-time T sets
each record's timestamp to T plus the time since start. Records go through
``tools.record_pipeline`` (keyed records by murmur2, as Kafka's partitioner).
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from argparse import Namespace
from typing import IO, Any

from client import KafkaAdmin
from tools import ToolError, ToolParser, run_tool
from tools.perf_common import Throttler, load_props, partitions_of, producer_settings
from tools.record_pipeline import RecordPipeline
from protocol.errors import ErrorCode


def event(name: str, now_ms: int | None = None, **fields: Any) -> str:
    """One JSON line: timestamp, name, then the fields in the order given."""
    body = {"timestamp": int(time.time() * 1000) if now_ms is None else now_ms, "name": name}
    body.update(fields)
    return json.dumps(body, separators=(",", ":"))


def exception_class(error: int) -> str:
    name = ErrorCode.from_code(error).name
    camel = "".join(part.capitalize() for part in name.split("_"))
    return f"class org.apache.kafka.common.errors.{camel}Exception"


def value_of(i: int, prefix: int | None) -> str:
    return f"{prefix}.{i}" if prefix is not None else str(i)


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker verifiable-producer", out=out, err=err,
                   description="This tool produces increasing integers to the specified topic "
                               "and prints JSON metadata to stdout on each \"send\" request, "
                               "making externally visible which messages have been acked and "
                               "which have not.")
    p.add_argument("--topic", required=True, metavar="TOPIC", help="Produce messages to this topic.")
    p.add_argument("--bootstrap-server", "--broker-list", required=True,
                   metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
                   help="REQUIRED: The server(s) to connect to.")
    p.add_argument("--max-messages", type=int, default=-1, metavar="MAX-MESSAGES",
                   help="Produce this many messages. If -1, produce messages until the process "
                        "is killed externally.")
    p.add_argument("--throughput", type=int, default=-1, metavar="THROUGHPUT",
                   help="If set >= 0, throttle maximum message throughput to *approximately* "
                        "THROUGHPUT messages/sec.")
    p.add_argument("--acks", type=int, default=-1, choices=(0, 1, -1), metavar="ACKS",
                   help="Acks required on each produced message.")
    p.add_argument("--producer.config", dest="producer_config", metavar="CONFIG-FILE",
                   help="Producer config properties file.")
    p.add_argument("--command-config", dest="command_config", metavar="CONFIG-FILE",
                   help="Config properties file (same as --producer.config).")
    p.add_argument("--message-create-time", type=int, default=-1, metavar="CREATE-TIME",
                   help="Send messages with creation time starting at the arguments value, in "
                        "milliseconds since epoch")
    p.add_argument("--value-prefix", type=int, metavar="VALUE-PREFIX",
                   help="If specified, each produced value will have this prefix with a dot "
                        "separator")
    p.add_argument("--repeating-keys", type=int, metavar="REPEATING-KEYS",
                   help="If specified, each produced record will have a key starting at 0 "
                        "increment by 1 up to the number specified (exclusive), then the key "
                        "is set to 0 again")
    return p


def parse_args(argv: list[str], out: IO[str] | None = None,
               err: IO[str] | None = None) -> Namespace:
    args = build_parser(out, err).parse_args(argv)
    if args.producer_config and args.command_config:
        raise ToolError("Options --producer.config and --command-config are mutually exclusive.")
    if args.repeating_keys is not None and args.repeating_keys <= 0:
        raise ToolError("--repeating-keys must be at least 1")
    props = load_props(args.producer_config or args.command_config)
    props.update({"bootstrap.servers": args.bootstrap_server, "acks": str(args.acks),
                  "retries": "0"})
    args.settings = producer_settings(props, "verifiable-producer")
    return args


def _stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (RuntimeError, ValueError, NotImplementedError):
            pass                # not the main thread: the caller stops us otherwise


async def execute(args: Namespace, out: IO[str], stop: asyncio.Event | None = None) -> int:
    s = args.settings
    stop = stop or asyncio.Event()
    _stop_on_signals(stop)

    def emit(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    counts = {"sent": 0, "acked": 0}
    start = time.time() * 1000
    async with KafkaAdmin(s.servers, timeout=s.timeout_ms / 1000 + 5, client_id=s.client_id,
                          security=s.security) as admin:
        cluster = await partitions_of(admin, args.topic)

        def done(token: tuple[str | None, str], partition: int, offset: int, error: int,
                 message: str | None) -> None:
            key, value = token
            if error == ErrorCode.NONE:
                counts["acked"] += 1
                emit(event("producer_send_success", key=key, value=value, topic=args.topic,
                           partition=partition, offset=offset))
            else:
                emit(event("producer_send_error", key=key, value=value, topic=args.topic,
                           exception=exception_class(error),
                           message=message or ErrorCode.from_code(error).message))

        pipe = RecordPipeline(admin, args.topic, len(cluster.topics[args.topic].partitions),
                              done, acks=s.acks, codec=s.codec, batch_size=s.batch_size,
                              max_in_flight=s.max_in_flight, retries=0, timeout_ms=s.timeout_ms)
        emit(event("startup_complete"))
        throttle = Throttler(args.throughput)
        i = 0
        while (args.max_messages < 0 or i < args.max_messages) and not stop.is_set():
            wait = throttle.delay(i)
            if wait > 0:
                await pipe.dispatch_open()
                try:
                    await asyncio.wait_for(stop.wait(), wait)
                    break
                except asyncio.TimeoutError:
                    pass
            elif i % 1000 == 999:
                await asyncio.sleep(0)     # let answers and signals in
            key = None if args.repeating_keys is None else str(i % args.repeating_keys)
            value = value_of(i, args.value_prefix)
            now = int(time.time() * 1000)
            ts = now if args.message_create_time < 0 else \
                args.message_create_time + int(now - start)
            counts["sent"] += 1
            await pipe.add(None if key is None else key.encode(), value.encode(), ts,
                           (key, value))
            i += 1
        await pipe.flush()
    emit(event("shutdown_complete"))
    elapsed = max(time.time() * 1000 - start, 1)
    emit(event("tool_data", sent=counts["sent"], acked=counts["acked"],
               target_throughput=args.throughput,
               avg_throughput=1000 * counts["acked"] / elapsed))
    return 0


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    return run_tool(parse_args, execute, argv, stdin, stdout, stderr)
