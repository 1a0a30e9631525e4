"""The data directory: stored datasets published atomically with their manifests, and the
judge's cache."""
