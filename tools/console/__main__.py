"""``python -m tools.console ...``: the same as ``pybroker console ...``."""

import sys

from tools.console import main

sys.exit(main())
