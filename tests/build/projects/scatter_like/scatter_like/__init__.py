"""scatter_like: test package."""
