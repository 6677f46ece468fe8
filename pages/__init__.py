"""The dashboard's pages: one thin file per page that reads as a recipe (header -> components
-> core call -> display). Streamlit runs each as a script through ``st.navigation``
(:mod:`pmapviz.app.ui.dashboard`); nothing imports them. This folder is their one copy: a
checkout serves it beside app.py (``streamlit run app.py``), and a wheel carries it as
``pmapviz.app.ui.pages`` (setup.py), so an installed ``pmapviz serve`` serves the same files."""
