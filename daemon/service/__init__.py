"""The service: the daemon's lifecycle (``lifecycle``), one cycle of steps (``cycle``), the one-shot
mode (``once``), and what they run on: the schedule, file events, the instance lock, systemd's
notifications, the hard stop, and what memd says once (``hints``)."""
