"""The in-memory graph index every walk runs on (design §6)."""
