"""``python -m pmapviz <command>``: the core, for scripts and checks."""

from pmapviz.app.cli import run

run()
