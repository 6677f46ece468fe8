"""The application's top: its Streamlit components."""
