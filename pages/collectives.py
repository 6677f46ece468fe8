"""Collectives playground: one collective, run for real; every device before and after."""

import streamlit as st

from pmapviz.core.ui import presenter, shell, url_state
from pmapviz.features.collectives import collectivechoices
from pmapviz.features.collectives.ui import collective_form, collective_result

shell.ensure_routed()

report = shell.device_report()

st.title("Collectives")
slot = presenter.picture_slot()  # presenter mode: before and after, above the settings
st.markdown(
    "Inside `pmap(f, axis_name='i')`, a collective lets the copies of `f` exchange values. "
    "Each device starts with its own block `x`; pick a collective and see what every device "
    "holds afterwards. All values are read from the real arrays' shards."
)

coll = collective_form.show(report.count)
url_state.share_link("collectives")
n, m = collective_form.sizes(report.count)
try:
    choice = collective_form.choice(coll, n)
    out = collective_result.run(coll, n, m, collective_form.value_kind(), choice)
except collectivechoices.CollectiveError as err:
    st.error(str(err), icon=":material/block:")
    st.stop()
if out is not None:  # None: the wait for memory ended without room (said above)
    collective_result.show(out, choice, m, report, slot)
