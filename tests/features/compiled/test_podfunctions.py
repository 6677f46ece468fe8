"""A notebook's f and arguments as a program for a TPU slice: a plain f is pmapped over the
slice's devices (a mapped axis that is not the device count re-laid, and said: which argument,
which axis, both shapes, JAX's refusal, the calls that compile it unchanged); a ``jax.jit(f)``
keeps its arguments' own shardings or takes ``in_specs``, and nothing is guessed; bad arguments
are refused with the fix. The issue's step compiled from the notebook equals the CLI's train
program and a plain ``jax.jit(step).lower(...).compile()``."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from pmapviz.core.devices import compilecache
from pmapviz.core.pods import podcompile, podprograms, podtopology, tpuchips
from pmapviz.features.compiled.podfunctions import program_for


def psum_i(x):
    """The sum over the mapped axis 'i'."""
    return jax.lax.psum(x, "i")


def scaled_sum(x, w):
    """The sum over the mapped axis 'i', scaled by w's sum."""
    return jax.lax.psum(x, "i") * w.sum()


def arg_shardings(text):
    """Each argument's sdy sharding in a lowered module's text, in order."""
    return re.findall(
        r"%arg\d+: tensor<[^>]*> \{sdy\.sharding = #sdy\.sharding<@mesh, (\[.*?\])>", text
    )


def test_a_plain_f_is_pmapped_over_the_slice_and_its_psum_is_an_all_reduce():
    prog = program_for(psum_i, (np.ones((3, 4), np.float32),))
    assert prog.key.startswith("notebook:psum_i:") and prog.label == "psum_i"
    assert prog.code == "jax.pmap(psum_i, in_axes=0, axis_name='i')"
    pod = podtopology.load("v5e:2x4")
    low = prog.lower(pod, None)
    assert [tuple(a.shape) for a in low.lowered.args_info[0]] == [(8, 4)]  # 3 -> 8
    (change,) = low.changes  # ... and said: the argument, the axis, both shapes
    assert (change.what, change.asked, change.used) == ("x axis 0", (3, 4), (8, 4))
    assert change.words.startswith("x: axis 0 re-laid from 3 to 8 entries, (3, 4) -> (8, 4)")
    assert change.jax_said == _jax_refusal(psum_i, (3, 4), pod)  # JAX's words, verbatim
    r = podcompile.compile_for(prog, "v5e:2x4")
    assert r.label == "psum_i: x f32[8,4]" and r.changes == low.changes
    reduces = [c for c in r.collectives if c.kind == "all-reduce"]
    assert len(reduces) == 1
    ar = reduces[0]
    assert [sorted(g) for g in ar.groups] == [sorted(c.id for c in pod.chips)]
    assert ar.bytes == 4 * 4  # one f32[4] block a device
    assert ar.crossing == 1  # the group spans both hosts
    g, link = 8, tpuchips.GENERATIONS["v5e"].ici_link_gbs * 1e9
    # 2x4 spans two axes, both lines below the full pod's 16: one link each
    assert ar.model_s == pytest.approx(2 * (g - 1) / g * ar.bytes / (2 * link))


def _jax_refusal(f, shape, pod):
    """What JAX says of pmap(f) on the slice's devices with an argument of ``shape``."""
    try:
        jax.pmap(f, axis_name="i", devices=list(pod.devices)).lower(
            jax.ShapeDtypeStruct(shape, jnp.float32)
        )
    except Exception as err:  # noqa: BLE001
        return f"{type(err).__name__}: {err}"
    return ""


def test_a_mapped_axis_that_is_the_device_count_is_compiled_as_given():
    low = program_for(psum_i, (np.ones((8, 4), np.float32),)).lower(
        podtopology.load("v5e:2x4"), None
    )
    assert low.changes == () and low.notes == ()
    assert [i.shape for i in low.inputs] == [(8, 4)]


def test_in_axes_and_axis_name_go_to_pmap_and_into_the_key():
    x, w = np.ones((2, 5), np.float32), np.ones(3, np.float32)
    one = program_for(scaled_sum, (x, w), in_axes=(1, None))
    assert one.code == "jax.pmap(scaled_sum, in_axes=(1, None), axis_name='i')"
    other = program_for(scaled_sum, (x, w), in_axes=(1, None), axis_name="j")
    assert other.key != one.key and "axis_name='j'" in other.code
    low = one.lower(podtopology.load("v5e:2x2"), None)
    assert [tuple(a.shape) for a in low.lowered.args_info[0]] == [(2, 4), (3,)]


