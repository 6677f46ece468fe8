"""An attempt judged: what the attendee reads, and what the room's count keeps (a kind built
from fixed words and the exercise's own numbers)."""

from pmapviz.core.expressions import functions
from pmapviz.core.planning import planning
from pmapviz.features.exercises import verdicts
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def test_a_kind_is_the_error_class_and_the_rule_and_nothing_when_solved_or_unchecked():
    assert verdicts.wrong("IndivisibleError", "mapped axis 10 > 8 devices").kind == (
        "IndivisibleError (mapped axis 10 > 8 devices)"
    )
    assert verdicts.SOLVED.kind == "" and verdicts.not_checked("busy").kind == ""
    assert verdicts.wrong("ValueError", "").kind == "ValueError"
    assert verdicts.wrong("Odd", "<b>` *x*").kind == "Error"  # never a markup character


def test_unreadable_names_the_setting_and_keeps_the_message_for_the_attendee():
    err = ValueError("shape `<x>` is not a size")
    judged = verdicts.unreadable(err, "shape of x")
    assert judged.kind == "ValueError (shape of x not read)" and judged.words == str(err)


def test_a_plans_rule_names_only_the_exercises_own_mapped_size():
    p = planning.plan(functions.get("double"), [(10, 3)], n_devices=N)
    assert verdicts.plan_rule(p, p.problems[0].code, own_sizes=(10,)) == (
        f"mapped axis 10 > {N} devices"
    )
    assert verdicts.plan_rule(p, p.problems[0].code) == f"mapped axis > {N} devices"
    one = planning.plan(functions.get("double"), [(3, 3)], n_devices=1)
    assert verdicts.plan_rule(one, one.problems[0].code) == "mapped axis > 1 device"


def test_a_plans_verdict_carries_jaxs_exception_verbatim():
    program = functions.get("double")
    p = planning.plan(program, [(N + 2, 3)], n_devices=N)
    judged = verdicts.plan_verdict(program, p, own_sizes=(N + 2,))
    assert judged.error_type == "IndivisibleError"
    assert judged.said.startswith("jax._src.sharding.IndivisibleError: ")
    assert judged.words == p.problems[0].message


def test_every_rule_word_fits_a_kind():
    for words in verdicts.PLAN_RULES.values():
        assert verdicts.KIND.match(f"ValueError ({words.format(devices='8 devices')})")
