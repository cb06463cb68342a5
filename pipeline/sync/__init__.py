"""One memory across machines: the memory repository synced with a git remote (``[sync]``).

``merge`` (which files the merge of two machines' memory keeps, as pure data), ``trust`` (who may
sign the memory's commits, and the check of every incoming commit's signature), ``pairing``
(`memd sync key` / `memd sync trust`), ``incoming`` (the remote's commits checked like a
consolidation), ``state`` (what `memd status` shows), ``run``
(fetch, check, merge, land, push), ``rewrites`` (a forget's rewrite of a synced history: pushed with a
lease, checked and adopted by the other machines) and ``now`` (a sync as memd runs it: rekey, sync,
the merged scopes consolidated again). Forgetting that travels is ``pipeline.memory.tombstones``; git runs
only in ``pipeline.memory`` (``pipeline.gitrepo.remote``).
"""
