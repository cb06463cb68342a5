"""`memd status`'s read side: the state store read without memd's store code (``read``,
``rows``), the lean settings (``config``), the repository head (``git_refs``), memory hits
(``hits``) and the longer tables (``tables``).
"""
