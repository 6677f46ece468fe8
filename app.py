"""pmapviz: an interactive dashboard for understanding and checking ``jax.pmap``.

Run ``streamlit run app.py -- --devices 8`` from a checkout (or set PMAPVIZ_DEVICES), or
``pmapviz serve --devices 8`` from an installed package: both run
:func:`pmapviz.app.ui.dashboard.main`, which fixes the device count for the whole server process
before any page imports JAX, then routes with ``st.navigation``.
"""

from pmapviz.app.ui import dashboard

dashboard.main()
