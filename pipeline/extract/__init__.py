"""Phase 1: each eligible session becomes one structured extract (a raw memory and a summary).

``run`` is the entry point; ``item`` prepares one session (parse, slice, ``compact`` rendering,
redaction) and stores its outcome; ``request`` and ``schema`` are what is asked of the model;
``batch`` sends through Message Batches; ``report`` is what a run did.
"""
