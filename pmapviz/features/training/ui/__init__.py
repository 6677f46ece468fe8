"""Data-parallel training: its Streamlit components."""
