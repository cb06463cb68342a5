"""One memory across machines: the memory repository synced with a git remote (``[sync]``).

``merge`` (which files the merge of two machines' memory keeps, as pure data), ``tombstones``
(forgetting that travels), ``incoming`` (the remote's commits checked like a consolidation),
``state`` (what `memd status` shows), ``run`` (fetch, check, merge, land, push). Git runs only in
``pipeline.memory`` (``pipeline.memory.remote``).
"""
