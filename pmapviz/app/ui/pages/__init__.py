"""The dashboard's pages: one thin file per page that reads as a recipe (header -> components
-> core call -> display). Streamlit runs each as a script through ``st.navigation``
(:mod:`pmapviz.app.ui.dashboard`); nothing imports them. They ship inside the package, so an
installed wheel serves the whole dashboard (``pmapviz serve``)."""
