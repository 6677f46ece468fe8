"""The sidebar panel shown on every page: the devices, what they are, the memory budgets."""

from __future__ import annotations

import streamlit as st

from pmapviz import devicefacts, devices, memory
from pmapviz.palette import device_colour, text_colour


def device_chips(report: devices.DeviceReport) -> str:
    """HTML chips, one per device, in the app's device palette, each labelled (not colour only)."""
    chips = []
    for k, d in enumerate(report.devices):
        fill = device_colour(k)
        chips.append(
            f"<span title='id {d.id}, process {d.process_index}' style='display:inline-block;"
            f"background:{fill};color:{text_colour(fill)};border-radius:4px;padding:1px 6px;"
            f"margin:1px;font-size:0.8em;font-family:monospace'>{d.label}·p{d.process_index}</span>"
        )
    return "".join(chips)


def show(report: devices.DeviceReport) -> None:
    """The devices and what they are, the memory budgets (host, and device where the devices
    have their own), start-up, restart."""
    facts = report.facts
    with st.sidebar:
        st.markdown(f"### :material/memory: {report.count} devices")
        real = "emulated" if facts.emulated else "real"
        st.markdown(
            f"**Platform** `{report.platform}` ({real}) · **kind** `{report.device_kind}`  \n"
            f"**JAX** `{report.jax_version}` · **processes** {report.process_count}  \n"
            f"**Host CPU** {report.physical_cores} physical core(s), {report.logical_cpus} logical"
        )
        st.markdown(device_chips(report), unsafe_allow_html=True)
        st.caption("Each chip: device name · process index.")
        budget = memory.budget()
        pool = memory.admission(budget)
        reserved = tuple(c - f for c, f in zip(pool.capacity, pool.free(), strict=True))
        for line in memory.budget_lines(budget, devicefacts.device_memory(), reserved):
            st.caption(line)
        if facts.startup_s is not None and not facts.emulated:
            st.caption(f"Backend start-up (the first `device_put`): {facts.startup_s:.2f} s, "
                       "measured once and kept out of every timing.")  # fmt: skip
        for note in (*report.notes, *facts.hints):
            st.warning(note, icon=":material/warning:")
        if note := devicefacts.devices_note(facts):
            st.info(note, icon=":material/info:")
        st.markdown(devicefacts.say(facts, "restart"))
        n = st.number_input(
            "Devices for the restart command",
            min_value=devices.MIN_DEVICES,
            max_value=devices.MAX_DEVICES,
            value=report.requested.devices,
            step=1,
            key="restart_devices",
        )
        st.code(report.cpu_restart_command(int(n)), language="bash", wrap_lines=True)
