package io.kvrouter.core.policy;

/**
 * Everything mutable in a picker: the seed its draws mix in, and how many picks it has made (the next pick's number,
 * which is also round robin's position).
 */
public record PickerState(long seed, long picks) {}
