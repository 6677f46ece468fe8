"""Pictures without Streamlit: device grids, array diagrams, tables, and the notebook views of the
core.
"""
