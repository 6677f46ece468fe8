"""Multi-process: its Streamlit components."""
