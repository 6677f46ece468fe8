"""The Compiled program page: its Streamlit components."""
