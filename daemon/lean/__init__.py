"""The fast read side of memd: what `memd status`, `memd scan`'s quick check, `memd recall` and the
page read without the store layer.

``settings`` is the few settings they need, taken from the one settings loader (``daemon.config``,
on the standard-library settings table), ``rows`` reads the state store (``sqlite3``, or SQLAlchemy
for PostgreSQL), ``liveness`` is what the daemon records of itself and how its health is judged,
``text`` shows values in the fast commands' output. The write side of the daemon imports only
``liveness`` from here.
"""
