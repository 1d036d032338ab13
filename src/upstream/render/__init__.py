"""Renderers for lineage responses: Rich tables, Graphviz DOT and Mermaid flowcharts.

Pure functions from the API's response documents (the same dicts a server answers and the
query services return), so a picture of a server's answer and of a database's are identical.
"""
