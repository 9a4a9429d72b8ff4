"""The HTTP and WebSocket surfaces a person or a runtime talks to: the page views, the
JSON API, approvals and replay views, health, API tokens and the ingest socket.
"""
