"""`memd ui`: a local web page to see and steer memory, served by the daemon (``[ui] enabled``) or alone.

``app`` builds the Starlette application from a ``UIContext``; ``pages/`` holds one module per page
(overview, memory, inbox, sessions); ``security`` the token, the Host check, CSRF and the headers;
``render`` the templates, Markdown and SVG charts; ``data`` what the page reads beside `memd status`'s
report; ``server`` runs it under uvicorn. Nothing here is imported unless the page is served.
"""
