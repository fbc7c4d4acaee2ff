"""``pybroker``: the command line.

    pybroker start -c config/server.properties [--override key=value ...]
    pybroker zookeeper -c config/zookeeper.properties
    pybroker topics ...            (Kafka's kafka-topics, over the Kafka protocol)
    pybroker console-producer ...
    pybroker console-consumer ...
    pybroker consumer-groups ...
    pybroker reassign-partitions ...
    pybroker leader-election ...
"""

from __future__ import annotations

import argparse
import importlib
import sys

TOOLS = {
    "topics": "tools.topics",
    "console-producer": "tools.console_producer",
    "console-consumer": "tools.console_consumer",
    "consumer-groups": "tools.consumer_groups",
    "reassign-partitions": "tools.reassign_partitions",
    "leader-election": "tools.leader_election",
    "transactions": "tools.transactions",
    "acls": "tools.acls",
    "configs": "tools.configs",
    "dump-log": "tools.dump_log",
    "console": "tools.console",
    # the operators' tools (issue 18)
    "log-dirs": "tools.log_dirs",
    "get-offsets": "tools.get_offsets",
    "delete-records": "tools.delete_records",
    "producer-perf-test": "tools.producer_perf",
    "consumer-perf-test": "tools.consumer_perf",
    "verifiable-producer": "tools.verifiable_producer",
    "verifiable-consumer": "tools.verifiable_consumer",
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in TOOLS:
        return int(importlib.import_module(TOOLS[argv[0]]).main(argv[1:]))
    parser = argparse.ArgumentParser(prog="pybroker", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="run a broker in the foreground")
    start.add_argument("-c", "--config", required=True, help="server.properties")
    start.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                       help="override a property (repeatable)")
    zk = sub.add_parser("zookeeper", help="run a ZooKeeper server in the foreground")
    zk.add_argument("-c", "--config", required=True, help="zookeeper.properties")
    for name in TOOLS:
        sub.add_parser(name, help=f"see: pybroker {name} --help")
    args = parser.parse_args(argv)
    if args.command == "start":
        from broker.main import run_broker
        return run_broker(args.config, args.override)
    from broker.zookeeper_runner import run_zookeeper
    return run_zookeeper(args.config)


if __name__ == "__main__":
    sys.exit(main())
