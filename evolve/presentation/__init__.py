"""What a person reads and sees: terminal lines, progress bars, the headline, reports and plots. The engine never
imports it; it is fed the engine's records and events."""
