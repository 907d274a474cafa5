package io.kvrouter.core.admission;

/**
 * Outcome of a fenced mutation (Release, MarkPrefillDone, Renew): applied only if it changed the live booking.
 * {@code load} is the booked rank's new load (null when the rank's load did not change, e.g. a Renew).
 */
public record MutationResult(boolean applied, long leaseExpiresAtMillis, LoadUpdate load) {
  public static final MutationResult NOT_APPLIED = new MutationResult(false, 0, null);
}
