"""The sidebar panel shown on every page: the devices, what they are, the memory budgets."""

from __future__ import annotations

import html

import streamlit as st

from pmapviz.core.base.palette import device_colour, text_colour
from pmapviz.core.budgets import memorypool
from pmapviz.core.devices import compilecache, devicefacts, devicewords, jaxstartup


def device_chips(report: jaxstartup.DeviceReport, facts: devicefacts.Facts | None = None) -> str:
    """HTML chips, one per device of ``facts``' set (default: the report's), in the app's
    device palette, each labelled (not colour only)."""
    chips = []
    for k, d in enumerate((facts or report.facts).devices):
        fill = device_colour(k)
        chips.append(
            f"<span title='id {d.id}, process {d.process_index}' style='display:inline-block;"
            f"background:{fill};color:{text_colour(fill)};border-radius:4px;padding:1px 6px;"
            f"margin:1px;font-size:0.8em;font-family:monospace'>"
            f"{html.escape(d.label)}·p{d.process_index}</span>"
        )
    return "".join(chips)


def _set_lines(report: jaxstartup.DeviceReport) -> None:
    """Each device set of the server: what it is and its devices; the page's marked."""
    for f in report.sets:
        here = f.platform == report.platform
        real = "emulated" if f.emulated else "real"
        mark = " · **this page**" if here and f.beside else ""
        st.markdown(
            f"**{f.devices_phrase()}** · platform `{f.platform}` ({real}), kind "
            f"`{f.device_kind}`{mark}"
        )
        st.markdown(device_chips(report, f), unsafe_allow_html=True)


def show(report: jaxstartup.DeviceReport) -> None:
    """The devices and what they are (every set the server holds), the memory budgets (host,
    and device where the devices have their own), start-up, restart."""
    facts = report.facts
    with st.sidebar:
        heading = (
            f"{report.count} devices" if len(report.sets) < 2 else f"{len(report.sets)} device sets"
        )
        st.markdown(f"### :material/memory: {heading}")
        _set_lines(report)
        st.markdown(
            f"**JAX** `{report.jax_version}` · **processes** {report.process_count}  \n"
            f"**Host CPU** {report.physical_cores} physical core(s), {report.logical_cpus} logical"
        )
        st.caption("Each chip: device name · process index.")
        pool = memorypool.admission()
        reserved = tuple(c - f for c, f in zip(pool.capacity, pool.free(), strict=True))
        for line in memorypool.budget_lines(
            memorypool.budget(), devicefacts.device_memory(), reserved
        ):
            st.caption(line)
        if facts.startup is not None:
            for line in devicefacts.startup_lines(facts.startup):
                st.caption(line)
        cache = compilecache.note()  # a failure after start is not in report.notes
        extra = [cache] if cache and cache not in report.notes else []
        for note in (*report.notes, *extra, *facts.hints):
            st.warning(note, icon=":material/warning:")
        if note := devicewords.devices_note(facts):
            st.info(note, icon=":material/info:")
        st.markdown(devicewords.say(facts, "restart"))
        n = st.number_input(
            "Devices for the restart command",
            min_value=jaxstartup.MIN_DEVICES,
            max_value=jaxstartup.MAX_DEVICES,
            value=report.requested.devices,
            step=1,
            key="restart_devices",
        )
        st.code(report.cpu_restart_command(int(n)), language="bash", wrap_lines=True)
