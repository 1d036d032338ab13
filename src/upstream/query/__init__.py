"""Lineage algorithms over the store: dataset graph, field lineage, Marquez-shaped graphs."""
