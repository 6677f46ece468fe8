"""Exercises and lessons: the room's pace. A page's step may carry an exercise (the tour's
carry six), a short task whose check pmapviz already knows how to judge against JAX; each
attempt is judged for the attendee who made it (solved, or JAX's own words) and counted for
the room, anonymously, by kind; the presenter sees the counts and can show the worked answer
to everyone. The room's path is saved as a lesson an attendee replays at home."""
