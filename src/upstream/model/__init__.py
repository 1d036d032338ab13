"""Pure types and rules: identities, OpenLineage events, facets, field operations, time.

Nothing here does I/O.
"""
