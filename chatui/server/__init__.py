"""Where chatui reaches into its server: daphne's request handling (`edge`, the routed
events POST in `ingest_route`), the long-poll router and the ASGI routing. Host projects
import `chatui.asgi`, not these modules.
"""
