"""Concurrency anomalies of multi-agent systems as CPL guards (docs/anomalies.md).

``records`` — the operation record; ``detectors`` — the catalog's predicates over a
log of them; ``guards`` — the guard library; ``extract`` — records from a trace,
and ``detect(trace)``.
"""
