"""The functions a user can pmap: the catalog, "your own f" checked against its vocabulary, and the
collectives' records.
"""
