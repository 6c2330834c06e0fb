"""Published memory benchmarks (LoCoMo, LongMemEval, MemoryAgentBench, MemoryBench) as memevo environments.

Their data is not shipped (licences differ); each module reads the files a user downloaded."""
