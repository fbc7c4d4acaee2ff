"""``python -m broker config/server.properties [--override k=v ...]``."""

import sys

from broker.cli import main

sys.exit(main(["start", "-c", *sys.argv[1:]] if sys.argv[1:2] and not sys.argv[1].startswith("-")
              else sys.argv[1:]))
