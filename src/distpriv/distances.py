"""Distances between distributions (filled in by the distances module work)."""
