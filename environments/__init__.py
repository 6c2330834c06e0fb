"""AMemGym-compatible worlds: data, generators, user simulators, the episode runner, metrics, feedback."""
