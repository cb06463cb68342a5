"""Test doubles served on loopback (the fake Anthropic Messages API)."""
