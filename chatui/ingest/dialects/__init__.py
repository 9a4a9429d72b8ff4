"""One translator per foreign format: how its events, or its files, become chatui's own
events (docs/events.md#dialects). Live ingest, the agent backends and the importers use
the same translator for a format, so a runtime posting live and a file imported later
give the same transcript.
"""
