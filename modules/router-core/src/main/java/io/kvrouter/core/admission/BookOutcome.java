package io.kvrouter.core.admission;

import io.kvrouter.core.error.RoutingError;

/** The result of a Book command: booked now, waiting in the queue, or rejected. */
public sealed interface BookOutcome {
  record Booked(BookingAnswer answer) implements BookOutcome {}

  record Queued(int position) implements BookOutcome {}

  record Rejected(RoutingError error) implements BookOutcome {}
}
