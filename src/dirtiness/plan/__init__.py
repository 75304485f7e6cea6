"""The phased DDL plan (docs/design.md §6): blue-green and in-place strategies."""
