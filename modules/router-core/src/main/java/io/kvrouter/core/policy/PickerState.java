package io.kvrouter.core.policy;

/** Everything mutable in a picker: its RNG state and its round-robin cursor. */
public record PickerState(long rngState, long cursor) {}
