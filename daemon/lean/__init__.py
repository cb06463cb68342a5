"""The fast read side of memd: what `memd status`, `memd scan`'s quick check, `memd recall` and the
page read without the settings model or the store layer.

``layers`` finds and reads the config file and the environment's overrides (the full loader,
``daemon.config``, reads them through it too), ``keys`` is the table of every settings key,
``settings`` the lean settings (handing over to the full loader when unsure), ``rows`` reads the
state store (``sqlite3``, or SQLAlchemy for PostgreSQL), ``liveness`` is what the daemon records of
itself and how its health is judged, ``text`` shows values in the fast commands' output. The write side of the daemon imports only ``liveness`` and
``layers`` from here.
"""
