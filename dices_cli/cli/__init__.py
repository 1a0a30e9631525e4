"""The command line: parsing arguments, one module per command group, and drawing for a
terminal."""
