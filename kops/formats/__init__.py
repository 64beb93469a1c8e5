"""The files kops writes and reads, each declared once (pydantic v2): `kops-plan/2`, `kops-snapshot/1`, the
execution record `kops-execution/1` and the sizes summary rows.

One declaration per format validates on load (shapes, ranges, uniqueness, cross-references, with the JSON
location of the first problem), serialises on save, and generates the format's reference in docs/
(`python -m kops.formats.pages --write`). The plan's, the snapshot's and the record's declarations also name the
domain class each object holds, and their conversions both ways are derived from them (`binding.py`); the sizes
rows' conversion is still written beside them (kops/sizes/reader.py).
"""
