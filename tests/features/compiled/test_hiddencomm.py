"""Communication user code does without saying so, found in the compiled HLO and timed beside
its fix."""

import json

from pmapviz.features.compiled import hiddencomm


def test_hidden_communication_is_found_in_hlo_and_measured():
    cases = hiddencomm.hidden_communication(4, m=64, repeat=2)
    by = {c.label: c for c in cases}
    index = by["index a pmap output"]
    assert [r.hlo.kind for r in index.rows] == ["all-reduce"] and index.fix_rows == ()
    assert by["a jitted function on a pmap output"].rows and all(c.same_values for c in cases)
    assert all(c.time_s > 0 and c.fix_time_s > 0 for c in cases)
    assert by["replicating parameters"].rows == ()  # copies happen outside the program
    json.dumps([c.to_json() for c in cases])
