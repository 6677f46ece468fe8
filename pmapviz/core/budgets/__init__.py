"""Memory and time before an action runs: the model's words, the estimates, the server's pool and
the time limit.
"""
