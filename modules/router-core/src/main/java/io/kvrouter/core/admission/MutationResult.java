package io.kvrouter.core.admission;

/**
 * Outcome of a fenced mutation (Release, MarkPrefillDone, Renew): applied only if it changed the live booking.
 * {@code load} is the booked rank's new load (null when the rank's load did not change, e.g. a Renew); for a
 * prefill/decode pair it is the prefill rank's and {@code decodeLoad} the decode rank's (null when it did not change).
 */
public record MutationResult(boolean applied, long leaseExpiresAtMillis, LoadUpdate load, LoadUpdate decodeLoad) {
  public static final MutationResult NOT_APPLIED = new MutationResult(false, 0, null, null);

  /** A mutation of a single rank's booking. */
  public MutationResult(boolean applied, long leaseExpiresAtMillis, LoadUpdate load) {
    this(applied, leaseExpiresAtMillis, load, null);
  }
}
