"""The words for what the devices are: every platform sentence a page, command, budget or
exported script says, so none tells the CPU story on a GPU.
"""

from __future__ import annotations

from pmapviz.core.devices import devicefacts


def beside(f: devicefacts.Facts) -> devicefacts.Facts | None:
    """The other device set of this process (the accelerators beside the emulated CPU
    devices, or those beside the accelerators), or None on a one-set machine."""
    others = [name for name in f.sets if name != f.platform]
    return devicefacts.facts(others[0]) if others else None


def sets_sentence(f: devicefacts.Facts) -> str:
    """Which set a page runs on, and the other one this server holds (empty on one set)."""
    other = beside(f)
    if other is None:
        return ""
    return (
        f"This page runs on **{f.devices_phrase()}**; the server also holds "
        f"{other.devices_phrase()} (switch at the top of the page)."
    )


def beside_sentences(f: devicefacts.Facts) -> list[str]:
    """What pmapviz says of the set beside ``f``'s on a page running on ``f`` (the words of
    the other set are true there): the sets sentence, the sidebar's restart and tour step 1."""
    if beside(f) is None:
        return []
    return [sets_sentence(f), devices_story(f, f.local_count), say(f, "restart")]


def summary(f: devicefacts.Facts) -> str:
    """One line: what the devices are."""
    share = f", sharing {f.physical_cores} physical CPU core(s)" if f.emulated else ""
    return f"{f.devices_phrase()}{share}"


def speed_story(f: devicefacts.Facts, n: int | None = None) -> str:
    """Why more devices do or do not make things faster here (Timing lab, tour)."""
    n = f.local_count if n is None else n
    if f.emulated:
        other = beside(f)
        real = (
            f" This server also holds {other.devices_phrase()}: pick it at the top of the "
            "page to time the real device."
            if other
            else ""
        )
        return (
            f"**This machine: {f.physical_cores} physical CPU core(s), {f.devices_phrase(n)}.** "
            "Emulated devices share those cores, so more devices bring no more hardware: "
            "expect no real speed-up here, only per-call overhead and, for collectives, "
            "copies (a run that does go faster is XLA using the same cores differently, and "
            "the verdict under the results says so from the run itself). On real GPUs or "
            "TPUs each device has its own compute and memory, and pmap does speed up "
            f"(sub-linearly, once communication offsets the gain).{real}"
        )
    if n == 1:
        return (
            f"**This machine: {f.devices_phrase(n)}, a real accelerator.** With one device "
            "there is nothing to split: pmap, `jit` + `NamedSharding` and `shard_map` all run "
            "on the same chip, so the comparison shows each API's own overhead and the transfer "
            "from the host. A speed-up needs more devices, each with its own compute and memory."
        )
    return (
        f"**This machine: {f.devices_phrase(n)}, real devices.** Each has its own compute and "
        "memory, so splitting the work **should speed it up**, limited by communication: "
        "collectives cross the interconnect, and a small problem is dominated by per-call "
        "overhead. The ideal line (k devices, k times faster) is a real target here."
    )


def speed_caveat(f: devicefacts.Facts, n: int) -> str:
    """A sentence on what a timing on n devices can show here (Live, Training)."""
    if f.emulated:
        return (
            f"On {f.physical_cores} CPU core(s) shared by {f.devices_phrase(n)}, expect no "
            "speed-up over one device (see the Timing lab)."
        )
    if n == 1:
        return (
            f"On {f.devices_phrase(1)} there is nothing to split; the Timing lab compares the "
            "APIs' overheads."
        )
    return (
        f"On {f.devices_phrase(n)} each device has its own compute: expect a speed-up, "
        "limited by communication (see the Timing lab)."
    )


def step_time_story(f: devicefacts.Facts, batch: int) -> str:
    """What time per training step versus devices should show here."""
    head = f"The same global batch of {batch:,} split over 1, 2, 4, ... devices. "
    if f.emulated:
        return head + (
            f"On this machine's {f.physical_cores} CPU core(s) the emulated devices "
            "share the cores, so more devices add all-reduce and dispatch overhead "
            "rather than speed; on real accelerators the step time falls until "
            "communication dominates."
        )
    return head + (
        f"These are {f.devices_phrase()}: each has its own compute, so the step "
        "time should fall with more devices until the gradient all-reduce "
        "dominates."
    )


