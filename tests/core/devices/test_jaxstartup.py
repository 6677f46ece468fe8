"""Device set-up: argument and environment parsing, XLA flag merging, messages, reports."""

import shlex

import pytest

from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.devices import jaxstartup, startcommands
from pmapviz.core.devices.jaxstartup import parse_settings


def test_defaults_to_eight_emulated_devices():
    s = parse_settings([], {})
    assert (s.devices, s.platform, s.devices_source) == (8, "auto", "default")


@pytest.mark.parametrize("argv", [["--devices", "4"], ["--devices=4"], ["--devices", " 4 "]])
def test_devices_flag(argv):
    s = parse_settings(argv, {})
    assert (s.devices, s.devices_source) == (4, "flag")


def test_env_used_when_no_flag_and_flag_wins_over_env():
    assert parse_settings([], {"PMAPVIZ_DEVICES": "2"}).devices == 2
    assert parse_settings([], {"PMAPVIZ_DEVICES": "2"}).devices_source == "env"
    assert parse_settings(["--devices", "6"], {"PMAPVIZ_DEVICES": "2"}).devices == 6
    assert parse_settings([], {"PMAPVIZ_DEVICES": "  "}).devices == jaxstartup.DEFAULT_DEVICES


@pytest.mark.parametrize(
    "value, expected_words",
    [
        ("0", ["0 devices", "at least 1"]),
        ("-3", ["-3 devices", "at least 1"]),
        ("eight", ["'eight'", "not a whole number"]),
        ("1e9", ["'1e9'", "not a whole number"]),
        ("8.0", ["'8.0'", "not a whole number"]),
        ("100000", ["100,000", f"at most {jaxstartup.MAX_DEVICES}"]),
        ("", ["not a whole number"]),
    ],
)
def test_bad_device_counts_explain_bounds(value, expected_words):
    with pytest.raises(SettingError) as err:
        parse_settings(["--devices", value], {})
    msg = str(err.value)
    for w in expected_words:
        assert w in msg
    assert f"from {jaxstartup.MIN_DEVICES} to {jaxstartup.MAX_DEVICES}" in msg


def test_bad_env_value_names_the_variable():
    with pytest.raises(SettingError, match="PMAPVIZ_DEVICES= 'lots'"):
        parse_settings([], {"PMAPVIZ_DEVICES": "lots"})


def test_bounds_are_accepted():
    assert parse_settings(["--devices", "1"], {}).devices == 1
    assert (
        parse_settings(["--devices", str(jaxstartup.MAX_DEVICES)], {}).devices
        == jaxstartup.MAX_DEVICES
    )


@pytest.mark.parametrize("platform", ["cpu", "CPU", "gpu", "tpu", "auto"])
def test_known_platforms(platform):
    assert parse_settings(["--platform", platform], {}).platform == platform.lower()


def test_unknown_platform_lists_choices():
    with pytest.raises(SettingError) as err:
        parse_settings(["--platform", "quantum"], {})
    assert "'quantum'" in str(err.value)
    for p in jaxstartup.PLATFORMS:
        assert p in str(err.value)
    assert parse_settings([], {"PMAPVIZ_PLATFORM": "cpu"}).platform == "cpu"


def test_unknown_option_and_missing_value():
    with pytest.raises(SettingError, match="Unknown option '--gpus'"):
        parse_settings(["--gpus", "2"], {})
    with pytest.raises(SettingError, match="--devices needs a value"):
        parse_settings(["--devices"], {})


def test_merge_xla_flags_keeps_user_flags_and_replaces_count():
    merged = merge = jaxstartup.merge_xla_flags(
        "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=2 --foo=1", 8
    )
    parts = shlex.split(merge)
    assert parts == [
        "--xla_cpu_enable_fast_math=false",
        "--foo=1",
        "--xla_force_host_platform_device_count=8",
    ]
    assert merged.count("device_count") == 1
    assert jaxstartup.merge_xla_flags(None, 3) == "--xla_force_host_platform_device_count=3"
    assert jaxstartup.merge_xla_flags("", 3) == "--xla_force_host_platform_device_count=3"


