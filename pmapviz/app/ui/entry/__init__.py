"""The package's own Streamlit entry script (``streamlit_app.py``), in a folder of its own:
Streamlit puts a main script's folder first on ``sys.path``, and this one holds nothing a bare
``import`` could pick up by mistake."""
