"""Simulated users that keep a session going without revealing their state."""
