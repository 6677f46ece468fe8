"""What every benchmark script starts with: the repository on sys.path, options parsed, and
the device count fixed before anything imports JAX."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def start(doc: str, apply_devices: bool = True, **options: int) -> argparse.Namespace:
    """Parse ``--devices N`` (default 8) plus integer options given as ``name=default``, then
    fix the device count in this process (unless the script starts servers instead)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--devices", type=int, default=8)
    for name, default in options.items():
        ap.add_argument(f"--{name.replace('_', '-')}", type=int, default=default)
    args = ap.parse_args()
    if apply_devices:
        os.environ["PMAPVIZ_DEVICES"] = str(args.devices)
        from pmapviz.core.devices import jaxstartup

        jaxstartup.apply(jaxstartup.Settings(devices=args.devices))
    return args
