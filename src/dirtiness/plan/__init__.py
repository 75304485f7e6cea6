"""The phased DDL plan (DESIGN §5): blue-green and in-place strategies."""
