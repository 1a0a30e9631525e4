"""CLI commands, one module per family; each module has `register(app)`."""
