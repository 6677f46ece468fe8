"""The ``pod`` field every page with a target shares: empty is this machine, a topology name
is read and normalised, a bad one is refused with what to type; and the target list and its
labels."""

import pytest

from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.pods import podtarget, tpuchips


def test_the_field_reads_this_machine_and_topology_names():
    field = podtarget.pod_field()
    assert field.key == podtarget.KEY == "pod"
    assert field.default == podtarget.HERE == ""
    assert field.parse("", "pod") == ""
    assert field.parse("   ", "pod") == ""
    assert field.parse("v5e:4x4", "pod") == "v5e:4x4"
    assert field.parse(" V4:2X2X2 ", "pod") == "v4:2x2x2"


def test_the_field_has_the_default_it_is_given():
    assert podtarget.pod_field("v5e:2x4").default == "v5e:2x4"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("v9:1x1", "knows the generations"),
        ("tpu", "is not a TPU topology name"),
        ("v5e:1x1", "pick 2 to 256"),
    ],
)
def test_a_bad_target_is_refused_with_the_field_named_and_an_example(text, said):
    with pytest.raises(SettingError) as err:
        podtarget.pod_field().parse(text, "The link's pod=")
    message = str(err.value)
    assert message.startswith("The link's pod=")
    assert said in message
    assert "e.g. v" in message  # an example name to type instead


def test_a_name_longer_than_the_field_holds_is_refused():
    with pytest.raises(SettingError, match="characters long"):
        podtarget.pod_field().parse("v5e:" + "4x" * 30 + "4", "pod")


def test_a_link_with_a_bad_target_falls_back_to_the_default_with_a_note():
    from pmapviz.core.base import settings

    schema = settings.Schema((podtarget.pod_field("v5e:2x4"),))
    texts, notes = schema.from_query({"pod": "v9:1x1"})
    assert texts == {"pod": "v5e:2x4"}
    assert len(notes) == 1 and "v5e:2x4" in notes[0]


def test_choices_start_with_this_machine_then_every_offered_slice():
    choices = podtarget.choices()
    assert choices[0] == podtarget.HERE
    assert choices[1:] == tpuchips.OFFERED


def test_labels_say_this_machine_or_the_slice_and_its_chips():
    assert podtarget.label("") == podtarget.HERE_LABEL
    assert podtarget.label("v5e:4x4") == "TPU v5e 4x4 (16 chips)"
    assert podtarget.label("v4:2x2x2") == "TPU v4 2x2x2 (8 chips)"
    every = [podtarget.label(c) for c in podtarget.choices()]
    assert len(set(every)) == len(every)
    # a link with Cloud's name: the field reads the slice, the picker's label says which
    assert podtarget.pod_field().parse("v5litepod-16", "pod=") == "v5e:4x4"
    assert podtarget.label("v5litepod-16") == "TPU v5e 4x4 (16 chips; v5litepod-16 = v5e:4x4)"
    assert podtarget.label("v5p-32") == "TPU v5p 2x2x4 (16 chips; v5p-32 = v5p:2x2x4)"


def test_a_multislice_target_is_read_where_the_field_takes_one_and_labelled_with_its_slices():
    field = podtarget.pod_field(multislice=True)
    assert field.parse("2xv5e:4x4", "pod") == "2 x v5e:4x4"
    assert field.parse("64 x v5e:16x16", "pod") == "64 x v5e:16x16"
    with pytest.raises(SettingError, match="joins 99 slices"):
        field.parse("99x v5e:16x16", "pod=")
    with pytest.raises(
        SettingError, match="this page compiles for one slice; pick one, e.g. v5e:4x4"
    ):
        podtarget.pod_field().parse("2 x v5e:4x4", "pod=")
    assert podtarget.label("2 x v5e:4x4") == (
        "2 x TPU v5e 4x4 (32 chips in 2 slices over the data-center network)"
    )


def test_hosts_as_rented_are_read_by_the_field_and_labelled_with_clouds_machine_type():
    field = podtarget.pod_field(multislice=True)
    assert field.parse("v5e:2x4 on ct5lp-hightpu-8t", "pod") == "v5e:2x4 on 8-chip hosts"
    assert field.parse("v5e:2x4 on 4-chip hosts", "pod") == "v5e:2x4"  # libtpu's default
    assert field.parse("2 x v5e:4x4 on 8", "pod") == "2 x v5e:4x4 on 8-chip hosts"
    label = podtarget.label("v5e:2x4 on 8-chip hosts")
    assert label == "TPU v5e 2x4 (8 chips; 8-chip hosts, ct5lp-hightpu-8t)"
    with pytest.raises(SettingError, match="not a host TPU v5p is rented as"):
        field.parse("v5p:2x2x2 on 8-chip hosts", "pod")
