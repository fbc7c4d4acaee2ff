"""``python -m broker config/server.properties [--override k=v ...]``, or any
``pybroker`` command line (``python -m broker topics --list ...``)."""

import sys

from broker.cli import TOOLS, main

args = sys.argv[1:]
if args and not args[0].startswith("-") and args[0] not in TOOLS and args[0] not in (
        "start", "zookeeper"):
    args = ["start", "-c", *args]  # the bare config-path form
sys.exit(main(args))
