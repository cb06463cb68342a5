"""`memd status`'s report, assembled from the fast read side (``daemon.lean``): its types
(``report``), the reading of every section (``read``), the repository head (``git_refs``), memory
hits (``hits``) and the longer tables of the terminal view (``tables``).
"""
