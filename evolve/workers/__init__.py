"""Many worker processes on one shared store: services to start, claims of units of work, the worker loop."""
