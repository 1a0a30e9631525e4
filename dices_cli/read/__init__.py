"""Bytes to records with line numbers: sources, lines, checksums in the same pass, file formats,
JSON Lines, integers."""
