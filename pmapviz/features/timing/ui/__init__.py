"""The Timing lab: its Streamlit components."""
