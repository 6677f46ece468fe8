"""A page's settings and its link: one codec, each page's ``settings.Schema``.

Reading: :func:`load` seeds the widgets from the link (``Schema.from_query``, with a note per
value replaced); :func:`parsed` gives their typed values. Writing: :func:`save` puts the
widgets' texts back into the URL through ``Schema.to_query``, so a copied link (see
:func:`share_link`) reproduces the view. The explorer's scenario travels the same way
(``scenarios.schema(n)``), to every page that runs it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from urllib.parse import urlencode, urlsplit

import streamlit as st
from streamlit import config, net_util

from pmapviz.core.base import room, settings
from pmapviz.core.devices import deviceset
from pmapviz.core.planning import scenarios
from pmapviz.core.planning.scenarios import Scenario

EXPLORER_KEY = "explorer_settings"  # plain dict, survives page switches (widget keys do not)
EXPLORER_PREFIX = "ex_"  # the explorer's widget keys
# query keys a session keeps through every page's own link: a follower's ?follow=1
STICKY = frozenset({room.FOLLOW_KEY})
PREFIXES = "_url_prefixes"  # every prefix :func:`load` has seeded in this session
RUNS_ON = "_device_set"  # the device set this session's pages run on (ui.device_sets)
ON_SEEN = "_device_set_url"  # the URL's on= as last read or written


def load(prefix: str, schema: settings.Schema) -> None:
    """Seed this page's widget state (keys ``prefix + key``) once per session from the URL,
    through the settings layer: a value that does not parse is replaced by its default, with
    a visible note saying what was wrong (shown every run until the settings change).

    Afterwards, every run puts back any widget value Streamlit dropped: it deletes a widget's
    state after a run that did not draw it (another page, or this page stopped early at a
    bad setting), and the widget would come back empty. The value back is the one :func:`save`
    last kept, else the default."""
    flag = f"_{prefix}loaded"
    register(prefix)
    if not st.session_state.get(flag):
        st.session_state[flag] = True
        texts, found = schema.from_query(dict(st.query_params))
        for key, value in texts.items():
            st.session_state[prefix + key] = _widget_value(schema.field(key), value)
        st.session_state[f"_{prefix}notes"] = found
    kept = st.session_state.get(f"_{prefix}kept", {})
    for f in schema.fields:
        if prefix + f.key not in st.session_state:
            st.session_state[prefix + f.key] = kept.get(f.key, _widget_value(f, f.default))
    notes(st.session_state.get(f"_{prefix}notes", []))


def _widget_value(f: settings.Field, text: str):
    """What the widget holds for this text: the text, or the list a multiselect holds."""
    typed = f.parse(text, f.label)  # already checked (from_query, or the default)
    return typed if isinstance(typed, list | bool) else text


def notes(found: list[str]) -> None:
    """The link's values that were replaced by defaults, one warning each."""
    for note in found:
        st.warning(note, icon=":material/link_off:")


def explorer_scenario(n_devices: int) -> Scenario:
    """The explorer's current scenario, shared with the pages that run it: from this session
    (the explorer saves it), else from this page's URL (validated, with notes), else the
    defaults."""
    saved = st.session_state.get(EXPLORER_KEY)
    if saved:
        return Scenario.from_texts(saved, n_devices)
    texts, found = scenarios.schema(n_devices).from_query(dict(st.query_params))
    notes(found)
    return Scenario.from_texts(texts, n_devices)


def show_errors(errors: list[str], icon: str = ":material/edit:") -> bool:
    """One error box per message; True when there were any (the caller usually stops)."""
    for e in errors:
        st.error(e, icon=icon)
    return bool(errors)


def parsed(prefix: str, schema: settings.Schema, keys: list[str] | None = None) -> dict:
    """Typed values of this page's widgets (keys ``prefix + key``), parsed by the settings
    layer; on bad text, one message per field and the page stops there."""
    texts = {f.key: st.session_state.get(prefix + f.key, f.default) for f in schema.fields}
    values, errors = schema.parse(texts, keys)
    if show_errors(errors):
        st.stop()
    return values


