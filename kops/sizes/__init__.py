"""Partition sizes: the summaries the Spark job writes, read without Spark for planning."""
