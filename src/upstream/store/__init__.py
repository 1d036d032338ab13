"""Persistence: schema, migrations, engine set-up and the queries the services need.

SQL dialect differences live here and nowhere else (design §1).
"""
