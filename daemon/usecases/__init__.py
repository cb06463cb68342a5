"""What a person asks memd to do, shared by the command line and the web page: each use case takes
the caller's ``daemon.runtime.Runtime`` and returns a typed result; the front-ends (``daemon.cli``,
``daemon.ui``) say it in words (``daemon.words``)."""
