"""Live outputs: its Streamlit components."""
