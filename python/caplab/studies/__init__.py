"""Built-in studies: the demo and the seed papers' studies, each a folder with its study files and
the documents it sends (see catalog.py)."""
