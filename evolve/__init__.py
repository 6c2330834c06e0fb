"""The optimizer: candidates, proposers, tuners, the loop, tracking, ablations and the command line."""