def query(
    prefix: str, schema: settings.Schema, keys: Sequence[str] | None = None, **values
) -> dict[str, str]:
    """The URL query of this page's settings, through ``schema.to_query``: each field's
    widget (key ``prefix + key``; ``keys``: only these fields), or its value in ``values``
    where a page keeps it elsewhere."""
    state = st.session_state
    texts = {
        f.key: values[f.key] if f.key in values else state[prefix + f.key]
        for f in schema.fields
        if (keys is None or f.key in keys) and (f.key in values or prefix + f.key in state)
    }
    return schema.to_query(texts)


def scenario_query(current: Scenario, n_devices: int) -> dict[str, str]:
    """The URL query of the explorer's scenario (only the argument slots it uses)."""
    return scenarios.schema(n_devices).to_query(current.texts())


def save(
    prefix: str,
    schema: settings.Schema,
    keys: Sequence[str] | None = None,
    also: Mapping[str, str] | None = None,
    **values,
) -> None:
    """Mirror this page's settings into the URL (:func:`query`, then ``also``: another
    schema's query), so that a copied link reproduces the view."""
    state = st.session_state
    kept = dict(state.get(f"_{prefix}kept", {}))
    kept.update({f.key: state[prefix + f.key] for f in schema.fields if prefix + f.key in state})
    state[f"_{prefix}kept"] = kept  # a plain dict: it outlives the widgets (see load)
    set_url({**query(prefix, schema, keys, **values), **(also or {})})


def save_scenario(current: Scenario, n_devices: int) -> None:
    """Mirror the explorer's scenario into the URL (the explorer's and Live's links), and keep
    it for the explorer's widgets (see :func:`load`)."""
    st.session_state[f"_{EXPLORER_PREFIX}kept"] = current.texts(every_slot=True)
    set_url(scenario_query(current, n_devices))


def forget_pages() -> None:
    """Forget every page's settings in this session: each page seeds them afresh from the
    link its next run is opened with."""
    state = st.session_state
    for prefix in state.get(PREFIXES, ()):
        for key in [k for k in state if k.startswith((prefix, f"_{prefix}"))]:
            del state[key]
    state.pop(EXPLORER_KEY, None)


def reset_pages() -> None:
    """Forget every page's settings in this session and the link's (but presenter mode): the
    pages open afresh, with their defaults, as after switching to another device set."""
    forget_pages()
    keep = {k: v for k, v in st.query_params.items() if k == "present" or k in STICKY}
    st.query_params.from_dict(keep)


def own_keys() -> dict[str, str]:
    """This session's own keys, which every link it writes or opens keeps: presenter mode,
    following the presenter, and the device set where the server holds two."""
    own = {k: v for k, v in st.query_params.items() if k in STICKY}
    if st.session_state.get("present"):
        own["present"] = "1"
    if (on := st.session_state.get(RUNS_ON)) and deviceset.has_two():
        own["on"] = on
    return own


def set_url(params: Mapping[str, str]) -> None:
    """Replace the URL's query parameters (keeping this session's own keys: :func:`own_keys`)
    if they changed."""
    wanted = dict(params) | own_keys()
    if "on" in wanted:
        st.session_state[ON_SEEN] = wanted["on"]
    if dict(st.query_params) != wanted:
        st.query_params.from_dict(wanted)


LOOPBACK = ("localhost", "127.0.0.1", "[::1]")