def test_a_jitted_f_without_shardings_is_replicated_and_told_how_to_split():
    """Nothing is guessed: the old layout split every argument whose axis 0 divided (the
    issue's w over the chips too)."""

    @jax.jit
    def total(x, y):
        return x.sum() + y.sum()

    args = (jnp.ones((16, 4)), jax.ShapeDtypeStruct((3, 5), jnp.float32))
    prog = program_for(total, args)
    assert prog.label == "total" and ".lower(*args)" in prog.code
    pod = podtopology.load("v5e:2x4")
    low = prog.lower(pod, None)
    assert low.mesh_axes == (("i", 8),)
    # the mesh laid out as jax.make_mesh lays it on a real slice
    assert low.order == tuple(int(d.id) for d in podprograms.mesh_devices(pod, (8,)).flat)
    assert sorted(low.order) == sorted(int(d.id) for d in pod.devices)
    assert arg_shardings(low.lowered.as_text()) == ["[{}, {}]", "[{}, {}]"]
    assert [(i.name, i.shape, i.layout) for i in low.inputs] == [
        ("x", (16, 4), "replicated"),
        ("y", (3, 5), "replicated"),
    ]
    (note,) = low.notes
    assert "nothing is split" in note and "in_specs=(P(), P('i'))" in note


def test_in_specs_lay_a_jitted_f_on_one_axis_of_the_slice():
    @jax.jit
    def total(x, y):
        return x.sum() + y.sum()

    args = (jnp.ones((16, 4)), jnp.ones((3, 5)))
    low = program_for(total, args, in_specs=(P("i"), None)).lower(podtopology.load("v5e:2x4"), None)
    assert arg_shardings(low.lowered.as_text()) == ['[{"i"}, {}]', "[{}, {}]"]
    assert [i.block for i in low.inputs] == [(2, 4), (3, 5)] and low.notes == ()
    with pytest.raises(ValueError, match="names the axis 'data'.*Fix"):
        program_for(total, args, in_specs=(P("data"), None))
    with pytest.raises(ValueError, match="one PartitionSpec .* for each of the 2"):
        program_for(total, args, in_specs=(P("i"),))
    with pytest.raises(ValueError, match="in_specs is for a jitted f"):
        program_for(psum_i, (np.ones(8),), in_specs=(P("i"),))


def test_a_jitted_f_keeps_the_shardings_its_arguments_carry():
    """An array placed on this machine's ('data': 2, 'model': 4) mesh keeps its spec; the mesh
    is laid on the slice's 16 devices as ('data': 4, 'model': 4), and that change is said."""
    from jax.sharding import Mesh, NamedSharding

    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("data", "model")))
    low = program_for(jax.jit(lambda x: x * 2), (x,)).lower(podtopology.load("v5e:4x4"), None)
    assert low.mesh_axes == (("data", 4), ("model", 4))
    assert [(i.layout, i.block) for i in low.inputs] == [("split by P('data', 'model')", (2, 4))]
    (change,) = low.changes
    assert (change.asked, change.used) == ((2, 4), (4, 4))


def test_the_issues_step_from_the_notebook_is_the_clis_train_program_and_a_plain_compile():
    """w (4096, 4096) replicated, x (8192, 4096) split over v5e:4x4: pmapviz.compiled with
    in_specs, the CLI's --program train, and plain JAX give the same figures."""
    from pmapviz.features.compiled.showcompiled import compiled

    def step(w, x):
        return w - 0.01 * jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)

    w = jax.ShapeDtypeStruct((4096, 4096), jnp.float32)
    x = jax.ShapeDtypeStruct((8192, 4096), jnp.float32)
    nb = compiled(jax.jit(step), w, x, topology="v5e:4x4", in_specs=(P(), P("i"))).to_dict()
    cli = podcompile.compile_for(podprograms.train(), "v5e:4x4").to_dict()
    pod = podtopology.load("v5e:4x4")
    from jax.experimental import mesh_utils
    from jax.sharding import Mesh, NamedSharding

    mesh = Mesh(mesh_utils.create_device_mesh((16,), devices=list(pod.devices)), ("i",))
    lowered = jax.jit(step).lower(
        jax.ShapeDtypeStruct(w.shape, w.dtype, sharding=NamedSharding(mesh, P())),
        jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=NamedSharding(mesh, P("i"))),
    )
    with compilecache.kept_out():  # a TPU executable is never read back here: none written
        plain = lowered.compile()
    ma, ca = plain.memory_analysis(), plain.cost_analysis()
    for d in (nb, cli):
        assert d["flops"] == ca["flops"] and d["optimal_s"] == ca["optimal_seconds"]
        assert d["argument_bytes"] == ma.argument_size_in_bytes
        assert d["temp_bytes"] == ma.temp_size_in_bytes
        assert [c["kind"] for c in d["collectives"]] == ["all-reduce"]
    assert nb["comm_s"] == cli["comm_s"] and nb["changes"] == [] == cli["changes"]


