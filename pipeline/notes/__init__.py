"""What agents hand memd mid-session (``memd mcp``): notes to remember (``remember``) and verdicts on
the memories they read (``feedback``), checked and recorded; phase 2 takes them at its next run."""
