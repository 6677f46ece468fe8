"""The Pods page's Streamlit parts."""
