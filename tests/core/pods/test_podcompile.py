"""pmapviz's figures for a pod equal those of a plain script that calls ``get_topology_desc`` and
``compile()`` itself (tests/core/pods/pod_oracle.py, which imports nothing of pmapviz): the seed's
10M dot, the training step, a psum and your own f on a 2-D mesh, on v5e 2x4 (one host), 16x16
(64 hosts) and v4 2x2x2 (3-D); the engine (what the pages show) for every program, the CLI for
every program on one slice or another. ``benchmarks/pod_compile.py`` compares them on any slice
(v5e:4x4 too) and prints each side's compile seconds."""

import json
import os
import subprocess
import sys

import pytest

from pmapviz.core.drawing import podfigure
from pmapviz.core.pods import podcompile, podprograms, podtopology
from pmapviz.core.pods.podreport import GIB
from pmapviz.features.meshes import meshpods, meshspecs
from tests.conftest import ROOT

SLICES = ("v5e:2x4", "v5e:16x16", "v4:2x2x2")
# 16x16 on every run (and the 256-chip pool check below); the other two are long walks
# (tests/rotation.py), a part a run
ROTATES = {"v5e:2x4": 22, "v4:2x2x2": 19}
PROGRAMS = ("dot", "train", "psum", "f")
# the CLI's programs on each slice, each in a process of its own: every program once
CLI_PROGRAMS = {"v5e:2x4": ("dot", "train"), "v5e:16x16": ("psum",), "v4:2x2x2": ("f",)}
FIGURES = ("argument_bytes", "output_bytes", "temp_bytes", "alias_bytes", "code_bytes", "flops")
ENV = {**os.environ, "JAX_PLATFORMS": "cpu", "TPU_SKIP_MDS_QUERY": "1"}
ENV["ALLOW_MULTIPLE_LIBTPU_LOAD"] = "1"  # beside this process's libtpu (no chip to guard)
F_ARGS = ["--f", "jnp.tanh(x @ w)", "--shape", "256,512", "--spec", "data,None"]
F_ARGS += ["--shape", "512,1024", "--spec", "None,model"]


def own_f(n: int):
    """The oracle's f: tanh(x @ w) on a data=2 x model=n/2 mesh."""
    mesh = meshspecs.Mesh((2, n // 2), ("data", "model"))
    specs = [("data", None), (None, "model")]
    return meshpods.pod_program(mesh, [(256, 512), (512, 1024)], specs, "x, w", "jnp.tanh(x @ w)")


def engine(name: str, topology: str, n: int):
    program = own_f(n) if name == "f" else podprograms.BUILTIN[name]()
    return podcompile.compile_for(program, topology).to_dict()


DEVICES = {"v5e:2x4": 8, "v5e:4x4": 16, "v5e:16x16": 256, "v4:2x2x2": 16}  # the oracle checks


def started(argv: list[str]) -> subprocess.Popen:
    """A process started now, read later: the oracle and the CLI compile beside this one."""
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT
    )


def finished(proc: subprocess.Popen, quiet: bool = False) -> dict:
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-2000:]
    assert not quiet or err.strip() == "", f"the pod command printed on stderr: {err[:500]}"
    return json.loads(out)


def oracle(topology: str) -> subprocess.Popen:
    script = str(ROOT / "tests/core/pods/pod_oracle.py")
    return started([sys.executable, script, topology, *PROGRAMS])


def cli(name: str, topology: str) -> subprocess.Popen:
    n = DEVICES[topology]
    extra = ["--mesh", f"2x{n // 2}", *F_ARGS] if name == "f" else []
    argv = [sys.executable, "-m", "pmapviz", "pod", "--topology", topology, "--program", name]
    return started([*argv, *extra, "--json"])


