"""Adapters that carry CPL guards into agent frameworks people already run.

One module per framework; each imports only ``cpl`` (mainly ``cpl.live``) and its framework,
so installing one framework's extra never pulls in another's.
"""