def test_the_issues_step_on_two_slices_from_the_notebook_is_the_clis_and_a_plain_compile():
    """Issue 66: topology="2 x v5e:2x4" with in_specs over one axis 'i': the mesh is one
    slice's, 'dcn' = 2 prepended (create_hybrid_device_mesh) and x's rows split over
    ('dcn', 'i'); its figures and every collective (kind, groups, network) equal the CLI's
    train program on the same slices and a plain jit over that mesh. A pmapped f runs over the
    16 devices of both slices, its psum split between ICI and DCN, with the note on its mesh."""
    from jax.experimental import mesh_utils
    from jax.sharding import Mesh, NamedSharding

    from pmapviz.features.compiled.showcompiled import compiled

    def step(w, x):
        return w - 0.01 * jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)

    target = "2 x v5e:2x4"
    w = jax.ShapeDtypeStruct((4096, 4096), jnp.float32)
    x = jax.ShapeDtypeStruct((8192, 4096), jnp.float32)
    nb = compiled(jax.jit(step), w, x, topology=target, in_specs=(P(), P("i"))).to_dict()
    cli = podcompile.compile_for(podprograms.train(), target, multislice=True).to_dict()
    pod = podtopology.load(target, multislice=True)
    grid = mesh_utils.create_hybrid_device_mesh((1, 8), (2, 1), devices=list(pod.devices))
    mesh = Mesh(grid, ("dcn", "i"))
    lowered = jax.jit(step).lower(
        jax.ShapeDtypeStruct(w.shape, w.dtype, sharding=NamedSharding(mesh, P())),
        jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=NamedSharding(mesh, P(("dcn", "i")))),
    )
    with compilecache.kept_out():
        plain = lowered.compile()
    ma, ca = plain.memory_analysis(), plain.cost_analysis()
    assert nb["flops"] == ca["flops"] and nb["argument_bytes"] == ma.argument_size_in_bytes
    assert nb["temp_bytes"] == ma.temp_size_in_bytes and nb["slices"] == 2
    for key in ("flops", "argument_bytes", "output_bytes", "temp_bytes", "network_bytes"):
        assert nb[key] == cli[key], key

    def placed(d):
        return sorted((c["kind"], c["groups"], c["network"]) for c in d["collectives"])

    assert placed(nb) == placed(cli) and {"ICI", "DCN"} == {c[2] for c in placed(nb)}
    assert nb["inputs"][1]["layout"] == "split by P(('dcn', 'i'))"
    assert any("('dcn', 'i') = 2 x 8" in line for line in nb["notes"]), nb["notes"]
    pm = compiled(psum_i, np.ones((16, 4), np.float32), topology=target).to_dict()
    assert {c["network"] for c in pm["collectives"]} == {"ICI", "DCN"} and not pm["changes"]
    assert any("('dcn', 'i') = 2 x 8" in line for line in pm["notes"]), pm["notes"]


def test_a_relaid_pmap_warns_before_the_view_and_names_the_unchanged_calls():
    from pmapviz.core.pods.compiledinputs import LayoutChanged
    from pmapviz.features.compiled.showcompiled import compiled

    w = jax.ShapeDtypeStruct((64, 64), jnp.float32)
    x = jax.ShapeDtypeStruct((512, 64), jnp.float32)

    def step(w, x):
        return jnp.tanh(x @ w).sum()

    with pytest.warns(LayoutChanged, match=r"x: axis 0 re-laid from 512 to 8 entries"):
        view = compiled(step, w, x, in_axes=(None, 0), topology="v5e:2x4")
    html = view.html()
    assert html.index("re-laid from 512 to 8") < html.index("role='img'")
    assert "jax.jit(jax.vmap(step, in_axes=(None, 0))), w, x" in html
    assert view.to_dict()["changes"][0]["asked"] == [512, 64]


def test_bad_arguments_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="no arguments"):
        program_for(psum_i, ())
    with pytest.raises(ValueError, match="Fix: in_axes=0"):
        program_for(psum_i, (np.ones(4), np.ones(4)), in_axes=(0,))
    with pytest.raises(ValueError, match="the mapped axes differ.*Fix"):
        program_for(psum_i, (np.ones(4), np.ones(5)))
