"""The exercises: their Streamlit components (an exercise's box, the presenter's view of the
room's pace, a lesson's replay)."""
