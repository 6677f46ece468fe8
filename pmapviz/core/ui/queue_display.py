"""Waiting for a turn (``queues.FairLock``, ``queues.Pool``: the memory budget), in the
open: the caller's place, what it waits for, what runs, and a way to stop waiting."""

from __future__ import annotations

import streamlit as st

from pmapviz.core.base import queues
from pmapviz.core.budgets import memorymodel
from pmapviz.core.running import sandbox


def show(stop_key: str | None = None):
    """(on_wait, clear) for any wait in a queue: a placeholder that shows the queue's message
    (the caller's place, what it waits for, what runs), with a Stop button when ``stop_key``
    is given (any click reruns the page, which abandons the wait). Call ``clear()`` when
    done."""
    slot = st.empty()
    parts: dict = {}

    def on_wait(position: int, waited_s: float, message: str) -> None:
        if not parts:
            box = slot.container()
            parts["info"] = box.empty()
            if stop_key:
                box.button("Stop waiting", key=stop_key, icon=":material/stop:")
        parts["info"].info(message, icon=":material/hourglass_top:")

    return on_wait, slot.empty


def queued(action, stop_key: str | None = None):
    """``action(on_wait)`` with its place in any queue it waits in (the server's memorymodel, a
    benchmark's turn) shown while it waits; None, with the reason shown, when the wait ended
    without its turn (a timeout, or Stop), or when it could never fit the memory budget."""
    on_wait, clear = show(stop_key)
    try:
        return action(on_wait)
    except (queues.WaitTimeout, queues.Cancelled) as err:
        st.warning(str(err), icon=":material/hourglass_disabled:")
        return None
    except memorymodel.BudgetError as err:  # could never fit, counted from the compiled program
        st.error(str(err), icon=":material/memory:")
        return None
    except sandbox.Stopped as err:  # ran past the time limit
        st.error(str(err), icon=":material/timer_off:")
        return None
    except sandbox.WorkerFailed as err:  # one line of pmapviz's; the worker's words quoted in it
        st.error(str(err), icon=":material/error:")
        return None
    finally:
        clear()
