"""Reproductions of the papers' tables and figures, one module per paper."""
