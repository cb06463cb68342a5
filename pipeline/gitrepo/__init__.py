"""The memory repository as a git repository: the only place memd runs git (``git``, hardened by
``git_env``), the repository with its scratch copies, landing and inbox branches (``repository``),
commits made without a work tree (``crafted``), the secret gate every commit message passes
(``message_gate``), the remote's fetch and push and the transports it may use (``remote``,
``transport``), incoming objects sized in a quarantine (``quarantine``), this machine's signing key
(``signing``) and who signed what comes in (``signatures``). It knows the scope layout
(``pipeline.layout``) and nothing of what the files say.
"""
