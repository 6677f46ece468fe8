"""``pmapviz serve``: the whole dashboard from the installed package, as ``streamlit run app.py``
serves it from a checkout (the same :func:`pmapviz.app.ui.dashboard.main`), with the same safe
defaults (this machine only, XSRF on: :mod:`pmapviz.app.serverconfig`)."""

from __future__ import annotations

import argparse
import errno
import os
import socket
import sys

from pmapviz.app import serverconfig, warmup
from pmapviz.app.ui import lead_link, streamlitserver
from pmapviz.core.base import heavyimports, room, stopping, valueparse
from pmapviz.core.devices import cliflags, jaxstartup

DEFAULT_PORT = 8501
# the server's own options: parsed by the settings layer (jaxstartup.parse_settings) as the
# script's arguments, exactly as `streamlit run app.py -- --devices 8` passes them
SERVER_OPTIONS = ("devices", "platform", "max_bytes", "max_device_bytes", "max_seconds")
SERVER_OPTIONS += ("compile_cache", "reports", "presenter_key")


def _serve_args(p: argparse.ArgumentParser) -> None:
    shared = argparse.ArgumentParser(add_help=False)
    cliflags._device_args(shared)  # the same flags and help as every command, less these two
    for action in shared._actions:
        if action.dest not in ("device_set", "json"):
            p._add_action(action)
    p.add_argument("--reports", metavar="DIR", help="a folder of cluster reports to list")
    p.add_argument(
        room.FLAG,
        metavar="KEY",
        help=f"the presenter key ({room.MIN_KEY}-{room.MAX_KEY} letters, digits or -_.~; default: "
        f"${room.ENV_KEY} or a fresh one, printed here)",
    )
    p.add_argument("--port", help=f"the port to serve on (default {DEFAULT_PORT})")
    p.add_argument(
        "--address",
        help="the address to serve on (default 127.0.0.1: this machine only; 0.0.0.0 serves a "
        "room)",
    )


def script_args(args: argparse.Namespace) -> list[str]:
    """The server's options as typed, as the entry script's arguments."""
    argv: list[str] = []
    for name in SERVER_OPTIONS:
        value = getattr(args, name, None)
        if value is not None:
            argv += [f"--{name.replace('_', '-')}", str(value)]
    return argv


def streamlit_flags(args: argparse.Namespace) -> dict[str, object]:
    """Streamlit's flag options: pmapviz's defaults, with --port and --address on top."""
    overrides: dict[str, object] = {}
    if args.port is not None:
        overrides["server_port"] = valueparse.parse_int(args.port, "--port", 1, 65535)
    if args.address is not None:
        overrides["server_address"] = _address(args.address)
    return serverconfig.flag_options(**overrides)


def _address(text: str) -> str:
    """An address to bind: a host name or an IP address, nothing else."""
    text = text.strip()
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]")
    if not text or len(text) > 253 or not set(text) <= allowed:
        raise valueparse.SettingError(
            f"--address {text[:40]!r} is not a host name or an IP address, e.g. --address "
            "0.0.0.0 (every network of this machine) or --address 127.0.0.1 (this machine)"
        )
    return text


def check_listen(address: str, port: object) -> None:
    """Fail in one line, before any server starts, where it could not listen: the port taken
    (when one was asked for: without ``--port`` Streamlit moves on to the next free one), the
    address not this machine's, or no network sockets allowed here at all."""
    asked = port is not None
    port = int(port) if asked else DEFAULT_PORT
    where = f"{address}:{port}"
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(
            address.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does
            probe.bind(addr)
    except OSError as err:
        if err.errno == errno.EADDRINUSE and not asked:
            return
        reason = err.strerror or str(err)
        fix = (
            f"another program listens there: pick another port, e.g. --port {port + 1}"
            if err.errno == errno.EADDRINUSE
            else "check --address (e.g. --address 127.0.0.1 for this machine only); a machine "
            "that allows no network sockets (a sandbox) cannot serve pages, but the CLI's "
            "commands and the notebook API work there"
        )
        raise valueparse.SettingError(f"cannot listen on {where} ({reason}): {fix}") from None


def cmd_serve(args: argparse.Namespace) -> int:
    """Check every option (one line and exit 2 if one is wrong), say the presenter key, then
    serve until stopped (Ctrl-C), saying the one-time lead link once the server listens."""
    argv = script_args(args)
    settings = jaxstartup.parse_settings(argv, os.environ)  # fail here, not in a browser
    flags = streamlit_flags(args)
    check_listen(str(flags["server.address"]), flags.get("server.port"))
    key = settings.presenter_key
    if key is None:
        key = room.new_key()
        os.environ[room.ENV_KEY] = key  # to this process's script; not on any command line
        print(room.terminal_line(key), file=sys.stderr, flush=True)
    token = room.room(key).first_invite()  # the room the pages lead: this process's
    if token is not None:
        lead_link.announce_when_listening(token)
    heavyimports.ready()  # before the server takes requests: no first visitor waits for it
    warm_up(argv)  # and JAX, the pages' modules, the Pods page's first compile
    return streamlitserver.serve(serverconfig.ENTRY, flags, argv)


def warm_up(argv: list[str]) -> None:
    """What the server does before it answers (:mod:`pmapviz.app.warmup`): JAX started on
    the devices asked for, the pages' modules imported, Home's run compiled; then the Pods
    page's first compile, in the background. Nothing where JAX cannot start as asked (the
    first page says why). The settings are read again: the presenter key is in them now, as
    the pages read them."""
    if warmup.process(jaxstartup.parse_settings(argv, os.environ)):
        stopping.end_everything_at_exit()  # a stop ends the warm-up's compile too
        warmup.pods()
