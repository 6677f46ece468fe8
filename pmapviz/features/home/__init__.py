"""Hello pmap: the home page's first picture, run for real and read from the output's shards."""
