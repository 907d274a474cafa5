package io.kvrouter.core.membership;

/** Outcome of a registration: {@code created} is false when the identical registration already existed. */
public record Registered(boolean created, long viewVersion) {}
