"""The fast read side of memd: what `memd status`, `memd scan`'s quick check, `memd recall` and the
page read without the settings model or the store layer.

``keys`` is the table of every settings key, ``settings`` the lean settings (read through
``daemon.config_layers``, the config file and environment overrides as the full loader reads them,
and handing over to the full loader, ``daemon.config``, when unsure), ``rows`` reads the state
store (``sqlite3``, or SQLAlchemy for PostgreSQL), ``liveness`` is what the daemon records of itself
and how its health is judged, ``text`` shows values in the fast commands' output. The write side of
the daemon imports only ``liveness`` from here.
"""