def browser_host() -> str:
    """The host name this browser used for the server, without the port."""
    host = str((st.context.headers or {}).get("Host", ""))
    if host.startswith("["):  # [::1]:8501
        return host.partition("]")[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def base_url() -> str:
    """``scheme://host:port`` that the room reaches this server at: Streamlit's
    ``browser.serverAddress`` (and ``browser.serverPort``) where the operator set it; else,
    when the server listens on every interface, this machine's network address as Streamlit
    finds it (the "Network URL" it prints) with the server's port; else the address this
    browser used. Streamlit's ``server.baseUrlPath`` follows, where one is set."""
    if config.is_manually_set("browser.serverAddress"):
        host, _, path = str(st.get_option("browser.serverAddress")).strip("/").partition("/")
        scheme = "https" if _https() else "http"
        port = int(st.get_option("browser.serverPort") or 0)
        shown = f":{port}" if port and port not in (80, 443) else ""
        return f"{scheme}://{host}{shown}" + (f"/{path}" if path else _base_path())
    if listens_everywhere() and not _loopback(ip := net_util.get_internal_ip()):
        scheme = "https" if st.get_option("server.sslCertFile") else "http"
        return f"{scheme}://{ip}:{int(st.get_option('server.port'))}{_base_path()}"
    headers = st.context.headers or {}
    host = str(headers.get("Host") or "localhost")
    return f"{'https' if _https() else 'http'}://{host}{_base_path()}"


def _https() -> bool:
    """Whether this browser reached the server over https (or the server serves https)."""
    return str(st.context.url or "").startswith("https") or bool(
        st.get_option("server.sslCertFile")
    )


def _base_path() -> str:
    path = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{path}" if path else ""


def _loopback(host: str | None) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is this machine
    alone: localhost, 127.0.0.0/8, ::1."""
    name = str(host or "").strip().strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def listens_everywhere() -> bool:
    """Whether the server listens on every interface: ``server.address`` empty, "0.0.0.0" or
    "::" (``streamlit run --server.address 0.0.0.0``; ``pmapviz serve --address 0.0.0.0``)."""
    return str(st.get_option("server.address") or "").strip() in ("", "0.0.0.0", "::", "[::]")


def only_this_machine() -> bool:
    """Whether nobody else can open the links this server gives: the server listens on a
    loopback address alone (say 127.0.0.1, pmapviz's default) and the links name one (not a
    name the operator gave, nor one a proxy was reached at)."""
    if listens_everywhere() or not _loopback(str(st.get_option("server.address"))):
        return False
    return _loopback(urlsplit(base_url()).hostname)


ROOM_NOTE = (
    "Only this machine can open this link: this server listens on a loopback address alone. "
    "To serve a room, restart with `--server.address 0.0.0.0` (`pmapviz serve`: "
    "`--address 0.0.0.0`); the links then name this machine's network address, or the name "
    "you give with `--browser.serverAddress NAME`."
)


def register(prefix: str) -> None:
    """Count the session-state keys that start with ``prefix`` (or ``_`` + it) as a page's
    settings: :func:`reset_pages` forgets them (``load`` registers its prefix itself)."""
    st.session_state.setdefault(PREFIXES, set()).add(prefix)


def share_link(url_path: str, where=None, key: str | None = None) -> None:
    """A "Share this view" button (in the sidebar, or in ``where``) that opens a copyable link
    to exactly this view, the page and its settings, without this session's own keys. Lazy:
    the link is drawn only while it is open (opening it reruns the page), so an edit pays
    nothing for it, and a page whose edits rerun only a fragment (which may not write to the
    sidebar) still gets a link with its latest settings: the fragment keeps the URL's query
    up to date."""
    box = (where if where is not None else st.sidebar).popover(
        "Share this view",
        icon=":material/link:",
        on_change="rerun",
        key=key or f"share_{url_path}",
    )
    if not box.open:
        return
    path = "" if url_path == "home" else url_path
    own = set(STICKY) | {"present"}
    encoded = urlencode({k: v for k, v in st.query_params.items() if k not in own})
    with box:
        st.code(
            f"{base_url()}/{path}" + (f"?{encoded}" if encoded else ""),
            language=None,
            wrap_lines=True,
        )
        st.caption("Opening the link reproduces these settings.")
        if only_this_machine():
            st.warning(ROOM_NOTE, icon=":material/lan:")
