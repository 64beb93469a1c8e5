"""Rehearsing a plan on a lab clone: what the clone holds, how it is scaled, what is watched and reported."""
