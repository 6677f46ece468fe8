"""Every platform sentence tells its own platform's story."""

import pytest

from pmapviz.core.devices import devicefacts, devicewords
from tests.conftest import TEST_DEVICES

STORIES = [
    lambda f: devicewords.summary(f),
    lambda f: devicewords.speed_story(f),
    lambda f: devicewords.speed_story(f, 1),
    lambda f: devicewords.speed_caveat(f, 4),
    lambda f: devicewords.step_time_story(f, 256),
    lambda f: devicewords.devices_note(f) or "",
    *(lambda f, k=k: devicewords.say(f, k, 8) for k in devicewords.WORDS if k != "restart beside"),
    lambda f: devicewords.devices_story(f, 8),
    lambda f: devicewords.scaling_story(f, 8),
    lambda f: "\n".join(devicewords.export_header(f, 8)),
]


CPU_WORDS = ("emulated", "share", "jax_num_cpu_devices", "no speed-up", "no gain")


@pytest.mark.parametrize("story", STORIES, ids=range(len(STORIES)))
def test_every_platform_sentence_tells_the_platform_its_own_story(story, fake_devices):
    """On CPU devices the sentences say what is emulated or shared; on GPUs or TPUs none of
    the CPU story remains, and they name the real devices."""
    cpu = story(devicefacts.facts())
    with fake_devices("gpu", cpu=False):  # one set: what is said of the set beside is apart
        gpu = story(devicefacts.facts())
    with fake_devices("tpu", cpu=False):
        tpu = story(devicefacts.facts())
    assert gpu != cpu and tpu != cpu
    for text in (gpu, tpu):
        assert not [w for w in CPU_WORDS if w in text], text


def test_exported_scripts_on_a_gpu_set_no_cpu_devices(fake_devices):
    with fake_devices("gpu"):
        about, setup = devicewords.export_header(devicefacts.facts(), 8)
    assert "NVIDIA H200" in about and "jax.config" not in setup
    assert setup.startswith("assert jax.device_count() >= 8")
    about, setup = devicewords.export_header(devicefacts.facts(), 8)
    assert "8 emulated CPU device(s)" in about and '"jax_num_cpu_devices", 8' in setup
    assert 'jax.config.update("jax_platforms", "cpu")' in setup  # CPU anywhere, beside a chip


def test_two_sets_are_told_apart_and_each_knows_the_other(fake_devices):
    """A one-chip TPU machine: the chip and 8 emulated CPU devices in one process."""
    with fake_devices("tpu", 1):
        tpu, cpu = devicefacts.every_set()
        assert (tpu.platform, tpu.local_count, cpu.platform, cpu.local_count) == (
            "tpu",
            1,
            "cpu",
            TEST_DEVICES,
        )
        assert tpu.beside and cpu.beside and tpu.sets == ("tpu", "cpu")
        assert devicewords.beside(tpu) == cpu and devicewords.beside(cpu) == tpu
        assert devicewords.sets_sentence(cpu) == (
            f"This page runs on **{TEST_DEVICES} emulated CPU devices**; the server also holds "
            "1 TPU v5 lite device (switch at the top of the page)."
        )
        assert "pick it at the top of the page to time the real device" in (
            devicewords.speed_story(cpu)
        )
        assert "Both device sets are **fixed" in devicewords.say(tpu, "restart")
        assert "beside the TPU" in devicewords.say(cpu, "restart")
        about, setup = devicewords.export_header(cpu, 8)
        assert "1 TPU v5 lite device" in about and '"jax_platforms", "cpu"' in setup
        assert "--device-set cpu --devices 8" in devicewords.more_devices(tpu, 8)
        assert tpu.exclusive and not cpu.exclusive
    assert devicefacts.facts().sets == ("cpu",) and devicewords.beside(devicefacts.facts()) is None
    assert devicewords.more_devices(devicefacts.facts(), 16) == "run it with --devices 16"
