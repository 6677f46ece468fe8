"""pmapviz.core.running.processends: how a process ended, in words a person can act on."""

import signal

from pmapviz.core.running import processends


def test_how_a_process_ended_in_words():
    assert processends.ended_words(-signal.SIGKILL) == "was killed by SIGKILL"
    assert processends.ended_words(-signal.SIGSEGV) == "crashed with SIGSEGV (a segmentation fault)"
    assert processends.ended_words(-signal.SIGUSR1) == "was ended by SIGUSR1"
    assert processends.ended_words(3) == "exited with status 3"
    assert processends.signal_name(1) is None and processends.signal_name(-200) == "signal 200"
    assert processends.ran_out_of_memory("LLVM ERROR: pthread_create failed: Resource ...")
    assert not processends.ran_out_of_memory("ValueError: shapes (3,) and (4,) do not align")


def test_a_hang_says_the_limit_and_the_grace_it_was_given():
    words = processends.hung_words(1234, 10.0, 5.0)
    assert "(pid 1234)" in words and "after 15 s, the 10 s time limit" in words


def test_the_line_that_says_memory_ran_out_is_found_under_what_an_abort_prints_after_it():
    tail = (
        "LLVM ERROR: pthread_create failed: Resource temporarily unavailable\n"
        "Fatal Python error: Aborted\n\nThread 0x00007f (most recent call first):\n"
        '  File "/x/jax/_src/compiler.py", line 3 in backend_compile\n'
    )
    assert processends.memory_line(tail) == (
        "LLVM ERROR: pthread_create failed: Resource temporarily unavailable"
    )
    assert processends.memory_line("Fatal Python error: Segmentation fault\n") is None