def same(ours: dict, theirs: dict, where: str) -> None:
    for key in FIGURES:
        assert ours[key] == theirs[key], f"{where}: {key} {ours[key]} != {theirs[key]}"
    assert ours["bytes_accessed"] == theirs["bytes_accessed"], where
    optimal = theirs["optimal_s"] if theirs["optimal_s"] >= 0 else None
    assert ours["optimal_s"] == optimal, where
    mine = sorted(
        (c["kind"], [list(g) for g in c["groups"]], c["network"]) for c in ours["collectives"]
    )
    want = sorted((c["kind"], c["groups"], c["network"]) for c in theirs["collectives"])
    assert mine == want, f"{where}: collectives {mine} != {want}"


@pytest.mark.parametrize(
    "topology",
    [
        pytest.param(s, marks=[pytest.mark.rotates(cpu_s=ROTATES[s])] if s in ROTATES else [])
        for s in SLICES
    ],
)
def test_the_engine_and_the_cli_match_a_plain_compile(topology):
    plain = oracle(topology)
    commands = {name: cli(name, topology) for name in CLI_PROGRAMS[topology]}
    ours = {p: engine(p, topology, DEVICES[topology]) for p in PROGRAMS}  # while they compile
    theirs = finished(plain)
    assert theirs["n_devices"] == DEVICES[topology]
    for p in PROGRAMS:
        assert ours[p]["n_devices"] == theirs["n_devices"]
        assert ours[p]["n_hosts"] == theirs["hosts"]
        same(ours[p], theirs[p], f"{p} on {topology}")
    for name, command in commands.items():
        where = f"pmapviz pod --program {name} on {topology}"
        same(finished(command, quiet=True), theirs[name], where)
    # the all-reduce's algorithm, as the compiler's backend_config names it
    assert all(
        c["algorithm"].startswith("RotatedPincerEmitter") for c in ours["psum"]["collectives"]
    )


def test_the_compilers_algorithm_is_read_from_the_backend_config():
    line = (
        '%all-reduce = f32[8]{0} all-reduce(%p), replica_groups={{0,1}}, backend_config={"flag_'
        'configs":[],"collective_algorithm_config":{"emitter":"RotatedPincerEmitter","strategy":'
        '"UniDirection1DRingStrategy","debug":"x"}}'
    )
    assert podcompile.algorithm(line) == "RotatedPincerEmitter, UniDirection1DRingStrategy"
    assert podcompile.algorithm(line.replace(',"strategy":"UniDirection1DRingStrategy"', "")) == (
        "RotatedPincerEmitter"
    )
    assert podcompile.algorithm("%all-reduce = f32[8]{0} all-reduce(%p)") == ""


PROBE = """
import json, os
from pmapviz.core.devices import jaxstartup
jaxstartup.apply(jaxstartup.parse_settings(["--devices", "2"], os.environ))
from pmapviz.core.pods import podcompile, podprograms, podtopology
from pmapviz.features.meshes import meshpods, meshspecs

def status(key):
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith(key))

before = status("VmRSS:")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
pod = podtopology.load("v5e:16x16")  # libtpu's load counted too
mesh = meshspecs.Mesh((16, 16), ("data", "model"))
f = meshpods.pod_program(mesh, [(4096, 4096), (4096, 4096)], [("data", None), (None, "model")],
                         "x, w", "jnp.tanh(x @ w)")
for program in (f, podprograms.train()):
    podcompile.compile_once(program, pod)
print(json.dumps({"grew": status("VmHWM:") - before, "held": podcompile.COMPILE_BYTES}))
"""


