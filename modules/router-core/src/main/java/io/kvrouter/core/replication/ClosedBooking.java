package io.kvrouter.core.replication;

/** A booking the owner closed (released, cancelled, expired, or dropped with its worker). */
public record ClosedBooking(String requestId, long attempt) {}
