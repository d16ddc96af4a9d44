"""Recording and drawing an update's timeline, shared by the demo's picture and the benchmark's runs: watches and the
engine's event log stamped on one monotonic clock, the update's phases as time spans, and the drawing of spans."""
