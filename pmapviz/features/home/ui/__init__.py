"""Hello pmap: its Streamlit components."""
