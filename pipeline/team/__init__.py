"""Team mode: machines sharing one PostgreSQL store coordinate there (a scope's lease, the shared
phase-1 extracts and watermarks, which machine is which), while the memory itself travels only
through the ``[sync]`` git remote (``pipeline.sync``)."""
