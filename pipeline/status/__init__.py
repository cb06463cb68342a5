"""`memd status`'s report, built from the read API (``pipeline.store.read``) and the domain's own records
(the sync state is ``pipeline.sync.state.SyncState``): its types (``report``, on the cheap frozen
records of ``record``), the reading of every section (``read``: also the page's overview), memory use
(``usage``), the open flags (``flags``), the agents (``agents``), the repository's HEAD (``git_refs``)
and the daemon's liveness, what it writes of itself and how its health is judged (``liveness``).
Drawing it is the front-ends' (``daemon.cli.status``, ``daemon.cli.status_tables``, ``daemon.ui``).
"""
