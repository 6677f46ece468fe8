"""The typed program: every value of a program with its type as JAX writes it, in the three
modes JAX teaches (Auto, Explicit, Manual), the communication the compiled program has for each
equation, and sharding conflicts under Explicit axes, resolved by the compiler."""

from pmapviz.core.base.pageinfo import PageInfo, page_file
from pmapviz.features.types import conflictsettings, typesettings

PAGE = PageInfo(
    page_file("types"),
    "Types: sharding in every value",
    ":material/data_object:",
    "types",
    "Every value's type in Auto, Explicit and Manual modes, and its communication.",
    checks=(({}, ()), ({"mode": "auto,explicit,manual"}, ())),
    schemas=lambda n: (typesettings.schema(n), conflictsettings.schema(n)),
)
