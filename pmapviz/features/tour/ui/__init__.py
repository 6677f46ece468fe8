"""The guided tour: its Streamlit components."""
