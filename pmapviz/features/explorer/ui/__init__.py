"""The explorer: its Streamlit components."""
