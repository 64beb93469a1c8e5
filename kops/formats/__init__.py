"""The files kops writes and reads, each declared once (pydantic v2): `kops-plan/2`, `kops-snapshot/1`, the
execution record `kops-execution/1` and the sizes summary rows.

One declaration per format validates on load (shapes, ranges, uniqueness, cross-references, with the JSON
location of the first problem), serialises on save, and generates the format's reference in docs/
(`python -m kops.formats.pages --write`). Each declaration also names the domain class each object holds, and
the conversions both ways are derived from it (`binding.py`); the sizes row's declaration also gives the Spark
job its output columns and their types (`sizes.spark_columns`).
"""
