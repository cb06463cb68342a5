"""The read API: every plain read of the state store, written once, for every reader.

`memd status`, the page (``daemon.ui``), `memd mcp`, `memd recall`, `memd scan`'s quick check and the
daemon's own plain reads all run these statements and row mappings. ``rows`` is the reader: a SQLite
store read-only with ``sqlite3`` (no SQLAlchemy on the fast paths), a PostgreSQL store through
SQLAlchemy, or an open ``Store``'s read transaction (``on_store``). Each statement is plain SQL that
SQLite and PostgreSQL both answer, with ``:name`` parameters. Writes and transactional reads (a claim,
a fence, a lease) stay in the store modules beside this package.

``values`` reads stored values (times, JSON), ``keys`` names the ``kv`` keys (and reads a machine's
stale topics and its key), ``sessions`` the transcripts (counts, the next idle, the lists, the scan
index's generation), ``runs`` what ran and what holds (heartbeats, failed jobs, model spend, runs waiting
for review, publications, leases, batches), ``gate`` whether a model call may start, ``flags`` the open
flags, ``uses`` memory use and verdicts, ``extracts`` what memd sent about a session. Standard library
only.
"""
