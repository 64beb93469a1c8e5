"""The files kops writes and reads, each declared once (pydantic v2): `kops-plan/2`, `kops-snapshot/1`, the
execution record `kops-execution/1` and the sizes summary rows.

One declaration per format validates on load (shapes, ranges, uniqueness, cross-references, with the JSON
location of the first problem), serialises on save, and generates the format's reference in docs/
(`python -m kops.formats.pages --write`). The plan's declaration also names the domain class each object holds,
and its conversions both ways are derived from it (`binding.py`); the snapshot's, the record's and the sizes
rows' conversions are still written beside their objects (kops/model/snapshot_format.py, kops/executor/record.py,
kops/sizes/reader.py).
"""
