"""pmapviz's side of the oracle test: every case of tests/features/types/types_oracle.py
through ``pmapviz.types``, as the same plain data the oracle prints, plus whether the view's
HTML shows each type.

    python tests/features/types/types_walker.py COUNT [NAME ...]

prints ``MARK`` then JSON (PMAPVIZ_DEVICES=COUNT: see tests/pages/test_every_device_count.py's
``fresh_process``); :func:`typed_cases` gives the same in a process that has its devices.
"""

import html
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.features.types import types_oracle  # noqa: E402

MARK = "WALKER "


def _line(source_line):
    """The line number of hlo's 'file:line (function)'."""
    m = re.search(r":([0-9]+)(?: |$)", source_line or "")
    return int(m[1]) if m else None


def _mode(view: dict) -> dict:
    if view["error"] and not view["equations"]:
        return {"error": view["error"].split(":", 1)[0], "stage": view["stage"]}
    found = {
        "in_types": view["in_types"],
        "out_types": view["out_types"],
        "rows": [[e["depth"], e["primitive"], e["out_types"]] for e in view["equations"]],
    }
    if view["error"]:
        return {**found, "error": view["error"].split(":", 1)[0], "stage": view["stage"]}
    comm = [  # an equation JAX kept no line for (inside a jit of f's): the collective's own
        [c["kind"], e["primitive"], e["line"] or _line(c["source_line"])]
        for e in view["equations"]
        for c in e["collectives"]
    ]
    comm += [[c["kind"], None, _line(c["source_line"])] for c in view["unmatched_collectives"]]
    return {**found, "error": None, "collectives": comm}


def typed_cases(n: int, names: list[str]) -> dict:
    """Every case named, in every mode, as ``pmapviz.types`` shows it."""
    import jax

    import pmapviz

    cases = types_oracle.cases(n)
    out = {}
    for name in names or list(cases):
        mesh_key, f, local, shapes, dtype, in_specs, outs = cases[name]
        shape, axes = types_oracle.meshes(n)[mesh_key]
        args = types_oracle.structs(shapes, dtype)
        view = pmapviz.types(
            f,
            *args,
            mesh=shape,
            axis_names=axes,
            mode="all",
            in_specs=[types_oracle.spec(s) for s in in_specs],
            out_specs=types_oracle.out_spec(outs),
            local=local,
        )
        data = view.to_dict()
        shown = html.unescape(re.sub(r"<[^>]+>", "", view.html()))
        modes = {m: _mode(v) for m, v in data["modes"].items()}
        for m, v in data["modes"].items():
            types = [t for e in v["equations"] for t in e["out_types"]] + v["in_types"]
            modes[m]["all_shown"] = all(t in shown for t in types)
        out[name] = modes
        jax.clear_caches()
    return out


def main(argv):
    n = int(argv[1])
    from pmapviz.core.drawing import notebookviews

    notebookviews.ready()
    print(MARK + json.dumps(typed_cases(n, argv[2:])))


if __name__ == "__main__":
    main(sys.argv)
