package io.kvrouter.core.admission;

/** A queued Book that has been decided (booked, rejected or expired), addressed by the nonce of its ask. */
public record Completion(long nonce, BookOutcome outcome) {}