# Two-way sentences: (on emulated CPU devices, on real GPUs or TPUs). Fields: {n} devices,
# {cores} physical cores, {name} GPU or TPU, {phrase} the devices in words.
WORDS: dict[str, tuple[str, str]] = {
    "honesty": (  # the home page: what speed the devices can show
        "emulated CPU devices share this machine's cores, so they show the *mechanics* of "
        "pmap, not a speed-up. Real accelerators do speed up.",
        "this server runs on {phrase}: real devices with their own compute, so the Timing lab "
        "shows real speed-ups and real communication costs.",
    ),
    "wire": (  # Collectives: what crosses a wire
        "Latency and on-device copies are ignored; on emulated CPU devices nothing crosses a wire.",
        "Latency and on-device copies are ignored; on these {name}s the bytes cross the "
        "interconnect between devices.",
    ),
    "trace": (  # Compiled: what a collective's bar means
        "on emulated CPU devices a collective is a copy between threads, so its measured time "
        "is mostly waiting for the slowest device.",
        "on {name}s a collective is a kernel that moves data over the interconnect; its time "
        "includes waiting for the other devices to arrive.",
    ),
    "devices info": (  # tour step 1's closing line
        "These {n} devices share {cores} physical core(s): they show how pmap works, not how "
        "fast it is.",
        "These are real {name}s: each has its own memory and compute, so they show how pmap "
        "works and how fast it is.",
    ),
    "devices title": ("Emulating devices on a CPU", "Your {name} devices"),  # tour step 1
    "restart": (  # the sidebar, above the restart command
        "The device count is **fixed for this server process**: JAX sets it when it starts. "
        "To use another count, stop the server and restart it:",
        "The devices are **fixed for this server process**: JAX found these {name}s when it "
        "started. To show another count, restart on CPU devices instead:",
    ),
    "restart beside": (  # the same, where the server holds an accelerator and CPU devices
        "Both device sets are **fixed for this server process**: JAX found the {real} and "
        "made the emulated CPU devices when it started. To emulate another count beside the "
        "{real_name}, restart the server:",
        "Both device sets are **fixed for this server process**: JAX found the {real} and "
        "made the emulated CPU devices when it started. To emulate another count beside the "
        "{real_name}, restart the server:",
    ),
}


def say(f: devicefacts.Facts, key: str, n: int | None = None) -> str:
    """The sentence ``key`` of :data:`WORDS` for these devices (``n``: how many are meant).
    Where the server holds two sets, ``"restart"`` says so (``"restart beside"``)."""
    other = beside(f)
    if key == "restart" and other is not None:
        key = "restart beside"
    cpu, real = WORDS[key]
    n = f.local_count if n is None else n
    accel = f if not f.emulated else other
    return (cpu if f.emulated else real).format(
        n=n,
        cores=f.physical_cores,
        name=f.name,
        phrase=f.devices_phrase(n),
        real=accel.devices_phrase() if accel else "",
        real_name=accel.name if accel else "",
    )


def devices_note(f: devicefacts.Facts) -> str | None:
    """The sidebar's note on what the devices are, when it matters."""
    other = beside(f)
    if f.emulated and other is not None:
        return (
            f"These {f.local_count} devices are emulated on {f.physical_cores} CPU core(s), "
            f"beside {other.devices_phrase()}: they show how pmap splits work over several "
            f"devices; the {other.name} shows how fast it runs."
        )
    if f.emulated and f.local_count > 1:
        return (
            f"These {f.local_count} devices are emulated on {f.physical_cores} CPU core(s). "
            "They share the cores, so more devices give no speed-up here; on real GPUs or "
            "TPUs they would."
        )
    if not f.emulated:
        return (
            f"{f.devices_phrase()}: real devices, each with its own memory and compute. "
            "Arrays on them are copied from the host (transfer), and collectives cross "
            "the interconnect."
        )
    return None


