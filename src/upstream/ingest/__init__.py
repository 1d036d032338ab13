"""Ingestion: one code path from an accepted event to stored facts, for every producer."""
