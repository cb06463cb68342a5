"""Team mode: machines sharing one PostgreSQL store coordinate there (a scope's lease, the shared
phase-1 extracts and watermarks, which machine is which), while the memory itself travels only
through the ``[sync]`` git remote (``pipeline.sync``)."""

NO_REMOTE = (
    "memory does not travel between the machines sharing this state store without a [sync] remote "
    "(each memory repository holds only what its own machine consolidated): set [sync] remote to one "
    "git remote on every machine"
)
"""What `memd status` and `memd config validate` say of a shared store without a ``[sync] remote``."""