def devices_story(f: devicefacts.Facts, n: int) -> str:
    """Tour step 1: where the devices come from."""
    other = beside(f)
    emulated = f if f.emulated else other
    how = (
        f"JAX can pretend one CPU is several devices: this server asked for "
        f"**{emulated.local_count}** of them, before JAX started, with "
        f'`jax.config.update("jax_num_cpu_devices", {emulated.local_count})` (or '
        f"`XLA_FLAGS=--xla_force_host_platform_device_count={emulated.local_count}`). After "
        "JAX's first operation the count cannot change: it is fixed for the whole process."
        if emulated is not None
        else ""
    )
    if other is not None:
        real = other if f.emulated else f
        return (
            f"This server holds two device sets at once: the machine's own "
            f"**{real.devices_phrase()}**, and beside it emulated CPU devices for the "
            f"lessons that need several. {how} This step runs on **{f.devices_phrase(n)}**; "
            "switch at the top of the page. To emulate another count, restart the "
            "server:"
        )
    if f.emulated:
        return f"{how} To show another count, restart the server:"
    return (
        f"This server runs on **{f.devices_phrase(n)}**, the real devices JAX found when "
        "its backend started; the set is fixed for the whole process. To teach with more "
        "devices than the machine has, restart on CPU devices (up to 64):"
    )


def scaling_story(f: devicefacts.Facts, n: int) -> str:
    """Tour step 9."""
    head = (
        "More devices speed things up only when each has its own compute, and only until "
        "communication eats the gain: scaling is sublinear. "
    )
    if n == 1:
        return head + f"Here there is {f.devices_phrase(1)}: nothing to split, only overhead:"
    if f.emulated:
        return head + (
            f"Here the {n} devices share {f.physical_cores} core(s), so expect no gain at all:"
        )
    return head + f"Here the {f.devices_phrase(n)} each have their own compute: expect a gain:"


def workers_note(f: devicefacts.Facts) -> str | None:
    """Multi-process page: the local cluster's workers are CPU processes, whatever this is."""
    if f.emulated:
        return None
    return (
        f"This server runs on {f.devices_phrase()}, but the workers launched here are CPU "
        "processes (JAX_PLATFORMS=cpu), so that several of them can share one machine; on a "
        f"real cluster each process would drive its own {f.name}s."
    )


def export_header(f: devicefacts.Facts, n: int) -> tuple[str, str]:
    """(docstring lines, device set-up code) of an exported script that needs ``n`` devices."""
    if f.emulated:
        other = beside(f)
        held = (
            f" It was exported from a server with {other.devices_phrase()}; these lines "
            f"keep it on the CPU, so it also runs beside a process that holds the "
            f"{other.name}."
            if other
            else ""
        )
        return (
            f"Exported by pmapviz for JAX {f.jax_version}: {n} emulated CPU device(s).{held}\n"
            "To use a machine's GPUs or TPUs instead, delete the two jax.config lines.",
            'jax.config.update("jax_platforms", "cpu")  # CPU devices, also beside a GPU/TPU\n'
            f'jax.config.update("jax_num_cpu_devices", {n})'
            "  # before any other JAX call",
        )
    return (
        f"Exported by pmapviz for JAX {f.jax_version} on a {f.name} server "
        f"({f.device_kind}); it runs on {n} of the machine's {f.name}s.\n"
        f"Without {n} of them, emulate them on the CPU: run it with JAX_PLATFORMS=cpu and "
        f"XLA_FLAGS=--xla_force_host_platform_device_count={n}.",
        f'assert jax.device_count() >= {n}, f"needs {n} devices, found {{jax.devices()}}"',
    )


def more_devices(f: devicefacts.Facts, n: int) -> str:
    """How to get ``n`` devices for a command where ``f``'s set has fewer: advice this
    machine can follow (emulated CPU devices; beside an accelerator, that set)."""
    if f.emulated:
        return f"run it with --devices {n}"
    if beside(f) is not None:
        return f"run it on the emulated CPU devices with --device-set cpu --devices {n}"
    return f"run it on emulated CPU devices with --platform cpu --devices {n}"


def facts_json(f: devicefacts.Facts) -> dict:
    """The facts as plain JSON (the CLI, doctor)."""
    from dataclasses import asdict

    out = asdict(f)
    out["emulated"] = f.emulated
    out["count"] = len(f.devices)
    return out