def test_a_256_chip_compile_stays_inside_what_the_pool_holds_for_it():
    """Your f on a 16x16 mesh and the training step, compiled for 256 chips in a fresh process
    (libtpu's load and its compiler's start included): the peak growth stays below
    COMPILE_BYTES, the host memory each compile holds in the server's pool."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=ROOT,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert 0 < got["grew"] < got["held"], got


TYPED_STEP = "w - 0.1 * jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)"


@pytest.mark.parametrize(
    "slices", [1, pytest.param(2, marks=[pytest.mark.rotates(cpu_s=8)])], ids=["one", "two"]
)
def test_a_typed_training_step_compiles_through_f_as_a_plain_script_compiles_it(slices):
    """Issue 66: ``--f`` refused jax.grad ("`grad` is not an allowed jax function"), so a
    planner compiled only the built-in step; and refused several slices. The step typed with
    jax.grad of a lambda compiles for v5e:4x4 and 2 x v5e:4x4 (one slice's mesh, 'dcn' added
    outermost, x's rows over ('dcn', 'chips')) as the oracle's plain jit of the same step:
    memory, FLOPs, every collective's kind, groups and network."""
    oracle_script = str(ROOT / "tests/core/pods/pod_oracle.py")
    more = ["--slices", str(slices)] if slices > 1 else []
    plain = started([sys.executable, oracle_script, "v5e:4x4", *more, "typed_step"])
    target = "v5e:4x4" if slices == 1 else f"{slices} x v5e:4x4"
    rows = 64 * 16 * slices
    argv = [sys.executable, "-m", "pmapviz", "pod", "--topology", target, "--program", "f"]
    argv += ["--f", TYPED_STEP, "--mesh", "16", "--axis-names", "chips"]
    argv += ["--shape", f"{rows},512", "--spec", "chips,None", "--shape", "512,512", "--spec"]
    ours, theirs = finished(started([*argv, "None", "--json"]), quiet=True), finished(plain)
    assert (ours["n_devices"], ours["slices"]) == (theirs["n_devices"], slices)
    same(ours, theirs["typed_step"], f"the typed step through --f on {target}")
    kinds = [(c["kind"], c["network"]) for c in ours["collectives"]]
    if slices == 1:
        assert kinds == [("all-reduce", "ICI")]  # the gradient's
        return
    # the gradient's all-reduce across slices, in its three phases: inside, between, inside
    assert ("send", "DCN") in kinds and ("recv", "DCN") in kinds, kinds
    assert {n for k, n in kinds if k not in ("send", "recv")} == {"ICI"}, kinds
    (note,) = ours["notes"]
    assert f"('dcn', 'chips') = {slices} x 16" in note, note  # the mesh compiled, named


# Multislice (issue 66): 2 x v5e:2x4 on every run; 2 x v5e:4x4 and 4 x v5e:2x4 as long walks
SLICED = {("v5e:2x4", 2): None, ("v5e:4x4", 2): 8, ("v5e:2x4", 4): 7}
SLICED_P = ("train", "psum")


@pytest.mark.parametrize(
    ("one", "slices"),
    [
        pytest.param(*key, marks=[pytest.mark.rotates(cpu_s=cost)] if cost else [])
        for key, cost in SLICED.items()
    ],
)
def test_several_slices_match_a_plain_compile_with_each_collectives_network(one, slices):
    """The train step and the psum on ``slices`` x ``one``: memory, FLOPs, every collective's
    kind, groups (device ids of every slice) and network (ICI inside a slice, DCN for the
    megascale send/recv) equal the oracle's plain jit over a ("dcn", "chips") mesh; the CLI's
    train step too, with nothing on stderr."""
    target = f"{slices} x {one}"
    script = str(ROOT / "tests/core/pods/pod_oracle.py")
    plain = started([sys.executable, script, one, "--slices", str(slices), "train", "psum"])
    argv = [sys.executable, "-m", "pmapviz", "pod", "--topology", target, "--program", "train"]
    command = started([*argv, "--json"])
    ours = {
        p: podcompile.compile_for(podprograms.BUILTIN[p](), target, multislice=True).to_dict()
        for p in SLICED_P
    }
    theirs = finished(plain)
    assert theirs["slices"] == slices
    for p in SLICED_P:
        where = f"{p} on {target}"
        assert (ours[p]["n_devices"], ours[p]["n_hosts"], ours[p]["slices"]) == (
            theirs["n_devices"],
            theirs["hosts"],
            slices,
        ), where
        same(ours[p], theirs[p], where)
        networks = {c["network"] for c in ours[p]["collectives"]}
        assert networks == {"ICI", "DCN"}, where  # both networks, read from the program
        # the all-reduce across slices in its phases: inside, between, inside
        (phase,) = ours[p]["phases"]
        by_name = {c["name"]: c for c in ours[p]["collectives"]}
        kinds = [(by_name[n]["kind"], by_name[n]["network"]) for n in phase]
        assert kinds[1:3] == [("send", "DCN"), ("recv", "DCN")] and kinds[-1][1] == "ICI", kinds
        send = by_name[phase[1]]
        assert ours[p]["network_bytes"]["DCN"] == 2 * (slices - 1) / slices * send["bytes"]
        assert ours[p]["dcn_s"] > 0 and ours[p]["step_s"] > ours[p]["dcn_s"]
    same(finished(command, quiet=True), theirs["train"], f"pmapviz pod --topology {target!r}")


# The Compiled and Training pages' pmaps on several slices (issue 66), 2 and 4 x v5e:2x4
PMAPPED = ("psum", "ppermute", "all_to_all")


@pytest.mark.parametrize(("one", "slices"), [("v5e:2x4", 2), ("v5e:2x4", 4)])
def test_a_pmap_over_several_slices_matches_a_plain_pmap_and_its_mesh_twin(one, slices):
    """A page's jax.pmap (a collective of the Compiled page, the Training page's step) over
    every device of ``slices`` x ``one``: memory, FLOPs and every collective's kind, groups and
    network equal the oracle's plain pmap over the same devices; the oracle's twin of each
    collective on a ('dcn', 'i') mesh, over ('dcn', 'i'), compiles to the same collectives (what
    the page's note says); a ppermute's ring crosses slices at two pairs, by the DCN runtime."""
    from pmapviz.features.collectives.collectiveanalysis import collective_target
    from pmapviz.features.training import traininganalysis, trainingmodel

    n, target = 8 * slices, f"{slices} x {one}"
    script = str(ROOT / "tests/core/pods/pod_oracle.py")
    names = [*PMAPPED, *(f"mesh_{c}" for c in PMAPPED), "step"]
    plain = started([sys.executable, script, one, "--slices", str(slices), "--pmap", *names])
    programs = {c: collective_target(c, n, 1024) for c in PMAPPED}
    programs["step"] = traininganalysis.training_target(trainingmodel.Config("linear", n, 32 * n))
    ours = {
        name: podcompile.compile_for(
            podprograms.from_target(t, f"oracle:{name}:{n}"), target, multislice=True
        ).to_dict()
        for name, t in programs.items()
    }
    theirs = finished(plain)
    for name in programs:
        same(ours[name], theirs[name], f"pmap {name} on {target}")
        assert {c["network"] for c in ours[name]["collectives"]} >= {"DCN"}, name
    for c in PMAPPED:
        twin = theirs[f"mesh_{c}"]
        assert sorted(map(str, twin["collectives"])) == sorted(
            map(str, theirs[c]["collectives"])
        ), c
        assert twin["temp_bytes"] == theirs[c]["temp_bytes"], c
    crossing = [c for c in ours["ppermute"]["collectives"] if c["network"] == "DCN"]
    assert {len(c["groups"]) for c in crossing} == {slices}  # slice s's last -> slice s+1's first
    (note,) = ours["psum"]["notes"]
    assert f"('dcn', 'i') = {slices} x 8" in note and f"all {n} devices" in note, note
    assert "slice 0's 8 (positions 0-7) then slice 1's 8 (positions 8-15)" in note, note


# ------------------------------------------------------------- the fit check at the compiler's edge
SMALLEST = {"v5e": "v5e:2x2", "v4": "v4:2x2x1", "v5p": "v5p:2x2x1", "v6e": "v6e:2x2"}
EDGE_STEPS = (-400, -100, -30, -10, 0, 10)  # batch steps from where the peak meets the allowance


def at_the_edge(generation: str) -> list[bool]:
    """Six batches of the seed's dot around the HBM limit, each compiled: where the compiler
    accepts, the fit check says it fits; where it refuses (in either of its wordings), the fit
    check says it does not, with the allowance in tpuchips.COMPILER_HBM. The edge is found from
    two compiles far below it (memory is linear in the batch), never written in."""
    pod = podtopology.load(SMALLEST[generation])
    allowed = pod.topology.generation.compiler_hbm
    program = podprograms.dot()
    step = program.batch_step(pod) * 2048  # about 72 KiB of the dot's peak
    first = podcompile.compile_once(program.at_batch(step * 1024), pod)
    per_row = first.peak_bytes / first.batch  # a first guess; the line is drawn nearer the edge
    low, high = (
        podcompile.compile_once(program.at_batch(int(allowed.allowed_bytes * f / per_row)), pod)
        for f in (0.5, 0.9)
    )
    slope = (high.peak_bytes - low.peak_bytes) / (high.batch - low.batch)
    edge = int(low.batch + (allowed.allowed_bytes - low.peak_bytes) / slope) // step * step
    verdicts = []
    for k in EDGE_STEPS:
        try:
            r = podcompile.compile_once(program.at_batch(edge + k * step), pod)
        except podcompile.DoesNotFit as err:  # the compiler refused: so does the fit check
            assert err.allowed == round(allowed.stated_gib * GIB) and err.need >= err.allowed
            assert f"{allowed.stated_gib:.2f} GiB" in err.words
            verdicts.append(False)
        else:  # the compiler accepted: the fit check too, against the compiler's allowance
            assert r.fits and r.hbm_bytes == allowed.allowed_bytes, (generation, k, r.peak_bytes)
            assert r.fit_words().startswith("fits: ") and "the compiler allows" in r.fit_words()
            verdicts.append(True)
    return verdicts


# the rest of the generations as long walks: the same check on v4, v5p and v6e
@pytest.mark.parametrize(
    "generation",
    [
        pytest.param(g, marks=[] if g == "v5e" else [pytest.mark.rotates(cpu_s=20)])
        for g in SMALLEST
    ],
)
def test_the_fit_check_agrees_with_the_compiler_around_the_limit(generation):
    verdicts = at_the_edge(generation)
    assert verdicts[0] and not verdicts[-1], verdicts  # the six straddle the limit
    assert verdicts == sorted(verdicts, reverse=True), verdicts  # accepted, then refused


# --------------------------------------------------------------------------- hosts as rented
RENTED = {"v5e:2x4 on 8-chip hosts": "2,4,1", "v5e:2x4 on 4-chip hosts": "2,2,1"}


@pytest.mark.parametrize("target", RENTED)
def test_hosts_as_rented_equal_what_libtpu_lays_with_those_bounds(target):
    """v5e:2x4 as one 8-chip host (ct5lp-hightpu-8t) and as two 4-chip hosts (libtpu's default,
    asked for by name): every chip's host, the host count and each collective's groups that
    cross hosts equal the oracle's plain get_topology_desc(..., chips_per_host_bounds=...)."""
    script = str(ROOT / "tests/core/pods/pod_oracle.py")
    plain = started([sys.executable, script, "v5e:2x4", "--hosts", RENTED[target], "train", "psum"])
    ours = {p: podcompile.compile_for(podprograms.BUILTIN[p](), target) for p in ("train", "psum")}
    theirs = finished(plain)
    for p, r in ours.items():
        assert {c.id: c.host for c in r.chips} == {int(k): v for k, v in theirs["host_of"].items()}
        assert r.to_dict()["n_hosts"] == r.hosts == theirs["hosts"], p
        same(r.to_dict(), theirs[p], f"{p} on {target}")
        mine = sorted((c.kind, [list(g) for g in c.groups], c.crossing) for c in r.collectives)
        want = sorted((c["kind"], c["groups"], c["crossing"]) for c in theirs[p]["collectives"])
        assert mine == want, f"{p} on {target}: {mine} != {want}"
        for k, c in enumerate(r.collectives):  # the drawing's dashed groups: the same hosts
            assert len(podfigure.crossing_groups(r, k)) == c.crossing, (p, target)
    assert theirs["hosts"] == 8 // int(target.split(" on ")[1].split("-")[0])  # 1 or 2 hosts
    crossing = sum(c.crossing for c in ours["train"].collectives)
    assert (crossing == 0) == (theirs["hosts"] == 1)  # one host: nothing crosses
