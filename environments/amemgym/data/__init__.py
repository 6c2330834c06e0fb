"""The AMemGym data model and its loaders."""
