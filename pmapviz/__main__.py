"""``python -m pmapviz <command>``: the core, for scripts and checks."""

import sys

from pmapviz.app.cli import main

sys.exit(main())
