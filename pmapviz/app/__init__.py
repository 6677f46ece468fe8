"""The application's top: the command line, the doctor, the sandbox's worker, page checks."""
