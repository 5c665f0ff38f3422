"""Skeleton torch package."""
