"""Publishing memory where each agent reads it, and knowing when it was used.

Submodules stay import-light (standard library only) except ``run``, ``usage`` and the store
queries they call, so ``memd recall`` can answer a session-start hook quickly.
"""
