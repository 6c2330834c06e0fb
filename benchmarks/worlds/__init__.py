"""A family of simulated worlds for the optimizer benchmark (benchmarks/strategies.py), drawn from a seed."""
