"""Named meshes: its Streamlit components."""