def test_environment_for_sets_jax_variables_without_touching_input():
    env = {"XLA_FLAGS": "--foo=1"}
    changes = jaxstartup.environment_for(jaxstartup.Settings(devices=4, platform="cpu"), env)
    assert changes["JAX_NUM_CPU_DEVICES"] == "4"
    assert changes["JAX_PLATFORMS"] == "cpu"
    assert changes["XLA_FLAGS"] == "--foo=1 --xla_force_host_platform_device_count=4"
    assert env == {"XLA_FLAGS": "--foo=1"}


def test_auto_starts_the_cpu_alone_where_the_machine_has_no_chip(monkeypatch):
    """With libtpu installed (the pods extra) and no chip, JAX would try the TPU plugin first:
    seconds and libtpu's warnings. auto then means cpu; a chip, or the user's own
    JAX_PLATFORMS, leaves JAX to choose."""
    auto = jaxstartup.Settings(devices=4)
    monkeypatch.setattr(jaxstartup.accelerators, "accelerators_present", lambda: [])
    changes = jaxstartup.environment_for(auto, {})
    assert changes["JAX_PLATFORMS"] == "cpu"
    assert changes["TPU_SKIP_MDS_QUERY"] == "1"
    assert "JAX_PLATFORMS" not in jaxstartup.environment_for(auto, {"JAX_PLATFORMS": "cuda"})
    monkeypatch.setattr(jaxstartup.accelerators, "accelerators_present", lambda: ["tpu"])
    on_tpu = jaxstartup.environment_for(auto, {})
    assert "JAX_PLATFORMS" not in on_tpu and "TPU_SKIP_MDS_QUERY" not in on_tpu
    monkeypatch.setattr(jaxstartup.accelerators, "accelerators_present", lambda: ["gpu"])
    assert "JAX_PLATFORMS" not in jaxstartup.environment_for(auto, {})


def test_describe_reports_real_jax_devices():
    import jax

    from tests.conftest import TEST_DEVICES

    # the settings tests/conftest.py applied (AppTest runs of app.py apply their own since)
    asked = jaxstartup.Settings(devices=TEST_DEVICES, platform="cpu", devices_source="env")
    report = jaxstartup.describe(asked)
    assert report.count == TEST_DEVICES == len(jax.devices())
    assert [d.id for d in report.devices] == [d.id for d in jax.devices()]
    assert [d.label for d in report.devices] == [str(d) for d in jax.devices()]
    assert report.platform == "cpu" and report.jax_version == jax.__version__
    assert report.matches_request and report.notes == ()
    assert report.physical_cores >= 1 and report.logical_cpus >= report.physical_cores
    # this server's start command (AppTest runs of app.py in this worker say theirs) and then
    # its options, with another count
    command = report.restart_command(2)
    assert command.startswith(startcommands._launcher[0] + " --devices 2")
    assert command.endswith(" --devices 2 --platform cpu")


def test_mismatch_is_reported_not_hidden():
    """JAX is already up with TEST_DEVICES devices: asking for another count must say so."""
    from tests.conftest import TEST_DEVICES

    original = jaxstartup.applied_settings()
    try:
        notes = jaxstartup.apply(
            jaxstartup.Settings(devices=3, platform="cpu", devices_source="flag")
        )
        asked = "Asked for 3 emulated CPU devices"
        assert any(asked in n and f"with {TEST_DEVICES}" in n for n in notes)
        report = jaxstartup.describe(jaxstartup.applied_settings())
        assert not report.matches_request and report.count == TEST_DEVICES
    finally:
        jaxstartup.apply(original)
    assert jaxstartup.describe(jaxstartup.applied_settings()).matches_request


def test_physical_cores_is_positive_and_at_most_logical():
    import os

    assert 1 <= jaxstartup.physical_cores() <= (os.cpu_count() or 1)


@pytest.mark.parametrize(
    "text, value",
    [
        ("2G", 2 * 2**30),
        ("512MiB", 512 * 2**20),
        ("1500000000", 1_500_000_000),
        ("4 GB", 4 * 10**9),
    ],
)
def test_max_bytes_parses_units(text, value):
    assert parse_settings(["--max-bytes", text], {}).max_bytes == value
    assert parse_settings([], {"PMAPVIZ_MAX_BYTES": text}).max_bytes == value


@pytest.mark.parametrize(
    "text, words",
    [
        ("lots", "not a size"),
        ("1K", "smallest useful"),
        ("-5G", "not a size"),
        ("1e309", "not a size"),
    ],
)
def test_bad_max_bytes(text, words):
    with pytest.raises(SettingError, match=words):
        parse_settings(["--max-bytes", text], {})


