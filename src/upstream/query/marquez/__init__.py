"""The Marquez-compatible read model (design §4.4): Marquez's shapes over Upstream's store.

Each module answers one family of Marquez endpoints with plain JSON-ready dicts; lineage
graphs are built from the explicit edges and the flows derived at write time
(`upstream.store.walks`), cumulative over every run, so they are exact where Marquez shows a
job's inputs x outputs.
"""
