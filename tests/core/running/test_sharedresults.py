"""The room's shared results: one computation for every caller of a key at once (threads),
keys told apart by their settings and devices, bounded in entries, bytes and age, and every
kept result's bytes held in a memory pool."""

import threading
import time

import numpy as np
import pytest

from pmapviz.core.base import queues
from pmapviz.core.running import sharedresults
from pmapviz.core.running.sharedresults import Key, SharedResults, nbytes_of


def _key(pairs=1000, devices="cpu:8", page="live"):
    return Key.of(page, {"pairs": pairs, "kind": "arange"}, devices)


def _slow(calls: list, value, gate: threading.Event | None = None):
    def compute():
        calls.append(threading.get_ident())
        if gate is not None:
            assert gate.wait(30)
        return value

    return compute


def test_concurrent_gets_of_one_key_run_the_computation_once_and_share_its_result():
    cache = SharedResults(hold=None, slice_s=0.01)
    calls, gate, got = [], threading.Event(), []
    result = {"rows": list(range(100))}
    threads = [
        threading.Thread(target=lambda: got.append(cache.get(_key(), _slow(calls, result, gate))))
        for _ in range(20)
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while not calls and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # the other nineteen are waiting on the one computation now
    gate.set()
    for t in threads:
        t.join(30)
    assert len(calls) == 1 and cache.computed == 1
    assert len(got) == 20 and all(entry.value is result for entry, _ in got)
    assert sorted(fresh for _, fresh in got) == [False] * 19 + [True]
    assert cache.served == 19
    again, fresh = cache.get(_key(), _slow(calls, "another"))
    assert again.value is result and not fresh and len(calls) == 1


def test_waiters_hear_whose_run_they_wait_for():
    cache = SharedResults(hold=None, slice_s=0.01)
    gate, heard = threading.Event(), []
    t = threading.Thread(target=lambda: cache.get(_key(), _slow([], 1, gate), by="the presenter"))
    t.start()
    while not cache.running(_key()):
        time.sleep(0.01)
    waiter = threading.Thread(
        target=lambda: heard.append(cache.join(_key(), lambda *a: heard.append(a)))
    )
    waiter.start()
    time.sleep(0.1)
    gate.set()
    t.join(10), waiter.join(10)
    messages = [a[2] for a in heard if isinstance(a, tuple)]
    assert messages and "the presenter started it" in messages[0]
    assert heard[-1].value == 1 and heard[-1].by == "the presenter"


def test_keys_differ_by_settings_and_device_set_and_each_computes_once():
    cache = SharedResults(hold=None)
    calls = []
    keys = [_key(1000), _key(2000), _key(1000, "cpu:4"), _key(1000, "tpu:4"), _key(page="x")]
    assert len(set(keys)) == len(keys)
    assert Key.of("live", {"b": 2, "a": 1}, "cpu:8") == Key.of(
        "live", {"a": "1", "b": "2"}, "cpu:8"
    )
    for k, key in enumerate(keys):
        assert cache.get(key, _slow(calls, k))[0].value == k
    assert len(calls) == len(keys) and cache.peek(_key(1000, "cpu:4")).value == 2
    assert cache.peek(_key(3000)) is None and cache.join(_key(3000)) is None  # never computes


def test_entries_are_bounded_oldest_use_first():
    cache = SharedResults(max_entries=2, hold=None)
    for pairs in (1, 2):
        cache.get(_key(pairs), lambda p=pairs: p)
    assert cache.peek(_key(1)).value == 1  # used: now the newest
    cache.get(_key(3), lambda: 3)
    assert len(cache) == 2 and cache.peek(_key(2)) is None
    assert cache.peek(_key(1)) is not None and cache.peek(_key(3)) is not None


def test_bytes_are_bounded_and_a_result_too_large_is_handed_over_but_not_kept():
    small, large = np.zeros(10_000, np.uint8), np.zeros(60_000, np.uint8)
    cache = SharedResults(max_bytes=nbytes_of(large) + nbytes_of(small) // 2, hold=None)
    cache.get(_key(1), lambda: small)
    cache.get(_key(2), lambda: small.copy())
    assert len(cache) == 2
    cache.get(_key(3), lambda: large)  # the two small ones leave to make room
    assert len(cache) == 1 and cache.held_bytes() <= cache.max_bytes
    entry, fresh = cache.get(_key(4), lambda: np.zeros(200_000, np.uint8))
    assert fresh and entry.value.nbytes == 200_000 and cache.peek(_key(4)) is None


def test_kept_results_hold_their_bytes_in_the_memory_pool_and_give_them_back():
    pool = queues.Pool("memory", (1_000_000,))
    held = []

    def hold(n):
        try:
            grant = pool.acquire((n,), sharedresults.HOLD_LABEL, timeout=0)
        except queues.WaitTimeout:
            return None
        held.append(grant)
        return grant

    cache = SharedResults(hold=hold)
    entry, _ = cache.get(_key(1), lambda: np.zeros(100_000, np.uint8))
    assert pool.free() == (1_000_000 - entry.nbytes,) and entry.nbytes > 100_000
    assert [label for label, _, _ in pool.held()] == [sharedresults.HOLD_LABEL]
    other = pool.acquire((pool.free()[0] - 1000,), "a live run", timeout=0)  # the pool is full
    entry, _ = cache.get(_key(2), lambda: np.zeros(100_000, np.uint8))
    assert cache.peek(_key(2)) is None and entry.value.nbytes == 100_000  # handed, not kept
    other.release()
    cache.clear()
    assert pool.free() == (1_000_000,) and len(cache) == 0


def test_a_result_older_than_its_age_is_computed_again():
    now = [1000.0]
    cache = SharedResults(max_age_s=60, hold=None, clock=lambda: now[0])
    cache.get(_key(), lambda: "first")
    now[0] += 61
    assert cache.peek(_key()) is None
    entry, fresh = cache.get(_key(), lambda: "second")
    assert fresh and entry.value == "second" and entry.finished == now[0]


def test_an_error_reaches_every_waiter_and_is_not_kept():
    cache = SharedResults(hold=None, slice_s=0.01)
    gate, errors = threading.Event(), []

    def fails():
        assert gate.wait(10)
        raise ValueError("bad settings")

    def call():
        try:
            cache.get(_key(), fails)
        except ValueError as err:
            errors.append(str(err))

    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.1)
    gate.set()
    for t in threads:
        t.join(10)
    assert errors == ["bad settings"] * 3 and len(cache) == 0
    assert cache.get(_key(), lambda: "fixed")[0].value == "fixed"


class _Rerun(BaseException):
    """As Streamlit's RerunException: the caller's page moved on."""


def test_a_computation_its_caller_abandons_is_taken_over_by_a_waiter():
    cache = SharedResults(hold=None, slice_s=0.01)
    gate, got, calls = threading.Event(), [], []

    def abandoned():
        calls.append("first")
        assert gate.wait(10)
        raise _Rerun()

    def first():
        with pytest.raises(_Rerun):
            cache.get(_key(), abandoned)

    t = threading.Thread(target=first)
    t.start()
    while not cache.running(_key()):
        time.sleep(0.01)
    waiter = threading.Thread(target=lambda: got.append(cache.get(_key(), _slow(calls, 7))))
    waiter.start()
    time.sleep(0.1)
    gate.set()
    t.join(10), waiter.join(10)
    assert calls[0] == "first" and len(calls) == 2 and got[0] == (cache.peek(_key()), True)


def test_nbytes_of_counts_what_a_result_reaches_once():
    rows = [{"device": f"cpu:{k}", "block": "x" * 100} for k in range(8)]
    one = nbytes_of(rows)
    assert one > 8 * 100 and nbytes_of([rows, rows]) < 2 * one  # shared objects once
    arr = np.zeros(1_000_000, np.float32)
    assert 4_000_000 <= nbytes_of({"a": arr}) < 4_100_000
    assert nbytes_of(arr[:10]) >= 40  # a view: its own bytes


def test_the_process_has_one_shared_results():
    assert sharedresults.shared() is sharedresults.shared()
    assert sharedresults.shared().max_entries == sharedresults.MAX_ENTRIES