def test_budget_follows_the_setting_and_restart_command_keeps_it():
    from pmapviz.core.budgets import memorypool
    from pmapviz.core.devices import jaxstartup

    original, launcher = jaxstartup.applied_settings(), startcommands._launcher[0]
    try:
        s = jaxstartup.Settings(
            devices=original.devices, platform="cpu", max_bytes=2**30, max_device_bytes=2**31
        )
        jaxstartup.apply(s)
        budget = memorypool.budget()
        assert budget.host == 2**30 and budget.device is None  # CPU devices use host memory
        report = jaxstartup.describe(s)
        assert report.restart_command(4).endswith("--max-bytes 1G --max-device-bytes 2G")
        startcommands.launched_with(".venv/bin/streamlit run app.py --")
        assert report.restart_command(4, "cpu").startswith(
            ".venv/bin/streamlit run app.py -- --devices 4 --platform cpu"
        )
    finally:
        jaxstartup.apply(original)
        startcommands.launched_with(launcher)
    assert memorypool.budget().host != 2**30


@pytest.mark.parametrize("text, value", [("16G", 16 * 2**30), ("512MiB", 512 * 2**20)])
def test_max_device_bytes_flag_and_env(text, value):
    assert parse_settings(["--max-device-bytes", text], {}).max_device_bytes == value
    assert parse_settings([], {"PMAPVIZ_MAX_DEVICE_BYTES": text}).max_device_bytes == value
    assert parse_settings([], {}).max_device_bytes is None
    with pytest.raises(SettingError, match="--max-device-bytes"):
        parse_settings(["--max-device-bytes", "lots"], {})


@pytest.mark.parametrize("text, value", [("60", 60), ("1", 1), ("3600", 3600), (" 90 ", 90)])
def test_max_seconds_flag_and_env(text, value):
    assert parse_settings(["--max-seconds", text], {}).max_seconds == value
    assert parse_settings([f"--max-seconds={text}"], {}).max_seconds == value
    assert parse_settings([], {"PMAPVIZ_MAX_SECONDS": text}).max_seconds == value
    assert parse_settings(["--max-seconds", "5"], {"PMAPVIZ_MAX_SECONDS": text}).max_seconds == 5
    assert parse_settings([], {}).max_seconds is None


@pytest.mark.parametrize(
    "text, words",
    [
        ("0", "out of range"),
        ("3601", "out of range"),
        ("-5", "not a whole number"),
        ("1.5", "not a whole number"),
        ("\u00b2", "not a whole number"),
        ("\u0661\u0662", "not a whole number"),
        ("inf", "not a whole number"),
        ("", "not a whole"),
    ],
)
def test_bad_max_seconds(text, words):
    with pytest.raises(SettingError, match=words):
        parse_settings(["--max-seconds", text], {})
    if text.strip():
        with pytest.raises(SettingError, match="PMAPVIZ_MAX_SECONDS"):
            parse_settings([], {"PMAPVIZ_MAX_SECONDS": text})


def test_time_limit_follows_the_setting():
    original = jaxstartup.applied_settings()
    assert jaxstartup.time_limit() == (original.max_seconds or jaxstartup.DEFAULT_MAX_SECONDS)
    try:
        s = jaxstartup.Settings(devices=original.devices, platform="cpu", max_seconds=7)
        jaxstartup.apply(s)
        assert jaxstartup.time_limit() == 7
        assert jaxstartup.describe(s).restart_command(4).endswith("--max-seconds 7")
    finally:
        jaxstartup.apply(original)


def test_reports_folder_flag_and_env(tmp_path):
    folder = str(tmp_path.resolve())
    assert parse_settings(["--reports", folder], {}).reports == folder
    assert parse_settings([f"--reports={tmp_path}/."], {}).reports == folder
    assert parse_settings([], {"PMAPVIZ_REPORTS": folder}).reports == folder
    assert parse_settings([], {}).reports is None
    with pytest.raises(SettingError, match="PMAPVIZ_REPORTS= .* is not an existing folder"):
        parse_settings([], {"PMAPVIZ_REPORTS": str(tmp_path / "missing")})
    with pytest.raises(SettingError, match="--reports .* is not an existing folder"):
        parse_settings(["--reports", str(tmp_path / "missing")], {})
