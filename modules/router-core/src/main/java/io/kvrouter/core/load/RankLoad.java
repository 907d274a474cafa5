package io.kvrouter.core.load;

/**
 * Booking-driven load of one rank, immutable so a reader never sees one rank's figures torn. {@code seq} orders
 * records: a cell applies a record only if its sequence number is newer.
 *
 * <p>{@code recentBookings} counts the bookings the rank took, each decaying exponentially with the policy's
 * {@code load_bound_window} as its time constant, as of {@code recentAtMillis} ({@link #recentBookingsAt}): the load
 * bound reads it to see sessions between their turns, which no in-flight count holds. 0 while the window is off.
 */
public record RankLoad(long seq, int inFlight, long prefillTokens, long decodeBlocks, double recentBookings,
    long recentAtMillis) {
  public static final RankLoad IDLE = new RankLoad(0, 0, 0, 0);

  /** A load with no recent bookings. */
  public RankLoad(long seq, int inFlight, long prefillTokens, long decodeBlocks) {
    this(seq, inFlight, prefillTokens, decodeBlocks, 0, 0);
  }

  public RankLoad plus(long nextSeq, int requests, long prefill, long decode) {
    return new RankLoad(nextSeq, inFlight + requests, prefillTokens + prefill, decodeBlocks + decode, recentBookings,
        recentAtMillis);
  }

  /**
   * {@link #plus} for a new booking at {@code nowMillis}: with {@code windowMillis} above 0 the recent count, decayed
   * to now, gains one.
   */
  public RankLoad booked(long nextSeq, long prefill, long decode, long nowMillis, long windowMillis) {
    if (windowMillis <= 0) {
      return plus(nextSeq, 1, prefill, decode);
    }
    return new RankLoad(nextSeq, inFlight + 1, prefillTokens + prefill, decodeBlocks + decode,
        recentBookingsAt(nowMillis, windowMillis) + 1, Math.max(nowMillis, recentAtMillis));
  }

  /** The recent-bookings count decayed to {@code nowMillis} (never grown for a clock behind its stamp). */
  public double recentBookingsAt(long nowMillis, long windowMillis) {
    if (recentBookings == 0 || windowMillis <= 0) {
      return 0;
    }
    long elapsed = nowMillis - recentAtMillis;
    return elapsed <= 0 ? recentBookings : recentBookings * Math.exp(-(double) elapsed / windowMillis);
  }
}
