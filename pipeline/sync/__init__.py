"""One memory across machines: the memory repository synced with a git remote (``[sync]``).

``merge`` (which files the merge of two machines' memory keeps, as pure data), ``incoming`` (the
remote's commits checked like a consolidation), ``state`` (what `memd status` shows), ``run``
(fetch, check, merge, land, push) and ``now`` (a sync as memd runs it: rekey, sync, the merged
scopes consolidated again). Forgetting that travels is ``pipeline.memory.tombstones``; git runs
only in ``pipeline.memory`` (``pipeline.memory.remote``).
"""
