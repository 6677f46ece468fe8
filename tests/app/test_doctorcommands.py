"""The doctor's checks that start the project's entry points: every CLI command (in a fresh
process), its flags, and the repository it checks."""

from pmapviz.app import doctorcommands
from pmapviz.core.devices import jaxstartup


def test_commands_cover_every_cli_command():
    from pmapviz.app import cli

    settings = jaxstartup.applied_settings()
    names = {c[0] for c in doctorcommands.command_lines(settings, "/tmp/trace")}
    assert names == set(cli.COMMANDS) - set(doctorcommands.NOT_RUN)
    assert set(doctorcommands.NOT_RUN) <= set(cli.COMMANDS)
    flags = doctorcommands.device_flags(
        jaxstartup.Settings(devices=4, platform="cpu", devices_source="flag", max_bytes=2**30)
    )
    assert flags == ["--devices", "4", "--platform", "cpu", "--max-bytes", str(2**30)]
    assert (
        doctorcommands.device_flags(jaxstartup.Settings()) == []
    )  # from the environment, as given


def test_a_command_this_machine_forbids_is_skipped_with_its_own_words(monkeypatch):
    """The cluster command exits 3 where no socket may open (cluster.NoSockets): the doctor
    reads that exit and the command's own line, rather than deciding the rule itself."""
    from pmapviz.core.devices import jaxstartup
    from pmapviz.features.cluster import cluster

    said = "pmapviz: No local cluster here: this machine lets no process open a network socket"

    def fake_run(argv):
        if argv[0] == "cluster":
            return cluster.EXIT_NO_SOCKETS, "", said + "\n"
        return 0, "", ""

    monkeypatch.setattr(doctorcommands, "in_subprocess", fake_run)
    rows = doctorcommands.commands_section(jaxstartup.parse_settings(["--devices", "4"], {}))
    by = {r["command"]: r for r in rows}
    assert by["cluster"]["skipped"].startswith("No local cluster here")
    assert by["cluster"]["rc"] == 0 and all(r["rc"] == 0 for r in rows)
    monkeypatch.setattr(doctorcommands, "in_subprocess", lambda argv: (1, "", "pmapviz: broke\n"))
    assert all(
        "skipped" not in r
        for r in doctorcommands.commands_section(jaxstartup.parse_settings(["--devices", "4"], {}))
    )


def test_the_doctor_finds_the_repository_it_checks():
    """Its ROOT is the folder holding app.py and the package (it moved a package down once)."""
    assert (doctorcommands.ROOT / "app.py").is_file()
    assert (doctorcommands.ROOT / "pages").is_dir() and (doctorcommands.ROOT / "pmapviz").is_dir()
