"""The collectives playground: its Streamlit components."""
